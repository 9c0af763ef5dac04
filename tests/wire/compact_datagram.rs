//! Compact datagrams (FORMAT.md 2.7): the worked examples byte for byte
//! (unkeyed, version 3, and keyed, version 4), what the receiver takes from
//! them, and the exact errors of bad ones.

use qtrace::receiver::{ReceiverConfig, ReceiverCore};
use qtrace::wire::datagram::{CompactEventsEncoder, DatagramKind, DatagramView, COMPACT_VERSION};
use qtrace::wire::WireError;
use qtrace::{Event, EventId};

use crate::format::{check_example, format_md_example};

/// FORMAT.md 8.4's five records.
fn example_events() -> [Event; 5] {
    [
        Event::new(1000, EventId(2), 0, [7, 0]),
        Event::new(1250, EventId(2), 0, [8, 0]),
        Event::new(1250, EventId(1), u32::MAX, [3, 1]),
        Event::new(1100, EventId(2), 1, [9, 0]),
        Event::new(1300, EventId(2), 0, [u64::MAX, 0]),
    ]
}

/// The 2.7 example: sender 0x2a, sequence 5, 3 dropped, 120 events before.
fn example_datagram() -> Vec<u8> {
    let mut buf = [0u8; 1472];
    let mut enc = CompactEventsEncoder::new(&mut buf, 0x2a, 5, 3, 120).unwrap();
    for e in &example_events() {
        assert!(enc.push(e));
    }
    let len = enc.finish();
    buf[..len].to_vec()
}

#[test]
fn compact_datagram_is_byte_exact_with_format_md() {
    let d = example_datagram();
    check_example("compact-datagram", &d);
    assert_eq!(d.len(), 126);
    // The payload is 8.4's chunk, byte for byte.
    assert_eq!(d[40..], format_md_example("compact-chunk")[..]);
    let v = DatagramView::new_checked(&d[..]).unwrap();
    assert_eq!(
        (v.version(), v.kind()),
        (COMPACT_VERSION, DatagramKind::Events)
    );
    assert_eq!(v.record_count(), 5);
    assert_eq!(v.events().collect::<Vec<_>>(), example_events());
    let h = v.header();
    assert_eq!(
        (h.sender, h.sequence, h.dropped, h.first_event),
        (0x2a, 5, 3, 120)
    );
    // The receiver writes the hoops record of the 120 events before it
    // (datagrams 0–4 never arrived), the five records, then the hoops
    // record of the 3 drops.
    let mut core = ReceiverCore::new(ReceiverConfig::default());
    let mut out = Vec::new();
    core.handle("127.0.0.1:40000".parse().unwrap(), &d, &mut |e| {
        out.push(*e)
    });
    // Held (datagrams 0–4 may still come) until the stream ends: then the
    // unclosed mark follows (no close datagram).
    core.finish(&mut |e| out.push(*e));
    assert_eq!(out.len(), 8);
    assert!(qtrace::wire::unclosed_stream(&out[7]).is_some());
    assert_eq!(out[0].args[0], 120);
    assert_eq!(out[1..6], example_events());
    assert_eq!(out[6].args[0], 3);
    let s = core.summary();
    assert_eq!((s.senders[0].events, s.senders[0].sender_dropped), (5, 3));
}

#[test]
fn bad_compact_datagrams_are_exact_errors() {
    let good = example_datagram();
    let err = |b: &[u8]| DatagramView::new_checked(b).unwrap_err();
    // Every cut is truncated: the header, then the chunk.
    for cut in 0..good.len() {
        assert!(err(&good[..cut]).is_truncated(), "cut {cut}");
    }
    assert_eq!(
        err(&good[..100]),
        WireError::Truncated {
            offset: 0,
            needed: 126,
            available: 100,
            what: "datagram (its chunk claims more than arrived)"
        }
    );
    let patched = |at: usize, byte: u8| {
        let mut b = good.clone();
        b[at] = byte;
        err(&b).to_string()
    };
    assert_eq!(
        patched(0x0d, 4),
        "corrupt at byte 12: datagram count: 4, but its chunk holds 5 records"
    );
    assert_eq!(
        patched(0x33, 0x2b),
        "corrupt at byte 48: compact chunk: its sender id differs from the datagram header's"
    );
    assert_eq!(
        patched(0x28, b'X'),
        "corrupt at byte 40: compact chunk: its magic is not QTRZ"
    );
    assert_eq!(
        patched(0x2d, 2),
        "format version 2 at byte 44 is not supported: this reader accepts versions [1]; use a newer qtrace"
    );
    // Record 3's extension byte with a reserved bit.
    assert_eq!(
        patched(0x6c, 0x11),
        "corrupt at byte 107: compact chunk: reserved extension bits 4-7 are set"
    );
    // Zero bytes after the chunk are padding (2.7): the same datagram, the
    // same records; a nonzero one is refused where it stands.
    let mut padded = good.clone();
    padded.resize(1472, 0);
    let v = DatagramView::new_checked(&padded[..]).unwrap();
    assert_eq!(v.record_count(), 5);
    assert_eq!(v.events().collect::<Vec<_>>(), example_events());
    let mut core = ReceiverCore::new(ReceiverConfig::default());
    let mut out = Vec::new();
    core.handle("127.0.0.1:40000".parse().unwrap(), &padded, &mut |e| {
        out.push(*e)
    });
    core.finish(&mut |e| out.push(*e));
    assert_eq!(out[1..6], example_events());
    assert_eq!(core.summary().invalid.total(), 0);
    for (at, byte) in [(126, 7), (1471, 0x80)] {
        let mut bad = padded.clone();
        bad[at] = byte;
        assert_eq!(
            err(&bad).to_string(),
            format!("corrupt at byte {at}: compact datagram padding: not zero: the bytes after the chunk's 126 are zero padding (FORMAT.md 2.7)")
        );
    }
    // FORMAT.md's case: one byte 7 appended to the 126.
    let mut seven = good.clone();
    seven.push(7);
    assert_eq!(
        err(&seven).to_string(),
        "corrupt at byte 126: compact datagram padding: not zero: the bytes after the chunk's 126 are zero padding (FORMAT.md 2.7)"
    );
    // Bytes past a catalog or close datagram are not padding.
    let mut close = [0u8; 128];
    let n = qtrace::wire::datagram::encode_close(
        &mut close,
        0x2a,
        9,
        0,
        120,
        qtrace::wire::datagram::CloseCounts::default(),
    )
    .unwrap();
    qtrace::wire::datagram::set_version(&mut close[..n], COMPACT_VERSION);
    assert!(DatagramView::new_checked(&close[..n]).is_ok());
    assert_eq!(
        err(&close[..n + 1]).to_string(),
        format!("corrupt at byte {n}: datagram length: 1 bytes past the {n} its count gives")
    );
}

/// FORMAT.md 2.7: the example keyed with 2.6's key and session.
#[cfg(feature = "keys")]
#[test]
fn keyed_compact_datagram_is_byte_exact_with_format_md() {
    use qtrace::wire::datagram::keyed;
    use qtrace::wire::DatagramKey;

    let key = DatagramKey::from_bytes(std::array::from_fn(|i| i as u8));
    let mut buf = example_datagram();
    let len = buf.len();
    buf.resize(len + keyed::KEYED_OVERHEAD, 0);
    let len = keyed::seal(&key, 1_795_000_000_000_000_000, &mut buf, len).unwrap();
    check_example("keyed-compact-datagram", &buf[..len]);
    assert_eq!(len, 150);
    let mut inner = Vec::new();
    keyed::unkeyed_into(&buf[..len], &mut inner);
    assert_eq!(inner, example_datagram());
    let config = ReceiverConfig {
        keys: vec![key.clone()],
        ..ReceiverConfig::default()
    };
    let from = "127.0.0.1:40000".parse().unwrap();
    let mut core = ReceiverCore::new(config.clone());
    let mut out = Vec::new();
    core.handle(from, &buf[..len], &mut |e| out.push(*e));
    core.finish(&mut |e| out.push(*e));
    assert_eq!(out[1..6], example_events());
    for i in 0..len {
        let mut bad = buf[..len].to_vec();
        bad[i] ^= 0x01;
        let mut core = ReceiverCore::new(config.clone());
        core.handle(from, &bad, &mut |_| {
            panic!("byte {i} changed, yet accepted")
        });
        assert_eq!(core.summary().invalid.total(), 1, "byte {i}");
    }
}
