//! The built-in queue policies, one module each, and [`AnyQueue`], the enum the
//! tracer stores them in so the hot path dispatches without a virtual call.

mod any;
mod circular;
pub(crate) mod drained;
mod dummy;
mod fixed;
mod online;
mod queue_type;
mod udp;

pub use any::AnyQueue;
pub use circular::{Circular, CircularParams, CircularQueue};
pub use dummy::{Dummy, DummyQueue};
pub use fixed::{Fixed, FixedParams, FixedQueue};
pub use online::{Online, OnlineParams, OnlineQueue};
pub use queue_type::QueueType;
pub use udp::{DatagramsPerPeriod, Udp, UdpParams, UdpQueue, UdpStats};
