//! `qtrace recv --out`'s two file forms side by side: a UDP queue streams N
//! events over loopback to a receiver thread writing a trace file
//! (`Receiver::run`) in compact chunks (the default,
//! `ReceiverConfig::compact_file`) or in 32-byte records (`--32`),
//! alternating, R rounds. The sender never runs more than 16384 events
//! ahead of what the receiver has taken, so nothing is lost (checked every
//! round): the rate is the receiver's sustainable one, first event logged
//! to the file closed. Prints each round's events/s and the file's bytes an
//! event after its header.
//!
//! ```text
//! cargo run --release --example recv_file_forms -- 2000000 3
//! ```

use std::net::SocketAddr;
use std::thread;
use std::time::{Duration, Instant};

use qtrace::classes::user;
use qtrace::queues::{DatagramsPerPeriod, Udp, UdpParams};
use qtrace::reader::TraceReader;
use qtrace::receiver::{Receiver, ReceiverConfig, RunLimit};
use qtrace::Tracer;

const LEAD: u64 = 16_384;

/// One round: events/s to the file closed, and bytes an event after the
/// header.
fn round(events: u64, compact: bool, dir: &std::path::Path) -> (f64, f64) {
    let config = ReceiverConfig {
        compact_file: compact,
        ..ReceiverConfig::default()
    };
    let receiver = Receiver::bind_with(SocketAddr::from(([127, 0, 0, 1], 0)), config).unwrap();
    let addr = receiver.local_addr();
    let progress = receiver.progress();
    let path = dir.join(if compact { "compact.qtr" } else { "r32.qtr" });
    let limit = RunLimit::events(events).or_after(Duration::from_secs(120));
    let rx = {
        let path = path.clone();
        thread::Builder::new()
            .name("receiver".into())
            .spawn(move || (receiver.run(&path, limit).unwrap(), Instant::now()))
            .unwrap()
    };
    let tracer = Tracer::new();
    let q = tracer
        .create_queue::<Udp>(
            UdpParams::to(addr)
                .with_capacity(1 << 16)
                .with_period(Duration::from_millis(1))
                .with_datagrams_per_period(DatagramsPerPeriod::All)
                .with_high_water_percent(50),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer.activate().unwrap();
    let start = Instant::now();
    for i in 0..events {
        if i % 1024 == 0 {
            while progress.events() + LEAD < i {
                thread::yield_now();
            }
        }
        tracer.log_event(user::USER0, [i, i & 0xff]);
    }
    tracer.shutdown().unwrap();
    let (summary, closed) = rx.join().unwrap();
    assert_eq!(summary.events(), events, "loss at the receiver");
    assert_eq!(summary.lost_datagrams() + summary.sender_dropped(), 0);
    let reader = TraceReader::open(&path).unwrap();
    assert_eq!(reader.header().is_compact(), compact);
    let body = std::fs::metadata(&path).unwrap().len() - reader.header_len();
    let _ = std::fs::remove_file(&path);
    let n = events as f64;
    (n / (closed - start).as_secs_f64(), body as f64 / n)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let events: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(2_000_000);
    let rounds: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(3);
    let dir = tempfile::tempdir().unwrap();
    println!("round\tform\tM events/s\tB/event");
    for r in 0..rounds {
        for compact in [true, false] {
            let (rate, bytes) = round(events, compact, dir.path());
            let form = if compact { "compact" } else { "32-byte" };
            println!("{r}\t{form}\t{:.2}\t{bytes:.2}", rate / 1e6);
        }
    }
}
