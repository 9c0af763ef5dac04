//! Cost of an event with a trigger attached against one without (#15 3),
//! side by side in one run: one tracer, circular queues of 8192 records
//! (as `benches/overhead.rs` and `benches/filters.rs`), and
//!
//! - `no_trigger`: `USER0` into queue A, which no trigger gates (the path
//!   every event took before triggers existed);
//! - `trigger_counting`: `USER1` into queue A through a snapshot trigger
//!   that counts it and never fires (`after(u64::MAX)`);
//! - `trigger_suppressed`: `USER2` into queue A through a snapshot trigger
//!   that fires on every event, every firing but the first suppressed by
//!   its rate limit (`min_interval` of an hour): the logging thread's
//!   whole share of a snapshot trigger;
//! - `gated_open`: `USER3` into queue B, gated by a stop trigger (on
//!   `USER7`, never logged): recording on, every event passes the gate;
//! - `gated_closed`: `USER4` into queue C, gated by a start trigger (on
//!   `USER6`, never logged): recording off, every event is masked.
//!
//! Time is the thread's CPU time, as in `benches/overhead.rs`.
//!
//! Run: `cargo bench --bench triggers -- --warm-up-time 1 --measurement-time 2`

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use qtrace::classes::user;
use qtrace::filters::{Scope, Snapshot, Trigger};
use qtrace::queues::{Circular, CircularParams};
use qtrace::{EventId, Tracer};

mod common;
use common::{thread_cpu_time, CAPACITY, EVENTS};

fn case(
    c: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    tracer: &Tracer,
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

fn triggers(c: &mut Criterion) {
    let dir = std::env::temp_dir().join("qtrace-bench-triggers");
    let tracer = Tracer::with_config(qtrace::Config::default().with_output_dir(&dir));
    let params = || CircularParams::default().with_capacity(CAPACITY);
    let a = tracer.create_queue::<Circular>(params()).expect("queue");
    let b = tracer.create_queue::<Circular>(params()).expect("queue");
    let c_ = tracer.create_queue::<Circular>(params()).expect("queue");
    tracer.assign_class(user::CLASS, a).expect("assign");
    tracer.assign_event(user::USER3, b).expect("assign");
    tracer.assign_event(user::USER4, c_).expect("assign");
    let snap = Snapshot::new(a, 16);
    tracer
        .add_trigger(user::USER1, Trigger::snapshot(snap.clone()).after(u64::MAX))
        .expect("trigger");
    tracer
        .add_trigger(
            user::USER2,
            Trigger::snapshot(snap.min_interval(Duration::from_secs(3600))),
        )
        .expect("trigger");
    tracer
        .add_trigger(user::USER7, Trigger::stop(Scope::Queue(b)))
        .expect("trigger");
    tracer
        .add_trigger(user::USER6, Trigger::start(Scope::Queue(c_)))
        .expect("trigger");
    tracer.activate().expect("activate");
    let mut g = c.benchmark_group("triggers");
    g.throughput(Throughput::Elements(EVENTS));
    case(&mut g, "no_trigger", &tracer, user::USER0);
    case(&mut g, "trigger_counting", &tracer, user::USER1);
    case(&mut g, "trigger_suppressed", &tracer, user::USER2);
    case(&mut g, "gated_open", &tracer, user::USER3);
    case(&mut g, "gated_closed", &tracer, user::USER4);
    g.finish();
    let report = tracer.shutdown().expect("shutdown");
    // `trigger_suppressed` wrote one snapshot and suppressed the rest.
    assert!(report.snapshots_suppressed() > 0);
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, triggers);
criterion_main!(benches);
