//! An online queue rotating into chunks, its process SIGKILLed at random
//! moments: every chunk but the open one reads complete, the open one reads
//! cut short (as an online queue's file always did), and the chunks together
//! hold the logged sequence with every gap stated by a hoops record. Both
//! forms: compact chunks (the default; a kill inside a chunk loses that
//! chunk's records, read as cut short) and 32-byte records.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use qtrace::classes::{tracer::HOOPS, user};
use qtrace::queues::{Online, OnlineParams};
use qtrace::reader::{Completeness, TraceReader};
use qtrace::wire::WireError;
use qtrace::Event;
use qtrace::Tracer;

use crate::common::child_test::spawn_ready;

const READY: &str = "QTRACE-CHUNKS-CHILD-READY";
const RUNS: u64 = 6;

/// The child: one thread logs 0, 1, 2, … into a small rotating online
/// queue until the parent kills the process.
#[test]
fn chunks_child_process() {
    let Ok(dir) = std::env::var("QTRACE_CHUNKS_CHILD_DIR") else {
        return; // run by the parent test only
    };
    let compact = std::env::var_os("QTRACE_CHUNKS_CHILD_32").is_none();
    let tracer: &'static Tracer = Box::leak(Box::new(Tracer::new()));
    let q = tracer
        .create_queue::<Online>(
            OnlineParams::default()
                .with_file(Path::new(&dir).join("run.qtr"))
                .with_capacity(1024)
                .with_period(Duration::from_millis(1))
                .with_rotation(Some(16 * 1024), None)
                .with_retention(Some(1000), None)
                .with_compact(compact),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer.activate().unwrap();
    println!("{READY}");
    let mut i = 0u64;
    loop {
        tracer.log_event(user::USER0, [i, 0]);
        i += 1;
        if i % 64 == 0 {
            // Slower than the drain most of the time, so chunks fill with
            // events, yet fast enough for some drops (hoops records).
            std::thread::sleep(Duration::from_micros(20));
        }
    }
}

/// The chunks of one killed run, in order.
fn chunks(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.to_owned();
            // A rotation cut by the kill may leave its hidden temporary
            // file: never a chunk's name.
            if name.starts_with('.') && name.ends_with(".tmp") {
                return None;
            }
            let n = name
                .strip_prefix("run.")?
                .strip_suffix(".qtr")?
                .parse()
                .ok()?;
            Some((n, p))
        })
        .collect();
    v.sort();
    let numbers: Vec<u64> = v.iter().map(|(n, _)| *n).collect();
    assert_eq!(numbers, (1..=v.len() as u64).collect::<Vec<_>>());
    v.into_iter().map(|(_, p)| p).collect()
}

/// Every record of a chunk and what its end says. The open chunk (`open`)
/// may also end inside a record: a SIGKILL stops a `write` to a file at a
/// page boundary (Linux checks for a fatal signal between the pages it
/// copies: seen here as 16 of a record's 32 bytes, the file ending at
/// 8,192). Its whole records are kept, and it counts as cut short.
fn read_chunk(path: &Path, open: bool, compact: bool) -> (Vec<Event>, Completeness) {
    let mut reader = TraceReader::open(path).unwrap();
    assert_eq!(reader.header().is_compact(), compact, "{}", path.display());
    let mut records = Vec::new();
    for e in reader.by_ref() {
        match e {
            Ok(e) => records.push(e),
            Err(err) => {
                let cut = err.wire_error().is_some_and(WireError::is_truncated);
                assert!(open && cut, "{}: {err}", path.display());
                let got = records.len() as u64;
                let lost = records
                    .iter()
                    .filter(|e| e.id == HOOPS)
                    .map(|e| e.args[0])
                    .sum();
                return (records, Completeness::Cut { records: got, lost });
            }
        }
    }
    (records, reader.completeness().unwrap())
}

/// One killed run, checked; returns the events its chunks hold.
fn one_run(delay_ms: u64, compact: bool) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let mut env = vec![("QTRACE_CHUNKS_CHILD_DIR", dir.path().as_os_str())];
    if !compact {
        env.push(("QTRACE_CHUNKS_CHILD_32", std::ffi::OsStr::new("1")));
    }
    let (mut child, _lines) = spawn_ready(
        module_path!(),
        "chunks_child_process",
        &env,
        Stdio::null(),
        READY,
    );
    std::thread::sleep(Duration::from_millis(delay_ms));
    child.kill().unwrap(); // SIGKILL
    assert!(!child.wait().unwrap().success());

    let files = chunks(dir.path());
    assert!(!files.is_empty());
    let mut records = Vec::new();
    let n = files.len();
    let mut open_chunk_is_empty = false;
    let mut cut = 0;
    for (i, f) in files.iter().enumerate().rev() {
        let (recs, end) = read_chunk(f, i + 1 == n, compact);
        match end {
            Completeness::Complete(close) => {
                assert!(i + 1 < n, "the open chunk cannot be closed");
                assert_eq!(close.records, recs.len() as u64);
            }
            Completeness::Cut { records: r, .. } => {
                assert_eq!(r, recs.len() as u64);
                cut += 1;
                // Only the open chunk is cut, or the one before it when
                // the kill came between making the next chunk (still
                // empty) and writing this one's close run.
                assert!(
                    i + 1 == n || (i + 2 == n && open_chunk_is_empty),
                    "chunk {} of {n} is cut short",
                    i + 1
                );
                if i + 1 == n {
                    open_chunk_is_empty = recs.is_empty();
                }
            }
            other => panic!("chunk {}: {other:?}", i + 1),
        }
        records.push(recs);
    }
    records.reverse();
    // Together: increasing values, each gap exactly the hoops before it.
    let (mut next, mut lost, mut events, mut hoops) = (0u64, 0u64, 0u64, 0u64);
    for e in records.into_iter().flatten() {
        if e.id == HOOPS {
            lost += e.args[0];
            hoops += e.args[0];
        } else if e.id == user::USER0 {
            assert_eq!(e.args[0], next + lost, "after {events} events");
            next = e.args[0] + 1;
            lost = 0;
            events += 1;
        }
    }
    println!("{n} chunks, {events} events, {hoops} lost (hoops), {cut} cut short, the open chunk empty: {open_chunk_is_empty}");
    events
}

#[test]
fn sigkill_leaves_closed_chunks_whole_and_the_open_one_cut() {
    if std::env::var("QTRACE_CHUNKS_CHILD_DIR").is_ok() {
        return;
    }
    let mut events = 0;
    for run in 0..RUNS {
        // 30–280 ms: several rotations of 16 KiB chunks each time.
        events += one_run(30 + run * 50, true);
    }
    // (A run on a starved machine may be killed before its first drain.)
    assert!(events > 0);
}

#[test]
fn sigkill_leaves_closed_chunks_of_32_byte_records_whole_and_the_open_one_cut() {
    if std::env::var("QTRACE_CHUNKS_CHILD_DIR").is_ok() {
        return;
    }
    let mut events = 0;
    for run in 0..RUNS / 2 {
        events += one_run(30 + run * 100, false);
    }
    assert!(events > 0);
}
