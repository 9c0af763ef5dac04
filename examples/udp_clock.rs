//! A sender whose clock is shifted: logs RATE user events a second for
//! SECONDS to a receiver at ADDR through a UDP queue that sends every
//! datagram it can each PERIOD_MS, its clock origin moved by SHIFT_MS
//! (`Clock::shifted`: what a machine whose wall clock is that far ahead
//! sends). A receiver's store aligns it with the others: its `streams` rows
//! show `clock_offset_ns` ≈ −SHIFT_MS ms (FORMAT.md 7.7).
//!
//! ```text
//! qtrace recv --listen 127.0.0.1:5510 --store store --duration 8
//! cargo run --example udp_clock 127.0.0.1:5510 5 2000 3000 &
//! cargo run --example udp_clock 127.0.0.1:5510 5 2000 0
//! qtrace sql store "SELECT sender, clock_offset_ns, clock_offset_bound_ns, clock_drift_ppm FROM streams"
//! ```

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use qtrace::classes::user;
use qtrace::clock::Clock;
use qtrace::queues::{DatagramsPerPeriod, Udp, UdpParams};
use qtrace::{Config, Tracer};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage =
        "usage: udp_clock ADDR SECONDS RATE SHIFT_MS [PERIOD_MS] (e.g. 127.0.0.1:5510 5 2000 3000)";
    let arg = |i: usize| args.get(i).ok_or(usage);
    let to: SocketAddr = arg(0)?.parse()?;
    let secs: u64 = arg(1)?.parse()?;
    let rate: u64 = arg(2)?.parse()?;
    let shift_ms: i64 = arg(3)?.parse()?;
    let period_ms: u64 = args.get(4).map_or(Ok(10), |s| s.parse())?;
    let clock = Clock::fast().shifted(shift_ms * 1_000_000);
    let tracer = Tracer::with_config(Config::default().with_clock(clock));
    let q = tracer.create_queue::<Udp>(
        UdpParams::to(to)
            .with_capacity(1 << 16)
            .with_period(Duration::from_millis(period_ms))
            .with_datagrams_per_period(DatagramsPerPeriod::All),
    )?;
    tracer.assign_class(user::CLASS, q)?;
    tracer.activate()?;
    let start = Instant::now();
    let mut logged = 0u64;
    while start.elapsed() < Duration::from_secs(secs) {
        // Catch up to RATE a second, then sleep a millisecond.
        let due = (start.elapsed().as_secs_f64() * rate as f64) as u64;
        while logged < due {
            tracer.log_event(user::USER0, [logged, 0]);
            logged += 1;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let report = tracer.shutdown()?;
    let c = report.queues[0].counters;
    println!(
        "sender (clock shifted {shift_ms} ms): {logged} events in {:.2} s, delivered {}, dropped {}",
        start.elapsed().as_secs_f64(),
        c.delivered,
        c.dropped
    );
    Ok(())
}
