//! The main job end to end: `examples/standard_init.rs` runs, saves its trace
//! files, and `qtrace stats` / `qtrace dump` read every one of them, with
//! the numbers agreeing with what the example reported and with the reader.
//!
//! `cargo test` builds the examples next to the binaries; this test runs the
//! built example (it does not build it itself).

use std::path::PathBuf;
use std::process::Command;

use qtrace::classes::tracer;
use qtrace::reader::TraceReader;

use crate::common::main_job::standard_init;

#[test]
fn dump_and_stats_read_what_standard_init_saved() {
    let dir = std::env::temp_dir().join(format!("qtrace-standard-init-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = Command::new(standard_init())
        .arg(&dir)
        .output()
        .expect("run standard_init");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "standard_init failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("qtrace dump") || stdout.contains("-- dump"),
        "{stdout}"
    );

    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "qtr"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 2,
        "standard preset saves at least the circular and fixed queues: {files:?}"
    );

    // What the reader sees, file by file.
    let mut records = 0u64;
    let mut hoops_lost = 0u64;
    for f in &files {
        for e in TraceReader::open(f).unwrap() {
            let e = e.unwrap();
            records += 1;
            if e.id == tracer::HOOPS {
                hoops_lost += e.args[0];
            }
        }
    }
    assert!(
        records > 1000,
        "a 2-second run records thousands of events, got {records}"
    );

    // `qtrace dump`: one line per record, `[LOST n EVENTS]` for hoops.
    let qtrace = env!("CARGO_BIN_EXE_qtrace");
    let dump = Command::new(qtrace)
        .arg("dump")
        .args(&files)
        .output()
        .unwrap();
    assert!(
        dump.status.success(),
        "{}",
        String::from_utf8_lossy(&dump.stderr)
    );
    let text = String::from_utf8(dump.stdout).unwrap();
    // One `[END: complete …]` line per file after its records.
    let ends = text
        .lines()
        .filter(|l| l.contains("[END: complete;"))
        .count();
    assert_eq!(ends, files.len(), "every saved file is complete");
    assert_eq!(
        text.lines().count() as u64,
        records + files.len() as u64,
        "one line per record"
    );
    let lost_in_dump: u64 = text
        .lines()
        .filter_map(|l| l.split("[LOST ").nth(1))
        .map(|rest| rest.split(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(lost_in_dump, hoops_lost);
    assert!(text.contains("schedule"), "system events are in the dump");

    // `qtrace stats`: same totals.
    let stats = Command::new(qtrace)
        .arg("stats")
        .args(&files)
        .output()
        .unwrap();
    assert!(
        stats.status.success(),
        "{}",
        String::from_utf8_lossy(&stats.stderr)
    );
    let s = String::from_utf8(stats.stdout).unwrap();
    let sum_field = |field: &str| -> u64 {
        s.lines()
            .filter_map(|l| l.trim_start().strip_prefix(field))
            .map(|rest| {
                rest.split_whitespace()
                    .next()
                    .unwrap()
                    .parse::<u64>()
                    .unwrap()
            })
            .sum()
    };
    assert_eq!(sum_field("lost:"), hoops_lost, "{s}");
    let hoops_records = text.lines().filter(|l| l.contains("[LOST ")).count() as u64;
    assert_eq!(sum_field("events:") + hoops_records, records, "{s}");
    let _ = std::fs::remove_dir_all(&dir);
}
