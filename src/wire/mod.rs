//! Byte formats, in the smoltcp style: checked views over bytes
//! (`new_checked` validates lengths once, then accessors cannot panic) and
//! value types that can only hold valid states (`parse` / `emit` /
//! `buffer_len`). Every integer is big-endian. FORMAT.md specifies each
//! format byte by byte.
//!
//! - [`record`]: the 32-byte event record.
//! - [`catalog`]: the class/event table, shared by file headers and datagrams.
//! - [`header`]: the trace-file header ([`TraceHeader`]).
//! - [`datagram`]: the UDP datagram.
//! - [`close`]: the close run that ends a complete trace file.
//! - [`TraceWriter`] and [`create_trace_file`] write trace files; the
//!   [reader](crate::reader) reads them.
//!
//! Decoding treats bytes as untrusted: no panic, no allocation larger than the
//! format's stated limits, and a typed [`WireError`] naming the byte offset.
#![forbid(unsafe_code)]

pub mod catalog;
pub mod close;
mod cursor;
pub mod datagram;
mod error;
pub mod header;
pub mod record;
mod writer;

pub use close::{CloseRecord, QueueTotals};
pub use error::WireError;
pub use header::{HeaderView, TraceHeader, FORMAT_VERSION, SUPPORTED_VERSIONS};
pub use writer::{create_trace_file, TraceWriter};
