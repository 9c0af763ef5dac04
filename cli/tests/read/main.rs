//! `qtrace dump`, `stats`, `recover` and the command's messages, run as the
//! binary; the standard_init and corpus examples end to end.
//!
//! One test binary, one module per file (tests/README.md is the map).

#[path = "../common/mod.rs"]
mod common;

mod chunks;
mod cli;
mod compact_files;
mod completeness;
mod conventions;
mod corpus;
mod ctl;
mod edges;
mod error_messages;
mod queue_counters;
mod recover_cli;
mod rough_edges;
mod standard_init;
mod stats_total;
