//! Datagrams refused before they touch any sender's stream: forged, with a
//! key the receiver does not hold, replayed, or with counters that
//! contradict the stream ([`RejectionCounts`], per source address
//! [`RejectedSource`]).

use std::net::SocketAddr;

/// Why a datagram was rejected (one counter of [`RejectionCounts`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RejectionKind {
    Unkeyed,
    UnknownKey,
    /// A keyed datagram at a receiver that holds no key (counted as
    /// [`RejectionCounts::unknown_key`], worded apart).
    NoKey,
    BadTag,
    Replayed,
    OutsideWindow,
    CountersBackwards,
    AfterClose,
}

impl RejectionKind {
    /// What the summary and the log say.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            RejectionKind::Unkeyed => "unkeyed (this receiver accepts only keyed datagrams)",
            RejectionKind::UnknownKey => "keyed with a key this receiver does not hold",
            RejectionKind::NoKey => "keyed, but this receiver holds no key",
            RejectionKind::BadTag => "bad tag (forged or altered, or a wrong key)",
            RejectionKind::Replayed => {
                "replayed (already seen, or of a stream that ended or was replaced)"
            }
            RejectionKind::OutsideWindow => "outside the sequence window",
            RejectionKind::CountersBackwards => "counters going backwards",
            RejectionKind::AfterClose => "after its sender's close",
        }
    }
}

/// Datagrams rejected before they could touch a sender's stream, by kind
/// (FORMAT.md 3.1). A rejected datagram never takes, resets or parks a slot
/// of the sender table and changes no count of a stream.
///
/// ```
/// use qtrace::receiver::{ReceiverConfig, ReceiverCore};
/// # use qtrace_core::encode::datagram::{DatagramHeader, DatagramKind};
///
/// // A keyed datagram (version 2) at a receiver that holds no key.
/// let header = DatagramHeader { kind: DatagramKind::Events, sender: 7, sequence: 0, dropped: 0, first_event: 0 };
/// let mut bytes = [0u8; 64];
/// header.emit(0, (&mut bytes[..40]).try_into().unwrap());
/// bytes[5] = 2;
/// let mut core = ReceiverCore::new(ReceiverConfig::default());
/// core.handle("127.0.0.1:40000".parse().unwrap(), &bytes, &mut |_| {});
/// let summary = core.summary();
/// assert_eq!(summary.invalid.rejected.unknown_key, 1);
/// assert_eq!(summary.rejected[0].counts.total(), 1);
/// assert!(summary.senders.is_empty());
/// assert!(summary.to_string().contains("1 keyed, but this receiver holds no key"));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RejectionCounts {
    /// Unkeyed datagrams at a receiver that holds keys.
    pub unkeyed: u64,
    /// Keyed datagrams whose key id the receiver does not hold: a sender
    /// with another key (or any key, at a receiver without keys).
    pub unknown_key: u64,
    /// Keyed datagrams whose tag is wrong: forged, altered on the way, or
    /// keyed with a different key of the same id.
    pub bad_tag: u64,
    /// Keyed datagrams already received (a replay, or a copy the network
    /// made: no one can tell them apart), or of a session of their sender
    /// that ended or was replaced by a newer one.
    pub replayed: u64,
    /// Keyed datagrams numbered below what their stream still remembers
    /// (given up on) or implausibly far above it.
    pub outside_window: u64,
    /// Datagrams whose first event or drop count goes backwards against
    /// their stream's datagrams, or a close datagram whose counts
    /// contradict its header.
    pub counters_backwards: u64,
    /// Datagrams numbered after their sender's close datagram (or a close
    /// numbered before datagrams that already arrived).
    pub after_close: u64,
}

impl RejectionCounts {
    /// Every rejected datagram.
    pub fn total(&self) -> u64 {
        self.unkeyed
            + self.unknown_key
            + self.bad_tag
            + self.replayed
            + self.outside_window
            + self.counters_backwards
            + self.after_close
    }

    pub(crate) fn add(&mut self, kind: RejectionKind) {
        let n = match kind {
            RejectionKind::Unkeyed => &mut self.unkeyed,
            RejectionKind::UnknownKey | RejectionKind::NoKey => &mut self.unknown_key,
            RejectionKind::BadTag => &mut self.bad_tag,
            RejectionKind::Replayed => &mut self.replayed,
            RejectionKind::OutsideWindow => &mut self.outside_window,
            RejectionKind::CountersBackwards => &mut self.counters_backwards,
            RejectionKind::AfterClose => &mut self.after_close,
        };
        *n = n.saturating_add(1);
    }

    /// The non-zero counts, as the summary prints them (`keyed`: whether
    /// the receiver holds keys, so that an unknown key is worded right).
    pub(crate) fn describe(&self, keyed: bool) -> String {
        let unknown_key = if keyed {
            RejectionKind::UnknownKey
        } else {
            RejectionKind::NoKey
        };
        [
            (self.unkeyed, RejectionKind::Unkeyed),
            (self.unknown_key, unknown_key),
            (self.bad_tag, RejectionKind::BadTag),
            (self.replayed, RejectionKind::Replayed),
            (self.outside_window, RejectionKind::OutsideWindow),
            (self.counters_backwards, RejectionKind::CountersBackwards),
            (self.after_close, RejectionKind::AfterClose),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, k)| format!("{n} {}", k.describe()))
        .collect::<Vec<_>>()
        .join(", ")
    }
}

/// Datagrams rejected from one source address
/// ([`ReceiverSummary::rejected`](super::ReceiverSummary::rejected)), so a
/// forger, a replayer and a sender with a wrong key each show where they
/// are (see [`RejectionCounts`] for an example).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RejectedSource {
    /// Where they came from.
    pub addr: SocketAddr,
    /// How many of each kind.
    pub counts: RejectionCounts,
}
