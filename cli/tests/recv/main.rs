//! `qtrace recv`, run as the binary: streams, SIGINT, SIGKILL, a full disk.
//!
//! One test binary, one module per file (tests/README.md is the map).

#[path = "../common/mod.rs"]
mod common;

mod keys;
mod outputs;
mod recv_cli;
mod stream_end;
