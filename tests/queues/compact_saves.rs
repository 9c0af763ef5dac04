//! Fixed and circular queues save in compact chunks by default (trace-file
//! version 2, FORMAT.md 1.11) and in 32-byte records with
//! `with_compact(false)`: the same records either way (exact events, hoops
//! records, combine runs across chunks), the same close-run counts, and
//! the 32-byte form keeps its bytes.

use crate::queues_support::{hoops, read_trace, scratch};

use qtrace::classes::user;
use qtrace::clock::ManualClock;
use qtrace::combine::{Assembler, Item};
use qtrace::queues::{Circular, CircularParams, Fixed, FixedParams};
use qtrace::reader::{Completeness, TraceReader};
use qtrace::storage::RingStorage;
use qtrace::wire::CloseRecord;
use qtrace::{Event, Tracer};

use crate::common::manual_tracer::manual_tracer as tracer;

/// The records of a queue's file, its version, its close run and its size.
fn read(path: &std::path::Path) -> (Vec<Event>, u16, CloseRecord, u64, u64) {
    let mut r = TraceReader::open(path).unwrap();
    let events: Vec<Event> = r.by_ref().map(Result::unwrap).collect();
    let Some(Completeness::Complete(close)) = r.completeness() else {
        panic!("{}: {:?}", path.display(), r.completeness());
    };
    let len = std::fs::metadata(path).unwrap().len();
    (events, r.header().version(), close, r.header_len(), len)
}

/// One tracer's run: a fixed queue of 2500 taking `user1` (strings among
/// them, one across the first chunk's end) and a circular queue of 1024
/// taking `user0`, both in the form `compact` says; saved at shutdown.
fn run(compact: bool, tag: &str) -> std::path::PathBuf {
    let dir = scratch(tag);
    let clock = ManualClock::new(1_000);
    let t = tracer(&dir, &clock);
    let f = t
        .create_queue::<Fixed>(
            FixedParams::default()
                .with_capacity(2500)
                .with_ring(RingStorage::Memory)
                .with_compact(compact),
        )
        .unwrap();
    let c = t
        .create_queue::<Circular>(
            CircularParams::default()
                .with_capacity(1024)
                .with_shards(2)
                .with_ring(RingStorage::Memory)
                .with_compact(compact),
        )
        .unwrap();
    t.assign_event(user::USER1, f).unwrap();
    t.assign_event(user::USER0, c).unwrap();
    t.activate().unwrap();
    for i in 0..3000u64 {
        clock.set(1_000 + 7 * i + (i % 5));
        t.log_event_from(3, user::USER0, [i, i * i]);
        if i < 2040 {
            t.log_event_from(4, user::USER1, [i, u64::MAX - i]);
        }
        if i == 2040 || i == 2999 {
            // 2040: its 21 records (records 2040 to 2060) run past record
            // 2048, the first chunk's end.
            t.log_str(user::USER1, &format!("text {i} {}", "x".repeat(300)));
        }
    }
    // Past the fixed queue's capacity: dropped, stated by a hoops record.
    for _ in 0..700 {
        t.log_event_from(4, user::USER1, [7, 7]);
    }
    let report = t.shutdown().unwrap();
    assert!(report.is_clean(), "{report:?}");
    dir
}

#[test]
fn fixed_and_circular_saves_are_compact_by_default_with_the_records_of_32_bytes() {
    assert!(FixedParams::default().compact() && CircularParams::default().compact());
    let (small, big) = (run(true, "compact-on"), run(false, "compact-off"));
    for name in ["queue0-fixed.qtr", "queue1-circular.qtr"] {
        let (events, version, close, header, len) = read(&small.join(name));
        let (events_32, version_32, close_32, header_32, len_32) = read(&big.join(name));
        assert_eq!((version, version_32), (2, 1), "{name}");
        assert_eq!(events, events_32, "{name}");
        assert_eq!(close, close_32, "{name}");
        assert_eq!(close.records, events.len() as u64);
        // The 32-byte form keeps its bytes: the header, 32 per record,
        // the close run's three; and the decoder of the tests reads both.
        assert_eq!(len_32, header_32 + 32 * (events.len() as u64 + 3));
        assert_eq!(read_trace(&big.join(name)).1, events_32);
        assert_eq!(read_trace(&small.join(name)).1, events);
        let per_event = (len - header) as f64 / events.len() as f64;
        // Under half of 32 (`u64::MAX - i`: a 10-byte varint each).
        assert!(per_event < 16.0, "{name}: {per_event} B/record");
    }

    let (fixed, _, close, _, _) = read(&small.join("queue0-fixed.qtr"));
    // 2040 events, two strings of 1 + 20 records each, 700 more: the first
    // 2500 records logged kept, then a hoops record for the rest.
    assert_eq!(fixed.len(), 2501);
    for (i, e) in fixed[..2040].iter().enumerate() {
        let i = i as u64;
        let time = 1_000 + 7 * i + (i % 5);
        assert_eq!(*e, Event::new(time, user::USER1, 4, [i, u64::MAX - i]));
    }
    for e in &fixed[2082..2500] {
        assert_eq!((e.id, e.source, e.args), (user::USER1, 4, [7, 7]));
    }
    let lost = 2040 + 2 * 21 + 700 - 2500;
    assert_eq!(fixed[2500], hoops(fixed[2499].time, lost, 0));
    assert_eq!((close.records, close.lost), (2501, lost));
    assert_eq!((close.totals.accepted, close.totals.dropped), (2500, lost));
    // The strings come back whole, the first across the chunks' end.
    let mut texts = Vec::new();
    let mut asm = Assembler::new();
    for e in fixed {
        asm.push(e, &mut |item| {
            if let Item::Payload(p) = item {
                texts.push(p.text().into_owned());
            }
        });
    }
    let want = |i: u64| format!("text {i} {}", "x".repeat(300));
    assert_eq!(texts, [want(2040), want(2999)]);

    let (circular, _, close, _, _) = read(&small.join("queue1-circular.qtr"));
    // The newest 1024 of 3000, after a hoops record for the 1976 before.
    assert_eq!(circular.len(), 1025);
    assert_eq!(circular[0], hoops(circular[1].time, 1976, 1));
    for (k, e) in circular[1..].iter().enumerate() {
        let i = 1976 + k as u64;
        let time = 1_000 + 7 * i + (i % 5);
        assert_eq!(*e, Event::new(time, user::USER0, 3, [i, i * i]));
    }
    assert_eq!((close.records, close.lost), (1025, 1976));
    assert_eq!(
        (
            close.totals.accepted,
            close.totals.delivered,
            close.totals.overwritten
        ),
        (3000, 1024, 1976)
    );
    std::fs::remove_dir_all(&small).ok();
    std::fs::remove_dir_all(&big).ok();
}

/// A snapshot is written in the queue's form too, and a queue's own
/// `compact()` says which.
#[test]
fn snapshots_follow_the_queues_form() {
    for compact in [true, false] {
        let dir = scratch("compact-snapshot");
        let clock = ManualClock::new(50);
        let t: Tracer = tracer(&dir, &clock);
        let f = t
            .create_queue::<Fixed>(
                FixedParams::default()
                    .with_capacity(4)
                    .with_compact(compact),
            )
            .unwrap();
        t.assign_event(user::USER1, f).unwrap();
        for i in 0..6u64 {
            clock.set(50 + i);
            t.log_event_from(1, user::USER1, [i, 0]);
        }
        let fixed = t.queue(f).unwrap().as_fixed().unwrap();
        assert_eq!(fixed.compact(), compact);
        let path = dir.join("snap.qtr");
        assert_eq!(fixed.snapshot(&path).unwrap(), 5);
        let (events, version, close, _, _) = read(&path);
        assert_eq!(version, if compact { 2 } else { 1 });
        let mut want: Vec<Event> = (0..4u64)
            .map(|i| Event::new(50 + i, user::USER1, 1, [i, 0]))
            .collect();
        want.push(hoops(53, 2, 0));
        assert_eq!(events, want);
        assert_eq!((close.records, close.lost), (5, 2));
        t.shutdown().unwrap();
        std::fs::remove_dir_all(&dir).ok();
    }
}
