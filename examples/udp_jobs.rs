//! Streams JOBS jobs of tasks 1, 2 and 3 (an `activate`, then an `endcycle`
//! of the same task) to a receiver at ADDR as sender SENDER, each sender
//! with response times of its own; halfway through, BURST `user0` events
//! logged as fast as it can into a small queue, which drops some of them
//! (counted; the receiver writes the count as `hoops` losses, and the jobs
//! pending then are `lossy`). Prints the sender's
//! counters. The load of scripts/spark.sh, for `qtrace recv --store`:
//!
//! ```text
//! qtrace recv --listen 127.0.0.1:5510 --store store --duration 20
//! cargo run --release --example udp_jobs 127.0.0.1:5510 701 20000 200000
//! ```
//!
//! The sender's clock is a manual one set before each job event: job `j`
//! of task `t` is activated at `10 µs × j + 100 ns × t` and ends
//! `response(SENDER, t, j)` ns later, so the figures do not depend on the
//! machine's load. The burst's events all carry the time of the job event
//! they come before.

use std::net::SocketAddr;
use std::time::Duration;

use qtrace::classes::{system, user};
use qtrace::clock::{Clock, ManualClock};
use qtrace::queues::{DatagramsPerPeriod, Udp, UdpParams};
use qtrace::{Config, Tracer};

/// Sender `s`'s response time of task `task`'s job `j`, in ns.
fn response(s: u64, task: u64, j: u64) -> u64 {
    500 * (s % 10 + 1) * task + 37 * ((j * (s % 7 + 3)) % 101)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: udp_jobs ADDR SENDER JOBS BURST (e.g. 127.0.0.1:5510 701 20000 200000)";
    let (Some(to), Some(id), Some(jobs), Some(burst)) =
        (args.get(1), args.get(2), args.get(3), args.get(4))
    else {
        return Err(usage.into());
    };
    let to: SocketAddr = to.parse().map_err(|e| format!("{usage}: ADDR: {e}"))?;
    let id: u32 = id.parse().map_err(|e| format!("{usage}: SENDER: {e}"))?;
    let jobs: u64 = jobs.parse().map_err(|e| format!("{usage}: JOBS: {e}"))?;
    let burst: u64 = burst.parse().map_err(|e| format!("{usage}: BURST: {e}"))?;
    let clock = ManualClock::new(0);
    let tracer = Tracer::with_config(Config::default().with_clock(Clock::manual(&clock)));
    let q = tracer.create_queue::<Udp>(
        UdpParams::to(to)
            .with_capacity(4096)
            .with_period(Duration::from_millis(1))
            .with_datagrams_per_period(DatagramsPerPeriod::All)
            .with_sender_id(id),
    )?;
    tracer.assign_class(system::CLASS, q)?;
    tracer.assign_class(user::CLASS, q)?;
    tracer.activate()?;
    let s = u64::from(id);
    // (time, 0 = activate / 1 = endcycle, task) in time order; an endcycle
    // and an activate at one time: the endcycle first.
    let mut steps = Vec::with_capacity(jobs as usize * 6);
    for j in 0..jobs {
        for task in 1..=3 {
            let t = 10_000 * j + 100 * task;
            steps.push((t, 0, task));
            steps.push((t + response(s, task, j), 1, task));
        }
    }
    steps.sort_by_key(|&(t, kind, task)| (t, 1 - kind, task));
    let half = steps.len() / 2;
    for (i, (t, kind, task)) in steps.into_iter().enumerate() {
        clock.set(t);
        if i == half {
            // The burst, all at this time, with jobs pending: their
            // endcycles come after the burst's losses (`lossy` jobs).
            std::thread::sleep(Duration::from_millis(20));
            for b in 0..burst {
                tracer.log_event(user::USER0, [b, s]);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let event = if kind == 0 {
            system::ACTIVATE
        } else {
            system::ENDCYCLE
        };
        tracer.log_event(event, [task, 0]);
        // 3,000 events then a pause: well under the queue's 4,096.
        if i % 3_000 == 2_999 {
            std::thread::sleep(Duration::from_millis(3));
        }
    }
    std::thread::sleep(Duration::from_millis(20));
    let report = tracer.shutdown()?;
    let c = report.queues[0].counters;
    println!(
        "sender {id}: {} events logged, delivered {}, dropped {}",
        jobs * 6 + burst,
        c.delivered,
        c.dropped
    );
    Ok(())
}
