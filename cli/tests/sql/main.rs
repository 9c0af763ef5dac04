//! `qtrace sql` (feature `sql`): the ready views' figures against `qtrace
//! analyze` on the main job's trace, read as a Parquet store and as .qtr
//! files; the output formats byte for byte; the prompt on a pipe; bad
//! inputs and bad queries.
//!
//! One test binary, one module per file (tests/README.md is the map).

#[path = "../common/mod.rs"]
mod common;

mod command;
mod counters_flows;
mod install;
mod main_job;
mod queue_counters;
mod rejections;
