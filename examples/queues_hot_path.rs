//! A quick timed loop (not a statistical benchmark; see `benches/` for those):
//! ns per enabled event into a circular and a fixed queue through the tracer,
//! next to the floor "read the clock + store one 32-byte record into a
//! preallocated array", and the cost of one uncontended atomic
//! read-modify-write (the circular queue does two per event, the fixed queue
//! one), measured in the same run.
//!
//! `cargo run --release --example queues_hot_path [events]`

use std::hint::black_box;
use std::time::Instant;

use qtrace::classes::user;
use qtrace::queues::{Circular, CircularParams, Fixed, FixedParams};
use qtrace::{Config, Event, Tracer};

fn per_event(n: u64, f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_nanos() as f64 / n as f64
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2_000_000);
    let dir = std::env::temp_dir().join(format!("qtrace-hot-path-{}", std::process::id()));
    let tracer = Tracer::with_config(Config::default().with_output_dir(&dir));
    let circular = tracer
        .create_queue::<Circular>(CircularParams::default())
        .unwrap();
    let fixed = tracer
        .create_queue::<Fixed>(
            FixedParams::default()
                .with_capacity(n as usize + 1)
                .with_ring(qtrace::storage::RingStorage::Memory),
        )
        .unwrap();
    tracer.assign_event(user::USER0, circular).unwrap();
    tracer.assign_event(user::USER1, fixed).unwrap();
    tracer.activate().unwrap();
    let clock = tracer.clock().clone();
    let mut array = vec![Event::default(); 8192];

    for round in 0..3 {
        let floor = per_event(n, || {
            for i in 0..n {
                let e = Event::new(clock.now(), user::USER0, 0, [i, 0]);
                array[(i & 8191) as usize] = e;
                black_box(&array);
            }
        });
        let counter = std::sync::atomic::AtomicU64::new(0);
        let rmw = per_event(n, || {
            for _ in 0..n {
                black_box(counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
            }
        });
        let circ = per_event(n, || {
            for i in 0..n {
                tracer.log_event(black_box(user::USER0), [i, 0]);
            }
        });
        let fix = if round == 0 {
            per_event(n, || {
                for i in 0..n {
                    tracer.log_event(black_box(user::USER1), [i, 0]);
                }
            })
        } else {
            f64::NAN // the fixed queue is full after the first round
        };
        println!(
            "round {round}: one atomic RMW {rmw:.2} ns, floor {floor:.2} ns/event, circular {circ:.2} ns/event ({:.2}x floor), fixed {fix:.2} ns/event ({:.2}x floor)",
            circ / floor,
            fix / floor
        );
    }
    let report = tracer.shutdown().unwrap();
    for q in &report.queues {
        println!("{} {:?}", q.type_name, q.counters);
    }
    std::fs::remove_dir_all(&dir).ok();
}
