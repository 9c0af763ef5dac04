//! The drain and the frame decoder against a reference model: what the
//! host decodes is what was logged, less exactly the events the stream
//! says it lost.

extern crate std;
use std::vec::Vec;

use proptest::prelude::*;

use super::*;
use crate::compact::Chunk;
use crate::encode::header::HeaderSpec;
use crate::ring::{CircularRing, Ring};
use crate::{Event, EventId, StaticCatalog};

/// Miri runs a case of these in about a minute (scripts/miri.sh, CI's
/// budget): one case there; the module has no `unsafe` of its own.
fn cases() -> u32 {
    if cfg!(miri) {
        1
    } else {
        256
    }
}

fn spec() -> HeaderSpec<'static> {
    HeaderSpec {
        ticks_per_second: 1_000_000,
        clock_kind: "tick",
        host: "test",
        ..HeaderSpec::default()
    }
}

fn event(i: u64) -> Event {
    Event::new(
        1_000 + 3 * i,
        EventId(2 + (i % 5) as u16),
        (i % 3) as u32,
        [i, i % 7],
    )
}

/// Every frame of `bytes`, decoded and checked.
fn frames(bytes: &[u8]) -> (Vec<(FrameKind, Vec<u8>)>, DecoderCounts) {
    let mut buf = [0u8; 8192];
    let mut d = FrameDecoder::new(&mut buf);
    let mut out = Vec::new();
    d.feed(bytes, |f| {
        let f = f.expect("every frame is good");
        out.push((f.kind, f.body.to_vec()));
    });
    (out, d.counts())
}

/// What a host learns from a stream's frames.
#[derive(Debug, Default)]
struct Received {
    /// (chunk first event, dropped, events) in order.
    chunks: Vec<(u64, u64, Vec<Event>)>,
    catalog: Vec<u8>,
    catalogs: usize,
    end: Option<(u64, u64, u64)>, // first event, dropped, logged
}

fn receive(frames: &[(FrameKind, Vec<u8>)]) -> Received {
    let mut r = Received::default();
    let mut seq = None;
    for (kind, body) in frames {
        let s = match kind {
            FrameKind::Chunk => {
                let c = Chunk::new_checked(body).unwrap();
                assert_eq!(c.len(), body.len());
                let h = c.header();
                assert_eq!(h.sender, 42);
                let events: Vec<Event> = c.records().map(|e| e.unwrap()).collect();
                r.chunks.push((h.first_event, h.dropped, events));
                h.sequence
            }
            FrameKind::Catalog => {
                assert_eq!(&body[..4], b"QTRU");
                assert_eq!(body[6], 2);
                let count = u16::from_be_bytes([body[12], body[13]]) as usize;
                let offset = u32::from_be_bytes(body[44..48].try_into().unwrap()) as usize;
                assert_eq!(body.len(), 48 + count);
                if offset == 0 {
                    r.catalog.clear();
                    r.catalogs += 1;
                }
                assert_eq!(offset, r.catalog.len());
                r.catalog.extend_from_slice(&body[48..]);
                u64::from_be_bytes(body[16..24].try_into().unwrap())
            }
            FrameKind::End => {
                assert_eq!(body.len(), 56);
                let g = |o: usize| u64::from_be_bytes(body[o..o + 8].try_into().unwrap());
                r.end = Some((g(32), g(24), g(40)));
                assert_eq!(g(48), 0);
                g(16)
            }
        };
        if let Some(p) = seq {
            assert_eq!(s, p + 1, "frame sequence numbers are consecutive");
        }
        seq = Some(s);
    }
    r
}

#[derive(Clone, Debug)]
enum Op {
    /// Log this many events.
    Log(u8),
    /// Poll with a sink that takes at most this many bytes a call, for
    /// this many calls (then says full).
    Poll(u16, u8),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            (1u8..40).prop_map(Op::Log),
            (0u16..300, 1u8..6).prop_map(|(b, c)| Op::Poll(b, c)),
        ],
        0..60,
    )
}

/// Runs `ops` on a drain of a 64-slot ring and a `buf_len`-byte buffer;
/// returns the bytes sent, the events logged and the drain's account.
fn run(ops: &[Op], buf_len: usize, catalog_every: u32) -> (Vec<u8>, Vec<Event>, DrainStats) {
    let ring: CircularRing<64> = CircularRing::new();
    let mut buf = std::vec![0u8; buf_len];
    let mut drain = Drain::new(&ring, &StaticCatalog::BUILTIN, spec(), 42, &mut buf)
        .unwrap()
        .catalog_every(catalog_every);
    let mut wire = Vec::new();
    let mut logged = Vec::new();
    for op in ops {
        match *op {
            Op::Log(n) => {
                for _ in 0..n {
                    let e = event(logged.len() as u64);
                    ring.push(&e);
                    logged.push(e);
                }
            }
            Op::Poll(bytes, calls) => {
                let mut left = calls;
                let mut sink = |b: &[u8]| {
                    if left == 0 {
                        return 0;
                    }
                    left -= 1;
                    let n = b.len().min(bytes as usize);
                    wire.extend_from_slice(&b[..n]);
                    n
                };
                drain.poll(&mut sink);
            }
        }
    }
    drain.close();
    let mut sink = |b: &[u8]| {
        wire.extend_from_slice(b);
        b.len()
    };
    assert_eq!(drain.poll(&mut sink), Status::Closed);
    assert_eq!(drain.poll(&mut sink), Status::Closed);
    (wire, logged, drain.stats())
}

/// The model: the events received are the logged ones in order, less
/// exactly the losses the stream states.
fn check(wire: &[u8], logged: &[Event], stats: DrainStats) {
    let (fr, counts) = frames(wire);
    assert_eq!((counts.skipped, counts.bad), (0, 0));
    assert_eq!(counts.frames, stats.frames);
    assert_eq!(counts.bytes, stats.bytes);
    let r = receive(&fr);
    // The catalog is first, whole, and the trace header.
    assert_eq!(fr[0].0, FrameKind::Catalog);
    let mut header = Vec::new();
    spec().emit(&StaticCatalog::BUILTIN, &mut |b: &[u8]| {
        header.extend_from_slice(b)
    });
    assert_eq!(r.catalog, header);
    let mut expected_first = 0;
    let mut prev_dropped = 0;
    let mut received = Vec::new();
    for (first, dropped, events) in &r.chunks {
        assert_eq!(
            *first, expected_first,
            "first event counts the events sent before"
        );
        assert!(*dropped >= prev_dropped);
        expected_first += events.len() as u64;
        prev_dropped = *dropped;
        received.extend_from_slice(events);
    }
    let (end_first, end_dropped, end_logged) = r.end.expect("the end frame is last");
    assert_eq!(fr.last().unwrap().0, FrameKind::End);
    assert_eq!(end_first, received.len() as u64);
    assert_eq!(end_logged, logged.len() as u64);
    assert_eq!(
        end_first + end_dropped,
        end_logged,
        "received + lost = logged, exactly"
    );
    assert_eq!((stats.sent, stats.dropped), (end_first, end_dropped));
    // Received events are the logged ones in order (a subsequence).
    let mut it = logged.iter();
    for e in &received {
        assert!(
            it.any(|l| l == e),
            "event {e:?} out of order or never logged"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// Any schedule of logging and of a sink that takes some bytes some
    /// calls: received + counted losses = logged, in order.
    #[test]
    fn any_schedule_counts_every_loss(ops in ops(), buf_len in 256usize..1200, every in 0u32..4) {
        let (wire, logged, stats) = run(&ops, buf_len, every);
        check(&wire, &logged, stats);
    }

    /// A sink that always takes everything, polled before the ring fills:
    /// nothing lost.
    #[test]
    fn a_fast_sink_loses_nothing(batches in prop::collection::vec(1u8..60, 0..40), buf_len in 256usize..1200) {
        let ops: Vec<Op> = batches.iter().flat_map(|&n| [Op::Log(n), Op::Poll(u16::MAX, u8::MAX)]).collect();
        let (wire, logged, stats) = run(&ops, buf_len, 3);
        check(&wire, &logged, stats);
        prop_assert_eq!(stats.dropped, 0);
        prop_assert_eq!(stats.sent, logged.len() as u64);
    }

    /// A host attaching at any byte: it skips to the first delimiter, then
    /// every frame it decodes is good and is one of the stream's frames,
    /// the same suffix of them.
    #[test]
    fn attaching_late_resynchronises(ops in ops(), cut in 0usize..4000) {
        let (wire, _, _) = run(&ops, 400, 2);
        let cut = cut.min(wire.len());
        let (all, _) = frames(&wire);
        let (late, counts) = frames(&wire[cut..]);
        prop_assert!(late.len() <= all.len());
        prop_assert_eq!(&all[all.len() - late.len()..], &late[..]);
        prop_assert_eq!(counts.skipped as usize, wire[cut..].iter().take_while(|&&b| b != 0).count());
    }

    /// COBS and the frame: any body round-trips, in pieces of any size.
    #[test]
    fn frames_round_trip(body in prop::collection::vec(any::<u8>(), 0..1100), piece in 1usize..300) {
        let mut out = std::vec![0u8; max_encoded_len(body.len() + 5) + 2];
        out[0] = 0;
        let n = encode_frame(FrameKind::Chunk, &body, &mut out[1..]).unwrap();
        let wire = &out[..n + 1];
        prop_assert_eq!(wire.iter().filter(|&&b| b == 0).count(), 2);
        let mut buf = std::vec![0u8; body.len() + 5];
        let mut d = FrameDecoder::new(&mut buf);
        let mut got = Vec::new();
        for p in wire.chunks(piece) {
            d.feed(p, |f| got.push(f.map(|f| (f.kind, f.body.to_vec()))));
        }
        prop_assert_eq!(got, std::vec![Ok((FrameKind::Chunk, body.clone()))]);
        prop_assert!(encode_frame(FrameKind::Chunk, &body, &mut out[..n - 1]).is_none());
    }

    /// Random bytes: never a panic, every frame accounted good or bad.
    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2000)) {
        let mut buf = [0u8; 256];
        let mut d = FrameDecoder::new(&mut buf);
        let mut n = 0u64;
        d.feed(&bytes, |_| n += 1);
        let c = d.counts();
        prop_assert_eq!(c.frames + c.bad, n);
        prop_assert_eq!(c.bytes, bytes.len() as u64);
    }
}

/// A sink that takes one byte a poll while the ring fills: whole chunks are
/// dropped, and the next chunk's dropped count says exactly how many
/// events, in place.
#[test]
fn a_slow_sink_drops_whole_chunks_counted_in_place() {
    let ops: Vec<Op> = (0..200)
        .flat_map(|_| [Op::Log(20), Op::Poll(1, 1)])
        .collect();
    let (wire, logged, stats) = run(&ops, 512, 0);
    check(&wire, &logged, stats);
    assert!(stats.chunks_dropped > 0);
    assert_eq!(stats.sent + stats.dropped, 4000);
    let (fr, _) = frames(&wire);
    let r = receive(&fr);
    // The ring never overflowed (20 events a poll, 64 slots): every loss is
    // a whole chunk, between two chunks received, and exactly the events
    // the increase of `dropped` says.
    let index = |e: &Event| logged.iter().position(|l| l == e).unwrap() as u64;
    let mut next = 0u64;
    let mut prev_dropped = 0;
    for (_, dropped, events) in &r.chunks {
        let Some(first) = events.first() else {
            continue;
        };
        assert_eq!(index(first) - next, dropped - prev_dropped);
        for (k, e) in events.iter().enumerate() {
            assert_eq!(index(e), index(first) + k as u64, "a chunk is whole");
        }
        next = index(events.last().unwrap()) + 1;
        prev_dropped = *dropped;
    }
}

/// A frame cut short, one with a bad CRC, one too long for the buffer and
/// an unknown kind: each counted, and the next frame decodes.
#[test]
fn bad_frames_are_counted_and_skipped() {
    let mut good = [0u8; 32];
    let n = encode_frame(FrameKind::End, &[1, 2, 3], &mut good).unwrap();
    let good = &good[..n];
    let mut bytes = std::vec![0u8];
    bytes.extend_from_slice(&good[..4]);
    bytes.push(0); // cut
    let mut bad = good.to_vec();
    bad[3] ^= 0x40; // a body byte
    bytes.extend_from_slice(&bad);
    bytes.extend_from_slice(&[0xff; 40]);
    bytes.push(0); // too long for 32 bytes
    let mut unknown = [0u8; 32];
    let m = encode_frame(FrameKind::End, &[], &mut unknown).unwrap();
    // Re-encode with kind 9: build the frame by hand.
    let mut raw = std::vec![9u8];
    raw.extend_from_slice(&Crc32::of(&[9]).to_be_bytes());
    let _ = m;
    let mut cobs_out = [0u8; 16];
    let mut enc = cobs::Encoder::new(&mut cobs_out, 0);
    enc.push(&raw);
    let k = enc.finish();
    bytes.extend_from_slice(&cobs_out[..k]);
    bytes.extend_from_slice(good);
    let mut buf = [0u8; 32];
    let mut d = FrameDecoder::new(&mut buf);
    let mut got = Vec::new();
    d.feed(&bytes, |f| got.push(f.map(|f| (f.kind, f.body.to_vec()))));
    assert_eq!(got.len(), 5);
    assert_eq!(got[0], Err(FrameError::Cobs));
    assert!(matches!(got[1], Err(FrameError::BadChecksum { .. })));
    assert_eq!(got[2], Err(FrameError::TooLong { limit: 32 }));
    assert_eq!(got[3], Err(FrameError::UnknownKind { kind: 9 }));
    assert_eq!(got[4], Ok((FrameKind::End, std::vec![1, 2, 3])));
    assert_eq!((d.counts().frames, d.counts().bad), (1, 4));
}

/// The drain writes exactly what `encode_frame` writes for the same bodies.
#[test]
fn the_drain_writes_the_frames_encode_frame_writes() {
    let (wire, _, _) = run(&[Op::Log(3)], 512, 0);
    let (fr, _) = frames(&wire);
    let mut again = std::vec![0u8];
    for (kind, body) in &fr {
        let mut out = std::vec![0u8; max_encoded_len(body.len() + 5) + 1];
        let n = encode_frame(*kind, body, &mut out).unwrap();
        again.extend_from_slice(&out[..n]);
    }
    assert_eq!(again, wire);
}

/// A buffer that could hold a chunk of about 6,500 events makes chunks of
/// at most MAX_CHUNK_EVENTS (2,045), each the largest version 1 events
/// datagram a receiver turns it into.
#[test]
#[cfg_attr(miri, ignore = "5,000 events: slow under Miri; no unsafe")]
fn no_chunk_holds_more_than_a_datagram_carries() {
    static RING: CircularRing<8192> = CircularRing::new();
    let ring = &RING;
    let mut buf = std::vec![0u8; 64 * 1024];
    let mut drain = Drain::new(ring, &StaticCatalog::BUILTIN, spec(), 42, &mut buf).unwrap();
    // Pushed while the link is busy (the sink takes nothing): one chunk
    // fills, is capped, and the next 2,045 go into the next one.
    for i in 0..5_000 {
        ring.push(&event(i));
    }
    let mut wire = Vec::new();
    let mut sink = |b: &[u8]| {
        wire.extend_from_slice(b);
        b.len()
    };
    while drain.poll(&mut sink) == Status::Busy {}
    drain.close();
    while drain.poll(&mut sink) != Status::Closed {}
    let mut dbuf = std::vec![0u8; 128 * 1024];
    let mut d = FrameDecoder::new(&mut dbuf);
    let mut counts = Vec::new();
    let mut next = 0;
    d.feed(&wire, |f| {
        let f = f.unwrap();
        if f.kind == FrameKind::Chunk {
            let c = Chunk::new_checked(f.body).unwrap();
            assert_eq!(c.header().first_event, next);
            for (k, e) in c.records().enumerate() {
                assert_eq!(e.unwrap(), event(next + k as u64));
            }
            next += u64::from(c.count());
            counts.push(c.count());
        }
    });
    assert_eq!(counts, [2045, 2045, 910]);
    assert_eq!((drain.stats().sent, drain.stats().dropped), (5_000, 0));
}
