//! `qtrace dump --follow FILE` on a file an online queue is writing: the
//! events as they are written, across the queue re-creating a deleted
//! file, until its close run.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use qtrace::classes::user;
use qtrace::queues::OnlineParams;

use crate::common::loopback::wait_until;
use crate::common::online_writer::online_tracer;
use crate::common::temp_dirs::created_dir;

#[test]
fn dump_follow_prints_events_as_the_file_grows_and_across_its_re_creation() {
    let dir = created_dir("live", "follow");
    let file = dir.join("online.qtr");
    // Started before the file exists: it waits for it.
    let mut dump = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(["dump", "--follow"])
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let stdout = dump.stdout.take().unwrap();
    let seen = lines.clone();
    let reading = std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines() {
            seen.lock().unwrap().push(l.unwrap());
        }
    });
    let shown = |n: usize| {
        let lines = lines.clone();
        move || lines.lock().unwrap().len() >= n
    };
    let (tracer, clock) = online_tracer(
        OnlineParams::default()
            .with_file(&file)
            .with_period(Duration::from_millis(10)),
        user::CLASS,
    );
    let log = |range: std::ops::Range<u64>| {
        for i in range {
            clock.set(1000 * (i + 1));
            tracer.log_event(user::USER0, [i, 0]);
        }
    };
    log(0..50);
    // Shown while the queue runs: the file grows under the follower.
    wait_until(
        "the first 50 events shown",
        Duration::from_secs(30),
        shown(50),
    );
    // Deleted under the queue: it re-creates the file, starting with a
    // hoops record for the 50 events that went with the old one.
    let inode = |p: &std::path::Path| {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(p).map(|m| m.ino()).ok()
    };
    let old = inode(&file);
    std::fs::remove_file(&file).unwrap();
    wait_until("the file re-created", Duration::from_secs(30), || {
        inode(&file).is_some_and(|i| Some(i) != old)
    });
    log(50..80);
    wait_until(
        "the new file's events shown",
        Duration::from_secs(30),
        shown(81),
    );
    let report = tracer.shutdown().unwrap();
    assert_eq!(report.queues[0].counters.overwritten, 50); // went with the old file
                                                           // The close run ends it.
    let status = dump.wait().unwrap();
    reading.join().unwrap();
    let mut err = String::new();
    dump.stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success(), "{status:?}: {err}");
    assert!(
        err.contains("online.qtr was re-created by its writer"),
        "{err}"
    );
    let lines = lines.lock().unwrap();
    assert_eq!(lines.len(), 82, "{lines:#?}");
    let value = |l: &str| -> u64 {
        assert!(l.contains(" user0 "), "{l}");
        l.split_whitespace()
            .find_map(|w| w.strip_prefix("value="))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no value in {l:?}"))
    };
    let values: Vec<u64> = lines[..50].iter().map(|l| value(l)).collect();
    assert_eq!(values, (0..50).collect::<Vec<_>>());
    assert_eq!(
        lines[50].split_whitespace().collect::<Vec<_>>()[1..],
        ["[LOST", "50", "EVENTS]", "(queue", "0)"],
        "{}",
        lines[50]
    );
    let values: Vec<u64> = lines[51..81].iter().map(|l| value(l)).collect();
    assert_eq!(values, (50..80).collect::<Vec<_>>());
    assert_eq!(lines[1].split_whitespace().next(), Some("0.000002000"));
    assert!(lines[81].contains("[END: complete"), "{}", lines[81]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Ctrl-C (SIGINT) ends a follow of a file still being written: what was
/// read is printed, the status is 0, and there is no END line (the file
/// has not ended).
#[test]
fn dump_follow_stops_on_ctrl_c() {
    let dir = created_dir("live", "follow-int");
    let file = dir.join("online.qtr");
    let (tracer, clock) = online_tracer(
        OnlineParams::default()
            .with_file(&file)
            .with_period(Duration::from_millis(10)),
        user::CLASS,
    );
    for i in 0..5 {
        clock.set(1000 * (i + 1));
        tracer.log_event(user::USER0, [i, 0]);
    }
    let mut dump = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(["dump", "--follow"])
        .arg(&file)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = dump.stdout.take().unwrap();
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = lines.clone();
    let reading = std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines() {
            seen.lock().unwrap().push(l.unwrap());
        }
    });
    let shown = lines.clone();
    wait_until("the 5 events shown", Duration::from_secs(30), move || {
        shown.lock().unwrap().len() >= 5
    });
    // SAFETY: kill with a child's pid and a signal number has no memory effects.
    assert_eq!(
        unsafe { libc::kill(dump.id() as libc::pid_t, libc::SIGINT) },
        0
    );
    let status = dump.wait().unwrap();
    reading.join().unwrap();
    assert!(status.success(), "{status:?}");
    let lines = lines.lock().unwrap();
    assert_eq!(lines.len(), 5, "{lines:#?}");
    assert!(lines.iter().all(|l| l.contains(" user0 ")), "{lines:#?}");
    drop(tracer);
    let _ = std::fs::remove_dir_all(&dir);
}

/// An online queue rotating into chunks: `dump --follow` on the first
/// chunk goes on into each next one, printing each chunk's END line, and
/// ends with the last chunk's close run; every event is shown once, in
/// order.
#[test]
fn dump_follow_goes_on_into_the_next_chunk_at_each_rotation() {
    let dir = created_dir("live", "follow-chunks");
    let (tracer, clock) = online_tracer(
        OnlineParams::default()
            .with_file(dir.join("run.qtr"))
            .with_period(Duration::from_millis(5))
            .with_rotation(Some(4096), None),
        user::CLASS,
    );
    let dump = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(["dump", "--follow"])
        .arg(dir.join("run.000001.qtr"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Compact chunks (the default) of about 5 bytes an event: 4,000 events
    // fill several chunks of 4 KiB.
    for i in 0..4000u64 {
        clock.set(1000 * (i + 1));
        tracer.log_event(user::USER0, [i, 0]);
        if i % 400 == 0 {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let report = tracer.shutdown().unwrap();
    let chunks = report.queues[0].status.files.len();
    assert!(chunks >= 4, "{chunks} chunks");
    let out = dump.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {err}", out.status);
    let lines: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    let ends: Vec<&&str> = lines
        .iter()
        .filter(|l| l.contains("[END: complete"))
        .collect();
    assert_eq!(ends.len(), chunks, "{lines:#?}");
    assert!(lines.last().unwrap().contains("[END: complete"));
    let values: Vec<u64> = lines
        .iter()
        .filter(|l| l.contains(" user0 "))
        .map(|l| {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix("value="))
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert_eq!(values, (0..4000).collect::<Vec<_>>());
    assert_eq!(
        err.matches("was closed by its rotation: following the next chunk")
            .count(),
        chunks - 1,
        "{err}"
    );
    assert!(err.contains("run.000002.qtr"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
