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
    let out_dir = dir.path().join("recovered");
    let bad = dir.path().join("not-a-ring.ring");
    std::fs::write(&bad, b"hello").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .arg("recover")
        .arg(dir.path().join("queue0-circular.ring"))
        .arg(dir.path().join("queue1-fixed.ring"))
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
