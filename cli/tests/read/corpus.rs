//! The reference corpus's generator (`examples/corpus`, BENCHMARKS.md
//! "Sizes on disk") end to end: it writes the records asked for, the same
//! in its compact and its 32-byte file, each complete; the same shape (ids,
//! sources, arguments) on every run, only the clock's times differ; and
//! `qtrace stats` counts in both files the events the example printed.
//!
//! Runs the built example, as `standard_init.rs` does (`cargo test` builds
//! the examples; this test does not).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use qtrace::reader::{Completeness, TraceReader};
use qtrace::Event;

use crate::common::main_job::example;
use crate::common::success::assert_success;

const RECORDS: usize = 5_000;

/// Runs the example into `dir`; its first line of output.
fn generate(dir: &Path) -> String {
    let out = Command::new(example("corpus"))
        .arg(dir)
        .arg(RECORDS.to_string())
        .output()
        .expect("run the corpus example");
    assert_success(&out);
    let stdout = String::from_utf8(out.stdout).unwrap();
    stdout.lines().next().unwrap_or_default().to_string()
}

/// Every record of a file, its format version, and that it is complete.
fn read(path: &Path) -> (Vec<Event>, u16) {
    let mut reader = TraceReader::open(path).unwrap();
    let version = reader.header().version();
    let events: Vec<Event> = reader.by_ref().map(Result::unwrap).collect();
    assert!(
        matches!(reader.completeness(), Some(Completeness::Complete(_))),
        "{path:?}: {:?}",
        reader.completeness()
    );
    (events, version)
}

/// A record without its time: the corpus's shape.
fn shape(e: &Event) -> (u16, u16, u32, [u64; 2]) {
    (e.id.0, e.flags, e.source, e.args)
}

#[test]
fn corpus_writes_the_same_records_compact_and_in_32_bytes() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let first = generate(a.path());
    let (compact, v2) = read(&a.path().join("corpus-compact.qtr"));
    let (wide, v1) = read(&a.path().join("corpus-32.qtr"));
    assert_eq!((v2, v1), (2, 1));
    assert_eq!(compact.len(), RECORDS);
    assert_eq!(compact, wide, "both files hold the same records");
    // Four sources, and every kind of record the workload names: switches,
    // interrupts, wake-ups, semaphores, messages, the counter, strings.
    let sources: BTreeSet<u32> = compact.iter().map(|e| e.source).collect();
    assert_eq!(sources, BTreeSet::from([0, 1, 2, 3]));
    let q = env!("CARGO_BIN_EXE_qtrace");
    let stats = Command::new(q)
        .arg("stats")
        .arg(a.path().join("corpus-compact.qtr"))
        .output()
        .unwrap();
    assert_success(&stats);
    let stats = String::from_utf8(stats.stdout).unwrap();
    let per_event: BTreeMap<String, u64> = stats
        .lines()
        .skip_while(|l| !l.contains("per event:"))
        .skip(1)
        .map_while(|l| {
            let (name, n) = l.trim().rsplit_once(' ')?;
            Some((name.trim().to_string(), n.parse().ok()?))
        })
        .collect();
    let names: Vec<&str> = per_event.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "app:msg_recv",
            "app:msg_send",
            "app:note",
            "app:ready.counter",
            "lowlevel:interrupt",
            "semaphore:signal",
            "semaphore:wait",
            "system:activate",
            "system:endcycle",
            "system:schedule",
        ],
        "{stats}"
    );
    // The events: every record but a string run's continuations (flagged
    // combine without begin, FORMAT.md 1.8).
    let events = compact
        .iter()
        .filter(|e| e.flags & 0x6000 != 0x4000)
        .count();
    assert!(events < RECORDS, "some strings take more than a record");
    assert_eq!(per_event.values().sum::<u64>(), events as u64, "{stats}");
    assert_eq!(
        first,
        format!("{RECORDS} records, {events} events (a string's run counts once), 4 sources")
    );
    for f in ["corpus-compact.qtr", "corpus-32.qtr"] {
        let out = Command::new(q)
            .arg("stats")
            .arg(a.path().join(f))
            .output()
            .unwrap();
        assert_success(&out);
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains(&format!("events: {events}\n")), "{f}: {text}");
        assert!(text.contains("end: complete (closed;"), "{f}: {text}");
    }
    // The compact file is much the smaller.
    let size = |f: &str| std::fs::metadata(a.path().join(f)).unwrap().len();
    assert!(size("corpus-compact.qtr") * 4 < size("corpus-32.qtr"));

    // A second run: the same shape, the clock's own times.
    assert_eq!(generate(b.path()), first);
    let (again, _) = read(&b.path().join("corpus-compact.qtr"));
    assert_eq!(
        again.iter().map(shape).collect::<Vec<_>>(),
        compact.iter().map(shape).collect::<Vec<_>>()
    );
    assert!(compact.windows(2).any(|w| w[0].time != w[1].time));
}
