//! Cost of one logged event, qtrace against the floor and against the Rust
//! alternatives a user could pick, all measured side by side in one run.
//!
//! Every case logs [`EVENTS`] events per iteration (criterion reports
//! events/s; ns/event = time per iteration / [`EVENTS`]). Queues hold
//! [`CAPACITY`] records, so each iteration wraps every ring
//! `EVENTS / CAPACITY` times and a run wraps them many thousands of times.
//!
//! "The same work" for every enabled case and every peer: read qtrace's
//! default clock ([`Clock::fast`]) and store one 32-byte record
//! ([`qtrace::Event`]: time, id, flags, source, two u64 arguments) into
//! memory that was allocated before the measurement. fastrace reads its own
//! clock (`fastant`, also the TSC) and records a named event without
//! arguments: the cheapest thing it offers, to give it the benefit of the
//! doubt.
//!
//! Time is the benchmark thread's own CPU time (`CLOCK_THREAD_CPUTIME_ID`),
//! not wall time: on a machine shared with other busy processes, time spent
//! descheduled is not counted against whichever case happened to be running.
//! Set `QTRACE_BENCH_WALL=1` to measure wall time instead. (fastrace's
//! collector thread runs on another core in parallel; its CPU time is not
//! counted, in either mode.)
//!
//! Run: `cargo bench --bench overhead -- --warm-up-time 1 --measurement-time 3`

use std::collections::VecDeque;
use std::hint::black_box;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use crossbeam_queue::ArrayQueue;

use qtrace::clock::Clock;
use qtrace::queues::{Circular, CircularParams, Dummy, Fixed, FixedParams};
use qtrace::{Event, Tracer};

mod common;
use common::{thread_cpu_time, CAPACITY, EVENTS, ID, LIVE};

fn tracer_with<T: qtrace::queues::QueueType>(params: T::Params, enabled: bool) -> Tracer {
    common::tracer_with::<T>("overhead", params, enabled)
}

/// This thread's CPU time, or the wall clock with `QTRACE_BENCH_WALL` set.
fn now(wall: bool, origin: Instant) -> Duration {
    if wall {
        origin.elapsed()
    } else {
        thread_cpu_time()
    }
}

/// Criterion's `iter`, timed by [`now`].
fn iter(b: &mut criterion::Bencher<'_>, mut routine: impl FnMut()) {
    let wall = std::env::var_os("QTRACE_BENCH_WALL").is_some();
    let origin = Instant::now();
    b.iter_custom(|iters| {
        let t0 = now(wall, origin);
        for _ in 0..iters {
            routine();
        }
        now(wall, origin) - t0
    })
}

fn log_loop(tracer: &Tracer) {
    for i in 0..EVENTS {
        tracer.log_event(ID, [i, 0]);
    }
}

/// The `relaxed_load` loop, in a function of its own like
/// [`masked_loop`]: the two sub-nanosecond cases are six-instruction loops
/// whose time depends on where they fall relative to 64-byte fetch blocks,
/// so each gets the same kind of home (and `benches/paired.rs` measures
/// them interleaved).
#[inline(never)]
fn relaxed_load_loop(words: &[AtomicU32]) {
    for i in 0..EVENTS {
        if words[ID.0 as usize].load(Ordering::Relaxed) & LIVE != 0 {
            black_box(i);
        }
    }
}

/// [`log_loop`] for the masked-out case, in a function of its own (see
/// [`relaxed_load_loop`]).
#[inline(never)]
fn masked_loop(tracer: &Tracer) {
    for i in 0..EVENTS {
        tracer.log_event(ID, [i, 0]);
    }
}

fn log_event(c: &mut Criterion) {
    let clock = Clock::fast();
    let mut g = c.benchmark_group("log_event");
    g.throughput(Throughput::Elements(EVENTS));

    // The floor of a masked-out event: one relaxed load of a word in a heap
    // table indexed by the event id (as qtrace's routes) and a branch.
    let words: Box<[AtomicU32]> = (0..1 << 16).map(|_| AtomicU32::new(0)).collect();
    g.bench_function("relaxed_load", |b| {
        let words = black_box(&words);
        iter(b, || relaxed_load_loop(words))
    });

    // The floor of an enabled event: read the clock, store one record into a
    // preallocated power-of-two array.
    let mut array = vec![Event::default(); CAPACITY].into_boxed_slice();
    g.bench_function("floor", |b| {
        let clock = black_box(&clock);
        iter(b, || {
            let mask = array.len() - 1;
            for i in 0..EVENTS {
                array[i as usize & mask] = Event::new(clock.now(), ID, 0, [i, 0]);
            }
            black_box(&mut array);
        })
    });

    let disabled = tracer_with::<Dummy>((), false);
    g.bench_function("disabled", |b| {
        let t = black_box(&disabled);
        iter(b, || masked_loop(t))
    });

    let dummy = tracer_with::<Dummy>((), true);
    g.bench_function("dummy", |b| {
        let t = black_box(&dummy);
        iter(b, || log_loop(t))
    });

    let fixed = tracer_with::<Fixed>(
        FixedParams::default()
            .with_capacity(CAPACITY)
            .with_ring(qtrace::storage::RingStorage::Memory),
        true,
    );
    g.bench_function("fixed", |b| {
        let t = black_box(&fixed);
        iter(b, || log_loop(t))
    });

    let circular = tracer_with::<Circular>(CircularParams::default().with_capacity(CAPACITY), true);
    g.bench_function("circular", |b| {
        let t = black_box(&circular);
        iter(b, || log_loop(t))
    });

    let global = qtrace::global::install(tracer_with::<Circular>(
        CircularParams::default().with_capacity(CAPACITY),
        true,
    ))
    .expect("first install");
    let _ = global;
    g.bench_function("global_circular", |b| {
        iter(b, || {
            for i in 0..EVENTS {
                qtrace::log_event(ID, [i, 0]);
            }
        })
    });

    // A Mutex around a VecDeque that drops its oldest record when full.
    let ring = Mutex::new(VecDeque::<Event>::with_capacity(CAPACITY));
    g.bench_function("peer_mutex_vecdeque", |b| {
        let ring = black_box(&ring);
        let clock = black_box(&clock);
        iter(b, || {
            for i in 0..EVENTS {
                let event = Event::new(clock.now(), ID, 0, [i, 0]);
                let mut ring = ring.lock().unwrap();
                if ring.len() == CAPACITY {
                    ring.pop_front();
                }
                ring.push_back(event);
            }
        })
    });

    // crossbeam's bounded MPMC queue, overwriting the oldest when full.
    let aq = ArrayQueue::<Event>::new(CAPACITY);
    g.bench_function("peer_crossbeam_arrayqueue", |b| {
        let aq = black_box(&aq);
        let clock = black_box(&clock);
        iter(b, || {
            for i in 0..EVENTS {
                black_box(aq.force_push(Event::new(clock.now(), ID, 0, [i, 0])));
            }
        })
    });

    // rtrb's SPSC ring; when it is full the consumer side discards everything
    // it holds (the cheapest way to keep writing into a full SPSC ring).
    let (mut producer, mut consumer) = rtrb::RingBuffer::<Event>::new(CAPACITY);
    g.bench_function("peer_rtrb", |b| {
        let clock = black_box(&clock);
        iter(b, || {
            for i in 0..EVENTS {
                let event = Event::new(clock.now(), ID, 0, [i, 0]);
                if let Err(rtrb::PushError::Full(event)) = producer.push(event) {
                    let n = consumer.slots();
                    consumer.read_chunk(n).expect("n slots").commit_all();
                    producer.push(event).expect("room after draining");
                }
            }
        })
    });

    // fastrace: events added to a local parent span; one root span per
    // CAPACITY events (fastrace keeps up to 10240 records per local span set),
    // reported to a reporter that discards them.
    fastrace::set_reporter(
        NullReporter,
        fastrace::collector::Config::default().report_interval(Duration::from_millis(10)),
    );
    g.bench_function("peer_fastrace", |b| {
        iter(b, || {
            for _ in 0..EVENTS / CAPACITY as u64 {
                let root = fastrace::Span::root(
                    "batch",
                    fastrace::collector::SpanContext::new(
                        fastrace::collector::TraceId(1),
                        fastrace::collector::SpanId(1),
                    ),
                );
                let _guard = root.set_local_parent();
                for _ in 0..CAPACITY {
                    fastrace::local::LocalSpan::add_event(fastrace::Event::new("user0"));
                }
            }
        })
    });

    // tracing: `info!` with two u64 fields and a minimal Layer that stamps
    // the event and pushes one record into a ring (crossbeam ArrayQueue,
    // overwriting the oldest).
    let layer_ring = Arc::new(ArrayQueue::<Event>::new(CAPACITY));
    {
        use tracing_subscriber::layer::SubscriberExt;
        let subscriber = tracing_subscriber::registry().with(RingLayer {
            ring: Arc::clone(&layer_ring),
            clock: clock.clone(),
        });
        tracing::subscriber::set_global_default(subscriber).expect("first subscriber");
    }
    g.bench_function("peer_tracing_ring", |b| {
        iter(b, || {
            for i in 0..EVENTS {
                tracing::info!(a0 = i, a1 = 0u64);
            }
        });
        // The peer did the work: its ring is full of records.
        assert_eq!(layer_ring.len(), CAPACITY, "the layer recorded events");
    });

    g.finish();
}

/// The clocks qtrace can stamp events with: the TSC scaled to ns (the fast
/// default here), a raw `rdtsc`, `Instant::now`, and qtrace's fallback.
fn clock(c: &mut Criterion) {
    const READS: u64 = 1 << 12;
    let mut g = c.benchmark_group("clock");
    g.throughput(Throughput::Elements(READS));
    let fast = Clock::fast();
    let monotonic = Clock::monotonic();
    g.bench_function(BenchmarkId::new("qtrace_fast", fast.kind().name()), |b| {
        let clock = black_box(&fast);
        iter(b, || {
            for _ in 0..READS {
                black_box(clock.now());
            }
        })
    });
    g.bench_function("qtrace_monotonic", |b| {
        let clock = black_box(&monotonic);
        iter(b, || {
            for _ in 0..READS {
                black_box(clock.now());
            }
        })
    });
    g.bench_function("instant_now", |b| {
        iter(b, || {
            for _ in 0..READS {
                black_box(Instant::now());
            }
        })
    });
    #[cfg(target_arch = "x86_64")]
    g.bench_function("rdtsc", |b| {
        iter(b, || {
            for _ in 0..READS {
                // SAFETY: RDTSC has no preconditions on x86_64.
                black_box(unsafe { core::arch::x86_64::_rdtsc() });
            }
        })
    });
    g.finish();
}

struct NullReporter;

impl fastrace::collector::Reporter for NullReporter {
    fn report(&mut self, spans: Vec<fastrace::collector::SpanRecord>) {
        black_box(spans);
    }
}

struct RingLayer {
    ring: Arc<ArrayQueue<Event>>,
    clock: Clock,
}

struct Args([u64; 2]);

impl tracing::field::Visit for Args {
    fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
        if let Some(slot) = self.0.get_mut(field.index()) {
            *slot = value;
        }
    }

    fn record_debug(&mut self, _field: &tracing::field::Field, _value: &dyn std::fmt::Debug) {}
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for RingLayer {
    fn on_event(
        &self,
        event: &tracing::Event<'_>,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut args = Args([0; 2]);
        event.record(&mut args);
        let _evicted = self
            .ring
            .force_push(Event::new(self.clock.now(), ID, 0, args.0));
    }
}

criterion_group!(benches, log_event, clock);
criterion_main!(benches);
