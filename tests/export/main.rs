//! Export and analysis: CTF and Chrome JSON (golden files), Perfetto, counters, combine
//! runs, `qtrace::analysis`.
//!
//! One test binary, one module per file (tests/README.md is the map).

#[path = "../common/mod.rs"]
mod common;

mod analysis;
mod combine;
mod combine_threads;
mod counters;
mod export;
mod flows;
mod perfetto_export;
mod scopes;
