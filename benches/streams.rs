//! Streaming throughput: UDP events/s over loopback at zero loss, and the
//! circular-online queue's drain to a file in MB/s of records.
//!
//! ```text
//! cargo bench --bench streams
//! ```
//!
//! - `streams/udp_loopback`: a UDP queue (65536 events, every 1 ms, sending
//!   all that is queued, early at 50 %, segmentation offload on Linux)
//!   streams 1,000,000 events to a receiver thread on 127.0.0.1 that spools
//!   to a file; the producer never runs more than 16384 events ahead of the
//!   receiver, so nothing is lost (checked on every iteration). (A lower
//!   high-water mark wakes the sender more often with smaller batches: on
//!   this 2-core machine that halves the rate.) Time: first
//!   event logged to last event received (not the receiver's file writing).
//!   Datagrams of at most 1472 bytes (44 records, the Ethernet default).
//! - `streams/udp_loopback_jumbo`: the same with 8972-byte datagrams (279
//!   records, a 9000-byte jumbo-frame MTU).
//! - `streams/udp_loopback_keyed` (feature `keys`, run right after
//!   `udp_loopback`): the same stream keyed (FORMAT.md 2.6: the send task
//!   computes an HMAC-SHA256 tag per datagram, the receiver checks it),
//!   still 44 records a datagram. Both print the receiver thread's CPU time
//!   per datagram (`CLOCK_THREAD_CPUTIME_ID` around its run).
//! - `streams/receiver_core` and `streams/receiver_core_keyed` (feature
//!   `keys`): the receiver's logic alone, no socket: 4096 datagrams of 44
//!   records of one sender handed to a `ReceiverCore`, unkeyed and keyed —
//!   the receiver's CPU per datagram without the system call.
//! - `streams/online_drain`: 262144 events are logged into a circular-online
//!   queue before phase 2; the time from activation until the drain task has
//!   written them all to the file is the drain's speed, in events/s (the
//!   default compact file, FORMAT.md 1.11; `online_drain_32`: the same with
//!   `OnlineParams::with_compact(false)`, 32 bytes a record, side by side).
//!   Each also prints the drain task's CPU an event (its thread's time on
//!   CPU from `/proc/self/task/*/schedstat`, activation included): the
//!   drain's cost at the same CPU, which the wall-clock rate alone hides.
//! - `streams/online_pipeline` (and `online_pipeline_32`): a producer logs
//!   262144 events while the drain task writes them (the producer waits when
//!   the queue is 3/4 full), so nothing is dropped (checked).
//!
//! Only the online cases: `cargo bench --bench streams -- online`.

use std::net::SocketAddr;
use std::thread;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use qtrace::classes::user;
use qtrace::queues::{DatagramsPerPeriod, Online, OnlineParams, Udp, UdpParams};
use qtrace::receiver::{Receiver, ReceiverConfig, ReceiverCore, RunLimit};
use qtrace::wire::datagram;
use qtrace::{Config, Tracer};

const UDP_EVENTS: u64 = 1_000_000;
/// How far the producer may run ahead of the receiver: 16384 events are
/// about 365 datagrams, well within the receiver's 8 MiB socket buffer.
const LEAD: u64 = 16_384;
const DRAIN_EVENTS: u64 = 1 << 18;

fn out_dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("qtrace-bench-streams-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The key of the keyed cases.
#[cfg(feature = "keys")]
fn key() -> qtrace::wire::DatagramKey {
    qtrace::wire::DatagramKey::from_bytes([0x42; 32])
}

/// The calling thread's CPU time.
fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec the call writes into.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Receiver thread CPU time and datagrams, summed over the runs of a case.
#[derive(Default)]
struct Cpu {
    time: Duration,
    datagrams: u64,
}

impl Cpu {
    fn report(&self, case: &str) {
        if self.datagrams > 0 {
            eprintln!(
                "streams/{case}: receiver thread CPU {:.3} us per datagram ({} datagrams)",
                self.time.as_secs_f64() * 1e6 / self.datagrams as f64,
                self.datagrams
            );
        }
    }
}

fn udp_once(events: u64, max_datagram_len: usize, keyed: bool, cpu: &mut Cpu) -> Duration {
    #[allow(unused_mut)]
    let mut config = ReceiverConfig::default();
    #[cfg(feature = "keys")]
    if keyed {
        config.keys = vec![key()];
    }
    let receiver = Receiver::bind_with(SocketAddr::from(([127, 0, 0, 1], 0)), config).unwrap();
    let addr = receiver.local_addr();
    let progress = receiver.progress();
    let path = out_dir().join("udp.qtr");
    let rx = thread::spawn(move || {
        let before = thread_cpu();
        let summary = receiver
            .run(
                &path,
                RunLimit::events(events).or_after(Duration::from_secs(60)),
            )
            .unwrap();
        (summary, thread_cpu() - before)
    });
    #[allow(unused_mut)]
    let mut params = UdpParams::to(addr)
        .with_capacity(1 << 16)
        .with_period(Duration::from_millis(1))
        .with_datagrams_per_period(DatagramsPerPeriod::All)
        .with_high_water_percent(50)
        .with_max_datagram_len(max_datagram_len);
    #[cfg(feature = "keys")]
    if keyed {
        params = params.with_key(key());
    }
    assert!(cfg!(feature = "keys") || !keyed);
    let tracer = Tracer::new();
    let q = tracer.create_queue::<Udp>(params).unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer.activate().unwrap();
    let start = Instant::now();
    for i in 0..events {
        if i % 1024 == 0 {
            while progress.events() + LEAD < i {
                thread::yield_now();
            }
        }
        tracer.log_event(user::USER0, [i, 0]);
    }
    // Time to the last event received (the receiver then writes its file,
    // which is not part of the stream).
    while progress.events() < events {
        thread::sleep(Duration::from_micros(100));
    }
    let elapsed = start.elapsed();
    let (summary, receiver_cpu) = rx.join().unwrap();
    tracer.shutdown().unwrap();
    assert_eq!(summary.events(), events, "loss at the receiver");
    assert_eq!(summary.lost_datagrams() + summary.sender_dropped(), 0);
    assert_eq!(summary.invalid.rejected.total(), 0);
    assert_eq!(summary.senders[0].key_id.is_some(), keyed);
    cpu.time += receiver_cpu;
    cpu.datagrams += summary.senders.iter().map(|s| s.datagrams).sum::<u64>();
    elapsed
}

/// 4096 events datagrams of 44 records of sender 1, keyed or not.
fn datagrams(keyed: bool) -> Vec<Vec<u8>> {
    let events: Vec<qtrace::Event> = (0..44)
        .map(|i| qtrace::Event::new(i, user::USER0, 0, [i, 0]))
        .collect();
    (0..4096u64)
        .map(|seq| {
            let mut buf = vec![0u8; 1472];
            let (len, _) = datagram::encode_events(&mut buf, 1, seq, 0, seq * 44, &events).unwrap();
            #[cfg(feature = "keys")]
            let len = if keyed {
                datagram::keyed::seal(&key(), 1, &mut buf, len).unwrap()
            } else {
                len
            };
            assert!(cfg!(feature = "keys") || !keyed);
            buf.truncate(len);
            buf
        })
        .collect()
}

/// The receiver's logic on `datagrams`, in a fresh core each time.
fn core_once(datagrams: &[Vec<u8>], keyed: bool) -> Duration {
    #[allow(unused_mut)]
    let mut config = ReceiverConfig::default();
    #[cfg(feature = "keys")]
    if keyed {
        config.keys = vec![key()];
    }
    let _ = keyed;
    let mut core = ReceiverCore::new(config);
    let from = SocketAddr::from(([127, 0, 0, 1], 40000));
    let mut n = 0u64;
    let start = Instant::now();
    for d in datagrams {
        core.handle(from, d, &mut |_| n += 1);
    }
    let elapsed = start.elapsed();
    assert_eq!(n, datagrams.len() as u64 * 44);
    elapsed
}

/// The drain tasks' CPU over a bench case: the online queue's task
/// thread's time on CPU (Linux: `/proc/self/task/*/schedstat`), summed over
/// runs, and the events it wrote.
#[derive(Default)]
struct DrainCpu {
    time: Duration,
    events: u64,
}

impl DrainCpu {
    fn report(&self, case: &str) {
        if self.events > 0 && !self.time.is_zero() {
            eprintln!(
                "streams/{case}: drain task CPU {:.2} ns per event ({} events)",
                self.time.as_secs_f64() * 1e9 / self.events as f64,
                self.events
            );
        }
    }
}

/// The time on CPU so far of this process's online-queue drain threads
/// (named `qtrace-online-…`), from the kernel's scheduler statistics;
/// zero where there are none.
fn online_task_cpu() -> Duration {
    let mut ns = 0u64;
    if let Ok(dir) = std::fs::read_dir("/proc/self/task") {
        for t in dir.flatten() {
            let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
            if comm.starts_with("qtrace-online") {
                let stat = std::fs::read_to_string(t.path().join("schedstat")).unwrap_or_default();
                ns += stat
                    .split_whitespace()
                    .next()
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
    }
    Duration::from_nanos(ns)
}

fn drain_once(events: u64, compact: bool, cpu: &mut DrainCpu) -> Duration {
    let tracer = Tracer::with_config(Config::default().with_output_dir(out_dir()));
    let q = tracer
        .create_queue::<Online>(
            OnlineParams::default()
                .with_capacity(events as usize)
                .with_period(Duration::from_millis(1))
                .with_compact(compact),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    for i in 0..events {
        tracer.log_event(user::USER0, [i, 0]);
    }
    let start = Instant::now();
    tracer.activate().unwrap();
    // Poll without spinning: on a small machine a spinning poller takes the
    // drain task's CPU.
    while tracer.counters(q).unwrap().delivered < events {
        thread::sleep(Duration::from_micros(100));
    }
    let elapsed = start.elapsed();
    // The task is still alive (it sleeps until its next period): its time
    // on CPU is the drain's, activation and file creation included.
    cpu.time += online_task_cpu();
    cpu.events += events;
    let report = tracer.shutdown().unwrap();
    assert_eq!(report.queues[0].counters.delivered, events);
    elapsed
}

fn pipeline_once(events: u64, compact: bool) -> Duration {
    let tracer = Tracer::with_config(Config::default().with_output_dir(out_dir()));
    let capacity = 1 << 16;
    let q = tracer
        .create_queue::<Online>(
            OnlineParams::default()
                .with_capacity(capacity)
                .with_period(Duration::from_millis(1))
                .with_high_water_percent(25)
                .with_compact(compact),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer.activate().unwrap();
    let start = Instant::now();
    for i in 0..events {
        if i % 4096 == 0 {
            while {
                let c = tracer.counters(q).unwrap();
                c.queued > (capacity as u64 * 3 / 4)
            } {
                thread::yield_now();
            }
        }
        tracer.log_event(user::USER0, [i, 0]);
    }
    // Poll without spinning: on a small machine a spinning poller takes the
    // drain task's CPU.
    while tracer.counters(q).unwrap().delivered < events {
        thread::sleep(Duration::from_micros(100));
    }
    let elapsed = start.elapsed();
    let report = tracer.shutdown().unwrap();
    assert_eq!(report.queues[0].counters.dropped, 0, "the producer waited");
    elapsed
}

fn streams(c: &mut Criterion) {
    let mut g = c.benchmark_group("streams");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    g.throughput(Throughput::Elements(UDP_EVENTS));
    let mut cpu = Cpu::default();
    g.bench_function("udp_loopback", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| udp_once(UDP_EVENTS, 1472, false, &mut cpu))
                .sum()
        })
    });
    cpu.report("udp_loopback");
    #[cfg(feature = "keys")]
    {
        let mut cpu = Cpu::default();
        g.bench_function("udp_loopback_keyed", |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| udp_once(UDP_EVENTS, 1472, true, &mut cpu))
                    .sum()
            })
        });
        cpu.report("udp_loopback_keyed");
    }
    g.bench_function("udp_loopback_jumbo", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| udp_once(UDP_EVENTS, 8972, false, &mut Cpu::default()))
                .sum()
        })
    });
    let plain = datagrams(false);
    g.throughput(Throughput::Elements(plain.len() as u64));
    g.bench_function("receiver_core", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| core_once(&plain, false)).sum())
    });
    #[cfg(feature = "keys")]
    {
        let keyed = datagrams(true);
        g.bench_function("receiver_core_keyed", |b| {
            b.iter_custom(|iters| (0..iters).map(|_| core_once(&keyed, true)).sum())
        });
    }
    g.throughput(Throughput::Elements(UDP_EVENTS));
    g.throughput(Throughput::Elements(DRAIN_EVENTS));
    for (name, compact) in [("online_drain", true), ("online_drain_32", false)] {
        let mut cpu = DrainCpu::default();
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| drain_once(DRAIN_EVENTS, compact, &mut cpu))
                    .sum()
            })
        });
        cpu.report(name);
    }
    for (name, compact) in [("online_pipeline", true), ("online_pipeline_32", false)] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| pipeline_once(DRAIN_EVENTS, compact))
                    .sum()
            })
        });
    }
    g.finish();
    let _ = std::fs::remove_dir_all(out_dir());
}

criterion_group!(benches, streams);
criterion_main!(benches);
