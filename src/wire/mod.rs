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
//! The layouts' field offsets and the encoders are the `no_std` core's
//! ([`qtrace_core::layout`], [`qtrace_core::encode`]): this module adds the
//! checked parsers, which read at the same offsets, and the `std` writers.
//! Wire knows no queue and no registry: a header carries a queue handle as a
//! number and a type name.
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
mod header_error;
pub mod record;
mod writer;

pub use close::{CloseRecord, QueueTotals};
pub use error::WireError;
pub use header::{HeaderView, QueueHandle, TraceHeader, FORMAT_VERSION, SUPPORTED_VERSIONS};
pub use header_error::HeaderFieldError;
pub use writer::{create_trace_file, TraceWriter};

/// The default UDP port of the `udp` queue and the receiver (`qtrace recv`).
pub const DEFAULT_PORT: u16 = qtrace_core::layout::DEFAULT_UDP_PORT;
