//! The queue policies: the rings under threads, shards and the per-thread
//! cache, fixed/circular/online queues and their files, loss accounting under
//! stress, a hot path that never blocks.
//!
//! One test binary, one module per file (tests/README.md is the map).

#[path = "../common/mod.rs"]
mod common;
mod queues_support;

mod circular_cache;
mod compact_saves;
mod feed_cache;
mod hot_path_nonblocking;
mod online;
mod online_chunks;
mod online_counters;
mod queues_files;
mod queues_model;
mod queues_shards;
mod queues_threads;
mod stress_loss;
