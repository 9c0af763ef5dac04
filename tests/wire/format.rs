//! The trace-file and datagram formats: round trips of every value, byte-exact
//! agreement with the worked examples in FORMAT.md, and bad input.

use proptest::prelude::*;
use qtrace::classes::{Catalog, ClassInfo, ClassSpec, EventInfo};
use qtrace::clock::{Clock, ManualClock};
use qtrace::reader::{Completeness, ReadError, TraceReader};
use qtrace::wire::datagram::{self, CatalogAssembler, DatagramKind, DatagramView};
use qtrace::wire::{CloseRecord, QueueTotals, TraceHeader, TraceWriter, WireError};
use qtrace::ClassId;
use qtrace::QueueHandle;
use qtrace::{Event, EventId};

/// The hex dump after `<!-- example:NAME -->` in FORMAT.md.
pub(crate) fn format_md_example(name: &str) -> Vec<u8> {
    let md = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/FORMAT.md")).unwrap();
    let marker = format!("<!-- example:{name} -->");
    let start = md.find(&marker).expect("FORMAT.md has the example") + marker.len();
    let body = &md[start..];
    let body = &body[body.find("```text").unwrap() + 7..];
    let body = &body[..body.find("```").unwrap()];
    let mut bytes = Vec::new();
    for line in body.lines().filter(|l| !l.trim().is_empty()) {
        let (addr, hex) = line.split_once(':').unwrap();
        assert_eq!(usize::from_str_radix(addr.trim(), 16).unwrap(), bytes.len());
        for b in hex.split_whitespace() {
            bytes.push(u8::from_str_radix(b, 16).unwrap());
        }
    }
    bytes
}

fn ev(id: u16, class: u16, name: &str, d: &str, args: &[&str]) -> EventInfo {
    EventInfo {
        id: EventId(id),
        class: ClassId(class),
        name: name.into(),
        description: d.into(),
        args: args.iter().map(|s| s.to_string()).collect(),
    }
}

pub(crate) fn example_header() -> TraceHeader {
    let catalog = Catalog::from_parts(
        vec![
            ClassInfo {
                id: ClassId(0),
                name: "tracer".into(),
                description: "".into(),
                first_event: EventId(0),
                event_count: 2,
            },
            ClassInfo {
                id: ClassId(1),
                name: "app".into(),
                description: "".into(),
                first_event: EventId(2),
                event_count: 1,
            },
        ],
        vec![
            ev(0, 0, "reserved", "", &[]),
            ev(1, 0, "hoops", "lost events", &["lost", "queue"]),
            ev(2, 1, "tick", "", &["n"]),
        ],
    )
    .unwrap();
    TraceHeader::new(catalog, &Clock::manual(&ManualClock::new(0)))
        .with_clock("manual", 1_000_000_000, 1_700_000_000_000_000_000)
        .unwrap()
        .with_host("demo")
        .unwrap()
        .with_process_id(4242)
        .with_queue(QueueHandle(1), "fixed")
        .unwrap()
}

pub(crate) fn example_events() -> [Event; 2] {
    [
        Event::new(1000, EventId(2), 0, [7, 0]),
        Event::new(2000, EventId(1), u32::MAX, [3, 1]),
    ]
}

fn example_file() -> Vec<u8> {
    let mut w = TraceWriter::new(Vec::new(), &example_header()).unwrap();
    w.write_events(&example_events()).unwrap();
    w.finish().unwrap()
}

fn read_all(bytes: &[u8]) -> Result<(TraceHeader, Vec<Event>, Option<ReadError>), ReadError> {
    let reader = TraceReader::new(bytes)?;
    let header = reader.header().clone();
    let mut events = Vec::new();
    let mut error = None;
    for e in reader {
        match e {
            Ok(e) => events.push(e),
            Err(e) => error = Some(e),
        }
    }
    Ok((header, events, error))
}

fn open_err(bytes: &[u8]) -> WireError {
    match TraceReader::new(bytes) {
        Ok(_) => panic!("the header was accepted"),
        Err(e) => e.wire_error().expect("a format error").clone(),
    }
}

#[test]
fn file_is_byte_exact_with_format_md() {
    let expected = format_md_example("file");
    assert_eq!(expected.len(), 216);
    assert_eq!(example_file(), expected);
    let (header, events, error) = read_all(&expected).unwrap();
    assert_eq!(header, example_header());
    assert_eq!(events, example_events());
    assert!(error.is_none());
    let reader = TraceReader::new(&expected[..]).unwrap();
    assert_eq!(reader.header_len(), 152);
    assert_eq!(reader.event_name(EventId(2)), Some("tick"));
    assert_eq!(reader.event_class(EventId(2)).unwrap().name, "app");
    assert_eq!(reader.event_name(EventId(3)), None);
}

#[test]
fn datagram_is_byte_exact_with_format_md() {
    let expected = format_md_example("datagram");
    let mut buf = [0u8; datagram::DEFAULT_MAX_DATAGRAM_LEN];
    let (len, n) =
        datagram::encode_events(&mut buf, 0x2a, 5, 3, 120, &example_events()[..1]).unwrap();
    assert_eq!((len, n), (72, 1));
    assert_eq!(&buf[..len], &expected[..]);
    let v = DatagramView::new_checked(&expected[..]).unwrap();
    let h = v.header();
    assert_eq!(
        (h.kind, h.sender, h.sequence, h.dropped, h.first_event),
        (DatagramKind::Events, 42, 5, 3, 120)
    );
    assert_eq!(v.events().collect::<Vec<_>>(), example_events()[..1]);
}

#[test]
fn close_datagram_is_byte_exact_with_format_md() {
    let expected = format_md_example("close");
    let counts = datagram::CloseCounts {
        logged: 263,
        unsent: 3,
    };
    let mut buf = [0u8; 56];
    let len = datagram::encode_close(&mut buf, 9, 5, 4, 256, counts).unwrap();
    assert_eq!(&buf[..len], &expected[..]);
    let v = DatagramView::new_checked(&expected[..]).unwrap();
    let h = v.header();
    assert_eq!(
        (h.kind, h.sender, h.sequence, h.dropped, h.first_event),
        (DatagramKind::Close, 9, 5, 4, 256)
    );
    assert_eq!(v.close(), Some(counts));
    // The example is a consistent sender: logged = first event + dropped + unsent.
    assert_eq!(counts.logged, h.first_event + h.dropped + counts.unsent);
}

#[test]
fn truncated_files_yield_what_is_whole_then_an_error_with_the_offset() {
    let file = example_file();
    for cut in 0..file.len() {
        let bytes = &file[..cut];
        if cut < 152 {
            let e = open_err(bytes);
            assert!(e.is_truncated(), "cut at {cut}: {e}");
            continue;
        }
        let (_, events, error) = read_all(bytes).unwrap();
        let whole = (cut - 152) / 32;
        assert_eq!(events, example_events()[..whole], "cut at {cut}");
        if (cut - 152) % 32 == 0 {
            assert!(error.is_none(), "cut at {cut}");
        } else {
            let e = error.expect("a partial record is an error");
            assert_eq!(e.offset(), 152 + 32 * whole as u64, "cut at {cut}");
            assert!(e.wire_error().unwrap().is_truncated());
            assert!(
                e.to_string()
                    .contains(&format!("byte {}", 152 + 32 * whole)),
                "{e}"
            );
        }
    }
}

#[test]
fn a_header_length_too_short_for_the_table_is_corrupt_not_truncated() {
    // The table of the example ends at byte 147. A header length field
    // claiming less cuts the table: once reported as "truncated" (the file
    // was cut short, more bytes would help), though the whole file is there.
    for h in 44..147u32 {
        let mut file = example_file();
        file[16..20].copy_from_slice(&h.to_be_bytes());
        let e = open_err(&file);
        assert!(!e.is_truncated(), "header length {h}: {e}");
        assert!(e.offset() <= h as u64, "header length {h}: {e}");
    }
    let mut file = example_file();
    file[16..20].copy_from_slice(&100u32.to_be_bytes());
    assert_eq!(
        open_err(&file).to_string(),
        "corrupt at byte 99: description: it runs past the end of the header (100 bytes, as its length field at byte 16 says)"
    );
}

#[test]
fn wrong_magic_is_not_a_trace() {
    let mut file = example_file();
    file[0] = b'X';
    assert_eq!(open_err(&file), WireError::BadMagic { what: "trace file" });
    let text = b"This is a text file, not a trace at all.\n".repeat(4);
    assert_eq!(open_err(&text), WireError::BadMagic { what: "trace file" });
    // A text-mode transfer turned CR LF into LF.
    let mut mangled = example_file();
    mangled.remove(4);
    assert_eq!(
        open_err(&mangled),
        WireError::BadMagic { what: "trace file" }
    );
}

#[test]
fn a_future_version_is_refused_with_the_supported_list() {
    let mut file = example_file();
    file[9] = 3;
    let e = open_err(&file);
    assert_eq!(
        e,
        WireError::UnsupportedVersion {
            offset: 8,
            version: 3,
            supported: &[1, 2]
        }
    );
    assert!(e.to_string().contains("newer qtrace"), "{e}");
    // Even if the rest of a future header is unreadable.
    let mut short = file[..44].to_vec();
    short[16..20].copy_from_slice(&u32::MAX.to_be_bytes());
    assert!(matches!(
        open_err(&short),
        WireError::UnsupportedVersion { version: 3, .. }
    ));
}

#[test]
fn impossible_record_size_and_byte_order() {
    for size in [0u16, 16, 31, 33, 64, u16::MAX] {
        let mut file = example_file();
        file[12..14].copy_from_slice(&size.to_be_bytes());
        assert_eq!(open_err(&file), WireError::BadRecordSize { found: size });
    }
    let mut file = example_file();
    file[10..12].copy_from_slice(&[2, 1]);
    assert_eq!(open_err(&file), WireError::BadByteOrder { found: 0x0201 });
}

#[test]
fn oversized_tables_are_errors_not_allocations() {
    // A header length of 4 GiB.
    let mut file = example_file();
    file[16..20].copy_from_slice(&u32::MAX.to_be_bytes());
    assert!(matches!(
        open_err(&file),
        WireError::TooLarge {
            offset: 16,
            len: 0xffff_ffff,
            ..
        }
    ));
    // Just over the cap.
    file[16..20].copy_from_slice(&((4u32 << 20) + 8).to_be_bytes());
    assert!(matches!(
        open_err(&file),
        WireError::TooLarge { offset: 16, .. }
    ));
    // Under the cap but longer than the file: truncated, and the reader only
    // holds what the file has.
    file[16..20].copy_from_slice(&(4u32 << 20).to_be_bytes());
    assert!(open_err(&file).is_truncated());
    // Shorter than the fixed part.
    file[16..20].copy_from_slice(&40u32.to_be_bytes());
    assert!(matches!(
        open_err(&file),
        WireError::Invalid { offset: 16, .. }
    ));
    // 65535 classes.
    let mut file = example_file();
    file[0x41..0x43].copy_from_slice(&[0xff, 0xff]);
    assert!(matches!(
        open_err(&file),
        WireError::Invalid { offset: 0x41, .. }
    ));
    // A class with 65535 events.
    let mut file = example_file();
    file[0x4d..0x4f].copy_from_slice(&[0xff, 0xff]);
    assert!(matches!(
        open_err(&file),
        WireError::Invalid { offset: 0x4d, .. }
    ));
    // A host name claiming 65535 bytes.
    let mut file = example_file();
    file[0x34..0x36].copy_from_slice(&[0xff, 0xff]);
    assert!(matches!(
        open_err(&file),
        WireError::TooLarge {
            offset: 0x34,
            len: 65535,
            ..
        }
    ));
    // A name running past the header's end: corrupt (the whole header is
    // there), not truncated; reported at the name's length field.
    let mut file = example_file();
    file[0x87..0x89].copy_from_slice(&[0, 60]);
    let e = open_err(&file);
    assert!(
        matches!(
            e,
            WireError::Invalid {
                offset: 0x87,
                what: "event",
                ..
            }
        ),
        "{e:?}"
    );
    // An event with 3 arguments.
    let mut file = example_file();
    file[0x8f] = 3;
    assert!(matches!(
        open_err(&file),
        WireError::Invalid { offset: 0x8f, .. }
    ));
    // A name with a space, and invalid UTF-8.
    let mut file = example_file();
    file[0x8b] = b' ';
    assert!(matches!(
        open_err(&file),
        WireError::Invalid { offset: 0x87, .. }
    ));
    file[0x8b] = 0xff;
    assert!(matches!(
        open_err(&file),
        WireError::Invalid { offset: 0x89, .. }
    ));
    // A zero clock rate.
    let mut file = example_file();
    file[32..40].copy_from_slice(&[0; 8]);
    assert!(matches!(
        open_err(&file),
        WireError::Invalid { offset: 32, .. }
    ));
    // A queue type without a queue handle.
    let mut file = example_file();
    file[40..42].copy_from_slice(&[0xff, 0xff]);
    assert!(matches!(
        open_err(&file),
        WireError::Invalid { offset: 0x3a, .. }
    ));
}

#[test]
fn unknown_flags_padding_and_ids_are_ignored_but_kept() {
    let mut file = example_file();
    file[14..16].copy_from_slice(&[0xff, 0xff]); // header flags
    file[42..44].copy_from_slice(&[0xff, 0xff]); // reserved
    file[0x93..0x98].copy_from_slice(&[1, 2, 3, 4, 5]); // padding
    file[0x98 + 10..0x98 + 12].copy_from_slice(&[0x80, 0x01]); // record flags
    file[0xb8 + 8..0xb8 + 10].copy_from_slice(&[0x12, 0x34]); // an id the table lacks
    let (header, events, error) = read_all(&file).unwrap();
    assert!(error.is_none());
    // Bit 0 is known (the writer closes its files); the others are ignored.
    assert_eq!(header, example_header().with_close_run(true));
    assert_eq!(events[0].flags, 0x8001);
    assert_eq!(events[1].id, EventId(0x1234));
}

#[test]
fn every_single_byte_corruption_of_the_header_is_handled() {
    let file = example_file();
    for at in 0..152 {
        for v in [0u8, 1, 0x7f, 0x80, 0xff, file[at] ^ 0x20] {
            let mut bad = file.clone();
            bad[at] = v;
            // Never a panic; either a header (then records) or an error.
            if let Ok((_, events, _)) = read_all(&bad) {
                if !(16..20).contains(&at) {
                    // The header length moves where records start.
                    assert_eq!(events.len(), 2, "byte {at} = {v:#x}");
                }
            }
        }
    }
}

fn arb_catalog() -> impl Strategy<Value = Catalog> {
    let name = "[A-Za-z0-9_.-]{1,64}";
    let desc = "[ -~]{0,40}|\\PC{0,20}";
    let event = (name, desc, proptest::collection::vec(name, 0..=2));
    let class = (name, desc, proptest::collection::vec(event, 1..6));
    proptest::collection::vec(class, 0..6).prop_map(|classes| {
        let mut c = Catalog::builtin();
        for (name, desc, events) in classes {
            let mut spec = ClassSpec::new(name, desc);
            for (n, d, args) in events {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                spec = spec.event(n, d, &args);
            }
            // Duplicate or over-long random names are refused; skip those.
            let _ = c.define(spec);
        }
        c
    })
}

pub(crate) fn arb_event() -> impl Strategy<Value = Event> {
    (
        any::<u64>(),
        any::<u16>(),
        any::<u16>(),
        any::<u32>(),
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

fn arb_header() -> impl Strategy<Value = TraceHeader> {
    (
        arb_catalog(),
        "[A-Za-z0-9_.-]{1,64}",
        1..=u64::MAX,
        any::<u64>(),
        "[!-~]{1,255}|\\PC{1,60}",
        any::<u32>(),
        proptest::option::of((0u16..0xffff, "[A-Za-z0-9_.-]{1,64}")),
    )
        .prop_map(|(catalog, kind, tps, origin, host, pid, queue)| {
            let h = TraceHeader::new(catalog, &Clock::manual(&ManualClock::new(0)))
                .with_clock(&kind, tps, origin)
                .unwrap()
                .with_process_id(pid);
            let h = match h.clone().with_host(&host) {
                Ok(h) => h,
                Err(_) => h, // over 255 bytes of multi-byte characters
            };
            match queue {
                Some((q, ty)) => h.with_queue(QueueHandle(q), &ty).unwrap(),
                None => h.without_queue(),
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 128 }))]

    #[test]
    fn every_header_and_record_round_trips(
        header in arb_header(),
        events in proptest::collection::vec(arb_event(), 0..200),
    ) {
        let mut w = TraceWriter::new(Vec::new(), &header).unwrap();
        w.write_events(&events).unwrap();
        prop_assert_eq!(w.events_written(), events.len() as u64);
        let bytes = w.finish().unwrap();
        prop_assert_eq!(bytes.len(), header.to_bytes().len() + 32 * events.len());
        prop_assert_eq!(header.to_bytes().len() % 8, 0);
        let (back, read, error) = read_all(&bytes).unwrap();
        prop_assert!(error.is_none());
        prop_assert_eq!(&back, &header);
        prop_assert_eq!(read, events);
        // Names of every id, user-defined ones included, come from the file.
        let reader = TraceReader::new(&bytes[..]).unwrap();
        for e in header.catalog().events() {
            prop_assert_eq!(reader.event_name(e.id), Some(e.name.as_str()));
            prop_assert_eq!(reader.event_class(e.id).map(|c| c.id), Some(e.class));
        }
    }

    #[test]
    fn datagrams_round_trip(
        events in proptest::collection::vec(arb_event(), 0..300),
        sender in any::<u32>(),
        first_seq in any::<u32>(),
        dropped in any::<u64>(),
        first_event in any::<u32>(),
        max_len in 72usize..3000,
    ) {
        let mut buf = vec![0u8; max_len];
        let per = datagram::records_per_datagram(max_len);
        let mut decoded = Vec::new();
        let mut rest = &events[..];
        let mut seq = first_seq as u64;
        let mut first = first_event as u64;
        loop {
            let (len, n) =
                datagram::encode_events(&mut buf, sender, seq, dropped, first, rest).unwrap();
            prop_assert!(len <= max_len);
            prop_assert_eq!(n, rest.len().min(per));
            prop_assert_eq!(len, 40 + 32 * n);
            let v = DatagramView::new_checked(&buf[..len]).unwrap();
            let h = v.header();
            prop_assert_eq!(
                (h.kind, h.sender, h.sequence, h.dropped, h.first_event),
                (DatagramKind::Events, sender, seq, dropped, first)
            );
            decoded.extend(v.events());
            rest = &rest[n..];
            seq += 1;
            first += n as u64;
            if rest.is_empty() { break; }
        }
        prop_assert_eq!(decoded, events);
    }

    #[test]
    fn catalog_datagrams_round_trip(header in arb_header(), max_len in 72usize..2000) {
        let bytes = header.to_bytes();
        let mut buf = vec![0u8; max_len];
        let mut asm = CatalogAssembler::new();
        let mut offset = 0;
        let mut got = None;
        while offset < bytes.len() {
            let (len, n) =
                datagram::encode_catalog_fragment(&mut buf, 1, 0, 0, 0, &bytes, offset).unwrap();
            let v = DatagramView::new_checked(&buf[..len]).unwrap();
            got = asm.push(&v.fragment().unwrap()).unwrap();
            offset += n;
        }
        prop_assert_eq!(got, Some(header));
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = DatagramView::new_checked(&bytes[..]).map(|v| v.events().count());
        let _ = read_all(&bytes);
        // With a valid prefix, so the checks get past the magic.
        let mut file = example_file()[..44].to_vec();
        file.extend_from_slice(&bytes);
        file[16..20].copy_from_slice(&((44 + bytes.len().min(200)) as u32).to_be_bytes());
        let _ = read_all(&file);
    }
}

#[test]
fn the_largest_table_round_trips_under_the_cap() {
    let mut c = Catalog::builtin();
    let long = |prefix: &str, i: usize| format!("{prefix}{i:0>60}");
    let desc = "d".repeat(256);
    let mut class = 0;
    while c.classes().len() < 256 {
        let room = 4096 - c.event_count();
        let left = 256 - c.classes().len();
        let n = (room / left).max(1);
        let mut spec = ClassSpec::new(long("cls", class), desc.clone());
        for e in 0..n {
            spec = spec.event(
                long("evt", e),
                desc.clone(),
                &[&long("a", 0), &long("b", 1)],
            );
        }
        c.define(spec).unwrap();
        class += 1;
    }
    assert_eq!(c.classes().len(), 256);
    let header = TraceHeader::new(c, &Clock::manual(&ManualClock::new(0)))
        .with_host(&"h".repeat(255))
        .unwrap();
    let bytes = header.to_bytes();
    assert!(
        bytes.len() <= 4 << 20,
        "the largest header readers accept (4 MiB)"
    );
    let (back, _) = TraceHeader::decode(&bytes).unwrap();
    assert_eq!(back, header);
}

fn dgram_err(bytes: &[u8]) -> WireError {
    DatagramView::new_checked(bytes).unwrap_err()
}

#[test]
fn bad_catalog_datagrams_are_typed_errors() {
    let header_bytes = example_header().to_bytes();
    let mut buf = [0u8; 100];
    let (len, n) =
        datagram::encode_catalog_fragment(&mut buf, 1, 2, 3, 4, &header_bytes, 0).unwrap();
    assert_eq!((len, n), (100, 52));
    let good = buf[..len].to_vec();
    assert!(DatagramView::new_checked(&good[..]).is_ok());
    for cut in 0..len {
        assert!(dgram_err(&good[..cut]).is_truncated(), "cut {cut}");
    }
    // A catalog claiming 4 GiB.
    let mut big = good.clone();
    big[40..44].copy_from_slice(&u32::MAX.to_be_bytes());
    assert!(matches!(
        dgram_err(&big),
        WireError::TooLarge { offset: 40, .. }
    ));
    // A fragment past the catalog's end.
    let mut past = good.clone();
    past[44..48].copy_from_slice(&150u32.to_be_bytes());
    assert!(matches!(
        dgram_err(&past),
        WireError::Invalid { offset: 44, .. }
    ));
    // An empty fragment.
    let mut empty = good[..48].to_vec();
    empty[12..14].copy_from_slice(&[0, 0]);
    assert!(matches!(
        dgram_err(&empty),
        WireError::Invalid { offset: 44, .. }
    ));
    // A count claiming more bytes than arrived, and fewer.
    let mut more = good.clone();
    more[13] = 53;
    assert!(dgram_err(&more).is_truncated());
    let mut fewer = good.clone();
    fewer[13] = 51;
    assert!(matches!(
        dgram_err(&fewer),
        WireError::Invalid { offset: 99, .. }
    ));
    // Larger than any UDP payload.
    let mut huge = vec![0u8; datagram::MAX_DATAGRAM_LEN + 1];
    huge[..40].copy_from_slice(&good[..40]);
    assert!(matches!(
        dgram_err(&huge),
        WireError::TooLarge { offset: 0, .. }
    ));
    // Buffers too small to encode into.
    let mut tiny = [0u8; 71];
    assert!(datagram::encode_events(&mut tiny, 0, 0, 0, 0, &example_events()).is_err());
    assert!(datagram::encode_catalog_fragment(&mut tiny, 0, 0, 0, 0, &header_bytes, 0).is_err());
    assert!(datagram::encode_catalog_fragment(
        &mut buf,
        0,
        0,
        0,
        0,
        &header_bytes,
        header_bytes.len()
    )
    .is_err());
}

#[test]
fn trace_reader_stops_when_asked_and_reports_damage_after_the_good_events() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.qtr");
    let mut file = example_file();
    std::fs::write(&path, &file).unwrap();
    let seen: Vec<Event> = TraceReader::open(&path)
        .unwrap()
        .take(1)
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(seen.as_slice(), &example_events()[..1]);
    file.truncate(file.len() - 1);
    std::fs::write(&path, &file).unwrap();
    let mut seen = Vec::new();
    let mut err = None;
    for e in TraceReader::open(&path).unwrap() {
        match e {
            Ok(e) => seen.push(e),
            Err(e) => {
                err = Some(e);
                break;
            }
        }
    }
    let err = err.expect("a cut file ends in an error");
    assert_eq!(seen, example_events()[..1]);
    assert_eq!(err.offset(), 184);
    assert!(
        err.to_string()
            .starts_with(&format!("{}: truncated at byte 184", path.display())),
        "{err}"
    );
    let missing = TraceReader::open(dir.path().join("missing.qtr")).unwrap_err();
    assert!(matches!(missing, ReadError::Open { .. }));
}

fn closed_example_file() -> Vec<u8> {
    let header = example_header().with_close_run(true);
    let mut w = TraceWriter::new(Vec::new(), &header).unwrap();
    w.write_events(&example_events()).unwrap();
    assert_eq!((w.events_written(), w.lost_written()), (2, 3));
    w.finish_with_close(
        3000,
        QueueTotals {
            accepted: 1,
            dropped: 3,
            overwritten: 0,
            delivered: 1,
        },
    )
    .unwrap()
}

#[test]
fn closed_file_is_byte_exact_with_format_md() {
    let expected = format_md_example("closed");
    assert_eq!(expected.len(), 312);
    assert_eq!(closed_example_file(), expected);
    // Only byte 0x0f differs from the unclosed example before the run.
    let plain = format_md_example("file");
    assert_eq!(&expected[..15], &plain[..15]);
    assert_eq!((expected[15], plain[15]), (1, 0));
    assert_eq!(&expected[16..216], &plain[16..]);

    let mut reader = TraceReader::new(&expected[..]).unwrap();
    assert!(reader.header().closes());
    assert_eq!(reader.completeness(), None, "unknown before the end");
    let events: Vec<Event> = reader.by_ref().map(Result::unwrap).collect();
    assert_eq!(events, example_events(), "the close run is not yielded");
    let close = CloseRecord::new(
        3000,
        QueueTotals {
            accepted: 1,
            dropped: 3,
            overwritten: 0,
            delivered: 1,
        },
        2,
        3,
    );
    assert_eq!(reader.completeness(), Some(Completeness::Complete(close)));
    assert_eq!((reader.records_read(), reader.lost_read()), (2, 3));
}

fn completeness_of(bytes: &[u8]) -> (Vec<Event>, Option<ReadError>, Completeness) {
    let (events, error, c, _, _) = read_verdict(bytes);
    (events, error, c)
}

/// Every item a reader yields (the events, its last error), its verdict,
/// and the records and losses it counted.
pub(crate) fn read_verdict(
    bytes: &[u8],
) -> (Vec<Event>, Option<ReadError>, Completeness, u64, u64) {
    let mut reader = TraceReader::new(bytes).unwrap();
    let mut events = Vec::new();
    let mut error = None;
    for e in reader.by_ref() {
        match e {
            Ok(e) => events.push(e),
            Err(e) => error = Some(e),
        }
    }
    let c = reader.completeness().unwrap();
    (events, error, c, reader.records_read(), reader.lost_read())
}

#[test]
fn a_closed_file_cut_anywhere_in_its_close_run_reads_as_cut() {
    let full = format_md_example("closed");
    for cut in 216..312 {
        let (events, error, c) = completeness_of(&full[..cut]);
        // Whole close-run records before the cut are shown as stray records.
        let whole = (cut - 216) / 32;
        assert_eq!(events.len(), 2 + whole, "cut at {cut}");
        assert_eq!(&events[..2], &example_events());
        assert_eq!(error.is_some(), (cut - 216) % 32 != 0, "cut at {cut}");
        assert_eq!(
            c,
            Completeness::Cut {
                records: 2 + whole as u64,
                lost: 3
            },
            "cut at {cut}"
        );
        assert_eq!(c.is_complete(), Some(false));
    }
    // Cut inside the events: the hoops record seen so far is what is known lost.
    let (events, _, c) = completeness_of(&full[..200]);
    assert_eq!(events.len(), 1);
    assert_eq!(
        c,
        Completeness::Cut {
            records: 1,
            lost: 0
        }
    );
}

#[test]
fn old_files_read_with_completeness_unknown() {
    let (events, error, c) = completeness_of(&format_md_example("file"));
    assert_eq!(events, example_events());
    assert!(error.is_none());
    assert_eq!(c, Completeness::Unknown);
    assert_eq!(c.is_complete(), None);
    // The closed file with its flag cleared: the run is shown as records.
    let mut cleared = format_md_example("closed");
    cleared[15] = 0;
    let (events, _, c) = completeness_of(&cleared);
    assert_eq!(events.len(), 5);
    assert_eq!(c, Completeness::Unknown);
}

#[test]
fn a_close_run_that_disagrees_with_the_file_is_a_mismatch() {
    let mut bytes = format_md_example("closed");
    // Part 3 claims 5 records.
    bytes[0x137 - 8] = 5;
    let (events, _, c) = completeness_of(&bytes);
    assert_eq!(events, example_events());
    match c {
        Completeness::Mismatch {
            close,
            records,
            lost,
        } => {
            assert_eq!((close.records, close.lost, records, lost), (5, 3, 2, 3));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(c.is_complete(), Some(false));
}

#[test]
fn stray_control_records_are_yielded_and_counted() {
    let header = example_header().with_close_run(true);
    let run = CloseRecord::new(50, QueueTotals::default(), 0, 0).to_records();
    let tick = Event::new(60, EventId(2), 0, [1, 0]);
    let bad_part = Event {
        flags: 0x8007,
        ..run[0]
    };
    // A whole run in the middle, a part out of order, then a real final run.
    let mut w = TraceWriter::new(Vec::new(), &header).unwrap();
    w.write_events(&run).unwrap();
    w.write_event(&tick).unwrap();
    w.write_events(&[run[1], bad_part, run[0]]).unwrap();
    let bytes = w.finish_with_close(70, QueueTotals::default()).unwrap();
    let (events, error, c) = completeness_of(&bytes);
    assert!(error.is_none());
    assert_eq!(
        events,
        vec![run[0], run[1], run[2], tick, run[1], bad_part, run[0]]
    );
    match c {
        Completeness::Complete(close) => assert_eq!((close.records, close.time), (7, 70)),
        other => panic!("{other:?}"),
    }
    // A run followed by one more record is not final: the file is cut.
    let mut w = TraceWriter::new(Vec::new(), &header).unwrap();
    w.write_events(&run).unwrap();
    w.write_event(&tick).unwrap();
    let bytes = w.finish().unwrap();
    let (events, _, c) = completeness_of(&bytes);
    assert_eq!(events, vec![run[0], run[1], run[2], tick]);
    assert_eq!(
        c,
        Completeness::Cut {
            records: 4,
            lost: 0
        }
    );
}

proptest! {
    #[test]
    fn any_bytes_after_a_closing_header_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..400)) {
        let mut bytes = closed_example_file()[..216].to_vec();
        bytes.extend_from_slice(&tail);
        let mut reader = TraceReader::new(&bytes[..]).unwrap();
        let n = reader.by_ref().filter(|r| r.is_ok()).count() as u64;
        let c = reader.completeness().unwrap();
        prop_assert_eq!(reader.records_read(), n);
        prop_assert!(c.is_complete().is_some());
    }
}

// ---------------------------------------------------------------------------
// FORMAT.md v2: the worked examples of the error cases (1.7, 2.5) and of the
// receiver's behaviours (3.x). Each dump is read from FORMAT.md by its
// `<!-- example:NAME -->` marker; set QTRACE_PRINT_EXAMPLES=1 to print what
// the code produces (to write a new example).

fn hex_dump(bytes: &[u8]) -> String {
    let mut s = String::new();
    for (i, chunk) in bytes.chunks(16).enumerate() {
        s.push_str(&format!("{:04x}:", i * 16));
        for b in chunk {
            s.push_str(&format!(" {b:02x}"));
        }
        s.push('\n');
    }
    s
}

/// Compares `produced` with FORMAT.md's example `name` (printing it when
/// asked).
pub(crate) fn check_example(name: &str, produced: &[u8]) {
    if std::env::var_os("QTRACE_PRINT_EXAMPLES").is_some() {
        println!(
            "<!-- example:{name} -->\n```text\n{}```",
            hex_dump(produced)
        );
        return;
    }
    assert_eq!(
        hex_dump(&format_md_example(name)),
        hex_dump(produced),
        "FORMAT.md example {name}"
    );
}

/// The rows of FORMAT.md 1.7's table: a change to the file of 1.7 (the
/// first byte changed, the new bytes) and the exact error message it gives.
const FILE_PATCHES: &[(usize, &[u8], &str)] = &[
    (0x09, &[3], "format version 3 at byte 8 is not supported: this reader accepts versions [1, 2]; use a newer qtrace"),
    (0x0a, &[2], "byte-order mark 0x0202 at byte 10 is not the big-endian mark 0x0102: the file is corrupt"),
    (0x0d, &[64], "record size 64 at byte 12 is impossible: qtrace records are 32 bytes; the file is corrupt"),
    (0x10, &[1], "corrupt at byte 16: the header claims 16777368 bytes, more than the 4194304 allowed"),
    (0x13, &[0x28], "corrupt at byte 16: header length: 40 is shorter than the fixed part (44 bytes)"),
    (0x24, &[0, 0, 0, 0], "corrupt at byte 32: clock rate: zero ticks per second"),
    (0x13, &[0x66], "corrupt at byte 99: description: it runs past the end of the header (102 bytes, as its length field at byte 16 says)"),
    (0x13, &[0xe0], "truncated at byte 0: the header needs 224 bytes but only 216 remain (the file was cut short or is still being written)"),
    (0x33, b"X", "accepted"),
    (0x2e, &[0x20], "corrupt at byte 44: clock kind: clock kind name \" anual\" is invalid: use 1 to 64 characters from A-Z a-z 0-9 _ . -"),
    (0x2e, &[0xff], "corrupt at byte 46: clock kind: not valid UTF-8"),
    (0x36, &[0x7f], "corrupt at byte 52: host name: empty or has control characters"),
    (0x28, &[0xff, 0xff], "corrupt at byte 58: queue type name: present without a queue handle, or missing with one"),
    (0x3c, b"/", "corrupt at byte 58: queue type name: queue type name \"/ixed\" is invalid: use 1 to 64 characters from A-Z a-z 0-9 _ . -"),
    (0x42, &[0x00], "corrupt at byte 65: class count: 0 classes (a table has 1 to 256)"),
    (0x4e, &[0x00], "corrupt at byte 77: event count: class \"tracer\" claims 0 events; a class has at least 1 and the table at most 4096 in all"),
    (0x65, &[0x09], "accepted"),
    (0x69, &[0x0a], "corrupt at byte 99: description: it holds a line break (CR or LF): a description is one line"),
    (0x70, &[0x03], "corrupt at byte 112: argument count: 3 arguments (at most 2)"),
    (0x89, b" ", "corrupt at byte 135: event: event name \" ick\" is invalid: use 1 to 64 characters from A-Z a-z 0-9 _ . -"),
];

#[test]
fn file_error_examples_are_exact() {
    let file = example_file();
    for &(at, value, message) in FILE_PATCHES {
        let mut bytes = file.clone();
        bytes[at..at + value.len()].copy_from_slice(value);
        let got = match TraceReader::new(&bytes[..]) {
            Ok(_) => "accepted".to_string(),
            Err(e) => e.to_string(),
        };
        if std::env::var_os("QTRACE_PRINT_EXAMPLES").is_some() {
            println!("{at:#04x} -> {value:02x?}: {got}");
            continue;
        }
        assert_eq!(got, message, "bytes at {at:#x} set to {value:02x?}");
    }
    // The two dumped examples: a short file of a later version, a short
    // file of this version.
    let later = [&file[..9], &[3, 1, 2]].concat();
    check_example("file-short-later-version", &later);
    assert_eq!(
        open_err(&later),
        WireError::UnsupportedVersion {
            offset: 8,
            version: 3,
            supported: &[1, 2]
        }
    );
    let short = file[..20].to_vec();
    assert_eq!(
        open_err(&short),
        WireError::Truncated {
            offset: 0,
            needed: 44,
            available: 20,
            what: "header"
        }
    );
    // The file cut inside its second record: the first, then the error.
    let (_, events, error) = read_all(&file[..194]).unwrap();
    assert_eq!(events, example_events()[..1]);
    assert_eq!(
        error.unwrap().to_string(),
        "truncated at byte 184: the record needs 32 bytes but only 10 remain (the file was cut short or is still being written)"
    );
}

#[test]
fn duplicate_names_are_refused_at_the_name() {
    // Two classes, events or arguments of the same name: corrupt, at the
    // first byte of the second name's length field.
    let bytes = example_file();
    let header_end = 0x93;
    // The hoops event's second argument "queue" renamed to "lost": a
    // duplicate argument name, reported at the second name (file byte 0x77).
    let (from, to) = (&b"\x00\x05queue"[..], &b"\x00\x04lost"[..]);
    let mut t = bytes.clone();
    let pos = t.windows(from.len()).position(|w| w == from).unwrap();
    assert!((0x41..header_end).contains(&pos), "in the class table");
    t.splice(pos..pos + from.len(), to.iter().copied());
    match TraceHeader::decode(&t) {
        Err(WireError::Invalid {
            offset,
            what,
            reason,
        }) => {
            assert_eq!((what, offset as usize), ("argument", 0x77));
            assert_eq!(
                reason,
                "argument name \"lost\" appears twice in event \"hoops\""
            );
        }
        other => panic!("{other:?}"),
    }
    let mut c = Catalog::builtin();
    assert!(c
        .define(ClassSpec::new("app", "").event("e", "", &["a", "a"]))
        .is_err());
}

fn udp_header() -> TraceHeader {
    example_header().with_queue(QueueHandle(0), "udp").unwrap()
}

fn events_datagram(seq: u64, dropped: u64, first: u64, events: &[Event]) -> Vec<u8> {
    let mut buf = [0u8; datagram::DEFAULT_MAX_DATAGRAM_LEN];
    let (len, n) = datagram::encode_events(&mut buf, 0x2a, seq, dropped, first, events).unwrap();
    assert_eq!(n, events.len());
    buf[..len].to_vec()
}

fn tick(time: u64, n: u64) -> Event {
    Event::new(time, EventId(2), 0, [n, 0])
}

#[test]
fn datagram_error_examples_are_exact() {
    let later = b"QTRU\x00\x05".to_vec();
    check_example("datagram-short-later-version", &later);
    assert_eq!(
        dgram_err(&later).to_string(),
        "format version 5 at byte 4 is not supported: this reader accepts versions [1, 2, 3, 4]; use a newer qtrace"
    );
    // The 2.3 example with a count of 2: one record is missing.
    let mut two = events_datagram(5, 3, 120, &[tick(1000, 7)]);
    two[13] = 2;
    check_example("datagram-count-too-big", &two);
    assert_eq!(
        dgram_err(&two),
        WireError::Truncated {
            offset: 0,
            needed: 104,
            available: 72,
            what: "datagram (its count claims more than arrived)"
        }
    );
    // A catalog fragment past the end of its catalog.
    let header = udp_header().to_bytes();
    let mut buf = [0u8; 72];
    let (len, _) = datagram::encode_catalog_fragment(&mut buf, 0x2a, 0, 0, 0, &header, 0).unwrap();
    let mut past = buf[..len].to_vec();
    past[44..48].copy_from_slice(&150u32.to_be_bytes());
    check_example("catalog-fragment-past-end", &past);
    assert_eq!(
        dgram_err(&past).to_string(),
        "corrupt at byte 44: catalog fragment: bytes 150 to 173 do not lie within the 152-byte catalog"
    );
}

fn loopback() -> std::net::SocketAddr {
    "127.0.0.1:9".parse().unwrap()
}

#[test]
fn receiver_loss_before_any_event_and_a_zero_record_datagram() {
    use qtrace::receiver::{ReceiverConfig, ReceiverCore};
    // Datagram 0 (2 events) is lost; datagram 1 holds no record and says the
    // sender has dropped 5 events.
    let d1 = events_datagram(1, 5, 2, &[]);
    check_example("recv-zero-record-in", &d1);
    let mut core = ReceiverCore::new(ReceiverConfig::default());
    let mut out = Vec::new();
    core.handle(loopback(), &d1, &mut |e| out.push(*e));
    assert!(out.is_empty(), "held: datagram 0 may still come");
    core.finish(&mut |e| out.push(*e));
    let mut bytes = vec![0u8; out.len() * 32];
    for (e, c) in out.iter().zip(bytes.chunks_exact_mut(32)) {
        qtrace_core::encode::record::emit(e, c.try_into().unwrap());
    }
    check_example("recv-zero-record-out", &bytes);
    assert_eq!(
        out,
        [
            Event::new(0, EventId(1), u32::MAX, [2, 0xffff]),
            Event::new(0, EventId(1), u32::MAX, [5, 0xffff]),
            qtrace::wire::unclosed_mark(0, 0x2a, 7),
        ]
    );
    let s = &core.summary().senders[0];
    assert_eq!(
        (s.events, s.lost_datagrams, s.lost_events, s.sender_dropped),
        (0, 1, 2, 5)
    );
}

/// The datagrams of FORMAT.md 3.5, in arrival order.
fn stream_example() -> Vec<Vec<u8>> {
    let header = udp_header().to_bytes();
    let mut buf = [0u8; datagram::DEFAULT_MAX_DATAGRAM_LEN];
    let (len, n) = datagram::encode_catalog_fragment(&mut buf, 0x2a, 0, 0, 0, &header, 0).unwrap();
    assert_eq!(n, header.len());
    vec![
        buf[..len].to_vec(),
        events_datagram(1, 0, 0, &[tick(1000, 1), tick(2000, 2)]),
        // 2 (first event 2, 3 events) is lost.
        events_datagram(4, 4, 6, &[tick(7000, 7)]),
        events_datagram(3, 4, 5, &[tick(6000, 6)]),
        events_datagram(1, 0, 0, &[tick(1000, 1), tick(2000, 2)]),
    ]
}

/// The stream example of FORMAT.md 3.5 received by a receiver of `config`:
/// its summary and its file's bytes.
fn receive_stream_example(
    config: qtrace::receiver::ReceiverConfig,
) -> (qtrace::receiver::ReceiverSummary, Vec<u8>) {
    use qtrace::receiver::{Receiver, RunLimit};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("received.qtr");
    let receiver = Receiver::bind_with("127.0.0.1:0".parse().unwrap(), config).unwrap();
    let to = receiver.local_addr();
    let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let stream = stream_example();
    let stopper = receiver.stopper();
    let run = std::thread::spawn(move || {
        receiver
            .run(
                &path,
                RunLimit::duration(std::time::Duration::from_secs(10)),
            )
            .map(|s| (s, path))
    });
    for d in &stream {
        sender.send_to(d, to).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    stopper.stop();
    let (summary, path) = run.join().unwrap().unwrap();
    let file = std::fs::read(&path).unwrap();
    (summary, file)
}

/// FORMAT.md 3.5 with the default receiver: its file is compact (1.11,
/// version 2; the chunks fall where its 50 ms writes did) and holds exactly
/// the records of the 32-byte file below, with the same verdict.
#[test]
fn the_default_receiver_writes_the_stream_example_compact() {
    use qtrace::receiver::ReceiverConfig;
    let (_, compact) = receive_stream_example(ReceiverConfig::default());
    let (_, plain) = receive_stream_example(ReceiverConfig {
        compact_file: false,
        ..ReceiverConfig::default()
    });
    let room = ReceiverConfig::default().header_room;
    // The header: version 2 (bytes 8-9), else the 32-byte file's.
    assert_eq!(compact[8..10], [0, 2]);
    assert_eq!(plain[8..10], [0, 1]);
    assert_eq!(compact[10..room], plain[10..room]);
    assert_eq!(compact[..8], plain[..8]);
    let (a, a_err, a_end) = completeness_of(&compact);
    let (b, b_err, b_end) = completeness_of(&plain);
    assert!(a_err.is_none() && b_err.is_none(), "{a_err:?} {b_err:?}");
    assert_eq!((a.len(), &a, &a_end), (7, &b, &b_end));
}

#[test]
fn receiver_writes_the_stream_example_byte_for_byte() {
    let (summary, file) = receive_stream_example(qtrace::receiver::ReceiverConfig {
        compact_file: false,
        ..qtrace::receiver::ReceiverConfig::default()
    });
    // FORMAT.md 3.5: the sender's header with flag bit 0 set and its length
    // field saying 65,536 (`ReceiverConfig::header_room`), zero bytes up to
    // there, then the records and the close run.
    let room = qtrace::receiver::ReceiverConfig::default().header_room;
    assert_eq!(room, 0x10000);
    let mut header = udp_header().with_close_run(true).to_bytes();
    assert_eq!(header.len(), 152);
    assert_eq!(
        header[14..16],
        [0, 1],
        "flag bit 0: a close run ends the file"
    );
    header[16..20].copy_from_slice(&(room as u32).to_be_bytes());
    header.resize(room, 0);
    assert_eq!(
        file[..room],
        header[..],
        "the sender's header, flag bit 0 set, padded to the header room"
    );
    check_example("recv-stream-records", &file[room..]);
    let (events, error, completeness) = completeness_of(&file);
    assert_eq!(events.len(), 7);
    assert!(error.is_none(), "{error:?}");
    // The stream ended without a close: its mark is the last record, a
    // record the reader yields (not part of the close run): sender 0x2a,
    // 4 received + 3 lost in transit + 4 dropped, at the last event's time.
    assert_eq!(
        events[6],
        Event {
            time: 7000,
            id: EventId(0),
            flags: 0x8004,
            source: u32::MAX,
            args: [0x2a, 11],
        }
    );
    assert_eq!(qtrace::wire::unclosed_stream(&events[6]), Some((0x2a, 11)));
    let close = CloseRecord::new(
        7000,
        QueueTotals {
            accepted: 4,
            dropped: 7,
            overwritten: 0,
            delivered: 4,
        },
        7,
        7,
    );
    assert_eq!(completeness, Completeness::Complete(close));
    let s = &summary.senders[0];
    assert_eq!(
        (
            s.datagrams,
            s.events,
            s.lost_datagrams,
            s.lost_events,
            s.sender_dropped,
            s.duplicates,
            s.reordered
        ),
        (4, 4, 1, 3, 4, 1, 1)
    );
    assert_eq!(s.queue, Some((0, "udp".to_string())));
}

/// FORMAT.md 2.6: the 2.3 datagram keyed with the key 0..31 and session
/// 1,795,000,000,000,000,000, byte for byte; a receiver holding the key
/// accepts it, and rejects it with any one byte changed.
#[cfg(feature = "keys")]
#[test]
fn keyed_datagram_is_byte_exact_with_format_md() {
    use qtrace::receiver::{ReceiverConfig, ReceiverCore};
    use qtrace::wire::DatagramKey;

    let key = DatagramKey::from_bytes(std::array::from_fn(|i| i as u8));
    assert_eq!(key.id(), 0x885d);
    let mut buf = [0u8; 128];
    let (len, _) =
        datagram::encode_events(&mut buf, 0x2a, 5, 3, 120, &example_events()[..1]).unwrap();
    let len = datagram::keyed::seal(&key, 1_795_000_000_000_000_000, &mut buf, len).unwrap();
    check_example("keyed-datagram", &buf[..len]);
    assert_eq!(len, 96);
    assert!(datagram::keyed::verify(&key, &buf[..len]));
    // The version 1 datagram it carries is the 2.3 example.
    let mut inner = Vec::new();
    datagram::keyed::unkeyed_into(&buf[..len], &mut inner);
    assert_eq!(inner, format_md_example("datagram"));
    // A receiver holding the key takes its record; one byte changed
    // anywhere (or another key) and it is rejected, nothing received.
    let config = ReceiverConfig {
        keys: vec![DatagramKey::from_bytes([9; 32]), key.clone()],
        ..ReceiverConfig::default()
    };
    let from = "127.0.0.1:40000".parse().unwrap();
    let mut core = ReceiverCore::new(config.clone());
    let mut out = Vec::new();
    core.handle(from, &buf[..len], &mut |e| out.push(*e));
    core.finish(&mut |e| out.push(*e));
    let ticks: Vec<Event> = out.into_iter().filter(|e| e.id == EventId(2)).collect();
    assert_eq!(ticks, example_events()[..1]);
    assert_eq!(core.summary().senders[0].key_id, Some(0x885d));
    for i in 0..len {
        let mut bad = buf[..len].to_vec();
        bad[i] ^= 0x01;
        let mut core = ReceiverCore::new(config.clone());
        core.handle(from, &bad, &mut |_| {
            panic!("byte {i} changed, yet accepted")
        });
        let s = core.summary();
        assert!(s.senders.is_empty(), "byte {i}");
        assert_eq!(s.invalid.total(), 1, "byte {i}");
    }
    let mut other = ReceiverCore::new(ReceiverConfig {
        keys: vec![DatagramKey::from_bytes([9; 32])],
        ..ReceiverConfig::default()
    });
    other.handle(from, &buf[..len], &mut |_| {
        panic!("accepted without its key")
    });
    assert_eq!(other.summary().invalid.rejected.unknown_key, 1);
}
