//! Faults, and what qtrace does about each (RELIABILITY.md lists them): the
//! program never blocks or aborts, and every fault shows in a queue's
//! counters, its status or the shutdown report.
//!
//! - a full disk (`/dev/full`: the kernel's own ENOSPC) under the online,
//!   circular and fixed queues, and a phase 2 retried after it failed;
//! - the UDP receiver disappears and comes back (loopback, system-chosen
//!   port);
//! - the clock goes backwards (a manual clock);
//! - shutdown while producers still log, for every draining queue type;
//! - panics in a user-defined queue's hooks (caught, typed errors) and in
//!   its `get`/`post`/`post_run` (not caught: they unwind into the caller
//!   of `log_event`, the tracer stays usable, and the events are counted
//!   as lost to a panic, so the report is not clean).

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use qtrace::classes::{tracer::HOOPS, user};
use qtrace::clock::{Clock, ManualClock};
use qtrace::queue::{Queue, QueueContext, QueueCounters, Reservation};
use qtrace::queues::{AnyQueue, QueueType};
use qtrace::queues::{
    Circular, CircularParams, DatagramsPerPeriod, Fixed, FixedParams, Online, OnlineParams, Udp,
    UdpParams,
};
use qtrace::reader::TraceReader;
use qtrace::receiver::{Receiver, ReceiverSummary, RunLimit};
use qtrace::{Config, ConfigError, Event, Tracer};

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("qtrace-faults-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn read_file(path: &Path) -> Vec<Event> {
    TraceReader::open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .map(|e| e.unwrap())
        .collect()
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "timed out waiting until {what}"
        );
        thread::sleep(Duration::from_millis(1));
    }
}

fn balanced(c: &QueueCounters, attempts: u64) {
    assert_eq!(c.accepted + c.dropped, attempts, "{c:?}");
    assert_eq!(c.accepted, c.delivered + c.overwritten + c.queued, "{c:?}");
}

// ----- a full disk ----------------------------------------------------------

#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_under_the_online_queue_is_an_error_at_phase_2_and_in_the_report() {
    let tracer = Tracer::with_config(Config::default().with_output_dir(scratch("full-online")));
    let q = tracer
        .create_queue::<Online>(
            OnlineParams::default()
                .with_capacity(64)
                .with_file("/dev/full"),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    for i in 0..100 {
        tracer.log_event(user::USER0, [i, 0]);
    }
    let e = tracer.activate().unwrap_err();
    assert!(matches!(e, ConfigError::Io(_)), "{e:?}");
    assert!(e.to_string().contains("/dev/full"), "{e}");
    // Phase 2 can be retried: the file is opened again, not skipped.
    let e = tracer.activate().unwrap_err();
    assert!(e.to_string().contains("/dev/full"), "{e}");
    for i in 100..200 {
        tracer.log_event(user::USER0, [i, 0]);
    }
    let report = tracer.shutdown().unwrap();
    assert!(!report.is_clean());
    let r = &report.queues[0];
    assert!(r.error.as_deref().unwrap().contains("/dev/full"), "{r:?}");
    // Nothing was written: the first 64 are still queued, the rest dropped.
    balanced(&r.counters, 200);
    assert_eq!(
        (r.counters.queued, r.counters.dropped, r.counters.delivered),
        (64, 136, 0)
    );
}

/// A writer that fails from the start.
struct Broken;

impl std::io::Write for Broken {
    fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
        Err(std::io::Error::other("no space left"))
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_writer_failing_at_phase_2_is_in_the_status_for_good() {
    let tracer = Tracer::with_config(Config::default().with_output_dir(scratch("broken")));
    let q = tracer
        .create_queue::<Online>(
            OnlineParams::default()
                .with_capacity(64)
                .with_writer(Broken),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    let e = tracer.activate().unwrap_err();
    assert!(e.to_string().contains("no space left"), "{e}");
    // A writer cannot be opened again: the status says nothing will be
    // written, and the report is not clean, whatever happens next.
    let status = tracer.status(q).unwrap();
    assert_eq!(status.io_errors, 1);
    let msg = status.last_error.unwrap();
    assert!(msg.contains("nothing can be written"), "{msg}");
    assert!(msg.contains("no space left"), "{msg}");
    for i in 0..100 {
        tracer.log_event(user::USER0, [i, 0]);
    }
    let report = tracer.shutdown().unwrap();
    assert!(!report.is_clean());
    let c = report.queues[0].counters;
    balanced(&c, 100);
    // The queue latched shut at the failed activation: every event after it
    // is dropped and counted, none is accepted into a queue nothing drains.
    assert_eq!((c.delivered, c.queued, c.dropped), (0, 0, 100));
}

#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_fails_phase_2_for_circular_and_fixed_queues() {
    // The file is created (header written) at phase 2: a disk that takes no
    // byte is an error then, not a surprise at shutdown.
    for fixed in [false, true] {
        let tracer = Tracer::with_config(Config::default().with_output_dir(scratch("full-act")));
        if fixed {
            tracer.create_queue::<Fixed>(
                FixedParams::default()
                    .with_capacity(16)
                    .with_file("/dev/full")
                    .with_ring(Default::default()),
            )
        } else {
            tracer.create_queue::<Circular>(
                CircularParams::default()
                    .with_capacity(16)
                    .with_file("/dev/full"),
            )
        }
        .unwrap();
        let err = tracer.activate().unwrap_err().to_string();
        assert!(err.contains("/dev/full"), "{err}");
        assert!(err.contains("Config::with_output_dir"), "{err}");
    }
}

#[test]
fn a_failed_save_of_circular_and_fixed_queues_is_reported_and_nothing_counts_delivered() {
    let dir = scratch("full-save");
    let tracer = Tracer::with_config(Config::default().with_output_dir(&dir));
    let c = tracer
        .create_queue::<Circular>(CircularParams::default().with_capacity(16))
        .unwrap();
    let f = tracer
        .create_queue::<Fixed>(
            FixedParams::default()
                .with_capacity(16)
                .with_ring(Default::default()),
        )
        .unwrap();
    tracer.assign_event(user::USER0, c).unwrap();
    tracer.assign_event(user::USER1, f).unwrap();
    tracer.activate().unwrap();
    // The directory goes, and a regular file takes its name: the save
    // cannot create its file there.
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::write(&dir, b"in the way").unwrap();
    for i in 0..40 {
        tracer.log_event(user::USER0, [i, 0]);
        tracer.log_event(user::USER1, [i, 0]);
    }
    let report = tracer.shutdown().unwrap();
    assert!(!report.is_clean());
    for r in &report.queues {
        let err = r.error.as_deref().expect("the save failed");
        assert!(err.contains("full-save"), "{err}");
        assert!(!r.status.is_healthy(), "{r:?}");
        assert!(r.status.files.is_empty(), "{r:?}");
        balanced(&r.counters, 40);
        assert_eq!((r.counters.delivered, r.counters.queued), (0, 16), "{r:?}");
    }
    // Circular overwrote, fixed dropped.
    assert_eq!(report.queues[0].counters.overwritten, 24);
    assert_eq!(report.queues[1].counters.dropped, 24);
    std::fs::remove_file(&dir).unwrap();
}

// ----- the UDP receiver goes away and comes back -----------------------------

fn start_receiver(
    addr: SocketAddr,
    path: PathBuf,
) -> (
    SocketAddr,
    Arc<qtrace::receiver::Progress>,
    qtrace::receiver::Stopper,
    thread::JoinHandle<ReceiverSummary>,
) {
    let r = Receiver::bind(addr).unwrap();
    let (local, progress, stop) = (r.local_addr(), r.progress(), r.stopper());
    let join = thread::spawn(move || {
        r.run(&path, RunLimit::duration(Duration::from_secs(120)))
            .unwrap()
    });
    (local, progress, stop, join)
}

#[test]
fn the_udp_receiver_disappears_and_comes_back() {
    let dir = scratch("udp-gone");
    let (addr, progress, stop, rx) = start_receiver(
        SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        dir.join("a.qtr"),
    );
    let tracer = Tracer::with_config(Config::default().with_output_dir(&dir));
    let params = UdpParams::to(addr)
        .with_capacity(1024)
        .with_period(Duration::from_millis(1))
        .with_datagrams_per_period(DatagramsPerPeriod::All)
        .with_sender_id(5)
        .with_catalog_interval(Duration::from_millis(20));
    let q = tracer.create_queue::<Udp>(params).unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer.activate().unwrap();
    let sent = || {
        tracer
            .queue(q)
            .unwrap()
            .as_udp()
            .unwrap()
            .stats()
            .events_sent
    };

    // 1. The receiver is there.
    for i in 0..100 {
        tracer.log_event(user::USER0, [i, 0]);
    }
    wait_until("the first receiver has 100 events", || {
        progress.events() == 100
    });
    stop.stop();
    let a = rx.join().unwrap();
    assert_eq!(a.events(), 100);

    // 2. It is gone: sends are refused (port unreachable), the sender keeps
    // going, never blocks, and says so in its status.
    let t = Instant::now();
    for i in 100..200 {
        tracer.log_event(user::USER0, [i, 0]);
    }
    assert!(t.elapsed() < Duration::from_secs(1));
    wait_until("the events are sent into the void", || sent() == 200);
    // Keep sending (catalogs) until the kernel reports the refusal.
    wait_until("the refusal is reported", || {
        tracer.status(q).unwrap().io_errors > 0
    });
    let status = tracer.status(q).unwrap();
    assert!(
        status
            .last_error
            .as_deref()
            .unwrap()
            .contains("is a receiver listening"),
        "{status:?}"
    );

    // 3. A receiver comes back on the same port.
    let (_, progress, stop, rx) = start_receiver(addr, dir.join("b.qtr"));
    for i in 200..300 {
        tracer.log_event(user::USER0, [i, 0]);
    }
    wait_until("the second receiver has 100 events and the catalog", || {
        progress.events() == 100 && sent() == 300
    });
    // Give the periodic catalog time to arrive.
    thread::sleep(Duration::from_millis(60));
    let report = tracer.shutdown().unwrap();
    stop.stop();
    let b = rx.join().unwrap();
    let c = report.queues[0].counters;
    // The 100 sent into the void were refused (port unreachable): not
    // delivered but dropped, so the report's total_lost() counts them.
    balanced(&c, 300);
    assert_eq!((c.delivered, c.dropped), (200, 100));
    assert_eq!(report.total_lost(), 100);
    let s = &b.senders[0];
    assert_eq!(s.events, 100);
    assert!(s.has_catalog);
    // The second receiver sees the sequence numbers it missed (the first
    // receiver's datagrams and those sent into the void) as lost datagrams,
    // knows from the first-event field that they held exactly 200 events,
    // and marks them in its trace with one hoops record before the events.
    assert!(s.lost_datagrams >= 3, "{b}");
    assert_eq!(s.lost_events, 200, "{b}");
    let events = read_file(&dir.join("b.qtr"));
    let values: Vec<u64> = events
        .iter()
        .filter(|e| e.id == user::USER0)
        .map(|e| e.args[0])
        .collect();
    assert_eq!(values, (200..300).collect::<Vec<_>>());
    let lost: u64 = events
        .iter()
        .filter(|e| e.id == HOOPS)
        .map(|e| e.args[0])
        .sum();
    assert_eq!(lost, 200);
    // A receives 100, the void 100, B 100 + a record of the 200 it missed.
    assert_eq!(a.events() + s.events, 200);
    std::fs::remove_dir_all(&dir).unwrap();
}

// ----- the clock goes backwards ------------------------------------------------

#[test]
fn a_clock_going_backwards_is_recorded_as_read_and_read_back_unchanged() {
    let dir = scratch("clock");
    let clock = ManualClock::new(1_000);
    let tracer = Tracer::with_config(
        Config::default()
            .with_output_dir(&dir)
            .with_clock(Clock::manual(&clock)),
    );
    let c = tracer
        .create_queue::<Circular>(
            CircularParams::default()
                .with_capacity(4)
                .with_shards(0)
                .with_ring(Default::default()),
        )
        .unwrap();
    let o = tracer
        .create_queue::<Online>(OnlineParams::default().with_capacity(64))
        .unwrap();
    tracer.assign_event(user::USER0, c).unwrap();
    tracer.assign_event(user::USER1, o).unwrap();
    tracer.activate().unwrap();
    let times = [1_000u64, 2_000, 500, 0, 3_000, 2_999];
    for (i, t) in times.iter().enumerate() {
        clock.set(*t);
        tracer.log_event(user::USER0, [i as u64, 0]);
        tracer.log_event(user::USER1, [i as u64, 0]);
    }
    let report = tracer.shutdown().unwrap();
    assert!(report.is_clean(), "{report:?}");
    // Online: every event, in logging order, with the times as read.
    let online = read_file(&dir.join("queue1-online.qtr"));
    assert_eq!(online.iter().map(|e| e.time).collect::<Vec<_>>(), times);
    assert_eq!(
        online.iter().map(|e| e.args[0]).collect::<Vec<_>>(),
        [0, 1, 2, 3, 4, 5]
    );
    // Circular (4 slots): the last four logged are kept, and a save orders
    // records by time (it merges the per-thread shards by time, and does the
    // same for the shared ring), so a clock that went backwards reorders
    // them there; the hoops record for the two overwritten keeps the time
    // of the record after the gap (500) and sorts with it.
    let circular = read_file(&dir.join("queue0-circular.qtr"));
    assert_eq!(
        circular
            .iter()
            .map(|e| (e.time, e.id, e.args[0]))
            .collect::<Vec<_>>(),
        [
            (0, user::USER0, 3),
            (500, HOOPS, 2),
            (500, user::USER0, 2),
            (2_999, user::USER0, 5),
            (3_000, user::USER0, 4),
        ]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

// ----- shutdown while producers still log ------------------------------------------

#[test]
fn shutdown_while_producers_log_into_online_and_udp_queues() {
    let dir = scratch("shutdown");
    let sink = std::net::UdpSocket::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).unwrap();
    let tracer = Arc::new(Tracer::with_config(Config::default().with_output_dir(&dir)));
    let o = tracer
        .create_queue::<Online>(
            OnlineParams::default()
                .with_capacity(256)
                .with_period(Duration::from_millis(1)),
        )
        .unwrap();
    let u = tracer
        .create_queue::<Udp>(
            UdpParams::to(sink.local_addr().unwrap())
                .with_capacity(256)
                .with_period(Duration::from_millis(1))
                .with_datagrams_per_period(DatagramsPerPeriod::All),
        )
        .unwrap();
    tracer.assign_event(user::USER0, o).unwrap();
    tracer.assign_event(user::USER1, u).unwrap();
    tracer.activate().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let attempts = Arc::new(AtomicU64::new(0));
    let producers: Vec<_> = (0..2u64)
        .map(|t| {
            let (tracer, stop, attempts) = (
                Arc::clone(&tracer),
                Arc::clone(&stop),
                Arc::clone(&attempts),
            );
            thread::spawn(move || {
                let mut n = 0u64;
                // Logging goes on after shutdown (a no-op) until told to stop.
                while !stop.load(Ordering::Relaxed) {
                    tracer.log_event_from(t as u32, user::USER0, [t, n]);
                    tracer.log_event_from(t as u32, user::USER1, [t, n]);
                    n += 1;
                }
                attempts.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect();
    wait_until("the queues are busy", || {
        tracer.counters(o).unwrap().delivered > 1000
    });
    let t = Instant::now();
    let report = tracer.shutdown().unwrap();
    assert!(t.elapsed() < Duration::from_secs(30));
    assert!(report.is_clean(), "{report:?}");
    thread::sleep(Duration::from_millis(20));
    stop.store(true, Ordering::Relaxed);
    for p in producers {
        p.join().unwrap();
    }
    let logged = attempts.load(Ordering::Relaxed);
    for h in [o, u] {
        // Once every producer is out, the counters balance exactly; a
        // producer that was between its claim and its commit when the task
        // finished leaves its event counted as queued, never unaccounted.
        let c = tracer.counters(h).unwrap();
        assert_eq!(c.accepted, c.delivered + c.overwritten + c.queued, "{c:?}");
        assert!(c.attempts() <= logged, "{c:?}");
        assert!(c.queued <= 2, "{c:?}");
    }
    // The file holds whole records: the delivered ones and the hoops.
    let events = read_file(&dir.join("queue0-online.qtr"));
    let kept = events.iter().filter(|e| e.id != HOOPS).count() as u64;
    let lost: u64 = events
        .iter()
        .filter(|e| e.id == HOOPS)
        .map(|e| e.args[0])
        .sum();
    let c = report.queues[0].counters;
    assert_eq!(kept, c.delivered);
    assert!(lost <= c.dropped, "{lost} {c:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

// ----- panics in a user-defined queue ---------------------------------------------

/// Which of its hooks a [`Fragile`] queue panics in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum PanicIn {
    Create,
    Terminate,
    Post,
    Get,
    PostRun,
}

struct Fragile(PanicIn);

struct FragileQueue {
    at: PanicIn,
    accepted: AtomicU64,
}

impl QueueType for Fragile {
    type Params = ();
    const NAME: &'static str = "fragile";
    fn create(&self, _: (), _: &QueueContext) -> Result<AnyQueue, ConfigError> {
        if self.0 == PanicIn::Create {
            panic!("create hook exploded");
        }
        Ok(AnyQueue::custom(FragileQueue {
            at: self.0,
            accepted: AtomicU64::new(0),
        }))
    }
}

impl Queue for FragileQueue {
    fn get(&self) -> Option<Reservation> {
        if self.at == PanicIn::Get {
            panic!("get exploded");
        }
        Some(Reservation::new(0))
    }
    fn post(&self, _: Reservation, event: &Event) {
        if self.at == PanicIn::Post && event.args[0] == 13 {
            panic!("post exploded on 13");
        }
        self.accepted.fetch_add(1, Ordering::Relaxed);
    }
    fn post_run(&self, run: &qtrace::combine::Run<'_>) -> usize {
        if self.at == PanicIn::PostRun {
            panic!("post_run exploded");
        }
        self.accepted.fetch_add(run.len() as u64, Ordering::Relaxed);
        run.len()
    }
    fn terminate(&self, _: &QueueContext) -> Result<(), ConfigError> {
        if self.at == PanicIn::Terminate {
            panic!("terminate hook exploded");
        }
        Ok(())
    }
    fn counters(&self) -> QueueCounters {
        let n = self.accepted.load(Ordering::Relaxed);
        QueueCounters::all_delivered(n)
    }
}

#[test]
fn panics_in_create_and_terminate_hooks_become_typed_errors() {
    let t = Tracer::new();
    t.register_queue_type(Fragile(PanicIn::Create)).unwrap();
    let e = t.create_queue::<Fragile>(()).unwrap_err();
    assert!(e.to_string().contains("create hook exploded"), "{e}");
    assert_eq!(t.queue_count(), 0);
    // The tracer goes on: a working queue gets handle 0.
    let t2 = Tracer::new();
    t2.register_queue_type(Fragile(PanicIn::Terminate)).unwrap();
    let q = t2.create_queue::<Fragile>(()).unwrap();
    let c = t2
        .create_queue::<Circular>(
            CircularParams::default()
                .with_capacity(4)
                .with_file(scratch("terminate").join("c.qtr")),
        )
        .unwrap();
    t2.assign_event(user::USER0, q).unwrap();
    t2.assign_event(user::USER1, c).unwrap();
    t2.activate().unwrap();
    t2.log_event(user::USER0, [1, 0]);
    t2.log_event(user::USER1, [1, 0]);
    let report = t2.shutdown().unwrap();
    let r = &report.queues[q.index()];
    assert!(r
        .error
        .as_deref()
        .unwrap()
        .contains("terminate hook exploded"));
    assert_eq!(r.counters.accepted, 1);
    // The queue after it was still terminated (saved).
    assert_eq!(report.queues[c.index()].error, None);
    assert_eq!(report.queues[c.index()].counters.delivered, 1);
}

/// The hot path does not catch panics (a `catch_unwind` per event is not
/// free, and a panicking queue is a bug in that queue): a panic in a user
/// queue's `get`, `post` or `post_run` unwinds into the thread that called
/// `log_event` (or `log_str`), like a panic in its own code. The tracer holds
/// no lock on the hot path, so it stays consistent and usable from every
/// other thread, and other queues are untouched. On its way out the tracer
/// counts the events involved as lost to a panic (issue 23, item 7): the
/// queue's status and the shutdown report say so and the report is not
/// clean.
#[test]
fn a_panic_in_get_or_post_unwinds_into_the_caller_and_the_tracer_goes_on() {
    for at in [PanicIn::Post, PanicIn::Get, PanicIn::PostRun] {
        let tracer = Arc::new(Tracer::with_config(
            Config::default().with_output_dir(scratch("post")),
        ));
        tracer.register_queue_type(Fragile(at)).unwrap();
        let q = tracer.create_queue::<Fragile>(()).unwrap();
        let c = tracer
            .create_queue::<Circular>(CircularParams::default().with_capacity(64))
            .unwrap();
        tracer.assign_event(user::USER0, q).unwrap();
        tracer.assign_event(user::USER1, c).unwrap();
        tracer.activate().unwrap();
        let victim = {
            let tracer = Arc::clone(&tracer);
            thread::spawn(move || {
                for i in 0..20 {
                    tracer.log_event(user::USER1, [i, 0]);
                    if at == PanicIn::PostRun {
                        // 1 + ⌈20 / 16⌉ = 3 records.
                        tracer.log_str(user::USER0, "twenty bytes of text");
                    } else {
                        tracer.log_event(user::USER0, [i, 0]);
                    }
                }
            })
        };
        let panic = victim.join().unwrap_err();
        let msg = panic
            .downcast_ref::<&str>()
            .copied()
            .or(panic.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("");
        assert!(msg.contains("exploded"), "{msg}");
        // Other threads and queues go on.
        for i in 100..110 {
            tracer.log_event(user::USER1, [i, 0]);
        }
        let lost = if at == PanicIn::PostRun { 3 } else { 1 };
        let status = tracer.status(q).unwrap();
        assert_eq!(status.lost_to_panic, lost, "{status:?}");
        assert!(!status.is_healthy());
        let said = format!("panicked on {lost} events, which may be lost");
        assert!(
            status.last_error.as_deref().unwrap_or("").contains(&said),
            "{status:?}"
        );
        let report = tracer.shutdown().unwrap();
        assert!(!report.is_clean(), "{report:?}");
        assert_eq!(report.lost_to_panic(), lost);
        assert_eq!(report.queues[q.index()].status.lost_to_panic, lost);
        assert_eq!(report.queues[c.index()].status.lost_to_panic, 0);
        assert!(report.queues[c.index()].status.is_healthy());
        let fragile = report.queues[q.index()].counters;
        let circular = report.queues[c.index()].counters;
        if at == PanicIn::Post {
            // 0..=12 posted, then the panic on 13.
            assert_eq!(fragile.accepted, 13);
            assert_eq!(circular.accepted, 14 + 10);
        } else {
            assert_eq!(fragile.accepted, 0);
            assert_eq!(circular.accepted, 1 + 10);
        }
    }
}
