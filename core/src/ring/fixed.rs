//! The fixed ring: keeps the first `N` events, drops (and counts) the rest.

use core::cell::RefCell;

use critical_section::Mutex;

use super::state::State;
use super::{Ring, Taken};
use crate::{Event, QueueCounters, Reservation};

/// Keeps the first `N` events logged into it, drops the rest and counts
/// them (S.Ha.R.K.'s fixed queue, with its losses counted). Room taken by a
/// [`take`](Ring::take) does not come back: the ring holds the first `N`
/// events of the run.
///
/// ```
/// use qtrace_core::ring::{FixedRing, Ring};
/// use qtrace_core::{Event, EventId};
///
/// static RING: FixedRing<2> = FixedRing::new();
/// for t in 0..3 {
///     RING.push(&Event::new(t, EventId(0x04), 0, [0, 0]));
/// }
/// let c = RING.counters();
/// assert_eq!((c.accepted, c.dropped, c.queued), (2, 1, 2));
/// ```
pub struct FixedRing<const N: usize> {
    state: Mutex<RefCell<State<N>>>,
}

impl<const N: usize> FixedRing<N> {
    /// An empty ring (a `const fn`: place it in a `static`).
    pub const fn new() -> Self {
        FixedRing {
            state: Mutex::new(RefCell::new(State::new())),
        }
    }
}

impl<const N: usize> Default for FixedRing<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Ring for FixedRing<N> {
    fn type_name(&self) -> &'static str {
        "fixed"
    }

    #[inline]
    fn get(&self) -> Option<Reservation> {
        critical_section::with(|cs| {
            let mut s = self.state.borrow_ref_mut(cs);
            if s.head >= N as u64 {
                s.drop_one();
                None
            } else {
                Some(Reservation::new(s.claim()))
            }
        })
    }

    #[inline]
    fn post(&self, reservation: Reservation, event: &Event) {
        critical_section::with(|cs| {
            self.state
                .borrow_ref_mut(cs)
                .post(reservation.ticket(), event)
        })
    }

    fn counters(&self) -> QueueCounters {
        critical_section::with(|cs| self.state.borrow_ref(cs).counters())
    }

    fn take(&self, out: &mut [Event]) -> Taken {
        critical_section::with(|cs| self.state.borrow_ref_mut(cs).take(out))
    }

    fn abandon_reserved(&self) -> u64 {
        critical_section::with(|cs| self.state.borrow_ref_mut(cs).abandon_reserved())
    }
}
