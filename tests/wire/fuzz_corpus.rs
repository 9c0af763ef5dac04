//! Builds the fuzzers' seed corpus from real qtrace output: trace files and
//! datagrams written by the library's own writers. `scripts/fuzz.sh` runs it
//! with `QTRACE_FUZZ_CORPUS=fuzz/corpus`; without that variable it writes to a
//! temporary directory. Either way it checks that every seed is valid, so the
//! fuzzers start from inputs that reach deep into the parsers.

use std::path::{Path, PathBuf};

use qtrace::classes::{lowlevel, semaphore, system, tracer, user, Catalog, ClassSpec};
use qtrace::clock::{Clock, ManualClock};
use qtrace::reader::{Completeness, TraceReader};
use qtrace::wire::datagram::{self, DatagramView};
use qtrace::wire::{QueueTotals, TraceHeader, TraceWriter};
use qtrace::QueueHandle;
use qtrace::{Event, EventId};

use crate::common::net_class;
use net_class::net_class;

fn out_dir() -> PathBuf {
    match std::env::var_os("QTRACE_FUZZ_CORPUS") {
        Some(d) => PathBuf::from(d),
        None => std::env::temp_dir().join(format!("qtrace-corpus-{}", std::process::id())),
    }
}

fn header(user_classes: bool) -> TraceHeader {
    let mut catalog = Catalog::builtin();
    if user_classes {
        catalog.define(net_class()).unwrap();
        catalog
            .define(ClassSpec::new("gc", "garbage collector").event("pause", "", &[]))
            .unwrap();
    }
    TraceHeader::new(catalog, &Clock::manual(&ManualClock::new(0)))
        .with_clock("tsc", 1_000_000_000, 1_763_800_000_000_000_000)
        .unwrap()
        .with_host("fuzz-seed")
        .unwrap()
        .with_process_id(1234)
        .with_queue(QueueHandle(0), "circular")
        .unwrap()
}

/// A small scheduler-like workload, with a loss in the middle.
fn workload() -> Vec<Event> {
    let mut v = Vec::new();
    let mut t = 0;
    for task in 0..4u64 {
        for id in [system::CREATE, system::ACTIVATE, system::SCHEDULE] {
            t += 700;
            v.push(Event::new(t, id, 0, [task, 0]));
        }
    }
    v.push(Event::new(t + 5, tracer::HOOPS, u32::MAX, [17, 0]));
    v.push(Event::new(t + 9, lowlevel::INTERRUPT, 1, [14, 0]));
    v.push(Event::new(t + 11, semaphore::WAIT, 1, [2, 9]));
    v.push(Event::new(t + 13, user::USER3, 2, [u64::MAX, 1]));
    v.push(Event::new(t + 17, EventId(0x17), 3, [1500, 443]));
    v
}

fn save(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(name), bytes).unwrap();
}

#[test]
fn seed_corpus() {
    let root = out_dir();
    let reader_dir = root.join("reader");
    let dgram_dir = root.join("datagram");

    for (name, user, events) in [
        ("builtin-empty.qtr", false, Vec::new()),
        ("builtin-workload.qtr", false, workload()),
        ("user-classes-workload.qtr", true, workload()),
    ] {
        let h = header(user);
        let mut w = TraceWriter::new(Vec::new(), &h).unwrap();
        w.write_events(&events).unwrap();
        let bytes = w.finish().unwrap();
        let back: Vec<Event> = TraceReader::new(&bytes[..])
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(back, events);
        save(&reader_dir, name, &bytes);
    }
    // A closed file: the close run is not yielded, the file reads complete.
    let mut w = TraceWriter::new(Vec::new(), &header(true).with_close_run(true)).unwrap();
    w.write_events(&workload()).unwrap();
    let bytes = w
        .finish_with_close(
            99_999,
            QueueTotals {
                accepted: 16,
                dropped: 17,
                overwritten: 0,
                delivered: 16,
            },
        )
        .unwrap();
    let mut r = TraceReader::new(&bytes[..]).unwrap();
    assert_eq!(
        r.by_ref().map(Result::unwrap).collect::<Vec<_>>(),
        workload()
    );
    assert!(matches!(r.completeness(), Some(Completeness::Complete(_))));
    save(&reader_dir, "closed-workload.qtr", &bytes);
    let mut file = TraceWriter::new(Vec::new(), &header(true).without_queue()).unwrap();
    file.write_events(&workload()[..3]).unwrap();
    let mut bytes = file.finish().unwrap();
    bytes.truncate(bytes.len() - 7);
    save(&reader_dir, "truncated.qtr", &bytes);
    // Compact files (FORMAT.md 1.11): two chunks and a close run, and one
    // cut inside its last chunk.
    let mut w = TraceWriter::new(
        Vec::new(),
        &header(true).with_close_run(true).with_compact(true),
    )
    .unwrap();
    w.write_events(&workload()[..8]).unwrap();
    w.flush().unwrap();
    w.write_events(&workload()[8..]).unwrap();
    let bytes = w.finish_with_close(99_999, QueueTotals::default()).unwrap();
    let mut r = TraceReader::new(&bytes[..]).unwrap();
    assert_eq!(
        r.by_ref().map(Result::unwrap).collect::<Vec<_>>(),
        workload()
    );
    assert!(matches!(r.completeness(), Some(Completeness::Complete(_))));
    save(&reader_dir, "compact-workload.qtr", &bytes);
    save(
        &reader_dir,
        "compact-truncated.qtr",
        &bytes[..bytes.len() - 5],
    );

    let mut buf = [0u8; datagram::DEFAULT_MAX_DATAGRAM_LEN];
    let events = workload();
    for (i, chunk) in events.chunks(7).enumerate() {
        let (len, _) =
            datagram::encode_events(&mut buf, 42, i as u64, 3 * i as u64, 7 * i as u64, chunk)
                .unwrap();
        assert!(DatagramView::new_checked(&buf[..len]).is_ok());
        save(&dgram_dir, &format!("events-{i}.bin"), &buf[..len]);
    }
    let header_bytes = header(true).to_bytes();
    let mut small = [0u8; 300];
    let mut offset = 0;
    let mut i = 0;
    while offset < header_bytes.len() && i < 3 {
        let (len, n) =
            datagram::encode_catalog_fragment(&mut small, 42, 100 + i, 0, 0, &header_bytes, offset)
                .unwrap();
        assert!(DatagramView::new_checked(&small[..len]).is_ok());
        save(&dgram_dir, &format!("catalog-{i}.bin"), &small[..len]);
        offset += n;
        i += 1;
    }
    // Keyed datagrams (FORMAT.md 2.6) under the fuzz target's key.
    #[cfg(feature = "keys")]
    for (i, chunk) in events.chunks(5).take(3).enumerate() {
        let key = qtrace::wire::DatagramKey::from_bytes([0x5a; 32]);
        let (len, _) =
            datagram::encode_events(&mut buf, 43, i as u64, 0, 5 * i as u64, chunk).unwrap();
        let len = datagram::keyed::seal(&key, 1_795_000_000_000_000_000, &mut buf, len).unwrap();
        assert!(datagram::keyed::verify(&key, &buf[..len]));
        save(&dgram_dir, &format!("keyed-{i}.bin"), &buf[..len]);
    }
    if std::env::var_os("QTRACE_FUZZ_CORPUS").is_none() {
        std::fs::remove_dir_all(&root).unwrap();
    }
}

/// Seeds for the `ring_file` target: the ring files of a circular queue
/// (shared ring and one shard) and a fixed queue, left by a tracer that
/// never shut down (each under 16 KiB, the fuzzer's input limit).
#[test]
fn ring_file_seeds() {
    use qtrace::queue::Queue;
    use qtrace::queues::{Circular, CircularParams, Fixed, FixedParams};
    // Not `out_dir()` when it is temporary: `seed_corpus` removes that one
    // when it ends, perhaps while this test runs.
    let scratch = tempfile::tempdir().unwrap();
    let dir = match std::env::var_os("QTRACE_FUZZ_CORPUS") {
        Some(_) => out_dir().join("ring_file"),
        None => scratch.path().join("ring_file"),
    };
    std::fs::create_dir_all(&dir).unwrap();
    let work = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(0);
    let t: &'static qtrace::Tracer = Box::leak(Box::new(qtrace::Tracer::with_config(
        qtrace::Config::default()
            .with_output_dir(work.path())
            .with_clock(Clock::manual(&clock)),
    )));
    let queues = [
        t.create_queue::<Circular>(CircularParams::default().with_capacity(8).with_shards(0))
            .unwrap(),
        t.create_queue::<Circular>(CircularParams::default().with_capacity(8).with_shards(1))
            .unwrap(),
        t.create_queue::<Fixed>(FixedParams::default().with_capacity(16))
            .unwrap(),
    ];
    for (q, id) in queues.iter().zip([user::USER0, user::USER1, user::USER2]) {
        t.assign_event(id, *q).unwrap();
    }
    t.activate().unwrap();
    for i in 0..11 {
        clock.advance(7);
        for id in [user::USER0, user::USER1, user::USER2] {
            t.log_event(id, [i, i * 3]);
        }
    }
    for q in queues {
        let _unposted = t.queue(q).unwrap().get(); // a slot being written
    }
    for (n, name) in ["queue0-circular", "queue1-circular", "queue2-fixed"]
        .iter()
        .enumerate()
    {
        let bytes = std::fs::read(work.path().join(format!("{name}.ring"))).unwrap();
        assert!(bytes.len() <= 16384, "{name}: {} bytes", bytes.len());
        let rec = qtrace::storage::recover_bytes(&bytes).unwrap();
        assert_eq!(rec.counts.unreadable, 1);
        assert_eq!(rec.damage, [], "{name}: a real ring file is not damaged");
        std::fs::write(dir.join(format!("seed-ring-{n}")), &bytes).unwrap();
    }
}
