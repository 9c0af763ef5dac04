//! The hot path never blocks: with the drain task of an online queue stuck
//! in a write that does not return, or a UDP queue's task asleep, `log_event`
//! keeps returning — 100 000 calls from two threads complete while the
//! drain is stuck (the bound checked is a generous 10 s: this proves
//! progress, it is not a benchmark). A user-defined queue that blocks in
//! `post` stalls only the threads that log into it: qtrace cannot pre-empt
//! user code, so other threads, other queues and shutdown go on.

use std::io::{self, Write};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use qtrace::classes::user;
use qtrace::queue::{Queue, QueueContext, QueueCounters, Reservation};
use qtrace::queues::{AnyQueue, QueueType};
use qtrace::queues::{
    Circular, CircularParams, DatagramsPerPeriod, Online, OnlineParams, Udp, UdpParams,
};
use qtrace::{Config, ConfigError, Event, Tracer};

const EVENTS: u64 = if cfg!(miri) { 200 } else { 100_000 };
const BOUND: Duration = Duration::from_secs(10);

/// A latch: `wait` blocks until `open` is called.
#[derive(Clone, Default)]
struct Latch(Arc<(Mutex<bool>, Condvar)>);

impl Latch {
    fn wait(&self) {
        let (m, cv) = &*self.0;
        let mut open = m.lock().unwrap();
        while !*open {
            open = cv.wait(open).unwrap();
        }
    }
    fn open(&self) {
        *self.0 .0.lock().unwrap() = true;
        self.0 .1.notify_all();
    }
}

/// A writer stuck until its latch opens (a hung NFS mount, a full pipe).
struct Stuck {
    latch: Latch,
    entered: Arc<AtomicBool>,
    armed: Arc<AtomicBool>,
}

impl Write for Stuck {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.armed.load(Ordering::SeqCst) {
            self.entered.store(true, Ordering::SeqCst);
            self.latch.wait();
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Two threads log `EVENTS` events in total; returns how long it took.
fn log_from_two_threads(tracer: &Arc<Tracer>) -> Duration {
    let t = Instant::now();
    let threads: Vec<_> = (0..2u64)
        .map(|th| {
            let tracer = Arc::clone(tracer);
            thread::spawn(move || {
                for i in 0..EVENTS / 2 {
                    tracer.log_event(user::USER0, [th, i]);
                }
            })
        })
        .collect();
    for th in threads {
        th.join().unwrap();
    }
    t.elapsed()
}

#[test]
fn log_event_returns_while_the_online_drain_is_stuck_in_a_write() {
    let latch = Latch::default();
    let entered = Arc::new(AtomicBool::new(false));
    let armed = Arc::new(AtomicBool::new(false));
    let tracer = Arc::new(Tracer::with_config(
        Config::default().with_output_dir(std::env::temp_dir()),
    ));
    let q = tracer
        .create_queue::<Online>(
            OnlineParams::default()
                .with_capacity(1024)
                .with_period(Duration::from_millis(1))
                .with_writer(Stuck {
                    latch: latch.clone(),
                    entered: Arc::clone(&entered),
                    armed: Arc::clone(&armed),
                }),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer.activate().unwrap();
    armed.store(true, Ordering::SeqCst);
    // Get the task stuck in a write.
    for i in 0..10 {
        tracer.log_event(user::USER0, [9, i]);
    }
    let t = Instant::now();
    while !entered.load(Ordering::SeqCst) {
        assert!(t.elapsed() < BOUND, "the drain never wrote");
        thread::sleep(Duration::from_millis(1));
    }
    let took = log_from_two_threads(&tracer);
    assert!(took < BOUND, "{EVENTS} events took {took:?}");
    // Every call returned; the queue filled and counted the rest as drops.
    let c = tracer.counters(q).unwrap();
    assert_eq!(c.accepted + c.dropped, EVENTS + 10, "{c:?}");
    assert!(c.dropped >= EVENTS.saturating_sub(1024), "{c:?}");
    // The status and counters stay readable while the drain is stuck.
    assert!(tracer.status(q).unwrap().is_healthy());
    eprintln!("{EVENTS} log_event calls with the drain stuck: {took:?}");
    latch.open();
    let report = tracer.shutdown().unwrap();
    let c = report.queues[0].counters;
    assert_eq!((c.accepted + c.dropped, c.queued), (EVENTS + 10, 0));
}

#[test]
fn log_event_returns_while_the_udp_task_sleeps() {
    let sink = std::net::UdpSocket::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).unwrap();
    let tracer = Arc::new(Tracer::new());
    // The task wakes once an hour and at 100 % full, and then sends one
    // datagram: the queue is full almost all the time.
    let q = tracer
        .create_queue::<Udp>(
            UdpParams::to(sink.local_addr().unwrap())
                .with_capacity(256)
                .with_period(Duration::from_secs(3600))
                .with_high_water_percent(100)
                .with_datagrams_per_period(DatagramsPerPeriod::Limit(1)),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer.activate().unwrap();
    let took = log_from_two_threads(&tracer);
    assert!(took < BOUND, "{EVENTS} events took {took:?}");
    let report = tracer.shutdown().unwrap();
    let c = report.queues[0].counters;
    assert_eq!(c.accepted + c.dropped, EVENTS);
    assert!(c.dropped > 0, "{c:?}");
}

/// A user queue whose `post` blocks until released.
struct Blocking(Latch, Arc<AtomicU64>);

struct BlockingQueue {
    latch: Latch,
    inside: Arc<AtomicU64>,
    posted: AtomicU64,
}

impl QueueType for Blocking {
    type Params = ();
    const NAME: &'static str = "blocking";
    fn create(&self, _: (), _: &QueueContext) -> Result<AnyQueue, ConfigError> {
        Ok(AnyQueue::custom(BlockingQueue {
            latch: self.0.clone(),
            inside: Arc::clone(&self.1),
            posted: AtomicU64::new(0),
        }))
    }
}

impl Queue for BlockingQueue {
    fn get(&self) -> Option<Reservation> {
        Some(Reservation::new(0))
    }
    fn post(&self, _: Reservation, _: &Event) {
        self.inside.fetch_add(1, Ordering::SeqCst);
        self.latch.wait();
        self.posted.fetch_add(1, Ordering::Relaxed);
    }
    fn counters(&self) -> QueueCounters {
        let n = self.posted.load(Ordering::Relaxed);
        QueueCounters::all_delivered(n)
    }
}

#[test]
fn a_user_queue_blocking_in_post_stalls_only_its_own_producers() {
    let latch = Latch::default();
    let inside = Arc::new(AtomicU64::new(0));
    let tracer = Arc::new(Tracer::with_config(
        Config::default().with_output_dir(std::env::temp_dir()),
    ));
    tracer
        .register_queue_type(Blocking(latch.clone(), Arc::clone(&inside)))
        .unwrap();
    let slow = tracer.create_queue::<Blocking>(()).unwrap();
    let fast = tracer
        .create_queue::<Circular>(CircularParams::default().with_capacity(1024).with_file(
            std::env::temp_dir().join(format!("qtrace-hot-path-{}.qtr", std::process::id())),
        ))
        .unwrap();
    tracer.assign_event(user::USER1, slow).unwrap();
    tracer.assign_event(user::USER0, fast).unwrap();
    tracer.activate().unwrap();
    // A thread logs into the blocking queue and is stuck in its `post`.
    let stuck = {
        let tracer = Arc::clone(&tracer);
        thread::spawn(move || tracer.log_event(user::USER1, [1, 0]))
    };
    let t = Instant::now();
    while inside.load(Ordering::SeqCst) == 0 {
        assert!(t.elapsed() < BOUND);
        thread::sleep(Duration::from_millis(1));
    }
    // Meanwhile two other threads log 100 000 events into another queue.
    let took = log_from_two_threads(&tracer);
    assert!(took < BOUND, "{took:?}");
    assert_eq!(tracer.counters(fast).unwrap().attempts(), EVENTS);
    // Still stuck: only that thread waited.
    assert!(!stuck.is_finished());
    assert_eq!(tracer.counters(slow).unwrap().accepted, 0);
    // Shutdown does not wait for it either (no lock on the hot path).
    let report = tracer.shutdown().unwrap();
    assert_eq!(report.queues[fast.index()].counters.delivered, 1024);
    latch.open();
    stuck.join().unwrap();
    assert_eq!(tracer.counters(slow).unwrap().accepted, 1);
    let _ = std::fs::remove_file(
        std::env::temp_dir().join(format!("qtrace-hot-path-{}.qtr", std::process::id())),
    );
}
