//! Live counts another thread may read while the receiver runs.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::summary::ReceiverSummary;

use parking_lot::Mutex;

/// Live counters of a running receiver, readable from other threads (for
/// progress displays and flow control in tests).
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
/// let progress = core.progress(); // an Arc: hand it to another thread
/// let e = Event::new(1, system::SCHEDULE, 0, [1, 0]);
/// core.handle("127.0.0.1:40000".parse().unwrap(), &datagram(0, 0, &[e, e]), &mut |_| {});
/// assert_eq!((progress.datagrams(), progress.events(), progress.accounted()), (1, 2, 2));
/// assert_eq!(progress.invalid(), 0);
/// ```
#[derive(Debug, Default)]
pub struct Progress {
    pub(super) datagrams: AtomicU64,
    pub(super) events: AtomicU64,
    pub(super) sender_dropped: AtomicU64,
    pub(super) lost_events: AtomicU64,
    pub(super) unsent: AtomicU64,
    pub(super) invalid: AtomicU64,
    pub(super) rejected: AtomicU64,
    /// The latest rejection: where from, and why.
    pub(super) last_rejection: Mutex<Option<(SocketAddr, &'static str)>>,
    /// Set by [`Progress::summary`]: publish an account at the next turn.
    summary_wanted: AtomicBool,
    /// The account published last, until taken.
    summary: Mutex<Option<ReceiverSummary>>,
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
    /// [`RunLimit::events`](super::RunLimit::events) counts.
    pub fn accounted(&self) -> u64 {
        self.events()
            .saturating_add(self.sender_dropped())
            .saturating_add(self.lost_events())
            .saturating_add(self.unsent())
    }
    /// Datagrams skipped so far (invalid, duplicate, late, refused,
    /// rejected).
    pub fn invalid(&self) -> u64 {
        self.invalid.load(Ordering::Relaxed)
    }
    /// Datagrams rejected so far (part of [`Progress::invalid`]): forged,
    /// keyed with another key, replayed, counters going backwards, after a
    /// close ([`RejectionCounts`](super::RejectionCounts)).
    pub fn rejected(&self) -> u64 {
        self.rejected.load(Ordering::Relaxed)
    }
    /// The latest rejected datagram's source address and why it was
    /// rejected: for a log that says at most one line now and then.
    pub fn last_rejection(&self) -> Option<(SocketAddr, &'static str)> {
        *self.last_rejection.lock()
    }

    /// The full account (per sender: events, losses, whether its stream
    /// closed; refused sources) as a running [`Receiver`](super::Receiver)
    /// last published it, taken: `None` when none was published since the
    /// last call. Each call asks the receiver for a fresh one, which it
    /// publishes after its next datagram or idle wait (about 20 ms), so a
    /// display that calls this a few times a second shows an account at
    /// most one call old. The receiver builds an account only when asked
    /// (one relaxed load per datagram otherwise), so watching costs its
    /// write path nothing measurable. [`ReceiverSummary::elapsed`] is the
    /// time since the run started; the file fields are not set.
    pub fn summary(&self) -> Option<ReceiverSummary> {
        self.summary_wanted.store(true, Ordering::Relaxed);
        self.summary.lock().take()
    }

    /// Whether [`Progress::summary`] asked for an account.
    #[inline]
    pub(super) fn summary_wanted(&self) -> bool {
        self.summary_wanted.load(Ordering::Relaxed)
    }

    /// Publishes `summary` for [`Progress::summary`].
    #[cold]
    pub(super) fn publish(&self, summary: ReceiverSummary) {
        self.summary_wanted.store(false, Ordering::Relaxed);
        *self.summary.lock() = Some(summary);
    }
}
