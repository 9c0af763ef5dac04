//! The UDP queue and the receiver: datagrams, losses, stream ends, the shutdown
//! deadline.
//!
//! One test binary, one module per file (tests/README.md is the map).

#[path = "../common/mod.rs"]
mod common;

mod churn_memory_out;
#[cfg(feature = "keys")]
mod keys;
mod receiver;
#[cfg(feature = "keys")]
mod sessions;
mod stream_end;
mod udp;
mod udp_shutdown_deadline;
