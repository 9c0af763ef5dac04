//! The online queue's own counters (`OnlineParams::with_queue_counters`,
//! FORMAT.md 1.3.4), as the UDP queue's (`tests/receiver/udp.rs`): the drain
//! task samples the queue's fill level and losses so far into the file, each
//! sample right after the events queued when it was taken and the hoops
//! record that marks the losses it counts; they are records of the file,
//! never the queue's events; every chunk of a rotating file declares them;
//! and a queue without them writes its file as before.

use std::path::{Path, PathBuf};
use std::time::Duration;

use qtrace::classes::{tracer::HOOPS, user, ClassSpec};
use qtrace::clock::{Clock, ManualClock};
use qtrace::macros::CounterKind;
use qtrace::queues::{Online, OnlineParams};
use qtrace::reader::Completeness;
use qtrace::wire::{CloseRecord, TraceHeader};
use qtrace::{Config, Event, EventId, Tracer, TRACER_SOURCE};

use crate::common::read_all::read_all;
use crate::common::temp_dirs::fresh_dir;

/// A record as the tests compare it: id, source (the tracer's, or 0 for
/// a logged event, whatever thread logged it), arguments.
type Rec = (EventId, u32, [u64; 2]);

fn rec(e: &Event) -> Rec {
    let source = if e.source == TRACER_SOURCE {
        e.source
    } else {
        0
    };
    (e.id, source, e.args)
}

/// The ids of the two counters in a file's catalog, checking their kind
/// and unit.
fn counter_ids(header: &TraceHeader) -> (EventId, EventId) {
    let catalog = header.catalog();
    let fill = catalog.counter::<u64>("qtrace:queue.fill").unwrap().id();
    let lost = catalog.counter::<u64>("qtrace:queue.lost").unwrap().id();
    assert_eq!(catalog.counter_of(fill), Some((CounterKind::U64, "events")));
    assert_eq!(catalog.counter_of(lost), Some((CounterKind::U64, "events")));
    (fill, lost)
}

/// A complete file's close run and records.
fn complete(path: &Path) -> (TraceHeader, CloseRecord, Vec<Event>) {
    let (header, records, end) = read_all(path);
    match end {
        Completeness::Complete(close) => (header, close, records),
        other => panic!("{} is not complete: {other:?}", path.display()),
    }
}

/// `n` user events, then the hoops record of `lost`, as a file holds them.
fn events_then_hoops(n: u64, lost: u64) -> Vec<Rec> {
    let mut v: Vec<Rec> = (0..n).map(|i| (user::USER0, 0, [i, 0])).collect();
    v.push((HOOPS, TRACER_SOURCE, [lost, 0]));
    v
}

/// The samples `(fill, lost)` as records of the counters `ids`.
fn samples((fill, lost): (EventId, EventId), values: &[(u64, u64)]) -> Vec<Rec> {
    values
        .iter()
        .flat_map(|&(f, l)| [(fill, TRACER_SOURCE, [f, 0]), (lost, TRACER_SOURCE, [l, 0])])
        .collect()
}

/// Each sample's `lost` equals the losses the hoops records before it mark.
fn assert_lost_so_far_is_marked(records: &[Event], lost: EventId) {
    let mut marked = 0;
    for e in records {
        if e.id == HOOPS {
            marked += e.args[0];
        } else if e.id == lost {
            assert_eq!(e.args[0], marked, "{records:?}");
        }
    }
}

/// A tracer with one online queue (a period of an hour: the task runs its
/// first round at activation, then only at shutdown) routed the user class,
/// `logged` events logged into it before activation; returns the report
/// of its shutdown once the first round has written the `accepted` events.
fn run(params: OnlineParams, config: Config, logged: u64, accepted: u64) -> qtrace::ShutdownReport {
    let tracer = Tracer::with_config(config);
    let q = tracer
        .create_queue::<Online>(params.with_period(Duration::from_secs(3600)))
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    for i in 0..logged {
        tracer.log_event(user::USER0, [i, 0]);
    }
    tracer.activate().unwrap();
    // The first round's write (its events and its sample, in one batch).
    let t = std::time::Instant::now();
    while tracer.counters(q).unwrap().delivered < accepted {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the first round never ended"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    tracer.shutdown().unwrap()
}

/// 40 events logged into a queue of 16 before its task starts, so 24
/// dropped: the first round's sample says 16 queued and 24 lost and comes
/// after the 16 events and the hoops record of the 24; the two rounds of
/// shutdown say 0 queued, 24 lost. The file holds exactly that, in time
/// order; its close run counts the samples as records, not as delivered
/// events, and the queue's counters leave them out.
#[test]
fn queue_counters_sample_fill_and_exact_losses() {
    queue_counters(true);
}

/// The same in a file of 32-byte records.
#[test]
fn queue_counters_in_32_byte_records() {
    queue_counters(false);
}

fn queue_counters(compact: bool) {
    let dir = fresh_dir("online-counters", &format!("exact-{compact}"));
    let path = dir.join("online.qtr");
    let report = run(
        OnlineParams::default()
            .with_file(&path)
            .with_capacity(16)
            .with_compact(compact)
            .with_queue_counters(true),
        Config::default(),
        40,
        16,
    );
    let c = report.queues[0].counters;
    assert_eq!(
        (c.accepted, c.dropped, c.overwritten, c.delivered, c.queued),
        (16, 24, 0, 16, 0)
    );
    assert!(report.queues[0].status.is_healthy());
    let (header, close, records) = complete(&path);
    assert_eq!(header.is_compact(), compact);
    let ids = counter_ids(&header);
    // The class comes after every class the tracer defined.
    let classes: Vec<&str> = header
        .catalog()
        .classes()
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(classes.last(), Some(&"qtrace"));
    let got: Vec<Rec> = records.iter().map(rec).collect();
    let mut expected = events_then_hoops(16, 24);
    expected.extend(samples(ids, &[(16, 24), (0, 24), (0, 24)]));
    assert_eq!(got, expected);
    assert!(records.windows(2).all(|w| w[0].time <= w[1].time));
    assert_lost_so_far_is_marked(&records, ids.1);
    // Records: 16 events, 1 hoops, 6 sample records; the queue delivered 16.
    assert_eq!((close.records, close.lost), (23, 24));
    assert_eq!(
        (
            close.totals.accepted,
            close.totals.dropped,
            close.totals.overwritten,
            close.totals.delivered
        ),
        (16, 24, 0, 16)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A rotating file: 3000 events logged into a queue of 1024 before its task
/// starts (1976 dropped), drained into chunks of at most 4 KiB. Every chunk
/// read alone is complete and declares both counters with the same ids;
/// the chunks together hold the 1024 events, the hoops record of 1976 and
/// the samples (1024, 1976), then (0, 1976) twice; the first sample is in
/// the chunk of the last event, a later chunk than the first.
#[test]
fn queue_counters_in_every_chunk_across_a_rotation() {
    across_a_rotation(true);
}

/// The same with 32-byte records.
#[test]
fn queue_counters_in_every_chunk_of_32_byte_records() {
    across_a_rotation(false);
}

fn across_a_rotation(compact: bool) {
    const MAX: u64 = 4096;
    let dir = fresh_dir("online-counters", &format!("chunks-{compact}"));
    let report = run(
        OnlineParams::default()
            .with_file(dir.join("run.qtr"))
            .with_capacity(1024)
            .with_compact(compact)
            .with_rotation(Some(MAX), None)
            .with_queue_counters(true),
        Config::default(),
        3000,
        1024,
    );
    let c = report.queues[0].counters;
    assert_eq!((c.accepted, c.dropped, c.delivered), (1024, 1976, 1024));
    let chunks: Vec<PathBuf> = report.queues[0].status.files.clone();
    assert!(chunks.len() > 2, "{chunks:?}");
    let mut ids = None;
    let mut all: Vec<Event> = Vec::new();
    let mut first_sample_in = None;
    for (i, chunk) in chunks.iter().enumerate() {
        let len = std::fs::metadata(chunk).unwrap().len();
        assert!(len <= MAX, "{} is {len} bytes", chunk.display());
        let (header, close, records) = complete(chunk);
        assert_eq!(header.is_compact(), compact);
        let these = counter_ids(&header);
        assert_eq!(
            *ids.get_or_insert(these),
            these,
            "the same ids in every chunk"
        );
        assert_eq!(close.records, records.len() as u64);
        if first_sample_in.is_none() && records.iter().any(|e| e.id == these.0) {
            first_sample_in = Some(i);
        }
        all.extend(records);
    }
    let ids = ids.unwrap();
    let last_event = chunks
        .iter()
        .position(|p| {
            let (_, _, records) = complete(p);
            records
                .iter()
                .any(|e| e.id == user::USER0 && e.args[0] == 1023)
        })
        .unwrap();
    assert_eq!(first_sample_in, Some(last_event));
    assert!(last_event > 0);
    // The names prologues aside, the chunks hold exactly this.
    let got: Vec<Rec> = all
        .iter()
        .filter(|e| [user::USER0, HOOPS, ids.0, ids.1].contains(&e.id))
        .map(rec)
        .collect();
    let mut expected = events_then_hoops(1024, 1976);
    expected.extend(samples(ids, &[(1024, 1976), (0, 1976), (0, 1976)]));
    assert_eq!(got, expected);
    assert_lost_so_far_is_marked(&all, ids.1);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Several queues of one program (FORMAT.md 1.3.4, *One series per
/// queue*): a queue of another type takes the first handle, then three
/// online queues, the first and the last with counters, each routed one
/// user event. Each sampled file holds its events, then its samples (3 or
/// 4 queued, then 0 twice; none lost), every sample's `arg1` exactly the
/// handle the library gave its queue (never 0 here); the queue without
/// counters writes no sample.
#[test]
fn each_queue_s_samples_carry_its_handle_in_arg1() {
    use qtrace::queues::Dummy;
    let dir = fresh_dir("online-counters", "handles");
    let tracer = Tracer::new();
    let first = tracer.create_queue::<Dummy>(()).unwrap();
    let online = |name: &str, counters: bool| {
        tracer
            .create_queue::<Online>(
                OnlineParams::default()
                    .with_file(dir.join(name))
                    .with_capacity(16)
                    .with_period(Duration::from_secs(3600))
                    .with_queue_counters(counters),
            )
            .unwrap()
    };
    let (a, b, c) = (
        online("a.qtr", true),
        online("b.qtr", false),
        online("c.qtr", true),
    );
    let handles = [first.0, a.0, b.0, c.0];
    assert!(
        handles
            .iter()
            .enumerate()
            .all(|(i, h)| !handles[..i].contains(h)),
        "{handles:?}"
    );
    assert!(a.0 != 0 && c.0 != 0, "{handles:?}");
    // (queue, its event, events logged)
    let queues = [
        (a, user::USER0, 3),
        (b, user::USER1, 2),
        (c, user::USER2, 4),
    ];
    for (q, id, n) in queues {
        tracer.assign_event(id, q).unwrap();
        for i in 0..n {
            tracer.log_event(id, [i, 0]);
        }
    }
    tracer.activate().unwrap();
    let t = std::time::Instant::now();
    while queues
        .iter()
        .any(|&(q, _, n)| tracer.counters(q).unwrap().delivered < n)
    {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the first rounds never ended"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let report = tracer.shutdown().unwrap();
    for (q, id, n) in queues {
        let path = &report.queues[q.index()].status.files[0];
        let (header, close, records) = complete(path);
        let got: Vec<Rec> = records.iter().map(rec).collect();
        let mut expected: Vec<Rec> = (0..n).map(|i| (id, 0, [i, 0])).collect();
        if q == b {
            assert!(header
                .catalog()
                .counter::<u64>("qtrace:queue.fill")
                .is_none());
        } else {
            let (fill, lost) = counter_ids(&header);
            let handle = u64::from(q.0);
            for f in [n, 0, 0] {
                expected.push((fill, TRACER_SOURCE, [f, handle]));
                expected.push((lost, TRACER_SOURCE, [0, handle]));
            }
        }
        assert_eq!(got, expected, "queue {q}");
        assert_eq!((close.records, close.lost), (expected.len() as u64, 0));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Without the option (the default, or `with_queue_counters(false)`) the
/// file has no `qtrace` class and no sample: the same bytes either way
/// (one manual clock: the same times), holding the 16 events, the hoops
/// record and the close run only, as before the counters existed.
#[test]
fn without_queue_counters_the_file_is_as_before() {
    for compact in [true, false] {
        let dir = fresh_dir("online-counters", &format!("off-{compact}"));
        let clock = Clock::manual(&ManualClock::new(1_000));
        let mut bytes = Vec::new();
        for (name, params) in [
            ("default", OnlineParams::default()),
            ("off", OnlineParams::default().with_queue_counters(false)),
        ] {
            assert!(!params.queue_counters());
            let path = dir.join(format!("{name}.qtr"));
            run(
                params
                    .with_file(&path)
                    .with_capacity(16)
                    .with_compact(compact),
                Config::default().with_clock(clock.clone()),
                40,
                16,
            );
            let (header, close, records) = complete(&path);
            assert!(header
                .catalog()
                .classes()
                .iter()
                .all(|c| c.name != "qtrace"));
            let got: Vec<Rec> = records.iter().map(rec).collect();
            assert_eq!(got, events_then_hoops(16, 24));
            assert_eq!((close.records, close.lost), (17, 24));
            bytes.push(std::fs::read(&path).unwrap());
        }
        assert_eq!(bytes[0], bytes[1]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// The counters' class name is reserved: a tracer that defined a class
/// `qtrace` fails activation, saying why and how to turn them off, before
/// any file is created.
#[test]
fn queue_counters_class_name_is_reserved() {
    let dir = fresh_dir("online-counters", "reserved");
    let tracer = Tracer::new();
    tracer
        .define_class(ClassSpec::new("qtrace", "mine").event("x", "x", &[]))
        .unwrap();
    tracer
        .create_queue::<Online>(
            OnlineParams::default()
                .with_file(dir.join("online.qtr"))
                .with_queue_counters(true),
        )
        .unwrap();
    let err = tracer.activate().unwrap_err().to_string();
    assert!(
        err.contains("the queue counters need the class name `qtrace`")
            && err.contains("OnlineParams::with_queue_counters(false)"),
        "{err}"
    );
    assert!(!dir.exists(), "nothing is created");
}

/// A chunk that holds nothing but samples (and its names prologue) is not
/// closed for its age: 5 events, a second idle (a sample every 5 ms round),
/// 5 more events, an age bound of 200 ms: two chunks, as without the
/// counters (`an_age_bound_closes_a_chunk_that_holds_records`), the second
/// starting with the idle rounds' samples, every one of them 0 lost.
#[test]
fn samples_alone_never_close_a_chunk_for_its_age() {
    let dir = fresh_dir("online-counters", "age");
    let tracer = Tracer::new();
    let q = tracer
        .create_queue::<Online>(
            OnlineParams::default()
                .with_file(dir.join("run.qtr"))
                .with_period(Duration::from_millis(5))
                .with_rotation(None, Some(Duration::from_millis(200)))
                .with_queue_counters(true),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer.activate().unwrap();
    for i in 0..5 {
        tracer.log_event(user::USER0, [i, 0]);
    }
    std::thread::sleep(Duration::from_millis(1000));
    for i in 5..10 {
        tracer.log_event(user::USER0, [i, 0]);
    }
    let report = tracer.shutdown().unwrap();
    let files = &report.queues[0].status.files;
    assert_eq!(files.len(), 2, "{files:?}");
    let values = |records: &[Event]| -> Vec<u64> {
        records
            .iter()
            .filter(|e| e.id == user::USER0)
            .map(|e| e.args[0])
            .collect()
    };
    let (header, _, first) = complete(&files[0]);
    let (_, _, second) = complete(&files[1]);
    let (fill, lost) = counter_ids(&header);
    assert_eq!(values(&first), [0, 1, 2, 3, 4]);
    assert_eq!(values(&second), [5, 6, 7, 8, 9]);
    // The second chunk's idle samples come before its first event.
    let first_event = second.iter().position(|e| e.id == user::USER0).unwrap();
    let idle = second[..first_event]
        .iter()
        .filter(|e| e.id == fill)
        .count();
    assert!(idle >= 2, "{idle} samples before the first event");
    for e in first.iter().chain(&second) {
        if e.id == lost {
            assert_eq!(e.args[0], 0);
        } else if e.id == fill {
            assert!(e.args[0] <= 5);
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
