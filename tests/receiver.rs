//! The receiver fed by hand: garbage, truncated, duplicated, reordered and
//! newer-version datagrams, many senders, catalogs. It counts each case and
//! never panics.

use std::net::SocketAddr;

use proptest::prelude::*;
use qtrace::classes::{tracer::HOOPS, user, Catalog, ClassSpec};
use qtrace::clock::{Clock, ManualClock};
use qtrace::receiver::{sequence::WINDOW, ReceiverConfig, ReceiverCore, HOOPS_FLAG_UPPER_BOUND};
use qtrace::wire::datagram::{encode_catalog_fragment, encode_events, DEFAULT_MAX_DATAGRAM_LEN};
use qtrace::wire::TraceHeader;
use qtrace::{Event, QueueHandle};

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

fn ev(i: u64) -> Event {
    Event::new(100 + i, user::USER0, 1, [i, 0])
}

/// An events datagram carrying values `first..first + n`.
fn events_dgram(sender: u32, seq: u64, dropped: u64, first: u64, n: u64) -> Vec<u8> {
    let events: Vec<Event> = (first..first + n).map(ev).collect();
    let mut buf = vec![0u8; DEFAULT_MAX_DATAGRAM_LEN];
    let (len, k) = encode_events(&mut buf, sender, seq, dropped, &events).unwrap();
    assert_eq!(k as u64, n);
    buf.truncate(len);
    buf
}

struct Run {
    core: ReceiverCore,
    out: Vec<Event>,
}

impl Run {
    fn new() -> Self {
        Run::with(ReceiverConfig::default())
    }
    fn with(config: ReceiverConfig) -> Self {
        Run {
            core: ReceiverCore::new(config),
            out: Vec::new(),
        }
    }
    fn feed(&mut self, from: SocketAddr, bytes: &[u8]) {
        let out = &mut self.out;
        self.core.handle(from, bytes, &mut |e| out.push(*e));
    }
    fn finish(&mut self) {
        let out = &mut self.out;
        self.core.finish(&mut |e| out.push(*e));
    }
    fn values(&self) -> Vec<u64> {
        self.out
            .iter()
            .filter(|e| e.id != HOOPS)
            .map(|e| e.args[0])
            .collect()
    }
    fn hoops(&self) -> Vec<(u64, u16)> {
        self.out
            .iter()
            .filter(|e| e.id == HOOPS)
            .map(|e| (e.args[0], e.flags))
            .collect()
    }
}

#[test]
fn garbage_truncated_and_newer_versions_are_counted_and_skipped() {
    let mut r = Run::new();
    let good = events_dgram(1, 0, 0, 0, 3);
    r.feed(addr(1), b"");
    r.feed(addr(1), b"hello, this is not qtrace");
    r.feed(addr(1), &[0xff; 1472]);
    // Truncated: cut in the header, and cut in the records.
    r.feed(addr(1), &good[..3]);
    r.feed(addr(1), &good[..20]);
    r.feed(addr(1), &good[..good.len() - 1]);
    // A newer version.
    let mut newer = good.clone();
    newer[4..6].copy_from_slice(&2u16.to_be_bytes());
    r.feed(addr(1), &newer);
    // Trailing bytes and an unknown kind.
    let mut long = good.clone();
    long.push(0);
    r.feed(addr(1), &long);
    let mut kind = good.clone();
    kind[6] = 9;
    r.feed(addr(1), &kind);
    let s = r.core.summary();
    // The empty datagram is a (very) truncated one.
    assert_eq!(s.invalid.not_qtrace, 2);
    assert_eq!(s.invalid.truncated, 4);
    assert_eq!(s.invalid.unsupported_version, 1);
    assert_eq!(s.invalid.malformed, 2);
    assert!(s.senders.is_empty());
    assert!(r.out.is_empty());
    // The good one still works afterwards.
    r.feed(addr(1), &good);
    assert_eq!(r.values(), [0, 1, 2]);
    assert_eq!(r.core.progress().invalid(), 9);
}

#[test]
fn duplicates_reordering_and_gaps_per_sender() {
    let mut r = Run::new();
    let d: Vec<Vec<u8>> = (0..6).map(|s| events_dgram(7, s, 0, s * 2, 2)).collect();
    // Order: 0, 2, 1, 1 (dup), 2 (dup), 5, 4 — 3 never arrives.
    for &i in &[0usize, 2, 1, 1, 2, 5, 4] {
        r.feed(addr(9), &d[i]);
    }
    r.finish();
    let s = r.core.summary();
    assert_eq!(s.senders.len(), 1);
    let x = &s.senders[0];
    assert_eq!(x.sender, 7);
    assert_eq!(x.addr, addr(9));
    assert_eq!(x.datagrams, 5);
    assert_eq!(x.events, 10);
    assert_eq!(x.duplicates, 2);
    assert_eq!(x.reordered, 2);
    assert_eq!(x.lost_datagrams, 1);
    assert_eq!(x.invalid, 0);
    assert_eq!(r.values(), [0, 1, 4, 5, 2, 3, 10, 11, 8, 9]);
    // The lost datagram is marked at the end, as an upper bound (2 records
    // per datagram from this sender).
    assert_eq!(r.hoops(), [(2, HOOPS_FLAG_UPPER_BOUND)]);
}

#[test]
fn a_datagram_lost_for_good_is_marked_when_it_leaves_the_window() {
    let mut r = Run::new();
    r.feed(addr(1), &events_dgram(1, 0, 0, 0, 1));
    r.feed(addr(1), &events_dgram(1, 2, 0, 2, 1));
    assert!(r.hoops().is_empty(), "1 may still arrive");
    r.feed(addr(1), &events_dgram(1, 1 + WINDOW, 0, 100, 1));
    // 1 left the window (lost for good: marked now); 3..1025 may still come.
    assert_eq!(r.hoops(), [(1, HOOPS_FLAG_UPPER_BOUND)]);
    // Too late now: discarded and counted invalid, the loss stands.
    r.feed(addr(1), &events_dgram(1, 1, 0, 1, 1));
    let x = &r.core.summary().senders[0];
    assert_eq!(x.invalid, 1);
    assert_eq!(x.lost_datagrams, WINDOW - 1);
    assert_eq!(r.values(), [0, 2, 100]);
}

#[test]
fn sender_drops_become_hoops_after_the_reporting_datagram() {
    let mut r = Run::new();
    r.feed(addr(1), &events_dgram(3, 0, 0, 0, 2));
    r.feed(addr(1), &events_dgram(3, 1, 5, 2, 2));
    // A reordered datagram with an older count adds nothing.
    r.feed(addr(1), &events_dgram(3, 3, 9, 10, 1));
    r.feed(addr(1), &events_dgram(3, 2, 7, 4, 1));
    r.finish();
    let ids: Vec<(u16, u64)> = r.out.iter().map(|e| (e.id.0, e.args[0])).collect();
    assert_eq!(
        ids,
        [
            (0x0b, 0),
            (0x0b, 1),
            (0x0b, 2),
            (0x0b, 3),
            (HOOPS.0, 5),
            (0x0b, 10),
            (HOOPS.0, 4),
            (0x0b, 4),
        ]
    );
    let x = &r.core.summary().senders[0];
    assert_eq!(x.sender_dropped, 9);
    assert_eq!(x.events, 6);
    assert_eq!(x.accounted(), 6 + 9);
    assert_eq!(x.lost_datagrams, 0);
    // Hoops records name the tracer as source; the queue is unknown (no
    // catalog arrived).
    let h = r.out.iter().find(|e| e.id == HOOPS).unwrap();
    assert_eq!((h.source, h.args[1], h.flags), (u32::MAX, 0xffff, 0));
}

#[test]
fn senders_are_told_apart_by_address_and_id_and_bounded() {
    let mut r = Run::with(ReceiverConfig {
        max_senders: 3,
        ..ReceiverConfig::default()
    });
    r.feed(addr(1), &events_dgram(1, 0, 0, 0, 1));
    r.feed(addr(2), &events_dgram(1, 0, 0, 10, 1)); // same id, other address
    r.feed(addr(1), &events_dgram(2, 0, 0, 20, 1)); // same address, other id
    r.feed(addr(3), &events_dgram(1, 0, 0, 30, 1)); // a fourth: refused
    r.feed(addr(1), &events_dgram(1, 1, 0, 1, 1));
    let s = r.core.summary();
    assert_eq!(s.senders.len(), 3);
    assert_eq!(s.invalid.too_many_senders, 1);
    assert_eq!(
        s.senders.iter().map(|x| x.events).collect::<Vec<_>>(),
        [2, 1, 1]
    );
    assert!(s.senders.iter().all(|x| x.lost_datagrams == 0));
    assert_eq!(r.values(), [0, 10, 20, 1]);
}

fn sender_header() -> TraceHeader {
    let mut catalog = Catalog::builtin();
    catalog
        .define(ClassSpec::new("net", "network").event("rx", "received", &["len", "port"]))
        .unwrap();
    TraceHeader::new(catalog, &Clock::manual(&ManualClock::new(0)))
        .with_queue(QueueHandle(3), "udp")
        .unwrap()
}

fn catalog_dgrams(sender: u32, first_seq: u64, header: &[u8], max: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut offset = 0;
    let mut seq = first_seq;
    while offset < header.len() {
        let mut buf = vec![0u8; max];
        let (len, n) = encode_catalog_fragment(&mut buf, sender, seq, 0, header, offset).unwrap();
        buf.truncate(len);
        out.push(buf);
        offset += n;
        seq += 1;
    }
    out
}

#[test]
fn catalog_fragments_give_the_sender_its_header() {
    let header = sender_header();
    let bytes = header.to_bytes();
    let frags = catalog_dgrams(5, 0, &bytes, 200);
    assert!(frags.len() > 2);
    let mut r = Run::new();
    for f in &frags {
        r.feed(addr(1), f);
    }
    let n = frags.len() as u64;
    r.feed(addr(1), &events_dgram(5, n, 4, 0, 1));
    let s = r.core.summary();
    let x = &s.senders[0];
    assert!(x.has_catalog);
    assert_eq!(x.queue, Some((3, "udp".to_string())));
    assert_eq!(x.datagrams, n + 1);
    // The received trace's header is the sender's.
    assert_eq!(r.core.trace_header(), header);
    // Hoops now name the sender's queue.
    let h = r.out.iter().find(|e| e.id == HOOPS).unwrap();
    assert_eq!(h.args, [4, 3]);
}

#[test]
fn a_corrupt_or_oversized_catalog_is_counted_invalid() {
    let mut bytes = sender_header().to_bytes();
    bytes[0] ^= 0xff; // the reassembled header has a bad magic
    let frags = catalog_dgrams(5, 0, &bytes, 400);
    let mut r = Run::new();
    for f in &frags {
        r.feed(addr(1), f);
    }
    assert_eq!(r.core.summary().senders[0].invalid, 1);
    assert!(!r.core.summary().senders[0].has_catalog);
    // A catalog larger than the receiver accepts.
    let mut r = Run::with(ReceiverConfig {
        max_catalog_len: 100,
        ..ReceiverConfig::default()
    });
    let good = sender_header().to_bytes();
    let frags = catalog_dgrams(5, 0, &good, 400);
    for f in &frags {
        r.feed(addr(1), f);
    }
    assert_eq!(r.core.summary().senders[0].invalid, frags.len() as u64);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 128 }))]
    /// Arbitrary bytes and mutated datagrams never panic, and every datagram
    /// is either accepted or counted somewhere.
    #[test]
    fn never_panics_and_counts_everything(
        datagrams in prop::collection::vec(
            prop_oneof![
                prop::collection::vec(any::<u8>(), 0..200),
                (0u64..20, 0u64..50, 0usize..60, any::<u8>(), 0u64..4).prop_map(|(seq, drop, cut, flip, n)| {
                    let mut d = events_dgram(1, seq, drop, seq * 10, n);
                    if cut < d.len() && cut % 3 == 0 { d.truncate(cut); }
                    if cut < d.len() && cut % 3 == 1 { d[cut] ^= flip; }
                    d
                }),
            ],
            0..60,
        )
    ) {
        let mut r = Run::new();
        for d in &datagrams {
            r.feed(addr(1), d);
        }
        r.finish();
        let s = r.core.summary();
        let accepted: u64 = s.senders.iter().map(|x| x.datagrams).sum();
        let rejected: u64 = s.senders.iter().map(|x| x.duplicates + x.invalid).sum();
        prop_assert_eq!(accepted + rejected + s.invalid.total(), datagrams.len() as u64);
        prop_assert_eq!(r.core.progress().datagrams(), accepted);
    }
}

#[test]
fn a_quiet_sender_makes_room_for_a_new_one_and_keeps_its_account() {
    let mut r = Run::with(ReceiverConfig {
        max_senders: 2,
        idle_datagrams: 5,
        ..ReceiverConfig::default()
    });
    // A sends two datagrams, the second after a gap (one lost).
    r.feed(addr(1), &events_dgram(1, 0, 0, 0, 1));
    r.feed(addr(1), &events_dgram(1, 2, 0, 2, 1));
    r.feed(addr(2), &events_dgram(2, 0, 0, 100, 1));
    // C arrives while A has been quiet for 1 datagram only: refused.
    r.feed(addr(3), &events_dgram(3, 0, 0, 200, 1));
    assert_eq!(r.core.summary().invalid.too_many_senders, 1);
    for seq in 1..6 {
        r.feed(addr(2), &events_dgram(2, seq, 0, 100 + seq, 1));
    }
    // A has now been quiet long enough: C takes its place, A's missing
    // datagram is marked lost.
    r.feed(addr(3), &events_dgram(3, 0, 0, 200, 1));
    let s = r.core.summary();
    assert_eq!(s.invalid.too_many_senders, 1);
    assert_eq!(
        s.senders
            .iter()
            .map(|x| (x.sender, x.events, x.lost_datagrams))
            .collect::<Vec<_>>(),
        [(1, 2, 1), (2, 6, 0), (3, 1, 0)]
    );
    assert_eq!(r.hoops(), [(1, HOOPS_FLAG_UPPER_BOUND)]);
    assert_eq!(s.retired_uncounted, 0);
}
