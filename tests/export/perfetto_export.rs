//! The Perfetto export decoded with Perfetto's own schema: `scripts/check-perfetto.py`
//! (the PyPI `perfetto` package's protobuf bindings) replays the trace — clock,
//! interning, tracks, slice nesting — and prints what it found; these tests
//! compare that with exact expectations. Skipped with a message when python3
//! or the `perfetto` package is missing, unless `QTRACE_REQUIRE_PERFETTO` is set
//! (CI: `scripts/test.sh` installs the package).

use qtrace::classes::{lowlevel, semaphore, system, tracer, user, Catalog};
use qtrace::combine;
use qtrace::export::perfetto::{PerfettoOptions, PerfettoWriter};
use qtrace::export::{self, ConvertStats};
use qtrace::{Event, EventId};
use serde_json::{json, Value};

use crate::common::perfetto_decode;
use perfetto_decode::{decode, decode_slices, mini};

fn convert(events: &[Event], options: PerfettoOptions) -> (ConvertStats, tempfile::TempPath) {
    let file = tempfile::NamedTempFile::new().unwrap();
    let w = PerfettoWriter::with_options(
        &Catalog::builtin(),
        1_700_000_000_000_000_000,
        file.reopen().unwrap(),
        options,
    )
    .unwrap();
    let stats = export::convert(w, events.iter().copied()).unwrap();
    (stats, file.into_temp_path())
}

/// Two CPUs: tasks scheduled, an interrupt inside a task, a semaphore held,
/// a loss, an unknown event, and an event back in time.
fn small_trace() -> Vec<Event> {
    vec![
        Event::new(1_000, system::SCHEDULE, 0, [3, 0]),
        Event::new(1_500, system::ACTIVATE, 1, [4, 0]),
        Event::new(2_000, lowlevel::INTERRUPT, 0, [9, 0]),
        Event::new(2_400, user::USER0, 0, [77, 5]), // ends irq 9 at 2.4 µs
        Event::new(3_000, semaphore::WAIT, 1, [4, 2]),
        Event::new(3_500, system::SCHEDULE, 1, [4, 7]), // second argument shown as arg1
        Event::new(4_000, tracer::HOOPS, u32::MAX, [12, 0]),
        Event::new(4_200, EventId(0x0777), 1, [1, 2]),
        Event::new(4_100, semaphore::SIGNAL, 1, [4, 2]), // back in time: absolute
        Event::new(6_000, system::SCHEDULE, 0, [4, 0]),  // task 4 moves to CPU 0
        Event::new(7_000, tracer::HOOPS, u32::MAX, [3, 0]),
    ]
}

#[test]
fn every_event_name_track_and_nesting_decodes() {
    let (stats, path) = convert(&small_trace(), PerfettoOptions::default());
    assert_eq!(
        (stats.events, stats.hoops, stats.lost, stats.unknown),
        (9, 2, 15, 1)
    );
    // task 3, 4 (CPU 1), 4 (CPU 0) on sources and tasks; irq 9; sem 2.
    assert_eq!((stats.slices, stats.unpaired), (8, 0));
    let Some(got) = decode(&path, true) else {
        return;
    };
    assert_eq!(
        got["instants"],
        json!({
            "system:activate": 1, "user:user0": 1,
            "tracer:hoops": 2, "unknown:unknown": 1,
        })
    );
    // Drawn as their slice's begin on the source's track (schedule,
    // interrupt), or as the begin and end of `sem 2` on `task 4 sem 2`
    // (wait, signal), not as instants too.
    assert_eq!(
        got["drawn"],
        json!({"system:schedule": 3, "lowlevel:interrupt": 1,
               "semaphore:wait": 1, "semaphore:signal": 1})
    );
    assert_eq!(got["event_total"], small_trace().len());
    assert_eq!(
        got["slices"],
        json!({"task": 6, "interrupt": 1, "semaphore": 1})
    );
    assert_eq!(
        got["tracks"],
        json!([
            "lost events",
            "source 0",
            "source 1",
            "task 3",
            "task 4",
            "task 4 sem 2",
            "tracer"
        ])
    );
    assert_eq!(got["task_tracks"], 2);
    assert_eq!(got["max_depth"], 2); // irq 9 inside task 3
    assert_eq!(
        got["counters"],
        json!([[4000, "lost events", 12], [7000, "lost events", 15]])
    );
    assert_eq!(got["realtime_origin"], json!(1_700_000_000_000_000_000u64));
    let ev = |t: u64, track: &str, cat: &str, name: &str, args: Value| {
        json!([t, track, cat, name, args])
    };
    // In file order: each sequence's packets together (a chunk holds one
    // sequence's packets; these few fit in one chunk a sequence, written at
    // the end in the order the sequences began), in the order written.
    assert_eq!(
        got["events"],
        json!([
            ev(1_000, "source 0", "system", "schedule", json!({"task": 3})),
            ev(
                2_000,
                "source 0",
                "lowlevel",
                "interrupt",
                json!({"irq": 9})
            ),
            ev(
                2_400,
                "source 0",
                "user",
                "user0",
                json!({"value": 77, "arg1": 5})
            ),
            ev(6_000, "source 0", "system", "schedule", json!({"task": 4})),
            ev(1_500, "source 1", "system", "activate", json!({"task": 4})),
            ev(
                3_000,
                "source 1",
                "semaphore",
                "wait",
                json!({"task": 4, "sem": 2})
            ),
            ev(
                3_500,
                "source 1",
                "system",
                "schedule",
                json!({"task": 4, "arg1": 7})
            ),
            ev(
                4_200,
                "source 1",
                "unknown",
                "unknown",
                json!({"id": 0x777, "arg0": 1, "arg1": 2})
            ),
            ev(
                4_100,
                "source 1",
                "semaphore",
                "signal",
                json!({"task": 4, "sem": 2})
            ),
            ev(
                4_000,
                "tracer",
                "tracer",
                "hoops",
                json!({"lost": 12, "queue": 0})
            ),
            ev(
                7_000,
                "tracer",
                "tracer",
                "hoops",
                json!({"lost": 3, "queue": 0})
            ),
        ])
    );
}

#[test]
fn limits_keep_instants_and_count_what_loses_its_slice() {
    let options = PerfettoOptions {
        max_tracks: 1,
        max_interned: 1,
        ..PerfettoOptions::default()
    };
    let events = [
        Event::new(1, system::SCHEDULE, 0, [1, 0]),
        Event::new(2, system::SCHEDULE, 1, [2, 0]), // second source: no track
        Event::new(3, system::SCHEDULE, 0, [2, 0]), // second task: no task track
        Event::new(4, semaphore::WAIT, 0, [1, 1]),
        Event::new(5, semaphore::WAIT, 0, [2, 2]), // task 2 has no track: no pair
    ];
    let (stats, path) = convert(&events, options);
    assert_eq!((stats.unpaired, stats.sources), (3, 1));
    // task 1 on source 0 and its task track, task 2 on source 0, sem 1 held to the end.
    assert_eq!(stats.slices, 4);
    let Some(got) = decode(&path, false) else {
        return;
    };
    // The schedule of the untracked source 1 is an instant on `other
    // sources`; the two of source 0 are their `task N` begins.
    // The wait of task 1 is its `sem 1` begin; task 2's has no pair track.
    assert_eq!(got["instant_total"], 2);
    assert_eq!(
        got["drawn"],
        json!({"system:schedule": 2, "semaphore:wait": 1})
    );
    assert_eq!(got["instants"]["semaphore:wait"], 1);
    assert_eq!(got["instants"]["system:schedule"], 1);
    assert_eq!(
        got["tracks"],
        json!(["other sources", "source 0", "task 1", "task 1 sem 1"])
    );
    assert_eq!(got["slices"], json!({"task": 3, "semaphore": 1}));
}

#[test]
fn zero_limits_are_typed_errors() {
    let options = PerfettoOptions {
        max_tracks: 0,
        ..PerfettoOptions::default()
    };
    let err =
        PerfettoWriter::with_options(&Catalog::builtin(), 0, Vec::new(), options).unwrap_err();
    assert!(
        err.to_string().contains("PerfettoOptions::max_tracks"),
        "{err}"
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// Whatever the events (ids, sources, unsorted times), every record is one
    /// instant or (a schedule or interrupt) one slice begin and, sorted by time as the trace processor sorts, every slice
    /// end closes an open slice of its track no earlier than its begin.
    #[test]
    fn perfetto_always_nests(raw in proptest::collection::vec(
        (0u64..100, 0u16..0x19, 0u32..3, 0u64..3, 0u64..3), 0..60)
    ) {
        let events: Vec<Event> = raw
            .iter()
            .map(|&(t, id, src, a0, a1)| {
                let src = if EventId(id) == tracer::HOOPS { u32::MAX } else { src };
                Event::new(t * 100, EventId(id), src, [a0, a1])
            })
            .collect();
        let mut out = Vec::new();
        let w = PerfettoWriter::new(&Catalog::builtin(), 0, &mut out).unwrap();
        let stats = export::convert(w, events.iter().copied()).unwrap();
        let (mut slices, instants, _) = decode_slices(&out);
        // Every source, task and pair here has a track: each schedule and
        // interrupt is its slice's begin, each blocking wait its `sem S`
        // begin, each signal with an open wait (last in, first out; a waitnb
        // too) that slice's end; every other record one instant.
        let mut open: std::collections::HashMap<[u64; 2], u32> = Default::default();
        let mut drawn = 0;
        for e in &events {
            match e.id {
                system::SCHEDULE | lowlevel::INTERRUPT => drawn += 1,
                semaphore::WAIT | semaphore::WAITNB => {
                    *open.entry(e.args).or_default() += 1;
                    drawn += usize::from(e.id == semaphore::WAIT);
                }
                semaphore::SIGNAL => {
                    let n = open.entry(e.args).or_default();
                    if *n > 0 {
                        *n -= 1;
                        drawn += 1;
                    }
                }
                _ => {}
            }
        }
        proptest::prop_assert_eq!(instants, events.len() - drawn);
        proptest::prop_assert_eq!(stats.events + stats.hoops, events.len() as u64);
        slices.sort_by_key(|s| (s.0, s.1));
        let mut stacks: std::collections::HashMap<u64, Vec<u64>> = Default::default();
        let mut begins = 0u64;
        for (t, _, track, ty) in slices {
            let stack = stacks.entry(track).or_default();
            if ty == 1 {
                stack.push(t);
                begins += 1;
            } else {
                let begin = stack.pop();
                proptest::prop_assert!(begin.is_some_and(|b| b <= t), "end at {} on track {}", t, track);
            }
        }
        proptest::prop_assert!(stacks.values().all(|s| s.is_empty()));
        proptest::prop_assert_eq!(begins, stats.slices);
    }
}

#[test]
fn extreme_values_decode_and_nest() {
    let m = u64::MAX;
    let events = [
        Event::new(m, system::SCHEDULE, u32::MAX, [m, m]),
        Event::new(m, lowlevel::INTERRUPT, u32::MAX, [m, 0]),
        Event::new(0, semaphore::WAIT, 0, [m, m]), // back in time: absolute
        Event::new(5, semaphore::SIGNAL, 0, [m, m]),
        Event::new(m, tracer::HOOPS, u32::MAX, [m, m]),
        Event::new(m, tracer::HOOPS, u32::MAX, [m, m]),
        Event::new(1, EventId(u16::MAX), 7, [m, m]),
    ];
    let mut out = Vec::new();
    let w = PerfettoWriter::new(&Catalog::builtin(), m, &mut out).unwrap();
    let stats = export::convert(w, events.iter().copied()).unwrap();
    assert_eq!(
        (stats.events, stats.hoops, stats.lost, stats.unknown),
        (5, 2, m, 1)
    );
    let (slices, instants, _) = decode_slices(&out);
    // The schedule, interrupt and wait are slice begins, the signal an end.
    assert_eq!(instants, events.len() - 4);
    assert_eq!(slices.len() as u64, 2 * stats.slices);
}

/// Combine runs are reassembled (text, cut runs marked `partial`), and name
/// records name tracks and task slices: known in advance
/// ([`PerfettoWriter::with_names`]) or, when a track was declared before its
/// name arrived, by declaring it again with the name.
#[test]
fn combine_runs_and_run_time_names() {
    let source = combine::Run::name(1_000, 5, combine::NAME_SOURCE, 5, b"worker-5");
    let task = combine::Run::name(1_000, 5, combine::NAME_TASK, 3, b"idle");
    let late = combine::Run::name(3_000, 6, combine::NAME_SOURCE, 6, b"late");
    let cut = combine::Run::new(2_000, user::USER1, 5, 0, b"0123456789abcdef-cut");
    let whole = combine::Run::new(2_500, user::USER1, 5, 7, b"hello");
    let binary = combine::Run::new(2_700, user::USER2, 5, 1, &[0xff, 0x00, 0x7f]);
    let mut events: Vec<Event> = (0..source.len()).map(|i| source.record(i)).collect();
    events.extend((0..task.len()).map(|i| task.record(i)));
    events.push(Event::new(1_200, user::USER0, 6, [1, 0])); // source 6's track, unnamed yet
    events.push(Event::new(1_500, system::SCHEDULE, 5, [3, 0]));
    events.extend((0..2).map(|i| cut.record(i))); // its last record lost
    events.extend((0..whole.len()).map(|i| whole.record(i)));
    events.extend((0..binary.len()).map(|i| binary.record(i)));
    events.extend((0..late.len()).map(|i| late.record(i)));
    events.push(Event::new(3_500, user::USER0, 6, [2, 0]));
    let (stats, path) = convert(&events, PerfettoOptions::default());
    assert_eq!(stats.events, events.len() as u64);
    let Some(got) = decode(&path, true) else {
        return;
    };
    assert_eq!(
        got["tracks"],
        json!(["source 5 worker-5", "source 6 late", "task 3 idle"])
    );
    assert_eq!(got["renamed"], json!([["source 6", "source 6 late"]]));
    let ev = |t: u64, track: &str, cat: &str, name: &str, args: Value| {
        json!([t, track, cat, name, args])
    };
    assert_eq!(
        got["events"],
        json!([
            // Listed with their track's name at that point of the file:
            // each sequence's packets are together (source 6's sequence
            // began first), and sequence 1's descriptors, the renaming one
            // too, are written before the other sequences' chunks.
            ev(
                1_200,
                "source 6 late",
                "user",
                "user0",
                json!({"value": 1, "arg1": 0})
            ),
            ev(
                3_500,
                "source 6 late",
                "user",
                "user0",
                json!({"value": 2, "arg1": 0})
            ),
            ev(
                1_500,
                "source 5 worker-5",
                "system",
                "schedule",
                json!({"task": 3})
            ),
            ev(
                2_000,
                "source 5 worker-5",
                "user",
                "user1",
                json!({"value": 0, "text": "0123456789abcdef", "partial": "2 records of 3"})
            ),
            ev(
                2_500,
                "source 5 worker-5",
                "user",
                "user1",
                json!({"value": 7, "text": "hello"})
            ),
            // Not UTF-8: hexadecimal, as in Chrome JSON.
            ev(
                2_700,
                "source 5 worker-5",
                "user",
                "user2",
                json!({"value": 1, "bytes": "ff007f"})
            ),
        ])
    );
    // The task slice carries the task's name too.
    assert_eq!(got["slices"], json!({"task": 2}));
    let bytes = mini::packets(&std::fs::read(&path).unwrap()).0.concat();
    assert!(bytes.windows(11).any(|w| w == b"task 3 idle"));
}

/// Compressed (the default) and uncompressed outputs hold the identical
/// packets: a trace of several chunks, cut where the writer cuts them (once
/// a chunk's packets reach `CHUNK_BYTES`), each a `compressed_packets`
/// packet, decoding (sequence state carried across chunks) to the same
/// events as the uncompressed file.
#[test]
fn compressed_and_uncompressed_hold_the_same_packets() {
    // The writer's chunk size (PerfettoWriter's docs: about 256 KiB a sequence).
    const CHUNK_BYTES: usize = 256 * 1024;
    let events: Vec<Event> = (0..60_000u64)
        .map(|i| {
            let source = (i % 3) as u32;
            match i % 5 {
                0 => Event::new(i * 100, system::SCHEDULE, source, [i % 7, 0]),
                1 => Event::new(i * 100, lowlevel::INTERRUPT, source, [i % 4, 0]),
                _ => Event::new(i * 100, user::USER1, source, [i, i * 3]),
            }
        })
        .collect();
    let write = |compress: bool| {
        let file = tempfile::NamedTempFile::new().unwrap();
        let w = PerfettoWriter::new(&Catalog::builtin(), 7, file.reopen().unwrap())
            .unwrap()
            .with_compression(compress);
        let stats = export::convert(w, events.iter().copied()).unwrap();
        assert_eq!(stats.events, 60_000);
        let bytes = std::fs::read(file.path()).unwrap();
        (bytes, file.into_temp_path())
    };
    let (zipped, zipped_path) = write(true);
    let (plain, plain_path) = write(false);
    let (plain_packets, none) = mini::packets(&plain);
    assert_eq!(none, 0, "uncompressed output has no chunk");
    let (zipped_packets, chunks) = mini::packets(&zipped);
    assert_eq!(zipped_packets, plain_packets);
    // Where the writer cuts: a chunk holds the packets of one sequence, and
    // is written once they (each with its key and length) reach
    // CHUNK_BYTES; the rest at the end. Sequence 1 (track descriptors) is
    // also written before any other chunk once it holds a descriptor.
    let seq_of = |p: &[u8]| mini::fields(p).iter().find(|f| f.0 == 10).unwrap().2;
    let framed = |p: &Vec<u8>| {
        let (mut n, mut len) = (2 + p.len(), p.len());
        while len >= 0x80 {
            n += 1;
            len >>= 7;
        }
        n
    };
    let per_chunk = mini::chunks(&zipped);
    assert_eq!(per_chunk.len(), chunks);
    let mut last_of: std::collections::HashMap<u64, usize> = Default::default();
    for (k, c) in per_chunk.iter().enumerate() {
        let seq = seq_of(&c[0]);
        assert!(
            c.iter().all(|p| seq_of(p) == seq),
            "chunk {k}: one sequence"
        );
        last_of.insert(seq, k);
    }
    let mut full = 0;
    for (k, c) in per_chunk.iter().enumerate() {
        let seq = seq_of(&c[0]);
        let fill: usize = c.iter().map(framed).sum();
        if fill >= CHUNK_BYTES {
            // Cut at the packet that reached CHUNK_BYTES.
            assert!(fill - framed(c.last().unwrap()) < CHUNK_BYTES);
            full += 1;
        } else {
            assert!(
                seq == 1 || last_of[&seq] == k,
                "chunk {k}: short but not its sequence's last"
            );
        }
    }
    // Three sources and sequence 1, about 2.4 MB of packets.
    assert_eq!(last_of.len(), 4);
    assert!(full >= 6, "{full} full chunks");
    assert_eq!(decode_slices(&zipped), decode_slices(&plain));
    // Perfetto's own schema (and Python's zlib) reads the same events.
    let (Some(a), Some(b)) = (decode(&zipped_path, true), decode(&plain_path, true)) else {
        return;
    };
    assert_eq!(a, b);
    // Every record once: an instant or a slice begin.
    assert_eq!(a["events"].as_array().unwrap().len(), 60_000);
}

/// Many sources: the chunks of all sequences together are bounded (8 MiB of
/// buffers), so before any one sequence's chunk is full, every chunk is
/// written (short chunks that are not their sequence's last), and the
/// packets are still all there, each sequence's in order, as uncompressed.
#[test]
fn many_sources_bound_the_chunks_held_together() {
    const SOURCES: u64 = 200;
    let events: Vec<Event> = (0..300_000u64)
        .map(|i| Event::new(i * 10, user::USER1, (i % SOURCES) as u32, [i, i * 7]))
        .collect();
    let write = |compress: bool| {
        let mut out = Vec::new();
        let w = PerfettoWriter::new(&Catalog::builtin(), 0, &mut out)
            .unwrap()
            .with_compression(compress);
        let stats = export::convert(w, events.iter().copied()).unwrap();
        assert_eq!(stats.sources, SOURCES);
        out
    };
    let (zipped, plain) = (write(true), write(false));
    assert_eq!(mini::packets(&zipped).0, mini::packets(&plain).0);
    let seq_of = |p: &[u8]| mini::fields(p).iter().find(|f| f.0 == 10).unwrap().2;
    let chunks = mini::chunks(&zipped);
    let mut seen: std::collections::HashMap<u64, usize> = Default::default();
    for c in &chunks {
        let seq = seq_of(&c[0]);
        assert!(c.iter().all(|p| seq_of(p) == seq), "one sequence a chunk");
        *seen.entry(seq).or_default() += 1;
    }
    // About 9 MB of packets, 45 KB a source: no chunk reaches 256 KiB, yet
    // every source's packets went out in more than one chunk.
    assert_eq!(seen.len() as u64, SOURCES + 1);
    assert!(
        seen.iter().filter(|&(&s, _)| s != 1).all(|(_, &n)| n >= 2),
        "{seen:?}"
    );
    let (_, instants, _) = decode_slices(&zipped);
    assert_eq!(instants, events.len());
}

/// Counters (FORMAT.md 1.3.2): one counter track per source and counter, a
/// child of the source's track, with the unit and the exact values.
#[test]
fn counters_are_tracks_per_source_and_counter() {
    use qtrace::classes::ClassSpec;
    use qtrace::macros::CounterKind;
    let mut catalog = Catalog::builtin();
    let c = catalog
        .define(
            ClassSpec::new("sched", "the scheduler")
                .counter("ready", "tasks ready to run", CounterKind::U64, "tasks")
                .counter("load", "load average", CounterKind::F64, "")
                .counter("slack", "budget left", CounterKind::I64, "us"),
        )
        .unwrap();
    let (ready, load, slack) = (
        c.event("ready.counter").unwrap(),
        c.event("load.counter").unwrap(),
        c.event("slack.counter").unwrap(),
    );
    let events = [
        Event::new(1_000, system::SCHEDULE, 0, [3, 0]),
        Event::new(1_100, ready, 0, [2, 0]),
        Event::new(1_200, ready, 1, [5, 0]),
        Event::new(1_300, load, 0, [0.25f64.to_bits(), 0]),
        Event::new(1_400, ready, 0, [1, 0]),
        Event::new(1_500, slack, 1, [(-40i64) as u64, 0]),
        Event::new(1_600, ready, 0, [u64::MAX, 0]), // past i64::MAX: clamped
    ];
    let file = tempfile::NamedTempFile::new().unwrap();
    let w = PerfettoWriter::new(&catalog, 0, file.reopen().unwrap()).unwrap();
    let stats = export::convert(w, events.iter().copied()).unwrap();
    assert_eq!(stats.events, 7);
    let path = file.into_temp_path();
    let Some(got) = decode(&path, false) else {
        return;
    };
    // In time order, as the trace processor's `counter` table sorts them
    // (the file holds each source's sequence in a chunk of its own).
    let mut counters = got["counters"].as_array().unwrap().clone();
    counters.sort_by_key(|c| c[0].as_u64());
    assert_eq!(
        Value::Array(counters),
        json!([
            [1100, "source 0/sched:ready", 2],
            [1200, "source 1/sched:ready", 5],
            [1300, "source 0/sched:load", 0.25],
            [1400, "source 0/sched:ready", 1],
            [1500, "source 1/sched:slack", -40],
            [1600, "source 0/sched:ready", i64::MAX],
        ])
    );
    assert_eq!(
        got["counter_units"],
        json!({
            "source 0/sched:ready": "tasks",
            "source 1/sched:ready": "tasks",
            "source 0/sched:load": "",
            "source 1/sched:slack": "us",
        })
    );
    // Counter records are values, not instants.
    assert_eq!(got["instants"], json!({}));
}
