//! The ring state behind its critical section: what both rings do the same
//! way (post, counters, take, abandon) in one place; each ring adds only its
//! type name and what `get` does when the ring is full.

use core::cell::RefCell;

use critical_section::Mutex;

use super::state::State;
use super::Taken;
use crate::{Event, QueueCounters, Reservation};

/// A ring's [`State`] behind one critical section ([`critical_section::Mutex`]):
/// every operation runs with exclusive access, without `unsafe`.
pub(super) struct Locked<const N: usize> {
    state: Mutex<RefCell<State<N>>>,
}

impl<const N: usize> Locked<N> {
    /// Empty state (a `const fn`, for rings in `static`s).
    pub(super) const fn new() -> Self {
        Locked {
            state: Mutex::new(RefCell::new(State::new())),
        }
    }

    /// Runs `f` on the state inside the critical section (a ring's `get`).
    #[inline]
    pub(super) fn with<R>(&self, f: impl FnOnce(&mut State<N>) -> R) -> R {
        critical_section::with(|cs| f(&mut self.state.borrow_ref_mut(cs)))
    }

    /// [`Ring::post`](super::Ring::post).
    #[inline]
    pub(super) fn post(&self, reservation: Reservation, event: &Event) {
        self.with(|s| s.post(reservation.ticket(), event))
    }

    /// [`Ring::counters`](super::Ring::counters).
    pub(super) fn counters(&self) -> QueueCounters {
        critical_section::with(|cs| self.state.borrow_ref(cs).counters())
    }

    /// [`Ring::take`](super::Ring::take).
    pub(super) fn take(&self, out: &mut [Event]) -> Taken {
        self.with(|s| s.take(out))
    }

    /// [`Ring::abandon_reserved`](super::Ring::abandon_reserved).
    pub(super) fn abandon_reserved(&self) -> u64 {
        self.with(|s| s.abandon_reserved())
    }
}

impl<const N: usize> Default for Locked<N> {
    fn default() -> Self {
        Self::new()
    }
}
