//! The chunks of a rotating online queue (FORMAT.md 1.10) given together to
//! `stats`, `dump` and `convert`: read as one trace, each chunk complete, the
//! events exactly those of the chunks kept, in order.

use std::process::Command;
use std::time::Duration;

use qtrace::classes::user;
use qtrace::clock::{Clock, ManualClock};
use qtrace::queues::{Online, OnlineParams};
use qtrace::{Config, Tracer};

#[test]
fn stats_dump_and_convert_read_the_chunks_kept_as_one_trace() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(0);
    let tracer = Tracer::with_config(Config::default().with_clock(Clock::manual(&clock)));
    let q = tracer
        .create_queue::<Online>(
            OnlineParams::default()
                .with_file(dir.path().join("run.qtr"))
                .with_capacity(4096)
                .with_period(Duration::from_millis(1))
                .with_rotation(Some(4096), None)
                .with_retention(Some(4), None),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer.activate().unwrap();
    tracer.name_source(0, "main").unwrap();
    for i in 0..2000u64 {
        clock.set(10 * (i + 1));
        tracer.log_event(user::USER0, [i, 0]);
    }
    let report = tracer.shutdown().unwrap();
    let files = report.queues[0].status.files.clone();
    let c = report.queues[0].counters;
    assert_eq!(files.len(), 4);
    // The events kept: those not overwritten (deleted with their chunks;
    // the name record, a run of 2 records, went with the first chunk, and
    // the chunks kept name the source in their prologue, which is not
    // counted as delivered: it is not an event the queue took).
    let kept = c.delivered;
    assert_eq!(c.delivered + c.overwritten, 2002);
    let first = 2000 - kept;

    let qtrace = || Command::new(env!("CARGO_BIN_EXE_qtrace"));
    let out = qtrace()
        .args(["stats", "--json"])
        .args(&files)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let json = String::from_utf8(out.stdout).unwrap();
    assert_eq!(json.matches("\"complete\":true").count(), 4, "{json}");
    assert!(
        json.contains(&format!("\"total\":{{\"files\":4,\"events\":{kept},")),
        "{json}"
    );

    let out = qtrace().arg("dump").args(&files).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let values: Vec<u64> = text
        .lines()
        .filter(|l| l.contains(" user0 "))
        .map(|l| {
            assert!(l.contains("0(main)"), "every chunk names the source: {l}");
            l.split_whitespace()
                .find_map(|w| w.strip_prefix("value="))
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert_eq!(values, (first..2000).collect::<Vec<_>>());

    let json_out = dir.path().join("all.json");
    let out = qtrace()
        .args(["convert", "--to", "chrome", "--out"])
        .arg(&json_out)
        .args(&files)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let chrome = std::fs::read_to_string(&json_out).unwrap();
    assert_eq!(chrome.matches("\"name\":\"user0\"").count() as u64, kept);
}
