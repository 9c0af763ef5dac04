//! How long a cache line takes to go to another core and back: two threads
//! hand one atomic counter to each other, 100,000 times a run, both
//! spinning (so on a 2-vCPU machine they run on the two vCPUs).
//!
//! Why: on the KVM hosts of BENCHMARKS.md the hypervisor now and then runs
//! the two vCPUs on different dies, where this round trip takes 350–380 ns
//! instead of 80–95 and every command that works on two threads (`analyze`,
//! the converters, the streams' tasks) runs up to 2x slower. A figure of
//! such a command means something only beside this one, measured in the
//! same minute (`benches/readers_ab.sh` runs it every round).
//!
//! ```text
//! cargo bench -p qtrace-benches --bench cross_core            # 5 runs, the median
//! cargo bench -p qtrace-benches --bench cross_core -- --quiet  # the median alone, in ns
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::Instant;

/// Round trips a run.
const TRIPS: u64 = 100_000;

/// Runs measured; the median is reported.
const RUNS: usize = 5;

/// One run: the mean round trip, in nanoseconds.
fn run() -> f64 {
    let line = AtomicU64::new(0);
    thread::scope(|s| {
        // The other side: answers each odd value with the next even one.
        s.spawn(|| {
            for i in 0..TRIPS {
                while line.load(Ordering::Acquire) != 2 * i + 1 {
                    std::hint::spin_loop();
                }
                line.store(2 * i + 2, Ordering::Release);
            }
        });
        let start = Instant::now();
        for i in 0..TRIPS {
            line.store(2 * i + 1, Ordering::Release);
            while line.load(Ordering::Acquire) != 2 * i + 2 {
                std::hint::spin_loop();
            }
        }
        start.elapsed().as_nanos() as f64 / TRIPS as f64
    })
}

fn main() {
    let quiet = std::env::args().any(|a| a == "--quiet");
    let mut trips: Vec<f64> = (0..RUNS).map(|_| run()).collect();
    trips.sort_by(f64::total_cmp);
    let median = trips[RUNS / 2];
    if quiet {
        println!("{median:.0}");
        return;
    }
    let all: Vec<String> = trips.iter().map(|t| format!("{t:.0}")).collect();
    println!(
        "cross-core round trip of a cache line: {median:.0} ns (median of {RUNS} runs of {TRIPS}; all: {} ns)",
        all.join(", ")
    );
    if thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        println!("one CPU only: the two threads took turns, this is not a cross-core figure");
    }
}
