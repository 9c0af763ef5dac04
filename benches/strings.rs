//! Cost of a string logged as a combine run (`Tracer::log_str`), 16 and
//! 256 bytes, against its floor measured in the same run.
//!
//! The floor of a string of `n` bytes: read qtrace's default clock and
//! store the records a run of `n` bytes takes (`1 + ⌈n / 16⌉`: a header
//! record with the length, then the bytes, 16 per record) into a
//! preallocated power-of-two array of 32-byte records. qtrace's cases log
//! into a circular queue of 8192 records (the thread's own shard), as
//! `benches/overhead.rs` does for one event; `log_event` is the one-record
//! case for reference. Every case logs [`STRINGS`] strings per iteration
//! (criterion's "elements" are strings).
//!
//! Time is the thread's CPU time, as in `benches/overhead.rs`.
//!
//! Run: `cargo bench --bench strings -- --warm-up-time 1 --measurement-time 2`

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use qtrace::clock::Clock;
use qtrace::combine::Run;
use qtrace::queues::{Circular, CircularParams};
use qtrace::{Event, EventId};

mod common;
use common::{thread_cpu_time, CAPACITY, ID};

const STRINGS: u64 = 1 << 12;

fn iter(b: &mut criterion::Bencher<'_>, mut routine: impl FnMut()) {
    b.iter_custom(|iters| {
        let t0: Duration = thread_cpu_time();
        for _ in 0..iters {
            routine();
        }
        thread_cpu_time() - t0
    })
}

/// The floor: the clock, then the run's records stored by hand.
fn floor(array: &mut [Event], clock: &Clock, text: &[u8]) {
    let mask = array.len() - 1;
    let mut at = 0usize;
    for i in 0..STRINGS {
        let time = clock.now();
        array[at & mask] = Event::new(time, ID, 0, [text.len() as u64, i]);
        at += 1;
        for chunk in text.chunks(16) {
            let mut b = [0u8; 16];
            b[..chunk.len()].copy_from_slice(chunk);
            array[at & mask] = Event::new(
                time,
                ID,
                0,
                [
                    u64::from_be_bytes(b[..8].try_into().unwrap()),
                    u64::from_be_bytes(b[8..].try_into().unwrap()),
                ],
            );
            at += 1;
        }
    }
    black_box(array);
}

fn strings(c: &mut Criterion) {
    let clock = Clock::fast();
    let texts = [
        ("16", "0123456789abcdef".to_string()),
        ("256", "x".repeat(256)),
    ];
    let mut g = c.benchmark_group("log_str");
    g.throughput(Throughput::Elements(STRINGS));
    let mut array = vec![Event::default(); CAPACITY].into_boxed_slice();
    let tracer = common::tracer_with::<Circular>(
        "strings",
        CircularParams::default().with_capacity(CAPACITY),
        true,
    );
    for (n, text) in &texts {
        assert_eq!(
            Run::new(0, EventId(0), 0, 0, text.as_bytes()).len(),
            1 + text.len() / 16
        );
        g.bench_function(format!("floor_{n}"), |b| {
            let clock = black_box(&clock);
            iter(b, || floor(&mut array, clock, text.as_bytes()))
        });
        g.bench_function(format!("circular_{n}"), |b| {
            let t = black_box(&tracer);
            iter(b, || {
                for _ in 0..STRINGS {
                    t.log_str(ID, black_box(text));
                }
            })
        });
    }
    g.bench_function("circular_log_event", |b| {
        let t = black_box(&tracer);
        iter(b, || {
            for i in 0..STRINGS {
                t.log_event(ID, [i, 0]);
            }
        })
    });
    g.finish();
}

criterion_group!(benches, strings);
criterion_main!(benches);
