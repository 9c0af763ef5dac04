//! The RTT-compatible memory ring (FORMAT.md 10.7) against simulated host
//! readers: one that keeps up, one that falls behind (exact loss counts),
//! one whose copy races the writer (no overwritten byte taken), and the
//! whole path drain -> ring -> reader -> frame decoder with exact event
//! accounting.

mod common;

use common::{format_md_example, unhex};
use proptest::prelude::*;
use qtrace_core::compact::Chunk;
use qtrace_core::encode::header::HeaderSpec;
use qtrace_core::ring::{CircularRing, Ring};
use qtrace_core::stream::{
    rtt_offset, Drain, FrameDecoder, FrameKind, RttCursor, RttError, RttHeader, RttRing,
    RTT_HEADER_LEN, RTT_ID,
};
use qtrace_core::{Event, EventId, StaticCatalog};

fn cases() -> u32 {
    if cfg!(miri) {
        1
    } else {
        64
    }
}

/// The byte at absolute position `p` of the test streams.
fn byte(p: u64) -> u8 {
    (p % 251) as u8 ^ (p >> 8) as u8
}

/// One poll of a host that reads RAM the way QMP does: `committed`, then
/// the data in pieces of `piece` bytes, calling `between` after each piece
/// (the writer running meanwhile), then `reserved`. Returns the taken bytes
/// and the loss.
fn poll<const N: usize>(
    ring: &RttRing<N>,
    cursor: &mut RttCursor,
    piece: usize,
    mut between: impl FnMut(),
) -> (Vec<u8>, u64) {
    let mut head = [0u8; RTT_HEADER_LEN];
    ring.read_at(0, &mut head);
    let h = RttHeader::parse(&head).unwrap();
    let mut data = vec![0u8; N];
    for (i, c) in data.chunks_mut(piece).enumerate() {
        ring.read_at(RTT_HEADER_LEN + i * piece, c);
        between();
    }
    ring.read_at(0, &mut head);
    let reserved = RttHeader::parse(&head).unwrap().reserved;
    let t = cursor.take(h.committed, &data, reserved).unwrap();
    ([t.first, t.second].concat(), t.lost)
}

#[test]
fn the_control_block_has_the_segger_layout() {
    static RING: RttRing<64> = RttRing::new();
    assert_eq!(core::mem::size_of::<RttRing<64>>(), RTT_HEADER_LEN + 64);
    assert_eq!(core::mem::align_of::<RttRing<64>>(), 4);
    let mut image = [0u8; RTT_HEADER_LEN + 64];
    RING.read_at(0, &mut image);
    assert_eq!(image, [0u8; RTT_HEADER_LEN + 64], "nothing before init");
    assert_eq!(
        RttHeader::parse(&image[..RTT_HEADER_LEN]),
        Err(RttError::NoId)
    );
    RING.init();
    RING.read_at(0, &mut image);
    assert_eq!(image[..16], RTT_ID);
    let word = |o: usize| u32::from_le_bytes(image[o..o + 4].try_into().unwrap());
    assert_eq!(word(rtt_offset::MAX_UP), 1);
    assert_eq!(word(rtt_offset::MAX_DOWN), 0);
    let base = &RING as *const RttRing<64> as usize;
    assert_eq!(word(rtt_offset::BUFFER), (base + RTT_HEADER_LEN) as u32);
    assert_eq!(word(rtt_offset::SIZE), 64);
    assert_eq!(&image[rtt_offset::MAGIC..rtt_offset::MAGIC + 4], b"QTRR");
    assert_eq!(word(rtt_offset::RESERVED), 0);
    assert_eq!(word(rtt_offset::COMMITTED), 0);
    assert_eq!(word(60), 0);
    let name = word(rtt_offset::NAME);
    assert_ne!(name, 0);
    let h = RttHeader::parse(&image).unwrap();
    assert_eq!((h.size, h.wr_off, h.reserved, h.committed), (64, 0, 0, 0));
}

#[test]
fn the_worked_example_is_byte_exact_with_format_md() {
    let ring: RttRing<16> = RttRing::new();
    assert_eq!(ring.write(b"0123456789"), 10);
    assert_eq!(ring.write(b"abcdefghij"), 10);
    let mut image = [0u8; RTT_HEADER_LEN + 16];
    ring.read_at(0, &mut image);
    // The two addresses differ from run to run: the example has 0x20000100
    // (the ring) + 64 and 0x00001234 (the name).
    image[rtt_offset::NAME..rtt_offset::NAME + 4].copy_from_slice(&0x1234u32.to_le_bytes());
    image[rtt_offset::BUFFER..rtt_offset::BUFFER + 4]
        .copy_from_slice(&0x2000_0140u32.to_le_bytes());
    assert_eq!(unhex(&format_md_example("rtt-ring")), image);
    let h = RttHeader::parse(&image).unwrap();
    assert_eq!((h.wr_off, h.reserved, h.committed), (4, 20, 20));
    // A reader that last took up to byte 2 lost 2..4; takes 4..20.
    let mut c = RttCursor::new();
    c.take(2, &image[RTT_HEADER_LEN..], 2).unwrap();
    let t = c
        .take(h.committed, &image[RTT_HEADER_LEN..], h.reserved)
        .unwrap();
    assert_eq!(t.lost, 2);
    assert_eq!((t.first, t.second), (&b"456789abcdef"[..], &b"ghij"[..]));
    // Had the writer reserved 6 more bytes by the end of the copy (a write
    // of "klmnop" begun), bytes 4..10 would be lost too.
    let mut c = RttCursor::new();
    c.take(2, &image[RTT_HEADER_LEN..], 2).unwrap();
    let t = c.take(20, &image[RTT_HEADER_LEN..], 26).unwrap();
    assert_eq!(t.lost, 8);
    assert_eq!([t.first, t.second].concat(), b"abcdefghij");
}

#[test]
fn a_reader_that_keeps_up_takes_every_byte() {
    let ring: RttRing<256> = RttRing::new();
    let mut c = RttCursor::new();
    let mut got = Vec::new();
    let mut p = 0u64;
    // Miri reads every byte as an atomic: fewer rounds there.
    let rounds = if cfg!(miri) { 30 } else { 300 };
    for round in 0..rounds {
        let len = (round * 37 % 120) as usize;
        let bytes: Vec<u8> = (p..p + len as u64).map(byte).collect();
        assert_eq!(ring.write(&bytes), len);
        p += len as u64;
        let (b, lost) = poll(&ring, &mut c, 256, || {});
        assert_eq!(lost, 0);
        got.extend(b);
    }
    assert_eq!(got, (0..p).map(byte).collect::<Vec<_>>());
    assert_eq!((c.taken(), c.lost()), (p, 0));
}

#[test]
fn a_reader_that_falls_behind_counts_exactly_what_it_missed() {
    let ring: RttRing<64> = RttRing::new();
    let mut c = RttCursor::new();
    let mut p = 0u64;
    let mut write = |n: u64| {
        let bytes: Vec<u8> = (p..p + n).map(byte).collect();
        assert_eq!(ring.write(&bytes), n as usize);
        p += n;
        p
    };
    write(40);
    assert_eq!(c.next(), None);
    let (b, lost) = poll(&ring, &mut c, 64, || {});
    assert_eq!((b, lost), ((0..40).map(byte).collect(), 0));
    assert_eq!(c.next(), Some(40));
    // 300 bytes while the reader is away: it takes the last 64 and misses
    // 300 - 64 = 236.
    for _ in 0..10 {
        write(30);
    }
    let (b, lost) = poll(&ring, &mut c, 64, || {});
    assert_eq!(lost, 236);
    assert_eq!(b, (276..340).map(byte).collect::<Vec<_>>());
    assert_eq!((c.taken(), c.lost()), (104, 236));
    assert_eq!(c.next(), Some(340));
    assert_eq!(c.taken() + c.lost(), 340);
    // Nothing new: nothing taken, nothing lost.
    assert_eq!(poll(&ring, &mut c, 64, || {}), (vec![], 0));
}

#[test]
fn bytes_the_writer_overwrites_during_the_copy_are_never_taken() {
    // The writer writes 20 bytes after each 16-byte piece the reader
    // copies: 4 pieces, 80 bytes written during the copy of a 64-byte ring.
    let ring: RttRing<64> = RttRing::new();
    let p = std::cell::Cell::new(0u64);
    let write = |n: u64| {
        let s = p.get();
        let bytes: Vec<u8> = (s..s + n).map(byte).collect();
        ring.write(&bytes);
        p.set(s + n);
    };
    write(50);
    let mut c = RttCursor::new();
    let mut taken = 0;
    for round in 0..if cfg!(miri) { 10 } else { 50 } {
        let before = c.taken() + c.lost();
        let (b, lost) = poll(&ring, &mut c, 16, || write(20 + round % 7));
        // Whatever is taken is the stream, byte for byte, where the cursor
        // says it is.
        let start = before + lost;
        assert_eq!(
            b,
            (start..start + b.len() as u64)
                .map(byte)
                .collect::<Vec<_>>()
        );
        taken += b.len() as u64;
    }
    // The last poll stopped at the `committed` it read first.
    let rest = p.get() - (c.taken() + c.lost());
    assert!(rest <= 4 * 26);
    assert_eq!(c.taken(), taken);
    assert!(c.lost() > 0);
}

#[test]
fn impossible_control_blocks_are_typed_errors() {
    let ring: RttRing<64> = RttRing::new();
    ring.write(b"abc");
    let mut good = [0u8; RTT_HEADER_LEN];
    ring.read_at(0, &mut good);
    assert!(RttHeader::parse(&good).is_ok());
    assert_eq!(RttHeader::parse(&good[..63]), Err(RttError::Short));
    let set = |o: usize, v: u32| {
        let mut b = good;
        b[o..o + 4].copy_from_slice(&v.to_le_bytes());
        RttHeader::parse(&b)
    };
    assert_eq!(set(0, 0), Err(RttError::NoId));
    assert_eq!(set(rtt_offset::MAX_UP, 2), Err(RttError::NotQtrace));
    assert_eq!(set(rtt_offset::MAX_DOWN, 1), Err(RttError::NotQtrace));
    assert_eq!(set(rtt_offset::MAGIC, 0), Err(RttError::NotQtrace));
    assert_eq!(set(rtt_offset::SIZE, 48), Err(RttError::BadSize(48)));
    assert_eq!(set(rtt_offset::SIZE, 8), Err(RttError::BadSize(8)));
    assert_eq!(
        set(rtt_offset::SIZE, 1 << 31),
        Err(RttError::BadSize(1 << 31))
    );
    assert_eq!(
        set(rtt_offset::WR_OFF, 64),
        Err(RttError::BadCounters {
            committed: 3,
            reserved: 3
        })
    );
    assert_eq!(
        set(rtt_offset::RESERVED, 2),
        Err(RttError::BadCounters {
            committed: 3,
            reserved: 2
        })
    );
    assert_eq!(
        set(rtt_offset::RESERVED, 68),
        Err(RttError::BadCounters {
            committed: 3,
            reserved: 68
        })
    );
    let data = [0u8; 64];
    let mut c = RttCursor::new();
    assert_eq!(c.take(0, &data[..48], 0), Err(RttError::BadSize(48)));
    c.take(100, &data, 100).unwrap();
    // The firmware restarted: committed went backwards.
    assert_eq!(
        c.take(10, &data, 10),
        Err(RttError::BadCounters {
            committed: 10,
            reserved: 10
        })
    );
    assert_eq!(
        c.take(100, &data, 99),
        Err(RttError::BadCounters {
            committed: 100,
            reserved: 99
        })
    );
    // Read after the copy, reserved may be far ahead: all overwritten.
    let t = c.take(110, &data, 300).unwrap();
    assert_eq!((t.first.len() + t.second.len(), t.lost), (0, 10));
    assert_eq!((c.taken(), c.lost()), (64, 10));
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

/// Drain -> RTT ring -> a host polling after every `every` writes ->
/// frame decoder. Returns (logged, received events by number, frames bad,
/// bytes lost, events lost by the stream's own arithmetic); asserts the
/// end frame arrived and states logged = n.
fn stream_through_rtt(
    n: u64,
    every: usize,
    per_poll: u64,
) -> (u64, Vec<(u64, Event)>, u64, u64, u64) {
    let ring: CircularRing<256> = CircularRing::new();
    let rtt: RttRing<1024> = RttRing::new();
    let mut buf = vec![0u8; 600];
    let mut drain = Drain::new(&ring, &StaticCatalog::BUILTIN, spec(), 42, &mut buf)
        .unwrap()
        .catalog_every(4);
    let mut cursor = RttCursor::new();
    let mut dbuf = vec![0u8; 4096];
    let mut dec = FrameDecoder::new(&mut dbuf);
    let mut received = Vec::new();
    let mut bad = 0;
    let mut end = None;
    let mut last: Option<(u64, u64)> = None; // first + count, dropped
    let mut link_lost = 0;
    let mut host = |dec: &mut FrameDecoder, cursor: &mut RttCursor| {
        let (bytes, lost) = poll(&rtt, cursor, 1024, || {});
        if lost > 0 {
            dec.resync();
        }
        dec.feed(&bytes, |f| match f {
            Err(_) => bad += 1,
            Ok(f) if f.kind == FrameKind::Chunk => {
                let c = Chunk::new_checked(f.body).unwrap();
                let h = c.header();
                if let Some((next, _)) = last {
                    link_lost += h.first_event - next;
                } else {
                    link_lost += h.first_event;
                }
                for (i, e) in c.records().enumerate() {
                    received.push((h.first_event + i as u64, e.unwrap()));
                }
                last = Some((h.first_event + u64::from(c.count()), h.dropped));
            }
            Ok(f) if f.kind == FrameKind::End => {
                let g = |o: usize| u64::from_be_bytes(f.body[o..o + 8].try_into().unwrap());
                end = Some((g(32), g(24), g(40)));
            }
            Ok(_) => {}
        });
    };
    let mut logged = 0u64;
    let mut writes = 0;
    while logged < n {
        for _ in 0..per_poll.min(n - logged) {
            ring.push(&event(logged));
            logged += 1;
        }
        drain.poll(&mut |b: &[u8]| {
            let taken = rtt.write(b);
            writes += 1;
            if writes % every == 0 {
                host(&mut dec, &mut cursor);
            }
            taken
        });
    }
    drain.close();
    for _ in 0..100 {
        drain.poll(&mut |b: &[u8]| {
            let taken = rtt.write(b);
            host(&mut dec, &mut cursor);
            taken
        });
        host(&mut dec, &mut cursor);
    }
    let stats = drain.stats();
    assert_eq!(stats.sent + stats.dropped, n);
    let (e_first, e_dropped, e_logged) = end.expect("the end frame arrives");
    assert_eq!((e_first + e_dropped, e_logged), (n, n));
    let next = last.map_or(0, |(next, _)| next);
    // Events lost on the link (overwritten in RAM before the host took
    // them), by the chunks' own numbers, up to the end frame's first event.
    link_lost += e_first - next;
    (n, received, bad, cursor.lost(), link_lost + e_dropped)
}

#[test]
#[cfg_attr(
    miri,
    ignore = "thousands of events through the drain: minutes under Miri; no unsafe"
)]
fn a_host_that_keeps_up_receives_every_event() {
    let (n, received, bad, bytes_lost, lost) = stream_through_rtt(5_000, 1, 8);
    assert_eq!((bad, bytes_lost, lost), (0, 0, 0));
    assert_eq!(received.len() as u64, n);
    for (k, (i, e)) in received.iter().enumerate() {
        assert_eq!((*i, *e), (k as u64, event(k as u64)));
    }
}

#[test]
#[cfg_attr(
    miri,
    ignore = "thousands of events through the drain: minutes under Miri; no unsafe"
)]
fn a_slow_host_counts_every_overwritten_event_and_takes_no_torn_frame() {
    let (n, received, bad, bytes_lost, lost) = stream_through_rtt(5_000, 40, 8);
    assert!(bytes_lost > 0, "the host is slow enough to lose bytes");
    assert_eq!(bad, 0, "no frame glued from two pieces");
    assert!(lost > 0);
    assert_eq!(received.len() as u64 + lost, n);
    for (i, e) in &received {
        assert_eq!(*e, event(*i), "every received event is the one logged");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    #[cfg_attr(miri, ignore = "thousands of events through the drain: minutes under Miri; no unsafe")]
    fn any_schedule_is_received_plus_lost_equals_logged(
        n in 1u64..3_000, every in 1usize..60, per_poll in 1u64..40,
    ) {
        let (n, received, bad, _, lost) = stream_through_rtt(n, every, per_poll);
        prop_assert_eq!(bad, 0);
        prop_assert_eq!(received.len() as u64 + lost, n);
        for (i, e) in &received {
            prop_assert_eq!(*e, event(*i));
        }
    }

    #[test]
    fn random_control_blocks_and_counters_never_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..200),
        c1 in any::<u32>(), r1 in any::<u32>(), c2 in any::<u32>(), r2 in any::<u32>(),
    ) {
        let _ = RttHeader::parse(&bytes);
        let mut with_id = RTT_ID.to_vec();
        with_id.extend_from_slice(&bytes);
        let _ = RttHeader::parse(&with_id);
        let data = [7u8; 64];
        let mut c = RttCursor::new();
        for (cm, rs) in [(c1, r1), (c2, r2)] {
            if let Ok(t) = c.take(cm, &data, rs) {
                prop_assert!(t.first.len() + t.second.len() <= 64);
            }
        }
    }
}

/// Writes of every length up to the size (and past it: clamped) at every
/// offset leave stream byte `p` at data offset `p mod N`, wrapping.
#[test]
fn every_write_lands_at_its_offset_mod_the_size() {
    let ring: RttRing<16> = RttRing::new();
    let mut model = [0u8; 16];
    let mut p = 0u64;
    for len in (0..=20usize).chain((0..40).map(|i| i * 7 % 19)) {
        let bytes: Vec<u8> = (p..p + len as u64).map(byte).collect();
        let took = ring.write(&bytes);
        assert_eq!(took, len.min(16));
        for (k, &b) in bytes[..took].iter().enumerate() {
            model[((p + k as u64) % 16) as usize] = b;
        }
        p += took as u64;
        let mut image = [0u8; RTT_HEADER_LEN + 16];
        ring.read_at(0, &mut image);
        assert_eq!(image[RTT_HEADER_LEN..], model, "after {p} bytes");
        let h = RttHeader::parse(&image).unwrap();
        assert_eq!(
            (h.committed, h.reserved, h.wr_off),
            (p as u32, p as u32, (p % 16) as u32)
        );
    }
}
