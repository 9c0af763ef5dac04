//! Two processes tracing into one output directory (issue 23, item 2): the
//! trace files a live process's queues write there are locked (`flock`)
//! from phase 2 until they are saved, so a second process's `activate` is
//! refused with a message saying what to do instead of overwriting them; once
//! the first has shut down, the directory can be used again.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use qtrace::classes::user;
use qtrace::queues::{Fixed, FixedParams, Online, OnlineParams};
use qtrace::reader::Completeness;
use qtrace::storage::RingStorage;
use qtrace::{Config, Tracer};

use crate::common::child_test::spawn_ready;
use crate::common::read_all::read_all;

const READY: &str = "shared-dir child ready";

/// A tracer into `dir` with a fixed queue (0, its ring in memory) and an
/// online queue (1), both taking the user class.
fn tracer(dir: &Path) -> (Tracer, Result<(), qtrace::Error>) {
    let tracer = Tracer::with_config(Config::default().with_output_dir(dir));
    let fixed = tracer
        .create_queue::<Fixed>(FixedParams::default().with_ring(RingStorage::Memory))
        .unwrap();
    let online = tracer
        .create_queue::<Online>(OnlineParams::default().with_capacity(1024))
        .unwrap();
    tracer.assign_class(user::CLASS, fixed).unwrap();
    let _ = online;
    let r = tracer.activate().map(drop).map_err(qtrace::Error::from);
    (tracer, r)
}

/// The child: traces 100 events into `QTRACE_SHARED_DIR`, says it is
/// ready, waits for the file `release` there, then shuts down.
#[test]
fn child_process() {
    let Ok(dir) = std::env::var("QTRACE_SHARED_DIR") else {
        return;
    };
    let dir = Path::new(&dir);
    let (t, r) = tracer(dir);
    r.unwrap();
    for i in 0..100 {
        t.log_event(user::USER0, [i, 0]);
    }
    println!("{READY}");
    let start = Instant::now();
    while !dir.join("release").exists() && start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let report = t.shutdown().unwrap();
    assert!(report.is_clean(), "{report:?}");
}

#[test]
fn a_second_process_on_the_same_output_directory_is_refused_not_overwriting() {
    let dir = tempfile::tempdir().unwrap();
    let (child, _lines) = spawn_ready(
        module_path!(),
        "child_process",
        &[("QTRACE_SHARED_DIR", dir.path().as_os_str())],
        Stdio::inherit(),
        READY,
    );
    // This process, same directory, same file names: refused at phase 2.
    let (_mine, r) = tracer(dir.path());
    let err = r.unwrap_err().to_string();
    assert!(err.contains("queue0-fixed.qtr"), "{err}");
    assert!(
        err.contains("another process is writing a trace there"),
        "{err}"
    );
    assert!(err.contains("Config::with_output_dir"), "{err}");
    // The online queue's file alone is refused the same way.
    let only_online = Tracer::with_config(Config::default().with_output_dir(dir.path()));
    only_online
        .create_queue::<Online>(
            OnlineParams::default().with_file(dir.path().join("queue1-online.qtr")),
        )
        .unwrap();
    let err = only_online.activate().unwrap_err().to_string();
    assert!(err.contains("queue1-online.qtr"), "{err}");
    assert!(
        err.contains("another process is writing a trace there"),
        "{err}"
    );
    // The child's traces are whole: its 100 events, complete.
    std::fs::write(dir.path().join("release"), b"").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let (_, events, end) = read_all(&dir.path().join("queue0-fixed.qtr"));
    assert_eq!(events.iter().filter(|e| e.id == user::USER0).count(), 100);
    assert!(matches!(end, Completeness::Complete(_)), "{end:?}");
    assert!(matches!(
        read_all(&dir.path().join("queue1-online.qtr")).2,
        Completeness::Complete(_)
    ));
    // Once it is gone, the directory is free again.
    let (again, r) = tracer(dir.path());
    r.unwrap();
    again.log_event(user::USER0, [7, 0]);
    assert!(again.shutdown().unwrap().is_clean());
    let (_, events, _) = read_all(&dir.path().join("queue0-fixed.qtr"));
    assert_eq!(events.iter().filter(|e| e.id == user::USER0).count(), 1);
}
