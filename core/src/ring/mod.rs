//! Rings in caller-provided (`static`) memory, and the small queue trait the
//! firmware [`Tracer`](crate::Tracer) drives them through.
//!
//! Each ring keeps its state behind one critical section
//! ([`critical_section::Mutex`]): on a single-core microcontroller that is
//! "interrupts off" for a few dozen instructions, bounded and never waiting
//! for another context, and it works on targets without compare-and-swap
//! (thumbv6m) as well as with it. No `unsafe`: the critical section gives
//! the exclusive access. The firmware (or the host) provides the
//! implementation — `cortex-m`'s `critical-section-single-core` feature, or
//! `critical-section`'s `std` feature on a host.
//!
//! - [`FixedRing`] keeps the first `N` events and drops the rest (counted).
//! - [`CircularRing`] keeps the last `N` events and overwrites the oldest
//!   (counted).

mod circular;
mod fixed;
mod locked;
mod state;

pub use circular::CircularRing;
pub use fixed::FixedRing;

use crate::{Event, QueueCounters, Reservation};

/// What one [`Ring::take`] moved out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Taken {
    /// Events copied to the buffer (the oldest queued ones, in order).
    pub events: usize,
    /// Events overwritten since the previous `take`, all older than the
    /// first event taken: a hoops record before it states them.
    pub overwritten: u64,
    /// Events dropped since the previous `take` (a full fixed ring drops
    /// only after everything it keeps): a hoops record after the last
    /// event states them.
    pub dropped: u64,
}

/// The queue operations of a static ring: `get` reserves room for one event
/// or says "no room" (never waits), `post` publishes it; `take` moves the
/// oldest events out for a dump.
///
/// Invariants after every call: `attempts = accepted + dropped` and
/// `accepted = delivered + overwritten + queued` ([`QueueCounters`]).
pub trait Ring: Sync {
    /// The queue type name a trace file carries (`fixed`, `circular`).
    fn type_name(&self) -> &'static str;
    /// Reserves room for one event, or counts it dropped and returns `None`.
    fn get(&self) -> Option<Reservation>;
    /// Publishes `event` in the slot `reservation` names. A circular ring
    /// that overwrote the slot since (it counted the event overwritten then)
    /// ignores it.
    fn post(&self, reservation: Reservation, event: &Event);
    /// The counters now.
    fn counters(&self) -> QueueCounters;
    /// Copies the oldest posted events to `out` (stopping before a slot
    /// reserved but not yet posted), counts them delivered and frees their
    /// slots.
    fn take(&self, out: &mut [Event]) -> Taken;
    /// Gives up the oldest queued slots that are reserved but not posted
    /// (a logger interrupted between `get` and `post`, or one that never
    /// posts), up to the first posted one, so that `take` can go on past
    /// them: they count as overwritten (the next `take` reports them, a
    /// dump states them in a hoops record) and their late `post` is
    /// ignored. Returns how many.
    fn abandon_reserved(&self) -> u64;

    /// `get` then `post`: logs `event` unless the ring refuses it.
    #[inline]
    fn push(&self, event: &Event) -> bool {
        match self.get() {
            Some(r) => {
                self.post(r, event);
                true
            }
            None => false,
        }
    }
}
