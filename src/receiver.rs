//! The receiver (S.Ha.R.K.'s `udpdump`): takes the UDP queue's datagrams from
//! any number of senders and writes them to a trace file.
//!
//! - **Per sender** (a source address and the sender id in the datagram), it
//!   detects lost datagrams (sequence gaps) and exactly how many events they
//!   held (from the first-event field of the datagrams on both sides),
//!   duplicates and reordering ([`sequence`]). A sender's datagrams are
//!   written in sequence order: one that arrives ahead of a missing one is
//!   held (at most [`ReceiverConfig::reorder`]) until the missing one arrives
//!   or is given up on. It reassembles the
//!   sender's trace header from its catalog datagrams (so user-defined events
//!   keep their names) and turns the sender's cumulative drop count into
//!   hoops records.
//! - **Untrusted input**: datagrams that are not qtrace datagrams, are
//!   truncated, come from a newer format version or fail validation are
//!   counted and skipped; nothing panics.
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
//!   sends again. Only while every slot holds a sender heard within the
//!   idle limit is a new sender refused: its datagrams are counted per
//!   source address ([`ReceiverSummary::refused`]) and skipped. Each tracked
//!   sender has a fixed-size sequence window, at most
//!   [`ReceiverConfig::reorder`] held datagrams and a catalog of at most
//!   [`ReceiverConfig::max_catalog_len`] bytes; a parked sender keeps its
//!   sequence bits (128 bytes), counts and header (so at worst
//!   [`MAX_RETIRED`] × `max_catalog_len` bytes of headers); received records
//!   go straight to disk.
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
//!   ([`unclosed_mark`], FORMAT.md 1.5),
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
//!   when the sender is [`sequence::WINDOW`] datagrams further, or when the
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

mod file;
pub mod sequence;

use std::fmt;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use crate::classes::{tracer::HOOPS, Catalog};
use crate::clock::Clock;
use crate::event::Event;
use crate::io_error::IoError;
use crate::wire::close::unclosed_mark;
use crate::wire::datagram::{
    CatalogAssembler, CloseCounts, DatagramHeader, DatagramKind, DatagramView, HEADER_LEN,
    MAX_DATAGRAM_LEN,
};
use crate::wire::header::NO_QUEUE;
use crate::wire::record::{self, RECORD_LEN};
use crate::wire::{QueueTotals, TraceHeader, WireError};
use file::LiveFile;
use sequence::{Gap, Limits, SequenceTracker, Span};

/// The port `qtrace recv` listens on and the UDP queue sends to by default.
pub const DEFAULT_PORT: u16 = 5510;

/// The address `qtrace recv` listens on by default: loopback only.
pub fn default_listen_addr() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], DEFAULT_PORT))
}

/// Limits that bound the receiver's memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReceiverConfig {
    /// Senders tracked at once: the size of the sender table (16). A new
    /// sender beyond it takes the slot of a closed or idle one, or is
    /// refused (counted per source address, [`ReceiverSummary::refused`]).
    pub max_senders: usize,
    /// The largest sender header (catalog) accepted, in bytes (1 MiB).
    pub max_catalog_len: usize,
    /// The socket receive buffer asked for (8 MiB; the kernel may cap it).
    pub recv_buffer: usize,
    /// The idle limit: when every slot is taken, a new sender replaces the
    /// sender heard least recently if that one has sent nothing during the
    /// last this many datagrams (16). 0 replaces it whatever it did.
    pub idle_datagrams: u64,
    /// Per sender, how many datagrams (256) and bytes (512 KiB) are held
    /// while a missing datagram may still arrive (the reorder window); beyond
    /// that it is given up on (counted lost).
    pub reorder: Limits,
    /// Bytes reserved for the header at the start of the file
    /// [`Receiver::run`] writes (64 KiB): the sender's header replaces the
    /// provisional one in place when it fits, otherwise the file is
    /// rewritten (to a temporary file renamed over it).
    pub header_room: usize,
}

/// Accounts of replaced senders kept for the summary; beyond this many,
/// replaced senders are only counted ([`ReceiverSummary::retired_uncounted`]).
/// Also the number of parked senders kept (see the module documentation)
/// and of refusing source addresses counted one by one.
pub const MAX_RETIRED: usize = 1024;

impl Default for ReceiverConfig {
    fn default() -> Self {
        ReceiverConfig {
            max_senders: 16,
            max_catalog_len: 1 << 20,
            recv_buffer: 8 << 20,
            idle_datagrams: 16,
            reorder: Limits::default(),
            header_room: 64 << 10,
        }
    }
}

/// Datagrams that were skipped before they could be tied to a sender's
/// stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InvalidCounts {
    /// Not a qtrace datagram (wrong magic).
    pub not_qtrace: u64,
    /// Shorter than their header or count says.
    pub truncated: u64,
    /// From a format version this receiver does not read.
    pub unsupported_version: u64,
    /// Any other validation failure (bad kind, bad lengths, bad fragment).
    pub malformed: u64,
    /// Refused: from a sender beyond [`ReceiverConfig::max_senders`] while
    /// no tracked sender was closed or idle (per source address:
    /// [`ReceiverSummary::refused`]).
    pub too_many_senders: u64,
}

impl InvalidCounts {
    /// All skipped datagrams.
    pub fn total(&self) -> u64 {
        self.not_qtrace
            + self.truncated
            + self.unsupported_version
            + self.malformed
            + self.too_many_senders
    }
}

/// Datagrams refused from one source address (the sender table was full).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefusedSource {
    /// Where they came from.
    pub addr: SocketAddr,
    /// The sender id in the first of them.
    pub sender: u32,
    /// Datagrams refused.
    pub datagrams: u64,
    /// Events those datagrams held.
    pub events: u64,
}

/// What the receiver saw from one sender.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SenderSummary {
    /// Where its datagrams came from.
    pub addr: SocketAddr,
    /// The sender id in its datagrams.
    pub sender: u32,
    /// Its queue handle and type, from its header, once received.
    pub queue: Option<(u16, String)>,
    /// Datagrams accepted (events, catalog and close; repeated close
    /// datagrams included).
    pub datagrams: u64,
    /// Event records received and written.
    pub events: u64,
    /// Datagrams never received (sequence numbers skipped and not filled in,
    /// and those after its last datagram that got in when the receiver
    /// refused some of them).
    pub lost_datagrams: u64,
    /// Events those datagrams held, exactly (as many hoops records say),
    /// plus the events of its datagrams the receiver refused (sender table
    /// full) after its last datagram that got in.
    pub lost_events: u64,
    /// Datagrams received twice (discarded).
    pub duplicates: u64,
    /// Datagrams that arrived after a later one (accepted).
    pub reordered: u64,
    /// Datagrams that arrived after they were given up on (beyond the
    /// reorder window), discarded: their events were counted lost.
    pub late: u64,
    /// Datagrams with an impossible sequence number, and catalog datagrams
    /// that did not decode (discarded).
    pub invalid: u64,
    /// Events the sender reported it dropped (its queue was full).
    pub sender_dropped: u64,
    /// Events the sender accepted but never sent (from its close datagram).
    pub unsent: u64,
    /// Whether its header (clock, host, class table) arrived.
    pub has_catalog: bool,
    /// Whether its close datagram arrived and was released: the stream
    /// ended honestly and [`SenderSummary::logged`] is known. `false`: the
    /// stream ended without a close (events after its last datagram that
    /// arrived are unknown).
    pub closed: bool,
    /// Every event the sender logged, from its close datagram.
    pub logged: Option<u64>,
}

impl SenderSummary {
    /// Every event the sender logged up to its last datagram that arrived:
    /// received, dropped by the sender, never sent, or lost in transit —
    /// each exactly. Equals [`SenderSummary::logged`] for a closed stream.
    pub fn accounted(&self) -> u64 {
        // Counts come from the network: saturate rather than overflow.
        self.events
            .saturating_add(self.sender_dropped)
            .saturating_add(self.lost_events)
            .saturating_add(self.unsent)
    }

    /// Events lost, all causes: dropped by the sender, never sent, lost in
    /// transit (each marked by hoops records in the trace).
    pub fn lost(&self) -> u64 {
        self.sender_dropped
            .saturating_add(self.lost_events)
            .saturating_add(self.unsent)
    }
}

/// The receiver's account.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReceiverSummary {
    /// One entry per sender stream (a restarted sender has one per
    /// incarnation), in order of first appearance.
    pub senders: Vec<SenderSummary>,
    /// Replaced senders whose accounts did not fit ([`MAX_RETIRED`]).
    pub retired_uncounted: u64,
    /// Datagrams skipped before reaching a sender's stream.
    pub invalid: InvalidCounts,
    /// Refused datagrams per source address (the first [`MAX_RETIRED`]
    /// addresses; the rest are in [`InvalidCounts::too_many_senders`] only).
    pub refused: Vec<RefusedSource>,
    /// Records written to the trace file (events and hoops), before the
    /// end records.
    pub records_written: u64,
    /// The trace file, if one was written.
    pub file: Option<PathBuf>,
    /// Why the trace file was not written to the end (a full disk, an I/O
    /// error): the receiver stopped early, the file is valid up to there.
    pub file_error: Option<String>,
    /// How long the receiver ran.
    pub elapsed: Duration,
}

impl ReceiverSummary {
    /// Events received from every sender.
    pub fn events(&self) -> u64 {
        self.senders
            .iter()
            .fold(0u64, |n, s| n.saturating_add(s.events))
    }
    /// Events every sender reported dropped.
    pub fn sender_dropped(&self) -> u64 {
        self.senders
            .iter()
            .fold(0u64, |n, s| n.saturating_add(s.sender_dropped))
    }
    /// Datagrams lost on the way, all senders.
    pub fn lost_datagrams(&self) -> u64 {
        self.senders
            .iter()
            .fold(0u64, |n, s| n.saturating_add(s.lost_datagrams))
    }
    /// Events lost on the way (in lost datagrams), all senders, exactly.
    pub fn lost_events(&self) -> u64 {
        self.senders
            .iter()
            .fold(0u64, |n, s| n.saturating_add(s.lost_events))
    }
}

impl fmt::Display for ReceiverSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.elapsed.as_secs_f64();
        writeln!(
            f,
            "received {} events from {} sender(s) in {:.3} s ({:.0} events/s)",
            self.events(),
            self.senders.len(),
            secs,
            if secs > 0.0 {
                self.events() as f64 / secs
            } else {
                0.0
            }
        )?;
        for s in &self.senders {
            let queue = match &s.queue {
                Some((h, t)) => format!("queue {h} ({t})"),
                None => "queue unknown (no header yet)".to_string(),
            };
            let end = match s.logged {
                Some(n) if s.closed => format!("closed: {n} events logged"),
                _ => "ended without a close (loss after its last datagram unknown)".to_string(),
            };
            writeln!(
                f,
                "  sender {:#010x} at {}, {}: {} datagrams, {} events, {} dropped by the sender, \
                 {} unsent, {} lost in transit ({} datagrams), {} duplicates, {} reordered, \
                 {} late, {} invalid; {end}",
                s.sender,
                s.addr,
                queue,
                s.datagrams,
                s.events,
                s.sender_dropped,
                s.unsent,
                s.lost_events,
                s.lost_datagrams,
                s.duplicates,
                s.reordered,
                s.late,
                s.invalid
            )?;
        }
        if self.retired_uncounted > 0 {
            writeln!(
                f,
                "  {} more replaced senders (accounts not kept)",
                self.retired_uncounted
            )?;
        }
        for r in &self.refused {
            writeln!(
                f,
                "  refused {} datagrams ({} events) from {} (sender {:#010x}): the sender table was full",
                r.datagrams, r.events, r.addr, r.sender
            )?;
        }
        let i = &self.invalid;
        write!(
            f,
            "  skipped datagrams: {} not qtrace, {} truncated, {} unsupported version, {} malformed, {} refused (sender table full)",
            i.not_qtrace, i.truncated, i.unsupported_version, i.malformed, i.too_many_senders
        )?;
        if let Some(p) = &self.file {
            write!(
                f,
                "\n  wrote {} records to {}",
                self.records_written,
                p.display()
            )?;
        }
        if let Some(e) = &self.file_error {
            write!(
                f,
                "\n  stopped early: {e}; the file is valid up to there and reads as cut short"
            )?;
        }
        Ok(())
    }
}

/// One sender's state.
#[derive(Debug)]
struct SenderState {
    addr: SocketAddr,
    sender: u32,
    /// Order of first appearance (for the summary).
    ordinal: u64,
    /// Sequence state; holds datagrams (their bytes) that arrived early.
    seq: SequenceTracker<Box<[u8]>>,
    assembler: CatalogAssembler,
    header: Option<TraceHeader>,
    datagrams: u64,
    events: u64,
    invalid: u64,
    dropped: u64,
    unsent: u64,
    /// The close datagram's number, once one arrived (repeats are counted,
    /// not tracked).
    close_seq: Option<u64>,
    /// The close datagram's counts, once it was released.
    closed: Option<CloseCounts>,
    /// The time of the last event written (the time of a loss after it).
    last_time: u64,
    /// The core's datagram count at this sender's last datagram.
    last_seen: u64,
    /// The end (first event + events) of the furthest datagram of this
    /// stream refused while it had no slot; if its numbering never reaches
    /// there, the rest is marked lost when the stream ends
    /// ([`SenderState::mark_refused`]).
    refused_end: u64,
    /// The number after the furthest such datagram.
    refused_next: u64,
    /// Events of refused datagrams marked lost that way, and the datagrams
    /// (numbers never released) they were in.
    refused_lost: u64,
    refused_lost_datagrams: u64,
    /// Whether the unclosed-stream mark was written
    /// ([`SenderState::mark_unclosed`]).
    unclosed_marked: bool,
}

impl SenderState {
    fn new(addr: SocketAddr, sender: u32, ordinal: u64, clock: u64, limits: Limits) -> Self {
        SenderState {
            addr,
            sender,
            ordinal,
            seq: SequenceTracker::new(limits),
            assembler: CatalogAssembler::new(),
            header: None,
            datagrams: 0,
            events: 0,
            invalid: 0,
            dropped: 0,
            unsent: 0,
            close_seq: None,
            closed: None,
            last_time: 0,
            last_seen: clock,
            refused_end: 0,
            refused_next: 0,
            refused_lost: 0,
            refused_lost_datagrams: 0,
            unclosed_marked: false,
        }
    }

    fn queue_handle(&self) -> u64 {
        self.header
            .as_ref()
            .and_then(|h| h.queue())
            .map_or(NO_QUEUE as u64, |(q, _)| q.0 as u64)
    }

    fn hoops(&self, lost: u64) -> Event {
        Event::new(self.last_time, HOOPS, u32::MAX, [lost, self.queue_handle()])
    }

    /// Whether datagram `header` from this sender's address starts a new
    /// incarnation (a sender restarted with the same id on the same port):
    /// it has no event before it (first event 0), the stream is under way,
    /// and either the stream's close was released (then any such datagram
    /// but a copy of the close), or it is numbered 0 and the stream's close
    /// arrived or the stream is more than [`sequence::WINDOW`] numbers
    /// further.
    fn restarts(&self, header: &DatagramHeader) -> bool {
        if header.first_event != 0 || self.seq.next_expected() == 0 {
            return false;
        }
        if self.closed.is_some() {
            return !(header.kind == DatagramKind::Close
                && self.close_seq == Some(header.sequence));
        }
        header.sequence == 0
            && (self.close_seq.is_some() || self.seq.next_expected() > sequence::WINDOW)
    }

    /// Writes one datagram released in sequence order: the hoops record for
    /// the events lost just before it, its events or catalog fragment, then
    /// a hoops record for drops it reports.
    fn release(&mut self, gap: Gap, bytes: &[u8], cx: &mut Context<'_>) {
        if gap.events > 0 {
            cx.progress
                .lost_events
                .fetch_add(gap.events, Ordering::Relaxed);
            cx.out.event(&self.hoops(gap.events));
        }
        // Held datagrams were checked when they arrived.
        let Ok(view) = DatagramView::new_checked(bytes) else {
            return;
        };
        let header = view.header();
        match header.kind {
            DatagramKind::Events => {
                let n = view.record_count() as u64;
                // The view checked the length: exactly `n` records follow
                // the header. They go on as they are (big-endian records).
                let raw = bytes.get(HEADER_LEN..).unwrap_or_default();
                for c in raw.chunks_exact(RECORD_LEN) {
                    let mut t = [0u8; 8];
                    t.copy_from_slice(&c[..8]);
                    self.last_time = self.last_time.max(u64::from_be_bytes(t));
                }
                cx.out.records(raw);
                self.events += n;
                cx.progress.events.fetch_add(n, Ordering::Relaxed);
            }
            DatagramKind::Catalog => {
                if let Some(fragment) = view.fragment() {
                    if fragment.total_len as usize > cx.max_catalog {
                        self.invalid += 1;
                    } else {
                        match self.assembler.push(&fragment) {
                            Ok(Some(h)) => {
                                if cx.first_header.is_none() {
                                    *cx.first_header = Some(h.clone());
                                    *cx.header_gen += 1;
                                }
                                self.header = Some(h);
                            }
                            Ok(None) => {}
                            Err(_) => self.invalid += 1,
                        }
                    }
                }
            }
            DatagramKind::Close => {
                if let Some(counts) = view.close() {
                    if counts.unsent > 0 {
                        self.unsent = counts.unsent;
                        cx.progress
                            .unsent
                            .fetch_add(counts.unsent, Ordering::Relaxed);
                        cx.out.event(&self.hoops(counts.unsent));
                    }
                    self.closed = Some(counts);
                }
            }
        }
        if header.dropped > self.dropped {
            let new = header.dropped - self.dropped;
            self.dropped = header.dropped;
            // Saturating, as the summary: the count comes from the network.
            // Only the receiving thread writes it (`handle` takes `&mut`), so
            // a load and a store suffice (no deprecated `fetch_update`).
            let p = &cx.progress.sender_dropped;
            p.store(
                p.load(Ordering::Relaxed).saturating_add(new),
                Ordering::Relaxed,
            );
            cx.out.event(&self.hoops(new));
        }
    }

    /// Releases the held datagrams that can go (all of them if `flush`).
    fn release_held(&mut self, flush: bool, cx: &mut Context<'_>) {
        while let Some((gap, bytes)) = self.seq.pop(flush) {
            self.release(gap, &bytes, cx);
        }
    }

    /// At the end of the stream: the events of datagrams refused while it
    /// had no slot that no gap of its numbering counted (they came after
    /// its last datagram released) are lost: one hoops record.
    fn mark_refused(&mut self, cx: &mut Context<'_>) {
        let accounted = self.seq.events_accounted();
        if self.refused_end > accounted {
            let lost = self.refused_end - accounted;
            self.refused_end = 0;
            self.refused_lost = self.refused_lost.saturating_add(lost);
            self.refused_lost_datagrams = self
                .refused_lost_datagrams
                .saturating_add(self.refused_next.saturating_sub(self.seq.next_expected()));
            cx.progress.lost_events.fetch_add(lost, Ordering::Relaxed);
            cx.out.event(&self.hoops(lost));
        }
    }

    /// At the end of the stream, after everything else of it was written:
    /// if no close datagram was released, the unclosed-stream mark
    /// (FORMAT.md 1.5, 3.3 item 6) — the events the sender logged after its
    /// last datagram that arrived are lost without a count. Written once.
    fn mark_unclosed(&mut self, cx: &mut Context<'_>) {
        if self.closed.is_some() || self.unclosed_marked {
            return;
        }
        self.unclosed_marked = true;
        let accounted = self.summary().accounted();
        cx.out
            .event(&unclosed_mark(self.last_time, self.sender, accounted));
    }

    fn summary(&self) -> SenderSummary {
        let c = self.seq.counts();
        SenderSummary {
            addr: self.addr,
            sender: self.sender,
            queue: self
                .header
                .as_ref()
                .and_then(|h| h.queue())
                .map(|(q, t)| (q.0, t.to_string())),
            datagrams: self.datagrams,
            events: self.events,
            lost_datagrams: self.seq.lost().saturating_add(self.refused_lost_datagrams),
            lost_events: c.lost_events.saturating_add(self.refused_lost),
            duplicates: c.duplicates,
            reordered: c.reordered,
            late: c.too_late,
            invalid: self.invalid + c.implausible,
            sender_dropped: self.dropped,
            unsent: self.unsent,
            has_catalog: self.header.is_some(),
            closed: self.closed.is_some(),
            logged: self.closed.map(|c| c.logged),
        }
    }
}

/// Live counters of a running receiver, readable from other threads (for
/// progress displays and flow control in tests).
#[derive(Debug, Default)]
pub struct Progress {
    datagrams: AtomicU64,
    events: AtomicU64,
    sender_dropped: AtomicU64,
    lost_events: AtomicU64,
    unsent: AtomicU64,
    invalid: AtomicU64,
}

impl Progress {
    /// Datagrams accepted so far.
    pub fn datagrams(&self) -> u64 {
        self.datagrams.load(Ordering::Relaxed)
    }
    /// Events received so far.
    pub fn events(&self) -> u64 {
        self.events.load(Ordering::Relaxed)
    }
    /// Events the senders reported dropped so far.
    pub fn sender_dropped(&self) -> u64 {
        self.sender_dropped.load(Ordering::Relaxed)
    }
    /// Events lost in transit so far (in datagrams given up on).
    pub fn lost_events(&self) -> u64 {
        self.lost_events.load(Ordering::Relaxed)
    }
    /// Events the senders' close datagrams said they never sent, so far.
    pub fn unsent(&self) -> u64 {
        self.unsent.load(Ordering::Relaxed)
    }
    /// Events accounted for so far: received, or marked lost (in transit,
    /// dropped or never sent by their sender). What
    /// [`RunLimit::events`] counts.
    pub fn accounted(&self) -> u64 {
        self.events()
            .saturating_add(self.sender_dropped())
            .saturating_add(self.lost_events())
            .saturating_add(self.unsent())
    }
    /// Datagrams skipped so far (invalid, duplicate, late, refused).
    pub fn invalid(&self) -> u64 {
        self.invalid.load(Ordering::Relaxed)
    }
}

/// Where the core's records go: decoded events, or raw big-endian records
/// straight from a datagram (so a file writer copies them without decoding).
trait Sink {
    fn event(&mut self, e: &Event);
    fn records(&mut self, raw: &[u8]);
    /// Called after every datagram and every idle wait (about 20 ms);
    /// `false` stops the receiver (the sink cannot take more).
    fn tick(&mut self, _core: &ReceiverCore) -> bool {
        true
    }
}

/// What releasing a sender's datagram needs besides the sender.
struct Context<'a> {
    out: &'a mut dyn Sink,
    progress: &'a Progress,
    first_header: &'a mut Option<TraceHeader>,
    header_gen: &'a mut u64,
    max_catalog: usize,
}

/// The [`Context`] of a [`ReceiverCore`] (`$core`) writing to `$out`: a
/// macro, not a method, so that the core's sender table stays free to
/// borrow at the same time.
macro_rules! context {
    ($core:expr, $out:expr) => {
        Context {
            out: $out,
            progress: &$core.progress,
            first_header: &mut $core.first_header,
            header_gen: &mut $core.header_gen,
            max_catalog: $core.config.max_catalog_len,
        }
    };
}

/// A sink that hands every record to a closure as an [`Event`].
struct EachEvent<'a>(&'a mut dyn FnMut(&Event));

impl Sink for EachEvent<'_> {
    fn event(&mut self, e: &Event) {
        (self.0)(e)
    }
    fn records(&mut self, raw: &[u8]) {
        for c in raw.chunks_exact(RECORD_LEN) {
            if let Ok(rec) = <&[u8; RECORD_LEN]>::try_from(c) {
                (self.0)(&record::parse(rec));
            }
        }
    }
}

/// The receiver's logic without a socket: feed it datagrams with
/// [`ReceiverCore::handle`], collect the records it hands out.
#[derive(Debug)]
pub struct ReceiverCore {
    config: ReceiverConfig,
    senders: Vec<SenderState>,
    /// Replaced senders that may resume (oldest first).
    parked: Vec<SenderState>,
    /// Finished streams (restarted senders' earlier incarnations, parked
    /// senders pushed out): (ordinal, account).
    retired: Vec<(u64, SenderSummary)>,
    retired_uncounted: u64,
    refused: Vec<RefusedSource>,
    /// Per entry of `refused`: events not yet claimed by a stream that got
    /// a slot later, and the end (first event + events) of its furthest
    /// refused datagram.
    refused_unclaimed: Vec<(u64, u64)>,
    /// The first sender header that arrived, for the received file.
    first_header: Option<TraceHeader>,
    /// Changes whenever [`ReceiverCore::trace_header`] would change.
    header_gen: u64,
    /// Sender streams seen so far (tracked, parked, retired and uncounted).
    senders_seen: u64,
    /// Datagrams handled (a logical clock for idleness).
    clock: u64,
    invalid: InvalidCounts,
    progress: Arc<Progress>,
}

impl ReceiverCore {
    /// A receiver core with `config`'s limits.
    pub fn new(config: ReceiverConfig) -> Self {
        ReceiverCore {
            config,
            senders: Vec::new(),
            parked: Vec::new(),
            retired: Vec::new(),
            retired_uncounted: 0,
            refused: Vec::new(),
            refused_unclaimed: Vec::new(),
            first_header: None,
            header_gen: 0,
            senders_seen: 0,
            clock: 0,
            invalid: InvalidCounts::default(),
            progress: Arc::default(),
        }
    }

    /// The live counters.
    pub fn progress(&self) -> Arc<Progress> {
        Arc::clone(&self.progress)
    }

    /// Handles one datagram from `from`; every record to write (events, and
    /// hoops records where losses are detected) goes to `out`, in order.
    pub fn handle(&mut self, from: SocketAddr, bytes: &[u8], out: &mut dyn FnMut(&Event)) {
        self.handle_into(from, bytes, &mut EachEvent(out))
    }

    /// Counts a new stream; returns its ordinal.
    fn count_stream(&mut self) -> u64 {
        self.senders_seen += 1;
        if self.senders_seen == 2 && self.first_header.is_some() {
            // The file's header loses its queue: it is no longer one sender's.
            self.header_gen += 1;
        }
        self.senders_seen
    }

    /// A new stream's state, counted as a sender seen.
    fn fresh(&mut self, from: SocketAddr, sender: u32) -> SenderState {
        let ordinal = self.count_stream();
        SenderState::new(from, sender, ordinal, self.clock, self.config.reorder)
    }

    /// Ends a stream for good: what it held is written, the events of its
    /// refused datagrams that no gap counted are marked lost, its account
    /// kept.
    fn retire(&mut self, mut old: SenderState, out: &mut dyn Sink) {
        let mut cx = context!(self, out);
        old.release_held(true, &mut cx);
        old.mark_refused(&mut cx);
        old.mark_unclosed(&mut cx);
        if self.retired.len() < MAX_RETIRED {
            self.retired.push((old.ordinal, old.summary()));
        } else {
            self.retired_uncounted += 1;
        }
    }

    /// Parks a replaced sender: what it held is written; it resumes where it
    /// stopped if it sends again.
    fn park(&mut self, mut old: SenderState, out: &mut dyn Sink) {
        if old.closed.is_some() {
            return self.retire(old, out);
        }
        old.release_held(true, &mut context!(self, out));
        old.assembler = CatalogAssembler::new();
        if self.parked.len() >= MAX_RETIRED {
            let oldest = self.parked.remove(0);
            self.retire(oldest, out);
        }
        self.parked.push(old);
    }

    /// Puts `state` in the sender table, replacing a closed or idle sender
    /// if the table is full; the state back if no slot can be had.
    fn admit(&mut self, state: SenderState, out: &mut dyn Sink) -> Result<usize, Box<SenderState>> {
        if self.senders.len() < self.config.max_senders {
            self.senders.push(state);
            return Ok(self.senders.len() - 1);
        }
        let closed = self
            .senders
            .iter()
            .position(|s| s.closed.is_some() && s.seq.held() == 0);
        let victim = closed.or_else(|| {
            self.senders
                .iter()
                .enumerate()
                .min_by_key(|(_, s)| s.last_seen)
                .filter(|(_, s)| self.clock - s.last_seen >= self.config.idle_datagrams)
                .map(|(i, _)| i)
        });
        let Some(i) = victim else {
            return Err(Box::new(state));
        };
        let old = std::mem::replace(&mut self.senders[i], state);
        self.park(old, out);
        Ok(i)
    }

    /// Counts a refused datagram against its source address. `end` is the
    /// end of its events in the sender's numbering; `claimed`: a stream
    /// state (parked) accounts for them, else they wait for one that gets
    /// a slot later or are marked lost when the receiver stops.
    fn refuse(&mut self, from: SocketAddr, sender: u32, events: u64, end: u64, claimed: bool) {
        self.invalid.too_many_senders += 1;
        self.progress.invalid.fetch_add(1, Ordering::Relaxed);
        let i = match self
            .refused
            .iter()
            .position(|r| r.addr == from && r.sender == sender)
        {
            Some(i) => {
                let r = &mut self.refused[i];
                r.datagrams += 1;
                r.events = r.events.saturating_add(events);
                i
            }
            None if self.refused.len() < MAX_RETIRED => {
                self.refused.push(RefusedSource {
                    addr: from,
                    sender,
                    datagrams: 1,
                    events,
                });
                self.refused_unclaimed.push((0, 0));
                self.refused.len() - 1
            }
            None => return,
        };
        if !claimed {
            let (unclaimed, furthest) = &mut self.refused_unclaimed[i];
            *unclaimed = unclaimed.saturating_add(events);
            *furthest = (*furthest).max(end);
        }
    }

    /// The table slot of the stream datagram `header` from `from` belongs
    /// to, taking one if needed; `None` when it is refused.
    fn slot(
        &mut self,
        from: SocketAddr,
        header: &DatagramHeader,
        events: u64,
        out: &mut dyn Sink,
    ) -> Option<usize> {
        if let Some(i) = self.senders.iter().position(|s| s.sender == header.sender) {
            let s = &self.senders[i];
            if s.addr == from && !s.restarts(header) {
                return Some(i);
            }
            // A restarted sender (new port, or numbering from 0 again):
            // its earlier incarnation ends here, and it keeps the slot.
            let fresh = self.fresh(from, header.sender);
            let old = std::mem::replace(&mut self.senders[i], fresh);
            self.retire(old, out);
            return Some(i);
        }
        let state = match self.parked.iter().position(|s| s.sender == header.sender) {
            Some(p) => {
                let old = self.parked.remove(p);
                if old.addr == from && !old.restarts(header) {
                    old
                } else {
                    self.retire(old, out);
                    self.fresh(from, header.sender)
                }
            }
            None => {
                // Not counted as seen until it gets a slot.
                SenderState::new(from, header.sender, 0, self.clock, self.config.reorder)
            }
        };
        let new = state.ordinal == 0;
        let end = header.first_event.saturating_add(events);
        match self.admit(state, out) {
            Ok(i) => {
                if new {
                    self.senders[i].ordinal = self.count_stream();
                    claim_refused(
                        &self.refused,
                        &mut self.refused_unclaimed,
                        &mut self.senders[i],
                    );
                }
                Some(i)
            }
            Err(mut state) => {
                if !new {
                    // A parked sender that could not resume stays parked,
                    // and accounts for the refused events itself.
                    state.refused_end = state.refused_end.max(end);
                    state.refused_next = state.refused_next.max(header.sequence.saturating_add(1));
                    self.parked.push(*state);
                }
                self.refuse(from, header.sender, events, end, !new);
                None
            }
        }
    }

    fn handle_into(&mut self, from: SocketAddr, bytes: &[u8], out: &mut dyn Sink) {
        self.clock += 1;
        let view = match DatagramView::new_checked(bytes) {
            Ok(v) => v,
            Err(e) => {
                match e {
                    WireError::BadMagic { .. } => self.invalid.not_qtrace += 1,
                    WireError::Truncated { .. } => self.invalid.truncated += 1,
                    WireError::UnsupportedVersion { .. } => self.invalid.unsupported_version += 1,
                    _ => self.invalid.malformed += 1,
                }
                self.progress.invalid.fetch_add(1, Ordering::Relaxed);
                return;
            }
        };
        let header = view.header();
        let events = view.record_count() as u64;
        let Some(index) = self.slot(from, &header, events, out) else {
            return;
        };
        let s = &mut self.senders[index];
        s.last_seen = self.clock;
        if header.kind == DatagramKind::Close {
            if s.close_seq == Some(header.sequence) {
                // A repeated close (sent 2 ms after the first): counted, and
                // what is still missing before the close is given up on —
                // the stream is over.
                s.datagrams += 1;
                self.progress.datagrams.fetch_add(1, Ordering::Relaxed);
                if s.closed.is_none() {
                    s.release_held(true, &mut context!(self, out));
                }
                return;
            }
            if s.close_seq.is_none() {
                s.close_seq = Some(header.sequence);
            }
        }
        let span = Span {
            first_event: header.first_event,
            events,
            bytes: bytes.len(),
        };
        let (verdict, now) = s.seq.observe(header.sequence, span, || bytes.into());
        if !verdict.accepted() {
            self.progress.invalid.fetch_add(1, Ordering::Relaxed);
            return;
        }
        s.datagrams += 1;
        self.progress.datagrams.fetch_add(1, Ordering::Relaxed);
        let mut cx = context!(self, out);
        if let Some(gap) = now {
            s.release(gap, bytes, &mut cx);
        }
        s.release_held(false, &mut cx);
    }

    /// Ends every sender's stream: held datagrams are written, and datagrams
    /// still missing before them are lost (their hoops records go to `out`),
    /// as are the events of a sender's refused datagrams that came after its
    /// last one that got in (a hoops record of its queue); each stream
    /// (tracked or parked) that ended without its close datagram then gets
    /// its unclosed-stream mark (FORMAT.md 1.5, 3.3 item 6; once per
    /// stream); then one hoops record per refused source address whose
    /// sender never got a slot.
    pub fn finish(&mut self, out: &mut dyn FnMut(&Event)) {
        self.finish_into(&mut EachEvent(out))
    }

    fn finish_into(&mut self, out: &mut dyn Sink) {
        let mut cx = context!(self, out);
        let mut time = 0;
        for s in &mut self.senders {
            s.release_held(true, &mut cx);
            s.mark_refused(&mut cx);
            s.mark_unclosed(&mut cx);
            time = time.max(s.last_time);
        }
        for s in &mut self.parked {
            s.mark_refused(&mut cx);
            s.mark_unclosed(&mut cx);
            time = time.max(s.last_time);
        }
        // Refused events no stream claimed: their sender never got a slot.
        for (events, _) in &mut self.refused_unclaimed {
            if *events > 0 {
                cx.out.event(&Event::new(
                    time,
                    HOOPS,
                    u32::MAX,
                    [*events, NO_QUEUE as u64],
                ));
                *events = 0;
            }
        }
    }

    /// The account so far.
    pub fn summary(&self) -> ReceiverSummary {
        let mut senders: Vec<(u64, SenderSummary)> = self
            .retired
            .iter()
            .cloned()
            .chain(
                self.parked
                    .iter()
                    .chain(self.senders.iter())
                    .map(|s| (s.ordinal, s.summary())),
            )
            .collect();
        senders.sort_by_key(|(n, _)| *n);
        ReceiverSummary {
            senders: senders.into_iter().map(|(_, s)| s).collect(),
            retired_uncounted: self.retired_uncounted,
            invalid: self.invalid,
            refused: self.refused.clone(),
            ..ReceiverSummary::default()
        }
    }

    /// The header for the received trace: the sender's (its pid, clock,
    /// host, queue and class table) when one sender was seen; the first
    /// sender's without its queue when several were; the built-in classes
    /// and this process's clock while no header has arrived.
    pub fn trace_header(&self) -> TraceHeader {
        match &self.first_header {
            Some(h) if self.senders_seen == 1 => h.clone(),
            Some(h) => h.clone().without_queue(),
            None => TraceHeader::new(Catalog::builtin(), &Clock::monotonic()).without_queue(),
        }
    }

    /// The latest event time written, all senders.
    fn last_time(&self) -> u64 {
        self.senders
            .iter()
            .chain(self.parked.iter())
            .map(|s| s.last_time)
            .max()
            .unwrap_or(0)
    }

    /// A number that changes whenever [`ReceiverCore::trace_header`] would.
    pub fn header_generation(&self) -> u64 {
        self.header_gen
    }
}

/// A stream that got a slot after datagrams from its address and id were
/// refused accounts for them itself (a gap in its numbering, or marked lost
/// at its end by [`SenderState::mark_refused`]).
fn claim_refused(refused: &[RefusedSource], unclaimed: &mut [(u64, u64)], state: &mut SenderState) {
    for (r, (events, furthest)) in refused.iter().zip(unclaimed) {
        if r.addr == state.addr && r.sender == state.sender && *events > 0 {
            state.refused_end = state.refused_end.max(*furthest);
            *events = 0;
        }
    }
}

/// When [`Receiver::run`] stops. With no limit at all it runs until
/// [`Stopper::stop`] is called.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunLimit {
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Stop once this many events are accounted for: received, or marked
    /// lost (in transit, dropped or never sent by their sender; see
    /// [`Progress::accounted`]), so a lossy stream still reaches the count.
    /// Events lost after a sender's last datagram count once its close
    /// datagram arrives; add a duration so a stream that ends without one
    /// cannot keep the receiver waiting.
    pub events: Option<u64>,
}

impl RunLimit {
    /// Run for `d`.
    pub fn duration(d: Duration) -> Self {
        RunLimit {
            duration: Some(d),
            events: None,
        }
    }
    /// Run until `n` events are accounted for (received or marked lost).
    pub fn events(n: u64) -> Self {
        RunLimit {
            duration: None,
            events: Some(n),
        }
    }
    /// Also stop after `d`: whichever comes first.
    ///
    /// ```
    /// use qtrace::receiver::RunLimit;
    /// use std::time::Duration;
    ///
    /// let limit = RunLimit::events(1000).or_after(Duration::from_secs(5));
    /// assert_eq!((limit.events, limit.duration), (Some(1000), Some(Duration::from_secs(5))));
    /// ```
    pub fn or_after(mut self, d: Duration) -> Self {
        self.duration = Some(d);
        self
    }
}

/// Stops a running [`Receiver`] from another thread.
#[derive(Clone, Debug, Default)]
pub struct Stopper(Arc<AtomicBool>);

impl Stopper {
    /// Asks the receiver to stop (within about 20 ms); it then writes its
    /// file and returns its summary.
    pub fn stop(&self) {
        self.0.store(true, Ordering::Release);
    }
}

/// A bound UDP socket and a [`ReceiverCore`].
#[derive(Debug)]
pub struct Receiver {
    socket: UdpSocket,
    core: ReceiverCore,
    stop: Stopper,
}

impl Receiver {
    /// Binds to `addr` with the default limits. Port 0 lets the system choose
    /// (see [`Receiver::local_addr`]).
    pub fn bind(addr: SocketAddr) -> Result<Self, IoError> {
        Receiver::bind_with(addr, ReceiverConfig::default())
    }

    /// Binds to `addr` with `config`'s limits.
    pub fn bind_with(addr: SocketAddr, config: ReceiverConfig) -> Result<Self, IoError> {
        let io_err = |action: &'static str, e: io::Error| IoError {
            path: None,
            action,
            source: io::Error::new(e.kind(), format!("{addr}: {e}{}", bind_hint(&e))),
        };
        let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
            .map_err(|e| io_err("open a UDP socket to receive on", e))?;
        if addr.is_ipv6() {
            let _ = socket.set_only_v6(true);
        }
        let _ = socket.set_recv_buffer_size(config.recv_buffer);
        socket
            .bind(&SockAddr::from(addr))
            .map_err(|e| io_err("bind the receiver to", e))?;
        let socket: UdpSocket = socket.into();
        socket
            .set_read_timeout(Some(Duration::from_millis(20)))
            .map_err(|e| io_err("configure the receiver socket", e))?;
        Ok(Receiver {
            socket,
            core: ReceiverCore::new(config),
            stop: Stopper::default(),
        })
    }

    /// The address the receiver listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.socket
            .local_addr()
            .expect("a bound socket has an address")
    }

    /// A handle that stops [`Receiver::run`] from another thread.
    pub fn stopper(&self) -> Stopper {
        self.stop.clone()
    }

    /// Live counters, readable while [`Receiver::run`] runs.
    pub fn progress(&self) -> Arc<Progress> {
        self.core.progress()
    }

    /// Receives until `limit` (or the [`Stopper`]) says stop, handing every
    /// record to `out`. Returns the account.
    pub fn run_with(
        &mut self,
        limit: RunLimit,
        out: &mut dyn FnMut(&Event),
    ) -> Result<ReceiverSummary, IoError> {
        self.run_into(limit, &mut EachEvent(out))
    }

    fn run_into(
        &mut self,
        limit: RunLimit,
        out: &mut dyn Sink,
    ) -> Result<ReceiverSummary, IoError> {
        let start = Instant::now();
        let mut buf = vec![0u8; MAX_DATAGRAM_LEN + 1];
        loop {
            if self.stop.0.load(Ordering::Acquire) {
                break;
            }
            if limit.duration.is_some_and(|d| start.elapsed() >= d) {
                break;
            }
            if limit
                .events
                .is_some_and(|n| self.core.progress.accounted() >= n)
            {
                break;
            }
            match self.socket.recv_from(&mut buf) {
                Ok((n, from)) => self.core.handle_into(from, &buf[..n], out),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                            | io::ErrorKind::ConnectionRefused
                            | io::ErrorKind::ConnectionReset
                    ) => {}
                Err(e) => {
                    return Err(IoError {
                        path: None,
                        action: "receive datagrams",
                        source: e,
                    })
                }
            }
            if !out.tick(&self.core) {
                break;
            }
        }
        self.core.finish_into(out);
        out.tick(&self.core);
        let mut summary = self.core.summary();
        summary.elapsed = start.elapsed();
        Ok(summary)
    }

    /// Receives until `limit` (or the [`Stopper`]) says stop, writing what
    /// arrives to the trace file `path` as it arrives, then returns the
    /// account.
    ///
    /// The file is a valid trace at every moment: it starts with a
    /// provisional header whose length reserves
    /// [`ReceiverConfig::header_room`] bytes; the sender's header (its pid,
    /// clock, host, queue and classes) replaces it in place, in one write,
    /// when its catalog arrives (or the file is rewritten to a copy renamed
    /// over it when the header does not fit). Records are written in whole
    /// records at least every 50 ms, so after a crash of the receiver (even
    /// SIGKILL) the file reads as a trace of every record written, cut
    /// short. On Linux 256 KiB stay allocated past the end of the file, so
    /// a full disk is seen before a write fails and the end still fits.
    ///
    /// A full disk or another write error stops the receiver early: the
    /// file keeps every whole record written, and the summary says why
    /// ([`ReceiverSummary::file_error`]); this is not an `Err`, so the
    /// account is never lost.
    ///
    /// # Errors
    /// [`IoError`] when the file cannot be created or the socket fails.
    pub fn run(
        mut self,
        path: impl AsRef<Path>,
        limit: RunLimit,
    ) -> Result<ReceiverSummary, IoError> {
        let path = path.as_ref();
        let header = self.core.trace_header();
        let live = LiveFile::create(path, &header, self.core.config.header_room)?;
        let mut out = FileSink {
            file: live,
            header_gen: self.core.header_generation(),
        };
        let mut summary = self.run_into(limit, &mut out)?;
        let FileSink { file: mut live, .. } = out;
        let received = summary.events();
        let totals = QueueTotals {
            accepted: received,
            dropped: live.lost(),
            overwritten: 0,
            delivered: received,
        };
        live.finish(self.core.last_time(), totals);
        summary.records_written = live.records_written();
        summary.file_error = live.failure().map(str::to_string);
        summary.file = Some(path.to_path_buf());
        Ok(summary)
    }
}

/// What to do about a failed bind, by error: placed after the address and
/// the system's message.
fn bind_hint(e: &io::Error) -> &'static str {
    match e.kind() {
        io::ErrorKind::AddrInUse => {
            " (address in use: is another receiver running there? pick another port)"
        }
        io::ErrorKind::AddrNotAvailable => {
            " (address not available: that IP address is not one of this machine's; \
             listen on one of its addresses, 0.0.0.0 or [::])"
        }
        io::ErrorKind::PermissionDenied => {
            " (permission denied: ports below 1024 need privileges; pick a port of 1024 or more)"
        }
        _ => "",
    }
}

/// Records written to the live trace file.
struct FileSink {
    file: LiveFile,
    header_gen: u64,
}

impl Sink for FileSink {
    fn event(&mut self, e: &Event) {
        let mut rec = [0u8; RECORD_LEN];
        record::emit(e, &mut rec);
        self.file.push(&rec);
    }
    fn records(&mut self, raw: &[u8]) {
        self.file.push(raw);
    }
    fn tick(&mut self, core: &ReceiverCore) -> bool {
        if core.header_generation() != self.header_gen {
            self.header_gen = core.header_generation();
            self.file.set_header(&core.trace_header());
        }
        self.file.tick();
        self.file.failure().is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bind_error_has_its_own_hint() {
        let hint = |kind| bind_hint(&io::Error::from(kind));
        assert_eq!(
            hint(io::ErrorKind::AddrInUse),
            " (address in use: is another receiver running there? pick another port)"
        );
        assert_eq!(
            hint(io::ErrorKind::AddrNotAvailable),
            " (address not available: that IP address is not one of this machine's; \
             listen on one of its addresses, 0.0.0.0 or [::])"
        );
        assert!(hint(io::ErrorKind::PermissionDenied).contains("ports below 1024"));
        assert_eq!(hint(io::ErrorKind::Other), "");
    }
}
