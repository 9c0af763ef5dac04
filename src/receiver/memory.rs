//! The fixed byte costs of the receiver's state per item, as
//! RELIABILITY.md ("Receiver memory", the receiver's table) states them: a struct
//! that grows changes this test and the document together. The heap that
//! scales with what senders send (their headers) is measured in
//! store/tests/memory_costs.rs.

use std::mem::size_of;
use std::net::SocketAddr;

use super::rejection::RejectedSource;
use super::sender::SenderState;
use super::sequence::Span;
use super::sessions::State;
use super::summary::{RefusedSource, SenderSummary};

#[test]
#[cfg(target_pointer_width = "64")]
fn the_receivers_items_take_the_documented_bytes() {
    // A tracked or parked sender: sequence window, counts, key, close.
    assert_eq!(size_of::<SenderState>(), 680);
    // A held datagram's entry (its bytes are boxed apart).
    assert_eq!(size_of::<(u64, (Span, Box<[u8]>))>(), 56);
    // An ended account (of 1,024 kept; its queue name apart).
    assert_eq!(size_of::<(u64, SenderSummary)>(), 184);
    // A refusing source address (1,024) and its unclaimed events.
    assert_eq!(size_of::<RefusedSource>() + size_of::<(u64, u64)>(), 72);
    // A rejected source address (1,024).
    assert_eq!(size_of::<RejectedSource>(), 88);
    // A closed end remembered (4,096).
    assert_eq!(size_of::<(SocketAddr, u32, u64)>(), 48);
    // A keyed session remembered (16,384): its map entry and its place in
    // the order the oldest is forgotten by.
    assert_eq!(
        size_of::<(u32, (u64, State))>() + size_of::<(u64, u32)>(),
        48
    );
}
