//! The circular ring: keeps the last `N` events, overwriting (and counting)
//! the oldest.

use super::locked::Locked;
use super::{Ring, Taken};
use crate::{Event, QueueCounters, Reservation};

/// Keeps the last `N` events logged into it: a new event evicts the oldest
/// queued one, counted as overwritten. It never refuses an event.
///
/// ```
/// use qtrace_core::ring::{CircularRing, Ring};
/// use qtrace_core::{Event, EventId};
///
/// static RING: CircularRing<2> = CircularRing::new();
/// for t in 0..3 {
///     RING.push(&Event::new(t, EventId(0x04), 0, [0, 0]));
/// }
/// let mut out = [Event::ZERO; 4];
/// let taken = RING.take(&mut out);
/// assert_eq!((taken.events, taken.overwritten), (2, 1));
/// assert_eq!((out[0].time, out[1].time), (1, 2));
/// ```
#[derive(Default)]
pub struct CircularRing<const N: usize> {
    state: Locked<N>,
}

impl<const N: usize> CircularRing<N> {
    /// An empty ring (a `const fn`: place it in a `static`).
    pub const fn new() -> Self {
        CircularRing {
            state: Locked::new(),
        }
    }
}

/// The capacity and the counters (read under the ring's critical section).
impl<const N: usize> core::fmt::Debug for CircularRing<N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CircularRing")
            .field("capacity", &N)
            .field("counters", &self.counters())
            .finish()
    }
}

impl<const N: usize> Ring for CircularRing<N> {
    fn type_name(&self) -> &'static str {
        "circular"
    }

    #[inline]
    fn get(&self) -> Option<Reservation> {
        self.state.with(|s| {
            if s.head - s.tail >= N as u64 {
                s.evict_oldest();
            }
            Some(Reservation::new(s.claim()))
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
