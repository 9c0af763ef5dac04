//! A `Tracer` dropped without `shutdown()` shuts down like `shutdown()` for
//! every queue type; a panic in any thread saves the heap-backed fixed and
//! circular queues through the tracer's panic hook (chained before the
//! previous hook), unless `Config::save_on_panic` is off.

use std::sync::atomic::{AtomicUsize, Ordering};

use qtrace::classes::user;
use qtrace::queues::{Circular, CircularParams, Fixed, FixedParams, Online, OnlineParams};
use qtrace::reader::{Completeness, TraceReader};
use qtrace::storage::RingStorage;
use qtrace::{Config, Event, Tracer};

/// The records of a trace file, and what its end says.
fn read(path: &std::path::Path) -> (Vec<Event>, Option<Completeness>) {
    let mut r = TraceReader::open(path).unwrap();
    let events = r.by_ref().map(|e| e.unwrap()).collect();
    (events, r.completeness())
}

fn args(events: &[Event]) -> Vec<u64> {
    events
        .iter()
        .filter(|e| e.id != qtrace::classes::tracer::HOOPS)
        .map(|e| e.args[0])
        .collect()
}

#[test]
fn a_dropped_tracer_saves_every_queue_type_and_removes_ring_files() {
    let dir = tempfile::tempdir().unwrap();
    let t = Tracer::with_config(Config::default().with_output_dir(dir.path()));
    let f = t
        .create_queue::<Fixed>(FixedParams::default().with_capacity(4))
        .unwrap();
    let c = t
        .create_queue::<Circular>(
            CircularParams::default()
                .with_capacity(4)
                .with_ring(RingStorage::Memory),
        )
        .unwrap();
    let o = t.create_queue::<Online>(OnlineParams::default()).unwrap();
    t.assign_event(user::USER0, f).unwrap();
    t.assign_event(user::USER1, c).unwrap();
    t.assign_event(user::USER2, o).unwrap();
    t.activate().unwrap();
    assert!(dir.path().join("queue0-fixed.ring").exists());
    for i in 0..6 {
        t.log_event(user::USER0, [i, 0]);
        t.log_event(user::USER1, [i, 0]);
        t.log_event(user::USER2, [i, 0]);
    }
    drop(t);
    let (fixed, _) = read(&dir.path().join("queue0-fixed.qtr"));
    assert_eq!(args(&fixed), [0, 1, 2, 3]);
    let (circ, _) = read(&dir.path().join("queue1-circular.qtr"));
    assert_eq!(args(&circ), [2, 3, 4, 5]);
    let (online, _) = read(&dir.path().join("queue2-online.qtr"));
    assert_eq!(args(&online), [0, 1, 2, 3, 4, 5]);
    // A clean save removes the ring file: none is left.
    assert!(!dir.path().join("queue0-fixed.ring").exists());
}

#[test]
fn a_panic_in_another_thread_saves_heap_queues_and_chains_the_previous_hook() {
    static PREVIOUS: AtomicUsize = AtomicUsize::new(0);
    std::panic::set_hook(Box::new(|info| {
        PREVIOUS.fetch_add(1, Ordering::SeqCst);
        eprintln!("{info}");
    }));
    let dir = tempfile::tempdir().unwrap();
    let off = tempfile::tempdir().unwrap();
    let make = |dir: &std::path::Path, save: bool| {
        let t = Tracer::with_config(
            Config::default()
                .with_output_dir(dir)
                .with_save_on_panic(save),
        );
        let f = t
            .create_queue::<Fixed>(
                FixedParams::default()
                    .with_capacity(3)
                    .with_ring(RingStorage::Memory),
            )
            .unwrap();
        let c = t
            .create_queue::<Circular>(
                CircularParams::default()
                    .with_capacity(4)
                    .with_ring(RingStorage::Memory),
            )
            .unwrap();
        t.assign_event(user::USER0, f).unwrap();
        t.assign_event(user::USER1, c).unwrap();
        t.activate().unwrap();
        for i in 0..5 {
            t.log_event(user::USER0, [i, 0]);
            t.log_event(user::USER1, [i, 0]);
        }
        t
    };
    let t = make(dir.path(), true);
    let quiet = make(off.path(), false);
    let before = t.counters(qtrace::QueueHandle(0)).unwrap();
    std::thread::spawn(|| panic!("a worker fails"))
        .join()
        .unwrap_err();
    assert_eq!(PREVIOUS.load(Ordering::SeqCst), 1, "the previous hook ran");
    // Restore the default hook before asserting, so a failure shows.
    let _ = std::panic::take_hook();
    let (fixed, _) = read(&dir.path().join("queue0-fixed.qtr"));
    // The first 3, then a hoops record for the 2 dropped.
    assert_eq!(args(&fixed), [0, 1, 2]);
    assert_eq!(fixed.last().unwrap().args, [2, 0]);
    let (circ, _) = read(&dir.path().join("queue1-circular.qtr"));
    assert_eq!(args(&circ), [1, 2, 3, 4]);
    assert_eq!(t.counters(qtrace::QueueHandle(0)).unwrap(), before);
    // Opted out: the panic wrote no event (phase 2 may have created the
    // file with just a header).
    let unsaved = off.path().join("queue0-fixed.qtr");
    assert!(!unsaved.exists() || read(&unsaved).0.is_empty());
    // The program survived the panic: shutdown saves the final trace.
    t.log_event(user::USER1, [5, 0]);
    let report = t.shutdown().unwrap();
    assert_eq!(report.queues[1].counters.delivered, 4);
    let (circ, _) = read(&dir.path().join("queue1-circular.qtr"));
    assert_eq!(args(&circ), [2, 3, 4, 5]);
    drop(quiet);
}

#[test]
fn a_ring_file_left_by_a_crash_is_kept_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let ring = dir.path().join("queue0-fixed.ring");
    let make = || {
        let t = Tracer::with_config(Config::default().with_output_dir(dir.path()));
        t.create_queue::<Fixed>(FixedParams::default().with_capacity(4))
            .unwrap();
        t
    };
    let first = make();
    assert!(ring.exists());
    // As if the process had died: the ring file stays.
    std::mem::forget(first);
    let _second = make();
    let kept = dir
        .path()
        .join(format!("queue0-fixed-pid{}.ring", std::process::id()));
    assert!(kept.exists(), "the previous ring file was not kept");
    assert!(ring.exists());
    let rec = qtrace::storage::recover_file(&kept).unwrap();
    assert_eq!(rec.counts.attempts, 0);
}

#[test]
fn a_ring_file_that_cannot_be_created_is_an_error_of_create_queue_saying_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("not-a-dir");
    std::fs::write(&blocker, b"x").unwrap();
    let t = Tracer::with_config(Config::default().with_output_dir(blocker.join("out")));
    let e = t.create_queue::<Fixed>(FixedParams::default()).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, qtrace::ConfigError::Io(_)), "{e:?}");
    assert!(msg.contains("not-a-dir"), "{msg}");
    assert!(msg.contains("Config::with_output_dir"), "{msg}");
    assert!(msg.contains("RingStorage::Memory"), "{msg}");
    // On the heap, the same queue is created (its trace file is only
    // written at shutdown).
    assert!(t
        .create_queue::<Fixed>(FixedParams::default().with_ring(RingStorage::Memory))
        .is_ok());
}
