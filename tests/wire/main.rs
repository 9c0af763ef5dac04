//! The file and datagram format (FORMAT.md's worked examples), the reader's
//! block reads, the fuzz seed corpus and the fuzzers' regressions.
//!
//! One test binary, one module per file (tests/README.md is the map).

#[path = "../common/mod.rs"]
mod common;

mod compact_datagram;
mod compact_file;
mod format;
mod fuzz_corpus;
mod fuzz_corpus_receiver;
mod fuzz_regressions;
mod reader_blocks;
mod session_file;
