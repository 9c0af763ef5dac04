//! The online drain's cost with its queue counters on (FORMAT.md 1.3.4),
//! measured against the same drain with them off, interleaved.
//!
//! ```text
//! cargo bench --bench drain_counters
//! ```
//!
//! Each round runs two cases, in alternating order (so a change of load hits
//! both alike), and the figure is the median of the rounds' ratios:
//!
//! - `drain`: 262144 events logged into an online queue (capacity 262144,
//!   period 1 ms, the default compact file) before phase 2; the time from
//!   activation until its task has written them all (as `streams/online_drain`).
//! - `pipeline`: a producer logs 262144 events while the task drains a queue
//!   of 65536 (waiting when it is 3/4 full, so nothing is dropped), as
//!   `streams/online_pipeline`: the time until all are written.
//!
//! `OnlineParams::with_queue_counters(true)` against `(false)`; nothing else
//! differs. The producer's path (`log_event`, the queue's get/post) is the
//! same in both: only the task samples. Rounds: `QTRACE_BENCH_ROUNDS`
//! (default 15).

use std::thread;
use std::time::{Duration, Instant};

use qtrace::classes::user;
use qtrace::queues::{Online, OnlineParams};
use qtrace::{Config, Tracer};

const EVENTS: u64 = 1 << 18;

fn out_dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("qtrace-bench-counters-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn params(capacity: usize, counters: bool) -> OnlineParams {
    OnlineParams::default()
        .with_capacity(capacity)
        .with_period(Duration::from_millis(1))
        .with_queue_counters(counters)
}

/// Waits (without spinning: on a small machine a spinning poller takes the
/// drain task's CPU) until the queue delivered `events`, then shuts down.
fn finish(tracer: Tracer, q: qtrace::QueueHandle, start: Instant) -> Duration {
    while tracer.counters(q).unwrap().delivered < EVENTS {
        thread::sleep(Duration::from_micros(100));
    }
    let elapsed = start.elapsed();
    let report = tracer.shutdown().unwrap();
    let c = report.queues[0].counters;
    assert_eq!((c.delivered, c.dropped), (EVENTS, 0));
    elapsed
}

fn drain_once(counters: bool) -> Duration {
    let tracer = Tracer::with_config(Config::default().with_output_dir(out_dir()));
    let q = tracer
        .create_queue::<Online>(params(EVENTS as usize, counters))
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    for i in 0..EVENTS {
        tracer.log_event(user::USER0, [i, 0]);
    }
    let start = Instant::now();
    tracer.activate().unwrap();
    finish(tracer, q, start)
}

fn pipeline_once(counters: bool) -> Duration {
    let tracer = Tracer::with_config(Config::default().with_output_dir(out_dir()));
    let capacity = 1 << 16;
    let q = tracer
        .create_queue::<Online>(params(capacity, counters).with_high_water_percent(25))
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer.activate().unwrap();
    let start = Instant::now();
    for i in 0..EVENTS {
        if i % 4096 == 0 {
            while tracer.counters(q).unwrap().queued > capacity as u64 * 3 / 4 {
                thread::yield_now();
            }
        }
        tracer.log_event(user::USER0, [i, 0]);
    }
    finish(tracer, q, start)
}

/// One run of a case: counters on or off, its time.
type Once = fn(bool) -> Duration;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() {
    // `cargo bench` passes `--bench`; a filter names the cases to run.
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let rounds: usize = std::env::var("QTRACE_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(15);
    let cases: [(&str, Once); 2] = [("drain", drain_once), ("pipeline", pipeline_once)];
    for (name, once) in cases {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        // One of each first, not counted (files, page cache, threads).
        once(false);
        once(true);
        let (mut on, mut off, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
        for r in 0..rounds {
            let (a, b) = if r % 2 == 0 {
                let off = once(false);
                (once(true), off)
            } else {
                let on = once(true);
                (on, once(false))
            };
            on.push(a.as_secs_f64());
            off.push(b.as_secs_f64());
            ratio.push(a.as_secs_f64() / b.as_secs_f64());
        }
        let (m_on, m_off) = (median(&mut on), median(&mut off));
        println!(
            "drain_counters/{name}: counters on {:.2} ms ({:.1} M events/s), off {:.2} ms ({:.1} M events/s); on/off median of {rounds} interleaved rounds: {:.3}",
            m_on * 1e3,
            EVENTS as f64 / m_on / 1e6,
            m_off * 1e3,
            EVENTS as f64 / m_off / 1e6,
            median(&mut ratio)
        );
    }
    let _ = std::fs::remove_dir_all(out_dir());
}
