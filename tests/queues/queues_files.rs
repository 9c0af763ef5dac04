//! Saving fixed and circular queues: default and explicit file names, the
//! exact records saved (hoops included), snapshots while logging, parameter
//! errors, and I/O failures reported as errors and in the queue's status.

use crate::queues_support;

use qtrace::classes::{tracer::HOOPS, user};
use qtrace::clock::ManualClock;
use qtrace::queue::Queue;
use qtrace::queues::{Circular, CircularParams, Fixed, FixedParams};
use qtrace::QueueHandle;
use qtrace::{ConfigError, Event, Tracer};
use queues_support::{hoops, read_trace, scratch};

use crate::common::default_queues;
use crate::common::manual_tracer;
use default_queues::{circular_and_fixed, circular_queue};
use manual_tracer::manual_tracer as tracer;

fn user0(time: u64, source: u32, a: u64) -> Event {
    Event::new(time, user::USER0, source, [a, 0])
}

#[test]
fn default_files_hold_exactly_what_was_kept() {
    let dir = scratch("files-default");
    let clock = ManualClock::new(100);
    let t = tracer(&dir, &clock);
    let (c, f) = circular_and_fixed(&t, 4, 3);
    assert_eq!((c, f), (QueueHandle(0), QueueHandle(1)));
    t.activate().unwrap();
    for i in 0..7u64 {
        clock.set(100 + i * 10);
        t.log_event_from(3, user::USER0, [i, 0]);
        t.log_event_from(3, user::USER1, [i, 1]);
    }
    let report = t.shutdown().unwrap();
    assert!(report.is_clean(), "{report:?}");

    let circular_file = dir.join("queue0-circular.qtr");
    let (header, events) = read_trace(&circular_file);
    assert_eq!(header.queue().map(|(h, t)| (h.0, t)), Some((0, "circular")));
    assert_eq!(
        events,
        vec![
            hoops(130, 3, 0),
            user0(130, 3, 3),
            user0(140, 3, 4),
            user0(150, 3, 5),
            user0(160, 3, 6),
        ]
    );
    assert_eq!(report.queues[0].status.files, [circular_file]);
    let cc = report.queues[0].counters;
    assert_eq!(
        (
            cc.accepted,
            cc.dropped,
            cc.overwritten,
            cc.delivered,
            cc.queued
        ),
        (7, 0, 3, 4, 0)
    );

    let fixed_file = dir.join("queue1-fixed.qtr");
    let (header, events) = read_trace(&fixed_file);
    assert_eq!(header.queue().map(|(h, t)| (h.0, t)), Some((1, "fixed")));
    let kept: Vec<Event> = (0..3)
        .map(|i| Event::new(100 + i * 10, user::USER1, 3, [i, 1]))
        .collect();
    assert_eq!(events[..3], kept[..]);
    assert_eq!(events[3], hoops(120, 4, 1));
    assert_eq!(events.len(), 4);
    let fc = report.queues[1].counters;
    assert_eq!(
        (
            fc.accepted,
            fc.dropped,
            fc.overwritten,
            fc.delivered,
            fc.queued
        ),
        (3, 4, 0, 3, 0)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn explicit_file_and_no_loss_means_no_hoops() {
    let dir = scratch("files-explicit");
    let clock = ManualClock::new(5);
    let t = tracer(&dir, &clock);
    let path = dir.join("sub/dir/mine.qtr");
    let q = t
        .create_queue::<Fixed>(
            FixedParams::default()
                .with_capacity(10)
                .with_file(path.clone())
                .with_ring(Default::default()),
        )
        .unwrap();
    assert_eq!(t.queue(q).unwrap().as_fixed().unwrap().file(), path);
    t.assign_class(user::CLASS, q).unwrap();
    t.log_event_from(1, user::USER2, [7, 8]);
    let report = t.shutdown().unwrap();
    let (_, events) = read_trace(&path);
    assert_eq!(events, [Event::new(5, user::USER2, 1, [7, 8])]);
    assert!(events.iter().all(|e| e.id != HOOPS));
    assert_eq!(report.queues[0].status.files, [path]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn empty_queues_save_empty_traces() {
    let dir = scratch("files-empty");
    let t = tracer(&dir, &ManualClock::new(0));
    t.create_queue::<Circular>(CircularParams::default())
        .unwrap();
    t.create_queue::<Fixed>(FixedParams::default()).unwrap();
    t.shutdown().unwrap();
    assert_eq!(read_trace(&dir.join("queue0-circular.qtr")).1, []);
    assert_eq!(read_trace(&dir.join("queue1-fixed.qtr")).1, []);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn snapshot_while_logging_leaves_the_queue_alone() {
    let dir = scratch("files-snapshot");
    let clock = ManualClock::new(0);
    let t = tracer(&dir, &clock);
    let q = circular_queue(&t, 2);
    t.assign_event(user::USER0, q).unwrap();
    t.activate().unwrap();
    for i in 0..3 {
        clock.set(i);
        t.log_event_from(0, user::USER0, [i, 0]);
    }
    let circular = t.queue(q).unwrap().as_circular().unwrap();
    let before = t.counters(q).unwrap();
    let snap = dir.join("snap1.qtr");
    assert_eq!(circular.snapshot(&snap).unwrap(), 3);
    assert_eq!(
        read_trace(&snap).1,
        [hoops(1, 1, 0), user0(1, 0, 1), user0(2, 0, 2)]
    );
    assert_eq!(read_trace(&snap).1, circular.snapshot_events());
    assert_eq!(t.counters(q).unwrap(), before);
    // Logging continues; the final save still has everything.
    clock.set(3);
    t.log_event_from(0, user::USER0, [3, 0]);
    let report = t.shutdown().unwrap();
    assert_eq!(
        read_trace(&dir.join("queue0-circular.qtr")).1,
        [hoops(2, 2, 0), user0(2, 0, 2), user0(3, 0, 3)]
    );
    assert_eq!(
        report.queues[0].status.files,
        [snap, dir.join("queue0-circular.qtr")]
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_capacities_are_typed_errors_naming_valid_sizes() {
    let out = tempfile::tempdir().unwrap(); // the queue's file at shutdown
    let t = Tracer::with_config(qtrace::Config::default().with_output_dir(out.path()));
    let e = t
        .create_queue::<Circular>(CircularParams::default().with_capacity(1000))
        .unwrap_err();
    assert!(matches!(
        e,
        ConfigError::InvalidParameter {
            queue_type: "circular",
            ..
        }
    ));
    assert_eq!(
        e.to_string(),
        "invalid parameter for the queue type `circular`: capacity 1000 is not a power of two between 1 and 2^32; use 512 or 1024"
    );
    let e = t
        .create_queue::<Circular>(CircularParams::default().with_capacity(0))
        .unwrap_err();
    assert!(e.to_string().ends_with("use 1"), "{e}");
    let e = t
        .create_queue::<Fixed>(
            FixedParams::default()
                .with_capacity(0)
                .with_ring(Default::default()),
        )
        .unwrap_err();
    assert!(matches!(
        e,
        ConfigError::InvalidParameter {
            queue_type: "fixed",
            ..
        }
    ));
    assert!(e.to_string().contains("use 1 to"), "{e}");
    // Any positive size is fine for a fixed queue.
    t.create_queue::<Fixed>(
        FixedParams::default()
            .with_capacity(1000)
            .with_ring(Default::default()),
    )
    .unwrap();
}

#[test]
fn unwritable_files_are_io_errors_in_the_report_and_status() {
    let dir = scratch("files-unwritable");
    // A regular file where a directory should be: nothing can be created below it.
    let blocker = dir.join("not-a-dir");
    std::fs::write(&blocker, b"x").unwrap();
    let bad = blocker.join("trace.qtr");
    let clock = ManualClock::new(0);
    let t = tracer(&dir, &clock);
    let c = t
        .create_queue::<Circular>(
            CircularParams::default()
                .with_capacity(4)
                .with_file(bad.clone()),
        )
        .unwrap();
    let f = t
        .create_queue::<Fixed>(
            FixedParams::default()
                .with_capacity(4)
                .with_file(bad.clone())
                .with_ring(Default::default()),
        )
        .unwrap();
    t.assign_event(user::USER0, c).unwrap();
    t.assign_event(user::USER1, f).unwrap();
    for i in 0..2 {
        t.log_event(user::USER0, [i, 0]);
        t.log_event(user::USER1, [i, 0]);
    }
    let circular = t.queue(c).unwrap().as_circular().unwrap();
    let e = circular.snapshot(&bad).unwrap_err();
    assert!(
        matches!(&e, ConfigError::Io(qtrace::IoError { path: Some(p), .. }) if *p == bad),
        "{e:?}"
    );
    assert_eq!(circular.status().io_errors, 1);

    let report = t.shutdown().unwrap();
    assert!(!report.is_clean());
    for (q, io_errors) in [(0, 2), (1, 1)] {
        let r = &report.queues[q];
        let msg = r.error.as_deref().expect("terminate failed");
        assert!(msg.contains(&bad.display().to_string()), "{msg}");
        assert_eq!(r.status.io_errors, io_errors);
        assert!(r
            .status
            .last_error
            .as_deref()
            .unwrap()
            .contains("not-a-dir"));
        assert!(r.status.files.is_empty());
        // Nothing was saved, so nothing counts as delivered: the events are
        // still queued.
        assert_eq!(r.counters.delivered, 0);
        assert_eq!(r.counters.queued, 2);
        assert!(r.counters.is_consistent());
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_second_terminate_keeps_the_saved_file() {
    // `Tracer::shutdown` terminates each queue once; a user calling
    // `Queue::terminate` again must not overwrite the file with the (empty)
    // rest, which would turn every saved event into a loss record.
    let dir = scratch("files-terminate-twice");
    let clock = ManualClock::new(10);
    let t = tracer(&dir, &clock);
    let (c, f) = circular_and_fixed(&t, 4, 2);
    t.activate().unwrap();
    for i in 0..3 {
        t.log_event(user::USER0, [i, 0]);
        t.log_event(user::USER1, [i, 0]);
    }
    let report = t.shutdown().unwrap();
    assert!(report.is_clean());
    for q in [c, f] {
        let queue = t.queue(q).unwrap();
        let file = report.queues[q.index()].status.files[0].clone();
        let first = std::fs::read(&file).unwrap();
        let counters = queue.counters();
        let ctx = qtrace::queue::QueueContext {
            handle: q,
            type_name: report.queues[q.index()].type_name,
            output_dir: dir.clone(),
            catalog: t.catalog(),
            clock: t.clock().clone(),
            names: Default::default(),
        };
        queue.terminate(&ctx).unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), first, "queue {}", q.index());
        assert_eq!(queue.counters(), counters);
        assert_eq!(queue.status().files, [file]);
    }
    std::fs::remove_dir_all(&dir).ok();
}
