//! The compact stream (FORMAT.md section 8): round trips, the loss
//! arithmetic of chunk headers, the worked examples byte for byte, and bad
//! input (typed errors, no panic).

mod common;
use common::{format_md_example, unhex};

use proptest::prelude::*;
use qtrace_core::compact::{
    Chunk, ChunkEncoder, ChunkHeader, DecodeError, Full, HEADER_LEN, MAX_RECORD_LEN,
};
use qtrace_core::{Event, EventId};

/// Encodes `groups` (a group of more than one record is a combine run,
/// never split unless it is longer than a whole chunk) into chunks of at
/// most `budget` bytes, the sender's drop count before group `i` being
/// `dropped[i]`. Returns each chunk's bytes.
fn encode_all(groups: &[Vec<Event>], dropped: &[u64], budget: usize) -> Vec<Vec<u8>> {
    let mut chunks = Vec::new();
    let mut header = ChunkHeader {
        sender: 0x2a,
        sequence: 0,
        first_event: 0,
        dropped: dropped.first().copied().unwrap_or(0),
        base_time: 0,
    };
    let mut buf = vec![0u8; budget];
    let mut enc = ChunkEncoder::new(&mut buf, header).unwrap();
    for (i, g) in groups.iter().enumerate() {
        let pushed = if g.len() == 1 {
            enc.push(&g[0]).map(|_| ())
        } else {
            enc.push_run(g).map(|_| ())
        };
        if pushed.is_ok() {
            continue;
        }
        // Full: close this chunk and open the next with the drops of now.
        let count = enc.count();
        let n = enc.finish();
        chunks.push(buf[..n].to_vec());
        header = header.following(count, dropped[i]);
        enc = ChunkEncoder::new(&mut buf, header).unwrap();
        if g.len() == 1 || enc.push_run(g).is_err() {
            // A run longer than a chunk: split, record by record.
            for e in g {
                if enc.push(e) == Err(Full) {
                    let count = enc.count();
                    let n = enc.finish();
                    chunks.push(buf[..n].to_vec());
                    header = header.following(count, dropped[i]);
                    enc = ChunkEncoder::new(&mut buf, header).unwrap();
                    enc.push(e).expect("one record fits an empty chunk");
                }
            }
        }
    }
    let n = enc.finish();
    chunks.push(buf[..n].to_vec());
    chunks
}

fn decode(bytes: &[u8]) -> (ChunkHeader, u16, Vec<Event>) {
    let chunk = Chunk::new_checked(bytes).unwrap();
    assert_eq!(chunk.len(), bytes.len());
    let events: Vec<Event> = chunk.records().map(|r| r.unwrap()).collect();
    assert_eq!(events.len(), chunk.count() as usize);
    // The batch decoder, in batches of 7 and all at once, yields the same.
    for batch in [7, events.len() + 1] {
        assert_eq!(by_fill(&chunk, batch), chunk.records().collect::<Vec<_>>());
    }
    (chunk.header(), chunk.count(), events)
}

/// A chunk's records through `Records::fill`, `batch` at a time, then the
/// `next` that says why the last batch stopped short: what `records()`
/// yields, as a list.
fn by_fill(chunk: &Chunk, batch: usize) -> Vec<Result<Event, DecodeError>> {
    let mut records = chunk.records();
    let mut out = Vec::new();
    let mut buf = vec![Event::default(); batch];
    loop {
        let n = records.fill(&mut buf);
        assert!(n <= batch);
        out.extend(buf[..n].iter().copied().map(Ok));
        if n < batch {
            out.extend(records.by_ref());
            return out;
        }
    }
}

/// A combine run of `n` records (FORMAT.md 1.8's flags) with random words.
fn run(time: u64, id: u16, source: u32, words: &[u64]) -> Vec<Event> {
    let conts = words.len().div_ceil(2);
    let mut v = vec![Event {
        time,
        id: EventId(id),
        flags: if conts == 0 { 0x7000 } else { 0x6000 },
        source,
        args: [(words.len() as u64 * 8) | 0x1234_5678 << 32, 9],
    }];
    for i in 0..conts {
        let end = if i + 1 == conts { 0x1000 } else { 0 };
        v.push(Event {
            time,
            id: EventId(id),
            flags: 0x4000 | end | (i as u16 + 1),
            source,
            args: [words[2 * i], *words.get(2 * i + 1).unwrap_or(&0)],
        });
    }
    v
}

fn any_arg() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => Just(0u64),
        1 => Just(u64::MAX),
        1 => Just(1u64 << 56),
        1 => Just((1u64 << 56) - 1),
        3 => 0u64..300,
        2 => any::<u64>(),
    ]
}

fn any_group() -> impl Strategy<Value = (i64, Vec<Event>)> {
    let step = prop_oneof![
        6 => 0i64..5_000,
        2 => -2_000i64..0,
        1 => Just(i64::MIN),
        1 => Just(i64::MAX),
    ];
    let id = prop_oneof![4 => 0u16..48, 1 => any::<u16>()];
    let source = prop_oneof![4 => 0u32..4, 1 => Just(u32::MAX), 1 => any::<u32>()];
    let flags = prop_oneof![6 => Just(0u16), 1 => Just(0x8001u16), 1 => any::<u16>()];
    let single = (id.clone(), source.clone(), flags, any_arg(), any_arg()).prop_map(
        |(id, source, flags, a, b)| {
            vec![Event {
                time: 0,
                id: EventId(id),
                flags,
                source,
                args: [a, b],
            }]
        },
    );
    let combine = (id, source, prop::collection::vec(any::<u64>(), 0..12))
        .prop_map(|(id, source, words)| run(0, id, source, &words));
    (step, prop_oneof![6 => single, 1 => combine])
}

/// Gives the groups their times: each step from the previous time,
/// saturating (so times go backwards, jump to 0 or to u64::MAX).
fn timed(groups: Vec<(i64, Vec<Event>)>, start: u64) -> Vec<Vec<Event>> {
    let mut t = start;
    groups
        .into_iter()
        .map(|(step, mut g)| {
            t = if step >= 0 {
                t.saturating_add(step as u64)
            } else {
                t.saturating_sub(step.unsigned_abs())
            };
            for e in &mut g {
                e.time = t;
            }
            g
        })
        .collect()
}

proptest! {
    // Miri runs each case some thousand times slower: a few cases there.
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 512 }))]

    /// Any records — ids past the interned range, arguments 0 and
    /// u64::MAX, time going backwards, several sources, combine runs —
    /// encode into chunks of a small budget and decode to the same records;
    /// the chunks' sequence, first-event and dropped fields are exact.
    #[test]
    fn every_record_round_trips(
        groups in prop::collection::vec(any_group(), 0..if cfg!(miri) { 12 } else { 400 }),
        start in prop_oneof![Just(0u64), Just(u64::MAX), any::<u64>()],
        budget in HEADER_LEN + MAX_RECORD_LEN..HEADER_LEN + 600,
        drop_steps in prop::collection::vec(0u64..3, 400),
    ) {
        let groups = timed(groups, start);
        let mut dropped = Vec::new();
        let mut d = 0;
        for s in drop_steps.iter().take(groups.len()) {
            d += s;
            dropped.push(d);
        }
        let chunks = encode_all(&groups, &dropped, budget);
        let want: Vec<Event> = groups.concat();
        let mut got = Vec::new();
        let mut expect_first = 0u64;
        let mut last_dropped = 0u64;
        for (i, bytes) in chunks.iter().enumerate() {
            prop_assert!(bytes.len() <= budget);
            let (h, count, events) = decode(bytes);
            prop_assert_eq!(h.sender, 0x2a);
            prop_assert_eq!(h.sequence, i as u64);
            prop_assert_eq!(h.first_event, expect_first);
            prop_assert!(h.dropped >= last_dropped);
            if let Some(first) = events.first() {
                prop_assert_eq!(h.base_time, first.time);
            }
            expect_first += count as u64;
            last_dropped = h.dropped;
            got.extend(events);
        }
        prop_assert_eq!(got.len(), want.len());
        prop_assert_eq!(got, want);
    }

    /// The receiver's arithmetic (FORMAT.md 2.3 and 3.3) on compact chunks:
    /// for every run of lost chunks, first event after the run minus
    /// (first event + count) before it is exactly the events they held.
    #[test]
    fn lost_chunks_give_exact_hoops(
        groups in prop::collection::vec(any_group(), 1..if cfg!(miri) { 12 } else { 300 }),
        lost in prop::collection::vec(any::<bool>(), 300),
    ) {
        let groups = timed(groups, 1_000);
        let dropped = vec![0; groups.len()];
        let chunks = encode_all(&groups, &dropped, HEADER_LEN + 64);
        let mut end = 0u64; // first + count of the last chunk that arrived
        let mut hoops = 0u64;
        let mut lost_events = 0u64;
        let mut received = 0u64;
        for (i, bytes) in chunks.iter().enumerate() {
            let (h, count, _) = decode(bytes);
            if lost[i % lost.len()] && i + 1 < chunks.len() {
                lost_events += count as u64;
                continue;
            }
            hoops += h.first_event - end;
            end = h.first_event + count as u64;
            received += count as u64;
        }
        prop_assert_eq!(hoops, lost_events);
        prop_assert_eq!(received + hoops, groups.iter().map(|g| g.len() as u64).sum::<u64>());
    }

    /// Random bytes, and random bytes after a valid header: a typed error
    /// or records, never a panic; a truncated input is only ever reported
    /// as such when bytes are missing.
    #[test]
    fn random_bytes_never_panic(mut bytes in prop::collection::vec(any::<u8>(), 0..400), header in any::<bool>(), count in 0u16..40) {
        if header && bytes.len() >= HEADER_LEN {
            bytes[..6].copy_from_slice(b"QTRZ\0\x01");
            bytes[6..8].copy_from_slice(&count.to_be_bytes());
            let len = (bytes.len() - HEADER_LEN) as u32;
            bytes[12..16].copy_from_slice(&len.to_be_bytes());
        }
        match Chunk::new_checked(&bytes) {
            Ok(chunk) => {
                let all: Vec<_> = chunk.records().collect();
                for batch in [1, 3, 64] {
                    prop_assert_eq!(&by_fill(&chunk, batch), &all, "batches of {}", batch);
                }
                let mut n = 0;
                for r in chunk.records() {
                    match r {
                        Ok(_) => n += 1,
                        Err(DecodeError::Corrupt { offset, .. }) => prop_assert!(offset >= HEADER_LEN && offset <= chunk.len()),
                        Err(e) => prop_assert!(false, "{e:?} from the records of a whole chunk"),
                    }
                }
                prop_assert!(n <= chunk.count() as usize);
            }
            Err(DecodeError::Truncated { needed, available }) => prop_assert!(needed > available),
            Err(_) => {}
        }
    }
}

/// FORMAT.md 8.4's first example: the hex below is the document's.
const EXAMPLE_CHUNK: &str = "
0000: 51 54 52 5a 00 01 00 05 00 00 00 2a 00 00 00 26
0010: 00 00 00 00 00 00 00 05 00 00 00 00 00 00 00 78
0020: 00 00 00 00 00 00 00 03 00 00 00 00 00 00 03 e8
0030: fc 02 00 00 07 04 fa 01 08 fe 01 ff ff ff ff 0f
0040: 00 03 01 fd 01 02 01 96 01 09 05 04 c8 01 ff ff
0050: ff ff ff ff ff ff
";

/// FORMAT.md 8.4's second example: the combine run of 1.8.
const EXAMPLE_RUN: &str = "
0000: 51 54 52 5a 00 01 00 03 00 00 00 07 00 00 00 35
0010: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
0020: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 05
0030: ff 06 0c 02 00 80 c0 01 82 40 85 6d 00 00 00 12
0040: 09 07 0e 00 81 80 01 30 31 32 33 34 35 36 37 38
0050: 39 61 62 63 64 65 66 05 06 00 82 a0 01 58 59 00
0060: 00 00 00 00 00
";

fn example_events() -> [Event; 5] {
    [
        Event::new(1000, EventId(2), 0, [7, 0]),
        Event::new(1250, EventId(2), 0, [8, 0]),
        Event::new(1250, EventId(1), u32::MAX, [3, 1]),
        Event::new(1100, EventId(2), 1, [9, 0]),
        Event::new(1300, EventId(2), 0, [u64::MAX, 0]),
    ]
}

fn run_events() -> [Event; 3] {
    let rec = |flags, args| Event {
        time: 5,
        id: EventId(0x0c),
        flags,
        source: 2,
        args,
    };
    [
        rec(0x6000, [0x8240_856d_0000_0012, 9]),
        rec(0x4001, [0x3031_3233_3435_3637, 0x3839_6162_6364_6566]),
        rec(0x5002, [0x5859_0000_0000_0000, 0]),
    ]
}

#[test]
fn the_worked_examples_are_byte_exact_with_format_md() {
    for (name, dump) in [
        ("compact-chunk", EXAMPLE_CHUNK),
        ("compact-run", EXAMPLE_RUN),
    ] {
        assert_eq!(unhex(&format_md_example(name)), unhex(dump), "{name}");
    }
    let mut buf = [0u8; 256];
    let h = ChunkHeader {
        sender: 0x2a,
        sequence: 5,
        first_event: 120,
        dropped: 3,
        base_time: 0,
    };
    let mut enc = ChunkEncoder::new(&mut buf, h).unwrap();
    let sizes: Vec<usize> = example_events()
        .iter()
        .map(|e| enc.push(e).unwrap())
        .collect();
    assert_eq!(sizes, [5, 4, 10, 7, 12]);
    let n = enc.finish();
    assert_eq!(&buf[..n], &unhex(EXAMPLE_CHUNK)[..]);
    let (header, count, events) = decode(&buf[..n]);
    assert_eq!(
        header,
        ChunkHeader {
            base_time: 1000,
            ..h
        }
    );
    assert_eq!(count, 5);
    assert_eq!(events, example_events());

    let h = ChunkHeader {
        sender: 7,
        ..ChunkHeader::default()
    };
    let mut enc = ChunkEncoder::new(&mut buf, h).unwrap();
    assert_eq!(enc.push_run(&run_events()), Ok(53));
    let n = enc.finish();
    assert_eq!(&buf[..n], &unhex(EXAMPLE_RUN)[..]);
    assert_eq!(decode(&buf[..n]).2, run_events());
}

#[test]
fn a_run_that_does_not_fit_leaves_the_chunk_unchanged() {
    let mut buf = [0u8; HEADER_LEN + 50];
    let mut enc = ChunkEncoder::new(&mut buf, ChunkHeader::default()).unwrap();
    enc.push(&Event::new(1, EventId(3), 0, [1, 0])).unwrap();
    let before = enc.len();
    assert_eq!(enc.push_run(&run_events()), Err(Full));
    assert_eq!((enc.len(), enc.count()), (before, 1));
    // The table is as it was: the next record of the run's key is a literal.
    let e = Event::new(9, EventId(0x0c), 2, [0, 0]);
    assert_eq!(enc.push(&e), Ok(4)); // header byte, id, source, delta
    let n = enc.finish();
    assert_eq!(
        decode(&buf[..n]).2,
        [Event::new(1, EventId(3), 0, [1, 0]), e]
    );
}

#[test]
fn the_worst_case_record_takes_max_record_len() {
    let a = Event {
        time: u64::MAX,
        id: EventId(u16::MAX),
        flags: u16::MAX,
        source: u32::MAX,
        args: [u64::MAX, u64::MAX],
    };
    // Every field at its largest: a new literal (another source), time
    // from u64::MAX back to 0, flags and both arguments.
    let b = Event {
        time: 0,
        source: u32::MAX - 1,
        ..a
    };
    let mut buf = [0u8; HEADER_LEN + 30 + MAX_RECORD_LEN];
    let mut enc = ChunkEncoder::new(
        &mut buf[..HEADER_LEN + 30 + MAX_RECORD_LEN - 1],
        ChunkHeader::default(),
    )
    .unwrap();
    assert_eq!(enc.push(&a), Ok(30)); // the first record's delta is 0: 1 byte
    assert_eq!(enc.push(&b), Err(Full));
    let mut enc = ChunkEncoder::new(&mut buf, ChunkHeader::default()).unwrap();
    assert_eq!(enc.push(&a), Ok(30));
    assert_eq!(enc.push(&b), Ok(MAX_RECORD_LEN));
    let n = enc.finish();
    assert_eq!(n, buf.len());
    assert_eq!(decode(&buf[..n]).2, [a, b]);
}

#[test]
fn every_truncation_is_truncated() {
    let chunk = unhex(EXAMPLE_CHUNK);
    for cut in 0..chunk.len() {
        let want = if cut < HEADER_LEN {
            HEADER_LEN
        } else {
            chunk.len()
        };
        assert_eq!(
            Chunk::new_checked(&chunk[..cut]),
            Err(DecodeError::Truncated {
                needed: want,
                available: cut
            }),
            "cut at {cut}"
        );
    }
    // Bytes after the chunk are the next chunk's: not looked at.
    let mut longer = chunk.clone();
    longer.extend_from_slice(b"QTRZ junk");
    assert_eq!(Chunk::new_checked(&longer).unwrap().len(), chunk.len());
}

#[test]
fn every_byte_changed_is_records_or_a_typed_error() {
    for bytes in [unhex(EXAMPLE_CHUNK), unhex(EXAMPLE_RUN)] {
        for at in 0..bytes.len() {
            for v in [0x00, 0x01, 0x7f, 0x80, 0xff, bytes[at] ^ 0x08] {
                let mut b = bytes.clone();
                b[at] = v;
                if let Ok(chunk) = Chunk::new_checked(&b) {
                    let results: Vec<_> = chunk.records().collect();
                    assert_eq!(by_fill(&chunk, 2), results);
                    assert!(results.len() <= chunk.count() as usize + 1);
                    for r in results {
                        if let Err(e) = r {
                            assert!(matches!(e, DecodeError::Corrupt { .. }), "{e:?}");
                        }
                    }
                }
            }
        }
    }
}

fn with_payload(count: u16, payload: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; HEADER_LEN];
    b[..6].copy_from_slice(b"QTRZ\0\x01");
    b[6..8].copy_from_slice(&count.to_be_bytes());
    b[12..16].copy_from_slice(&(payload.len() as u32).to_be_bytes());
    b.extend_from_slice(payload);
    b
}

fn first_error(bytes: &[u8]) -> DecodeError {
    match Chunk::new_checked(bytes) {
        Err(e) => e,
        Ok(chunk) => chunk.records().find_map(Result::err).expect("an error"),
    }
}

#[test]
fn bad_chunks_are_typed_errors() {
    let corrupt = |offset, what| DecodeError::Corrupt { offset, what };
    assert_eq!(first_error(b"QTRU\0\x01"), DecodeError::BadMagic);
    assert_eq!(
        first_error(b"QT"),
        DecodeError::Truncated {
            needed: 48,
            available: 2
        }
    );
    assert_eq!(first_error(b"QX"), DecodeError::BadMagic);
    assert_eq!(
        first_error(b"QTRZ\0\x02"),
        DecodeError::UnsupportedVersion { version: 2 }
    );
    // Impossible lengths: under 2 or over 39 bytes a record.
    let len_what = "the payload length is impossible for the record count (2 to 39 bytes a record)";
    assert_eq!(
        first_error(&with_payload(5, &[0; 9])),
        corrupt(12, len_what)
    );
    assert_eq!(
        first_error(&with_payload(1, &[0; 40])),
        corrupt(12, len_what)
    );
    assert_eq!(
        first_error(&with_payload(0, &[0; 1])),
        corrupt(12, len_what)
    );
    let mut huge = with_payload(0xffff, &[]);
    huge[12..16].copy_from_slice(&u32::MAX.to_be_bytes());
    assert_eq!(first_error(&huge), corrupt(12, len_what));
    huge[12..16].copy_from_slice(&(0xffff * 2u32).to_be_bytes());
    assert_eq!(
        first_error(&huge),
        DecodeError::Truncated {
            needed: 48 + 0xffff * 2,
            available: 48
        }
    );
    // A code naming no table entry yet (code 0 as the first record).
    assert_eq!(
        first_error(&with_payload(1, &[0x00, 0x00])),
        corrupt(
            48,
            "the interned code names no entry of the chunk's table yet"
        )
    );
    // Reserved extension bits; a raw argument marked absent.
    assert_eq!(
        first_error(&with_payload(1, &[0xf9, 0x10, 0x02, 0x00, 0x00])),
        corrupt(48, "reserved extension bits 4-7 are set")
    );
    assert_eq!(
        first_error(&with_payload(1, &[0xf9, 0x04, 0x02, 0x00, 0x00])),
        corrupt(48, "a raw argument is marked absent")
    );
    // A literal id past 16 bits, a source past 32.
    assert_eq!(
        first_error(&with_payload(1, &[0xf8, 0x80, 0x80, 0x04, 0x00, 0x00])),
        corrupt(48, "the literal id does not fit 16 bits")
    );
    assert_eq!(
        first_error(&with_payload(
            1,
            &[0xf8, 0x00, 0x80, 0x80, 0x80, 0x80, 0x10, 0x00]
        )),
        corrupt(48, "the literal source does not fit 32 bits")
    );
    // A varint of 11 bytes; one running past the payload.
    let mut long = vec![0xf8, 0x00, 0x00];
    long.extend_from_slice(&[0xff; 10]);
    long.push(0x01);
    assert_eq!(
        first_error(&with_payload(1, &long)),
        corrupt(48, "a varint runs past the payload or does not fit 64 bits")
    );
    assert_eq!(
        first_error(&with_payload(1, &[0xf8, 0x00, 0x00, 0x80])),
        corrupt(48, "a varint runs past the payload or does not fit 64 bits")
    );
    // Time below 0: a backwards delta from base time 0.
    assert_eq!(
        first_error(&with_payload(1, &[0xf9, 0x01, 0x00, 0x00, 0x01])),
        corrupt(48, "the time delta takes the time out of 64 bits")
    );
    // The second record is bad: its header byte's offset is named.
    assert_eq!(
        first_error(&with_payload(2, &[0xf8, 0x00, 0x00, 0x00, 0x08, 0x00])),
        corrupt(
            52,
            "the interned code names no entry of the chunk's table yet"
        )
    );
    // Bytes after the last record.
    assert_eq!(
        first_error(&with_payload(1, &[0xf8, 0x00, 0x00, 0x00, 0x00])),
        corrupt(52, "bytes after the last record the count announces")
    );
    // A record cut by the payload's end.
    assert_eq!(
        first_error(&with_payload(2, &[0xf8, 0x00, 0x00, 0x00])),
        corrupt(52, "the record runs past the chunk's payload")
    );
}

#[test]
fn the_table_replaces_its_oldest_entry_after_31() {
    // 40 keys, then the first again: it was replaced, so it is a literal;
    // key 39 is still interned.
    let mut buf = [0u8; 2048];
    let mut enc = ChunkEncoder::new(&mut buf, ChunkHeader::default()).unwrap();
    let e = |id: u16| Event::new(0, EventId(id), 0, [0, 0]);
    for id in 0..40 {
        assert_eq!(enc.push(&e(id)), Ok(4));
    }
    assert_eq!(enc.push(&e(0)), Ok(4));
    assert_eq!(enc.push(&e(39)), Ok(2));
    let n = enc.finish();
    let got = decode(&buf[..n]).2;
    let want: Vec<Event> = (0..40).chain([0, 39]).map(e).collect();
    assert_eq!(got, want);
}

#[test]
fn may_hold_every_id_decoded_even_past_the_table() {
    let e = |id: u16, source: u32| Event::new(0, EventId(id), source, [0, 0]);
    // 40 keys over 4 sources (more than the table's 31: entries are
    // replaced), then again: no id decoded is ever reported absent.
    let ids: Vec<u16> = (2..=11).collect();
    let mut buf = [0u8; 4096];
    let mut enc = ChunkEncoder::new(&mut buf, ChunkHeader::default()).unwrap();
    for _ in 0..2 {
        for &id in &ids {
            for source in 0..4 {
                enc.push(&e(id, source)).unwrap();
            }
        }
    }
    let n = enc.finish();
    let chunk = Chunk::new_checked(&buf[..n]).unwrap();
    let mut records = chunk.records();
    let mut out = vec![Event::default(); 100];
    assert_eq!(records.fill(&mut out), 80);
    assert!(ids.iter().all(|&id| records.may_hold(EventId(id))));

    // A chunk of ids 2 and 3 only: the ids 0 and 1 (a close run's, a
    // hoops record's: what a reader looks for) are absent.
    let mut enc = ChunkEncoder::new(&mut buf, ChunkHeader::default()).unwrap();
    for id in [2, 3, 2, 3] {
        enc.push(&e(id, 1)).unwrap();
    }
    let n = enc.finish();
    let chunk = Chunk::new_checked(&buf[..n]).unwrap();
    let mut records = chunk.records();
    assert!(!records.may_hold(EventId(2)), "nothing decoded yet");
    assert_eq!(records.by_ref().count(), 4);
    assert!(records.may_hold(EventId(2)) && records.may_hold(EventId(3)));
    assert!(!records.may_hold(EventId(0)) && !records.may_hold(EventId(1)));
}

#[test]
fn a_chunk_of_no_record_keeps_its_base_time() {
    let mut buf = [0u8; HEADER_LEN];
    let h = ChunkHeader {
        sender: 1,
        sequence: 2,
        first_event: 3,
        dropped: 4,
        base_time: 5,
    };
    let enc = ChunkEncoder::new(&mut buf, h).unwrap();
    assert_eq!(enc.finish(), HEADER_LEN);
    assert_eq!(decode(&buf), (h, 0, vec![]));
    assert!(ChunkEncoder::new(&mut buf[..HEADER_LEN - 1], h).is_err());
}

#[test]
#[cfg_attr(
    miri,
    ignore = "65,535 records: minutes under Miri; the limit is plain arithmetic"
)]
fn a_chunk_holds_at_most_65535_records() {
    let mut buf = vec![0u8; HEADER_LEN + 2 * 65_536];
    let mut enc = ChunkEncoder::new(&mut buf, ChunkHeader::default()).unwrap();
    let e = Event::new(0, EventId(4), 0, [0, 0]);
    for _ in 0..65_535 {
        enc.push(&e).unwrap();
    }
    assert_eq!(enc.push(&e), Err(Full));
    assert_eq!(enc.push_run(&[e]), Err(Full));
    let n = enc.finish();
    assert_eq!(n, HEADER_LEN + 4 + 2 * 65_534);
    let (_, count, events) = decode(&buf[..n]);
    assert_eq!((count, events.len()), (65_535, 65_535));
}
