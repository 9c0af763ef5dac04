//! The built-in queue policies, one module each, and [`AnyQueue`], the enum the
//! tracer stores them in so the hot path dispatches without a virtual call.

pub mod circular;
pub mod dummy;
pub(crate) mod feed;
pub mod fixed;
pub mod online;
pub(crate) mod producer_cache;
mod reserve;
pub mod ring;
mod save;
pub(crate) mod sender;
pub(crate) mod shard;
pub(crate) mod task;
pub mod udp;

use crate::error::Error;
use crate::event::Event;
use crate::queue::{DynQueue, Queue, QueueContext, QueueCounters, QueueStatus, Reservation};
use enum_dispatch::enum_dispatch;

#[allow(unused_imports)] // used by the code enum_dispatch generates
use crate::combine::Run;

pub use circular::{Circular, CircularParams, CircularQueue};
pub use dummy::{Dummy, DummyQueue};
pub use fixed::{Fixed, FixedParams, FixedQueue};
pub use online::{Online, OnlineParams, OnlineQueue};
pub use udp::{DatagramsPerPeriod, Udp, UdpParams, UdpQueue, UdpStats};

/// Every queue a tracer can hold: the built-ins by value, a user-defined
/// queue boxed.
// The built-ins are stored inline (no pointer to chase on the hot path); their
// producer indexes are cache-line padded, hence the size differences.
#[allow(clippy::large_enum_variant)]
#[enum_dispatch(Queue)]
#[repr(u8)]
pub enum AnyQueue {
    /// Discards and counts.
    DummyQueue,
    /// Keeps the first N events.
    FixedQueue,
    /// Keeps the last N events.
    CircularQueue,
    /// Drains to a file in the background.
    OnlineQueue,
    /// Streams to a receiver over UDP.
    UdpQueue,
    /// A user-defined queue type.
    DynQueue,
}

impl AnyQueue {
    /// Wraps a user-defined queue.
    pub fn custom(queue: impl Queue + 'static) -> Self {
        AnyQueue::DynQueue(DynQueue::new(queue))
    }

    /// The circular queue inside, if it is one (for
    /// [`CircularQueue::snapshot`]).
    pub fn as_circular(&self) -> Option<&CircularQueue> {
        match self {
            AnyQueue::CircularQueue(q) => Some(q),
            _ => None,
        }
    }

    /// The circular-online queue inside, if it is one.
    pub fn as_online(&self) -> Option<&OnlineQueue> {
        match self {
            AnyQueue::OnlineQueue(q) => Some(q),
            _ => None,
        }
    }

    /// The UDP queue inside, if it is one (for [`UdpQueue::stats`]).
    pub fn as_udp(&self) -> Option<&UdpQueue> {
        match self {
            AnyQueue::UdpQueue(q) => Some(q),
            _ => None,
        }
    }

    /// The fixed queue inside, if it is one.
    pub fn as_fixed(&self) -> Option<&FixedQueue> {
        match self {
            AnyQueue::FixedQueue(q) => Some(q),
            _ => None,
        }
    }
}

impl std::fmt::Debug for AnyQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self {
            AnyQueue::DummyQueue(_) => "DummyQueue",
            AnyQueue::FixedQueue(_) => "FixedQueue",
            AnyQueue::CircularQueue(_) => "CircularQueue",
            AnyQueue::OnlineQueue(_) => "OnlineQueue",
            AnyQueue::UdpQueue(_) => "UdpQueue",
            AnyQueue::DynQueue(_) => "DynQueue",
        };
        f.debug_struct("AnyQueue")
            .field("kind", &name)
            .field("counters", &self.counters())
            .finish()
    }
}

/// Registers every built-in queue type on a new tracer.
pub(crate) fn register_builtin_types(tracer: &crate::Tracer) -> Result<(), Error> {
    tracer.register_queue_type(Dummy)?;
    tracer.register_queue_type(Fixed)?;
    tracer.register_queue_type(Circular)?;
    tracer.register_queue_type(Online)?;
    tracer.register_queue_type(Udp)?;
    Ok(())
}

// Silence "unused import" for items enum_dispatch's generated code uses.
#[allow(dead_code)]
fn _uses(
    _: &Event,
    _: &QueueContext,
    _: QueueStatus,
    _: Option<Reservation>,
    _: Result<(), Error>,
) {
}
