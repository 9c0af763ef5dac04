//! The receiver (S.Ha.R.K.'s `udpdump`): takes the UDP queue's datagrams from
//! any number of senders and writes them to a trace file.
//!
//! - **Per sender** (a source address and the sender id in the datagram), it
//!   detects lost datagrams (sequence gaps) and exactly how many events they
//!   held (from the first-event field of the datagrams on both sides),
//!   duplicates and reordering. A sender's datagrams are
//!   written in sequence order: one that arrives ahead of a missing one is
//!   held (at most [`ReceiverConfig::reorder`]) until the missing one arrives
//!   or is given up on. It reassembles the
//!   sender's trace header from its catalog datagrams (so user-defined events
//!   keep their names) and turns the sender's cumulative drop count into
//!   hoops records.
//! - **Untrusted input**: datagrams that are not qtrace datagrams, are
//!   truncated, come from a newer format version or fail validation are
//!   counted and skipped; nothing panics.
//! - **Only the senders you trust** (FORMAT.md 2.6, 3.1): with keys
//!   (`ReceiverConfig::keys`, feature `keys`) only keyed datagrams a key
//!   confirms are accepted, and a keyed stream is known by its sender id and
//!   session. Forged, other-keyed and replayed datagrams — and, keyed or
//!   not, counters that go backwards and datagrams after a close — are
//!   *rejected* before they touch any stream (no slot taken, reset or
//!   parked, no count changed) and counted per source address
//!   ([`ReceiverSummary::rejected`], [`RejectionCounts`]). The keyed
//!   sessions seen are remembered per sender id (at most 16,384, then a
//!   floor; `sessions.rs`), and across restarts in the session file of
//!   [`Receiver::keep_sessions`] (FORMAT.md 3.7).
//! - **Bounded memory, no lock-out**: at most [`ReceiverConfig::max_senders`]
//!   senders are tracked at once. A sender is known by its sender id: the
//!   same id from a new source address (a restarted sender on a new port),
//!   or numbering from 0 again after its close or beyond the window (a new
//!   incarnation), takes over its own slot at once. When the table is full, a
//!   new sender takes the slot of a sender that closed its stream, else of
//!   the one heard least recently if it has sent nothing during the last
//!   [`ReceiverConfig::idle_datagrams`] datagrams (16 by default: one per
//!   slot), so senders that went quiet never lock out one that sends. A
//!   replaced sender is *parked* (its sequence position and counts are kept,
//!   up to [`MAX_RETIRED`] of them) and resumes where it stopped when it
//!   sends again; a parked sender is ended for good to make room only once
//!   it has been quiet for `idle_datagrams` × [`MAX_RETIRED`] datagrams, so
//!   a sender still sending never comes back as a new stream. Only while
//!   every slot holds a sender heard within the idle limit (or parking the
//!   one to replace would end a parked sender still sending) is a new
//!   sender refused: its datagrams are counted per
//!   source address ([`ReceiverSummary::refused`]) and skipped. Each tracked
//!   sender has a fixed-size sequence window, at most
//!   [`ReceiverConfig::reorder`] held datagrams and a catalog of at most
//!   [`ReceiverConfig::max_catalog_len`] bytes; a parked sender keeps its
//!   sequence bits (128 bytes), counts and header (decoded: up to about 5
//!   bytes a header byte, so at worst [`MAX_RETIRED`] × 5 ×
//!   `max_catalog_len` bytes of headers; RELIABILITY.md, "Receiver memory",
//!   gives the bound item by item); received records go straight to disk.
//! - **Streams end honestly**: a sender's close datagram (sent 3 times, 2 ms
//!   apart) carries its final counts. It is released after every datagram
//!   numbered before it; when a second copy arrives, datagrams still missing
//!   before it are given up on at once (lost). The receiver then marks the events sent after the
//!   last datagram that arrived, the events the sender could not send and
//!   its last drops as lost (hoops records), so for a closed stream
//!   `logged = received + lost` exactly ([`SenderSummary::logged`]). A stream
//!   that ends without a close is reported as such
//!   ([`SenderSummary::closed`]) and marked in the trace: after its last
//!   record, one unclosed-stream mark
//!   ([`unclosed_mark`](crate::wire::unclosed_mark), FORMAT.md 1.5),
//!   written when it is replaced for good or the receiver stops. A datagram that arrives after it was given
//!   up on is counted *late* ([`SenderSummary::late`]) and discarded.
//!
//! # Hoops records in the received trace
//!
//! - *Sender drops*: when a datagram reports more drops than any before it
//!   from its sender, a hoops record with the difference (`args = [lost,
//!   queue]`, the sender's queue handle from its header, or `0xffff` if not yet
//!   known) follows that datagram's events: the UDP queue reports drops in
//!   the datagram that carries the last event queued before them, so the
//!   record is never placed before an event that preceded the loss.
//! - *Lost datagrams*: a datagram is given up on when more than
//!   [`ReceiverConfig::reorder`] datagrams (or bytes) are held behind it,
//!   when the sender is 1024 datagrams (its sequence window) further, or when the
//!   receiver stops. Then one hoops record per gap (a run of consecutive lost
//!   datagrams) goes exactly where the gap is — after the events before it,
//!   before the events after it, with the time of the last event before it —
//!   and carries the exact number of events lost: the first-event field of
//!   the datagram after the gap minus the events released before it. A gap of
//!   datagrams that held no events (catalog datagrams) writes no record. A
//!   lost datagram that arrives after it was given up on is discarded (it was
//!   counted lost), so events received + hoops counts = events sent, exactly.
//!   Datagrams lost after the last one that arrived are known from the
//!   close datagram; without one they cannot be known.
//! - *End of a stream*: when the close datagram is released (after every
//!   datagram numbered before it), the loss before it (as any gap), then a
//!   hoops record for the events the sender never sent (`unsent`), then one
//!   for its last drops, all with the time of its last event.
//! - *Refused senders*: when the receiver stops, one hoops record (`args =
//!   [events, 0xffff]`) per source address whose datagrams were refused and
//!   whose sender (that address and id) never got a slot. A sender that got
//!   one (before or after) accounts for them itself: a gap in its numbering,
//!   or — for those after its last datagram that got in — a hoops record of
//!   its own (its queue, the time of its last event) when its stream ends.
//!
//! ```no_run
//! use qtrace::receiver::{Receiver, RunLimit};
//! use std::time::Duration;
//!
//! let receiver = Receiver::bind("127.0.0.1:5510".parse().unwrap())?;
//! let summary = receiver.run("received.qtr", RunLimit::duration(Duration::from_secs(10)))?;
//! println!("{summary}");
//! # Ok::<(), qtrace::Error>(())
//! ```
//!
//! # Layout
//!
//! One concept per file: the limits and default address (`config.rs`),
//! the core without I/O ([`ReceiverCore`], `core.rs`) and the state of one
//! sender stream in it (`sender.rs`), where its records go (`sink.rs`:
//! a file, a closure, or a [`StreamSink`] told each batch's stream), the
//! live counts ([`Progress`], `progress.rs`) and the summary
//! ([`ReceiverSummary`], `summary.rs`), the socket ([`Receiver`],
//! `socket.rs`) and the datagrams taken from it in batches (`batch.rs`:
//! `recvmmsg` and receive offload on Linux), when a run stops ([`RunLimit`], [`Stopper`], `run.rs`),
//! and the spool into the live trace file (`spool.rs`, over `file.rs`);
//! `sequence.rs` tracks a sender's datagram numbers, `sessions.rs` the
//! keyed sessions seen and their session file.

mod batch;
mod config;
mod core;
mod file;
#[cfg(test)]
mod memory;
mod progress;
mod rejection;
mod run;
mod sender;
mod sequence;
mod sessions;
mod sink;
mod socket;
mod spool;
mod summary;

pub use self::config::{default_listen_addr, ReceiverConfig, MAX_RETIRED};
pub use self::core::ReceiverCore;
pub use self::progress::Progress;
pub use self::rejection::{RejectedSource, RejectionCounts};
pub use self::run::{RunLimit, Stopper};
pub use self::sequence::ReorderLimits;
pub use self::sink::{StreamId, StreamSink};
pub use self::socket::Receiver;
pub use self::summary::{InvalidCounts, ReceiverSummary, RefusedSource, SenderSummary};
