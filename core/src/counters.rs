//! What a queue did with the events routed to it, and the reservation a
//! queue hands from `get` to `post`.

/// A slot reserved by a queue's `get`, to be filled by its `post`. The
/// number inside is the queue's own business (a slot index, a ticket); the
/// tracer only carries it from `get` to `post`.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a reservation must be posted"]
pub struct Reservation(u64);

impl Reservation {
    /// A reservation carrying `ticket`.
    #[inline(always)]
    pub const fn new(ticket: u64) -> Self {
        Reservation(ticket)
    }

    /// The ticket given to [`Reservation::new`].
    #[inline(always)]
    pub const fn ticket(&self) -> u64 {
        self.0
    }
}

/// What a queue has done with the events routed to it.
///
/// Invariants every queue keeps (checked by [`QueueCounters::is_consistent`]):
/// `attempts = accepted + dropped` and
/// `accepted = delivered + overwritten + queued`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueCounters {
    /// Events the queue took in.
    pub accepted: u64,
    /// Events refused because there was no room (the queue was full or busy).
    pub dropped: u64,
    /// Accepted events later evicted to make room for newer ones.
    pub overwritten: u64,
    /// Accepted events handed on: written to a file, sent, or discarded on
    /// purpose.
    pub delivered: u64,
    /// Accepted events still held by the queue.
    pub queued: u64,
}

impl QueueCounters {
    /// The counters of a queue that takes every event and hands it on at
    /// once: `n` accepted, `n` delivered, nothing dropped, overwritten or
    /// queued.
    ///
    /// ```
    /// let c = qtrace_core::QueueCounters::all_delivered(3);
    /// assert_eq!((c.accepted, c.delivered, c.queued), (3, 3, 0));
    /// assert!(c.is_consistent());
    /// ```
    pub fn all_delivered(n: u64) -> Self {
        QueueCounters {
            accepted: n,
            delivered: n,
            ..QueueCounters::default()
        }
    }

    /// Every event routed to the queue.
    pub fn attempts(&self) -> u64 {
        self.accepted + self.dropped
    }

    /// Events lost: dropped plus overwritten.
    pub fn lost(&self) -> u64 {
        self.dropped + self.overwritten
    }

    /// Whether `accepted = delivered + overwritten + queued`.
    pub fn is_consistent(&self) -> bool {
        self.accepted == self.delivered + self.overwritten + self.queued
    }
}

/// Counters for lock-free queue implementations: relaxed atomic adds,
/// summed on demand. Only on targets with 64-bit atomics (not thumbv6m or
/// thumbv7m, whose static rings count inside their critical section).
#[cfg(target_has_atomic = "64")]
#[derive(Debug, Default)]
pub struct AtomicCounters {
    accepted: core::sync::atomic::AtomicU64,
    dropped: core::sync::atomic::AtomicU64,
    overwritten: core::sync::atomic::AtomicU64,
    delivered: core::sync::atomic::AtomicU64,
}

#[cfg(target_has_atomic = "64")]
impl AtomicCounters {
    /// Counts `n` accepted events.
    #[inline]
    pub fn add_accepted(&self, n: u64) {
        self.accepted
            .fetch_add(n, core::sync::atomic::Ordering::Relaxed);
    }
    /// Counts `n` dropped events.
    #[inline]
    pub fn add_dropped(&self, n: u64) {
        self.dropped
            .fetch_add(n, core::sync::atomic::Ordering::Relaxed);
    }
    /// Counts `n` overwritten events.
    #[inline]
    pub fn add_overwritten(&self, n: u64) {
        self.overwritten
            .fetch_add(n, core::sync::atomic::Ordering::Relaxed);
    }
    /// Counts `n` delivered events.
    #[inline]
    pub fn add_delivered(&self, n: u64) {
        self.delivered
            .fetch_add(n, core::sync::atomic::Ordering::Relaxed);
    }
    /// The current values, with `queued = accepted - delivered - overwritten`.
    ///
    /// ```
    /// let c = qtrace_core::AtomicCounters::default();
    /// c.add_accepted(5);
    /// c.add_dropped(1);
    /// c.add_overwritten(2);
    /// c.add_delivered(1);
    /// let s = c.snapshot();
    /// assert_eq!((s.accepted, s.dropped, s.overwritten, s.delivered, s.queued), (5, 1, 2, 1, 2));
    /// assert!(s.is_consistent());
    /// ```
    pub fn snapshot(&self) -> QueueCounters {
        use core::sync::atomic::Ordering::Relaxed;
        let accepted = self.accepted.load(Relaxed);
        let dropped = self.dropped.load(Relaxed);
        let overwritten = self.overwritten.load(Relaxed);
        let delivered = self.delivered.load(Relaxed);
        QueueCounters {
            accepted,
            dropped,
            overwritten,
            delivered,
            queued: accepted.saturating_sub(delivered + overwritten),
        }
    }
}
