//! Queue handles and the route word: which queue an event goes to, as the
//! tracer's hot path reads it. A model-level id (like
//! [`EventId`](crate::EventId)): it imports nothing from the crate.

use std::fmt;

/// A queue's handle: 0, 1, 2, … in creation order, as in S.Ha.R.K.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct QueueHandle(pub u16);

impl QueueHandle {
    /// The largest number of queues a tracer holds.
    pub const MAX_QUEUES: usize = 256;

    /// The handle as an index.
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for QueueHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Bit of a route word: the event is recorded. The word the hot path reads
/// for an event is `LIVE | queue index`, or 0 when it is not logged (the
/// registry computes it; the producer cache of the circular queue keys on it).
pub(crate) const LIVE: u32 = 1 << 31;
/// Bits of a route word: the queue index.
pub(crate) const QUEUE_MASK: u32 = 0xff;
