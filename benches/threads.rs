//! Events/s with 1 and 2 threads logging at once, so scaling is visible:
//!
//! - `shared_circular/T`: T threads log into one circular queue (all
//!   threads' events routed to queue 0);
//! - `per_thread_circular/T`: thread k logs its own event, routed to its own
//!   circular queue k (per-thread routing: no shared cache line);
//! - `floor/T`: T threads each read the clock and store records into their
//!   own array: what the machine itself gives when T threads run at once.
//!
//! Criterion's throughput is the events/s of all threads together; scaling
//! = events/s at T=2 / events/s at T=1. Each thread logs `EVENTS` events per
//! iteration; threads are started before the clock starts and released
//! together by a barrier.
//!
//! Time: by default the largest of the threads' own CPU times
//! (`CLOCK_THREAD_CPUTIME_ID`): what the wall time would be if every thread
//! had a core to itself, which a machine shared with other busy processes
//! does not give. Cache-line contention between the threads still shows
//! (a thread stalled on a line another core holds is running). Caveat: when
//! the machine is so loaded that the two threads rarely run at the same
//! moment, contention is under-counted. `QTRACE_BENCH_WALL=1` measures the
//! wall time from the release to the last thread's end instead.
//!
//! Run: `cargo bench --bench threads -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use qtrace::classes::user;
use qtrace::clock::Clock;
use qtrace::queues::{Circular, CircularParams};
use qtrace::{Config, Event, EventId, Tracer};

mod common;
use common::{thread_cpu_time, CAPACITY, EVENTS};

/// Thread k logs `user::USER0 + k`.
fn event_of(thread: usize) -> EventId {
    EventId(user::USER0.0 + thread as u16)
}

/// A tracer whose first `threads` user events go to one circular queue
/// (`per_thread = false`) or each to its own (`per_thread = true`).
fn tracer(threads: usize, per_thread: bool) -> Tracer {
    let tracer = Tracer::with_config(
        Config::default().with_output_dir(std::env::temp_dir().join("qtrace-bench-threads")),
    );
    let params = || CircularParams::default().with_capacity(CAPACITY);
    let shared = tracer.create_queue::<Circular>(params()).expect("queue");
    for k in 0..threads {
        let q = if per_thread && k > 0 {
            tracer.create_queue::<Circular>(params()).expect("queue")
        } else {
            shared
        };
        tracer.assign_event(event_of(k), q).expect("assign");
    }
    tracer.activate().expect("activate");
    tracer
}

/// Runs `work(k, iters)` on `threads` threads released together; returns the
/// largest thread CPU time, or with `QTRACE_BENCH_WALL` the wall time from the
/// release to the last thread's end.
fn timed(threads: usize, iters: u64, work: impl Fn(usize, u64) + Sync) -> Duration {
    let wall = std::env::var_os("QTRACE_BENCH_WALL").is_some();
    let start = Barrier::new(threads + 1);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|k| {
                let (start, work) = (&start, &work);
                s.spawn(move || {
                    start.wait();
                    let t0 = thread_cpu_time();
                    work(k, iters);
                    thread_cpu_time() - t0
                })
            })
            .collect();
        start.wait();
        let t0 = Instant::now();
        let cpu = handles
            .into_iter()
            .map(|h| h.join().expect("bench thread"))
            .max()
            .unwrap_or_default();
        if wall {
            t0.elapsed()
        } else {
            cpu
        }
    })
}

fn threads(c: &mut Criterion) {
    let mut g = c.benchmark_group("threads");
    for threads in [1usize, 2] {
        g.throughput(Throughput::Elements(EVENTS * threads as u64));
        for (name, per_thread) in [("shared_circular", false), ("per_thread_circular", true)] {
            let tracer = tracer(threads, per_thread);
            g.bench_function(BenchmarkId::new(name, threads), |b| {
                b.iter_custom(|iters| {
                    timed(threads, iters, |k, iters| {
                        let id = event_of(k);
                        for _ in 0..iters {
                            for i in 0..EVENTS {
                                tracer.log_event(id, [i, 0]);
                            }
                        }
                    })
                })
            });
            let c = tracer.shutdown().expect("shutdown");
            assert!(c.queues.iter().all(|q| q.counters.is_consistent()));
        }
        let clock = Clock::fast();
        g.bench_function(BenchmarkId::new("floor", threads), |b| {
            b.iter_custom(|iters| {
                timed(threads, iters, |_, iters| {
                    let mut array = vec![Event::default(); CAPACITY];
                    let mask = CAPACITY - 1;
                    for _ in 0..iters {
                        for i in 0..EVENTS {
                            array[i as usize & mask] =
                                Event::new(clock.now(), user::USER0, 0, [i, 0]);
                        }
                    }
                    black_box(&array);
                })
            })
        });
    }
    g.finish();
}

criterion_group!(benches, threads);
criterion_main!(benches);
