//! Setting a tracer up beyond the two phases (those and the standard preset
//! are the crate's `init.rs`, [`crate::init`]): the process-wide tracer
//! (`global.rs`, public as [`crate::global`]), and the bridge from the
//! `tracing` crate (`bridge.rs`, feature `tracing`, public as `crate::bridge`).

#[cfg(feature = "tracing")]
pub mod bridge;
pub mod global;
