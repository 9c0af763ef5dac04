//! Atomic conversions (issue #34): `qtrace convert --to parquet` processes
//! SIGKILLed at several points of a conversion never leave a readable part
//! of their tables at `--out` (all five tables whole, or nothing); the next
//! conversion into that folder removes the killed one's stage folder and
//! says so; a conversion into a folder that holds tables is refused with
//! exit 1 and adds no row.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use parquet::file::reader::{FileReader, SerializedFileReader};

use crate::common::parquet_rows::parquet_files;

/// Events in the input: enough that a debug build's conversion takes a
/// while (its stage folder is seen mid-write).
const EVENTS: u64 = 600_000;

fn write_trace(path: &Path) {
    use qtrace::classes::{user, Catalog};
    use qtrace::clock::{Clock, ManualClock};
    use qtrace::wire::{create_trace_file, TraceHeader};
    use qtrace::Event;
    let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)))
        .with_clock("manual", 1_000_000_000, 0)
        .unwrap();
    let mut w = create_trace_file(path, &header).unwrap();
    let mut batch = Vec::with_capacity(4096);
    for i in 0..EVENTS {
        batch.push(Event::new(
            10 * i,
            user::USER0,
            (i % 4) as u32,
            [i.wrapping_mul(0x9e37_79b9_7f4a_7c15), i],
        ));
        if batch.len() == batch.capacity() {
            w.write_events(&batch).unwrap();
            batch.clear();
        }
    }
    w.write_events(&batch).unwrap();
    w.finish().unwrap();
}

fn convert(input: &Path, out: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_qtrace"));
    c.args(["convert", "--to", "parquet"])
        .arg(input)
        .arg("--out")
        .arg(out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// Rows of each table under `out` (from the files' footers), in
/// `Table::ALL` order, and the number of files.
fn rows(out: &Path) -> ([i64; 5], usize) {
    let mut n = [0; 5];
    let mut files = 0;
    for (i, t) in ["events", "losses", "payloads", "streams", "jobs"]
        .iter()
        .enumerate()
    {
        for f in parquet_files(&out.join(t)) {
            let r = SerializedFileReader::new(std::fs::File::open(&f).unwrap()).unwrap();
            n[i] += r.metadata().file_metadata().num_rows();
            files += 1;
        }
    }
    (n, files)
}

/// Stage folders beside `out`.
fn stages(out: &Path) -> Vec<PathBuf> {
    let prefix = format!(
        ".{}.converting-",
        out.file_name().unwrap().to_string_lossy()
    );
    let mut found: Vec<PathBuf> = std::fs::read_dir(out.parent().unwrap())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

/// Whether any file under `dir` (any depth) satisfies `f`.
fn any_file(dir: &Path, f: &dyn Fn(&Path, u64) -> bool) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let p = e.path();
        match e.metadata() {
            Ok(m) if m.is_dir() => any_file(&p, f),
            Ok(m) => f(&p, m.len()),
            Err(_) => false,
        }
    })
}

/// The moments a conversion is killed at.
#[derive(Clone, Copy, Debug)]
enum Point {
    /// At once (before or while it opens its input).
    Start,
    /// Once its stage folder exists.
    Staged,
    /// Once a part temp holds bytes (row groups written, no footer).
    Writing,
    /// Once a part is whole in the stage folder (some tables renamed,
    /// maybe not all).
    SomeWhole,
    /// After this long.
    After(u64),
}

fn reached(p: Point, out: &Path, began: Instant) -> bool {
    let stage = stages(out);
    match p {
        Point::Start => true,
        Point::Staged => !stage.is_empty(),
        Point::Writing => stage.iter().any(|s| {
            any_file(s, &|p, len| {
                len > 0 && p.to_string_lossy().ends_with(".parquet.tmp")
            })
        }),
        Point::SomeWhole => stage
            .iter()
            .any(|s| any_file(s, &|p, _| p.extension().is_some_and(|x| x == "parquet"))),
        Point::After(ms) => began.elapsed() >= Duration::from_millis(ms),
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_killed_conversion_leaves_all_or_nothing_and_a_rerun_adds_no_row() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("trace.qtr");
    write_trace(&input);
    // The reference: one whole conversion.
    let reference = dir.path().join("reference");
    let o = convert(&input, &reference).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let (want, files) = rows(&reference);
    assert_eq!(want[0], EVENTS as i64);
    assert_eq!(want[3], 1, "one streams row");
    assert_eq!(files, 5);

    let points = [
        Point::Start,
        Point::Staged,
        Point::Writing,
        Point::SomeWhole,
        Point::After(30),
        Point::After(120),
        Point::After(400),
    ];
    let mut killed_mid = 0;
    for (i, &point) in points.iter().enumerate() {
        let out = dir.path().join(format!("out{i}"));
        let began = Instant::now();
        let mut child = convert(&input, &out).spawn().unwrap();
        let finished = loop {
            if child.try_wait().unwrap().is_some() {
                break true;
            }
            if reached(point, &out, began) {
                break false;
            }
            assert!(began.elapsed() < Duration::from_secs(120), "{point:?}");
            std::thread::sleep(Duration::from_micros(200));
        };
        child.kill().unwrap_or(());
        let status = child.wait().unwrap();
        let left = stages(&out);
        // All or nothing at the final path.
        let whole = out.exists();
        if whole {
            assert_eq!(rows(&out), (want, 5), "{point:?}: a partial result");
            assert!(left.is_empty(), "{point:?}: {left:?}");
        } else {
            assert!(parquet_files(&out).is_empty(), "{point:?}");
            killed_mid += u32::from(!left.is_empty());
        }
        eprintln!(
            "{point:?}: finished before the kill {finished}, status {status}, at --out: {}, stage folders left {}",
            if whole { "all" } else { "nothing" },
            left.len()
        );
        // The next run: converts (removing and naming the stage folder)
        // when nothing was there, else refuses; either way the same rows.
        let o = convert(&input, &out).output().unwrap();
        let text = stderr(&o);
        if whole {
            assert_eq!(o.status.code(), Some(1), "{point:?}: {text}");
            assert!(
                text.contains("is not empty") && text.contains("rm -r"),
                "{text}"
            );
        } else {
            assert!(o.status.success(), "{point:?}: {text}");
            for s in &left {
                assert!(
                    text.contains(&format!("removed {}", s.display())),
                    "{point:?}: the stage folder {} not reported: {text}",
                    s.display()
                );
            }
        }
        assert!(stages(&out).is_empty(), "{point:?}");
        assert_eq!(rows(&out), (want, 5), "{point:?}");
        // And once more: refused, no row added.
        let o = convert(&input, &out).output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{point:?}: {}", stderr(&o));
        assert_eq!(rows(&out), (want, 5), "{point:?}");
        std::fs::remove_dir_all(&out).unwrap();
    }
    // At least one kill landed mid-conversion (a stage folder left behind).
    assert!(killed_mid >= 1, "no kill landed inside a conversion");
}
