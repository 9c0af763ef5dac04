//! Issue 12, items 3, 5 and 6: every file a queue writes ends with its close
//! run carrying the queue's final counters; readers and the CLI tell a
//! complete file from a cut one; a user queue's refusals are counted; a bad
//! directory fails phase 2.

use std::path::{Path, PathBuf};
use std::time::Duration;

use qtrace::classes::{tracer::HOOPS, user};
use qtrace::clock::{Clock, ManualClock};
use qtrace::queue::{Queue, QueueContext, QueueCounters, Reservation};
use qtrace::queues::QueueType;
use qtrace::queues::{
    AnyQueue, Circular, CircularParams, Fixed, FixedParams, Online, OnlineParams,
};
use qtrace::reader::{Completeness, TraceReader};
use qtrace::wire::{QueueTotals, TraceHeader, TraceWriter};
use qtrace::{Config, ConfigError, Event, Tracer};

use crate::common::default_queues;
use crate::common::manual_tracer;
use crate::common::temp_dirs;
use default_queues::{circular_queue, fixed_queue};
use manual_tracer::manual_tracer as tracer;

fn dir(name: &str) -> PathBuf {
    temp_dirs::fresh_dir("close", name)
}

/// Every record of `path` (the close run left out) and its completeness.
fn read(path: &Path) -> (Vec<Event>, Completeness) {
    let mut r = TraceReader::open(path).unwrap();
    let events = r.by_ref().map(Result::unwrap).collect();
    (events, r.completeness().unwrap())
}

fn close_of(c: Completeness) -> qtrace::wire::CloseRecord {
    match c {
        Completeness::Complete(close) => close,
        other => panic!("not complete: {other:?}"),
    }
}

fn totals(c: QueueCounters) -> QueueTotals {
    QueueTotals {
        accepted: c.accepted,
        dropped: c.dropped,
        overwritten: c.overwritten,
        delivered: c.delivered,
    }
}

#[test]
fn fixed_circular_snapshot_and_online_files_end_with_their_final_counters() {
    let d = dir("all");
    let clock = ManualClock::new(0);
    let t = tracer(&d, &clock);
    let fixed = fixed_queue(&t, 4);
    let circ = circular_queue(&t, 4);
    let online = t
        .create_queue::<Online>(
            OnlineParams::default()
                .with_capacity(64)
                .with_period(Duration::from_secs(3600)),
        )
        .unwrap();
    t.assign_event(user::USER0, fixed).unwrap();
    t.assign_event(user::USER1, circ).unwrap();
    t.assign_event(user::USER2, online).unwrap();
    t.activate().unwrap();
    for i in 0..10 {
        clock.advance(10);
        t.log_event(user::USER0, [i, 0]);
        t.log_event(user::USER1, [i, 0]);
        t.log_event(user::USER2, [i, 0]);
    }
    // A snapshot carries the counters of its moment.
    let snap = d.join("snap.qtr");
    clock.advance(5);
    let c = t.queue(circ).unwrap().as_circular().unwrap();
    assert_eq!(c.snapshot(&snap).unwrap(), 5); // 4 events + 1 hoops
    let (events, end) = read(&snap);
    assert_eq!(events.len(), 5);
    let close = close_of(end);
    assert_eq!(close.time, 105);
    assert_eq!(
        close.totals,
        QueueTotals {
            accepted: 10,
            dropped: 0,
            overwritten: 6,
            delivered: 0
        }
    );
    assert_eq!((close.records, close.lost), (5, 6));

    clock.advance(5);
    let report = t.shutdown().unwrap();
    assert!(report.is_clean(), "{report:?}");
    let expect = [
        (fixed, "queue0-fixed.qtr", (4, 6, 0, 4), (5, 6)),
        (circ, "queue1-circular.qtr", (10, 0, 6, 4), (5, 6)),
        (online, "queue2-online.qtr", (10, 0, 0, 10), (10, 0)),
    ];
    for (q, file, (a, dr, o, de), (records, lost)) in expect {
        let path = d.join(file);
        let entry = &report.queues[q.0 as usize];
        // The circular queue's report lists its snapshot too.
        let listed: Vec<PathBuf> = if q == circ {
            vec![snap.clone(), path.clone()]
        } else {
            vec![path.clone()]
        };
        assert_eq!(entry.status.files, listed);
        let (events, end) = read(&path);
        let close = close_of(end);
        assert_eq!(close.time, 110, "{file}");
        assert_eq!(
            close.totals,
            QueueTotals {
                accepted: a,
                dropped: dr,
                overwritten: o,
                delivered: de
            },
            "{file}"
        );
        // The close run is the report's counters, exactly.
        assert_eq!(close.totals, totals(entry.counters), "{file}");
        assert_eq!((close.records, close.lost), (records, lost), "{file}");
        assert_eq!(events.len() as u64, records);
        let stated: u64 = events
            .iter()
            .filter(|e| e.id == HOOPS)
            .map(|e| e.args[0])
            .sum();
        assert_eq!(stated, lost);
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// A complete, a cut and an old file, through `qtrace stats`, `dump` and
/// `convert`.
/// A user queue that refuses every other event and counts nothing.
struct Forgetful {
    calls: std::sync::atomic::AtomicU64,
}

impl Queue for Forgetful {
    fn get(&self) -> Option<Reservation> {
        let n = self
            .calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        (n % 2 == 0).then(|| Reservation::new(n))
    }
    fn post(&self, _: Reservation, _: &Event) {}
    fn counters(&self) -> QueueCounters {
        let n = self.calls.load(std::sync::atomic::Ordering::Relaxed);
        QueueCounters::all_delivered(n.div_ceil(2))
    }
}

struct ForgetfulType;

impl QueueType for ForgetfulType {
    type Params = ();
    const NAME: &'static str = "forgetful";
    fn create(&self, _: (), _: &QueueContext) -> Result<AnyQueue, ConfigError> {
        Ok(AnyQueue::custom(Forgetful {
            calls: Default::default(),
        }))
    }
}

#[test]
fn a_user_queue_refusing_events_is_counted_as_dropping_them() {
    let t = Tracer::new();
    t.register_queue_type(ForgetfulType).unwrap();
    let q = t.create_queue::<ForgetfulType>(()).unwrap();
    t.assign_event(user::USER0, q).unwrap();
    t.activate().unwrap();
    for i in 0..10 {
        t.log_event(user::USER0, [i, 0]);
    }
    let c = t.counters(q).unwrap();
    assert_eq!((c.accepted, c.dropped, c.delivered), (5, 5, 5));
    assert_eq!(c.attempts(), 10);
    let report = t.shutdown().unwrap();
    assert_eq!(report.queues[0].counters.dropped, 5);
    assert_eq!(report.total_lost(), 5);
    assert!(
        !report.is_clean(),
        "a queue under-reporting its drops is not clean"
    );
    let why = report.queues[0].status.last_error.as_deref().unwrap();
    assert_eq!(
        why,
        "the queue's get refused 5 events but its counters show 0 dropped: the tracer counts all 5 as dropped"
    );
}

#[test]
fn a_bad_directory_fails_phase_2_for_fixed_and_circular_queues() {
    let d = dir("baddir");
    std::fs::create_dir_all(&d).unwrap();
    let blocker = d.join("not-a-dir");
    std::fs::write(&blocker, b"x").unwrap();
    for kind in ["fixed", "circular", "online"] {
        let t = Tracer::with_config(Config::default().with_output_dir(blocker.join("out")));
        let q = match kind {
            "fixed" => t.create_queue::<Fixed>(
                FixedParams::default().with_ring(qtrace::storage::RingStorage::Memory),
            ),
            "circular" => t.create_queue::<Circular>(
                CircularParams::default().with_ring(qtrace::storage::RingStorage::Memory),
            ),
            _ => t.create_queue::<Online>(OnlineParams::default()),
        }
        .unwrap();
        t.assign_event(user::USER0, q).unwrap();
        let e = t.activate().unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, ConfigError::Io(_)), "{kind}: {e:?}");
        assert!(msg.contains("not-a-dir"), "{kind}: {msg}");
        assert!(msg.contains("Config::with_output_dir"), "{kind}: {msg}");
        // No file appears, and no report lists one.
        let q_entry = t.queue(q).unwrap().status();
        assert!(q_entry.files.is_empty(), "{kind}: {q_entry:?}");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_file_opened_at_activate_and_never_saved_reads_as_cut() {
    let d = dir("unsaved");
    let t = Tracer::with_config(Config::default().with_output_dir(&d));
    let q = t.create_queue::<Fixed>(FixedParams::default()).unwrap();
    t.assign_event(user::USER0, q).unwrap();
    t.activate().unwrap();
    t.log_event(user::USER0, [1, 0]);
    // Before shutdown (as if the process died now): a header and no close.
    let path = d.join("queue0-fixed.qtr");
    let (events, end) = read(&path);
    assert!(events.is_empty());
    assert_eq!(
        end,
        Completeness::Cut {
            records: 0,
            lost: 0
        }
    );
    t.shutdown().unwrap();
    let (events, end) = read(&path);
    assert_eq!(events.len(), 1);
    assert_eq!(close_of(end).totals.delivered, 1);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_header_from_for_queue_promises_a_close_run() {
    let ctx = QueueContext {
        handle: qtrace::QueueHandle(0),
        type_name: "fixed",
        output_dir: std::env::temp_dir(),
        catalog: std::sync::Arc::new(qtrace::classes::Catalog::builtin()),
        clock: Clock::manual(&ManualClock::new(0)),
        names: Default::default(),
    };
    let h = TraceHeader::for_queue(&ctx);
    assert!(h.closes());
    let bytes = TraceWriter::new(Vec::new(), &h).unwrap().finish().unwrap();
    assert_eq!(u16::from_be_bytes([bytes[14], bytes[15]]), 1);
}
