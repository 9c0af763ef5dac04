//! `qtrace live` and `qtrace dump --follow`, run as the binary: the view in
//! a real terminal (tmux), its plain-text form, and a file followed as an
//! online queue writes it.
//!
//! One test binary, one module per file (tests/README.md is the map).

#[path = "../common/mod.rs"]
mod common;

mod follow;
mod plain;
mod stream;
mod terminal;
