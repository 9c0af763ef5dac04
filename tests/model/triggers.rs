//! Triggers (#15 item 3): start/stop recording after a count, per queue and
//! globally, with real threads and exact event sequences; snapshot on
//! trigger while two producer threads keep logging (complete files, named
//! in order, the trigger event last, suppressed snapshots counted); the
//! rate limit with a manual clock; typed errors.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use qtrace::classes::{tracer::HOOPS, user};
use qtrace::clock::{Clock, ManualClock};
use qtrace::filters::{Filter, GateQueue, Scope, Snapshot, Trigger, TriggerQueue};
use qtrace::queue::QueueCounters;
use qtrace::queues::{Circular, CircularParams};
use qtrace::reader::{Completeness, TraceReader};
use qtrace::storage::RingStorage;
use qtrace::{Config, ConfigError, EventId, QueueHandle, Tracer};

use crate::common::memory_tracer;
use memory_tracer::{memory_fixed, tracer, tracer_with};

fn fixed(tracer: &Tracer) -> QueueHandle {
    memory_fixed(tracer, 256)
}

fn circular(tracer: &Tracer, capacity: usize, shards: usize) -> QueueHandle {
    tracer
        .create_queue::<Circular>(
            CircularParams::default()
                .with_capacity(capacity)
                .with_shards(shards)
                .with_ring(RingStorage::Memory),
        )
        .unwrap()
}

/// (id, arg0) of every event in a fixed queue.
fn events(tracer: &Tracer, q: QueueHandle) -> Vec<(EventId, u64)> {
    tracer
        .queue(q)
        .unwrap()
        .as_fixed()
        .unwrap()
        .snapshot_events()
        .iter()
        .map(|e| (e.id, e.args[0]))
        .collect()
}

fn trigger_queue(tracer: &Tracer, h: QueueHandle) -> &TriggerQueue {
    tracer
        .queue(h)
        .unwrap()
        .as_custom::<TriggerQueue>()
        .unwrap()
}

/// Every gate queue of the tracer, in handle order.
fn gates(tracer: &Tracer) -> Vec<&GateQueue> {
    (0..tracer.queue_count())
        .filter_map(|i| {
            tracer
                .queue(QueueHandle(i as u16))
                .unwrap()
                .as_custom::<GateQueue>()
        })
        .collect()
}

/// Runs `f` on a new thread and waits for it (the events come from a
/// thread other than the test's).
fn on_thread(f: impl FnOnce() + Send) {
    std::thread::scope(|s| {
        s.spawn(f);
    });
}

#[test]
fn start_trigger_after_count_3_records_exactly_from_the_third() {
    let (tracer, _dir) = tracer();
    let q = fixed(&tracer);
    tracer.assign_class(user::CLASS, q).unwrap();
    let t = tracer
        .add_trigger(user::USER1, Trigger::start(Scope::Queue(q)).after(3))
        .unwrap();
    assert!(!tracer.is_recording(Scope::Queue(q)).unwrap());
    tracer.activate().unwrap();
    // A worker logs USER0 i; the test thread logs USER1 (the trigger) i;
    // in lock step, so the expected sequence is exact.
    let (to_worker, worker_rx) = mpsc::channel::<u64>();
    let (done_tx, done) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        let tracer = &tracer;
        s.spawn(move || {
            for i in worker_rx {
                tracer.log_event(user::USER0, [i, 0]);
                done_tx.send(()).unwrap();
            }
        });
        for i in 0..6 {
            to_worker.send(i).unwrap();
            done.recv().unwrap();
            tracer.log_event(user::USER1, [i, 0]);
        }
        drop(to_worker);
    });
    assert_eq!(
        events(&tracer, q),
        [
            (user::USER1, 2), // the third trigger event starts recording and is recorded
            (user::USER0, 3),
            (user::USER1, 3),
            (user::USER0, 4),
            (user::USER1, 4),
            (user::USER0, 5),
            (user::USER1, 5),
        ]
    );
    let tq = trigger_queue(&tracer, t);
    assert_eq!((tq.seen(), tq.fired()), (6, 4));
    tracer.log_str(user::USER1, "a run of two records");
    assert_eq!(tq.seen(), 7);
    assert_eq!(
        tracer.counters(t).unwrap(),
        QueueCounters::all_delivered(6 + 3)
    );
    assert!(tracer.is_recording(Scope::Queue(q)).unwrap());
    let gate = gates(&tracer);
    assert_eq!(gate.len(), 1);
    // USER0 0..=2 and USER1 0..=1 were masked: not lost; 7 events and the
    // run's 3 records passed.
    assert_eq!((gate[0].masked(), gate[0].passed()), (5, 10));
    let report = tracer.shutdown().unwrap();
    assert_eq!(report.total_lost(), 0);
    assert_eq!(report.queues[q.index()].counters.accepted, 10);
    assert!(report.is_clean());
}

#[test]
fn stop_trigger_after_count_then_a_start_trigger_resumes() {
    let (tracer, _dir) = tracer();
    let q = fixed(&tracer);
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer
        .add_trigger(user::USER2, Trigger::stop(Scope::Queue(q)).after(2))
        .unwrap();
    // Recording in q was started by the stop trigger's gate: on.
    tracer
        .add_trigger(user::USER3, Trigger::start(Scope::Queue(q)))
        .unwrap();
    assert!(tracer.is_recording(Scope::Queue(q)).unwrap());
    on_thread(|| {
        tracer.log_event(user::USER0, [0, 0]);
        tracer.log_event(user::USER2, [1, 0]); // first stop event: not yet
        tracer.log_event(user::USER0, [2, 0]);
        tracer.log_event(user::USER2, [3, 0]); // second: stops, recorded
        tracer.log_event(user::USER0, [4, 0]); // masked
        tracer.log_event(user::USER2, [5, 0]); // fires again: masked
        tracer.log_event(user::USER3, [6, 0]); // start: recorded
        tracer.log_event(user::USER0, [7, 0]);
    });
    assert_eq!(
        events(&tracer, q),
        [
            (user::USER0, 0),
            (user::USER2, 1),
            (user::USER0, 2),
            (user::USER2, 3),
            (user::USER3, 6),
            (user::USER0, 7),
        ]
    );
    assert_eq!(gates(&tracer)[0].masked(), 2);
    assert_eq!(tracer.shutdown().unwrap().total_lost(), 0);
}

#[test]
fn per_queue_and_global_triggers() {
    let (tracer, _dir) = tracer();
    let a = fixed(&tracer);
    let b = fixed(&tracer);
    tracer.assign_event(user::USER0, a).unwrap();
    tracer.assign_event(user::USER1, b).unwrap();
    // USER6 and USER7 are routed nowhere: they only fire.
    tracer
        .add_trigger(user::USER7, Trigger::stop(Scope::Queue(a)))
        .unwrap();
    tracer
        .add_trigger(user::USER6, Trigger::stop(Scope::Global))
        .unwrap();
    // A queue created after a global trigger is gated too.
    let c = fixed(&tracer);
    tracer.assign_event(user::USER2, c).unwrap();
    tracer.activate().unwrap();
    let log_all = |i: u64| {
        tracer.log_event(user::USER0, [i, 0]);
        tracer.log_event(user::USER1, [i, 0]);
        tracer.log_event(user::USER2, [i, 0]);
    };
    on_thread(|| {
        log_all(0);
        tracer.log_event(user::USER7, [0, 0]); // stops a only
        log_all(1);
    });
    assert!(!tracer.is_recording(Scope::Queue(a)).unwrap());
    assert!(tracer.is_recording(Scope::Queue(b)).unwrap());
    assert!(tracer.is_recording(Scope::Global).unwrap());
    on_thread(|| {
        tracer.log_event(user::USER6, [0, 0]); // stops everything
        log_all(2);
    });
    assert!(!tracer.is_recording(Scope::Global).unwrap());
    assert!(!tracer.is_recording(Scope::Queue(b)).unwrap());
    assert!(!tracer.is_recording(Scope::Queue(c)).unwrap());
    let args = |q| -> Vec<u64> { events(&tracer, q).iter().map(|e| e.1).collect() };
    assert_eq!(args(a), [0]);
    assert_eq!(args(b), [0, 1]);
    assert_eq!(args(c), [0, 1]);
    let masked: u64 = gates(&tracer).iter().map(|g| g.masked()).sum();
    assert_eq!(masked, 1 + 3);
    assert_eq!(tracer.shutdown().unwrap().total_lost(), 0);
}

#[test]
fn a_filtered_event_is_gated_too_and_a_condition_counts_only_what_it_keeps() {
    let (tracer, _dir) = tracer();
    let q = fixed(&tracer);
    tracer.assign_class(user::CLASS, q).unwrap();
    // The filter exists before the gate: it is re-pointed at the gate.
    tracer
        .filter_event(user::USER0, Filter::arg(0, 0..=99))
        .unwrap();
    let t = tracer
        .add_trigger(
            user::USER1,
            Trigger::stop(Scope::Queue(q))
                .when(Filter::handler(|e| e.args[1] == 1))
                .after(2),
        )
        .unwrap();
    on_thread(|| {
        tracer.log_event(user::USER0, [1, 0]);
        tracer.log_event(user::USER0, [100, 0]); // filtered out
        tracer.log_event(user::USER1, [2, 1]); // kept, 1st
        tracer.log_event(user::USER1, [3, 0]); // not kept
        tracer.log_event(user::USER1, [4, 1]); // kept, 2nd: stops
        tracer.log_event(user::USER0, [5, 0]); // masked by the gate
        tracer.log_str(user::USER1, "masked too");
    });
    assert_eq!(
        events(&tracer, q),
        [
            (user::USER0, 1),
            (user::USER1, 2),
            (user::USER1, 3),
            (user::USER1, 4),
        ]
    );
    let tq = trigger_queue(&tracer, t);
    assert_eq!((tq.seen(), tq.fired()), (2, 1));
    // Three USER1 events and the two records of the string run went through.
    assert_eq!(tracer.counters(t).unwrap().accepted, 5);
    tracer.shutdown().unwrap();
}

/// Every snapshot file in `dir`, sorted by name.
fn snapshot_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("-snap-"))
        .collect();
    files.sort();
    files
}

/// Waits (bounded) until the trigger has no snapshot pending.
fn wait_idle(tq: &TriggerQueue) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while tq.is_pending() {
        assert!(Instant::now() < deadline, "the snapshot task never ran");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn snapshots_while_two_producers_keep_logging() {
    const LAST: usize = 256;
    let (tracer, dir) = tracer();
    let q = circular(&tracer, 1 << 16, 4);
    tracer.assign_class(user::CLASS, q).unwrap();
    let snap = Snapshot::new(q, LAST)
        .min_interval(Duration::ZERO)
        .max_files(Some(5));
    let t = tracer
        .add_trigger(user::USER7, Trigger::snapshot(snap))
        .unwrap();
    tracer.activate().unwrap();
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        for p in 0..2u64 {
            let (tracer, stop) = (&tracer, &stop);
            s.spawn(move || {
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    tracer.log_event(user::USER0, [i, p]);
                    i += 1;
                    // At most about 65k events a second each: the
                    // 65536-event ring holds what they log in half a
                    // second, far longer than the snapshot task takes to
                    // wake up.
                    if i % 4 == 0 {
                        std::thread::sleep(Duration::from_micros(50));
                    }
                }
            });
        }
        // The ring fills past LAST before the first trigger.
        let deadline = Instant::now() + Duration::from_secs(20);
        while tracer.counters(q).unwrap().accepted < 4 * LAST as u64 {
            assert!(Instant::now() < deadline, "the producers never ran");
            std::thread::sleep(Duration::from_millis(1));
        }
        let tq = trigger_queue(&tracer, t);
        for k in 0..8u64 {
            tracer.log_event(user::USER7, [k, 0]);
            wait_idle(tq);
            std::thread::sleep(Duration::from_millis(2));
        }
        stop.store(true, Ordering::Relaxed);
    });
    let tq = trigger_queue(&tracer, t);
    // 8 fired: 5 files, then 3 suppressed by max_files (counted).
    assert_eq!(
        (tq.fired(), tq.written(), tq.suppressed(), tq.failed()),
        (8, 5, 3, 0)
    );
    let files = snapshot_files(dir.path());
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        (1..=5)
            .map(|n| format!("queue0-circular-snap-{n:04}.qtr"))
            .collect::<Vec<_>>()
    );
    let mut last_trigger_time = 0;
    for (k, file) in files.iter().enumerate() {
        let mut reader = TraceReader::open(file).unwrap();
        let records: Vec<_> = reader.by_ref().map(|e| e.unwrap()).collect();
        assert!(
            matches!(reader.completeness(), Some(Completeness::Complete(_))),
            "{}: {:?}",
            file.display(),
            reader.completeness()
        );
        let events: Vec<_> = records.iter().filter(|e| e.id != HOOPS).collect();
        assert_eq!(events.len(), LAST, "{}", file.display());
        // The trigger event, with its number: last, or among the last few
        // (events of the same nanosecond sort after it).
        let pos = events
            .iter()
            .rposition(|e| e.id == user::USER7 && e.args[0] == k as u64)
            .unwrap_or_else(|| panic!("{}: no trigger event {k}", file.display()));
        assert!(events.len() - pos <= 3, "{}: at {pos}", file.display());
        let trigger_time = events[pos].time;
        assert!(trigger_time > last_trigger_time, "files are in order");
        last_trigger_time = trigger_time;
        assert!(events.iter().all(|e| e.time <= trigger_time));
        // The producers' events are there, in time order.
        assert!(events.windows(2).all(|w| w[0].time <= w[1].time));
        assert!(events.iter().filter(|e| e.id == user::USER0).count() >= LAST - 8);
    }
    let report = tracer.shutdown().unwrap();
    assert_eq!(report.snapshots_suppressed(), 3);
    let status = &report.queues[t.index()].status;
    assert_eq!(status.files, files);
    assert_eq!(status.snapshots_suppressed, 3);
    assert!(report.is_clean());
}

#[test]
fn min_interval_suppresses_by_event_time_and_a_pending_request_waits_for_phase_2() {
    let clock = ManualClock::new(1_000);
    let (tracer, dir) = tracer_with(Config::default().with_clock(Clock::manual(&clock)));
    let q = circular(&tracer, 64, 0);
    tracer.assign_class(user::CLASS, q).unwrap();
    let snap = Snapshot::new(q, 4)
        .min_interval(Duration::from_nanos(100))
        .max_files(None);
    let t = tracer
        .add_trigger(user::USER7, Trigger::snapshot(snap))
        .unwrap();
    let tq = trigger_queue(&tracer, t);
    for i in 0..6 {
        tracer.log_event(user::USER0, [i, 0]);
    }
    // Phase 1: the task has not started, so the request waits; a second
    // trigger meanwhile is suppressed (and counted).
    tracer.log_event(user::USER7, [0, 0]); // t = 1000: granted
    clock.set(1_200);
    tracer.log_event(user::USER7, [1, 0]); // pending: suppressed
    assert!(tq.is_pending());
    tracer.activate().unwrap();
    wait_idle(tq);
    clock.set(1_250);
    tracer.log_event(user::USER7, [2, 0]); // 250 ns after 1000: granted
    wait_idle(tq);
    clock.set(1_300);
    tracer.log_event(user::USER0, [6, 0]);
    tracer.log_event(user::USER7, [3, 0]); // 50 ns after 1250: suppressed
    clock.set(1_350);
    tracer.log_event(user::USER7, [4, 0]); // 100 ns after 1250: granted
    wait_idle(tq);
    assert_eq!((tq.fired(), tq.written(), tq.suppressed()), (5, 3, 2));
    let files = snapshot_files(dir.path());
    assert_eq!(files.len(), 3);
    let args = |f: &PathBuf| -> Vec<(EventId, u64)> {
        TraceReader::open(f)
            .unwrap()
            .map(|e| e.unwrap())
            .map(|e| (e.id, e.args[0]))
            .collect()
    };
    let (u0, u7) = (user::USER0, user::USER7);
    // The last 4 events up to each trigger event; later ones stay out.
    assert_eq!(args(&files[0]), [(u0, 3), (u0, 4), (u0, 5), (u7, 0)]);
    assert_eq!(args(&files[1]), [(u0, 5), (u7, 0), (u7, 1), (u7, 2)]);
    assert_eq!(args(&files[2]), [(u7, 2), (u0, 6), (u7, 3), (u7, 4)]);
    let report = tracer.shutdown().unwrap();
    assert_eq!(report.snapshots_suppressed(), 2);
}

#[test]
fn a_request_pending_at_shutdown_is_written() {
    let (tracer, dir) = tracer();
    let q = circular(&tracer, 16, 0);
    tracer.assign_class(user::CLASS, q).unwrap();
    let t = tracer
        .add_trigger(user::USER7, Trigger::snapshot(Snapshot::new(q, 16)))
        .unwrap();
    tracer.log_event(user::USER0, [1, 0]);
    tracer.log_event(user::USER7, [2, 0]);
    // Never activated: the shutdown writes it, before the queue saves.
    let report = tracer.shutdown().unwrap();
    let files = snapshot_files(dir.path());
    assert_eq!(report.queues[t.index()].status.files, files);
    let mut reader = TraceReader::open(&files[0]).unwrap();
    let got: Vec<u64> = reader.by_ref().map(|e| e.unwrap().args[0]).collect();
    assert_eq!(got, [1, 2]);
    assert!(reader.completeness().unwrap().is_complete().unwrap());
}

#[test]
fn bad_trigger_configurations_are_typed_errors() {
    let (tracer, _dir) = tracer();
    let f = fixed(&tracer);
    let c = circular(&tracer, 64, 0);
    tracer.assign_event(user::USER0, f).unwrap();
    let e = tracer
        .add_trigger(user::USER7, Trigger::snapshot(Snapshot::new(f, 8)))
        .unwrap_err();
    assert!(
        matches!(e, ConfigError::SnapshotNeedsCircular { queue, type_name: "fixed" } if queue == f)
    );
    assert!(
        e.to_string().contains("Tracer::create_queue::<Circular>"),
        "{e}"
    );
    for last in [0, 65] {
        let e = tracer
            .add_trigger(user::USER7, Trigger::snapshot(Snapshot::new(c, last)))
            .unwrap_err();
        assert!(
            matches!(e, ConfigError::SnapshotSize { capacity: 64, .. }),
            "{e}"
        );
        assert!(e.to_string().contains("Snapshot::new"), "{e}");
    }
    let e = tracer
        .add_trigger(user::USER7, Trigger::start(Scope::Queue(QueueHandle(99))))
        .unwrap_err();
    assert!(matches!(e, ConfigError::BadQueueHandle { .. }), "{e}");
    let e = tracer
        .add_trigger(user::USER7, Trigger::start(Scope::Global).after(0))
        .unwrap_err();
    assert!(e.to_string().contains("after(1)"), "{e}");
    let filter = tracer.filter_event(user::USER0, Filter::source(1)).unwrap();
    let e = tracer
        .add_trigger(user::USER7, Trigger::stop(Scope::Queue(filter)))
        .unwrap_err();
    assert!(
        matches!(
            e,
            ConfigError::TriggerScopeNotRecording {
                type_name: "filter",
                ..
            }
        ),
        "{e}"
    );
    let t = tracer
        .add_trigger(user::USER7, Trigger::stop(Scope::Queue(f)))
        .unwrap();
    let e = tracer
        .add_trigger(user::USER7, Trigger::start(Scope::Queue(f)))
        .unwrap_err();
    assert!(
        matches!(e, ConfigError::TriggerExists { trigger, .. } if trigger == t),
        "{e}"
    );
    assert!(e.to_string().contains("Tracer::remove_trigger"), "{e}");
    assert_eq!(tracer.trigger_of(user::USER7).unwrap(), Some(t));
    tracer.remove_trigger(user::USER7).unwrap();
    assert_eq!(tracer.trigger_of(user::USER7).unwrap(), None);
    tracer
        .add_trigger(user::USER7, Trigger::start(Scope::Queue(f)))
        .unwrap();
    tracer.shutdown().unwrap();
    let e = tracer
        .add_trigger(user::USER6, Trigger::start(Scope::Global))
        .unwrap_err();
    assert!(matches!(e, ConfigError::AfterShutdown { .. }), "{e}");
}

#[test]
fn no_trigger_no_gate() {
    // A tracer without triggers has no gate and routes as before.
    let (tracer, _dir) = tracer();
    let q = fixed(&tracer);
    tracer.assign_event(user::USER0, q).unwrap();
    assert_eq!(tracer.queue_count(), 1);
    assert!(tracer.is_recording(Scope::Global).unwrap());
    assert!(tracer.is_recording(Scope::Queue(q)).unwrap());
    assert!(gates(&tracer).is_empty());
}

#[test]
fn a_trigger_without_room_changes_nothing() {
    let (tracer, _dir) = tracer();
    let q = fixed(&tracer);
    tracer.assign_event(user::USER0, q).unwrap();
    for _ in 1..200 {
        tracer.create_queue::<qtrace::queues::Dummy>(()).unwrap();
    }
    // A global start trigger needs 200 gates and a trigger queue: 456 > 256.
    let e = tracer
        .add_trigger(user::USER7, Trigger::start(Scope::Global))
        .unwrap_err();
    assert!(matches!(e, ConfigError::TooManyQueues { max: 256 }), "{e}");
    assert!(tracer.is_recording(Scope::Global).unwrap());
    assert_eq!(tracer.queue_count(), 200);
    assert_eq!(tracer.trigger_of(user::USER7).unwrap(), None);
    tracer.log_event(user::USER0, [1, 0]);
    assert_eq!(events(&tracer, q), [(user::USER0, 1)]);
}

/// A snapshot trigger writes in the queue's form: compact chunks (version
/// 2, the default) or 32-byte records (`with_compact(false)`: the bytes
/// pinned), the same records either way: the hoops record for the events
/// overwritten before the window, the window up to the trigger event, and
/// a close run that counts them and their loss.
#[test]
fn a_snapshot_trigger_writes_in_the_queues_form() {
    for compact in [true, false] {
        let clock = ManualClock::new(1_000);
        let (tracer, dir) = tracer_with(Config::default().with_clock(Clock::manual(&clock)));
        let q = tracer
            .create_queue::<Circular>(
                CircularParams::default()
                    .with_capacity(8)
                    .with_shards(0)
                    .with_ring(RingStorage::Memory)
                    .with_compact(compact),
            )
            .unwrap();
        tracer.assign_class(user::CLASS, q).unwrap();
        let t = tracer
            .add_trigger(user::USER7, Trigger::snapshot(Snapshot::new(q, 8)))
            .unwrap();
        tracer.activate().unwrap();
        for i in 0..12u64 {
            clock.set(1_000 + 10 * i);
            tracer.log_event_from(5, user::USER0, [i, u64::MAX - i]);
        }
        clock.set(2_000);
        tracer.log_event_from(5, user::USER7, [99, 0]);
        wait_idle(trigger_queue(&tracer, t));
        let files = snapshot_files(dir.path());
        assert_eq!(files.len(), 1, "compact {compact}");
        let mut r = TraceReader::open(&files[0]).unwrap();
        assert_eq!(r.header().is_compact(), compact);
        assert_eq!(r.header().version(), if compact { 2 } else { 1 });
        let got: Vec<qtrace::Event> = r.by_ref().map(Result::unwrap).collect();
        // 13 logged, 8 kept: a hoops record for the 5 before them.
        let mut want = vec![qtrace::Event::new(1_050, HOOPS, u32::MAX, [5, q.0 as u64])];
        want.extend(
            (5..12u64)
                .map(|i| qtrace::Event::new(1_000 + 10 * i, user::USER0, 5, [i, u64::MAX - i])),
        );
        want.push(qtrace::Event::new(2_000, user::USER7, 5, [99, 0]));
        assert_eq!(got, want, "compact {compact}");
        let Some(Completeness::Complete(close)) = r.completeness() else {
            panic!("{:?}", r.completeness());
        };
        assert_eq!((close.records, close.lost), (9, 5));
        assert_eq!((close.totals.accepted, close.totals.delivered), (13, 0));
        let len = std::fs::metadata(&files[0]).unwrap().len();
        let header = r.header_len();
        if compact {
            // Under half the 32-byte form (`u64::MAX - i`: 10 bytes each).
            assert!(len < header + (9 + 3) * 16, "{len} bytes");
        } else {
            assert_eq!(len, header + (9 + 3) * 32);
        }
        tracer.shutdown().unwrap();
    }
}
