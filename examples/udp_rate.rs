//! A free-running UDP sender: logs user events at a fixed RATE (events a
//! second) for SECONDS into a UDP queue sending to ADDR, the way a program
//! does — it never waits for the receiver, so what the receiver cannot take
//! is lost (in transit) or dropped (at the queue) and counted. Then prints
//! the sender's counters. Compact datagrams (FORMAT.md 2.7) unless `--32`;
//! datagrams of at most 1472 bytes (one Ethernet frame) unless
//! `--datagram-len N` (`UdpParams::with_max_datagram_len`: 8972 fits a
//! 9000-byte jumbo frame, and loopback's MTU is 65,536).
//!
//! ```text
//! qtrace recv --listen 127.0.0.1:5510 --out received.qtr --duration 10
//! cargo run --release --example udp_rate 127.0.0.1:5510 4000000 3
//! cargo run --release --example udp_rate 127.0.0.1:5510 4000000 3 --32
//! cargo run --release --example udp_rate 127.0.0.1:5510 30000000 2 --datagram-len 8972
//! qtrace keygen k.key && qtrace recv --listen 127.0.0.1:5510 --key-file k.key --out received.qtr --duration 10
//! cargo run --release --features keys --example udp_rate 127.0.0.1:5510 4000000 3 --key k.key
//! cargo run --release --example udp_rate --sizes     # bytes an event on the wire
//! ```
//!
//! The workload is a real-clock one (the tracer's monotonic clock, whatever
//! the rate): each step logs a task switch (`USER0`, task 0–7), a message
//! (`USER1`, a counter and a length) and, one in four, a semaphore-like
//! event (`USER2`, no argument). `--sizes` sends it at 1 M events/s for
//! 2 s to a socket of its own and prints the bytes an event of every
//! datagram (headers, catalog and close included) and of the events
//! datagrams alone, and the zero padding after compact chunks (FORMAT.md
//! 2.7): compact with segmentation offload (the default), compact without
//! it (`--no-offload` for a run), 32-byte.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use qtrace::classes::user;
use qtrace::queues::{DatagramsPerPeriod, Udp, UdpParams};
use qtrace::wire::datagram::{DatagramKind, DatagramView, HEADER_LEN};
use qtrace::Tracer;
use qtrace_core::compact::Chunk;

/// What the sender did.
struct Sent {
    logged: u64,
    dropped: u64,
    sent: u64,
    datagrams: u64,
    secs: f64,
}

/// How the sender's queue sends.
struct Form<'a> {
    compact: bool,
    key: Option<&'a str>,
    datagram_len: usize,
    offload: bool,
}

impl Form<'_> {
    /// Compact, unkeyed, the queue's default datagram size.
    fn new() -> Self {
        Form {
            compact: true,
            key: None,
            datagram_len: UdpParams::default().max_datagram_len(),
            offload: UdpParams::default().segmentation_offload(),
        }
    }
}

/// Logs `rate` events a second for `secs` into a UDP queue to `to`, in
/// datagrams of `form` (keyed with the key in the file `form.key` if one
/// is given).
fn send(
    to: SocketAddr,
    rate: u64,
    secs: f64,
    form: &Form,
) -> Result<Sent, Box<dyn std::error::Error>> {
    let tracer = Tracer::new();
    let params = UdpParams::to(to)
        .with_capacity(1 << 20)
        .with_period(Duration::from_millis(1))
        .with_high_water_percent(10)
        .with_datagrams_per_period(DatagramsPerPeriod::All)
        .with_compact(form.compact)
        .with_max_datagram_len(form.datagram_len)
        .with_segmentation_offload(form.offload);
    let params = match form.key {
        None => params,
        #[cfg(feature = "keys")]
        Some(file) => params.with_key(qtrace::wire::DatagramKey::from_file(file)?),
        #[cfg(not(feature = "keys"))]
        Some(_) => return Err("--key needs the example built with --features keys".into()),
    };
    let q = tracer.create_queue::<Udp>(params)?;
    tracer.assign_class(user::CLASS, q)?;
    tracer.activate()?;
    let total = (rate as f64 * secs) as u64;
    let start = Instant::now();
    let mut i = 0u64;
    while i < total {
        // Catch up with the clock, then sleep a moment (a program at a
        // fixed rate leaves its core to others): never waiting for
        // anything but time.
        let due = ((start.elapsed().as_secs_f64() * rate as f64) as u64).min(total);
        while i < due {
            match i % 4 {
                0 | 2 => tracer.log_event(user::USER0, [i / 4 % 8, 0]),
                1 => tracer.log_event(user::USER1, [i / 4, 64 + i % 200]),
                _ => tracer.log_event(user::USER2, [0, 0]),
            }
            i += 1;
        }
        std::thread::sleep(Duration::from_micros(50));
    }
    let elapsed = start.elapsed().as_secs_f64();
    let udp = tracer.queue(q)?.as_udp().map(|u| u.stats());
    let report = tracer.shutdown()?;
    let c = report.queues[0].counters;
    let udp = udp.ok_or("not a UDP queue")?;
    Ok(Sent {
        logged: total,
        dropped: c.dropped,
        sent: udp.events_sent,
        datagrams: udp.event_datagrams,
        secs: elapsed,
    })
}

/// `--sizes`: bytes an event on the wire, compact and 32-byte.
fn sizes() -> Result<(), Box<dyn std::error::Error>> {
    // Compact with segmentation offload (the default: full datagrams
    // padded to one length), compact without it, 32-byte.
    for (compact, offload) in [(true, true), (true, false), (false, true)] {
        let sink = UdpSocket::bind("127.0.0.1:0")?;
        sink.set_read_timeout(Some(Duration::from_millis(300)))?;
        let to = sink.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let counts: Arc<[AtomicU64; 5]> = Arc::new(Default::default());
        let reader = {
            let (stop, counts) = (Arc::clone(&stop), Arc::clone(&counts));
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 65536];
                loop {
                    match sink.recv(&mut buf) {
                        Ok(n) => {
                            // all bytes, events-datagram bytes, events, datagrams
                            counts[0].fetch_add(n as u64, Ordering::Relaxed);
                            counts[3].fetch_add(1, Ordering::Relaxed);
                            if let Ok(v) = DatagramView::new_checked(&buf[..n]) {
                                if v.kind() == DatagramKind::Events {
                                    counts[1].fetch_add(n as u64, Ordering::Relaxed);
                                    counts[2].fetch_add(v.record_count() as u64, Ordering::Relaxed);
                                    // Zero padding after a compact chunk (FORMAT.md 2.7).
                                    if let Ok(c) = Chunk::new_checked(&buf[HEADER_LEN..n]) {
                                        counts[4].fetch_add(
                                            (n - HEADER_LEN - c.len()) as u64,
                                            Ordering::Relaxed,
                                        );
                                    }
                                }
                            }
                        }
                        Err(_) if stop.load(Ordering::Relaxed) => break,
                        Err(_) => {}
                    }
                }
            })
        };
        let form = Form {
            compact,
            offload,
            ..Form::new()
        };
        let s = send(to, 1_000_000, 2.0, &form)?;
        stop.store(true, Ordering::Relaxed);
        reader.join().map_err(|_| "reader panicked")?;
        let [all, ev_bytes, events, datagrams, padding] =
            [0, 1, 2, 3, 4].map(|i| counts[i].load(Ordering::Relaxed));
        println!(
            "{}{}: {} events sent, {events} received in {datagrams} datagrams; {:.2} B/event (every datagram), {:.2} B/event (events datagrams), {:.0} events/datagram, {padding} bytes of padding ({:.2} % of all)",
            if compact { "compact" } else { "32-byte" },
            if offload { "" } else { ", no offload" },
            s.sent,
            all as f64 / events.max(1) as f64,
            ev_bytes as f64 / events.max(1) as f64,
            events as f64 / s.datagrams.max(1) as f64,
            padding as f64 * 100.0 / all.max(1) as f64,
        );
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--sizes") {
        return sizes();
    }
    let usage = "usage: udp_rate ADDR RATE SECONDS [--32] [--key FILE] [--datagram-len N] [--no-offload] (e.g. 127.0.0.1:5510 4000000 3), or udp_rate --sizes";
    let (Some(to), Some(rate), Some(secs)) = (args.get(1), args.get(2), args.get(3)) else {
        return Err(usage.into());
    };
    let to: SocketAddr = to.parse().map_err(|e| format!("{usage}: ADDR: {e}"))?;
    let rate: u64 = rate.parse().map_err(|e| format!("{usage}: RATE: {e}"))?;
    let secs: f64 = secs.parse().map_err(|e| format!("{usage}: SECONDS: {e}"))?;
    let mut form = Form::new();
    let mut rest = args[4..].iter();
    while let Some(a) = rest.next() {
        match a.as_str() {
            "--32" => form.compact = false,
            "--no-offload" => form.offload = false,
            "--key" => form.key = Some(rest.next().ok_or(usage)?.as_str()),
            "--datagram-len" => {
                let n = rest.next().ok_or(usage)?;
                form.datagram_len = n
                    .parse()
                    .map_err(|e| format!("{usage}: --datagram-len: {e}"))?;
            }
            other => return Err(format!("{usage}: {other}: not an option").into()),
        }
    }
    let s = send(to, rate, secs, &form)?;
    println!(
        "sender ({}{}{}, datagrams of at most {} bytes): {} events logged in {:.3} s ({:.2} M events/s), {} sent in {} datagrams, {} dropped at the queue",
        if form.compact { "compact" } else { "32-byte" },
        if form.key.is_some() { ", keyed" } else { "" },
        if form.offload { "" } else { ", no offload" },
        form.datagram_len,
        s.logged,
        s.secs,
        s.logged as f64 / s.secs / 1e6,
        s.sent,
        s.datagrams,
        s.dropped
    );
    Ok(())
}
