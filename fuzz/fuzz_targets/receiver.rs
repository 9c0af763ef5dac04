//! Arbitrary bytes as datagrams from a few fake senders into the receiver's
//! state machine (`ReceiverCore`, no socket; events, catalog and close
//! datagrams, restarts, parking and refusals): never a panic, bounded state,
//! and exact bookkeeping — every datagram is either accepted or counted as
//! skipped, and every record handed out is a received event or one hoops
//! record per detected loss.
//!
//! Input framing (see `tests/wire/fuzz_corpus_receiver.rs`, which writes seeds in
//! it): repeated `[sender: u8][len: u16 BE][len bytes]`; the low two bits of
//! `sender` pick one of four source addresses, a short last frame takes what
//! is left.
#![no_main]

use std::net::SocketAddr;

use libfuzzer_sys::fuzz_target;
use qtrace::classes::tracer::HOOPS;
use qtrace::receiver::{ReceiverConfig, ReceiverCore, MAX_RETIRED};
use qtrace::wire::unclosed_stream;

const MAX_SENDERS: usize = 3;

fuzz_target!(|data: &[u8]| {
    let config = ReceiverConfig {
        max_senders: MAX_SENDERS,
        max_catalog_len: 8 << 10,
        // Small, so replacing a quiet sender is reached too.
        idle_datagrams: 4,
        ..ReceiverConfig::default()
    };
    let mut core = ReceiverCore::new(config);
    let progress = core.progress();
    let mut fed = 0u64;
    let mut records = 0u64;
    let mut hoops = 0u64;
    // Unclosed-stream marks (FORMAT.md 1.5), not counted in `records`.
    let mut marks = 0u64;
    let mut rest = data;
    while !rest.is_empty() {
        let who = rest[0] & 3;
        let len = match rest.get(1..3) {
            Some(l) => u16::from_be_bytes([l[0], l[1]]) as usize,
            None => rest.len(),
        };
        let body_start = 3.min(rest.len());
        let end = (body_start + len).min(rest.len());
        let body = &rest[body_start..end];
        rest = &rest[end..];
        let from = SocketAddr::from(([127, 0, 0, 1], 40_000 + who as u16));
        core.handle(from, body, &mut |e| {
            if unclosed_stream(e).is_some() {
                marks += 1;
                return;
            }
            records += 1;
            if e.id == HOOPS && e.source == u32::MAX {
                hoops += 1;
            }
        });
        fed += 1;
        let s = core.summary();
        // Tracked senders are bounded; parked and ended ones keep an account
        // (up to MAX_RETIRED of each), refusing addresses too.
        assert!(s.senders.len() <= MAX_SENDERS + 2 * MAX_RETIRED);
        assert!(s.refused.len() <= MAX_RETIRED);
        assert_eq!(
            s.refused.iter().map(|r| r.datagrams).sum::<u64>(),
            s.invalid.too_many_senders
        );
        // Every datagram is accepted or skipped, exactly once.
        assert_eq!(progress.datagrams() + progress.invalid(), fed);
        if s.retired_uncounted == 0 {
            assert_eq!(
                s.senders.iter().map(|s| s.datagrams).sum::<u64>(),
                progress.datagrams()
            );
            assert_eq!(s.events(), progress.events());
            assert_eq!(s.sender_dropped(), progress.sender_dropped());
        }
    }
    // The end writes the datagrams still held, each after the exact loss
    // before it.
    core.finish(&mut |e| {
        if unclosed_stream(e).is_some() {
            marks += 1;
            return;
        }
        records += 1;
        if e.id == HOOPS && e.source == u32::MAX {
            hoops += 1;
        }
    });
    let s = core.summary();
    // Exactly one unclosed-stream mark per stream that ended without a
    // close, none for a closed one.
    if s.retired_uncounted == 0 {
        assert_eq!(
            marks,
            s.senders.iter().filter(|s| !s.closed).count() as u64
        );
    }
    // Records out = events received + the hoops records the receiver wrote
    // (at most three per accepted datagram: the events lost in transit
    // before it, a close's unsent events, the sender's drops it reports;
    // plus, per replaced or finished sender, the loss before what it still
    // held, and one per refusing address). Received events may themselves
    // be hoops records.
    let written_hoops = records - progress.events();
    assert!(records >= progress.events());
    assert!(written_hoops <= hoops);
    assert!(
        written_hoops
            <= 3 * fed + s.senders.len() as u64 + s.retired_uncounted + s.refused.len() as u64
    );

    // A loss detected means a hoops record written for it.
    if s.sender_dropped() > 0 || s.lost_events() > 0 {
        assert!(written_hoops > 0);
    }
    // The outputs a receiver builds from its state are total.
    let header = core.trace_header();
    let _ = header.to_bytes();
    let _ = s.to_string();
});
