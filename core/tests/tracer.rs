//! The firmware tracer's routing: event and class routes, per-event and
//! per-class masks (an event is logged only when both are on), typed errors.

use qtrace_core::classes::{lowlevel, semaphore, system, ClassId};
use qtrace_core::ring::{CircularRing, FixedRing, Ring};
use qtrace_core::{Event, EventId, RouteError, StaticCatalog, Tracer};

fn zero() -> u64 {
    5
}

fn drain(ring: &dyn Ring) -> Vec<EventId> {
    let mut buf = [Event::ZERO; 64];
    let n = ring.take(&mut buf).events;
    buf[..n].iter().map(|e| e.id).collect()
}

#[test]
fn routes_and_masks() {
    static A: CircularRing<16> = CircularRing::new();
    static B: FixedRing<16> = FixedRing::new();
    static T: Tracer<2, 32> = Tracer::new(&StaticCatalog::BUILTIN, [&A, &B], zero);

    // Unrouted events go nowhere.
    T.log_event(system::SCHEDULE, 0, [1, 0]);
    assert_eq!(A.counters().attempts() + B.counters().attempts(), 0);

    T.assign_class(ClassId::SYSTEM, 0).unwrap();
    T.assign_event(system::SCHEDULE, 1).unwrap(); // one event elsewhere
    T.assign_class(ClassId::SEMAPHORE, 1).unwrap();
    T.log_event(system::ACTIVATE, 0, [1, 0]);
    T.log_event(system::SCHEDULE, 0, [1, 0]);
    T.log_event(semaphore::WAIT, 0, [1, 2]);
    assert_eq!(drain(&A), vec![system::ACTIVATE]);
    assert_eq!(drain(&B), vec![system::SCHEDULE, semaphore::WAIT]);

    // A class switched off masks its events; an event switched off stays
    // off when its class comes back.
    T.notrace_event(system::ACTIVATE).unwrap();
    T.notrace_class(ClassId::SYSTEM).unwrap();
    T.log_event(system::ACTIVATE, 0, [1, 0]);
    T.log_event(system::SCHEDULE, 0, [1, 0]);
    T.log_event(system::DELAY, 0, [1, 0]);
    assert_eq!(drain(&A), vec![]);
    assert_eq!(drain(&B), vec![]);
    T.trace_class(ClassId::SYSTEM).unwrap();
    T.log_event(system::ACTIVATE, 0, [1, 0]);
    T.log_event(system::DELAY, 0, [1, 0]);
    assert_eq!(drain(&A), vec![system::DELAY]);
    T.trace_event(system::ACTIVATE).unwrap();
    T.log_event(system::ACTIVATE, 0, [1, 0]);
    let mut buf = [Event::ZERO; 4];
    assert_eq!(A.take(&mut buf).events, 1);
    assert_eq!(buf[0], Event::new(5, system::ACTIVATE, 0, [1, 0]));

    // Ids past the catalog are ignored by log_event, refused by configuration.
    T.log_event(EventId(0x17), 0, [0, 0]);
    T.log_event(EventId(u16::MAX), 0, [0, 0]);
    assert_eq!(
        T.assign_event(EventId(0x17), 0),
        Err(RouteError::EventOutOfRange {
            id: EventId(0x17),
            events: 23
        })
    );
    assert_eq!(
        T.assign_class(ClassId(5), 0).unwrap_err().to_string(),
        "class 5 is out of range: the catalog has classes 0 to 4"
    );
    assert_eq!(
        T.assign_class(ClassId::LOWLEVEL, 2),
        Err(RouteError::NoSuchQueue {
            queue: 2,
            queues: 2
        })
    );
    assert_eq!(
        T.notrace_event(EventId(0x40)).unwrap_err().to_string(),
        "event 0x0040 is out of range: this tracer routes events 0x0000 to 0x0016 \
         (add the class to its StaticCatalog and raise the Tracer's E)"
    );
    T.log_event(lowlevel::INTERRUPT, 0, [0, 0]);
    assert_eq!(drain(&A), vec![]);
}
