//! Setting a tracer up: the two initialisation phases and the standard
//! preset (`init.rs`, public as [`crate::setup::init`]), the process-wide tracer
//! (`global.rs`, public as [`crate::setup::global`]), and the bridge from the
//! `tracing` crate (`bridge.rs`, feature `tracing`, public as `crate::setup::bridge`).

#[cfg(feature = "tracing")]
pub mod bridge;
pub mod global;
pub mod init;
