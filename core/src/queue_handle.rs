//! The number of a queue.

use core::fmt;

/// A queue's handle: 0, 1, 2, … in creation order, as in S.Ha.R.K. A plain
/// number: trace-file headers and datagram catalogs carry it as a `u16`.
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
