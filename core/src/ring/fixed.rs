//! The fixed ring: keeps the first `N` events, drops (and counts) the rest.

use super::locked::Locked;
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
#[derive(Default)]
pub struct FixedRing<const N: usize> {
    state: Locked<N>,
}

impl<const N: usize> FixedRing<N> {
    /// An empty ring (a `const fn`: place it in a `static`).
    pub const fn new() -> Self {
        FixedRing {
            state: Locked::new(),
        }
    }
}

/// The capacity and the counters (read under the ring's critical section).
impl<const N: usize> core::fmt::Debug for FixedRing<N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("FixedRing")
            .field("capacity", &N)
            .field("counters", &self.counters())
            .finish()
    }
}

impl<const N: usize> Ring for FixedRing<N> {
    fn type_name(&self) -> &'static str {
        "fixed"
    }

    #[inline]
    fn get(&self) -> Option<Reservation> {
        self.state.with(|s| {
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
        self.state.post(reservation, event)
    }

    fn counters(&self) -> QueueCounters {
        self.state.counters()
    }

    fn take(&self, out: &mut [Event]) -> Taken {
        self.state.take(out)
    }

    fn abandon_reserved(&self) -> u64 {
        self.state.abandon_reserved()
    }
}
