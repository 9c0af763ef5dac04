//! The receiver fed by hand: garbage, truncated, duplicated, reordered and
//! newer-version datagrams, many senders, catalogs. It counts each case and
//! never panics; datagrams removed, reordered and duplicated on the way give
//! received events + hoops counts = events sent, exactly, with one hoops
//! record in the place of each gap.

use std::net::SocketAddr;

use proptest::prelude::*;
use qtrace::classes::{tracer::HOOPS, user, Catalog, ClassSpec};
use qtrace::clock::{Clock, ManualClock};
use qtrace::receiver::ReorderLimits;
use qtrace::receiver::{ReceiverConfig, ReceiverCore, RefusedSource};
use qtrace::wire::datagram::{
    encode_catalog_fragment, encode_close, encode_events, CloseCounts, DEFAULT_MAX_DATAGRAM_LEN,
};
use qtrace::wire::TraceHeader;
use qtrace::wire::{close_part, unclosed_stream};
use qtrace::{Event, QueueHandle};

/// The receiver's sequence window: a sender this many datagrams ahead of a
/// missing one gives it up (`qtrace::receiver`'s docs, "Lost datagrams").
const WINDOW: u64 = 1024;
/// The flags of an unclosed-stream mark (FORMAT.md 1.5).
const UNCLOSED_FLAGS: u16 = 0x8004;

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

fn ev(i: u64) -> Event {
    Event::new(100 + i, user::USER0, 1, [i, 0])
}

/// An events datagram carrying values `first..first + n`, which are also the
/// sender's event numbers (its first-event field is `first`).
fn events_dgram(sender: u32, seq: u64, dropped: u64, first: u64, n: u64) -> Vec<u8> {
    dgram(sender, seq, dropped, first, first, n)
}

/// An events datagram whose first-event field is `index`, carrying values
/// `value..value + n`.
fn dgram(sender: u32, seq: u64, dropped: u64, index: u64, value: u64, n: u64) -> Vec<u8> {
    let events: Vec<Event> = (value..value + n).map(ev).collect();
    let mut buf = vec![0u8; DEFAULT_MAX_DATAGRAM_LEN];
    let (len, k) = encode_events(&mut buf, sender, seq, dropped, index, &events).unwrap();
    assert_eq!(k as u64, n);
    buf.truncate(len);
    buf
}

struct Run {
    core: ReceiverCore,
    /// Events and hoops records, in order.
    out: Vec<Event>,
    /// Unclosed-stream marks, each with the length of `out` when it came
    /// (it follows `out[..n]`).
    marks: Vec<(usize, Event)>,
}

impl Run {
    fn new() -> Self {
        Run::with(ReceiverConfig::default())
    }
    fn with(config: ReceiverConfig) -> Self {
        Run {
            core: ReceiverCore::new(config),
            out: Vec::new(),
            marks: Vec::new(),
        }
    }
    fn feed(&mut self, from: SocketAddr, bytes: &[u8]) {
        let (out, marks) = (&mut self.out, &mut self.marks);
        self.core.handle(from, bytes, &mut |e| split(out, marks, e));
    }
    fn finish(&mut self) {
        let (out, marks) = (&mut self.out, &mut self.marks);
        self.core.finish(&mut |e| split(out, marks, e));
    }
    /// The unclosed-stream marks as (sender, events accounted, time).
    fn unclosed(&self) -> Vec<(u32, u64, u64)> {
        self.marks
            .iter()
            .map(|(_, e)| {
                let (sender, n) = unclosed_stream(e).expect("a well-formed mark");
                (sender, n, e.time)
            })
            .collect()
    }
    fn values(&self) -> Vec<u64> {
        self.out
            .iter()
            .filter(|e| e.id != HOOPS)
            .map(|e| e.args[0])
            .collect()
    }
    fn hoops(&self) -> Vec<u64> {
        self.out
            .iter()
            .filter(|e| e.id == HOOPS)
            .map(|e| {
                assert_eq!((e.flags, e.source), (0, u32::MAX));
                e.args[0]
            })
            .collect()
    }
    /// The output as events (`E(value)`) and hoops records (`L(lost)`).
    fn stream(&self) -> Vec<Rec> {
        self.out
            .iter()
            .map(|e| {
                if e.id == HOOPS {
                    Rec::L(e.args[0])
                } else {
                    Rec::E(e.args[0])
                }
            })
            .collect()
    }
}

/// Puts a record the receiver wrote in `out`, or in `marks` when it is a
/// control record (id 0, flag bit 15).
fn split(out: &mut Vec<Event>, marks: &mut Vec<(usize, Event)>, e: &Event) {
    if close_part(e).is_some() {
        marks.push((out.len(), *e));
    } else {
        out.push(*e);
    }
}

/// One output record: an event's value, or a hoops record's count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rec {
    E(u64),
    L(u64),
}
use Rec::{E, L};

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
    newer[4..6].copy_from_slice(&5u16.to_be_bytes());
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
    assert_eq!(x.lost_events, 2);
    assert_eq!(x.invalid, 0);
    // Written in sequence order; the lost datagram's 2 events are marked
    // exactly where they are missing (given up on when the stream ends).
    assert_eq!(
        r.stream(),
        [
            E(0),
            E(1),
            E(2),
            E(3),
            E(4),
            E(5),
            L(2),
            E(8),
            E(9),
            E(10),
            E(11)
        ]
    );
    assert_eq!(r.hoops(), [2]);
    assert_eq!(x.events + x.lost_events, 12);
}

#[test]
fn a_gap_is_given_up_on_when_the_sender_is_a_window_further() {
    let mut r = Run::new();
    r.feed(addr(1), &events_dgram(1, 0, 0, 0, 1));
    r.feed(addr(1), &events_dgram(1, 2, 0, 2, 1));
    assert_eq!(r.stream(), [E(0)], "1 may still arrive: 2 is held");
    // Datagram 1 + WINDOW (event 100) puts 1 more than a window behind: it
    // is given up on; 3..=WINDOW (events 3..100) may still arrive.
    r.feed(addr(1), &events_dgram(1, 1 + WINDOW, 0, 100, 1));
    assert_eq!(r.stream(), [E(0), L(1), E(2)]);
    // Too late now: discarded and counted late, the loss stands.
    r.feed(addr(1), &events_dgram(1, 1, 0, 1, 1));
    // In time: it splits the gap after it.
    r.feed(addr(1), &events_dgram(1, 5, 0, 5, 1));
    r.finish();
    assert_eq!(r.stream(), [E(0), L(1), E(2), L(2), E(5), L(94), E(100)]);
    let x = &r.core.summary().senders[0];
    assert_eq!((x.late, x.invalid), (1, 0));
    assert_eq!(x.lost_datagrams, WINDOW - 2);
    assert_eq!((x.events, x.lost_events), (4, 97));
}

#[test]
fn a_late_datagram_fills_its_gap_and_leaves_no_loss() {
    let mut r = Run::new();
    r.feed(addr(1), &events_dgram(1, 0, 0, 0, 3));
    r.feed(addr(1), &events_dgram(1, 2, 0, 5, 2));
    r.feed(addr(1), &events_dgram(1, 3, 0, 7, 1));
    assert_eq!(r.stream(), [E(0), E(1), E(2)]);
    r.feed(addr(1), &events_dgram(1, 1, 0, 3, 2));
    r.finish();
    assert_eq!(r.values(), (0..8).collect::<Vec<_>>());
    assert!(r.hoops().is_empty());
    let x = &r.core.summary().senders[0];
    assert_eq!((x.lost_datagrams, x.lost_events, x.reordered), (0, 0, 1));
}

#[test]
fn holding_is_bounded_and_an_overflow_gives_the_gap_up_exactly() {
    let mut r = Run::with(ReceiverConfig {
        reorder: ReorderLimits {
            datagrams: 3,
            bytes: 1 << 20,
        },
        ..ReceiverConfig::default()
    });
    r.feed(addr(1), &events_dgram(1, 0, 0, 0, 2));
    // 1 (events 2..6) and 2 (no events) are missing; 3, 4, 5 are held.
    for seq in 3..6 {
        r.feed(addr(1), &events_dgram(1, seq, 0, 6 + 2 * (seq - 3), 2));
    }
    assert_eq!(r.stream(), [E(0), E(1)]);
    // A fourth held datagram is one too many: the gap is given up on.
    r.feed(addr(1), &events_dgram(1, 6, 0, 12, 1));
    assert_eq!(
        r.stream(),
        [
            E(0),
            E(1),
            L(4),
            E(6),
            E(7),
            E(8),
            E(9),
            E(10),
            E(11),
            E(12)
        ]
    );
    // Datagram 2 held no events: it arrives late, is discarded, and changes
    // nothing.
    r.feed(addr(1), &events_dgram(1, 2, 0, 6, 0));
    r.finish();
    let x = &r.core.summary().senders[0];
    assert_eq!((x.events, x.lost_events, x.lost_datagrams), (9, 4, 2));
    assert_eq!((x.late, x.invalid), (1, 0));
    assert_eq!(r.core.progress().lost_events(), 4);
}

#[test]
fn sender_drops_become_hoops_after_the_reporting_datagram() {
    let mut r = Run::new();
    r.feed(addr(1), &events_dgram(3, 0, 0, 0, 2));
    r.feed(addr(1), &events_dgram(3, 1, 5, 2, 2));
    // A reordered datagram is held and written in its place, so the drop
    // counts rise in order.
    r.feed(addr(1), &dgram(3, 3, 9, 5, 10, 1));
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
            (0x0b, 4),
            (HOOPS.0, 2),
            (0x0b, 10),
            (HOOPS.0, 2),
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
fn senders_are_known_by_id_a_new_address_takes_over_and_a_full_table_refuses() {
    let mut r = Run::with(ReceiverConfig {
        max_senders: 2,
        idle_datagrams: 100,
        ..ReceiverConfig::default()
    });
    r.feed(addr(1), &dgram(1, 0, 0, 0, 0, 1));
    r.feed(addr(1), &dgram(2, 0, 0, 0, 20, 1)); // same address, other id
    r.feed(addr(2), &dgram(3, 0, 0, 0, 30, 2)); // a third: refused
    r.feed(addr(2), &dgram(3, 1, 0, 2, 32, 1)); // again
    let s = r.core.summary();
    assert_eq!(s.invalid.too_many_senders, 2);
    assert_eq!(
        s.refused,
        [RefusedSource {
            addr: addr(2),
            sender: 3,
            datagrams: 2,
            events: 3
        }]
    );
    // Sender 1 restarted on a new port: it takes over its own slot at once.
    r.feed(addr(3), &dgram(1, 0, 0, 0, 10, 1));
    r.feed(addr(3), &dgram(1, 1, 0, 1, 11, 1));
    r.finish();
    let s = r.core.summary();
    assert_eq!(s.invalid.too_many_senders, 2);
    assert_eq!(
        s.senders
            .iter()
            .map(|x| (x.addr, x.sender, x.events, x.closed))
            .collect::<Vec<_>>(),
        [
            (addr(1), 1, 1, false),
            (addr(1), 2, 1, false),
            (addr(3), 1, 2, false)
        ]
    );
    // The refused sender never got a slot: its events are one hoops record
    // at the end.
    assert_eq!(r.stream(), [E(0), E(20), E(10), E(11), L(3)]);
    assert!(
        s.to_string()
            .contains("refused 2 datagrams (3 events) from 127.0.0.1:2 (sender 0x00000003)"),
        "{s}"
    );
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
        let (len, n) =
            encode_catalog_fragment(&mut buf, sender, seq, 0, 0, header, offset).unwrap();
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
        let rejected: u64 = s.senders.iter().map(|x| x.duplicates + x.invalid + x.late).sum();
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
    r.feed(addr(2), &dgram(2, 0, 0, 0, 100, 1));
    // C arrives while A has been quiet for 1 datagram only: refused.
    r.feed(addr(3), &dgram(3, 0, 0, 0, 200, 1));
    assert_eq!(r.core.summary().invalid.too_many_senders, 1);
    for seq in 1..6 {
        r.feed(addr(2), &dgram(2, seq, 0, seq, 100 + seq, 1));
    }
    // A has now been quiet long enough: C takes its place, A's missing
    // datagram is marked lost and its held one written after it.
    r.feed(addr(3), &dgram(3, 0, 0, 0, 200, 1));
    let s = r.core.summary();
    assert_eq!(s.invalid.too_many_senders, 1);
    assert_eq!(
        s.senders
            .iter()
            .map(|x| (x.sender, x.events, x.lost_datagrams))
            .collect::<Vec<_>>(),
        [(1, 2, 1), (2, 6, 0), (3, 1, 0)]
    );
    assert_eq!(
        r.stream(),
        [
            E(0),
            E(100),
            E(101),
            E(102),
            E(103),
            E(104),
            E(105),
            L(1),
            E(2),
            E(200)
        ]
    );
    assert_eq!(s.retired_uncounted, 0);
}

/// A sender's datagrams: datagram `i` carries `counts[i]` events, numbered
/// on from the ones before (values = event numbers).
fn stream_of(sender: u32, counts: &[u64]) -> Vec<Vec<u8>> {
    let mut first = 0;
    counts
        .iter()
        .enumerate()
        .map(|(seq, &n)| {
            let d = events_dgram(sender, seq as u64, 0, first, n);
            first += n;
            d
        })
        .collect()
}

/// What a loss-free-but-for-`lost` receiver writes when every arriving
/// datagram can wait for the missing ones: the delivered datagrams' events
/// in sequence order, one hoops record per run of lost datagrams that held
/// events, nothing for lost datagrams after the last delivered one.
fn model_stream(counts: &[u64], delivered: &[bool]) -> Vec<Rec> {
    let mut out = Vec::new();
    let mut first = 0;
    let mut pending = 0;
    for (&n, &arrived) in counts.iter().zip(delivered) {
        if arrived {
            if pending > 0 {
                out.push(L(pending));
            }
            pending = 0;
            out.extend((first..first + n).map(E));
        } else {
            pending += n;
        }
        first += n;
    }
    out
}

/// Walks a stream whose event values are event numbers: every number up to
/// the last event is either an event, in order, or inside the hoops record
/// at its place. Returns how many numbers the stream accounts for.
fn walk(stream: &[Rec]) -> u64 {
    let mut next = 0;
    for r in stream {
        match *r {
            E(v) => {
                assert_eq!(v, next, "event {v} out of place in {stream:?}");
                next += 1;
            }
            L(n) => {
                assert!(n > 0, "empty hoops record in {stream:?}");
                next += n;
            }
        }
    }
    next
}

#[test]
fn removed_reordered_and_duplicated_datagrams_account_for_every_event() {
    // 12 datagrams of 3, 0, 5, 1, 4, 4, 0, 2, 7, 1, 3, 2 events (32 in all).
    let counts = [3u64, 0, 5, 1, 4, 4, 0, 2, 7, 1, 3, 2];
    let d = stream_of(4, &counts);
    // Lost: 2 (5 events), 3 (1), 6 (0 events), 7 (2), 10 (3).
    // Reordered: 5 before 4, 9 before 8. Duplicated: 0, 5 and 11.
    let order = [0usize, 1, 0, 5, 4, 5, 9, 8, 11, 11];
    let mut r = Run::new();
    for &i in &order {
        r.feed(addr(1), &d[i]);
    }
    r.finish();
    let delivered: Vec<bool> = (0..12).map(|i| order.contains(&i)).collect();
    let expected = model_stream(&counts, &delivered);
    assert_eq!(
        expected,
        [
            E(0),
            E(1),
            E(2),
            L(6),
            E(9),
            E(10),
            E(11),
            E(12),
            E(13),
            E(14),
            E(15),
            E(16),
            L(2),
            E(19),
            E(20),
            E(21),
            E(22),
            E(23),
            E(24),
            E(25),
            E(26),
            L(3),
            E(30),
            E(31)
        ]
    );
    assert_eq!(r.stream(), expected);
    assert_eq!(walk(&r.stream()), 32);
    let x = &r.core.summary().senders[0];
    assert_eq!((x.events, x.lost_events), (21, 11));
    assert_eq!(x.events + x.lost_events, counts.iter().sum::<u64>());
    assert_eq!((x.datagrams, x.lost_datagrams), (7, 5));
    assert_eq!((x.duplicates, x.reordered), (3, 2));
    assert_eq!(r.core.summary().lost_events(), 11);
}

/// A delivery plan: which datagrams arrive (possibly twice), and in which
/// order (each copy's arrival key is its number plus a random delay).
fn deliveries(counts: &[u64], fates: &[(u8, u64, u64)]) -> (Vec<bool>, Vec<usize>) {
    let mut arrivals: Vec<(u64, usize)> = Vec::new();
    let mut delivered = vec![false; counts.len()];
    for (i, &(fate, delay, delay2)) in fates.iter().enumerate().take(counts.len()) {
        match fate {
            0 => {} // lost
            1 => {
                // duplicated
                delivered[i] = true;
                arrivals.push((i as u64 + delay, i));
                arrivals.push((i as u64 + delay2, i));
            }
            _ => {
                delivered[i] = true;
                arrivals.push((i as u64 + delay, i));
            }
        }
    }
    arrivals.sort();
    (delivered, arrivals.into_iter().map(|(_, i)| i).collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 128 }))]
    /// Reordering within what the receiver holds: the output is exactly the
    /// model's (events in order, one exact hoops record per gap), and
    /// received + lost = sent up to the last delivered datagram.
    #[test]
    fn lost_events_are_exact_against_the_model(
        counts in prop::collection::vec(0u64..6, 1..80),
        fates in prop::collection::vec((0u8..6, 0u64..8, 0u64..8), 80),
    ) {
        let d = stream_of(9, &counts);
        let (delivered, order) = deliveries(&counts, &fates);
        let mut r = Run::new();
        for &i in &order {
            r.feed(addr(1), &d[i]);
        }
        r.finish();
        let expected = model_stream(&counts, &delivered);
        prop_assert_eq!(r.stream(), expected.clone());
        let last = delivered.iter().rposition(|&x| x);
        let sent: u64 = last.map_or(0, |l| counts[..=l].iter().sum());
        prop_assert_eq!(walk(&expected), sent);
        let s = r.core.summary();
        if let Some(x) = s.senders.first() {
            prop_assert_eq!(x.events + x.lost_events, sent);
            prop_assert_eq!(x.datagrams + x.lost_datagrams, last.map_or(0, |l| l as u64 + 1));
            prop_assert_eq!(x.datagrams + x.duplicates, order.len() as u64);
            prop_assert_eq!(x.invalid, 0);
        } else {
            prop_assert!(order.is_empty());
        }
    }

    /// Reordering beyond what the receiver holds (2 datagrams): gaps are
    /// given up on and late datagrams discarded, and still every event number
    /// is either received in order or inside the hoops record at its place,
    /// none twice.
    #[test]
    fn late_datagrams_never_double_count(
        counts in prop::collection::vec(0u64..6, 1..80),
        fates in prop::collection::vec((0u8..6, 0u64..12, 0u64..12), 80),
    ) {
        let d = stream_of(9, &counts);
        let (delivered, order) = deliveries(&counts, &fates);
        let mut r = Run::with(ReceiverConfig {
            reorder: ReorderLimits { datagrams: 2, bytes: 1 << 20 },
            ..ReceiverConfig::default()
        });
        for &i in &order {
            r.feed(addr(1), &d[i]);
        }
        r.finish();
        let last = delivered.iter().rposition(|&x| x);
        let sent: u64 = last.map_or(0, |l| counts[..=l].iter().sum());
        prop_assert_eq!(walk(&r.stream()), sent);
        let s = r.core.summary();
        if let Some(x) = s.senders.first() {
            prop_assert_eq!(x.events + x.lost_events, sent);
            prop_assert_eq!(x.events, r.values().len() as u64);
            prop_assert_eq!(x.lost_events, r.hoops().iter().sum::<u64>());
            prop_assert_eq!(x.datagrams + x.lost_datagrams, last.map_or(0, |l| l as u64 + 1));
            prop_assert_eq!(x.datagrams + x.duplicates + x.invalid + x.late, order.len() as u64);
        }
    }
}

fn close_dgram(
    sender: u32,
    seq: u64,
    dropped: u64,
    sent: u64,
    logged: u64,
    unsent: u64,
) -> Vec<u8> {
    let mut buf = [0u8; 56];
    let len = encode_close(
        &mut buf,
        sender,
        seq,
        dropped,
        sent,
        CloseCounts { logged, unsent },
    )
    .unwrap();
    buf[..len].to_vec()
}

#[test]
fn a_close_marks_the_loss_after_the_last_datagram_that_arrived() {
    let mut r = Run::new();
    // 4 datagrams of 2 events each; the last two are lost. The sender
    // dropped 3 events (reported by the close only) and left 1 unsent:
    // logged = 8 sent + 3 dropped + 1 unsent = 12.
    r.feed(addr(1), &events_dgram(1, 0, 0, 0, 2));
    r.feed(addr(1), &events_dgram(1, 1, 0, 2, 2));
    let close = close_dgram(1, 4, 3, 8, 12, 1);
    r.feed(addr(1), &close);
    assert!(
        !r.core.summary().senders[0].closed,
        "2 and 3 may still arrive"
    );
    assert_eq!(r.stream(), [E(0), E(1), E(2), E(3)]);
    // A repeat: the stream is over, 2 and 3 are given up on.
    r.feed(addr(1), &close);
    assert!(r.core.summary().senders[0].closed);
    r.feed(addr(1), &close); // another: counted, changes nothing
    r.finish();
    assert_eq!(
        r.stream(),
        [E(0), E(1), E(2), E(3), L(4), L(1), L(3)],
        "transit loss, then unsent, then drops"
    );
    let x = &r.core.summary().senders[0];
    assert!(x.closed);
    assert_eq!(x.logged, Some(12));
    assert_eq!(
        (
            x.events,
            x.lost_events,
            x.lost_datagrams,
            x.unsent,
            x.sender_dropped
        ),
        (4, 4, 2, 1, 3)
    );
    assert_eq!(x.accounted(), 12);
    assert_eq!(x.datagrams, 5);
    assert_eq!((x.duplicates, x.late, x.invalid), (0, 0, 0));
    assert_eq!(r.core.progress().accounted(), 12);
}

#[test]
fn a_stream_without_a_close_says_so() {
    let mut r = Run::new();
    r.feed(addr(1), &events_dgram(1, 0, 0, 0, 2));
    r.finish();
    let s = r.core.summary();
    assert!(!s.senders[0].closed);
    assert_eq!(s.senders[0].logged, None);
    assert!(s.to_string().contains("ended without a close"), "{s}");
}

#[test]
fn a_stream_without_a_close_ends_with_one_unclosed_mark() {
    let mut r = Run::new();
    // Sender 42: events 0, 1; datagram 1 (events 2..5) lost; events 5, 6
    // with 2 drops reported. No close.
    r.feed(addr(1), &events_dgram(42, 0, 0, 0, 2));
    r.feed(addr(1), &events_dgram(42, 2, 2, 5, 2));
    assert!(r.marks.is_empty(), "the stream is not over yet");
    r.finish();
    assert_eq!(r.stream(), [E(0), E(1), L(3), E(5), E(6), L(2)]);
    // One mark, after every record of the stream: 4 received + 3 lost in
    // transit + 2 dropped = 9, at the time of event 6 (100 + 6).
    assert_eq!(r.unclosed(), [(42, 9, 106)]);
    let (at, mark) = r.marks[0];
    assert_eq!(at, r.out.len());
    assert_eq!(
        (mark.flags, mark.source, mark.id.0),
        (UNCLOSED_FLAGS, u32::MAX, 0)
    );
    assert_eq!(r.core.summary().senders[0].accounted(), 9);
    // Finishing again writes no second mark.
    r.finish();
    assert_eq!(r.marks.len(), 1);
}

#[test]
fn a_closed_stream_has_no_unclosed_mark() {
    let mut r = Run::new();
    r.feed(addr(1), &events_dgram(1, 0, 0, 0, 2));
    r.feed(addr(1), &close_dgram(1, 1, 0, 2, 2, 0));
    r.finish();
    assert_eq!(r.stream(), [E(0), E(1)]);
    assert!(r.marks.is_empty(), "{:?}", r.marks);
}

#[test]
fn a_restart_marks_the_earlier_unclosed_incarnation_where_it_ends() {
    let mut r = Run::new();
    r.feed(addr(1), &events_dgram(7, 0, 0, 0, 3));
    // Sender 7 again from a new port: its first stream ended without a
    // close, and is marked before the new stream's records.
    r.feed(addr(2), &dgram(7, 0, 0, 0, 50, 1));
    assert_eq!(r.unclosed(), [(7, 3, 102)]);
    assert_eq!(r.marks[0].0, 3);
    r.feed(addr(2), &close_dgram(7, 1, 0, 1, 1, 0));
    r.finish();
    assert_eq!(r.values(), [0, 1, 2, 50]);
    assert_eq!(
        r.unclosed(),
        [(7, 3, 102)],
        "the closed second stream has none"
    );
}

#[test]
fn a_parked_sender_that_never_resumes_is_marked_when_the_receiver_stops() {
    let mut r = Run::with(ReceiverConfig {
        max_senders: 1,
        idle_datagrams: 1,
        ..ReceiverConfig::default()
    });
    r.feed(addr(1), &events_dgram(1, 0, 0, 0, 1));
    r.feed(addr(1), &events_dgram(1, 1, 0, 1, 1));
    // Sender 2 takes the idle slot; sender 1 is parked, not yet marked.
    r.feed(addr(2), &dgram(2, 0, 0, 0, 20, 1));
    assert!(r.marks.is_empty());
    r.finish();
    let mut got = r.unclosed();
    got.sort();
    assert_eq!(got, [(1, 2, 101), (2, 1, 120)]);
}

#[test]
fn a_sender_numbering_from_zero_after_its_close_is_a_new_incarnation() {
    let mut r = Run::with(ReceiverConfig {
        max_senders: 2,
        idle_datagrams: 1000,
        ..ReceiverConfig::default()
    });
    r.feed(addr(1), &events_dgram(1, 0, 0, 0, 2));
    r.feed(addr(1), &close_dgram(1, 1, 0, 2, 2, 0));
    // Same id, same port, from 0 again: a new stream, not duplicates.
    r.feed(addr(1), &dgram(1, 0, 0, 0, 50, 1));
    r.feed(addr(1), &dgram(1, 1, 0, 1, 51, 1));
    r.feed(addr(1), &close_dgram(1, 2, 0, 2, 2, 0));
    r.feed(addr(2), &dgram(2, 0, 0, 0, 70, 1));
    // Sender 1 restarts again, its datagram 0 lost: datagram 1 (first event
    // 0) after the released close starts the new incarnation all the same.
    r.feed(addr(1), &dgram(1, 1, 0, 0, 90, 1));
    r.feed(addr(1), &close_dgram(1, 2, 0, 1, 1, 0));
    r.feed(addr(1), &close_dgram(1, 2, 0, 1, 1, 0));
    // The table is full; a closed sender's slot goes to a new sender at once.
    r.feed(addr(3), &dgram(3, 0, 0, 0, 99, 1));
    r.finish();
    let s = r.core.summary();
    assert_eq!(
        s.senders
            .iter()
            .map(|x| (x.sender, x.events, x.closed, x.duplicates, x.late))
            .collect::<Vec<_>>(),
        [
            (1, 2, true, 0, 0),
            (1, 2, true, 0, 0),
            (2, 1, false, 0, 0),
            (1, 1, true, 0, 0),
            (3, 1, false, 0, 0)
        ]
    );
    assert_eq!(s.invalid.too_many_senders, 0);
    assert_eq!(r.values(), [0, 1, 50, 51, 70, 90, 99]);
}

#[test]
fn sixteen_single_datagrams_never_lock_out_a_sending_sender() {
    let mut r = Run::new();
    for port in 0..16u16 {
        r.feed(addr(1000 + port), &dgram(100 + port as u32, 0, 0, 0, 9, 1));
    }
    // The real sender: never refused, every event received.
    for seq in 0..200u64 {
        r.feed(addr(1), &dgram(1, seq, 0, seq, seq, 1));
    }
    r.finish();
    let s = r.core.summary();
    assert_eq!(s.invalid.too_many_senders, 0);
    let real = s.senders.iter().find(|x| x.sender == 1).unwrap();
    assert_eq!((real.events, real.lost_events), (200, 0));
    // Every quiet sender keeps its account (parked).
    assert_eq!(s.senders.len(), 17);
    assert_eq!(s.events(), 216);
}

#[test]
fn a_parked_sender_resumes_where_it_stopped() {
    let mut r = Run::with(ReceiverConfig {
        max_senders: 1,
        idle_datagrams: 0,
        ..ReceiverConfig::default()
    });
    r.feed(addr(1), &dgram(1, 0, 0, 0, 0, 1));
    r.feed(addr(2), &dgram(2, 0, 0, 0, 100, 1)); // takes the slot, 1 parked
    r.feed(addr(1), &dgram(1, 1, 0, 1, 1, 1)); // resumes: no loss, no restart
    r.feed(addr(1), &dgram(1, 1, 0, 1, 1, 1)); // a duplicate still
    r.finish();
    let s = r.core.summary();
    assert_eq!(
        s.senders
            .iter()
            .map(|x| (x.sender, x.events, x.lost_events, x.duplicates))
            .collect::<Vec<_>>(),
        [(1, 2, 0, 1), (2, 1, 0, 0)]
    );
    assert_eq!(r.values(), [0, 100, 1]);
}

#[test]
fn a_parked_sender_refused_after_its_last_datagram_has_its_loss_marked() {
    let mut r = Run::with(ReceiverConfig {
        max_senders: 1,
        idle_datagrams: 2,
        ..ReceiverConfig::default()
    });
    r.feed(addr(1), &dgram(1, 0, 0, 0, 0, 1));
    r.feed(addr(9), b"not a qtrace datagram"); // the receiver's clock moves on
    r.feed(addr(2), &dgram(2, 0, 0, 0, 100, 1)); // sender 1 idle: parked
    r.feed(addr(1), &dgram(1, 1, 0, 1, 1, 5)); // sender 2 is not idle: refused
    r.finish();
    let s = r.core.summary();
    assert_eq!(
        s.refused,
        [RefusedSource {
            addr: addr(1),
            sender: 1,
            datagrams: 1,
            events: 5
        }]
    );
    // The 5 refused events came after sender 1's last datagram: no gap of
    // its numbering will ever count them, so its own hoops record does.
    assert_eq!(r.stream(), [E(0), E(100), L(5)]);
    assert_eq!(
        s.senders
            .iter()
            .map(|x| (
                x.sender,
                x.events,
                x.lost_events,
                x.lost_datagrams,
                x.accounted()
            ))
            .collect::<Vec<_>>(),
        [(1, 1, 5, 1, 6), (2, 1, 0, 0, 1)]
    );
}

#[test]
fn a_refused_sender_that_gets_a_slot_later_counts_its_refused_events_once() {
    let mut r = Run::with(ReceiverConfig {
        max_senders: 1,
        idle_datagrams: 2,
        ..ReceiverConfig::default()
    });
    r.feed(addr(1), &dgram(1, 0, 0, 0, 0, 1));
    r.feed(addr(2), &dgram(2, 0, 0, 0, 100, 3)); // refused: sender 1 not idle
    r.feed(addr(9), b"not a qtrace datagram");
    r.feed(addr(2), &dgram(2, 1, 0, 3, 103, 1)); // sender 1 idle: takes the slot
    r.finish();
    // The refused datagram is the gap before sender 2's first one: one
    // hoops record of 3, not a second one at the end.
    assert_eq!(r.stream(), [E(0), L(3), E(103)]);
}

/// What a [`qtrace::receiver::StreamSink`] saw: each record with the
/// stream it was told of last, and how many batches came whole.
#[derive(Default)]
struct Seen {
    current: Option<qtrace::receiver::StreamId>,
    records: Vec<(u32, Event)>,
    batches: usize,
}

/// Takes records one by one (the default `records`).
struct OneByOne(Seen);

impl qtrace::receiver::StreamSink for OneByOne {
    fn stream(&mut self, id: &qtrace::receiver::StreamId, _: Option<&TraceHeader>) {
        self.0.current = Some(*id);
    }
    fn record(&mut self, e: &Event) {
        let id = self.0.current.expect("told of the stream first");
        self.0.records.push((id.sender, *e));
    }
}

/// Takes a datagram's records at once (its own `records`).
struct ByDatagram(Seen);

impl qtrace::receiver::StreamSink for ByDatagram {
    fn stream(&mut self, id: &qtrace::receiver::StreamId, _: Option<&TraceHeader>) {
        self.0.current = Some(*id);
    }
    fn record(&mut self, e: &Event) {
        let id = self.0.current.expect("told of the stream first");
        self.0.records.push((id.sender, *e));
    }
    fn records(&mut self, raw: &[u8]) {
        assert_eq!(raw.len() % 32, 0, "whole records");
        let id = self.0.current.expect("told of the stream first");
        self.0.batches += 1;
        for c in raw.chunks_exact(32) {
            let rec: &[u8; 32] = c.try_into().unwrap();
            self.0
                .records
                .push((id.sender, qtrace_core::encode::record::parse(rec)));
        }
    }
}

/// Two senders' datagrams, interleaved and sent in a burst (so that the
/// receiver takes several per call where it can): a stream sink gets each
/// stream's events in order, each after being told its stream, whether it
/// takes them one by one or a datagram at a time; the two ways agree.
#[test]
fn stream_sinks_get_each_streams_records_in_order_one_by_one_or_by_datagram() {
    use qtrace::receiver::{Receiver, RunLimit, StreamSink};
    use std::net::UdpSocket;
    use std::time::Duration;

    const DATAGRAMS: u64 = 20;
    const PER: u64 = 30;
    fn run<S: StreamSink>(sink: &mut S) -> qtrace::receiver::ReceiverSummary {
        let mut receiver = Receiver::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let to = receiver.local_addr();
        let senders = [1u32, 2].map(|id| (id, UdpSocket::bind("127.0.0.1:0").unwrap()));
        let sending = std::thread::spawn(move || {
            for seq in 0..DATAGRAMS {
                for (id, socket) in &senders {
                    let d = events_dgram(*id, seq, 0, seq * PER, PER);
                    socket.send_to(&d, to).unwrap();
                }
            }
            let n = DATAGRAMS * PER;
            for (id, socket) in &senders {
                socket
                    .send_to(&close_dgram(*id, DATAGRAMS, 0, n, n, 0), to)
                    .unwrap();
            }
        });
        let limit = RunLimit::events(2 * DATAGRAMS * PER).or_after(Duration::from_secs(20));
        let summary = receiver.run_streams(limit, sink).unwrap();
        sending.join().unwrap();
        summary
    }
    let mut one = OneByOne(Seen::default());
    let mut batched = ByDatagram(Seen::default());
    for (summary, seen) in [(run(&mut one), &one.0), (run(&mut batched), &batched.0)] {
        assert_eq!(summary.events(), 2 * DATAGRAMS * PER);
        assert!(summary
            .senders
            .iter()
            .all(|s| s.closed && s.lost_datagrams == 0));
        for id in [1u32, 2] {
            let values: Vec<u64> = seen
                .records
                .iter()
                .filter(|(s, _)| *s == id)
                .map(|(_, e)| e.args[0])
                .collect();
            assert_eq!(
                values,
                (0..DATAGRAMS * PER).collect::<Vec<_>>(),
                "sender {id}"
            );
        }
        assert_eq!(seen.records.len() as u64, 2 * DATAGRAMS * PER);
    }
    assert_eq!(one.0.batches, 0);
    assert_eq!(batched.0.batches as u64, 2 * DATAGRAMS);
}

/// A stream sink that cannot take more after its first datagram stops the
/// receiver there, even when more datagrams were taken from the socket in
/// the same call: those are not handled, so the summary counts exactly the
/// events the sink got.
#[test]
fn a_sink_that_stops_gets_every_event_the_summary_counts_and_no_more() {
    use qtrace::receiver::{Receiver, RunLimit, StreamSink};
    use std::net::UdpSocket;
    use std::time::Duration;

    struct Full {
        events: u64,
    }
    impl StreamSink for Full {
        fn stream(&mut self, _: &qtrace::receiver::StreamId, _: Option<&TraceHeader>) {}
        fn record(&mut self, e: &Event) {
            if e.id == user::USER0 {
                self.events += 1;
            }
        }
        fn tick(&mut self) -> bool {
            self.events == 0
        }
    }
    let mut receiver = Receiver::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    // All waiting in the socket before the receiver runs: one batch.
    for seq in 0..10 {
        socket
            .send_to(
                &events_dgram(3, seq, 0, seq * 30, 30),
                receiver.local_addr(),
            )
            .unwrap();
    }
    let mut sink = Full { events: 0 };
    let summary = receiver
        .run_streams(RunLimit::duration(Duration::from_secs(20)), &mut sink)
        .unwrap();
    assert_eq!(sink.events, 30);
    assert_eq!(summary.events(), 30);
    assert_eq!(summary.senders[0].datagrams, 1);
}

/// A compact events datagram (FORMAT.md 2.7) carrying values
/// `first..first + n`, its first-event field `first`.
fn compact_dgram(sender: u32, seq: u64, dropped: u64, first: u64, n: u64) -> Vec<u8> {
    use qtrace::wire::datagram::{CompactEventsEncoder, COMPACT_VERSION};
    let mut buf = vec![0u8; DEFAULT_MAX_DATAGRAM_LEN];
    let mut enc = CompactEventsEncoder::new(&mut buf, sender, seq, dropped, first).unwrap();
    for i in first..first + n {
        assert!(enc.push(&ev(i)));
    }
    let len = enc.finish();
    buf.truncate(len);
    assert_eq!(buf[4..6], COMPACT_VERSION.to_be_bytes());
    buf
}

/// FORMAT.md 2.7: compact datagrams lost, reordered and repeated on the way
/// give the loss arithmetic of version 1, exactly: one hoops record of the
/// lost datagrams' events in their place, drops after the datagram that
/// reports them, and the close's count of the events after the last.
#[test]
fn compact_datagrams_lost_reordered_and_repeated_are_counted_exactly() {
    let mut r = Run::new();
    // 8 datagrams of 3 events (values 0..24); 2 dropped at the sender,
    // reported by datagram 4. Lost: 2 and 3 (6 events) and 6 (3);
    // 4 and 5 swapped; 1 repeated.
    let d: Vec<Vec<u8>> = (0..8)
        .map(|s| compact_dgram(7, s, if s >= 4 { 2 } else { 0 }, s * 3, 3))
        .collect();
    for &i in &[0usize, 1, 1, 5, 4, 7] {
        r.feed(addr(9), &d[i]);
    }
    // The close: 24 sent + 2 dropped + 1 unsent = 27 logged; version 3.
    let mut close = close_dgram(7, 8, 2, 24, 27, 1);
    qtrace::wire::datagram::set_version(&mut close, 3);
    r.feed(addr(9), &close);
    r.finish();
    assert_eq!(
        r.stream(),
        [
            E(0),
            E(1),
            E(2),
            E(3),
            E(4),
            E(5),
            L(6),
            E(12),
            E(13),
            E(14),
            L(2),
            E(15),
            E(16),
            E(17),
            L(3),
            E(21),
            E(22),
            E(23),
            L(1)
        ]
    );
    let x = &r.core.summary().senders[0];
    assert_eq!((x.datagrams, x.events), (6, 15));
    assert_eq!((x.lost_datagrams, x.lost_events), (3, 9));
    assert_eq!((x.duplicates, x.reordered, x.invalid), (1, 1, 0));
    assert_eq!((x.sender_dropped, x.unsent), (2, 1));
    assert!(x.closed);
    assert_eq!(x.events + x.lost_events + x.sender_dropped + x.unsent, 27);
}

/// A stream may mix datagrams of versions 1 and 3 (a sender switched): the
/// loss arithmetic does not look at the encoding.
#[test]
fn compact_and_32_byte_datagrams_of_one_stream_mix() {
    let mut r = Run::new();
    r.feed(addr(1), &compact_dgram(1, 0, 0, 0, 4));
    r.feed(addr(1), &events_dgram(1, 2, 0, 6, 2));
    r.feed(addr(1), &compact_dgram(1, 3, 0, 8, 1));
    r.finish();
    assert_eq!(r.stream(), [E(0), E(1), E(2), E(3), L(2), E(6), E(7), E(8)]);
    let x = &r.core.summary().senders[0];
    assert_eq!((x.events, x.lost_events, x.invalid), (7, 2, 0));
}

/// Compact datagrams that do not check are counted, by kind, and touch no
/// stream (FORMAT.md 4.3 step 8, version 3).
#[test]
fn bad_compact_datagrams_are_counted_and_skipped() {
    let mut r = Run::new();
    let good = compact_dgram(3, 0, 0, 0, 2);
    r.feed(addr(1), &good[..good.len() - 1]); // truncated
    let mut count = good.clone();
    count[13] = 3; // the datagram's count disagrees with its chunk's
    r.feed(addr(1), &count);
    let mut sender = good.clone();
    sender[40 + 11] ^= 1; // the chunk's sender id
    r.feed(addr(1), &sender);
    let mut version = good.clone();
    version[40 + 5] = 2; // compact chunk version 2
    r.feed(addr(1), &version);
    let mut long = good.clone();
    long.push(1); // a nonzero byte where only zero padding may be (2.7)
    r.feed(addr(1), &long);
    let s = r.core.summary();
    assert!(s.senders.is_empty());
    assert_eq!(s.invalid.truncated, 1);
    assert_eq!(s.invalid.unsupported_version, 1);
    assert_eq!(s.invalid.malformed, 3);
    r.feed(addr(1), &good);
    r.finish();
    assert_eq!(r.values(), [0, 1]);
}

/// A keyed compact stream (version 4): accepted under its key with the
/// arithmetic of version 3; tampered, unkeyed or under another key,
/// rejected before it touches the stream.
#[cfg(feature = "keys")]
#[test]
fn a_keyed_compact_stream_is_received_and_a_tampered_one_rejected() {
    use qtrace::wire::datagram::keyed;
    use qtrace::wire::DatagramKey;
    let key = DatagramKey::from_bytes([0x42; 32]);
    let seal = |d: Vec<u8>| {
        let len = d.len();
        let mut buf = d;
        buf.resize(len + keyed::KEYED_OVERHEAD, 0);
        let n = keyed::seal(&key, 1_000, &mut buf, len).unwrap();
        assert_eq!(buf[4..6], [0, 4]);
        buf.truncate(n);
        buf
    };
    let config = ReceiverConfig {
        keys: vec![key.clone()],
        ..ReceiverConfig::default()
    };
    let mut r = Run::with(config);
    let d: Vec<Vec<u8>> = (0..4)
        .map(|s| seal(compact_dgram(5, s, 0, s * 2, 2)))
        .collect();
    r.feed(addr(1), &d[0]);
    // Tampered: one bit of an event changed.
    let mut bad = d[1].clone();
    bad[48 + 48 + 2] ^= 1;
    r.feed(addr(1), &bad);
    // The same datagram unkeyed: rejected too (this receiver holds a key).
    r.feed(addr(1), &compact_dgram(5, 1, 0, 2, 2));
    r.feed(addr(1), &d[3]);
    r.finish();
    // Datagram 1 never got in (its forgery and its unkeyed copy were
    // rejected) and 2 never arrived: their 4 events are lost, exactly.
    assert_eq!(r.stream(), [E(0), E(1), L(4), E(6), E(7)]);
    let s = r.core.summary();
    assert_eq!(s.invalid.rejected.bad_tag, 1);
    assert_eq!(s.invalid.rejected.unkeyed, 1);
    let x = &s.senders[0];
    assert_eq!(x.key_id, Some(key.id()));
    assert_eq!((x.events, x.lost_events), (4, 4));
}
