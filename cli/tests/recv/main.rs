//! `qtrace recv`, run as the binary: streams, SIGINT, SIGKILL, a full disk;
//! and what watches a stream or a growing file: `qtrace live` (in a real
//! terminal through tmux, and as plain text), `recv --live`, `dump --follow`.
//!
//! One test binary, one module per file (tests/README.md is the map).

#[path = "../common/mod.rs"]
mod common;

mod follow;
mod keys;
mod live_plain;
mod live_rates;
mod live_sizes;
mod live_stream;
mod live_terminal;
mod outputs;
mod recv_cli;
mod rtt_qmp;
mod serial;
mod serial_live;
mod stream_end;
