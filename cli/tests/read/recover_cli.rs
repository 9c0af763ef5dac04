//! `qtrace recover`, run as the binary, on the ring files of a tracer that
//! never shut down (leaked, as if its process had been killed: the shared
//! mapping already holds every store), and on files that are not ring files.

use std::process::Command;

use qtrace::classes::user;
use qtrace::clock::ManualClock;

use crate::common::default_queues;
use crate::common::manual_tracer;
use default_queues::circular_and_fixed;
use manual_tracer::manual_tracer;

#[test]
fn recovers_ring_files_and_reports_what_was_lost() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(100);
    let t = manual_tracer(dir.path(), &clock);
    // Queue 0 circular (user0), queue 1 fixed (user1).
    circular_and_fixed(&t, 4, 3);
    t.activate().unwrap();
    for i in 0..10 {
        clock.advance(10);
        t.log_event(user::USER0, [i, 0]);
        t.log_event(user::USER1, [i, 0]);
    }
    std::mem::forget(t); // no shutdown, no drop: as after SIGKILL
                         // This process still maps the files (its writer is alive): copies of
                         // them, as taken from a dead process, are what `recover` reads.
    let dead = dir.path().join("dead");
    std::fs::create_dir(&dead).unwrap();
    for name in ["queue0-circular.ring", "queue1-fixed.ring"] {
        std::fs::copy(dir.path().join(name), dead.join(name)).unwrap();
    }
    let out_dir = dir.path().join("recovered");
    let bad = dir.path().join("not-a-ring.ring");
    std::fs::write(&bad, b"hello").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .arg("recover")
        .arg(dead.join("queue0-circular.ring"))
        .arg(dead.join("queue1-fixed.ring"))
        .arg(&bad)
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(lines[0].ends_with(
        "queue0-circular.qtr: 4 events recovered, 6 lost (0 dropped, 6 overwritten, 0 unreadable at the crash)"
    ));
    assert!(lines[1].ends_with(
        "queue1-fixed.qtr: 3 events recovered, 7 lost (7 dropped, 0 overwritten, 0 unreadable at the crash)"
    ));
    assert!(stderr.contains("not a qtrace ring file"), "{stderr}");
    // The recovered traces read as complete, with the same events.
    let dump = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .arg("dump")
        .arg(out_dir.join("queue0-circular.qtr"))
        .output()
        .unwrap();
    let text = String::from_utf8(dump.stdout).unwrap();
    assert!(text.contains("[LOST 6 EVENTS]"), "{text}");
    assert_eq!(text.matches("user0").count(), 4, "{text}");
}

fn qtrace(args: &[&std::ffi::OsStr]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// A ring file of this (live) process, and a copy of it as a dead process
/// would leave it.
fn live_and_dead_rings(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let clock = ManualClock::new(100);
    let t = manual_tracer(dir, &clock);
    circular_and_fixed(&t, 4, 3);
    t.activate().unwrap();
    for i in 0..10 {
        clock.advance(10);
        t.log_event(user::USER0, [i, 0]);
    }
    std::mem::forget(t);
    let live = dir.join("queue0-circular.ring");
    let dead = dir.join("copy.ring");
    std::fs::copy(&live, &dead).unwrap();
    (live, dead)
}

#[test]
fn recover_of_dev_zero_ends_at_once_with_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let start = std::time::Instant::now();
    let (code, _, err) = qtrace(&[
        "recover".as_ref(),
        "/dev/zero".as_ref(),
        "--out".as_ref(),
        dir.path().as_os_str(),
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("not a qtrace ring file"), "{err}");
    assert!(start.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no output"
    );
}

#[test]
fn a_live_process_ring_is_refused_unless_forced_and_then_a_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let (live, _) = live_and_dead_rings(dir.path());
    let out = dir.path().join("out");
    let (code, _, err) = qtrace(&[
        "recover".as_ref(),
        live.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!("(pid {}) is still running", std::process::id()))
            && err.contains("--force"),
        "{err}"
    );
    assert!(!out.join("queue0-circular.qtr").exists());
    let (code, text, err) = qtrace(&[
        "recover".as_ref(),
        live.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
        "--force".as_ref(),
    ]);
    assert_eq!(code, Some(3), "{text}{err}");
    assert!(
        err.contains("a snapshot of process") && err.contains("is not complete"),
        "{err}"
    );
    // The snapshot reads as cut, never complete.
    let (code, _, err) = qtrace(&[
        "stats".as_ref(),
        out.join("queue0-circular.qtr").as_os_str(),
    ]);
    assert_eq!(code, Some(3), "{err}");
}

#[test]
fn an_existing_output_is_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let (_, dead) = live_and_dead_rings(dir.path());
    let out = dir.path().join("out");
    let (code, _, err) = qtrace(&[
        "recover".as_ref(),
        dead.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let target = out.join("copy.qtr");
    let first = std::fs::read(&target).unwrap();
    std::fs::write(&target, b"an earlier trace").unwrap();
    let (code, _, err) = qtrace(&[
        "recover".as_ref(),
        dead.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("already exists: it is not overwritten"),
        "{err}"
    );
    assert_eq!(std::fs::read(&target).unwrap(), b"an earlier trace");
    assert!(!first.is_empty());
    // No partial file is left beside it.
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1);
}

#[test]
fn a_damaged_ring_is_recovered_marked_and_not_complete() {
    let dir = tempfile::tempdir().unwrap();
    let (_, dead) = live_and_dead_rings(dir.path());
    let mut b = std::fs::read(&dead).unwrap();
    b[72] ^= 1; // the process id: the header checksum no longer matches
    std::fs::write(&dead, &b).unwrap();
    let out = dir.path().join("out");
    let (code, text, err) = qtrace(&[
        "recover".as_ref(),
        dead.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(code, Some(2), "{text}{err}");
    assert!(
        err.contains("damaged at offset 80: header checksum"),
        "{err}"
    );
    assert!(err.contains("the ring file is damaged"), "{err}");
    assert!(text.contains("4 events recovered"), "{text}");
    let (code, _, err) = qtrace(&["stats".as_ref(), out.join("copy.qtr").as_os_str()]);
    assert_eq!(code, Some(3), "a damaged recovery reads as cut: {err}");
}

#[test]
fn json_summary_lists_each_trace_and_what_was_not_recovered() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(100);
    let t = manual_tracer(dir.path(), &clock);
    circular_and_fixed(&t, 4, 3);
    t.activate().unwrap();
    for i in 0..10 {
        clock.advance(10);
        t.log_event(user::USER0, [i, 0]);
        t.log_event(user::USER1, [i, 0]);
    }
    std::mem::forget(t); // as after SIGKILL
    let dead = dir.path().join("dead");
    std::fs::create_dir(&dead).unwrap();
    for name in ["queue0-circular.ring", "queue1-fixed.ring"] {
        std::fs::copy(dir.path().join(name), dead.join(name)).unwrap();
    }
    let out_dir = dir.path().join("recovered");
    let bad = dir.path().join("not-a-ring.ring");
    std::fs::write(&bad, b"hello").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .arg("recover")
        .arg(&dead)
        .arg(&bad)
        .arg("--out")
        .arg(&out_dir)
        .arg("--json")
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    // The per-file lines went to stderr; stdout is one line of JSON.
    assert!(
        stderr.contains("queue0-circular.qtr: 4 events recovered"),
        "{stderr}"
    );
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let s = |p: std::path::PathBuf| p.display().to_string();
    assert_eq!(
        v,
        serde_json::json!({
            "exit_status": 2,
            "recovered": [
                {
                    "ring": s(dead.join("queue0-circular.ring")),
                    "trace": s(out_dir.join("queue0-circular.qtr")),
                    "events": 4, "lost": 6, "dropped": 0, "overwritten": 6,
                    "unreadable": 0, "snapshot": false, "damaged": 0
                },
                {
                    "ring": s(dead.join("queue1-fixed.ring")),
                    "trace": s(out_dir.join("queue1-fixed.qtr")),
                    "events": 3, "lost": 7, "dropped": 7, "overwritten": 0,
                    "unreadable": 0, "snapshot": false, "damaged": 0
                }
            ],
            "stores": [],
            "not_recovered": [s(bad)]
        })
    );
}

/// `qtrace recover` writes compact traces (version 2, as the queues' saves)
/// and `--32` writes 32-byte records (version 1, the bytes pinned): the
/// same records, hoops records and close-run counts either way.
#[test]
fn recover_writes_compact_traces_and_32_byte_ones_with_32() {
    use qtrace::reader::{Completeness, TraceReader};
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(100);
    let t = manual_tracer(dir.path(), &clock);
    circular_and_fixed(&t, 4, 3);
    t.activate().unwrap();
    for i in 0..10 {
        clock.advance(10);
        t.log_event(user::USER0, [i, i * 1000]);
    }
    std::mem::forget(t); // as after SIGKILL
    let dead = dir.path().join("dead");
    std::fs::create_dir(&dead).unwrap();
    let ring = dead.join("queue0-circular.ring");
    std::fs::copy(dir.path().join("queue0-circular.ring"), &ring).unwrap();
    let mut read = Vec::new();
    for (flag, version) in [(None, 2), (Some("--32"), 1)] {
        let out_dir = dir.path().join(format!("out-{version}"));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_qtrace"));
        cmd.arg("recover").arg(&ring).arg("--out").arg(&out_dir);
        cmd.args(flag);
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let path = out_dir.join("queue0-circular.qtr");
        let mut r = TraceReader::open(&path).unwrap();
        assert_eq!(r.header().version(), version);
        let events: Vec<qtrace::Event> = r.by_ref().map(Result::unwrap).collect();
        let Some(Completeness::Complete(close)) = r.completeness() else {
            panic!("{:?}", r.completeness());
        };
        // The newest 4 of 10 after a hoops record for the 6 overwritten.
        assert_eq!(events.len(), 5);
        assert_eq!(events[0].id, qtrace::classes::tracer::HOOPS);
        assert_eq!(events[0].args, [6, 0]);
        let kept: Vec<[u64; 2]> = events[1..].iter().map(|e| e.args).collect();
        assert_eq!(kept, (6..10u64).map(|i| [i, i * 1000]).collect::<Vec<_>>());
        assert_eq!((close.records, close.lost), (5, 6));
        let body = std::fs::metadata(&path).unwrap().len() - r.header_len();
        if version == 1 {
            assert_eq!(body, 32 * (5 + 3));
        } else {
            assert!(body < 32 * (5 + 3) / 2, "{body} bytes");
        }
        read.push(events);
    }
    assert_eq!(read[0], read[1]);
}
