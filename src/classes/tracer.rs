//! The tracer class (`0x00`–`0x01`): events the tracer itself writes.
//!
//! Defined in the `no_std` core ([`qtrace_core::classes::tracer`]) and
//! re-exported here.

pub use qtrace_core::classes::tracer::{CLASS, HOOPS, RESERVED};
