//! Issue 17: a trace written by the no_std core's dump (static rings, the
//! firmware tracer, a static catalog with a class of its own) is a standard
//! trace file: `qtrace::reader` reads back the exact events, hoops records
//! and a complete close run, and names the firmware's own events.

use std::sync::atomic::{AtomicU64, Ordering};

use qtrace::classes::tracer::HOOPS;
use qtrace::classes::{lowlevel, semaphore, system};
use qtrace::reader::{Completeness, TraceReader};
use qtrace::wire::{CloseRecord, QueueTotals};
use qtrace::ClassId;
use qtrace::{Event, EventId};
use qtrace_core::classes::{BuiltinClass, BuiltinEvent};
use qtrace_core::encode::header::HeaderSpec;
use qtrace_core::ring::{CircularRing, FixedRing, Ring};
use qtrace_core::{StaticCatalog, Tracer, TRACER_SOURCE};

const TICK: EventId = EventId::FIRST_USER_DEFINED;
static CLASSES: [BuiltinClass; 1] = [BuiltinClass {
    id: ClassId::FIRST_USER_DEFINED,
    name: "board",
    description: "the board's own events",
    events: &[BuiltinEvent::new(TICK, "tick", "a timer tick", &["n"])],
}];
static CATALOG: StaticCatalog = StaticCatalog::new(&CLASSES);

/// One test per static tracer: each test has its own rings and clock.
macro_rules! clock {
    ($name:ident) => {
        fn $name() -> u64 {
            static NOW: AtomicU64 = AtomicU64::new(0);
            NOW.fetch_add(10, Ordering::Relaxed) + 10
        }
    };
}

fn read(bytes: &[u8]) -> (TraceReader<&[u8]>, Vec<Event>) {
    let mut r = TraceReader::new(bytes).unwrap();
    let events = r.by_ref().map(Result::unwrap).collect();
    (r, events)
}

/// The close run that ends a complete file (the test fails on any other end).
fn close_of(r: &TraceReader<&[u8]>) -> CloseRecord {
    match r.completeness().unwrap() {
        Completeness::Complete(close) => close,
        other => panic!("not complete: {other:?}"),
    }
}

/// Queue `queue` of `tracer` dumped with [`spec`] into a byte vector.
fn dump<const Q: usize>(tracer: &Tracer<'_, Q>, queue: u16) -> Vec<u8> {
    let mut file = Vec::new();
    tracer
        .dump(queue, &spec(), &mut |b: &[u8]| file.extend_from_slice(b))
        .unwrap();
    file
}

fn spec() -> HeaderSpec<'static> {
    HeaderSpec {
        ticks_per_second: 100_000_000,
        clock_kind: "test-ticks",
        host: "host-test",
        ..HeaderSpec::default()
    }
}

#[test]
fn circular_dump_reads_back_exactly_with_hoops_and_a_complete_close() {
    clock!(now);
    static RING: CircularRing<8> = CircularRing::new();
    static TRACER: Tracer<1> = Tracer::new(&CATALOG, [&RING], now);
    TRACER.assign_class(ClassId::SYSTEM, 0).unwrap();
    TRACER.assign_event(TICK, 0).unwrap();
    TRACER.assign_class(ClassId::LOWLEVEL, 0).unwrap();
    TRACER.notrace_class(ClassId::LOWLEVEL).unwrap();
    for i in 0..12u64 {
        TRACER.log_event(system::SCHEDULE, 1, [i, 0]); // times 10, 20, …, 120
        TRACER.log_event(lowlevel::INTERRUPT, 0, [15, 0]); // masked out: no clock read
    }
    TRACER.log_event(TICK, 2, [99, 0]); // time 130
    let mut file = Vec::new();
    let summary = TRACER
        .dump(0, &spec(), &mut |b: &[u8]| file.extend_from_slice(b))
        .unwrap();
    assert_eq!((summary.events, summary.hoops, summary.lost), (8, 1, 5));
    assert_eq!(summary.bytes, file.len() as u64);

    let (r, events) = read(&file);
    // 13 logged into 8 slots: the 5 oldest overwritten, stated by one hoops
    // record stamped with the oldest kept event's time, placed before it.
    let mut expected = vec![Event::new(60, HOOPS, TRACER_SOURCE, [5, 0])];
    expected.extend((5..12u64).map(|i| Event::new(10 * (i + 1), system::SCHEDULE, 1, [i, 0])));
    expected.push(Event::new(130, TICK, 2, [99, 0]));
    assert_eq!(events, expected);
    assert_eq!(r.event_name(TICK), Some("tick"));
    assert_eq!(r.event_class(TICK).unwrap().name, "board");
    let h = r.header();
    assert_eq!(h.queue().map(|(q, t)| (q.0, t)), Some((0, "circular")));
    assert_eq!(
        (h.ticks_per_second(), h.clock_kind(), h.host()),
        (100_000_000, "test-ticks", "host-test")
    );
    assert!(h.closes());
    let close = close_of(&r);
    assert_eq!(close.time, 140);
    assert_eq!(
        close.totals,
        QueueTotals {
            accepted: 13,
            dropped: 0,
            overwritten: 5,
            delivered: 8
        }
    );
    assert_eq!((close.records, close.lost), (9, 5));
    let c = RING.counters();
    assert_eq!((c.queued, c.attempts()), (0, 13));
    assert!(c.is_consistent());
}

#[test]
fn fixed_dump_states_its_drops_after_the_last_kept_event() {
    clock!(now);
    static RING: FixedRing<3> = FixedRing::new();
    static SPARE: CircularRing<2> = CircularRing::new();
    static TRACER: Tracer<2> = Tracer::new(&CATALOG, [&SPARE, &RING], now);
    TRACER.assign_class(ClassId::SEMAPHORE, 1).unwrap();
    for i in 0..5u64 {
        TRACER.log_event(semaphore::WAIT, 3, [i, 7]);
    }
    let file = dump(&TRACER, 1);
    let (r, events) = read(&file);
    let mut expected: Vec<Event> = (0..3u64)
        .map(|i| Event::new(10 * (i + 1), semaphore::WAIT, 3, [i, 7]))
        .collect();
    expected.push(Event::new(30, HOOPS, TRACER_SOURCE, [2, 1]));
    assert_eq!(events, expected);
    assert_eq!(
        r.header().queue().map(|(q, t)| (q.0, t)),
        Some((1, "fixed"))
    );
    let close = close_of(&r);
    assert_eq!(
        close.totals,
        QueueTotals {
            accepted: 3,
            dropped: 2,
            overwritten: 0,
            delivered: 3
        }
    );
    assert_eq!((close.records, close.lost), (4, 2));
    // The other queue saw nothing; a handle past the tracer's is refused.
    assert_eq!(TRACER.counters(0).unwrap().attempts(), 0);
    let err = TRACER.counters(2).unwrap_err();
    assert_eq!(
        err.to_string(),
        "no queue has handle 2: Tracer::new was given 2 queues (handles 0 to 1)"
    );
}

#[test]
fn a_slot_reserved_but_never_posted_is_stated_lost_not_silently_missing() {
    clock!(now);
    static RING: CircularRing<8> = CircularRing::new();
    static TRACER: Tracer<1> = Tracer::new(&CATALOG, [&RING], now);
    TRACER.assign_class(ClassId::SYSTEM, 0).unwrap();
    TRACER.log_event(system::ACTIVATE, 1, [1, 0]); // time 10
                                                   // A logger interrupted between get and post (by the dump, say).
    let stuck = RING.get().unwrap();
    TRACER.log_event(system::SCHEDULE, 1, [1, 0]); // time 20
    let file = dump(&TRACER, 0);
    // Its late post changes nothing now.
    RING.post(stuck, &Event::new(15, system::DELAY, 1, [1, 0]));
    let (r, events) = read(&file);
    assert_eq!(
        events,
        vec![
            Event::new(10, system::ACTIVATE, 1, [1, 0]),
            Event::new(20, HOOPS, TRACER_SOURCE, [1, 0]),
            Event::new(20, system::SCHEDULE, 1, [1, 0]),
        ]
    );
    let close = close_of(&r);
    assert_eq!(
        close.totals,
        QueueTotals {
            accepted: 3,
            dropped: 0,
            overwritten: 1,
            delivered: 2
        }
    );
    assert_eq!((close.records, close.lost), (3, 1));
    let c = RING.counters();
    assert_eq!((c.queued, c.overwritten), (0, 1));
}

#[test]
fn the_core_header_encoder_is_the_std_one() {
    // The std TraceHeader and a firmware's HeaderSpec go through one
    // encoder: the same values give the same bytes.
    let std_header = qtrace::wire::TraceHeader::new(
        qtrace::classes::Catalog::builtin(),
        &qtrace::clock::Clock::manual(&qtrace::clock::ManualClock::new(0)),
    )
    .with_host("h")
    .unwrap()
    .with_process_id(9)
    .with_queue(qtrace::QueueHandle(2), "circular")
    .unwrap()
    .with_close_run(true);
    let spec = HeaderSpec {
        closes: true,
        process_id: 9,
        clock_kind: "manual",
        host: "h",
        queue: Some((2, "circular")),
        ..HeaderSpec::default()
    };
    let mut core_bytes = Vec::new();
    spec.emit(&StaticCatalog::BUILTIN, &mut |b: &[u8]| {
        core_bytes.extend_from_slice(b)
    });
    assert_eq!(core_bytes, std_header.to_bytes());
}
