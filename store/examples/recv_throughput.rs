//! `recv --store` against `recv --out`, side by side: a UDP queue streams
//! N events over loopback to a receiver thread that writes either a trace
//! file (`Receiver::run`) or the Parquet store (`Receiver::run_streams`
//! into `Store`), alternating, R rounds. The sender never runs more than
//! 16384 events ahead of what the receiver has taken, so nothing is lost
//! (checked every round): the rate is the receiver's sustainable one.
//! Also the peak resident memory of the process after all rounds.
//!
//! ```text
//! cargo run --release -p qtrace-store --example recv_throughput -- 2000000 3
//! cargo run --release -p qtrace-store --example recv_throughput -- 4000000 1 4GiB store
//! cargo run --release -p qtrace-store --example recv_throughput -- 2000000 3 64MiB both 65507
//! ```
//!
//! The third argument is the roll size (64MiB by default: `16MiB`, `4GiB`,
//! bytes); the fourth, `store` or `file`, runs that side only (to compare
//! peak memory across roll sizes), `both` both; the fifth is the sender's
//! largest datagram (`UdpParams::with_max_datagram_len`: 1472 by default,
//! Ethernet's; 65507 is the most a loopback sender can send, a sixteenth
//! of the system calls a second on either side).

use std::net::SocketAddr;
use std::thread;
use std::time::{Duration, Instant};

use qtrace::classes::user;
use qtrace::queues::{DatagramsPerPeriod, Udp, UdpParams};
use qtrace::receiver::{Receiver, RunLimit};
use qtrace::Tracer;
use qtrace_store::{Store, StoreConfig};

const LEAD: u64 = 16_384;

/// One round: events/s from the first event logged to the last received,
/// and to the output closed.
fn round(
    events: u64,
    store: bool,
    roll: u64,
    datagram: usize,
    dir: &std::path::Path,
) -> (f64, f64) {
    let mut receiver = Receiver::bind(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
    let addr = receiver.local_addr();
    let progress = receiver.progress();
    let out = dir.to_path_buf();
    let limit = RunLimit::events(events).or_after(Duration::from_secs(120));
    let rx = thread::Builder::new()
        .name("receiver".into())
        .spawn(move || {
            if store {
                let mut s = Store::open(
                    &out.join("store"),
                    StoreConfig {
                        roll_bytes: Some(roll),
                        roll_age: Some(Duration::from_secs(60)),
                        ..StoreConfig::default()
                    },
                )
                .unwrap();
                let summary = receiver.run_streams(limit, &mut s).unwrap();
                let report = s.finish(&summary).unwrap();
                (summary, Instant::now(), report.bytes)
            } else {
                let summary = receiver.run(out.join("r.qtr"), limit).unwrap();
                let bytes = std::fs::metadata(out.join("r.qtr")).map_or(0, |m| m.len());
                (summary, Instant::now(), bytes)
            }
        })
        .unwrap();
    let tracer = Tracer::new();
    let q = tracer
        .create_queue::<Udp>(
            UdpParams::to(addr)
                .with_capacity(1 << 16)
                .with_period(Duration::from_millis(1))
                .with_datagrams_per_period(DatagramsPerPeriod::All)
                .with_high_water_percent(50)
                .with_max_datagram_len(datagram),
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
    while progress.events() < events {
        thread::sleep(Duration::from_micros(100));
    }
    let received = start.elapsed();
    tracer.shutdown().unwrap();
    let (summary, closed, bytes) = rx.join().unwrap();
    assert_eq!(summary.events(), events, "loss at the receiver");
    assert_eq!(summary.lost_datagrams() + summary.sender_dropped(), 0);
    let _ = bytes;
    let n = events as f64;
    (
        n / received.as_secs_f64(),
        n / (closed - start).as_secs_f64(),
    )
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let events: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(2_000_000);
    let rounds: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(3);
    let roll = args.next().map_or(64 << 20, |a| {
        let (n, unit) = a.split_at(a.find(|c: char| !c.is_ascii_digit()).unwrap_or(a.len()));
        let n: u64 = n.parse().expect("a roll size: 64MiB, 4GiB or bytes");
        n * match unit {
            "KiB" => 1 << 10,
            "MiB" => 1 << 20,
            "GiB" => 1 << 30,
            _ => 1,
        }
    });
    let sides: Vec<bool> = match args.next().as_deref() {
        Some("store") => vec![true],
        Some("file") => vec![false],
        _ => vec![false, true],
    };
    let datagram: usize = args
        .next()
        .map_or(1472, |a| a.parse().expect("a datagram length: 72 to 65507"));
    for r in 0..rounds {
        for &store in &sides {
            let dir = std::env::temp_dir()
                .join(format!("qtrace-recv-tp-{}-{r}-{store}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let (rx, closed) = round(events, store, roll, datagram, &dir);
            println!(
                "round {r} {:>6}: {:.2} M events/s received, {:.2} M events/s to the output closed, 0 lost",
                if store { "store" } else { "file" },
                rx / 1e6,
                closed / 1e6
            );
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    println!("peak RSS {} KiB", peak_rss_kib().unwrap_or(0));
}
