//! The built-in queue policies, one module each, and [`AnyQueue`], the enum the
//! tracer stores them in so the hot path dispatches without a virtual call.

pub mod dummy;
pub(crate) mod feed;
pub mod online;
pub mod ring;
pub(crate) mod sender;
pub(crate) mod task;
pub mod udp;

use crate::error::Error;
use crate::event::Event;
use crate::queue::{DynQueue, Queue, QueueContext, QueueCounters, QueueStatus, Reservation};
use enum_dispatch::enum_dispatch;

pub use dummy::{Dummy, DummyQueue};
pub use online::{Online, OnlineParams, OnlineQueue};
pub use udp::{DatagramsPerPeriod, Udp, UdpParams, UdpQueue, UdpStats};

/// Every queue a tracer can hold: the built-ins by value, a user-defined
/// queue boxed.
#[enum_dispatch(Queue)]
pub enum AnyQueue {
    /// Discards and counts.
    DummyQueue,
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
        AnyQueue::DynQueue(Box::new(queue))
    }
}

impl std::fmt::Debug for AnyQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self {
            AnyQueue::DummyQueue(_) => "DummyQueue",
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
