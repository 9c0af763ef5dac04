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
//! - `streams/online_drain`: 262144 events are logged into a circular-online
//!   queue before phase 2; the time from activation until the drain task has
//!   written them all to the file is the drain's speed (32 bytes a record).
//! - `streams/online_pipeline`: a producer logs 262144 events while the
//!   drain task writes them (the producer waits when the queue is 3/4 full),
//!   so nothing is dropped (checked).

use std::net::SocketAddr;
use std::thread;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use qtrace::classes::user;
use qtrace::queues::{DatagramsPerPeriod, Online, OnlineParams, Udp, UdpParams};
use qtrace::receiver::{Receiver, RunLimit};
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

fn udp_once(events: u64, max_datagram_len: usize) -> Duration {
    let receiver = Receiver::bind(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
    let addr = receiver.local_addr();
    let progress = receiver.progress();
    let path = out_dir().join("udp.qtr");
    let rx = thread::spawn(move || {
        receiver
            .run(
                &path,
                RunLimit::events(events).or_after(Duration::from_secs(60)),
            )
            .unwrap()
    });
    let tracer = Tracer::new();
    let q = tracer
        .create_queue::<Udp>(
            UdpParams::to(addr)
                .with_capacity(1 << 16)
                .with_period(Duration::from_millis(1))
                .with_datagrams_per_period(DatagramsPerPeriod::All)
                .with_high_water_percent(50)
                .with_max_datagram_len(max_datagram_len),
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
        tracer.log_event(user::USER0, [i, 0]);
    }
    // Time to the last event received (the receiver then writes its file,
    // which is not part of the stream).
    while progress.events() < events {
        thread::sleep(Duration::from_micros(100));
    }
    let elapsed = start.elapsed();
    let summary = rx.join().unwrap();
    tracer.shutdown().unwrap();
    assert_eq!(summary.events(), events, "loss at the receiver");
    assert_eq!(summary.lost_datagrams() + summary.sender_dropped(), 0);
    elapsed
}

fn drain_once(events: u64) -> Duration {
    let tracer = Tracer::with_config(Config::default().with_output_dir(out_dir()));
    let q = tracer
        .create_queue::<Online>(
            OnlineParams::default()
                .with_capacity(events as usize)
                .with_period(Duration::from_millis(1)),
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
    let report = tracer.shutdown().unwrap();
    assert_eq!(report.queues[0].counters.delivered, events);
    elapsed
}

fn pipeline_once(events: u64) -> Duration {
    let tracer = Tracer::with_config(Config::default().with_output_dir(out_dir()));
    let capacity = 1 << 16;
    let q = tracer
        .create_queue::<Online>(
            OnlineParams::default()
                .with_capacity(capacity)
                .with_period(Duration::from_millis(1))
                .with_high_water_percent(25),
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
    g.bench_function("udp_loopback", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| udp_once(UDP_EVENTS, 1472)).sum())
    });
    g.bench_function("udp_loopback_jumbo", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| udp_once(UDP_EVENTS, 8972)).sum())
    });
    g.throughput(Throughput::Bytes(DRAIN_EVENTS * 32));
    g.bench_function("online_drain", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| drain_once(DRAIN_EVENTS)).sum())
    });
    g.bench_function("online_pipeline", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| pipeline_once(DRAIN_EVENTS)).sum())
    });
    g.finish();
    let _ = std::fs::remove_dir_all(out_dir());
}

criterion_group!(benches, streams);
criterion_main!(benches);
