use super::super::metadata::{field_identifier, metadata};
use super::*;
use crate::classes::{system, tracer, Catalog, ClassSpec};
use crate::export::{EventSink, ExportError};
use crate::model::event::TRACER_SOURCE;
use crate::Event;
use crate::EventId;
use std::fs;

/// Parses a stream file back: (seq, discarded, begin, end, source, events
/// as (class id, time, payload bytes)).
type Packet = (u64, u64, u64, u64, u32, Vec<(u16, u64, Vec<u8>)>);

fn be64(b: &[u8]) -> u64 {
    u64::from_be_bytes(b[..8].try_into().unwrap())
}

fn parse(bytes: &[u8], arg_counts: &dyn Fn(u16) -> usize) -> Vec<Packet> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let p = &bytes[at..];
        assert_eq!(u32::from_be_bytes(p[..4].try_into().unwrap()), MAGIC);
        let size = (be64(&p[32..]) / 8) as usize;
        assert_eq!(
            be64(&p[40..]) / 8,
            size as u64,
            "packet_size = content_size"
        );
        let mut events = Vec::new();
        let mut e = PACKET_PREAMBLE;
        while e < size {
            let id = u16::from_be_bytes(p[e..e + 2].try_into().unwrap());
            let t = be64(&p[e + 2..]);
            let n = arg_counts(id);
            events.push((id, t, p[e + 10..e + 10 + n].to_vec()));
            e += 10 + n;
        }
        assert_eq!(e, size);
        out.push((
            be64(&p[48..]),
            be64(&p[56..]),
            be64(&p[16..]),
            be64(&p[24..]),
            u32::from_be_bytes(p[64..68].try_into().unwrap()),
            events,
        ));
        at += size;
    }
    out
}

#[test]
fn hoops_become_empty_packets_that_count_cumulatively() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = Catalog::builtin();
    let events = [
        Event::new(10, system::SCHEDULE, 0, [1, 0]),
        Event::new(20, tracer::HOOPS, TRACER_SOURCE, [5, 0]),
        Event::new(30, system::SCHEDULE, 0, [2, 0]),
        Event::new(40, tracer::HOOPS, TRACER_SOURCE, [3, 1]),
        Event::new(50, tracer::HOOPS, TRACER_SOURCE, [2, 0]),
    ];
    let stats = crate::export::convert(CtfWriter::create(dir.path(), &catalog, 0).unwrap(), events)
        .unwrap();
    assert_eq!(stats.events, 2);
    assert_eq!(stats.hoops, 3);
    assert_eq!(stats.lost, 10);
    assert_eq!(stats.sources, 2);
    assert_eq!(stats.packets, 5);
    let counts = |id: u16| if id == 1 || id == 4 { 16 } else { 0 };
    let tracer = parse(
        &fs::read(dir.path().join("stream-tracer")).unwrap(),
        &counts,
    );
    let disc: Vec<(u64, u64, u64, u64)> = tracer.iter().map(|p| (p.0, p.1, p.2, p.3)).collect();
    assert_eq!(
        disc,
        [
            (0, 0, 20, 20),
            (1, 5, 20, 20),
            (2, 8, 40, 40),
            (3, 10, 50, 50)
        ]
    );
    let sizes: Vec<usize> = tracer.iter().map(|p| p.5.len()).collect();
    assert_eq!(sizes, [0, 0, 0, 0], "hoops records are empty packets");
    assert!(tracer.iter().all(|p| p.4 == TRACER_SOURCE));
    let s0 = parse(&fs::read(dir.path().join("stream-0")).unwrap(), &|_| 8);
    assert_eq!(s0.len(), 1);
    assert_eq!(
        s0[0].5,
        [
            (4, 10, 1u64.to_be_bytes().to_vec()),
            (4, 30, 2u64.to_be_bytes().to_vec())
        ]
    );
    assert_eq!((s0[0].0, s0[0].1, s0[0].2, s0[0].3), (0, 0, 10, 30));
}

#[test]
fn packets_are_bounded_and_sequence_numbered() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = Catalog::builtin();
    // One packet holds (128 - 68) / 18 = 3 schedule events.
    let options = CtfOptions {
        packet_bytes: 128,
        buffer_budget: 1 << 20,
    };
    let mut w = CtfWriter::with_options(dir.path(), &catalog, 0, options).unwrap();
    for i in 0..10u64 {
        w.push(&Event::new(i, system::SCHEDULE, 7, [i, 0])).unwrap();
    }
    let stats = w.finish().unwrap();
    assert_eq!(stats.packets, 4);
    let packets = parse(&fs::read(dir.path().join("stream-7")).unwrap(), &|_| 8);
    let shape: Vec<(u64, usize, u64, u64)> =
        packets.iter().map(|p| (p.0, p.5.len(), p.2, p.3)).collect();
    assert_eq!(
        shape,
        [(0, 3, 0, 2), (1, 3, 3, 5), (2, 3, 6, 8), (3, 1, 9, 9)]
    );
    assert!(w
        .push(&Event::new(11, system::SCHEDULE, 7, [0, 0]))
        .is_err());
}

#[test]
fn budget_flushes_every_stream_and_time_never_goes_back() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = Catalog::builtin();
    let options = CtfOptions {
        packet_bytes: 4096,
        buffer_budget: 40, // two 18-byte events fit, the third flushes all
    };
    let mut w = CtfWriter::with_options(dir.path(), &catalog, 0, options).unwrap();
    w.push(&Event::new(5, system::SCHEDULE, 0, [0, 0])).unwrap();
    w.push(&Event::new(6, system::SCHEDULE, 1, [0, 0])).unwrap();
    w.push(&Event::new(4, system::SCHEDULE, 0, [0, 0])).unwrap(); // earlier: clamped to 5
    let stats = w.finish().unwrap();
    assert_eq!(stats.clamped, 1);
    assert_eq!(stats.packets, 2);
    let s0 = parse(&fs::read(dir.path().join("stream-0")).unwrap(), &|_| 8);
    let times: Vec<u64> = s0[0].5.iter().map(|e| e.1).collect();
    assert_eq!(times, [5, 5]);
}

#[test]
fn buffers_stay_within_the_budget_with_many_sources() {
    // One event from each of many sources: every stream's buffer once
    // reserved a whole packet (64 KiB), so 1000 sources held ~64 MB
    // while the budget said 8 KiB.
    let dir = tempfile::tempdir().unwrap();
    let options = CtfOptions {
        packet_bytes: 64 * 1024,
        buffer_budget: 8 * 1024,
    };
    let mut w = CtfWriter::with_options(dir.path(), &Catalog::builtin(), 0, options).unwrap();
    for src in 0..1000u32 {
        w.push(&Event::new(src as u64, system::SCHEDULE, src, [1, 0]))
            .unwrap();
        let allocated: usize = w.streams.values().map(|s| s.buf.capacity()).sum();
        assert_eq!(allocated, w.buffered, "after source {src}");
        assert!(allocated <= options.buffer_budget, "after source {src}");
    }
    let stats = w.finish().unwrap();
    assert_eq!((stats.events, stats.sources), (1000, 1000));
    let s999 = parse(&fs::read(dir.path().join("stream-999")).unwrap(), &|_| 8);
    assert_eq!(s999[0].5, [(4, 999, 1u64.to_be_bytes().to_vec())]);
}

#[test]
fn unknown_events_keep_their_number() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = Catalog::builtin();
    let mut w = CtfWriter::create(dir.path(), &catalog, 0).unwrap();
    w.push(&Event::new(1, EventId(0x0999), 2, [7, 8])).unwrap();
    assert_eq!(w.finish().unwrap().unknown, 1);
    let p = parse(&fs::read(dir.path().join("stream-2")).unwrap(), &|_| 18);
    let mut payload = 0x0999u16.to_be_bytes().to_vec();
    payload.extend(7u64.to_be_bytes());
    payload.extend(8u64.to_be_bytes());
    assert_eq!(p[0].5, [(catalog.event_count() as u16, 1, payload)]);
}

#[test]
fn a_packet_too_small_for_one_event_is_an_option_error() {
    let dir = tempfile::tempdir().unwrap();
    let options = CtfOptions {
        packet_bytes: 80,
        ..CtfOptions::default()
    };
    let err = CtfWriter::with_options(dir.path(), &Catalog::builtin(), 0, options).unwrap_err();
    assert!(
        matches!(
            err,
            ExportError::InvalidExportOption {
                option: "CtfOptions::packet_bytes",
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "invalid converter option CtfOptions::packet_bytes: packet_bytes is 80; use at least 94 so a packet holds one event"
    );
}

#[test]
fn refuses_a_non_empty_directory() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("old"), b"x").unwrap();
    let err = CtfWriter::create(dir.path(), &Catalog::builtin(), 0).unwrap_err();
    assert!(err.to_string().contains("not empty"), "{err}");
}

#[test]
fn field_names_become_identifiers() {
    assert_eq!(field_identifier("task"), "task");
    assert_eq!(field_identifier("a-b.c"), "a_b_c");
    assert_eq!(field_identifier("struct"), "_struct");
    assert_eq!(field_identifier("9lives"), "_9lives");
    assert_eq!(field_identifier("_x"), "__x");
}

#[test]
fn metadata_names_user_events_and_offsets_the_clock() {
    let mut catalog = Catalog::builtin();
    catalog
        .define(ClassSpec::new("net", "network").event("rx", "got one", &["len", "len-"]))
        .unwrap();
    let m = metadata(&catalog, 1_700_000_000_123_456_789);
    assert!(m.contains("offset_s = 1700000000;\n\toffset = 123456789;"));
    assert!(m.contains(
        "name = \"net:rx\";\n\tid = 23;\n\tstream_id = 0;\n\tfields := struct {\n\t\tuint64_t len;\n\t\tuint64_t len_;\n"
    ));
    assert!(m.contains("name = \"tracer:hoops\";\n\tid = 1;"));
    assert!(m.contains("name = \"unknown\";\n\tid = 24;"));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
    /// Whatever the events and the packet size, each stream file decodes
    /// to exactly the events of its source, in order, in packets numbered
    /// 0, 1, 2, … that do not go back in time, and the tracer stream's
    /// discarded counts are the running sums of the hoops records.
    #[test]
    fn streams_decode_to_their_sources_events(
        raw in proptest::collection::vec(
            (0u64..5, 0u16..0x1a, 0u32..4, proptest::prelude::any::<u64>(), 0u64..1000),
            0..150,
        ),
        packet_bytes in 94usize..400,
    ) {
        let catalog = Catalog::builtin();
        let unknown = catalog.event_count() as u16;
        let mut t = 0;
        let events: Vec<Event> = raw
            .iter()
            .map(|&(dt, id, src, a, b)| {
                t += dt;
                let src = if EventId(id) == tracer::HOOPS { TRACER_SOURCE } else { src };
                Event::new(t, EventId(id), src, [a, b])
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let options = CtfOptions { packet_bytes, buffer_budget: packet_bytes * 2 };
        let mut w = CtfWriter::with_options(dir.path(), &catalog, 0, options).unwrap();
        for e in &events {
            w.push(e).unwrap();
        }
        let stats = w.finish().unwrap();
        let declared = |id: u16| catalog.event(EventId(id)).unwrap().args.len();
        let payload_len = |id: u16| {
            if id == unknown {
                18
            } else if id > unknown {
                // A variant class: declared arguments plus the slots in its mask.
                let (event, mask) = ((id - unknown - 1) / 3, (id - unknown - 1) % 3 + 1);
                8 * (declared(event) + mask.count_ones() as usize)
            } else {
                8 * declared(id)
            }
        };
        let mut sources: Vec<u32> = events.iter().map(|e| e.source).collect();
        sources.sort();
        sources.dedup();
        proptest::prop_assert_eq!(stats.sources, sources.len() as u64);
        let mut packets = 0;
        for src in sources {
            let name = if src == TRACER_SOURCE { "stream-tracer".to_string() } else { format!("stream-{src}") };
            let decoded = parse(&fs::read(dir.path().join(name)).unwrap(), &payload_len);
            packets += decoded.len() as u64;
            let mut prev_end = 0;
            for (i, p) in decoded.iter().enumerate() {
                proptest::prop_assert_eq!(p.0, i as u64);
                proptest::prop_assert_eq!(p.4, src);
                proptest::prop_assert!(p.2 >= prev_end && p.3 >= p.2);
                if let (Some(first), Some(last)) = (p.5.first(), p.5.last()) {
                    proptest::prop_assert_eq!((first.1, last.1), (p.2, p.3));
                }
                prev_end = p.3;
            }
            let got: Vec<(u16, u64, Vec<u8>)> =
                decoded.iter().flat_map(|p| p.5.iter().cloned()).collect();
            let want: Vec<(u16, u64, Vec<u8>)> = events
                .iter()
                .filter(|e| e.source == src && e.id != tracer::HOOPS)
                .map(|e| {
                    if e.id.0 < unknown {
                        // Written: the declared slots, and the others when non-zero
                        // (through a variant class).
                        let n = declared(e.id.0);
                        let mask = (n..2).filter(|&i| e.args[i] != 0).fold(0u16, |m, i| m | 1 << i);
                        let id = if mask == 0 { e.id.0 } else { unknown + 1 + e.id.0 * 3 + mask - 1 };
                        let bytes = (0..2)
                            .filter(|&i| i < n || e.args[i] != 0)
                            .flat_map(|i| e.args[i].to_be_bytes())
                            .collect();
                        (id, e.time, bytes)
                    } else {
                        let mut p = e.id.0.to_be_bytes().to_vec();
                        p.extend(e.args[0].to_be_bytes());
                        p.extend(e.args[1].to_be_bytes());
                        (unknown, e.time, p)
                    }
                })
                .collect();
            proptest::prop_assert_eq!(got, want);
            if src == TRACER_SOURCE {
                let mut sums = vec![0u64];
                for e in events.iter().filter(|e| e.id == tracer::HOOPS) {
                    sums.push(sums.last().unwrap().wrapping_add(e.args[0]));
                }
                let discarded: Vec<u64> = decoded.iter().map(|p| p.1).collect();
                proptest::prop_assert_eq!(discarded, sums);
            }
        }
        proptest::prop_assert_eq!(stats.packets, packets);
    }
}

/// The latest time babeltrace2 can place: signed 64-bit ns since the epoch,
/// minus the clock origin (an origin past that is capped, so the trace stays
/// readable). Was in tests/export/export.rs.
#[test]
fn max_timestamp_is_what_babeltrace2_can_place() {
    const ORIGIN: u64 = 1_704_067_200_500_000_000;
    assert_eq!(max_timestamp(ORIGIN), i64::MAX as u64 - ORIGIN);
    assert_eq!(
        max_timestamp(u64::MAX),
        i64::MAX as u64 - 9_223_372_034_000_000_000
    );
}
