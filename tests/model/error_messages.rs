//! Error messages name API that exists.
//!
//! - The `Display` text of every error whose message names a function, a type
//!   or a range is pinned here, byte for byte (`CtfOptions::packet_bytes` in
//!   `src/export/ctf.rs`, catalog fragments in `src/wire/datagram.rs`).
//! - Every string literal of the library (`src/`) and of the command
//!   (`cli/src/`) that reads as a message is checked against the real API
//!   and the command's `--help` by `cli/tests/read/error_messages.rs` (it runs
//!   the `qtrace` binary, so it lives with the command's crate).

use qtrace::classes::ClassSpec;
use qtrace::queue::{Queue, QueueContext, QueueCounters, Reservation};
use qtrace::queues::Dummy;
use qtrace::queues::{AnyQueue, QueueType};
use qtrace::ClassId;
use qtrace::{ConfigError, Event, EventId, QueueHandle, Tracer};

/// A queue type a test forgets to register.
struct Refuser;

struct RefuserQueue;

impl QueueType for Refuser {
    type Params = ();
    const NAME: &'static str = "refuser";
    fn create(&self, _: (), _: &QueueContext) -> Result<AnyQueue, ConfigError> {
        Ok(AnyQueue::custom(RefuserQueue))
    }
}

impl Queue for RefuserQueue {
    fn get(&self) -> Option<Reservation> {
        None
    }
    fn post(&self, _: Reservation, _: &Event) {}
    fn counters(&self) -> QueueCounters {
        QueueCounters::default()
    }
}

/// A generic queue type: the message keeps its generic arguments.
struct Wrapped<T>(T);

impl<T: Send + Sync + 'static> QueueType for Wrapped<T> {
    type Params = ();
    const NAME: &'static str = "wrapped";
    fn create(&self, _: (), _: &QueueContext) -> Result<AnyQueue, ConfigError> {
        Ok(AnyQueue::custom(RefuserQueue))
    }
}

#[test]
fn unregistered_type_names_the_real_call() {
    let t = Tracer::new();
    let e = t.create_queue::<Refuser>(()).unwrap_err();
    // The full Rust path: this file's module in its test binary, then the type.
    assert!(matches!(
        e,
        ConfigError::UnknownQueueType {
            name: "refuser",
            rust_type,
        } if rust_type == concat!(module_path!(), "::Refuser")
    ));
    assert_eq!(
        e.to_string(),
        "queue type `refuser` (Rust type `Refuser`) is not registered: in phase 1, before creating \
         queues of it, register a value of that type, as in tracer.register_queue_type(Refuser)"
    );
    // What the message says to do works.
    t.register_queue_type(Refuser).unwrap();
    assert_eq!(t.create_queue::<Refuser>(()).unwrap(), QueueHandle(0));

    let e = t.create_queue::<Wrapped<u8>>(()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "queue type `wrapped` (Rust type `Wrapped<u8>`) is not registered: in phase 1, before \
         creating queues of it, register a value of that type, as in \
         tracer.register_queue_type(Wrapped<u8>)"
    );
}

#[test]
fn second_install_names_global_get() {
    // Built directly: installing a process-wide tracer here would leak into
    // the other tests of this binary (tests/core_global.rs installs one).
    assert_eq!(
        ConfigError::GlobalAlreadyInstalled.to_string(),
        "the process-wide tracer is already installed: install once at start-up, then reach it \
         with qtrace::global::get() (or keep the reference install returned)"
    );
}

#[test]
fn bad_handles_in_one_range_notation() {
    let t = Tracer::new();
    let e = t.assign_class(ClassId(1), QueueHandle(0)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "queue handle 0 does not exist: no queue has been created yet; create one with \
         Tracer::create_queue first"
    );
    t.create_queue::<Dummy>(()).unwrap();
    let e = t.counters(QueueHandle(1)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "queue handle 1 does not exist: the only queue is 0 (the value Tracer::create_queue \
         returned)"
    );
    t.create_queue::<Dummy>(()).unwrap();
    t.create_queue::<Dummy>(()).unwrap();
    let e = t.status(QueueHandle(7)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "queue handle 7 does not exist: valid handles are 0 to 2 (the values \
         Tracer::create_queue returned)"
    );
}

#[test]
fn events_and_classes_out_of_range_in_one_range_notation() {
    let t = Tracer::new();
    // The built-in catalog: events 0x00 to 0x16, classes 0 to 4.
    let e = t.trace_event(EventId(0x17)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "event 0x0017 is not defined: this tracer knows events 0x0000 to 0x0016; define new \
         events with Tracer::define_class in phase 1"
    );
    let e = t.trace_class(ClassId(5)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "class 5 is not defined: this tracer knows classes 0 to 4; define new classes with \
         Tracer::define_class in phase 1"
    );
    // A user class moves both ends.
    t.define_class(ClassSpec::new("net", "network").event("rx", "a packet", &[]))
        .unwrap();
    let e = t.notrace_event(EventId(0x18)).unwrap_err();
    assert!(e.to_string().contains("events 0x0000 to 0x0017;"), "{e}");
    let e = t.notrace_class(ClassId(6)).unwrap_err();
    assert!(e.to_string().contains("classes 0 to 5;"), "{e}");
}

#[test]
fn second_registration_and_empty_class_name_real_calls() {
    let t = Tracer::new();
    let e = t.register_queue_type(Dummy).unwrap_err();
    assert_eq!(
        e.to_string(),
        "queue type `dummy` is already registered: register each type once (built-in types \
         are registered by Tracer::new)"
    );
    let e = t
        .define_class(ClassSpec::new("empty", "no events"))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "class \"empty\" has no events: add at least one with ClassSpec::event"
    );
}

#[test]
fn after_phase2_names_activate() {
    let t = Tracer::new();
    t.activate().unwrap();
    let e = t.create_queue::<Dummy>(()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "cannot create a queue after phase 2: do it in phase 1, before Tracer::activate"
    );
}
