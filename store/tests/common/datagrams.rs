//! Datagrams made by hand with the wire encoders, for the tests that play
//! many senders from one socket (a sender is known by its id): churn.rs,
//! churn_memory.rs; and the header such senders send (stream_heap.rs).
#![allow(dead_code)] // each test uses what it needs

use qtrace::classes::{user, Catalog, ClassSpec};
use qtrace::clock::{Clock, ManualClock};
use qtrace::wire::datagram::{
    encode_catalog_fragment, encode_close, encode_events, CloseCounts, DEFAULT_MAX_DATAGRAM_LEN,
};
use qtrace::wire::TraceHeader;
use qtrace::Event;

/// Events datagram number `sequence` of sender `id`, its events `first`..
/// `first + per` (`user0 [arg0, i]` at time 1,000 + i).
pub fn events(id: u32, sequence: u64, first: u64, per: u64, arg0: u64) -> Vec<u8> {
    let evs: Vec<Event> = (first..first + per)
        .map(|i| Event::new(1_000 + i, user::USER0, 0, [arg0, i]))
        .collect();
    let mut buf = vec![0u8; DEFAULT_MAX_DATAGRAM_LEN];
    let (len, n) = encode_events(&mut buf, id, sequence, 0, first, &evs).unwrap();
    assert_eq!(n as u64, per);
    buf.truncate(len);
    buf
}

/// The close datagram of sender `id`, number `sequence`, after `sent`
/// events (all logged, none unsent).
pub fn close(id: u32, sequence: u64, sent: u64) -> Vec<u8> {
    let mut buf = [0u8; 56];
    let counts = CloseCounts {
        logged: sent,
        unsent: 0,
    };
    let len = encode_close(&mut buf, id, sequence, 0, sent, counts).unwrap();
    buf[..len].to_vec()
}

/// A sender's header: the built-in classes and one class of its own
/// (`app`, 8 events with a 40-byte description each).
pub fn header() -> TraceHeader {
    let mut catalog = Catalog::builtin();
    let mut app = ClassSpec::new("app", "the application's own events");
    for e in 0..8 {
        app = app.event(format!("step{e}"), "x".repeat(40), &["job", "arg"]);
    }
    catalog.define(app).unwrap();
    TraceHeader::new(catalog, &Clock::manual(&ManualClock::new(0)))
}

/// Sender `id`'s header as catalog datagrams numbered from 0, before any
/// event.
pub fn catalog(id: u32, header: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; DEFAULT_MAX_DATAGRAM_LEN];
    let mut offset = 0;
    while offset < header.len() {
        let seq = out.len() as u64;
        let (len, n) = encode_catalog_fragment(&mut buf, id, seq, 0, 0, header, offset).unwrap();
        out.push(buf[..len].to_vec());
        offset += n;
    }
    out
}
