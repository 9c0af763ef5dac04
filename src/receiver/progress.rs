//! Live counts another thread may read while the receiver runs.

use std::sync::atomic::{AtomicU64, Ordering};

/// Live counters of a running receiver, readable from other threads (for
/// progress displays and flow control in tests).
#[derive(Debug, Default)]
pub struct Progress {
    pub(super) datagrams: AtomicU64,
    pub(super) events: AtomicU64,
    pub(super) sender_dropped: AtomicU64,
    pub(super) lost_events: AtomicU64,
    pub(super) unsent: AtomicU64,
    pub(super) invalid: AtomicU64,
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
    /// Datagrams skipped so far (invalid, duplicate, late, refused).
    pub fn invalid(&self) -> u64 {
        self.invalid.load(Ordering::Relaxed)
    }
}
