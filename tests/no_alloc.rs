//! Logging never allocates: a counting global allocator proves that
//! `log_event` performs zero heap allocations per event, for every built-in
//! in-memory queue (dummy, fixed — also once it is full and drops — and
//! circular, wrapping many times), for masked-out events, and through the
//! process-wide tracer.
//!
//! The counter is per thread, so allocations made by other tests running at
//! the same time are not counted.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use qtrace::classes::{system, user};
use qtrace::queues::QueueType;
use qtrace::queues::{Circular, CircularParams, Dummy, Fixed, FixedParams};
use qtrace::{Config, Tracer};

struct Counting;

thread_local! {
    /// Allocations (alloc, alloc_zeroed, realloc) made by this thread.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count_one() {
    // `try_with`: the allocator may run while the thread-local is being
    // torn down at thread exit.
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged; counting touches only a const-initialised thread-local `Cell`,
// which neither allocates nor unwinds.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: forwarded unchanged; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: forwarded unchanged; the caller upholds the contract.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
        // SAFETY: forwarded unchanged; the caller upholds the contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged; the caller upholds the contract.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Allocations this thread makes while running `f`.
fn allocations_in(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

/// Events per measured loop: the 64-event queues below wrap (or fill) many
/// times over.
const EVENTS: u64 = if cfg!(miri) { 300 } else { 100_000 };
const CAPACITY: usize = 64;

fn tracer_with<T: QueueType>(params: T::Params) -> Tracer {
    let dir = std::env::temp_dir().join(format!("qtrace-no-alloc-{}", std::process::id()));
    let tracer = Tracer::with_config(Config::default().with_output_dir(dir));
    let q = tracer.create_queue::<T>(params).unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer.assign_class(system::CLASS, q).unwrap();
    tracer.notrace_class(system::CLASS).unwrap();
    tracer.activate().unwrap();
    // This thread's first event assigns its source number: do it before
    // counting (it does not allocate either, but the test is about the
    // steady state).
    tracer.log_event(user::USER0, [0, 0]);
    tracer
}

/// Logs `EVENTS` enabled and `EVENTS` masked-out events, counting
/// allocations, and returns the queue's counters.
fn log_counting(tracer: &Tracer) -> qtrace::queue::QueueCounters {
    let allocations = allocations_in(|| {
        for i in 0..EVENTS {
            tracer.log_event(user::USER0, [i, i]);
            tracer.log_event_from(7, user::USER1, [i, 0]);
            tracer.log_event(system::SCHEDULE, [i, 0]); // masked out
        }
    });
    assert_eq!(allocations, 0, "log_event allocated");
    tracer.counters(qtrace::QueueHandle(0)).unwrap()
}

#[test]
fn counter_sees_allocations() {
    // The instrument works: a Vec allocates once.
    let n = allocations_in(|| {
        std::hint::black_box(Vec::<u64>::with_capacity(10));
    });
    assert_eq!(n, 1);
}

#[test]
fn dummy_queue_logs_without_allocating() {
    let tracer = tracer_with::<Dummy>(());
    let c = log_counting(&tracer);
    assert_eq!(c.accepted, 1 + 2 * EVENTS);
}

#[test]
fn fixed_queue_logs_and_drops_without_allocating() {
    let tracer = tracer_with::<Fixed>(
        FixedParams::default()
            .with_capacity(CAPACITY)
            .with_ring(Default::default()),
    );
    let c = log_counting(&tracer);
    assert_eq!(c.accepted, CAPACITY as u64);
    assert_eq!(c.dropped, 1 + 2 * EVENTS - CAPACITY as u64);
}

#[test]
fn circular_queue_wraps_without_allocating() {
    let tracer = tracer_with::<Circular>(CircularParams::default().with_capacity(CAPACITY));
    let c = log_counting(&tracer);
    assert_eq!(c.accepted + c.dropped, 1 + 2 * EVENTS);
    assert_eq!(c.dropped, 0, "one thread never laps itself");
    assert_eq!(c.overwritten, 1 + 2 * EVENTS - CAPACITY as u64);
}

#[test]
fn global_tracer_logs_without_allocating() {
    let tracer = qtrace::global::install(tracer_with::<Circular>(
        CircularParams::default().with_capacity(CAPACITY),
    ))
    .unwrap();
    qtrace::log_event(user::USER0, [0, 0]);
    let allocations = allocations_in(|| {
        for i in 0..EVENTS {
            qtrace::log_event(user::USER0, [i, 0]);
            qtrace::log_event(system::SCHEDULE, [i, 0]); // masked out
        }
    });
    assert_eq!(allocations, 0, "global log_event allocated");
    let c = tracer.counters(qtrace::QueueHandle(0)).unwrap();
    assert_eq!(c.accepted, 2 + EVENTS);
}

/// `log_str` and `log_event_str` (combine runs) allocate nothing either, in
/// every built-in in-memory queue: the records are built in place.
#[test]
fn strings_log_without_allocating() {
    let text = "x".repeat(300);
    for tracer in [
        tracer_with::<Dummy>(()),
        tracer_with::<Fixed>(
            FixedParams::default()
                .with_capacity(CAPACITY)
                .with_ring(Default::default()),
        ),
        tracer_with::<Circular>(CircularParams::default().with_capacity(CAPACITY)),
        tracer_with::<Circular>(
            CircularParams::default()
                .with_capacity(CAPACITY)
                .with_shards(0),
        ),
    ] {
        tracer.log_str(user::USER0, "warm-up");
        let allocations = allocations_in(|| {
            for i in 0..EVENTS / 100 {
                tracer.log_str(user::USER0, &text[..(i % 300) as usize]);
                tracer.log_event_str(user::USER1, i, "request");
                tracer.log_bytes(system::SCHEDULE, b"masked out");
            }
        });
        assert_eq!(allocations, 0, "log_str allocated");
        let c = tracer.counters(qtrace::QueueHandle(0)).unwrap();
        assert!(c.accepted + c.dropped > EVENTS / 100);
    }
}

/// A `tracing` event through qtrace's layer, numbers and strings, allocates
/// nothing once its callsite is interned (the text is formatted on the
/// stack).
#[cfg(feature = "tracing")]
#[test]
fn tracing_events_through_the_layer_do_not_allocate() {
    use std::sync::Arc;
    use tracing_subscriber::layer::SubscriberExt;
    let out = tempfile::tempdir().unwrap(); // the queue's file at shutdown
    let tracer = Arc::new(Tracer::with_config(
        qtrace::Config::default().with_output_dir(out.path()),
    ));
    let layer = qtrace::bridge::QtraceLayer::new(Arc::clone(&tracer), 4).unwrap();
    let q = tracer
        .create_queue::<Circular>(CircularParams::default().with_capacity(CAPACITY))
        .unwrap();
    tracer.assign_class(layer.class(), q).unwrap();
    tracer.activate().unwrap();
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(layer));
    tracing::dispatcher::with_default(&dispatch, || {
        let log = |i: u64| {
            tracing::info!(a = i, b = 7u64);
            tracing::info!(a = i, name = "worker", "message {}", i);
        };
        log(0); // interns both callsites (allocates, once)
        let allocations = allocations_in(|| {
            for i in 0..EVENTS / 100 {
                log(i);
            }
        });
        assert_eq!(allocations, 0, "the tracing layer allocated");
    });
    let c = tracer.counters(q).unwrap();
    assert_eq!(c.dropped, 0);
    assert!(c.accepted > 2 * EVENTS / 100);
}
