//! Every misuse of the configuration API is a typed error whose message says
//! what to do.

use crate::common;

use common::{log, Recorder};
use qtrace::classes::{system, ClassSpec};
use qtrace::queue::{Queue, QueueContext, QueueCounters, Reservation};
use qtrace::queues::Dummy;
use qtrace::queues::{AnyQueue, QueueType};
use qtrace::ClassId;
use qtrace::{ConfigError, Event, EventId, QueueHandle, Tracer};

fn message(e: &ConfigError) -> String {
    let s = e.to_string();
    assert!(!s.is_empty());
    s
}

#[test]
fn unknown_queue_type() {
    let t = Tracer::new();
    let e = t.create_queue::<Recorder>(log()).unwrap_err();
    assert!(matches!(
        e,
        ConfigError::UnknownQueueType {
            name: "recorder",
            ..
        }
    ));
    assert!(message(&e).contains("register_queue_type"), "{e}");
}

#[test]
fn queue_type_registered_twice() {
    let t = Tracer::new();
    t.register_queue_type(Recorder).unwrap();
    let e = t.register_queue_type(Recorder).unwrap_err();
    assert!(matches!(
        e,
        ConfigError::QueueTypeAlreadyRegistered { name: "recorder" }
    ));
    let e = t.register_queue_type(Dummy).unwrap_err();
    assert!(matches!(
        e,
        ConfigError::QueueTypeAlreadyRegistered { name: "dummy" }
    ));
}

#[test]
fn bad_queue_handle() {
    let t = Tracer::new();
    let e = t.assign_event(system::CREATE, QueueHandle(0)).unwrap_err();
    assert!(matches!(e, ConfigError::BadQueueHandle { queues: 0, .. }));
    assert!(message(&e).contains("create_queue"), "{e}");
    t.create_queue::<Dummy>(()).unwrap();
    let e = t.assign_class(system::CLASS, QueueHandle(3)).unwrap_err();
    assert!(matches!(
        e,
        ConfigError::BadQueueHandle {
            handle: QueueHandle(3),
            queues: 1
        }
    ));
    assert!(message(&e).contains("the only queue is 0"), "{e}");
    assert!(matches!(
        t.counters(QueueHandle(1)),
        Err(ConfigError::BadQueueHandle { .. })
    ));
}

#[test]
fn event_and_class_out_of_range() {
    let t = Tracer::new();
    let q = t.create_queue::<Dummy>(()).unwrap();
    for result in [
        t.assign_event(EventId(0x17), q),
        t.trace_event(EventId(0x17)),
        t.notrace_event(EventId(0xffff)),
    ] {
        let e = result.unwrap_err();
        assert!(
            matches!(e, ConfigError::EventOutOfRange { defined: 0x17, .. }),
            "{e:?}"
        );
        assert!(message(&e).contains("define_class"), "{e}");
    }
    for result in [
        t.assign_class(ClassId(5), q),
        t.trace_class(ClassId(99)),
        t.notrace_class(ClassId(5)),
    ] {
        assert!(matches!(
            result.unwrap_err(),
            ConfigError::ClassOutOfRange { defined: 5, .. }
        ));
    }
}

#[test]
fn second_phase2() {
    let t = Tracer::new();
    t.activate().unwrap();
    let e = t.activate().unwrap_err();
    assert!(matches!(e, ConfigError::Phase2Twice));
    assert!(message(&e).contains("once"), "{e}");
}

#[test]
fn phase1_only_operations_after_phase2() {
    let t = Tracer::new();
    t.activate().unwrap();
    let e = t.create_queue::<Dummy>(()).unwrap_err();
    assert!(matches!(
        e,
        ConfigError::AfterPhase2 {
            operation: "create a queue"
        }
    ));
    assert!(message(&e).contains("phase 1"), "{e}");
    let e = t
        .define_class(ClassSpec::new("late", "too late").event("x", "x", &[]))
        .unwrap_err();
    assert!(matches!(e, ConfigError::AfterPhase2 { .. }));
    let e = t.register_queue_type(Recorder).unwrap_err();
    assert!(matches!(e, ConfigError::AfterPhase2 { .. }));
}

#[test]
fn everything_after_shutdown() {
    let t = Tracer::new();
    let q = t.create_queue::<Dummy>(()).unwrap();
    t.activate().unwrap();
    t.shutdown().unwrap();
    let results = [
        t.assign_event(system::CREATE, q),
        t.assign_class(system::CLASS, q),
        t.trace_event(system::CREATE),
        t.notrace_event(system::CREATE),
        t.trace_class(system::CLASS),
        t.notrace_class(system::CLASS),
        t.suspend(),
        t.resume(),
        t.activate(),
        t.shutdown().map(|_| ()),
        t.create_queue::<Dummy>(()).map(|_| ()),
    ];
    for r in results {
        let e = r.unwrap_err();
        assert!(matches!(e, ConfigError::AfterShutdown { .. }), "{e:?}");
        assert!(message(&e).contains("shut down"), "{e}");
    }
}

/// A queue type whose hooks fail in the ways a user's might.
struct Faulty {
    activate_panics: bool,
}

struct FaultyQueue {
    activate_panics: bool,
}

impl QueueType for Faulty {
    type Params = ();
    const NAME: &'static str = "faulty";
    fn create(&self, _: (), _: &QueueContext) -> Result<AnyQueue, ConfigError> {
        Ok(AnyQueue::custom(FaultyQueue {
            activate_panics: self.activate_panics,
        }))
    }
}

impl Queue for FaultyQueue {
    fn get(&self) -> Option<Reservation> {
        None
    }
    fn post(&self, _: Reservation, _: &Event) {}
    fn activate(&self, _: &QueueContext) -> Result<(), ConfigError> {
        if self.activate_panics {
            panic!("device not ready");
        }
        Ok(())
    }
    fn terminate(&self, _: &QueueContext) -> Result<(), ConfigError> {
        Err(ConfigError::InvalidParameter {
            queue_type: "faulty",
            reason: "cannot save".into(),
        })
    }
    fn counters(&self) -> QueueCounters {
        QueueCounters::default()
    }
}

#[test]
fn panicking_and_failing_hooks_are_reported_not_propagated() {
    let t = Tracer::new();
    t.register_queue_type(Faulty {
        activate_panics: true,
    })
    .unwrap();
    let q0 = t.create_queue::<Dummy>(()).unwrap();
    let q1 = t.create_queue::<Faulty>(()).unwrap();
    let e = t.activate().unwrap_err();
    match &e {
        ConfigError::Hook {
            queue,
            hook,
            message,
        } => {
            assert_eq!(*queue, q1);
            assert_eq!(*hook, "activate");
            assert!(message.contains("device not ready"), "{message}");
        }
        other => panic!("expected a hook error, got {other:?}"),
    }
    // The tracer is still usable, and shutdown reports each queue.
    let report = t.shutdown().unwrap();
    assert_eq!(report.queues[q0.index()].error, None);
    assert!(report.queues[q1.index()]
        .error
        .as_deref()
        .unwrap()
        .contains("cannot save"));
    assert!(!report.is_clean());
}

#[test]
fn errors_are_std_errors_holding_their_cause_once() {
    let e = qtrace::Error::io(
        "create",
        "/nonexistent/x.qtr",
        std::io::Error::new(std::io::ErrorKind::NotFound, "no such directory"),
    );
    let dyn_e: &dyn std::error::Error = &e;
    // The OS error's text ends the message: no source() repeats it.
    assert!(dyn_e.source().is_none());
    assert_eq!(
        e.to_string(),
        "cannot create /nonexistent/x.qtr: no such directory"
    );
}
