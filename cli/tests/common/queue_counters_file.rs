//! An online queue's file with its queue counters (FORMAT.md 1.3.4), for
//! the readers' tests (`read/queue_counters.rs`, `sql/queue_counters.rs`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use qtrace::classes::user;
use qtrace::queues::{Online, OnlineParams};
use qtrace::Tracer;

/// 40 events logged into an online queue of 16 before its task starts (24
/// dropped), with its counters: the file holds the 16 events, the hoops
/// record of 24 and the samples (16, 24), (0, 24), (0, 24).
pub fn counters_file(dir: &Path) -> PathBuf {
    let path = dir.join("online.qtr");
    let tracer = Tracer::new();
    let q = tracer
        .create_queue::<Online>(
            OnlineParams::default()
                .with_file(&path)
                .with_capacity(16)
                .with_period(Duration::from_secs(3600))
                .with_queue_counters(true),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    for i in 0..40 {
        tracer.log_event(user::USER0, [i, 0]);
    }
    tracer.activate().unwrap();
    // The first round (at activation) has written its events and sample.
    let t = std::time::Instant::now();
    while tracer.counters(q).unwrap().delivered < 16 {
        assert!(t.elapsed() < Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(1));
    }
    let report = tracer.shutdown().unwrap();
    let c = report.queues[0].counters;
    assert_eq!((c.accepted, c.dropped, c.delivered), (16, 24, 16));
    path
}

/// Two online queues of one program, each with its counters, written to
/// `a.qtr` (queue 0: 40 events into 16, 24 dropped) and `b.qtr` (queue 1:
/// 5 events into 16), for reading them together (FORMAT.md 1.3.4, *One
/// series per queue*): their samples share counter, source and time order,
/// only `arg1` (the queue's handle) tells them apart.
pub fn two_queues_files(dir: &Path) -> [PathBuf; 2] {
    let [a, b] = [dir.join("a.qtr"), dir.join("b.qtr")];
    let tracer = Tracer::new();
    let queue = |path: &Path| {
        tracer
            .create_queue::<Online>(
                OnlineParams::default()
                    .with_file(path)
                    .with_capacity(16)
                    .with_period(Duration::from_secs(3600))
                    .with_queue_counters(true),
            )
            .unwrap()
    };
    let (qa, qb) = (queue(&a), queue(&b));
    tracer.assign_class(user::CLASS, qa).unwrap();
    tracer.assign_event(user::USER1, qb).unwrap();
    for i in 0..40 {
        tracer.log_event(user::USER0, [i, 0]);
    }
    for i in 0..5 {
        tracer.log_event(user::USER1, [i, 0]);
    }
    tracer.activate().unwrap();
    let t = std::time::Instant::now();
    while tracer.counters(qa).unwrap().delivered < 16 || tracer.counters(qb).unwrap().delivered < 5
    {
        assert!(t.elapsed() < Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(1));
    }
    let report = tracer.shutdown().unwrap();
    let c = |i: usize| {
        let c = report.queues[i].counters;
        (c.accepted, c.dropped, c.delivered)
    };
    assert_eq!((c(0), c(1)), ((16, 24, 16), (5, 0, 5)));
    [a, b]
}
