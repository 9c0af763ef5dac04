//! `qtrace convert` (CTF, Chrome JSON, Perfetto), `analyze`, `plot`, combine
//! runs, run as the binary.
//!
//! One test binary, one module per file (tests/README.md is the map).

#[path = "../common/mod.rs"]
mod common;

mod analysis;
mod args_survive;
mod combine;
mod convert_beside;
mod convert_cli;
mod perfetto_cli;
