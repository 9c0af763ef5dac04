//! Loss accounting under stress, for every built-in queue type: several
//! producer threads log into a small queue whose drain is stalled or slow,
//! and afterwards
//!
//! - the counters balance exactly: `attempts = accepted + dropped` and
//!   `accepted = delivered + overwritten + queued`, with `attempts` the number
//!   of events the threads logged;
//! - the output (the trace file read back with the reader, or the receiver's
//!   trace for UDP) holds `delivered` events, intact and in each thread's
//!   order, and its hoops records add up to exactly what was lost.
//!
//! Network tests bind to 127.0.0.1 with ports the system chooses.

use std::io::{self, Write};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use qtrace::classes::{tracer::HOOPS, user};
use qtrace::queue::QueueCounters;
use qtrace::queues::{
    Circular, CircularParams, DatagramsPerPeriod, Dummy, Fixed, FixedParams, Online, OnlineParams,
    Udp, UdpParams,
};
use qtrace::reader::TraceReader;
use qtrace::receiver::{Receiver, RunLimit};
use qtrace::{Config, Event, Tracer};

const THREADS: u64 = 3;
const PER_THREAD: u64 = if cfg!(miri) { 12 } else { 20_000 };
/// Queue sizes for fixed and circular: a fraction of the attempts.
const SMALL: usize = if cfg!(miri) { 8 } else { 64 };
const ATTEMPTS: u64 = THREADS * PER_THREAD;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("qtrace-stress-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// `args[0]` = thread << 32 | sequence, `args[1]` a check word: a torn
/// record would not match.
fn args(thread: u64, seq: u64) -> [u64; 2] {
    let a = thread << 32 | seq;
    [a, a.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5555]
}

/// Runs `THREADS` producers logging `PER_THREAD` events each into `tracer`
/// (user class), all released at once; `between(burst)` runs on the calling
/// thread after every burst of `burst` events per thread (with every
/// producer waiting), so a test can pace or inspect the drain.
fn produce(tracer: &Arc<Tracer>, burst: u64, mut between: impl FnMut(u64)) {
    let gate = Arc::new(Barrier::new(THREADS as usize + 1));
    let producers: Vec<_> = (0..THREADS)
        .map(|t| {
            let tracer = Arc::clone(tracer);
            let gate = Arc::clone(&gate);
            thread::spawn(move || {
                for seq in 0..PER_THREAD {
                    if seq % burst == 0 {
                        if seq > 0 {
                            gate.wait(); // burst done
                        }
                        gate.wait(); // go
                    }
                    tracer.log_event_from(t as u32, user::USER0, args(t, seq));
                }
                gate.wait(); // last burst done
            })
        })
        .collect();
    let bursts = PER_THREAD.div_ceil(burst);
    gate.wait();
    for b in 0..bursts {
        gate.wait();
        between(b);
        if b + 1 < bursts {
            gate.wait();
        }
    }
    for p in producers {
        p.join().unwrap();
    }
}

/// The exact invariants, with `attempts` known.
fn balanced(c: &QueueCounters) {
    assert_eq!(c.accepted + c.dropped, ATTEMPTS, "{c:?}");
    assert_eq!(c.accepted, c.delivered + c.overwritten + c.queued, "{c:?}");
}

/// Checks records are intact, from our threads, each thread's in order;
/// returns (events, sum of hoops records naming `queue`).
fn account(events: &[Event], queue: u64) -> (u64, u64) {
    let mut last = [None::<u64>; THREADS as usize];
    let (mut kept, mut lost) = (0, 0);
    for e in events {
        if e.id == HOOPS {
            assert_eq!(e.source, u32::MAX, "{e:?}");
            assert_eq!(e.args[1], queue, "{e:?}");
            assert!(e.args[0] > 0, "{e:?}");
            lost += e.args[0];
            continue;
        }
        assert_eq!(e.id, user::USER0);
        let (t, seq) = (e.args[0] >> 32, e.args[0] & 0xffff_ffff);
        assert_eq!(args(t, seq), e.args, "torn record {e:?}");
        assert_eq!(e.source as u64, t);
        if let Some(prev) = last[t as usize] {
            assert!(seq > prev, "thread {t}: {seq} after {prev}");
        }
        last[t as usize] = Some(seq);
        kept += 1;
    }
    (kept, lost)
}

fn read_file(path: &Path) -> Vec<Event> {
    TraceReader::open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .map(|e| e.unwrap())
        .collect()
}

fn tracer_in(dir: &Path) -> Arc<Tracer> {
    Arc::new(Tracer::with_config(Config::default().with_output_dir(dir)))
}

#[test]
fn dummy_counts_every_attempt_as_delivered() {
    let tracer = tracer_in(&scratch("dummy"));
    let q = tracer.create_queue::<Dummy>(()).unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer.activate().unwrap();
    produce(&tracer, PER_THREAD, |_| {});
    let report = tracer.shutdown().unwrap();
    let c = report.queues[0].counters;
    balanced(&c);
    // Discarding is the dummy queue's policy, not a loss: no output at all.
    assert_eq!((c.delivered, c.dropped, c.overwritten), (ATTEMPTS, 0, 0));
    assert!(report.queues[0].status.files.is_empty());
}

#[test]
fn fixed_keeps_each_threads_first_events_and_accounts_for_the_rest() {
    let dir = scratch("fixed");
    let tracer = tracer_in(&dir);
    let cap = SMALL;
    let q = tracer
        .create_queue::<Fixed>(
            FixedParams::default()
                .with_capacity(cap)
                .with_ring(Default::default()),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer.activate().unwrap();
    produce(&tracer, PER_THREAD, |_| {});
    let report = tracer.shutdown().unwrap();
    assert!(report.is_clean(), "{report:?}");
    let c = report.queues[0].counters;
    balanced(&c);
    assert_eq!((c.accepted, c.dropped), (cap as u64, ATTEMPTS - cap as u64));
    let events = read_file(&dir.join("queue0-fixed.qtr"));
    let (kept, lost) = account(&events, 0);
    assert_eq!((kept, lost), (c.delivered, c.dropped));
    // "The first N": what each thread kept is a prefix of what it logged.
    for t in 0..THREADS {
        let mine: Vec<u64> = events
            .iter()
            .filter(|e| e.id != HOOPS && e.args[0] >> 32 == t)
            .map(|e| e.args[0] & 0xffff_ffff)
            .collect();
        assert_eq!(mine, (0..mine.len() as u64).collect::<Vec<_>>());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn circular_keeps_the_last_events_and_accounts_for_the_rest() {
    let dir = scratch("circular");
    let tracer = tracer_in(&dir);
    let cap = SMALL;
    let q = tracer
        .create_queue::<Circular>(CircularParams::default().with_capacity(cap))
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer.activate().unwrap();
    // Nobody drains a circular queue while it runs: every lap overwrites.
    produce(&tracer, PER_THREAD, |_| {});
    let report = tracer.shutdown().unwrap();
    assert!(report.is_clean(), "{report:?}");
    let c = report.queues[0].counters;
    balanced(&c);
    assert_eq!(c.queued, 0);
    assert!(c.delivered <= cap as u64 && c.delivered > 0, "{c:?}");
    let events = read_file(&dir.join("queue0-circular.qtr"));
    let (kept, lost) = account(&events, 0);
    assert_eq!(kept, c.delivered);
    assert_eq!(lost, c.dropped + c.overwritten);
    assert_eq!(kept + lost, ATTEMPTS);
    // "The last N": each thread's last event is among those kept, unless
    // another thread's 64 later events pushed it out.
    assert!(events
        .iter()
        .any(|e| e.args[0] & 0xffff_ffff == PER_THREAD - 1));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A writer that blocks while the gate is closed: the online queue's drain
/// task stalls inside `write`.
#[derive(Clone)]
struct Gated {
    open: Arc<(Mutex<bool>, Condvar)>,
    data: Arc<Mutex<Vec<u8>>>,
}

impl Gated {
    fn new() -> Self {
        Gated {
            open: Arc::new((Mutex::new(false), Condvar::new())),
            data: Arc::default(),
        }
    }
    fn set(&self, open: bool) {
        *self.open.0.lock().unwrap() = open;
        self.open.1.notify_all();
    }
}

impl Write for Gated {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let (lock, cv) = &*self.open;
        let mut open = lock.lock().unwrap();
        while !*open {
            open = cv.wait(open).unwrap();
        }
        self.data.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn online_with_a_stalled_then_slow_drain_accounts_for_every_event() {
    let sink = Gated::new();
    let tracer = tracer_in(&scratch("online"));
    let cap = 256;
    let q = tracer
        .create_queue::<Online>(
            OnlineParams::default()
                .with_capacity(cap)
                .with_period(Duration::from_millis(1))
                .with_writer(sink.clone()),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    // Phase 2 writes the file header on the caller's thread (it may block:
    // phase 2 is not the hot path), so the gate is open for it.
    sink.set(true);
    tracer.activate().unwrap();
    sink.set(false);
    let t0 = Instant::now();
    // The sink is closed: the task blocks in its first write and the ring
    // fills. Bursts alternate stalled and open drains.
    produce(&tracer, PER_THREAD / 4, |burst| {
        sink.set(burst % 2 == 1);
        let c = tracer.counters(q).unwrap();
        assert!(c.accepted + c.dropped <= ATTEMPTS, "{c:?}");
    });
    let logging = t0.elapsed();
    sink.set(true);
    let report = tracer.shutdown().unwrap();
    assert!(report.is_clean(), "{report:?}");
    let c = report.queues[0].counters;
    balanced(&c);
    assert_eq!((c.queued, c.overwritten), (0, 0));
    // The stalled drain made the queue overflow.
    assert!(c.dropped > 0, "{c:?}");
    let bytes = sink.data.lock().unwrap().clone();
    let events: Vec<Event> = TraceReader::new(&bytes[..])
        .unwrap()
        .map(|e| e.unwrap())
        .collect();
    let (kept, lost) = account(&events, 0);
    assert_eq!((kept, lost), (c.delivered, c.dropped));
    // The producers never waited for the stalled task.
    assert!(logging < Duration::from_secs(30), "{logging:?}");
}

#[test]
fn udp_with_a_slow_drain_accounts_for_every_event_at_the_receiver() {
    let dir = scratch("udp");
    let path = dir.join("received.qtr");
    let receiver = Receiver::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).unwrap();
    let addr = receiver.local_addr();
    let progress = receiver.progress();
    let stopper = receiver.stopper();
    let rx = {
        let path = path.clone();
        thread::spawn(move || {
            receiver
                .run(&path, RunLimit::duration(Duration::from_secs(120)))
                .unwrap()
        })
    };
    let tracer = tracer_in(&dir);
    // Slow drain: the task wakes only at the high-water mark (its period is
    // an hour) and then sends a single datagram.
    let q = tracer
        .create_queue::<Udp>(
            UdpParams::to(addr)
                .with_capacity(256)
                .with_period(Duration::from_secs(3600))
                .with_high_water_percent(100)
                .with_datagrams_per_period(DatagramsPerPeriod::Limit(1))
                .with_sender_id(77),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer.activate().unwrap();
    let udp_sent = |t: &Tracer| t.queue(q).unwrap().as_udp().unwrap().stats().events_sent;
    // Between bursts, let the receiver take in what was sent, so no datagram
    // is lost in the loopback socket's buffer: all loss is the queue's.
    produce(&tracer, PER_THREAD / 10, |_| {
        let t = Instant::now();
        while progress.events() < udp_sent(&tracer) {
            assert!(t.elapsed() < Duration::from_secs(60), "receiver stuck");
            thread::sleep(Duration::from_millis(1));
        }
    });
    let report = tracer.shutdown().unwrap();
    assert!(report.is_clean(), "{report:?}");
    let c = report.queues[0].counters;
    balanced(&c);
    assert_eq!(c.queued, 0);
    assert!(c.dropped > 0, "{c:?}");
    let t = Instant::now();
    while progress.events() < c.delivered || progress.sender_dropped() < c.dropped {
        assert!(t.elapsed() < Duration::from_secs(60), "receiver stuck");
        thread::sleep(Duration::from_millis(1));
    }
    stopper.stop();
    let summary = rx.join().unwrap();
    let s = &summary.senders[0];
    assert_eq!(summary.senders.len(), 1);
    assert_eq!(
        (s.events, s.sender_dropped, s.lost_datagrams, s.duplicates),
        (c.delivered, c.dropped, 0, 0)
    );
    let events = read_file(&path);
    let (kept, lost) = account(&events, q.0 as u64);
    assert_eq!((kept, lost), (c.delivered, c.dropped));
    assert_eq!(kept + lost, ATTEMPTS);
    std::fs::remove_dir_all(&dir).unwrap();
}
