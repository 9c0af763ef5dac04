//! The counters both rings report.

/// An [`OverwriteRing`](super::OverwriteRing)'s or [`DropRing`](super::DropRing)'s counters (see
/// [`crate::queue::queue_trait::QueueCounters`] for the invariants).
#[cfg_attr(not(test), allow(dead_code))] // the rings' tests and loom models use it
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RingCounters {
    /// Claims that succeeded.
    pub accepted: u64,
    /// Claims refused.
    pub dropped: u64,
    /// Accepted records later evicted by newer ones (always 0 for a
    /// [`DropRing`](super::DropRing)).
    pub overwritten: u64,
    /// Records taken out by a reader ([`OverwriteRing::consume`](super::OverwriteRing::consume),
    /// [`DropRing::pop`](super::DropRing::pop)).
    pub delivered: u64,
    /// Accepted records still in the ring (including ones being written).
    pub queued: u64,
}
