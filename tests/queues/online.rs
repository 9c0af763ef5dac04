//! The circular-online queue: drains to a file while the program runs, loses
//! nothing while the drain keeps up, accounts for every event exactly when it
//! does not, and survives a sink that stops working.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use qtrace::classes::{tracer::HOOPS, user};
use qtrace::clock::{Clock, ManualClock};
use qtrace::queues::{Online, OnlineParams};
use qtrace::wire::{CloseRecord, TraceHeader};
use qtrace::{Config, Event, Tracer};
use qtrace_core::encode::record;

const N: u64 = if cfg!(miri) { 300 } else { 1 };

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("qtrace-online-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// The records of a file's body: 32-byte records (version 1), or compact
/// chunks (version 2, the default) numbered 0, 1, 2, … with each chunk's
/// first event the records before it (FORMAT.md 1.11). Whole records (or
/// chunks) only.
fn body_records(header: &TraceHeader, body: &[u8]) -> Vec<Event> {
    if !header.is_compact() {
        assert_eq!(body.len() % 32, 0, "whole records only");
        return body
            .chunks_exact(32)
            .map(|c| record::parse(c.try_into().unwrap()))
            .collect();
    }
    let mut events = Vec::new();
    let (mut pos, mut sequence) = (0, 0);
    while pos < body.len() {
        let chunk =
            qtrace_core::compact::Chunk::new_checked(&body[pos..]).expect("whole chunks only");
        let h = chunk.header();
        assert_eq!((h.sequence, h.first_event), (sequence, events.len() as u64));
        events.extend(chunk.records().map(|r| r.unwrap()));
        pos += chunk.len();
        sequence += 1;
    }
    events
}

/// The bytes of the whole chunks at the start of a compact body.
fn whole_chunks(body: &[u8]) -> usize {
    let mut pos = 0;
    while let Ok(chunk) = qtrace_core::compact::Chunk::new_checked(&body[pos..]) {
        pos += chunk.len();
    }
    pos
}

fn parse_trace(bytes: &[u8]) -> (TraceHeader, Vec<Event>) {
    let (header, len) = TraceHeader::decode(bytes).expect("valid header");
    let mut events = body_records(&header, &bytes[len..]);
    // A file that ends with its close run: the run is not an event, and its
    // part 3 must agree with the records before it.
    if events.len() >= 3 {
        let run: [Event; 3] = events[events.len() - 3..].try_into().unwrap();
        if let Some(close) = CloseRecord::from_records(&run) {
            events.truncate(events.len() - 3);
            let lost: u64 = events
                .iter()
                .filter(|e| e.id == HOOPS)
                .map(|e| e.args[0])
                .sum();
            assert_eq!((close.records, close.lost), (events.len() as u64, lost));
        }
    }
    (header, events)
}

fn read_trace(path: &Path) -> (TraceHeader, Vec<Event>) {
    parse_trace(&std::fs::read(path).unwrap())
}

/// Splits a file's records into logged events (their `args[0]`) and the
/// total of its hoops records, checking every hoops names `queue`.
fn split(events: &[Event], queue: u64) -> (Vec<u64>, u64) {
    let mut values = Vec::new();
    let mut lost = 0;
    for e in events {
        if e.id == HOOPS {
            assert_eq!(e.source, u32::MAX);
            assert_eq!(e.args[1], queue);
            assert!(e.args[0] > 0, "a hoops record never says 0");
            lost += e.args[0];
        } else if e.id.0 == 0 && e.flags & 0x8000 != 0 {
            // Part of a close run the writer failed to finish.
        } else {
            assert_eq!(e.id, user::USER0);
            values.push(e.args[0]);
        }
    }
    (values, lost)
}

fn wait_until(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < limit, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_micros(200));
    }
}

#[test]
fn drain_keeping_up_loses_nothing_over_ten_times_the_queue() {
    let dir = temp_dir("keepup");
    let clock = ManualClock::new(0);
    let tracer = Tracer::with_config(
        Config::default()
            .with_output_dir(&dir)
            .with_clock(Clock::manual(&clock)),
    );
    // The period is an hour: only the high-water wake-up (40 % of 1024 =
    // 409 events) can drain the queue in time, so this also pins the early
    // wake-up. Each burst fills the queue exactly to the mark.
    let q = tracer
        .create_queue::<Online>(
            OnlineParams::default()
                .with_capacity(1024)
                .with_period(Duration::from_secs(3600))
                .with_high_water_percent(40),
        )
        .unwrap();
    assert_eq!(
        tracer
            .queue(q)
            .unwrap()
            .as_online()
            .unwrap()
            .high_water_mark(),
        409
    );
    tracer.assign_class(user::CLASS, q).unwrap();
    let burst = 409;
    let bursts = (26 / N).max(1);
    let total = burst * bursts;
    let mut logged = 0;
    for b in 0..bursts {
        for _ in 0..burst {
            clock.advance(10);
            tracer.log_event(user::USER0, [logged, 0]);
            logged += 1;
        }
        if b == 0 {
            // The first burst waits for phase 2; the task's first round
            // (at start) writes it.
            tracer.activate().unwrap();
        }
        wait_until("the burst is written", Duration::from_secs(30), || {
            tracer.counters(q).unwrap().queued == 0
        });
    }
    assert!(total >= 10 * 1024 / N);
    let report = tracer.shutdown().unwrap();
    let c = report.queues[0].counters;
    assert_eq!(
        (c.accepted, c.dropped, c.delivered, c.queued),
        (total, 0, total, 0)
    );
    assert!(report.is_clean(), "{report:?}");
    let path = dir.join("queue0-online.qtr");
    assert_eq!(report.queues[0].status.files, std::slice::from_ref(&path));
    let (header, events) = read_trace(&path);
    assert_eq!(
        header.queue().map(|(h, t)| (h.0, t.to_string())),
        Some((0, "online".into()))
    );
    let (values, lost) = split(&events, 0);
    assert_eq!(lost, 0);
    assert_eq!(values, (0..total).collect::<Vec<_>>());
    // Times are the manual clock's, in order.
    assert!(events.windows(2).all(|w| w[0].time < w[1].time));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A writer that takes its time, so the drain falls behind.
struct Slow(Arc<Mutex<Vec<u8>>>);

impl Write for Slow {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        std::thread::sleep(Duration::from_millis(2));
        // Take at most 4 KiB per call: partial writes must be handled too.
        let n = buf.len().min(4096);
        self.0.lock().unwrap().extend_from_slice(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn too_slow_a_drain_accounts_for_every_event_exactly() {
    let out = Arc::new(Mutex::new(Vec::new()));
    let tracer = Tracer::with_config(Config::default().with_output_dir(temp_dir("slow")));
    let q = tracer
        .create_queue::<Online>(
            OnlineParams::default()
                .with_capacity(256)
                .with_period(Duration::from_millis(1))
                .with_writer(Slow(Arc::clone(&out))),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer.activate().unwrap();
    let total = 200_000 / N;
    for i in 0..total {
        tracer.log_event(user::USER0, [i, 0]);
        if i % 1000 == 0 {
            std::thread::yield_now();
        }
    }
    let report = tracer.shutdown().unwrap();
    let c = report.queues[0].counters;
    assert!(
        c.dropped > 0,
        "the drain was expected to fall behind: {c:?}"
    );
    assert_eq!(c.accepted + c.dropped, total);
    assert_eq!((c.queued, c.overwritten), (0, 0));
    assert_eq!(c.delivered, c.accepted);
    assert!(report.queues[0].status.files.is_empty());
    let bytes = out.lock().unwrap().clone();
    let (_, events) = parse_trace(&bytes);
    let (values, lost) = split(&events, 0);
    // File events + hoops counts = events logged, exactly.
    assert_eq!(values.len() as u64, c.delivered);
    assert_eq!(lost, c.dropped);
    assert_eq!(values.len() as u64 + lost, total);
    // What was kept is in logging order, and the hoops records are where
    // events are missing: before each gap's end, the hoops seen since the
    // last event never undercount the gap (they may trail it by one round).
    assert!(values.windows(2).all(|w| w[0] < w[1]));
    let mut hoops_so_far = 0;
    let mut missing_so_far = 0;
    let mut prev: Option<u64> = None;
    for e in &events {
        if e.id == HOOPS {
            hoops_so_far += e.args[0];
        } else {
            let v = e.args[0];
            missing_so_far += v - prev.map_or(0, |p| p + 1);
            prev = Some(v);
            assert!(
                hoops_so_far <= missing_so_far,
                "a hoops record before its loss"
            );
        }
    }
}

/// A writer whose disk can be "full".
#[derive(Clone)]
struct Flaky {
    full: Arc<AtomicBool>,
    data: Arc<Mutex<Vec<u8>>>,
}

impl Write for Flaky {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.full.load(Ordering::SeqCst) {
            return Err(io::Error::other("no space left on device"));
        }
        self.data.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn flaky_tracer(size: usize) -> (Tracer, Flaky) {
    let flaky = Flaky {
        full: Arc::new(AtomicBool::new(false)),
        data: Arc::new(Mutex::new(Vec::new())),
    };
    let tracer = Tracer::with_config(Config::default().with_output_dir(temp_dir("flaky")));
    let q = tracer
        .create_queue::<Online>(
            OnlineParams::default()
                .with_capacity(size)
                .with_period(Duration::from_millis(1))
                .with_writer(flaky.clone()),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer.activate().unwrap();
    (tracer, flaky)
}

#[test]
fn a_full_disk_is_reported_and_logging_goes_on_then_recovers() {
    let (tracer, flaky) = flaky_tracer(512);
    let q = qtrace::QueueHandle(0);
    for i in 0..100 {
        tracer.log_event(user::USER0, [i, 0]);
    }
    wait_until("100 written", Duration::from_secs(30), || {
        tracer.counters(q).unwrap().delivered == 100
    });
    assert!(tracer.status(q).unwrap().is_healthy());
    flaky.full.store(true, Ordering::SeqCst);
    // Logging never blocks: 5000 more events into a 512-event queue whose
    // sink fails; the excess is dropped and counted.
    let t = Instant::now();
    for i in 100..5100 {
        tracer.log_event(user::USER0, [i, 0]);
    }
    assert!(t.elapsed() < Duration::from_secs(5));
    wait_until("the failure is reported", Duration::from_secs(30), || {
        tracer.status(q).unwrap().io_errors > 0
    });
    let status = tracer.status(q).unwrap();
    assert!(!status.is_healthy());
    assert!(
        status
            .last_error
            .as_deref()
            .unwrap()
            .contains("no space left"),
        "{status:?}"
    );
    let c = tracer.counters(q).unwrap();
    assert_eq!(c.accepted + c.dropped, 5100);
    assert_eq!(c.delivered, 100);
    // Space comes back: the kept events and the hoops record get written.
    flaky.full.store(false, Ordering::SeqCst);
    let report = tracer.shutdown().unwrap();
    let c = report.queues[0].counters;
    assert_eq!(c.queued, 0);
    assert_eq!(c.delivered + c.dropped, 5100);
    // Held while the sink failed: the ring (512) and the task's pending
    // bytes (at most what the ring held when the write failed).
    assert!(c.dropped >= 5100 - 100 - 2 * 512, "{c:?}");
    let (_, events) = parse_trace(&flaky.data.lock().unwrap());
    let (values, lost) = split(&events, 0);
    assert_eq!(values.len() as u64 + lost, 5100);
    assert_eq!(lost, c.dropped);
    // One producer: every gap in the logged sequence is announced by hoops
    // records placed exactly at the gap, whose counts are the gap's size.
    // (How many gaps there are depends on when the drain task popped while
    // the sink was failing, so the test does not assume a single one.)
    assert_gaps_marked_exactly(&events, 5100);
    assert!(values.windows(2).all(|w| w[0] < w[1]));
}

/// Walks a single producer's trace (values 0, 1, 2, … in `args[0]`): each
/// kept value must equal the next expected value plus the losses announced
/// by the hoops records just before it; trailing hoops cover the tail.
fn assert_gaps_marked_exactly(events: &[Event], logged: u64) {
    let (mut expected, mut announced) = (0u64, 0u64);
    for (i, e) in events.iter().enumerate() {
        if e.id == HOOPS {
            announced += e.args[0];
        } else {
            assert_eq!(
                e.args[0],
                expected + announced,
                "record {i}: a gap not announced exactly by hoops records"
            );
            expected = e.args[0] + 1;
            announced = 0;
        }
    }
    assert_eq!(expected + announced, logged, "the tail's loss is announced");
}

#[test]
fn a_sink_that_never_recovers_is_reported_at_shutdown() {
    let (tracer, flaky) = flaky_tracer(64);
    flaky.full.store(true, Ordering::SeqCst);
    for i in 0..1000 {
        tracer.log_event(user::USER0, [i, 0]);
    }
    let report = tracer.shutdown().unwrap();
    let r = &report.queues[0];
    assert!(!report.is_clean());
    assert!(r.status.io_errors > 0);
    let msg = r.status.last_error.as_deref().unwrap();
    assert!(msg.contains("could not be written"), "{msg}");
    let c = r.counters;
    // Nothing is lost silently: what could not be written is still counted.
    assert_eq!(c.accepted + c.dropped, 1000);
    assert_eq!(c.delivered, 0);
    assert_eq!(c.queued, c.accepted);
    assert!(c.is_consistent());
}

#[test]
fn unwritable_files_are_typed_errors_at_activation() {
    let dir = temp_dir("unwritable");
    std::fs::create_dir_all(&dir).unwrap();
    let blocker = dir.join("not-a-dir");
    std::fs::write(&blocker, b"x").unwrap();
    let tracer = Tracer::with_config(Config::default().with_output_dir(&dir));
    tracer
        .create_queue::<Online>(OnlineParams::default().with_file(blocker.join("t.qtr")))
        .unwrap();
    tracer
        .assign_class(user::CLASS, qtrace::QueueHandle(0))
        .unwrap();
    let e = tracer.activate().unwrap_err();
    assert!(matches!(e, qtrace::ConfigError::Io(_)), "{e}");
    assert!(e.to_string().contains("t.qtr"), "{e}");
    // The status says so at once (not only the shutdown report)...
    let status = tracer.status(qtrace::QueueHandle(0)).unwrap();
    assert_eq!(status.io_errors, 1, "{status:?}");
    let last = status.last_error.unwrap();
    assert!(last.contains("t.qtr") && last.contains("dropped"), "{last}");
    // ...and events logged after the failed activation are refused and
    // counted as dropped, not accepted into a queue that cannot write them.
    for i in 0..10 {
        tracer.log_event(user::USER0, [i, 0]);
    }
    let c = tracer.counters(qtrace::QueueHandle(0)).unwrap();
    assert_eq!((c.accepted, c.dropped), (0, 10), "{c:?}");
    // Fix the cause and run phase 2 again: the queue starts, drains,
    // reopens and marks the 10 drops with a hoops record.
    std::fs::remove_file(&blocker).unwrap();
    tracer.activate().unwrap();
    std::thread::sleep(Duration::from_millis(50));
    tracer.log_event(user::USER0, [10, 0]);
    let report = tracer.shutdown().unwrap();
    let c = report.queues[0].counters;
    assert_eq!(
        (c.accepted, c.dropped, c.delivered),
        (1, 10, 1),
        "{report:?}"
    );
    // The failed phase 2 stays in the report: it is not clean.
    assert!(!report.is_clean(), "{report:?}");
    assert!(blocker.join("t.qtr").exists());
    let (_, events, _) = crate::common::read_all::read_all(&blocker.join("t.qtr"));
    let hoops: u64 = events
        .iter()
        .filter(|e| e.id == HOOPS)
        .map(|e| e.args[0])
        .sum();
    assert_eq!(hoops, 10, "{events:?}");
    assert_eq!(events.iter().filter(|e| e.id == user::USER0).count(), 1);
    #[cfg(target_os = "linux")]
    {
        // A disk that is always full.
        let tracer = Tracer::with_config(Config::default().with_output_dir(&dir));
        tracer
            .create_queue::<Online>(OnlineParams::default().with_file("/dev/full"))
            .unwrap();
        let e = tracer.activate().unwrap_err();
        assert!(e.to_string().contains("/dev/full"), "{e}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_parameters_are_typed_errors() {
    let tracer = Tracer::new();
    for p in [
        OnlineParams::default().with_capacity(1000),
        OnlineParams::default().with_capacity(0),
        OnlineParams::default().with_period(Duration::ZERO),
        OnlineParams::default().with_high_water_percent(0),
        OnlineParams::default().with_high_water_percent(101),
    ] {
        let e = tracer.create_queue::<Online>(p).unwrap_err();
        assert!(
            matches!(e, qtrace::ConfigError::InvalidParameter { .. }),
            "{e}"
        );
    }
}

#[test]
fn events_logged_before_phase_2_and_a_queue_never_activated_are_written() {
    let dir = temp_dir("early");
    let tracer = Tracer::with_config(Config::default().with_output_dir(&dir));
    let q = tracer
        .create_queue::<Online>(OnlineParams::default().with_capacity(64))
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    for i in 0..100 {
        tracer.log_event(user::USER0, [i, 0]);
    }
    // No phase 2: shutdown writes what the queue holds, and the loss.
    let report = tracer.shutdown().unwrap();
    let c = report.queues[0].counters;
    assert_eq!((c.accepted, c.dropped, c.delivered), (64, 36, 64));
    let (_, events) = read_trace(&dir.join("queue0-online.qtr"));
    let (values, lost) = split(&events, 0);
    assert_eq!(values, (0..64).collect::<Vec<_>>());
    assert_eq!(lost, 36);
    assert_eq!(events.last().unwrap().id, HOOPS);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_drain_task_never_logs_into_the_queue_it_drains() {
    // Every class, the tracer's own included, goes to the online queue; the
    // task runs every millisecond; nobody logs. Nothing may appear.
    let dir = temp_dir("selftrace");
    let tracer = Tracer::with_config(Config::default().with_output_dir(&dir));
    let q = tracer
        .create_queue::<Online>(
            OnlineParams::default()
                .with_capacity(64)
                .with_period(Duration::from_millis(1)),
        )
        .unwrap();
    for class in tracer.catalog().classes() {
        tracer.assign_class(class.id, q).unwrap();
    }
    tracer.activate().unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let report = tracer.shutdown().unwrap();
    assert_eq!(
        report.queues[0].counters,
        qtrace::queue::QueueCounters::default()
    );
    let (_, events) = read_trace(&dir.join("queue0-online.qtr"));
    assert!(events.is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A writer that follows a script: take everything, take a few bytes, or fail.
struct Chaos {
    script: Vec<u8>,
    step: usize,
    data: Arc<Mutex<Vec<u8>>>,
}

impl Write for Chaos {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let action = self.script[self.step % self.script.len()];
        self.step += 1;
        let n = match action {
            0 => buf.len(),
            1 => buf.len().min(7 + self.step % 50),
            _ => return Err(io::Error::other("scripted failure")),
        };
        self.data.lock().unwrap().extend_from_slice(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(if cfg!(miri) { 2 } else { 64 }))]
    /// Whatever the capacity, the bursts, the writer's failures and
    /// partial writes, and the form (compact chunks or 32-byte records): the counters balance, the file holds exactly the
    /// delivered events in order, and hoops records never come before their
    /// loss and add up to the drops once everything is written.
    #[test]
    fn online_queue_accounts_exactly_under_random_faults(
        capacity_log in 1u32..9,
        bursts in proptest::collection::vec((1u64..600, 0u64..3), 1..12),
        script in proptest::collection::vec(0u8..3, 1..8),
        compact in proptest::bool::ANY,
        counters in proptest::bool::ANY,
    ) {
        // The header goes in one piece (a failure there fails phase 2,
        // tested elsewhere); the writer always makes progress eventually.
        let script: Vec<u8> = [0].into_iter().chain(script).chain([0]).collect();
        let data = Arc::new(Mutex::new(Vec::new()));
        let tracer = Tracer::with_config(Config::default().with_output_dir(temp_dir("prop")));
        let q = tracer
            .create_queue::<Online>(
                OnlineParams::default()
                    .with_capacity(1 << capacity_log)
                    .with_period(Duration::from_millis(1))
                    .with_compact(compact)
                    .with_queue_counters(counters)
                    .with_writer(Chaos { script, step: 0, data: Arc::clone(&data) }),
            )
            .unwrap();
        tracer.assign_class(user::CLASS, q).unwrap();
        tracer.activate().unwrap();
        let mut logged = 0u64;
        for (n, pause) in bursts {
            for _ in 0..n {
                tracer.log_event(user::USER0, [logged, 0]);
                logged += 1;
            }
            std::thread::sleep(Duration::from_millis(pause));
        }
        let report = tracer.shutdown().unwrap();
        let c = report.queues[0].counters;
        proptest::prop_assert_eq!(c.accepted + c.dropped, logged);
        proptest::prop_assert!(c.is_consistent());
        // Either everything (events and hoops) reached the writer, or the
        // status says what did not.
        let incomplete = report.queues[0]
            .status
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("at shutdown"));
        proptest::prop_assert!(incomplete || c.queued == 0);
        // The close run is one more write, which the writer may also fail
        // (part of it then ends the bytes: the trace reads as cut short).
        let close_failed = report.queues[0]
            .status
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("close record"));
        let mut bytes = data.lock().unwrap().clone();
        let (header, header_len) = TraceHeader::decode(&bytes).unwrap();
        proptest::prop_assert_eq!(header.is_compact(), compact);
        if incomplete || close_failed {
            // The writer was still failing at shutdown: it may hold the start
            // of a record (or chunk) it never finished.
            let body = bytes.len() - header_len;
            let whole = header_len + if compact { whole_chunks(&bytes[header_len..]) } else { body / 32 * 32 };
            bytes.truncate(whole);
        }
        let (_, events) = parse_trace(&bytes);
        // The queue's own counters (FORMAT.md 1.3.4), when sampled: records
        // of the file, never its events; each sample's losses, never
        // fewer than before, are those marked before it (one producer), and
        // its fill level is at most the capacity.
        let catalog = header.catalog();
        let ids = ["qtrace:queue.fill", "qtrace:queue.lost"]
            .map(|n| catalog.counter::<u64>(n).map(|c| c.id()));
        proptest::prop_assert_eq!(ids.map(|i| i.is_some()), [counters; 2]);
        let (mut marked, mut last_lost, mut samples) = (0u64, 0u64, 0u64);
        for e in &events {
            if e.id == HOOPS {
                marked += e.args[0];
            } else if Some(e.id) == ids[0] {
                proptest::prop_assert!(e.args[0] <= 1 << capacity_log);
                samples += 1;
            } else if Some(e.id) == ids[1] {
                proptest::prop_assert!(last_lost <= e.args[0] && e.args[0] <= marked);
                last_lost = e.args[0];
            }
        }
        // At least the two rounds of shutdown, unless a write failed.
        let failed = report.queues[0].status.io_errors > 0;
        proptest::prop_assert!(!counters || failed || samples >= 2);
        let events: Vec<Event> = events
            .into_iter()
            .filter(|e| !ids.contains(&Some(e.id)))
            .collect();
        let (values, lost) = split(&events, 0);
        proptest::prop_assert_eq!(values.len() as u64, c.delivered);
        proptest::prop_assert!(values.windows(2).all(|w| w[0] < w[1]));
        if !incomplete {
            proptest::prop_assert_eq!(lost, c.dropped);
            proptest::prop_assert_eq!(values.len() as u64 + lost, logged);
        }
        let (mut marked, mut missing, mut prev) = (0u64, 0u64, None::<u64>);
        for e in &events {
            if e.id == HOOPS {
                marked += e.args[0];
            } else if e.id.0 == 0 && e.flags & 0x8000 != 0 {
                // Part of a close run the writer failed to finish.
            } else {
                missing += e.args[0] - prev.map_or(0, |p| p + 1);
                prev = Some(e.args[0]);
                // One producer and a latching queue: every gap is marked
                // exactly, right before the first event after it.
                proptest::prop_assert_eq!(marked, missing);
            }
        }
    }
}
