//! Cost of a filtered event (#15 2) against an unfiltered one, side by
//! side in one run: the same tracer, one circular queue of 8192 records
//! for the user class (as `benches/overhead.rs`), and
//!
//! - `unfiltered`: `USER0`, no filter (the path every event took before
//!   filters existed);
//! - `arg_passed` / `arg_rejected`: `USER1` / `USER2` through
//!   `Filter::arg(1, 0..=0)` / `Filter::arg(1, 1..=1)` (the argument logged
//!   is 0: the first passes every event, the second rejects every one);
//! - `handler_passed`: `USER3` through `Filter::handler(|e| e.args[1] == 0)`.
//!
//! A filter is a queue reached through one virtual call; a kept event then
//! takes the target queue's `get`/`post` (not the circular queue's
//! per-thread shard cache of the unfiltered path).
//!
//! Time is the thread's CPU time, as in `benches/overhead.rs`.
//!
//! Run: `cargo bench --bench filters -- --warm-up-time 1 --measurement-time 2`

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use qtrace::classes::user;
use qtrace::filters::Filter;
use qtrace::queues::{Circular, CircularParams};
use qtrace::EventId;

mod common;
use common::{thread_cpu_time, CAPACITY, EVENTS};

fn case(
    c: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    tracer: &qtrace::Tracer,
    id: EventId,
) {
    c.bench_function(name, |b| {
        let t = black_box(tracer);
        b.iter_custom(|iters| {
            let t0: Duration = thread_cpu_time();
            for _ in 0..iters {
                for i in 0..EVENTS {
                    t.log_event(id, [i, 0]);
                }
            }
            thread_cpu_time() - t0
        })
    });
}

fn filters(c: &mut Criterion) {
    let tracer = common::tracer_with::<Circular>(
        "filters",
        CircularParams::default().with_capacity(CAPACITY),
        true,
    );
    tracer
        .filter_event(user::USER1, Filter::arg(1, 0..=0))
        .expect("filter");
    tracer
        .filter_event(user::USER2, Filter::arg(1, 1..=1))
        .expect("filter");
    tracer
        .filter_event(user::USER3, Filter::handler(|e| e.args[1] == 0))
        .expect("filter");
    let mut g = c.benchmark_group("filters");
    g.throughput(Throughput::Elements(EVENTS));
    case(&mut g, "unfiltered", &tracer, user::USER0);
    case(&mut g, "arg_passed", &tracer, user::USER1);
    case(&mut g, "arg_rejected", &tracer, user::USER2);
    case(&mut g, "handler_passed", &tracer, user::USER3);
    g.finish();
}

criterion_group!(benches, filters);
criterion_main!(benches);
