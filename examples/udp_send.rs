//! Streams EVENTS user events to a receiver at ADDR from a UDP queue
//! (1 MiB events of room, every datagram it can each 1 ms), BATCH at a time
//! with a 1 ms pause between batches (so at most BATCH thousand events a
//! second), then prints the sender's counters. A load for `qtrace recv`
//! and `qtrace live --listen` in another terminal:
//!
//! ```text
//! qtrace recv --listen 127.0.0.1:5510 --out received.qtr --count 5000000 --live
//! cargo run --release --example udp_send 127.0.0.1:5510 5000000 8000
//! ```

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use qtrace::classes::user;
use qtrace::queues::{DatagramsPerPeriod, Udp, UdpParams};
use qtrace::Tracer;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: udp_send ADDR EVENTS BATCH (e.g. 127.0.0.1:5510 5000000 8000)";
    let (Some(to), Some(n), Some(batch)) = (args.get(1), args.get(2), args.get(3)) else {
        return Err(usage.into());
    };
    let to: SocketAddr = to.parse().map_err(|e| format!("{usage}: ADDR: {e}"))?;
    let n: u64 = n.parse().map_err(|e| format!("{usage}: EVENTS: {e}"))?;
    let batch: u64 = batch.parse().map_err(|e| format!("{usage}: BATCH: {e}"))?;
    let tracer = Tracer::new();
    let q = tracer.create_queue::<Udp>(
        UdpParams::to(to)
            .with_capacity(1 << 20)
            .with_period(Duration::from_millis(1))
            .with_datagrams_per_period(DatagramsPerPeriod::All),
    )?;
    tracer.assign_class(user::CLASS, q)?;
    tracer.activate()?;
    let start = Instant::now();
    for i in 0..n {
        tracer.log_event(user::USER0, [i, 0]);
        if batch > 0 && (i + 1) % batch == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let logged = start.elapsed();
    let report = tracer.shutdown()?;
    let c = report.queues[0].counters;
    println!(
        "sender: {n} events logged in {:.3} s ({:.2} M events/s), delivered {}, dropped {}",
        logged.as_secs_f64(),
        n as f64 / logged.as_secs_f64() / 1e6,
        c.delivered,
        c.dropped
    );
    Ok(())
}
