//! Issue 23's smaller items for the reading commands: a multi-file `dump`
//! reads the other files after one bad header; `dump` and `stats` on a FIFO
//! refuse at once with a message instead of blocking; what a cut left of a
//! close run is not counted as events by `stats`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use qtrace::classes::user;
use qtrace::clock::ManualClock;

use crate::common::default_queues::fixed_queue_32;
use crate::common::manual_tracer::manual_tracer as tracer;
use crate::common::temp_dirs;

fn qtrace(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run qtrace")
}

/// A complete trace of 5 user events in `d` (its path).
fn five_events(d: &Path) -> PathBuf {
    let clock = ManualClock::new(0);
    let t = tracer(d, &clock);
    let q = fixed_queue_32(&t, 8);
    t.assign_event(user::USER0, q).unwrap();
    t.activate().unwrap();
    for i in 0..5 {
        clock.advance(1000);
        t.log_event(user::USER0, [i, 0]);
    }
    t.shutdown().unwrap();
    d.join("queue0-fixed.qtr")
}

fn s(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

#[test]
fn a_multi_file_dump_reads_the_others_after_one_bad_header() {
    let d = temp_dirs::fresh_dir("edges-cli", "dump-bad");
    let good = five_events(&d);
    let bad = d.join("bad.qtr");
    std::fs::write(&bad, b"QTRACE\0\0 but not a header at all").unwrap();
    for order in [[&bad, &good], [&good, &bad]] {
        let o = qtrace(&["dump", &s(order[0]), &s(order[1])]);
        let stdout = String::from_utf8_lossy(&o.stdout);
        let stderr = String::from_utf8_lossy(&o.stderr);
        // The good file's 5 events, its END line; the bad one reported, and
        // the status says damaged.
        assert_eq!(stdout.matches("user0").count(), 5, "{stdout}{stderr}");
        assert!(stdout.contains("END"), "{stdout}");
        assert!(stderr.contains("bad.qtr"), "{stderr}");
        assert!(stderr.contains("the other files are read"), "{stderr}");
        assert_eq!(o.status.code(), Some(2), "{stderr}");
    }
    // Only bad files: nothing to read, status 2.
    let o = qtrace(&["dump", &s(&bad)]);
    assert_eq!(o.status.code(), Some(2));
    std::fs::remove_dir_all(&d).unwrap();
}

#[cfg(unix)]
#[test]
fn dump_stats_and_recover_on_a_fifo_refuse_at_once() {
    let d = temp_dirs::created_dir("edges-cli", "fifo");
    let fifo = d.join("pipe.qtr");
    let c = std::ffi::CString::new(s(&fifo)).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo reads it only.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for cmd in ["dump", "stats"] {
        let t = Instant::now();
        // No writer ever opens the FIFO: opening it to read would block.
        let o = qtrace(&[cmd, &s(&fifo)]);
        assert!(t.elapsed() < Duration::from_secs(10), "{cmd} blocked");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{cmd}: {stderr}");
        assert!(stderr.contains("FIFO"), "{cmd}: {stderr}");
        assert!(
            stderr.contains("save the stream to a file first"),
            "{cmd}: {stderr}"
        );
    }
    // `recover` too: a ring file is a file a process mapped, never a stream.
    let out = d.join("out");
    let t = Instant::now();
    let o = qtrace(&["recover", "--out", &s(&out), &s(&fifo)]);
    assert!(t.elapsed() < Duration::from_secs(10), "recover blocked");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "recover: {stderr}");
    assert!(
        stderr.contains("FIFO") && stderr.contains("not a ring file"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn what_a_cut_left_of_a_close_run_is_not_counted_as_events() {
    let d = temp_dirs::fresh_dir("edges-cli", "orphan");
    let complete = five_events(&d);
    let bytes = std::fs::read(&complete).unwrap();
    // Cut inside the close run: its first two records are left.
    let cut = d.join("cut.qtr");
    std::fs::write(&cut, &bytes[..bytes.len() - 32]).unwrap();
    let o = qtrace(&["stats", "--json", &s(&complete), &s(&cut)]);
    assert_eq!(o.status.code(), Some(3), "cut: status 3");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let files = v["files"].as_array().unwrap();
    // Both hold the same 5 events (and the names prologue's records, if any:
    // the same in both); the cut one's 2 orphan records are control records.
    assert_eq!(files[0]["events"], files[1]["events"], "{v}");
    assert_eq!(files[0]["control_records"], 0);
    assert_eq!(files[1]["control_records"], 2);
    let o = qtrace(&["stats", &s(&cut)]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("control records outside a close run: 2"),
        "{stdout}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}
