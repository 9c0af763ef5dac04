//! Helpers for the queue tests: a hand-made queue context, a scratch
//! directory, and a minimal trace-file decoder built on `qtrace::wire`.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use qtrace::classes::tracer::HOOPS;
use qtrace::classes::Catalog;
use qtrace::clock::{Clock, ManualClock};
use qtrace::queue::QueueContext;
use qtrace::wire::TraceHeader;
use qtrace::Event;
use qtrace::QueueHandle;
use qtrace_core::encode::record;

/// A fresh empty directory under the system temp dir.
pub fn scratch(tag: &str) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "qtrace-queues-{tag}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A context for queue `handle` of `type_name`, with a manual clock at `now`.
pub fn context(handle: u16, type_name: &'static str, dir: &Path, now: u64) -> QueueContext {
    QueueContext {
        handle: QueueHandle(handle),
        type_name,
        output_dir: dir.to_path_buf(),
        catalog: Arc::new(Catalog::builtin()),
        clock: Clock::manual(&ManualClock::new(now)),
        names: Default::default(),
    }
}

/// The header and records of a trace file: 32-byte records decoded here,
/// compact chunks (the queues' default, FORMAT.md 1.11) by the reader; the
/// close run checked against them either way.
pub fn read_trace(path: &Path) -> (TraceHeader, Vec<Event>) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let (header, start) = TraceHeader::decode(&bytes).expect("a valid header");
    if header.is_compact() {
        return read_compact(path, &bytes, header);
    }
    let body = &bytes[start..];
    assert_eq!(body.len() % record::RECORD_LEN, 0, "whole records");
    let mut events: Vec<Event> = body
        .chunks_exact(record::RECORD_LEN)
        .map(|c| record::parse(c.try_into().unwrap()))
        .collect();
    // Every file a queue writes ends with its close run (FORMAT.md 1.5):
    // check it agrees with the records, and leave it out.
    assert!(header.closes(), "a queue's file promises a close run");
    assert!(
        events.len() >= 3,
        "{} ends without its close run",
        path.display()
    );
    let run: [Event; 3] = events[events.len() - 3..].try_into().unwrap();
    let close = qtrace::wire::CloseRecord::from_records(&run)
        .unwrap_or_else(|| panic!("{} ends without its close run", path.display()));
    events.truncate(events.len() - 3);
    assert_eq!(close.records, events.len() as u64);
    assert_eq!(close.lost, hoops_total(&events));
    (header, events)
}

/// A compact trace file's records, by the reader, which checks the close
/// run ends it and agrees with them.
fn read_compact(path: &Path, bytes: &[u8], header: TraceHeader) -> (TraceHeader, Vec<Event>) {
    use qtrace::reader::{Completeness, TraceReader};
    assert!(header.closes(), "a queue's file promises a close run");
    let mut r = TraceReader::new(bytes).unwrap();
    let events: Vec<Event> = r.by_ref().map(Result::unwrap).collect();
    let Some(Completeness::Complete(close)) = r.completeness() else {
        panic!("{}: {:?}", path.display(), r.completeness());
    };
    assert_eq!(close.records, events.len() as u64);
    assert_eq!(close.lost, hoops_total(&events));
    (header, events)
}

/// A hoops record as the queues write it.
pub fn hoops(time: u64, lost: u64, queue: u16) -> Event {
    Event::new(time, HOOPS, u32::MAX, [lost, queue as u64])
}

/// Total events that the hoops records in `events` say were lost.
pub fn hoops_total(events: &[Event]) -> u64 {
    events
        .iter()
        .filter(|e| e.id == HOOPS)
        .map(|e| e.args[0])
        .sum()
}
