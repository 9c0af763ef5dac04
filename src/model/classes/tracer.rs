//! The tracer class (`0x00`–`0x01`): events the tracer itself writes.
//!
//! Defined in the `no_std` core ([`qtrace_core::classes::tracer`]) and
//! re-exported here.

pub use qtrace_core::classes::tracer::{CLASS, HOOPS, RESERVED};

// The core's table of this class's events, of a type with no public path
// here (`qtrace::classes::Catalog::builtin` describes the events): hidden.
#[doc(hidden)]
pub use qtrace_core::classes::tracer::EVENTS;
