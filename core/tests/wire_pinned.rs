//! The bytes the firmware's stream writes, pinned: chunks (the compact
//! encoder), frames (CRC-32 and COBS) and a drain's whole output for
//! generated inputs, each checked against a length and an FNV-1a hash taken
//! from the implementation before the drain's speed-up (the byte-at-a-time
//! COBS encoder, the encoder that copied its state near a chunk's end). A
//! rewrite of any of them must write the same bytes; FORMAT.md defines them.

use qtrace_core::classes::ClassId;
use qtrace_core::compact::{ChunkEncoder, ChunkHeader, Full, HEADER_LEN};
use qtrace_core::encode::header::HeaderSpec;
use qtrace_core::ring::{CircularRing, Ring};
use qtrace_core::stream::{encode_frame, max_encoded_len, Crc32, Drain, FrameKind, Status};
use qtrace_core::{Event, EventId, StaticCatalog, Tracer};

/// A 64-bit FNV-1a hash (independent of the CRC under test).
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// xorshift64*: the same numbers on every host.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A value of `bits` random bits at most, often 0 or small.
fn value(r: &mut Rng) -> u64 {
    match r.below(8) {
        0 | 1 => 0,
        2 => r.below(128),
        3 => r.below(1 << 14),
        4 => r.below(1 << 32),
        5 => r.below(1 << 56),
        6 => (1 << 56) + r.below(1 << 60),
        _ => r.next(),
    }
}

/// Events of every shape: times forward (small and large steps) and back,
/// flags, ids and sources that overflow the 31-entry table, arguments of
/// every varint length and raw.
fn events(seed: u64, n: usize) -> Vec<Event> {
    let mut r = Rng(seed);
    let mut time = 1_000u64;
    (0..n)
        .map(|_| {
            time = match r.below(10) {
                0 => time.wrapping_sub(r.below(5_000)),
                1 => time.wrapping_add(r.below(1 << 40)),
                2 => r.next(),
                _ => time.wrapping_add(r.below(300)),
            };
            let id = if r.below(4) == 0 {
                r.below(1 << 16)
            } else {
                2 + r.below(6)
            } as u16;
            let source = match r.below(6) {
                0 => r.next() as u32,
                1 => r.below(40) as u32,
                _ => 0,
            };
            let flags = if r.below(8) == 0 {
                r.below(1 << 16) as u16
            } else {
                0
            };
            let mut e = Event::new(time, EventId(id), source, [value(&mut r), value(&mut r)]);
            e.flags = flags;
            e
        })
        .collect()
}

/// The header of a stream's first chunk, as every case here starts it.
fn first_header() -> ChunkHeader {
    ChunkHeader {
        sender: 7,
        sequence: 0,
        first_event: 0,
        dropped: 3,
        base_time: 5,
    }
}

/// Chunks of `events` in buffers of `len` bytes, concatenated.
fn chunks(events: &[Event], len: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; len];
    let mut header = first_header();
    let mut enc = ChunkEncoder::new(&mut buf, header).unwrap();
    for e in events {
        if enc.push(e) == Err(Full) {
            let count = enc.count();
            let n = enc.finish();
            out.extend_from_slice(&buf[..n]);
            header = header.following(count, header.dropped + 1);
            enc = ChunkEncoder::new(&mut buf, header).unwrap();
            enc.push(e).expect("a record fits an empty chunk");
        }
    }
    let n = enc.finish();
    out.extend_from_slice(&buf[..n]);
    out
}

#[test]
fn chunks_are_the_pinned_bytes() {
    let mut got = Vec::new();
    for (seed, len) in [
        (1, HEADER_LEN + 39),
        (2, 100),
        (3, 256),
        (4, 507),
        (5, 4096),
    ] {
        let bytes = chunks(&events(seed, 3_000), len);
        got.push((bytes.len(), fnv(&bytes)));
    }
    assert_eq!(
        got,
        [
            (112_782, 15_128_326_384_634_060_150),
            (93_765, 3_469_108_086_362_106_330),
            (56_917, 10_415_667_415_047_727_831),
            (50_194, 15_250_015_807_675_895_024),
            (46_253, 4_939_515_517_112_033_949),
        ]
    );
}

/// Bodies with no zero, long zero-free runs (past a COBS block's 254),
/// zeros at every distance, all zeros.
fn bodies() -> Vec<Vec<u8>> {
    let mut r = Rng(9);
    let mut out = Vec::new();
    for len in [0usize, 1, 2, 253, 254, 255, 256, 507, 508, 509, 1000] {
        out.push(vec![0u8; len]);
        out.push((0..len).map(|i| (i % 255 + 1) as u8).collect());
        for zeros in [2u64, 16, 300] {
            out.push(
                (0..len)
                    .map(|_| {
                        if r.below(zeros) == 0 {
                            0
                        } else {
                            r.next() as u8
                        }
                    })
                    .collect(),
            );
        }
    }
    out
}

#[test]
fn frames_are_the_pinned_bytes() {
    let mut wire = Vec::new();
    let mut crcs = 0u64;
    for body in bodies() {
        for kind in [FrameKind::Catalog, FrameKind::Chunk, FrameKind::End] {
            let mut out = vec![0u8; max_encoded_len(body.len() + 5) + 1];
            let n = encode_frame(kind, &body, &mut out).unwrap();
            wire.extend_from_slice(&out[..n]);
        }
        crcs = crcs
            .wrapping_mul(31)
            .wrapping_add(u64::from(Crc32::of(&body)));
    }
    assert_eq!(
        (wire.len(), fnv(&wire), crcs),
        (
            54_372,
            13_904_995_658_556_972_413,
            12_589_066_009_574_485_771
        )
    );
}

/// A drain's whole wire: catalogs every 4 chunks, a sink that takes
/// `take` bytes a call, events logged in bursts between polls.
fn drained(seed: u64, buf_len: usize, take: usize) -> Vec<u8> {
    static CATALOG: StaticCatalog = StaticCatalog::BUILTIN;
    let ring: CircularRing<256> = CircularRing::new();
    let mut buf = vec![0u8; buf_len];
    let spec = HeaderSpec {
        ticks_per_second: 1_000_000_000,
        clock_kind: "systick",
        host: "pinned",
        ..HeaderSpec::default()
    };
    let mut drain = Drain::new(&ring, &CATALOG, spec, 3, &mut buf)
        .unwrap()
        .catalog_every(4);
    let mut wire = Vec::new();
    let mut sink = |b: &[u8]| {
        let n = b.len().min(take);
        wire.extend_from_slice(&b[..n]);
        n
    };
    let mut r = Rng(seed);
    let all = events(seed, 4_000);
    let mut at = 0;
    while at < all.len() {
        let burst = (r.below(200) as usize).min(all.len() - at);
        for e in &all[at..at + burst] {
            ring.push(e);
        }
        at += burst;
        drain.poll(&mut sink);
    }
    drain.close();
    while drain.poll(&mut sink) != Status::Closed {}
    wire
}

#[test]
fn drains_write_the_pinned_bytes() {
    let mut got = Vec::new();
    for (seed, buf_len, take) in [
        (11, 256, usize::MAX),
        (12, 1024, usize::MAX),
        (13, 1024, 300),
    ] {
        let wire = drained(seed, buf_len, take);
        got.push((wire.len(), fnv(&wire)));
    }
    assert_eq!(
        got,
        [
            (384_787, 6_763_524_859_415_124_907),
            (129_200, 9_407_145_818_749_913_475),
            (127_655, 324_028_380_172_660_493),
        ]
    );
}

/// 120 to 200 ns a call, in steps of 40 (SysTick's 25 MHz): the firmware's
/// deltas.
fn clock() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NOW: AtomicU64 = AtomicU64::new(0);
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let step = 120 + 40 * (CALLS.fetch_add(1, Ordering::Relaxed) % 3);
    NOW.fetch_add(step, Ordering::Relaxed) + step
}

/// The firmware's own pattern (the `cost` binary's five events a turn,
/// through a tracer), drained into 1,024 bytes: the bytes the MCU figures
/// are measured on.
#[test]
fn the_firmware_pattern_is_the_pinned_bytes() {
    static RING: CircularRing<256> = CircularRing::new();
    static TRACER: Tracer<1> = Tracer::new(&StaticCatalog::BUILTIN, [&RING], clock);
    for class in [ClassId::SYSTEM, ClassId::SEMAPHORE] {
        TRACER.assign_class(class, 0).unwrap();
    }
    let mut buf = [0u8; 1024];
    let mut drain = Drain::new(
        &RING,
        &StaticCatalog::BUILTIN,
        HeaderSpec::default(),
        1,
        &mut buf,
    )
    .unwrap()
    .catalog_every(256);
    let mut wire = Vec::new();
    let mut sink = |b: &[u8]| {
        wire.extend_from_slice(b);
        b.len()
    };
    use qtrace_core::classes::{semaphore, system};
    for c in 0..20_000u64 {
        let task = c % 3 + 1;
        TRACER.log_event(system::SCHEDULE, 0, [task, 0]);
        TRACER.log_event(semaphore::WAIT, 0, [task, 1]);
        TRACER.log_event(system::ACTIVATE, 0, [task, c]);
        TRACER.log_event(semaphore::SIGNAL, 0, [task, 1]);
        TRACER.log_event(system::ENDCYCLE, 0, [task, 0]);
        if c % 25 == 24 {
            drain.poll(&mut sink);
        }
    }
    drain.close();
    while drain.poll(&mut sink) != Status::Closed {}
    assert_eq!(
        (wire.len(), fnv(&wire)),
        (564_242, 3_907_954_625_609_345_577)
    );
}

/// `push_all` in batches of every size writes the chunks one `push` each
/// writes: the same bytes, the same records taken before `Full`.
#[test]
fn push_all_writes_what_push_writes() {
    let all = events(21, 2_000);
    for len in [HEADER_LEN + 39, 300, 507] {
        let expected = chunks(&all, len);
        for batch in [1usize, 3, 8, 64] {
            let mut out = Vec::new();
            let mut buf = vec![0u8; len];
            let mut header = first_header();
            let mut enc = ChunkEncoder::new(&mut buf, header).unwrap();
            for group in all.chunks(batch) {
                let mut at = 0;
                while at < group.len() {
                    let n = enc.push_all(&group[at..]);
                    at += n;
                    if at < group.len() {
                        let count = enc.count();
                        let n = enc.finish();
                        out.extend_from_slice(&buf[..n]);
                        header = header.following(count, header.dropped + 1);
                        enc = ChunkEncoder::new(&mut buf, header).unwrap();
                    }
                }
            }
            let n = enc.finish();
            out.extend_from_slice(&buf[..n]);
            assert_eq!(out, expected, "chunks of {len}, batches of {batch}");
        }
    }
}
