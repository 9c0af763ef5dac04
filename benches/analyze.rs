//! `qtrace::analysis::Analyzer` alone (events already in memory): the
//! analysis's own throughput, without reading files. The end-to-end figure
//! (`qtrace analyze` on a 5 M-event file) is measured by
//! `benches/dump_babeltrace2.sh`.
//!
//! ```text
//! cargo bench -p qtrace-benches --features analysis --bench analyze -- --warm-up-time 1 --measurement-time 2
//! ```

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use qtrace::analysis::{AnalysisOptions, Analyzer, LatencySpec, MatchKey};
use qtrace::classes::{lowlevel, semaphore, system, tracer, user, Catalog};
use qtrace::Event;

/// The workload of examples/convert_memory.rs, plus activations and ends of
/// cycle: 4 CPUs, 16 tasks, interrupts, semaphores, a loss every 100 000.
fn workload(n: u64) -> Vec<Event> {
    (0..n)
        .map(|i| {
            let time = i * 50;
            let cpu = (i % 4) as u32;
            let task = (i / 4) % 16;
            if i % 100_000 == 99_999 {
                return Event::new(time, tracer::HOOPS, u32::MAX, [1, 0]);
            }
            match i % 10 {
                0 => Event::new(time, system::SCHEDULE, cpu, [task, 0]),
                1 => Event::new(time, system::ACTIVATE, cpu, [task, 0]),
                3 => Event::new(time, lowlevel::INTERRUPT, cpu, [i % 7, 0]),
                5 => Event::new(time, semaphore::WAIT, cpu, [task, i % 3]),
                7 => Event::new(time, system::ENDCYCLE, cpu, [task, 0]),
                8 => Event::new(time, semaphore::SIGNAL, cpu, [task, i % 3]),
                _ => Event::new(time, user::USER0, cpu, [i, 0]),
            }
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let events = workload(1_000_000);
    let catalog = Catalog::builtin();
    let mut g = c.benchmark_group("analyze");
    g.throughput(Throughput::Elements(events.len() as u64));
    g.bench_function("1M events", |b| {
        b.iter(|| {
            let mut a = Analyzer::new(&catalog, AnalysisOptions::default());
            for e in &events {
                a.push(e);
            }
            a.finish()
        })
    });
    g.bench_function("1M events + latency", |b| {
        b.iter(|| {
            let options = AnalysisOptions {
                latency: Some(LatencySpec {
                    from: system::ACTIVATE,
                    to: system::ENDCYCLE,
                    key: MatchKey::Arg(0),
                }),
                ..AnalysisOptions::default()
            };
            let mut a = Analyzer::new(&catalog, options);
            for e in &events {
                a.push(e);
            }
            a.finish()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
