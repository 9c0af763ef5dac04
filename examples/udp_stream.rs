//! A sender streaming events over UDP to a receiver on 127.0.0.1, in one
//! process, with the summary of both sides.
//!
//! ```text
//! cargo run --release --example udp_stream [EVENTS] [OUTPUT_DIR]
//! ```
//!
//! The receiver is the library form of `qtrace recv`; to receive in another
//! terminal instead, run `cargo run --release -p qtrace-cli -- recv --out received.qtr`
//! and point a UDP queue at `127.0.0.1:5510`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::thread;
use std::time::{Duration, Instant};

use qtrace::classes::{system, user};
use qtrace::queues::{DatagramsPerPeriod, Udp, UdpParams};
use qtrace::receiver::{Receiver, RunLimit};
use qtrace::Tracer;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let events: u64 = match std::env::args().nth(1) {
        Some(n) => n.parse()?,
        None => 200_000,
    };
    let dir = std::env::args_os()
        .nth(2)
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("QTRACE_DIR").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("qtrace-out"));
    let out = dir.join("udp-received.qtr");

    // The receiver: loopback, a port the system picks.
    let receiver = Receiver::bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
    let addr = receiver.local_addr();
    let progress = receiver.progress();
    let stop = receiver.stopper();
    let rx = {
        let out = out.clone();
        thread::spawn(move || receiver.run(&out, RunLimit::duration(Duration::from_secs(60))))
    };

    // The sender: a UDP queue for the system and user classes, sending
    // whatever is queued every millisecond (and early at 50 % full).
    let tracer = Tracer::new();
    let q = tracer.create_queue::<Udp>(
        UdpParams::to(addr)
            .with_capacity(1 << 16)
            .with_period(Duration::from_millis(1))
            .with_datagrams_per_period(DatagramsPerPeriod::All)
            .with_high_water_percent(50),
    )?;
    tracer.assign_class(system::CLASS, q)?;
    tracer.assign_class(user::CLASS, q)?;
    tracer.activate()?;

    let start = Instant::now();
    for i in 0..events {
        // Stay within what the receiver's socket buffer can absorb.
        while progress.events() + progress.sender_dropped() + 16_384 < 2 * i {
            thread::yield_now();
        }
        let task = i % 16;
        tracer.log_event(system::SCHEDULE, [task, 0]);
        tracer.log_event(user::USER0, [task, i]);
    }
    let logged = 2 * events;
    let report = tracer.shutdown()?;
    // Wait (bounded) for the last datagrams, then stop the receiver.
    let deadline = Instant::now() + Duration::from_secs(10);
    while progress.events() + progress.sender_dropped() < logged && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(1));
    }
    let elapsed = start.elapsed();
    stop.stop();
    let summary = rx.join().expect("receiver thread")?;

    let q0 = &report.queues[0];
    let stats = tracer.queue(q)?.as_udp().expect("a UDP queue").stats();
    println!("sender (queue {} -> {addr}):", q0.handle);
    println!(
        "  logged {logged}, accepted {}, dropped {}, sent {} events in {} event datagrams + {} catalog datagrams",
        q0.counters.accepted,
        q0.counters.dropped,
        stats.events_sent,
        stats.event_datagrams,
        stats.catalog_datagrams
    );
    println!(
        "  refused {}, send errors {}, send buffer full {} times",
        stats.refused, stats.send_errors, stats.would_block
    );
    println!("receiver:");
    println!("  {}", summary.to_string().replace('\n', "\n  "));
    println!(
        "end to end: {:.0} events/s; received + reported lost = {} of {logged} logged",
        summary.events() as f64 / elapsed.as_secs_f64(),
        summary.events() + summary.sender_dropped()
    );
    println!(
        "\nread it with:\n  cargo run --release -p qtrace-cli -- dump {}",
        out.display()
    );
    Ok(())
}
