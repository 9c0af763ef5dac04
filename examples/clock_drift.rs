//! Measures the default clock (`Clock::fast`) against CLOCK_MONOTONIC
//! (`Instant`) over a long run: the numbers in docs/benchmarks-history.md, "Clock drift".
//!
//!     cargo run --release --example clock_drift -- SECONDS [REPORT_EVERY_SECONDS]
//!
//! Every report line gives the elapsed monotonic time, the clock's deviation
//! from it since the start (clock elapsed − monotonic elapsed, in ns), that
//! deviation in ppm of the elapsed time, and the largest |deviation| so far.
//! Each reading pairs the clock and `Instant::now()` by reading the clock
//! before and after and keeping the tightest of 9 tries, so a preemption in
//! one try does not count.

use std::time::{Duration, Instant};

use qtrace::clock::Clock;

fn pair(clock: &Clock) -> (u64, Instant) {
    let mut best = (u64::MAX, 0, Instant::now());
    for _ in 0..9 {
        let a = clock.now();
        let m = Instant::now();
        let b = clock.now();
        if b - a < best.0 {
            best = (b - a, a + (b - a) / 2, m);
        }
    }
    (best.1, best.2)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let seconds: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(10);
    let every: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    let clock = Clock::fast();
    println!(
        "clock {} (rate {:?} ticks/s, calibration bound {:?} ppb), {seconds} s, report every {every} s",
        clock.kind().name(),
        clock.tsc_ticks_per_second(),
        clock.tsc_rate_bound_ppb()
    );
    let (c0, m0) = pair(&clock);
    let mut worst: i64 = 0;
    let mut worst_ppm_after_10s: f64 = 0.0;
    let mut k = 1;
    loop {
        let due = m0 + Duration::from_secs(k * every);
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
        let (c, m) = pair(&clock);
        let mono = m.duration_since(m0).as_nanos() as i64;
        let dev = (c - c0) as i64 - mono;
        let ppm = dev as f64 / mono as f64 * 1e6;
        if dev.abs() > worst.abs() {
            worst = dev;
        }
        if mono >= 10_000_000_000 && ppm.abs() > worst_ppm_after_10s.abs() {
            worst_ppm_after_10s = ppm;
        }
        println!(
            "elapsed {:>10.3} s  deviation {dev:>+10} ns  {ppm:>+9.4} ppm  worst {worst:>+10} ns",
            mono as f64 / 1e9,
        );
        if k * every >= seconds {
            println!(
                "final: elapsed {:.3} s, deviation {dev:+} ns = {ppm:+.4} ppm; worst |deviation| {} ns; worst |ppm| from 10 s on {:.4}",
                mono as f64 / 1e9,
                worst.abs(),
                worst_ppm_after_10s.abs()
            );
            break;
        }
        k += 1;
    }
}
