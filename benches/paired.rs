//! The close calls of `benches/overhead.rs`, measured *interleaved*: the
//! ratios qtrace's targets are stated in (circular against the floor and
//! against rtrb, a masked-out event against a bare relaxed load) differ by
//! a few percent, and on this shared 2-vCPU machine the same binary drifts
//! by ±10 % from one criterion case to the next (criterion measures each
//! case for seconds, one after the other). Here every round runs each case
//! once ([`EVENTS`] events), in a rotating order, and the ratios are taken
//! within the round; the report gives the median over all rounds and how
//! often each comparison went qtrace's way.
//!
//! Each case does exactly what its namesake in `overhead.rs` does. Time is
//! the thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), as there.
//!
//! The streaming queues are measured **with their drain task running**
//! (issue 33): `online` (its drain task writing to a discarding writer, so
//! the disk does not set the pace) and `udp` (its sender task sending to a
//! loopback socket a thread of this bench reads and discards), each with
//! a 1 ms period so the task is draining while the producer logs, and room
//! for a whole round (131,072 events) so no event is dropped. After each of
//! their rounds the bench waits, untimed, until the task has emptied the
//! queue; the report gives the events dropped (0 expected: a drop would be
//! the cheap path, not the one measured).
//!
//! **A control-command flood** (issue 36): with the feature `control` and
//! `QTRACE_PAIRED_FLOOD=1`, the `circular` case's tracer serves a control
//! endpoint and a thread of the bench sends it `status` requests back to
//! back for the whole run (each reads every queue's counters); the report
//! gives the requests a second. Compare `circular` / `floor` with and
//! without (`cargo bench -p qtrace-benches --features control --bench
//! paired`, the variable set in one run and not in the next).
//!
//! Run: `cargo bench --bench paired` (a few seconds: a round takes about
//! 2.5 ms at the BENCHMARKS.md figures; `QTRACE_PAIRED_ROUNDS` sets the
//! number of rounds, default 1000).
//!
//! Two settings of the streaming cases, for finding where their cost comes
//! from: `QTRACE_PAIRED_PERIOD_MS` (default 1) is their tasks' period —
//! at 30 the task sleeps through a whole round (about 1 ms) and drains only
//! while the bench waits, so the producer logs with no reader on the other
//! core; `QTRACE_PAIRED_STREAM_CAPACITY` (default 131,072, a power of two)
//! is their queues' capacity — below a round's events they drop, and the
//! report says how many; `QTRACE_PAIRED_FLOOR_CAPACITY` (default 8,192, a
//! power of two) is the floor's array in events — at 262,144 (8 MiB) the
//! floor writes to lines that are not in its core's caches, as the
//! streaming queues' producer does.

use std::hint::black_box;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use qtrace::clock::Clock;
use qtrace::queues::{
    Circular, CircularParams, DatagramsPerPeriod, Dummy, Online, OnlineParams, Udp, UdpParams,
};
use qtrace::storage::RingStorage;
use qtrace::{Event, Tracer};

mod common;
use common::{env_or, thread_cpu_time, CAPACITY, EVENTS, ID, LIVE};

fn tracer_with<T: qtrace::queues::QueueType>(params: T::Params, enabled: bool) -> Tracer {
    common::tracer_with::<T>("paired", params, enabled)
}

#[inline(never)]
fn relaxed_load(words: &[AtomicU32]) {
    for i in 0..EVENTS {
        if words[ID.0 as usize].load(Ordering::Relaxed) & LIVE != 0 {
            black_box(i);
        }
    }
}

#[inline(never)]
fn log_loop(tracer: &Tracer) {
    for i in 0..EVENTS {
        tracer.log_event(ID, [i, 0]);
    }
}

#[inline(never)]
fn floor(clock: &Clock, array: &mut [Event]) {
    let mask = array.len() - 1;
    for i in 0..EVENTS {
        array[i as usize & mask] = Event::new(clock.now(), ID, 0, [i, 0]);
    }
}

#[inline(never)]
fn rtrb_push(
    clock: &Clock,
    producer: &mut rtrb::Producer<Event>,
    consumer: &mut rtrb::Consumer<Event>,
) {
    for i in 0..EVENTS {
        let event = Event::new(clock.now(), ID, 0, [i, 0]);
        if let Err(rtrb::PushError::Full(event)) = producer.push(event) {
            let n = consumer.slots();
            consumer.read_chunk(n).expect("n slots").commit_all();
            producer.push(event).expect("room after draining");
        }
    }
}

/// The cases, in the order of the report.
const CASES: [&str; 8] = [
    "relaxed_load",
    "disabled",
    "floor",
    "circular",
    "peer_rtrb",
    "circular_file",
    "online",
    "udp",
];

/// Room of the streaming queues: a whole round and as much again.
const STREAM_CAPACITY: usize = 1 << 17;

/// Waits (untimed) until the queue of `tracer` holds nothing: its task
/// delivered every event of the round.
fn wait_drained(tracer: &Tracer) {
    // The only queue of a bench tracer: the first handle.
    let q = qtrace::QueueHandle(0);
    let start = Instant::now();
    while tracer.counters(q).expect("queue").queued > 0 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the drain task did not empty the queue in 10 s"
        );
        std::thread::sleep(Duration::from_micros(200));
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    // `cargo bench` passes `--bench` (and `cargo test --benches` nothing
    // useful): run only when asked to benchmark.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let rounds: usize = env_or("QTRACE_PAIRED_ROUNDS", 1000);
    let period = Duration::from_millis(env_or("QTRACE_PAIRED_PERIOD_MS", 1));
    let stream_capacity: usize = env_or("QTRACE_PAIRED_STREAM_CAPACITY", STREAM_CAPACITY);

    let clock = Clock::fast();
    let words: Box<[AtomicU32]> = (0..1 << 16).map(|_| AtomicU32::new(0)).collect();
    let disabled = tracer_with::<Dummy>((), false);
    let circular = tracer_with::<Circular>(
        CircularParams::default()
            .with_capacity(CAPACITY)
            .with_ring(RingStorage::Memory),
        true,
    );
    #[cfg(feature = "control")]
    let (circular, flood) = flood::start(circular);
    #[cfg(not(feature = "control"))]
    let circular = &circular;
    // The same queue with its rings in a ring file (the default), which
    // survives a crash of the process.
    let circular_file = tracer_with::<Circular>(
        CircularParams::default()
            .with_capacity(CAPACITY)
            .with_ring(RingStorage::File),
        true,
    );
    let online = tracer_with::<Online>(
        OnlineParams::default()
            .with_capacity(stream_capacity)
            .with_period(period)
            .with_writer(std::io::sink()),
        true,
    );
    let socket = UdpSocket::bind("127.0.0.1:0").expect("a loopback socket");
    socket
        .set_read_timeout(Some(Duration::from_millis(20)))
        .expect("timeout");
    let to = socket.local_addr().expect("address");
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 65_536];
            while !stop.load(Ordering::Relaxed) {
                let _ = socket.recv(&mut buf);
            }
        })
    };
    let udp = tracer_with::<Udp>(
        UdpParams::to(to)
            .with_capacity(stream_capacity)
            .with_period(period)
            .with_datagrams_per_period(DatagramsPerPeriod::All),
        true,
    );
    let floor_capacity: usize = env_or("QTRACE_PAIRED_FLOOR_CAPACITY", CAPACITY);
    assert!(
        floor_capacity.is_power_of_two(),
        "QTRACE_PAIRED_FLOOR_CAPACITY must be a power of two"
    );
    let mut array = vec![Event::default(); floor_capacity].into_boxed_slice();
    let (mut producer, mut consumer) = rtrb::RingBuffer::<Event>::new(CAPACITY);

    let mut run = |case: usize| {
        let t0 = thread_cpu_time();
        match case {
            0 => relaxed_load(black_box(&words)),
            1 => log_loop(black_box(&disabled)),
            2 => floor(black_box(&clock), black_box(&mut array)),
            3 => log_loop(black_box(circular)),
            5 => log_loop(black_box(&circular_file)),
            6 => log_loop(black_box(&online)),
            7 => log_loop(black_box(&udp)),
            _ => rtrb_push(black_box(&clock), &mut producer, &mut consumer),
        }
        let ns = (thread_cpu_time() - t0).as_nanos() as f64 / EVENTS as f64;
        match case {
            6 => wait_drained(&online),
            7 => wait_drained(&udp),
            _ => {}
        }
        ns
    };
    // Warm up: every ring wrapped, every code path hot.
    for _ in 0..20 {
        for case in 0..CASES.len() {
            run(case);
        }
    }
    let mut ns: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); CASES.len()];
    for round in 0..rounds {
        for k in 0..CASES.len() {
            let case = (round + k) % CASES.len();
            ns[case].push(run(case));
        }
    }

    println!(
        "paired: {rounds} rounds of {EVENTS} events per case, interleaved (clock: {}; \
         streaming queues: capacity {stream_capacity}, period {period:?}; floor: \
         {floor_capacity} events)",
        clock.kind().name()
    );
    println!("| id | median ns/event |");
    println!("|---|---:|");
    for (case, name) in CASES.iter().enumerate() {
        println!("| `{name}` | {:.2} |", median(&mut ns[case].clone()));
    }
    let ratio = |a: usize, b: usize| -> (f64, f64) {
        let mut r: Vec<f64> = ns[a].iter().zip(&ns[b]).map(|(x, y)| x / y).collect();
        let below = r.iter().filter(|&&x| x < 1.0).count() as f64 / r.len() as f64;
        (median(&mut r), below)
    };
    println!();
    println!("| ratio (within each round) | median | rounds below 1 | target |");
    println!("|---|---:|---:|---|");
    for (a, b, target) in [
        (3, 2, "<= 1.5"),
        (1, 0, "<= 1.2"),
        (3, 4, "< 1"),
        (5, 3, "<= 1.1"),
        (6, 2, "<= 1.15"),
        (7, 2, "<= 1.15"),
        (6, 3, ""),
        (7, 3, ""),
    ] {
        let (m, below) = ratio(a, b);
        println!(
            "| `{}` / `{}` | {m:.3} | {:.0} % | {target} |",
            CASES[a],
            CASES[b],
            below * 100.0
        );
    }
    stop.store(true, Ordering::Relaxed);
    let _ = reader.join();
    #[cfg(feature = "control")]
    if let Some(f) = flood {
        println!();
        println!("{}", f.stop());
    }
    let dropped = |t: &Tracer| t.counters(qtrace::QueueHandle(0)).expect("queue").dropped;
    println!();
    println!(
        "events dropped by the streaming queues (0 expected): online {}, udp {}; CPU: {}",
        dropped(&online),
        dropped(&udp),
        cpu_model()
    );
}

/// The CPU model (`/proc/cpuinfo`), for the report: figures differ by host.
fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// The control-command flood (see the module documentation).
#[cfg(feature = "control")]
mod flood {
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    use std::thread::JoinHandle;
    use std::time::Instant;

    use qtrace::control::{Endpoint, Reply, Request};
    use qtrace::Tracer;

    /// A flood running against a tracer's endpoint.
    pub struct Flood {
        _endpoint: Endpoint,
        stop: Arc<AtomicBool>,
        sent: Arc<AtomicU64>,
        since: Instant,
        client: JoinHandle<()>,
    }

    /// The tracer (leaked: an endpoint holds its tracer for good) and, when
    /// `QTRACE_PAIRED_FLOOD=1`, its endpoint flooded with `status`.
    pub fn start(tracer: Tracer) -> (&'static Tracer, Option<Flood>) {
        let tracer: &'static Tracer = Box::leak(Box::new(tracer));
        if std::env::var("QTRACE_PAIRED_FLOOD").as_deref() != Ok("1") {
            return (tracer, None);
        }
        let endpoint = Endpoint::bind(tracer, "paired-flood").expect("bind the endpoint");
        let path = endpoint.path().to_path_buf();
        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicU64::new(0));
        let client = {
            let (stop, sent) = (Arc::clone(&stop), Arc::clone(&sent));
            std::thread::spawn(move || {
                let mut s = UnixStream::connect(&path).expect("connect to the endpoint");
                let request = Request::Status.frame();
                let mut body = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    s.write_all(&request).expect("send status");
                    let mut len = [0u8; 4];
                    s.read_exact(&mut len).expect("a reply");
                    body.resize(u32::from_be_bytes(len) as usize, 0);
                    s.read_exact(&mut body).expect("its body");
                    assert!(
                        matches!(Reply::parse(&body), Ok(Reply::Status(_))),
                        "status answered"
                    );
                    sent.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        let flood = Flood {
            _endpoint: endpoint,
            stop,
            sent,
            since: Instant::now(),
            client,
        };
        (tracer, Some(flood))
    }

    impl Flood {
        /// Stops the client; what it did, as a line of the report.
        pub fn stop(self) -> String {
            self.stop.store(true, Ordering::Relaxed);
            let _ = self.client.join();
            let n = self.sent.load(Ordering::Relaxed);
            let secs = self.since.elapsed().as_secs_f64();
            format!(
                "control flood: {n} status requests answered in {secs:.1} s ({:.0} a second) against the circular case's tracer",
                n as f64 / secs
            )
        }
    }
}
