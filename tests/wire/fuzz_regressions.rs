//! Inputs the fuzzers (`fuzz/`, `scripts/fuzz.sh`) found that once broke a
//! parser or the receiver, kept as exact regression tests. RELIABILITY.md
//! lists each finding and its fix.

use std::net::SocketAddr;

use qtrace::classes::{tracer::HOOPS, user};
use qtrace::receiver::{ReceiverConfig, ReceiverCore};
use qtrace::wire::datagram;
use qtrace::Event;

fn events_datagram(sender: u32, seq: u64, dropped: u64) -> Vec<u8> {
    let mut buf = [0u8; 72];
    let (len, n) = datagram::encode_events(
        &mut buf,
        sender,
        seq,
        dropped,
        seq,
        &[Event::new(5, user::USER0, 1, [7, 8])],
    )
    .unwrap();
    assert_eq!(n, 1);
    buf[..len].to_vec()
}

/// `receiver` target, first minute: two senders each claiming almost
/// `u64::MAX` dropped events made `ReceiverSummary::sender_dropped()` (a plain
/// sum) overflow and panic. The drop counts come from the network: the sums
/// now saturate, and the live counter too.
#[test]
fn huge_drop_counts_from_two_senders_saturate() {
    let mut core = ReceiverCore::new(ReceiverConfig::default());
    let progress = core.progress();
    let mut out = Vec::new();
    for port in [40_000u16, 40_001] {
        let from = SocketAddr::from(([127, 0, 0, 1], port));
        core.handle(from, &events_datagram(9, 0, u64::MAX - 1), &mut |e| {
            out.push(*e)
        });
    }
    let s = core.summary();
    assert_eq!(s.senders.len(), 2);
    assert_eq!(s.senders[0].sender_dropped, u64::MAX - 1);
    assert_eq!(s.senders[0].accounted(), u64::MAX);
    assert_eq!(s.sender_dropped(), u64::MAX);
    assert_eq!(progress.sender_dropped(), u64::MAX);
    assert_eq!(s.events(), 2);
    // Each datagram: its event, then the hoops record for the drops; the
    // second (same id, new port) replaced the first stream, which ended
    // without a close: its unclosed-stream mark, the accounted count
    // saturated, comes between them.
    assert_eq!(out.len(), 5);
    assert_eq!(qtrace::wire::unclosed_stream(&out[2]), Some((9, u64::MAX)));
    out.remove(2);
    for pair in out.chunks(2) {
        assert_eq!(pair[0].id, user::USER0);
        assert_eq!(pair[1].id, HOOPS);
        assert_eq!(pair[1].args, [u64::MAX - 1, 0xffff]);
    }
    assert!(s
        .to_string()
        .contains("18446744073709551614 dropped by the sender"));
}
