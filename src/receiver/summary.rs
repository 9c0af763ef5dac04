//! What a receiver run accounts for: per sender and in total (the summary `qtrace recv` prints).

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use super::rejection::{RejectedSource, RejectionCounts};

/// Datagrams that were skipped before they could be tied to a sender's
/// stream.
///
/// ```
/// use qtrace::receiver::{ReceiverConfig, ReceiverCore};
///
/// let mut core = ReceiverCore::new(ReceiverConfig::default());
/// let from = "127.0.0.1:40000".parse().unwrap();
/// core.handle(from, b"GET / HTTP/1.1", &mut |_| {}); // not a qtrace datagram
/// core.handle(from, b"QTRU", &mut |_| {}); // cut short
/// let invalid = core.summary().invalid;
/// assert_eq!((invalid.not_qtrace, invalid.truncated, invalid.total()), (1, 1, 2));
/// ```
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
    /// Refused: from a sender beyond [`ReceiverConfig::max_senders`](super::ReceiverConfig::max_senders) while
    /// no tracked sender was closed or idle (per source address:
    /// [`ReceiverSummary::refused`]).
    pub too_many_senders: u64,
    /// Rejected before they touched a sender's stream: forged, keyed with
    /// another key, replayed, counters going backwards, after a close (per
    /// source address: [`ReceiverSummary::rejected`]).
    pub rejected: RejectionCounts,
}

impl InvalidCounts {
    /// All skipped datagrams.
    pub fn total(&self) -> u64 {
        self.not_qtrace
            + self.truncated
            + self.unsupported_version
            + self.malformed
            + self.too_many_senders
            + self.rejected.total()
    }
}

/// Datagrams refused from one source address (the sender table was full).
///
/// ```
/// use qtrace::classes::system;
/// use qtrace::receiver::{ReceiverConfig, ReceiverCore};
/// # use qtrace::Event;
/// # use qtrace_core::encode::datagram::{DatagramHeader, DatagramKind};
/// # /// An events datagram of sender 7 (FORMAT.md 3): the header, the records.
/// # fn datagram(sequence: u64, first_event: u64, events: &[Event]) -> Vec<u8> {
/// #     let header = DatagramHeader { kind: DatagramKind::Events, sender: 7, sequence, dropped: 0, first_event };
/// #     let mut head = [0u8; 40];
/// #     header.emit(events.len() as u16, &mut head);
/// #     let mut bytes = head.to_vec();
/// #     for e in events {
/// #         let mut record = [0u8; 32];
/// #         qtrace_core::encode::record::emit(e, &mut record);
/// #         bytes.extend_from_slice(&record);
/// #     }
/// #     bytes
/// # }
/// // One slot, and a tracked sender is never idle enough to be replaced.
/// let config = ReceiverConfig { max_senders: 1, idle_datagrams: u64::MAX, ..ReceiverConfig::default() };
/// let mut core = ReceiverCore::new(config);
/// let e = Event::new(1, system::SCHEDULE, 0, [1, 0]);
/// core.handle("127.0.0.1:40000".parse().unwrap(), &datagram(0, 0, &[e]), &mut |_| {});
/// let other = "127.0.0.1:40001".parse().unwrap();
/// let mut second = datagram(0, 0, &[e, e]);
/// second[8..12].copy_from_slice(&8u32.to_be_bytes()); // sender 8 (FORMAT.md 3.1)
/// core.handle(other, &second, &mut |_| {});
/// let summary = core.summary();
/// assert_eq!(summary.invalid.too_many_senders, 1);
/// let refused = summary.refused[0];
/// assert_eq!((refused.addr, refused.sender, refused.datagrams, refused.events), (other, 8, 1, 2));
/// ```
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
///
/// ```
/// use qtrace::classes::system;
/// use qtrace::receiver::{ReceiverConfig, ReceiverCore};
/// # use qtrace::Event;
/// # use qtrace_core::encode::datagram::{DatagramHeader, DatagramKind};
/// # /// An events datagram of sender 7 (FORMAT.md 3): the header, the records.
/// # fn datagram(sequence: u64, first_event: u64, events: &[Event]) -> Vec<u8> {
/// #     let header = DatagramHeader { kind: DatagramKind::Events, sender: 7, sequence, dropped: 0, first_event };
/// #     let mut head = [0u8; 40];
/// #     header.emit(events.len() as u16, &mut head);
/// #     let mut bytes = head.to_vec();
/// #     for e in events {
/// #         let mut record = [0u8; 32];
/// #         qtrace_core::encode::record::emit(e, &mut record);
/// #         bytes.extend_from_slice(&record);
/// #     }
/// #     bytes
/// # }
/// let mut core = ReceiverCore::new(ReceiverConfig::default());
/// let from = "127.0.0.1:40000".parse().unwrap();
/// let e = |t| Event::new(t, system::SCHEDULE, 0, [t, 0]);
/// core.handle(from, &datagram(0, 0, &[e(1), e(2)]), &mut |_| {});
/// core.handle(from, &datagram(0, 0, &[e(1), e(2)]), &mut |_| {}); // a duplicate
/// core.finish(&mut |_| {});
/// let s = &core.summary().senders[0];
/// assert_eq!((s.addr, s.sender, s.datagrams, s.events, s.duplicates), (from, 7, 1, 2, 1));
/// assert_eq!((s.lost(), s.accounted(), s.closed, s.logged), (0, 2, false, None));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SenderSummary {
    /// Where its datagrams came from.
    pub addr: SocketAddr,
    /// The sender id in its datagrams.
    pub sender: u32,
    /// The id of the key its datagrams were checked with (FORMAT.md 2.6);
    /// `None`: unkeyed.
    pub key_id: Option<u16>,
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
///
/// ```
/// use qtrace::classes::system;
/// use qtrace::receiver::{ReceiverConfig, ReceiverCore};
/// # use qtrace::Event;
/// # use qtrace_core::encode::datagram::{DatagramHeader, DatagramKind};
/// # /// An events datagram of sender 7 (FORMAT.md 3): the header, the records.
/// # fn datagram(sequence: u64, first_event: u64, events: &[Event]) -> Vec<u8> {
/// #     let header = DatagramHeader { kind: DatagramKind::Events, sender: 7, sequence, dropped: 0, first_event };
/// #     let mut head = [0u8; 40];
/// #     header.emit(events.len() as u16, &mut head);
/// #     let mut bytes = head.to_vec();
/// #     for e in events {
/// #         let mut record = [0u8; 32];
/// #         qtrace_core::encode::record::emit(e, &mut record);
/// #         bytes.extend_from_slice(&record);
/// #     }
/// #     bytes
/// # }
/// let mut core = ReceiverCore::new(ReceiverConfig::default());
/// let e = |t| Event::new(t, system::SCHEDULE, 0, [t, 0]);
/// core.handle("127.0.0.1:40000".parse().unwrap(), &datagram(0, 0, &[e(1)]), &mut |_| {});
/// core.handle("127.0.0.1:40001".parse().unwrap(), &datagram(0, 0, &[e(2)]), &mut |_| {});
/// core.handle("127.0.0.1:40001".parse().unwrap(), b"garbage", &mut |_| {});
/// let summary = core.summary();
/// assert_eq!((summary.senders.len(), summary.events(), summary.lost_events()), (2, 2, 0));
/// assert_eq!(summary.invalid.total(), 1);
/// let text = summary.to_string(); // what `qtrace recv` prints
/// assert!(!text.is_empty());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReceiverSummary {
    /// One entry per sender stream (a restarted sender has one per
    /// incarnation), in order of first appearance.
    pub senders: Vec<SenderSummary>,
    /// Replaced senders whose accounts did not fit ([`MAX_RETIRED`](super::MAX_RETIRED)).
    pub retired_uncounted: u64,
    /// Events received from those senders (in [`ReceiverSummary::events`]).
    pub uncounted_events: u64,
    /// Events those senders reported dropped (in [`ReceiverSummary::sender_dropped`]).
    pub uncounted_sender_dropped: u64,
    /// Datagrams of those senders lost on the way (in [`ReceiverSummary::lost_datagrams`]).
    pub uncounted_lost_datagrams: u64,
    /// Events lost in them (in [`ReceiverSummary::lost_events`]).
    pub uncounted_lost_events: u64,
    /// Events those senders never sent (in [`ReceiverSummary::unsent`]).
    pub uncounted_unsent: u64,
    /// Datagrams skipped before reaching a sender's stream.
    pub invalid: InvalidCounts,
    /// Refused datagrams per source address (the first [`MAX_RETIRED`](super::MAX_RETIRED)
    /// addresses; the rest are in [`InvalidCounts::too_many_senders`] only).
    pub refused: Vec<RefusedSource>,
    /// Rejected datagrams per source address (the first
    /// [`MAX_RETIRED`](super::MAX_RETIRED) addresses; the rest are in
    /// [`InvalidCounts::rejected`] only). Counts a store can record as they
    /// are.
    pub rejected: Vec<RejectedSource>,
    /// Whether the receiver holds keys
    /// ([`ReceiverConfig::keys`](super::ReceiverConfig)): a keyed datagram
    /// it rejected for its key had another key, or, without keys, any.
    pub keyed: bool,
    /// Records written to the trace file (events and hoops), before the
    /// end records.
    pub records_written: u64,
    /// Records written to the trace file that was then deleted or replaced
    /// while the receiver ran: lost with its inode, not in
    /// [`records_written`](Self::records_written). The re-created file
    /// starts with a hoops record for their events.
    pub records_lost_with_file: u64,
    /// Times the trace file was found deleted or replaced and re-created.
    pub files_replaced: u64,
    /// The trace file, if one was written.
    pub file: Option<PathBuf>,
    /// Why the trace file was not written to the end (a full disk, an I/O
    /// error): the receiver stopped early, the file is valid up to there.
    pub file_error: Option<String>,
    /// Why the session file ([`Receiver::keep_sessions`](super::Receiver::keep_sessions))
    /// could not be written when the receiver stopped: a receiver started
    /// after this one would not know the sessions of this run.
    pub sessions_error: Option<String>,
    /// How long the receiver ran.
    pub elapsed: Duration,
}

impl ReceiverSummary {
    /// Events received from every sender.
    pub fn events(&self) -> u64 {
        self.senders
            .iter()
            .fold(self.uncounted_events, |n, s| n.saturating_add(s.events))
    }
    /// Events every sender reported dropped.
    pub fn sender_dropped(&self) -> u64 {
        self.senders
            .iter()
            .fold(self.uncounted_sender_dropped, |n, s| {
                n.saturating_add(s.sender_dropped)
            })
    }
    /// Datagrams lost on the way, all senders.
    pub fn lost_datagrams(&self) -> u64 {
        self.senders
            .iter()
            .fold(self.uncounted_lost_datagrams, |n, s| {
                n.saturating_add(s.lost_datagrams)
            })
    }
    /// Events senders accepted but never sent (from their close datagrams),
    /// all senders.
    pub fn unsent(&self) -> u64 {
        self.senders
            .iter()
            .fold(self.uncounted_unsent, |n, s| n.saturating_add(s.unsent))
    }
    /// Events lost on the way (in lost datagrams), all senders, exactly.
    pub fn lost_events(&self) -> u64 {
        self.senders
            .iter()
            .fold(self.uncounted_lost_events, |n, s| {
                n.saturating_add(s.lost_events)
            })
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
                // A firmware's header names no queue (HeaderSpec's default).
                None if s.has_catalog => "no queue in its header".to_string(),
                None => "queue unknown (no header yet)".to_string(),
            };
            let queue = match s.key_id {
                Some(id) => format!("{queue}, key {id:#06x}"),
                None => queue,
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
                "  {} more replaced senders (accounts not kept, in the totals): {} events, {} dropped by the sender, {} unsent, {} lost in transit ({} datagrams)",
                self.retired_uncounted,
                self.uncounted_events,
                self.uncounted_sender_dropped,
                self.uncounted_unsent,
                self.uncounted_lost_events,
                self.uncounted_lost_datagrams
            )?;
        }
        for r in &self.refused {
            writeln!(
                f,
                "  refused {} datagrams ({} events) from {} (sender {:#010x}): the sender table was full",
                r.datagrams, r.events, r.addr, r.sender
            )?;
        }
        for r in &self.rejected {
            writeln!(
                f,
                "  rejected {} datagrams from {}: {}",
                r.counts.total(),
                r.addr,
                r.counts.describe(self.keyed)
            )?;
        }
        let i = &self.invalid;
        write!(
            f,
            "  skipped datagrams: {} not qtrace, {} truncated, {} unsupported version, {} malformed, {} refused (sender table full)",
            i.not_qtrace, i.truncated, i.unsupported_version, i.malformed, i.too_many_senders
        )?;
        if i.rejected.total() > 0 {
            write!(f, ", {} rejected", i.rejected.total())?;
        }
        if let Some(p) = &self.file {
            write!(
                f,
                "\n  wrote {} records to {}",
                self.records_written,
                p.display()
            )?;
        }
        if self.files_replaced > 0 {
            write!(
                f,
                "\n  the file was deleted or replaced {} times while written: {} records written before went with it (lost; the re-created file marks their events with a hoops record)",
                self.files_replaced, self.records_lost_with_file
            )?;
        }
        if let Some(e) = &self.file_error {
            write!(
                f,
                "\n  stopped early: {e}; the file is valid up to there and reads as cut short"
            )?;
        }
        if let Some(e) = &self.sessions_error {
            write!(
                f,
                "\n  {e}: a receiver started later would accept again a replay of this run's keyed streams"
            )?;
        }
        Ok(())
    }
}
