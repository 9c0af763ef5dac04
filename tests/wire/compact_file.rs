//! Compact trace files (FORMAT.md 1.11: file version 2, a body of compact
//! chunks): the worked example byte for byte, the exact round trip against
//! the same trace written in 32-byte records (events, close run and
//! completeness), and what a cut or damaged compact file reads as.

use proptest::prelude::*;
use qtrace::reader::{Completeness, TraceReader};
use qtrace::wire::{QueueTotals, TraceHeader, TraceWriter, WireError};
use qtrace::{Event, EventId};

use crate::format::{
    arb_event, check_example, example_events, example_header, read_verdict as read,
};

const TOTALS: QueueTotals = QueueTotals {
    accepted: 1,
    dropped: 3,
    overwritten: 0,
    delivered: 1,
};

/// FORMAT.md 1.5's closed file, written compact (FORMAT.md 1.11).
fn compact_example_file() -> Vec<u8> {
    let header = example_header().with_close_run(true).with_compact(true);
    let mut w = TraceWriter::new(Vec::new(), &header).unwrap();
    w.write_events(&example_events()).unwrap();
    w.finish_with_close(3000, TOTALS).unwrap()
}

/// `events` written as one trace, with `header` (closed or not), in 32-byte
/// records and compact, flushing after the records whose indexes are in
/// `flush_after` (each flush ends a compact chunk).
fn both(
    header: &TraceHeader,
    events: &[Event],
    flush_after: &[usize],
    close: bool,
) -> [Vec<u8>; 2] {
    [false, true].map(|compact| {
        let mut w = TraceWriter::new(Vec::new(), &header.clone().with_compact(compact)).unwrap();
        for (i, e) in events.iter().enumerate() {
            w.write_event(e).unwrap();
            if flush_after.contains(&i) {
                w.flush().unwrap();
            }
        }
        if close {
            w.finish_with_close(77, TOTALS).unwrap()
        } else {
            w.finish().unwrap()
        }
    })
}

#[test]
fn compact_file_is_byte_exact_with_format_md() {
    let bytes = compact_example_file();
    check_example("compact-file", &bytes);
    assert_eq!(bytes.len(), 152 + 48 + 46);
    // The header is 1.5's but for the version: 2.
    let closed = crate::format::format_md_example("closed");
    assert_eq!(&bytes[..8], &closed[..8]);
    assert_eq!(&bytes[8..10], &[0, 2]);
    assert_eq!(&bytes[10..152], &closed[10..152]);
    let reader = TraceReader::new(&bytes[..]).unwrap();
    assert!(reader.header().is_compact());
    assert_eq!(reader.header().version(), 2);
    // It reads as 1.5's file: the same events, the same verdict.
    let (events, error, c, records, lost) = read(&bytes);
    let (events1, error1, c1, records1, lost1) = read(&closed);
    assert!(error.is_none() && error1.is_none());
    assert_eq!(events, example_events());
    assert_eq!((events, c, records, lost), (events1, c1, records1, lost1));
    assert!(matches!(c, Completeness::Complete(_)), "{c:?}");
    // Cut inside its one chunk: no record, then the partial chunk's offset.
    for cut in 152..bytes.len() {
        let (events, error, c, _, _) = read(&bytes[..cut]);
        assert!(events.is_empty(), "cut at {cut}");
        assert_eq!(
            c,
            Completeness::Cut {
                records: 0,
                lost: 0
            },
            "cut at {cut}"
        );
        match error {
            None => assert_eq!(cut, 152),
            Some(e) => {
                let w = e.wire_error().unwrap();
                assert!(w.is_truncated() && w.offset() == 152, "cut at {cut}: {e}");
            }
        }
    }
}

#[test]
fn a_compact_file_cut_anywhere_keeps_the_whole_chunks_before_the_cut() {
    // Three chunks: records 0-4, 5-9, then 10-11 and the close run.
    let events: Vec<Event> = (0..12u64)
        .map(|i| {
            if i == 7 {
                Event::new(100 + i, EventId(1), u32::MAX, [4, 1]) // 4 lost
            } else {
                Event::new(100 + i, EventId(2), (i % 3) as u32, [i, 0])
            }
        })
        .collect();
    let header = example_header().with_close_run(true);
    let [plain, compact] = both(&header, &events, &[4, 9], true);
    let h = header.to_bytes().len();
    // The chunk boundaries, from the chunks' own lengths.
    let mut bounds = vec![h];
    while *bounds.last().unwrap() < compact.len() {
        let at = *bounds.last().unwrap();
        let len = u32::from_be_bytes(compact[at + 12..at + 16].try_into().unwrap()) as usize;
        bounds.push(at + 48 + len);
    }
    assert_eq!(bounds.len(), 4, "three chunks");
    assert_eq!(*bounds.last().unwrap(), compact.len());
    assert_eq!(read(&compact).2, read(&plain).2);
    for cut in h..compact.len() {
        let (got, error, c, records, lost) = read(&compact[..cut]);
        let whole = bounds.iter().filter(|&&b| b <= cut).count() - 1;
        let kept = [0, 5, 10][whole];
        assert_eq!(got, events[..kept], "cut at {cut}");
        let at_boundary = bounds.contains(&cut);
        match &error {
            None => assert!(at_boundary, "cut at {cut}"),
            Some(e) => {
                assert!(!at_boundary, "cut at {cut}");
                let w = e.wire_error().expect("a format error");
                assert!(w.is_truncated(), "cut at {cut}: {e}");
                assert_eq!(w.offset(), bounds[whole] as u64, "cut at {cut}: {e}");
            }
        }
        let lost_before = if kept > 7 { 4 } else { 0 };
        assert_eq!(
            c,
            Completeness::Cut {
                records: kept as u64,
                lost: lost_before
            },
            "cut at {cut}"
        );
        assert_eq!((records, lost), (kept as u64, lost_before));
    }
}

#[test]
fn a_chunk_out_of_place_or_damaged_is_an_error_after_the_records_before_it() {
    let events: Vec<Event> = (0..6u64)
        .map(|i| Event::new(10 * i, EventId(2), 0, [i, 0]))
        .collect();
    let header = example_header().with_close_run(true);
    let [_, compact] = both(&header, &events, &[2], true);
    let h = header.to_bytes().len();
    let second = h + 48 + u32::from_be_bytes(compact[h + 12..h + 16].try_into().unwrap()) as usize;

    // The second chunk's sequence number changed: a chunk is missing.
    let mut bad = compact.clone();
    bad[second + 23] = 5;
    let (got, error, c, _, _) = read(&bad);
    assert_eq!(got, events[..3]);
    let e = error.unwrap();
    assert_eq!(
        e.wire_error().unwrap().to_string(),
        format!(
            "corrupt at byte {}: compact chunk: sequence 5 and first record 3, where the chunk \
             after the previous one has sequence 1 and first record 3 (a chunk is missing or out \
             of place)",
            second + 16
        )
    );
    assert!(!e.wire_error().unwrap().is_truncated());
    assert_eq!(
        c,
        Completeness::Cut {
            records: 3,
            lost: 0
        }
    );

    // An impossible second record in the second chunk: its
    // first record is yielded, then the error at the bad record.
    let mut bad = compact.clone();
    // Record 0 is `fc 02 00 00 03` (literal, arg0 = 3): record 1 starts 5 bytes in.
    assert_eq!(
        &compact[second + 48..second + 53],
        &[0xfc, 0x02, 0x00, 0x00, 0x03]
    );
    let r1 = second + 53;
    assert_eq!(compact[r1], 0x04, "slot 0, arg0");
    // Now an extension byte follows: the delta byte 0x0a becomes it (flags,
    // arg1 raw), but arg1 is marked absent.
    bad[r1] = 0x05;
    let (got, error, _, _, _) = read(&bad);
    assert_eq!(got, events[..4]);
    assert_eq!(
        error.unwrap().wire_error().unwrap().to_string(),
        format!("corrupt at byte {r1}: compact chunk: a raw argument is marked absent")
    );

    // Not a chunk at all after the header.
    let mut bad = compact.clone();
    bad[h] = b'X';
    let (got, error, _, _, _) = read(&bad);
    assert!(got.is_empty());
    assert_eq!(
        error.unwrap().wire_error().unwrap(),
        &WireError::Invalid {
            offset: h as u64,
            what: "compact chunk",
            reason: "its magic is not QTRZ".into()
        }
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 2 } else { 64 }))]

    /// Any records (any bit pattern: combine runs, hoops and control
    /// records included), any chunk cuts, closed or not: the compact file
    /// reads back exactly as the 32-byte one, with the same verdict.
    #[test]
    fn compact_and_32_byte_files_read_the_same(
        events in proptest::collection::vec(arb_event(), 0..3000),
        flush_after in proptest::collection::vec(0usize..3000, 0..5),
        close in any::<bool>(),
        closes in any::<bool>(),
    ) {
        let header = example_header().with_close_run(closes);
        let [plain, compact] = both(&header, &events, &flush_after, close);
        let a = read(&plain);
        let b = read(&compact);
        prop_assert!(a.1.is_none());
        prop_assert!(b.1.is_none());
        prop_assert_eq!(&a.0, &b.0);
        prop_assert_eq!(a.2, b.2);
        prop_assert_eq!((a.3, a.4), (b.3, b.4));
    }
}

/// Records that need the reader's care, often: close-run parts (ids 0,
/// flags `0x8000 | part`, the tracer's source, one time), hoops records
/// (id 1), name records (id 0, combine flag), among plain ones.
fn careful_event() -> impl Strategy<Value = Event> {
    (
        prop_oneof![Just(5u64), any::<u64>()],
        prop_oneof![3 => Just(0u16), 2 => Just(1u16), 4 => 2u16..6],
        prop_oneof![
            Just(0u16),
            Just(0x8001u16),
            Just(0x8002),
            Just(0x8003),
            Just(0x4000),
            Just(0x4100),
            any::<u16>()
        ],
        prop_oneof![Just(u32::MAX), 0u32..3],
        any::<[u64; 2]>(),
    )
        .prop_map(|(time, id, flags, source, args)| Event {
            time,
            id: EventId(id),
            flags,
            source,
            args,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 2 } else { 64 }))]

    /// Stretches of plain records between ones that need care, in
    /// chunks cut anywhere: the compact file read with `next_buffered`
    /// first yields what the 32-byte file yields with `next` alone, with
    /// the same counts and names after every record.
    #[test]
    fn compact_records_needing_care_read_as_32_byte_ones_record_by_record(
        events in proptest::collection::vec(careful_event(), 0..600),
        flush_after in proptest::collection::vec(0usize..600, 0..6),
        close in any::<bool>(),
        closes in any::<bool>(),
    ) {
        let header = example_header().with_close_run(closes);
        let [plain, compact] = both(&header, &events, &flush_after, close);
        let mut want = TraceReader::new(&plain[..]).unwrap();
        let mut got = TraceReader::new(&compact[..]).unwrap();
        loop {
            let g = match got.next_buffered() {
                Some(e) => Some(Ok(e)),
                None => got.next(),
            };
            let w = want.next();
            prop_assert_eq!(
                g.as_ref().map(|e| e.as_ref().map_err(|e| e.to_string())),
                w.as_ref().map(|e| e.as_ref().map_err(|e| e.to_string()))
            );
            prop_assert_eq!(
                (got.records_read(), got.lost_read()),
                (want.records_read(), want.lost_read())
            );
            for id in 0..6 {
                prop_assert_eq!(got.event_name(EventId(id)), want.event_name(EventId(id)));
            }
            if w.is_none() {
                break;
            }
        }
        prop_assert_eq!(got.completeness(), want.completeness());
    }

    /// The same files read with `read_buffered` in runs of a random length
    /// (then `next`), the compact one and the 32-byte one: what `next`
    /// alone yields from the 32-byte file, with the same counts and names.
    #[test]
    fn compact_and_32_byte_files_read_in_runs_as_record_by_record(
        events in proptest::collection::vec(careful_event(), 0..600),
        flush_after in proptest::collection::vec(0usize..600, 0..6),
        close in any::<bool>(),
        closes in any::<bool>(),
        limit in 1usize..700,
    ) {
        let header = example_header().with_close_run(closes);
        let [plain, compact] = both(&header, &events, &flush_after, close);
        let mut want = TraceReader::new(&plain[..]).unwrap();
        let expected: Vec<Result<Event, String>> =
            want.by_ref().map(|e| e.map_err(|e| e.to_string())).collect();
        for bytes in [&plain, &compact] {
            let mut got = TraceReader::new(&bytes[..]).unwrap();
            let (mut seen, mut batch) = (Vec::new(), Vec::new());
            loop {
                if got.read_buffered(&mut batch, limit) > 0 {
                    prop_assert!(batch.len() <= limit);
                    seen.extend(batch.drain(..).map(Ok));
                    continue;
                }
                match got.next() {
                    Some(e) => seen.push(e.map_err(|e| e.to_string())),
                    None => break,
                }
            }
            prop_assert_eq!(&seen, &expected);
            prop_assert_eq!(
                (got.records_read(), got.lost_read()),
                (want.records_read(), want.lost_read())
            );
            for id in 0..6 {
                prop_assert_eq!(got.event_name(EventId(id)), want.event_name(EventId(id)));
            }
            prop_assert_eq!(got.completeness(), want.completeness());
        }
    }
}
