//! The online queue's rotation and retention (`OnlineParams::with_rotation`,
//! `with_retention`; FORMAT.md 1.10): every chunk a complete trace within
//! its bound, the chunks together exactly what was logged, the newest kept
//! with the gap in their numbering, a new run never over an old one.

use std::path::{Path, PathBuf};
use std::time::Duration;

use qtrace::classes::{tracer::HOOPS, user};
use qtrace::combine::{is_combine, Names};
use qtrace::queues::{Online, OnlineParams};
use qtrace::reader::Completeness;
use qtrace::wire::CloseRecord;
use qtrace::{Event, Tracer};

use crate::common::read_all::read_all;

/// The chunk number in a name `run.000042.qtr`.
fn number(path: &Path) -> u64 {
    let name = path.file_name().unwrap().to_str().unwrap();
    let digits = name
        .strip_prefix("run.")
        .unwrap()
        .strip_suffix(".qtr")
        .unwrap();
    assert_eq!(digits.len(), 6, "{name}");
    digits.parse().unwrap()
}

/// Every `run.*.qtr` chunk in `dir`, in chunk order (anything else there is
/// reported: no hidden temporary file is left behind).
fn chunks_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    for p in &v {
        let name = p.file_name().unwrap().to_str().unwrap();
        assert!(name.starts_with("run.") && name.ends_with(".qtr"), "{name}");
    }
    v.sort_by_key(|p| number(p));
    v
}

/// A chunk read alone: it must be complete; returns its close run and its
/// records (name runs and hoops included).
fn closed_chunk(path: &Path) -> (CloseRecord, Vec<Event>) {
    let (_, records, end) = read_all(path);
    match end {
        Completeness::Complete(close) => (close, records),
        other => panic!("{} is not complete: {other:?}", path.display()),
    }
}

/// The logged values (`args[0]` of `user0`) among `records`.
fn values(records: &[Event]) -> Vec<u64> {
    records
        .iter()
        .filter(|e| e.id == user::USER0)
        .map(|e| e.args[0])
        .collect()
}

fn tracer_with(dir: &Path, params: OnlineParams) -> Tracer {
    let tracer = Tracer::new();
    let q = tracer
        .create_queue::<Online>(params.with_file(dir.join("run.qtr")))
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer.activate().unwrap();
    tracer
}

#[test]
fn chunks_together_are_exactly_what_was_logged_each_complete_and_named() {
    chunks_together(true);
}

#[test]
fn chunks_of_32_byte_records_together_are_exactly_what_was_logged() {
    chunks_together(false);
}

/// Compact chunks (the default) or 32-byte records: every chunk within its
/// bound and filled to it, complete, named, the sequence whole.
fn chunks_together(compact: bool) {
    const N: u64 = 20_000;
    const MAX: u64 = 8 * 1024;
    let dir = tempfile::tempdir().unwrap();
    // Room for every event: nothing can be dropped, so the chunks must
    // hold all N in order.
    let tracer = tracer_with(
        dir.path(),
        OnlineParams::default()
            .with_capacity(1 << 15)
            .with_period(Duration::from_millis(1))
            .with_rotation(Some(MAX), None)
            .with_compact(compact),
    );
    tracer.name_source(3, "worker-3").unwrap();
    for i in 0..N {
        tracer.log_event_from(3, user::USER0, [i, 0]);
    }
    let report = tracer.shutdown().unwrap();
    let q = &report.queues[0];
    // The name is a run of 2 records, counted as the events are.
    assert_eq!((q.counters.accepted, q.counters.delivered), (N + 2, N + 2));
    assert_eq!((q.counters.dropped, q.counters.overwritten), (0, 0));
    assert_eq!(q.status.io_errors, 0, "{:?}", q.status.last_error);
    let files = chunks_in(dir.path());
    assert_eq!(q.status.files, files);
    if !compact {
        // 20 000 records of 32 bytes in chunks of at most 8 KiB: 79 at least.
        assert!(files.len() >= 79, "{} chunks", files.len());
    }
    let numbers: Vec<u64> = files.iter().map(|p| number(p)).collect();
    assert_eq!(numbers, (1..=files.len() as u64).collect::<Vec<_>>());
    let mut all = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let len = std::fs::metadata(f).unwrap().len();
        assert!(len <= MAX, "{} is {len} bytes", f.display());
        // A chunk is closed when the largest records and the close run
        // might not fit any more: 5 records of 32 bytes, or (compact) 5 of
        // 39 bytes and 3 chunk headers of 48.
        if i + 1 < files.len() {
            assert!(len > MAX - 512, "{} is only {len} bytes", f.display());
        }
        let (header, _, _) = read_all(f);
        assert_eq!(header.is_compact(), compact);
        let (close, records) = closed_chunk(f);
        assert_eq!(close.records, records.len() as u64);
        assert_eq!(close.lost, 0);
        assert!(records.iter().all(|e| e.id != HOOPS));
        let v = values(&records);
        assert!(!v.is_empty(), "chunk {} holds no event", i + 1);
        // Each chunk names the source by itself: the first in its body
        // (the name record was logged first), the others in their prologue.
        assert_eq!(
            Names::gather(records.iter().copied()).source(3),
            Some("worker-3"),
            "chunk {}",
            i + 1
        );
        if i > 0 {
            assert!(
                is_combine(&records[0]),
                "chunk {} starts with its prologue",
                i + 1
            );
        }
        // The close run carries the queue's counters at its close: the
        // events delivered so far (this chunk's included).
        all.extend(v);
        assert!(close.totals.delivered >= all.len() as u64);
        if i + 1 == files.len() {
            assert_eq!(close.totals.delivered, N + 2);
            assert_eq!(close.totals.accepted, N + 2);
        }
    }
    assert_eq!(all, (0..N).collect::<Vec<_>>());
}

#[test]
fn retention_keeps_exactly_the_newest_chunks_and_counts_the_rest_overwritten() {
    const N: u64 = 10_000;
    let dir = tempfile::tempdir().unwrap();
    let tracer = tracer_with(
        dir.path(),
        OnlineParams::default()
            .with_capacity(1 << 14)
            .with_period(Duration::from_millis(1))
            .with_rotation(Some(4096), None)
            .with_retention(Some(3), None),
    );
    for i in 0..N {
        tracer.log_event(user::USER0, [i, 0]);
    }
    let report = tracer.shutdown().unwrap();
    let q = &report.queues[0];
    let files = chunks_in(dir.path());
    assert_eq!(q.status.files, files);
    assert_eq!(files.len(), 3);
    let numbers: Vec<u64> = files.iter().map(|p| number(p)).collect();
    // The newest three, consecutive; the numbering says how many went.
    let last = numbers[2];
    assert_eq!(numbers, [last - 2, last - 1, last]);
    assert!(last > 3);
    let mut kept = Vec::new();
    for f in &files {
        kept.extend(values(&closed_chunk(f).1));
    }
    // Exactly the newest events: a suffix of what was logged, in order.
    let first = N - kept.len() as u64;
    assert_eq!(kept, (first..N).collect::<Vec<_>>());
    // The deleted chunks' events are the overwritten ones.
    assert_eq!(q.counters.accepted, N);
    assert_eq!(q.counters.dropped, 0);
    assert_eq!(
        (q.counters.delivered, q.counters.overwritten),
        (kept.len() as u64, first)
    );
    // The newest chunk's close run says the same, for a reader of it alone.
    let close = closed_chunk(&files[2]).0;
    assert_eq!(
        (close.totals.delivered, close.totals.overwritten),
        (kept.len() as u64, first)
    );
}

#[test]
fn a_byte_retention_bounds_the_closed_chunks_kept() {
    let dir = tempfile::tempdir().unwrap();
    let tracer = tracer_with(
        dir.path(),
        OnlineParams::default()
            .with_capacity(1 << 14)
            .with_period(Duration::from_millis(1))
            .with_rotation(Some(4096), None)
            .with_retention(None, Some(10_000)),
    );
    for i in 0..5000 {
        tracer.log_event(user::USER0, [i, 0]);
    }
    let report = tracer.shutdown().unwrap();
    let files = chunks_in(dir.path());
    assert_eq!(report.queues[0].status.files, files);
    // The closed chunks (all but the newest) total at most 10 000 bytes:
    // two of at most 4096; a third would not fit.
    let closed: u64 = files[..files.len() - 1]
        .iter()
        .map(|f| std::fs::metadata(f).unwrap().len())
        .sum();
    assert!(closed <= 10_000, "{closed}");
    assert!(files.len() >= 2 && files.len() <= 3, "{files:?}");
    let mut kept = Vec::new();
    for f in &files {
        kept.extend(values(&closed_chunk(f).1));
    }
    let c = report.queues[0].counters;
    assert_eq!(kept, (c.overwritten..5000).collect::<Vec<_>>());
}

#[test]
fn an_age_bound_closes_a_chunk_that_holds_records() {
    let dir = tempfile::tempdir().unwrap();
    let tracer = tracer_with(
        dir.path(),
        OnlineParams::default()
            .with_period(Duration::from_millis(5))
            .with_rotation(None, Some(Duration::from_millis(200))),
    );
    for i in 0..5 {
        tracer.log_event(user::USER0, [i, 0]);
    }
    // Idle long enough for several rounds past the age: one rotation only
    // (an empty chunk is never closed for its age, and a chunk's age counts
    // from its first record).
    // (The bound is long enough that a loaded machine's delay between the
    // last events and shutdown does not close the second chunk too.)
    std::thread::sleep(Duration::from_millis(1000));
    for i in 5..10 {
        tracer.log_event(user::USER0, [i, 0]);
    }
    let report = tracer.shutdown().unwrap();
    let files = chunks_in(dir.path());
    assert_eq!(report.queues[0].status.files, files);
    assert_eq!(files.len(), 2, "{files:?}");
    assert_eq!(values(&closed_chunk(&files[0]).1), [0, 1, 2, 3, 4]);
    assert_eq!(values(&closed_chunk(&files[1]).1), [5, 6, 7, 8, 9]);
}

#[test]
fn a_new_run_goes_on_after_the_chunks_found_and_leaves_them_alone() {
    let dir = tempfile::tempdir().unwrap();
    let params = || {
        OnlineParams::default()
            .with_period(Duration::from_millis(1))
            .with_rotation(Some(4096), None)
    };
    let run = |from: u64| {
        let tracer = tracer_with(dir.path(), params());
        for i in from..from + 300 {
            tracer.log_event(user::USER0, [i, 0]);
        }
        tracer.shutdown().unwrap().queues[0].status.files.clone()
    };
    let first = run(0);
    let before: Vec<Vec<u8>> = first.iter().map(|f| std::fs::read(f).unwrap()).collect();
    let second = run(1000);
    assert_eq!(number(&second[0]), number(first.last().unwrap()) + 1);
    let after: Vec<Vec<u8>> = first.iter().map(|f| std::fs::read(f).unwrap()).collect();
    assert_eq!(before, after);
    let mut v = Vec::new();
    for f in &second {
        v.extend(values(&closed_chunk(f).1));
    }
    assert_eq!(v, (1000..1300).collect::<Vec<_>>());
}

#[test]
fn bounds_that_cannot_work_are_refused_when_the_queue_is_created() {
    let tracer = Tracer::new();
    let refused = |p: OnlineParams| tracer.create_queue::<Online>(p).unwrap_err().to_string();
    let e = refused(
        OnlineParams::default()
            .with_writer(Vec::new())
            .with_rotation(Some(1 << 20), None),
    );
    assert!(e.contains("with_writer"), "{e}");
    let e = refused(OnlineParams::default().with_rotation(Some(0), None));
    assert!(e.contains("chunk size"), "{e}");
    let e = refused(OnlineParams::default().with_rotation(None, Some(Duration::ZERO)));
    assert!(e.contains("chunk age"), "{e}");
    let e = refused(
        OnlineParams::default()
            .with_rotation(Some(1 << 20), None)
            .with_retention(Some(0), None),
    );
    assert!(e.contains("at least 1"), "{e}");
    let e = refused(OnlineParams::default().with_retention(Some(3), None));
    assert!(e.contains("without OnlineParams::with_rotation"), "{e}");
}

#[test]
fn a_chunk_boundary_never_splits_a_string_run() {
    use qtrace::combine::{Assembler, Item, PayloadState};
    let dir = tempfile::tempdir().unwrap();
    let tracer = tracer_with(
        dir.path(),
        OnlineParams::default()
            .with_capacity(1 << 15)
            .with_period(Duration::from_millis(1))
            .with_rotation(Some(4096), None),
    );
    // Strings of 0 to 400 bytes: runs of 1 to 26 records, in chunks of
    // about 80 records, with plain events between them.
    let texts: Vec<String> = (0..600u64)
        .map(|i| "x".repeat(((i * 37) % 401) as usize) + &i.to_string())
        .collect();
    for (i, t) in texts.iter().enumerate() {
        tracer.log_event_str(user::USER1, i as u64, t);
        tracer.log_event(user::USER0, [i as u64, 0]);
    }
    let report = tracer.shutdown().unwrap();
    let q = &report.queues[0];
    assert_eq!(q.counters.dropped, 0);
    let files = chunks_in(dir.path());
    assert!(files.len() > 20, "{} chunks", files.len());
    let (mut got, mut plain) = (Vec::new(), Vec::new());
    for f in &files {
        // Each chunk alone: every run whole.
        let records = closed_chunk(f).1;
        let mut asm = Assembler::new();
        let mut items = Vec::new();
        for r in records {
            asm.push(r, &mut |item| items.push(item));
        }
        asm.finish(&mut |item| items.push(item));
        for item in items {
            match item {
                Item::Payload(p) => {
                    assert_eq!(p.state, PayloadState::Complete, "{}", f.display());
                    got.push((p.arg.unwrap(), p.text().into_owned()));
                }
                Item::Event(e) => plain.push(e.args[0]),
            }
        }
        let len = std::fs::metadata(f).unwrap().len();
        assert!(len <= 4096, "{} is {len} bytes", f.display());
    }
    let want: Vec<(u64, String)> = texts
        .into_iter()
        .enumerate()
        .map(|(i, t)| (i as u64, t))
        .collect();
    assert_eq!(got, want);
    assert_eq!(plain, (0..600).collect::<Vec<_>>());
}

#[test]
fn a_file_at_the_next_chunk_name_is_left_alone_and_its_number_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let tracer = tracer_with(
        dir.path(),
        OnlineParams::default()
            .with_capacity(1 << 14)
            .with_period(Duration::from_millis(1))
            .with_rotation(Some(4096), None),
    );
    // Not the queue's: it must never be written over.
    let foreign = dir.path().join("run.000002.qtr");
    std::fs::write(&foreign, b"someone else's").unwrap();
    // In bursts of 100 (chunks of about 80 records): rounds after the
    // failed one rotate again.
    for i in 0..1000 {
        tracer.log_event(user::USER0, [i, 0]);
        if i % 100 == 99 {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let report = tracer.shutdown().unwrap();
    let q = &report.queues[0];
    assert_eq!(std::fs::read(&foreign).unwrap(), b"someone else's");
    let numbers: Vec<u64> = q.status.files.iter().map(|p| number(p)).collect();
    assert_eq!(numbers[..2], [1, 3], "{numbers:?}");
    assert!(q.status.io_errors >= 1);
    let err = q.status.last_error.clone().unwrap();
    assert!(err.contains("left alone and the number skipped"), "{err}");
    // Nothing was lost for it: chunk 1 went on past its bound meanwhile.
    let mut all = Vec::new();
    for f in &q.status.files {
        all.extend(values(&closed_chunk(f).1));
    }
    assert_eq!(all, (0..1000).collect::<Vec<_>>());
    assert_eq!(q.counters.delivered, 1000);
}

#[test]
fn with_drops_the_chunks_hold_every_event_kept_and_mark_every_loss_in_place() {
    const N: u64 = 200_000;
    let dir = tempfile::tempdir().unwrap();
    // A small queue and a long period: the producer outruns the drain, so
    // the queue latches and drops, and the hoops records land in chunks.
    let tracer = tracer_with(
        dir.path(),
        OnlineParams::default()
            .with_capacity(256)
            .with_period(Duration::from_millis(2))
            .with_rotation(Some(4096), None),
    );
    for i in 0..N {
        tracer.log_event(user::USER0, [i, 0]);
    }
    let report = tracer.shutdown().unwrap();
    let q = &report.queues[0];
    assert!(q.counters.dropped > 0, "{:?}", q.counters);
    assert_eq!(q.counters.accepted + q.counters.dropped, N);
    assert_eq!(q.counters.delivered, q.counters.accepted);
    let (mut next, mut lost, mut events, mut hoops) = (0u64, 0u64, 0u64, 0u64);
    for f in &q.status.files {
        let (close, records) = closed_chunk(f);
        let len = std::fs::metadata(f).unwrap().len();
        assert!(len <= 4096, "{} is {len} bytes", f.display());
        let here: u64 = records
            .iter()
            .filter(|e| e.id == HOOPS)
            .map(|e| e.args[0])
            .sum();
        assert_eq!(close.lost, here);
        for e in records {
            if e.id == HOOPS {
                lost += e.args[0];
                hoops += e.args[0];
            } else if e.id == user::USER0 {
                // Every gap is exactly the hoops records just before it.
                assert_eq!(e.args[0], next + lost);
                (next, lost) = (e.args[0] + 1, 0);
                events += 1;
            }
        }
    }
    // The drops after the last event kept are marked at the end.
    assert_eq!(next + lost, N);
    assert_eq!((events, hoops), (q.counters.delivered, q.counters.dropped));
}

/// Rounds that find the ring empty still write their own records (here the
/// queue counters' sample, one a round): a full chunk is closed before them,
/// so an idle queue's chunks keep the size bound too.
#[test]
fn an_idle_queue_with_samples_keeps_the_size_bound() {
    let dir = tempfile::tempdir().unwrap();
    let tracer = tracer_with(
        dir.path(),
        OnlineParams::default()
            .with_capacity(64)
            .with_period(Duration::from_millis(1))
            .with_queue_counters(true)
            .with_rotation(Some(2048), None),
    );
    for i in 0..10 {
        tracer.log_event(user::USER0, [i, 0]);
    }
    // About 300 rounds of samples (2 records each), many chunks' worth.
    std::thread::sleep(Duration::from_millis(300));
    let report = tracer.shutdown().unwrap();
    let q = &report.queues[0];
    assert!(q.status.files.len() >= 2, "{:?}", q.status.files);
    let mut all = Vec::new();
    for f in &q.status.files {
        let len = std::fs::metadata(f).unwrap().len();
        assert!(len <= 2048, "{} is {len} bytes", f.display());
        all.extend(values(&closed_chunk(f).1));
    }
    assert_eq!(all, (0..10).collect::<Vec<_>>());
}
