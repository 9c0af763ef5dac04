//! `tracing::info!` with two fields through qtrace's layer, side by side in
//! one run with the same event through `tracing-chrome` and through
//! `tracing-subscriber`'s fmt layer writing to a sink.
//!
//! Each case installs its subscriber as the thread's default and logs
//! [`EVENTS`] events per iteration: `info!(a = i, b = 7u64)` (two numeric
//! fields). qtrace's layer records into a circular queue of 8192 records;
//! tracing-chrome (`include_args(true)`) hands each event to its writer
//! thread, which writes JSON to `io::sink()`; the fmt layer formats each
//! line and writes it to `io::sink()`. A last case logs the same event with
//! a message (`info!(a = i, b = 7u64, "tick")`) into qtrace's layer: the
//! message is a string, so it is recorded as a combine run.
//!
//! Wall-clock time (criterion's default), not thread CPU time: a peer's
//! work on another thread (tracing-chrome's writer) must count.
//!
//! Run: `cargo bench -p qtrace-benches --features tracing --bench tracing_layers -- --warm-up-time 1 --measurement-time 2`

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use qtrace::bridge::QtraceLayer;
use qtrace::queues::{Circular, CircularParams};
use qtrace::Tracer;
use tracing::Dispatch;
use tracing_subscriber::layer::SubscriberExt;

const EVENTS: u64 = 1 << 12;

fn run(
    c: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    dispatch: &Dispatch,
    message: bool,
) {
    c.bench_function(name, |b| {
        tracing::dispatcher::with_default(dispatch, || {
            b.iter(|| {
                for i in 0..EVENTS {
                    if message {
                        tracing::info!(a = i, b = 7u64, "tick");
                    } else {
                        tracing::info!(a = i, b = 7u64);
                    }
                }
            })
        })
    });
}

fn layers(c: &mut Criterion) {
    let mut g = c.benchmark_group("tracing_info_two_fields");
    g.throughput(Throughput::Elements(EVENTS));

    let tracer = Arc::new(Tracer::new());
    let layer = QtraceLayer::new(Arc::clone(&tracer), 16).expect("layer");
    let q = tracer
        .create_queue::<Circular>(CircularParams {
            capacity: 8192,
            ..Default::default()
        })
        .expect("queue");
    tracer.assign_class(layer.class(), q).expect("route");
    tracer.activate().expect("activate");
    let qtrace_dispatch = Dispatch::new(tracing_subscriber::registry().with(layer));
    run(&mut g, "qtrace_layer", &qtrace_dispatch, false);

    let (chrome, guard) = tracing_chrome::ChromeLayerBuilder::new()
        .writer(std::io::sink())
        .include_args(true)
        .build();
    let chrome_dispatch = Dispatch::new(tracing_subscriber::registry().with(chrome));
    run(&mut g, "tracing_chrome", &chrome_dispatch, false);
    drop(chrome_dispatch);
    drop(guard);

    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::sink);
    let fmt_dispatch = Dispatch::new(tracing_subscriber::registry().with(fmt));
    run(&mut g, "fmt_to_sink", &fmt_dispatch, false);

    run(&mut g, "qtrace_layer_with_message", &qtrace_dispatch, true);
    g.finish();
    let c = tracer.counters(q).expect("counters");
    assert_eq!(c.dropped, 0);
}

criterion_group!(benches, layers);
criterion_main!(benches);
