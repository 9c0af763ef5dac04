//! Queue handles and the route word: which queue an event goes to, as the
//! tracer's hot path reads it. A model-level id (like
//! [`EventId`](crate::EventId)): it imports nothing from the crate.

/// A queue's handle: 0, 1, 2, … in creation order, as in S.Ha.R.K. Defined
/// in the no_std core (the wire layer and the firmware rings use it too).
pub use qtrace_core::QueueHandle;

/// Bit of a route word: the event is recorded. The word the hot path reads
/// for an event is `LIVE | queue index` (with [`DRAINED`] for an online or
/// UDP queue), or 0 when it is not logged (the
/// registry computes it; the producer cache of the circular queue keys on it).
pub(crate) const LIVE: u32 = 1 << 31;
/// Bit of a route word: the queue is drained by a task (an online or UDP
/// queue), so the hot path looks for the queue's feed in the producer cache
/// (and the events of other queues skip that look).
pub(crate) const DRAINED: u32 = 1 << 30;
/// A bit never set in a route word: the producer cache keeps a queue's feed
/// under the queue's route with this bit set
/// (`ring::producer_cache::feed_key`), so a route never finds a feed where
/// it looks for a shard ring.
pub(crate) const FEED_KEY: u32 = 1 << 29;
/// Bits of a route word: the queue index.
pub(crate) const QUEUE_MASK: u32 = 0xff;
