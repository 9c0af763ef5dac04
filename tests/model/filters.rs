//! Dynamic filters (#15 item 2): each filter kind, exact event sequences in
//! the target queue, counters, removal, re-routing, a panicking handler.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use qtrace::classes::user;
use qtrace::filters::{Filter, FilterQueue};
use qtrace::queue::QueueCounters;
use qtrace::{ConfigError, QueueHandle, Tracer};

use crate::common::memory_tracer;
use memory_tracer::{memory_fixed, tracer};

fn fixed(tracer: &Tracer) -> QueueHandle {
    memory_fixed(tracer, 64)
}

/// (id, source, arg0) of every event in a fixed queue.
fn events(tracer: &Tracer, q: QueueHandle) -> Vec<(u16, u32, u64)> {
    tracer
        .queue(q)
        .unwrap()
        .as_fixed()
        .unwrap()
        .snapshot_events()
        .iter()
        .map(|e| (e.id.0, e.source, e.args[0]))
        .collect()
}

fn filter_queue(tracer: &Tracer, h: QueueHandle) -> &FilterQueue {
    tracer.queue(h).unwrap().as_custom::<FilterQueue>().unwrap()
}

#[test]
fn source_filter_keeps_one_source() {
    let (tracer, _dir) = tracer();
    let q = fixed(&tracer);
    tracer.assign_event(user::USER0, q).unwrap();
    let f = tracer
        .filter_event(user::USER0, Filter::sources(2..=3))
        .unwrap();
    assert_eq!(f, QueueHandle(1));
    for (source, a) in [(1, 10), (2, 11), (3, 12), (4, 13), (2, 14)] {
        tracer.log_event_from(source, user::USER0, [a, 0]);
    }
    let id = user::USER0.0;
    assert_eq!(events(&tracer, q), [(id, 2, 11), (id, 3, 12), (id, 2, 14)]);
    let fq = filter_queue(&tracer, f);
    assert_eq!((fq.passed(), fq.rejected(), fq.panicked()), (3, 2, 0));
    assert_eq!(tracer.counters(f).unwrap(), QueueCounters::all_delivered(5));
    assert_eq!(tracer.counters(q).unwrap().accepted, 3);
    assert_eq!(tracer.route_of(user::USER0).unwrap(), Some(q));
    assert_eq!(tracer.filter_of(user::USER0).unwrap(), Some(f));
    let report = tracer.shutdown().unwrap();
    assert_eq!(report.total_lost(), 0);
    assert!(report.is_clean());
    assert_eq!(report.queues[1].type_name, "filter");
}

#[test]
fn arg_filter_and_unfiltered_events_share_the_queue() {
    let (tracer, _dir) = tracer();
    let q = fixed(&tracer);
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer
        .filter_event(user::USER1, Filter::arg(1, 100..=200))
        .unwrap();
    tracer.log_event_from(0, user::USER1, [1, 99]);
    tracer.log_event_from(0, user::USER0, [2, 0]);
    tracer.log_event_from(0, user::USER1, [3, 100]);
    tracer.log_event_from(0, user::USER1, [4, 201]);
    tracer.log_event_from(0, user::USER1, [5, 200]);
    let (u0, u1) = (user::USER0.0, user::USER1.0);
    assert_eq!(events(&tracer, q), [(u0, 0, 2), (u1, 0, 3), (u1, 0, 5)]);
}

#[test]
fn handler_filter_sees_each_event_and_can_be_removed() {
    let (tracer, _dir) = tracer();
    let q = fixed(&tracer);
    tracer.assign_event(user::USER0, q).unwrap();
    let seen = Arc::new(AtomicU64::new(0));
    let s = Arc::clone(&seen);
    let f = tracer
        .filter_event(
            user::USER0,
            Filter::handler(move |e| {
                s.fetch_add(1, Ordering::Relaxed);
                e.args[0] % 2 == 0
            }),
        )
        .unwrap();
    for a in 0..6 {
        tracer.log_event_from(7, user::USER0, [a, 0]);
    }
    tracer.unfilter_event(user::USER0).unwrap();
    assert_eq!(tracer.filter_of(user::USER0).unwrap(), None);
    tracer.log_event_from(7, user::USER0, [9, 0]);
    let id = user::USER0.0;
    assert_eq!(
        events(&tracer, q),
        [(id, 7, 0), (id, 7, 2), (id, 7, 4), (id, 7, 9)]
    );
    assert_eq!(seen.load(Ordering::Relaxed), 6);
    assert_eq!(filter_queue(&tracer, f).rejected(), 3);
}

#[test]
fn reassigning_removes_the_filter() {
    let (tracer, _dir) = tracer();
    let q0 = fixed(&tracer);
    let q1 = fixed(&tracer);
    tracer.assign_event(user::USER0, q0).unwrap();
    tracer.filter_event(user::USER0, Filter::source(1)).unwrap();
    tracer.log_event_from(1, user::USER0, [1, 0]);
    tracer.log_event_from(2, user::USER0, [2, 0]);
    tracer.assign_event(user::USER0, q1).unwrap();
    assert_eq!(tracer.filter_of(user::USER0).unwrap(), None);
    tracer.log_event_from(2, user::USER0, [3, 0]);
    // Filter again: forwards to the new queue.
    tracer.filter_event(user::USER0, Filter::source(1)).unwrap();
    tracer.log_event_from(2, user::USER0, [4, 0]);
    tracer.log_event_from(1, user::USER0, [5, 0]);
    let id = user::USER0.0;
    assert_eq!(events(&tracer, q0), [(id, 1, 1)]);
    assert_eq!(events(&tracer, q1), [(id, 2, 3), (id, 1, 5)]);
}

#[test]
fn class_filter_one_filter_queue_per_target() {
    let (tracer, _dir) = tracer();
    let q0 = fixed(&tracer);
    let q1 = fixed(&tracer);
    tracer.assign_class(user::CLASS, q0).unwrap();
    tracer.assign_event(user::USER1, q1).unwrap();
    let hs = tracer
        .filter_class(user::CLASS, Filter::arg(0, 5..=5))
        .unwrap();
    assert_eq!(hs, [QueueHandle(2), QueueHandle(3)]);
    for a in [4, 5, 6] {
        tracer.log_event_from(0, user::USER0, [a, 0]);
        tracer.log_event_from(0, user::USER1, [a, 0]);
    }
    assert_eq!(events(&tracer, q0), [(user::USER0.0, 0, 5)]);
    assert_eq!(events(&tracer, q1), [(user::USER1.0, 0, 5)]);
    tracer.unfilter_class(user::CLASS).unwrap();
    tracer.log_event_from(0, user::USER0, [7, 0]);
    assert_eq!(
        events(&tracer, q0),
        [(user::USER0.0, 0, 5), (user::USER0.0, 0, 7)]
    );
}

#[test]
fn a_panicking_handler_rejects_the_event_and_is_reported() {
    let (tracer, _dir) = tracer();
    let q = fixed(&tracer);
    tracer.assign_event(user::USER0, q).unwrap();
    let f = tracer
        .filter_event(
            user::USER0,
            Filter::handler(|e| {
                assert!(e.args[0] != 13, "unlucky");
                true
            }),
        )
        .unwrap();
    for a in [12, 13, 14] {
        tracer.log_event_from(0, user::USER0, [a, 0]);
    }
    let id = user::USER0.0;
    assert_eq!(events(&tracer, q), [(id, 0, 12), (id, 0, 14)]);
    let fq = filter_queue(&tracer, f);
    assert_eq!((fq.passed(), fq.rejected(), fq.panicked()), (2, 1, 1));
    let report = tracer.shutdown().unwrap();
    assert!(!report.is_clean());
    let status = &report.queues[f.index()].status;
    assert_eq!(
        status.last_error.as_deref(),
        Some("the filter's handler panicked on 1 events (rejected), last: unlucky")
    );
}

#[test]
fn strings_are_filtered_as_a_whole_run() {
    let (tracer, _dir) = tracer();
    let q = fixed(&tracer);
    tracer.assign_event(user::USER0, q).unwrap();
    let f = tracer
        .filter_event(user::USER0, Filter::arg(0, 1..=1))
        .unwrap();
    tracer.log_event_str(user::USER0, 0, "dropped by the filter");
    tracer.log_event_str(user::USER0, 1, "kept");
    // "kept": one begin record and one record of bytes.
    assert_eq!(events(&tracer, q).len(), 2);
    let fq = filter_queue(&tracer, f);
    // "dropped by the filter" is 21 bytes: 1 + 2 records.
    assert_eq!((fq.passed(), fq.rejected()), (2, 3));
}

#[test]
fn errors_name_what_to_do() {
    let (tracer, _dir) = tracer();
    let q = fixed(&tracer);
    let e = tracer
        .filter_event(user::USER0, Filter::source(0))
        .unwrap_err();
    assert!(matches!(e, ConfigError::FilterWithoutRoute { .. }));
    assert!(e.to_string().contains("Tracer::assign_event"), "{e}");
    assert!(matches!(
        tracer.filter_class(user::CLASS, Filter::source(0)),
        Err(ConfigError::FilterWithoutRoute { .. })
    ));
    tracer.assign_event(user::USER0, q).unwrap();
    let e = tracer
        .filter_event(user::USER0, Filter::arg(2, 0..=1))
        .unwrap_err();
    assert!(e.to_string().contains("use index 0 or 1"), "{e}");
    assert_eq!(tracer.queue_count(), 1);
    tracer.shutdown().unwrap();
    assert!(matches!(
        tracer.filter_event(user::USER0, Filter::source(0)),
        Err(ConfigError::AfterShutdown { .. })
    ));
}

#[test]
fn filters_work_after_phase_2() {
    let (tracer, _dir) = tracer();
    let q = tracer.create_queue::<qtrace::queues::Dummy>(()).unwrap();
    tracer.assign_event(user::USER0, q).unwrap();
    tracer.activate().unwrap();
    let f = tracer.filter_event(user::USER0, Filter::source(3)).unwrap();
    tracer.log_event_from(3, user::USER0, [0, 0]);
    tracer.log_event_from(4, user::USER0, [0, 0]);
    assert_eq!(tracer.counters(q).unwrap().accepted, 1);
    assert_eq!(filter_queue(&tracer, f).rejected(), 1);
    assert!(tracer.shutdown().unwrap().is_clean());
}

#[test]
fn names_reach_the_target_once_not_through_the_filter() {
    let (tracer, _dir) = tracer();
    let q = fixed(&tracer);
    tracer.assign_event(user::USER0, q).unwrap();
    let f = tracer
        .filter_event(user::USER0, Filter::source(99))
        .unwrap();
    tracer.name_source(5, "worker").unwrap();
    // One name run ("worker": a begin record and one of bytes), not two.
    assert_eq!(events(&tracer, q).len(), 2);
    assert_eq!(tracer.counters(f).unwrap(), QueueCounters::default());
}

#[test]
fn threads_through_one_filter_exact_counts() {
    let (tracer, _dir) = tracer();
    let q = memory_fixed(&tracer, 4096);
    tracer.assign_event(user::USER0, q).unwrap();
    let f = tracer
        .filter_event(user::USER0, Filter::arg(0, 0..=499))
        .unwrap();
    std::thread::scope(|s| {
        for t in 0..4u32 {
            let tracer = &tracer;
            s.spawn(move || {
                for a in 0..1000 {
                    tracer.log_event_from(t, user::USER0, [a, 0]);
                }
            });
        }
    });
    let mut kept = events(&tracer, q);
    kept.sort_unstable();
    let mut want: Vec<_> = (0..4u32)
        .flat_map(|t| (0..500).map(move |a| (user::USER0.0, t, a)))
        .collect();
    want.sort_unstable();
    assert_eq!(kept, want);
    let fq = filter_queue(&tracer, f);
    assert_eq!((fq.passed(), fq.rejected()), (2000, 2000));
    assert_eq!(tracer.counters(q).unwrap().accepted, 2000);
}
