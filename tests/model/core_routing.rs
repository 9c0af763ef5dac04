//! Routing, masks, suspend/resume and counters of the core tracer.

use crate::common;

use common::{ids, log, Recorder};
use qtrace::classes::{semaphore, system, user, ClassSpec};
use qtrace::clock::{Clock, ManualClock};
use qtrace::queues::Dummy;
use qtrace::ClassId;
use qtrace::{Config, EventId, Phase, QueueHandle, Tracer};

fn tracer() -> (Tracer, ManualClock) {
    let time = ManualClock::new(1_000);
    let t = Tracer::with_config(Config::default().with_clock(Clock::manual(&time)));
    t.register_queue_type(Recorder).unwrap();
    (t, time)
}

#[test]
fn handles_are_issued_in_creation_order() {
    let (t, _) = tracer();
    let handles: Vec<_> = (0..5)
        .map(|_| t.create_queue::<Recorder>(log()).unwrap())
        .collect();
    assert_eq!(handles, (0..5).map(QueueHandle).collect::<Vec<_>>());
    assert_eq!(t.queue_count(), 5);
}

#[test]
fn event_and_class_routing_with_later_assignments_overriding() {
    let (t, _) = tracer();
    let (l0, l1) = (log(), log());
    let q0 = t.create_queue::<Recorder>(l0.clone()).unwrap();
    let q1 = t.create_queue::<Recorder>(l1.clone()).unwrap();
    t.assign_class(system::CLASS, q0).unwrap();
    // Event-level assignment after the class: overrides for that event only.
    t.assign_event(system::SLEEP, q1).unwrap();
    t.assign_event(semaphore::SIGNAL, q1).unwrap();
    t.activate().unwrap();

    t.log_event(system::CREATE, [1, 0]);
    t.log_event(system::SLEEP, [2, 0]);
    t.log_event(semaphore::SIGNAL, [3, 4]);
    t.log_event(semaphore::WAIT, [3, 4]); // not assigned: nowhere
    t.log_event(user::USER0, [9, 9]); // not assigned: nowhere
    assert_eq!(ids(&l0), [system::CREATE.0]);
    assert_eq!(ids(&l1), [system::SLEEP.0, semaphore::SIGNAL.0]);

    // Class-level assignment after the event: overrides the event too.
    t.assign_class(system::CLASS, q1).unwrap();
    t.log_event(system::SLEEP, [5, 0]);
    t.log_event(system::CREATE, [6, 0]);
    assert_eq!(ids(&l0), [system::CREATE.0]);
    assert_eq!(
        ids(&l1),
        [
            system::SLEEP.0,
            semaphore::SIGNAL.0,
            system::SLEEP.0,
            system::CREATE.0
        ]
    );
    assert_eq!(t.route_of(system::CREATE).unwrap(), Some(q1));
    assert_eq!(t.route_of(user::USER0).unwrap(), None);
}

#[test]
fn recorded_events_carry_time_source_and_args() {
    let (t, time) = tracer();
    let l = log();
    let q = t.create_queue::<Recorder>(l.clone()).unwrap();
    t.assign_class(user::CLASS, q).unwrap();
    t.activate().unwrap();
    time.set(42);
    t.log_event_from(7, user::USER3, [u64::MAX, 5]);
    let events = l.lock().clone();
    assert_eq!(events.len(), 1);
    assert_eq!(
        events[0],
        qtrace::Event::new(42, user::USER3, 7, [u64::MAX, 5])
    );
}

#[test]
fn event_and_class_masks() {
    let (t, _) = tracer();
    let l = log();
    let q = t.create_queue::<Recorder>(l.clone()).unwrap();
    t.assign_class(system::CLASS, q).unwrap();
    t.assign_class(semaphore::CLASS, q).unwrap();
    t.activate().unwrap();

    t.notrace_event(system::SCHEDULE).unwrap();
    t.log_event(system::SCHEDULE, [1, 0]);
    t.log_event(system::ACTIVATE, [1, 0]);
    assert_eq!(ids(&l), [system::ACTIVATE.0]);
    assert!(!t.is_enabled(system::SCHEDULE));

    t.notrace_class(system::CLASS).unwrap();
    t.log_event(system::ACTIVATE, [1, 0]);
    t.log_event(semaphore::WAIT, [1, 2]);
    assert_eq!(ids(&l), [system::ACTIVATE.0, semaphore::WAIT.0]);

    // Re-enabling the class keeps the individually disabled event off.
    t.trace_class(system::CLASS).unwrap();
    t.log_event(system::SCHEDULE, [1, 0]);
    t.log_event(system::ACTIVATE, [1, 0]);
    assert_eq!(
        ids(&l),
        [system::ACTIVATE.0, semaphore::WAIT.0, system::ACTIVATE.0]
    );

    // Enable after disable.
    t.trace_event(system::SCHEDULE).unwrap();
    t.log_event(system::SCHEDULE, [1, 0]);
    assert_eq!(
        ids(&l),
        [
            system::ACTIVATE.0,
            semaphore::WAIT.0,
            system::ACTIVATE.0,
            system::SCHEDULE.0
        ]
    );
    assert!(t.is_enabled(system::SCHEDULE));
}

#[test]
fn suspend_and_resume() {
    let (t, _) = tracer();
    let l = log();
    let q = t.create_queue::<Recorder>(l.clone()).unwrap();
    t.assign_class(user::CLASS, q).unwrap();
    t.activate().unwrap();
    t.log_event(user::USER0, [1, 0]);
    t.suspend().unwrap();
    t.suspend().unwrap(); // harmless
    assert!(t.is_suspended());
    t.log_event(user::USER0, [2, 0]);
    // Configuration still works while suspended and takes effect on resume.
    t.notrace_event(user::USER1).unwrap();
    t.resume().unwrap();
    t.log_event(user::USER0, [3, 0]);
    t.log_event(user::USER1, [4, 0]);
    let args: Vec<u64> = l.lock().iter().map(|e| e.args[0]).collect();
    assert_eq!(args, [1, 3]);
}

#[test]
fn events_logged_between_phase1_and_phase2_are_recorded() {
    let (t, _) = tracer();
    let l = log();
    let q = t.create_queue::<Recorder>(l.clone()).unwrap();
    t.log_event(user::USER0, [1, 0]); // not yet assigned
    t.assign_class(user::CLASS, q).unwrap();
    assert_eq!(t.phase(), Phase::Configuring);
    t.log_event(user::USER0, [2, 0]);
    t.activate().unwrap();
    assert_eq!(t.phase(), Phase::Active);
    t.log_event(user::USER0, [3, 0]);
    let args: Vec<u64> = l.lock().iter().map(|e| e.args[0]).collect();
    assert_eq!(args, [2, 3]);
}

#[test]
fn counters_and_shutdown_report() {
    let (t, _) = tracer();
    let q0 = t.create_queue::<Dummy>(()).unwrap();
    let q1 = t.create_queue::<Recorder>(log()).unwrap();
    t.assign_class(system::CLASS, q0).unwrap();
    t.assign_class(user::CLASS, q1).unwrap();
    t.activate().unwrap();
    for i in 0..10 {
        t.log_event(system::SCHEDULE, [i, 0]);
    }
    for i in 0..3 {
        t.log_event(user::USER7, [i, 0]);
    }
    let c0 = t.counters(q0).unwrap();
    assert_eq!(
        (
            c0.accepted,
            c0.dropped,
            c0.overwritten,
            c0.delivered,
            c0.queued
        ),
        (10, 0, 0, 10, 0)
    );
    assert!(c0.is_consistent());
    let report = t.shutdown().unwrap();
    assert_eq!(report.queues.len(), 2);
    assert_eq!(report.queues[0].type_name, "dummy");
    assert_eq!(report.queues[0].counters.accepted, 10);
    assert_eq!(report.queues[1].type_name, "recorder");
    assert_eq!(report.queues[1].counters.accepted, 3);
    assert_eq!(report.total_lost(), 0);
    assert!(report.is_clean());
    // After shutdown logging is a no-op.
    t.log_event(system::SCHEDULE, [0, 0]);
    assert_eq!(t.counters(q0).unwrap().accepted, 10);
    assert_eq!(t.phase(), Phase::ShutDown);
}

#[test]
fn user_defined_classes_route_and_mask_like_builtins() {
    let (t, _) = tracer();
    let l = log();
    let net = t
        .define_class(
            ClassSpec::new("net", "network stack")
                .event("rx", "packet in", &["len"])
                .event("tx", "packet out", &["len"]),
        )
        .unwrap();
    let disk = t
        .define_class(ClassSpec::new("disk", "block layer").event("seek", "head seek", &["sector"]))
        .unwrap();
    assert_eq!(net.id, ClassId::FIRST_USER_DEFINED);
    assert_eq!(net.event("rx"), Some(EventId(0x17)));
    assert_eq!(disk.event("seek"), Some(EventId(0x19)));
    let q = t.create_queue::<Recorder>(l.clone()).unwrap();
    t.assign_class(net.id, q).unwrap();
    t.assign_class(disk.id, q).unwrap();
    t.activate().unwrap();
    t.log_event(EventId(0x17), [1, 0]);
    t.notrace_class(net.id).unwrap();
    t.log_event(EventId(0x18), [2, 0]);
    t.log_event(EventId(0x19), [3, 0]);
    assert_eq!(ids(&l), [0x17, 0x19]);
    let catalog = t.catalog();
    assert_eq!(catalog.event_name(EventId(0x19)), Some("seek"));
    assert_eq!(catalog.class(disk.id).unwrap().description, "block layer");
}

#[test]
fn unknown_ids_are_a_cheap_no_op() {
    let (t, _) = tracer();
    let q = t.create_queue::<Dummy>(()).unwrap();
    t.activate().unwrap();
    for raw in [0x17u16, 0x100, 0xffff] {
        t.log_event(EventId(raw), [0, 0]);
        assert!(!t.is_enabled(EventId(raw)));
    }
    assert_eq!(t.counters(q).unwrap().attempts(), 0);
}

#[test]
fn many_threads_log_concurrently() {
    let (t, _) = tracer();
    let q = t.create_queue::<Dummy>(()).unwrap();
    t.assign_class(user::CLASS, q).unwrap();
    t.activate().unwrap();
    let n = if cfg!(miri) { 100 } else { 100_000 };
    std::thread::scope(|s| {
        for k in 0..4u64 {
            let t = &t;
            s.spawn(move || {
                for i in 0..n {
                    t.log_event(user::user((k % 8) as u16), [i, k]);
                }
            });
        }
    });
    assert_eq!(t.counters(q).unwrap().accepted, 4 * n);
}
