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

/// The main job's ready-queue counter and its derived wake-up flows reach
/// Perfetto (read back with Perfetto's protos by scripts/check-perfetto.py):
/// one `app:ready` value per counter record, and one flow link per wake-up
/// flow the analysis derives, from the handler's `activate` on the
/// interrupt context's track to the woken task's `task N` slice.
#[test]
fn the_main_job_shows_its_ready_counter_and_wake_flows_in_perfetto() {
    use qtrace::analysis::{AnalysisOptions, Analyzer};
    use qtrace::reader::MergedReader;

    use crate::common::perfetto_decode::decode;

    let dir = tempfile::tempdir().unwrap();
    let traces = dir.path().join("traces");
    let out = Command::new(standard_init())
        .arg(&traces)
        .output()
        .expect("run standard_init");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    // The summary says where to look.
    assert!(
        stdout.contains("counter track app:ready") && stdout.contains("wake_flows"),
        "{stdout}"
    );
    let mut files: Vec<PathBuf> = std::fs::read_dir(&traces)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "qtr"))
        .collect();
    files.sort();

    // What the analysis derives, and the counter records, over the files
    // merged as `convert` merges them.
    let merged = MergedReader::open(&files).unwrap();
    let ready = merged
        .readers()
        .find_map(|r| r.catalog().event_by_name("app:ready.counter").map(|e| e.id))
        .expect("the app class declares its counter");
    let mut a = Analyzer::new(
        &qtrace::classes::Catalog::builtin(),
        AnalysisOptions::default(),
    );
    let mut ready_records = 0;
    for e in merged {
        let e = e.unwrap();
        ready_records += (e.id == ready) as usize;
        a.push(&e);
    }
    let report = a.finish();
    assert!(!report.wake_flows.is_empty(), "the interrupts wake tasks");
    assert!(ready_records > 100, "{ready_records}");

    let pftrace = dir.path().join("t.pftrace");
    let conv = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(["convert", "--to", "perfetto", "--out"])
        .arg(&pftrace)
        .args(&files)
        .output()
        .unwrap();
    assert!(
        conv.status.success(),
        "{}",
        String::from_utf8_lossy(&conv.stderr)
    );
    let Some(got) = decode(&pftrace, false) else {
        return;
    };
    // The counter: a track per source that logs it, the interrupt
    // context's among them; one value per record, never negative.
    let counters: Vec<&serde_json::Value> = got["counters"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c[1].as_str().is_some_and(|l| l.ends_with("/app:ready")))
        .collect();
    assert_eq!(counters.len(), ready_records);
    assert!(counters.iter().any(|c| c[1] == "source 100/app:ready"));
    assert!(counters.iter().all(|c| c[2].as_f64().unwrap() >= 0.0));

    // The flows: (task, schedule time) of each link, as the analysis has
    // them; each begins at the handler's activate, after its interrupt and
    // at most 1 µs later (analyze's --irq-max, the exports' default).
    let from: std::collections::BTreeMap<(String, u64), u64> = report
        .wake_flows
        .iter()
        .map(|f| ((format!("task {}", f.task), f.to_ns), f.from_ns))
        .collect();
    let flows = got["flows"].as_array().unwrap();
    assert_eq!(flows.len(), report.wake_flows.len());
    for f in flows {
        let key = (f[6].as_str().unwrap().to_string(), f[4].as_u64().unwrap());
        let begin = from[&key];
        let at = f[1].as_u64().unwrap();
        assert_eq!(
            (f[2].as_str(), f[3].as_str()),
            (Some("source 100"), Some("activate")),
            "{f}"
        );
        assert!(at >= begin && at - begin <= 1_000, "{f} {begin}");
    }
}
