//! Byte formats, in the smoltcp style: checked views over bytes
//! (`new_checked` validates lengths once, then accessors cannot panic) and
//! value types that can only hold valid states (`parse` / `emit` /
//! `buffer_len`). Every integer is big-endian. FORMAT.md specifies each
//! format byte by byte.
//!
//! - [`TraceHeader`]: the trace-file header (clock, host, queue, the class
//!   and event table).
//! - [`TraceWriter`] and [`create_trace_file`] write trace files; the
//!   [reader](crate::reader) reads them.
//! - [`CloseRecord`] and [`QueueTotals`]: the close run that ends a complete
//!   trace file; [`close_part`] and [`unclosed_stream`] tell its records and
//!   the receiver's [unclosed-stream marks](unclosed_mark) from events.
//!
//! The record, catalog and datagram layouts and their constants are not
//! public: FORMAT.md specifies every byte, so a decoder in any language is
//! written from it, and in Rust the [reader](crate::reader) and the
//! [receiver](crate::receiver) decode them for you.
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

pub(crate) mod catalog;
pub(crate) mod close;
mod cursor;
// Hidden, and not a compatibility path: the datagram codec is public only so
// that the fuzz targets, the `wire_throughput` example, the benches and the
// receiver's tests can encode and decode datagrams; it is not a stable API
// (see its module documentation).
#[doc(hidden)]
pub mod datagram;
mod error;
pub(crate) mod header;
mod header_error;
#[cfg(feature = "keys")]
mod key;
pub(crate) mod record;
mod writer;

pub use close::{close_part, unclosed_mark, unclosed_stream, CloseRecord, QueueTotals};
pub use error::WireError;
pub use header::TraceHeader;
pub use header_error::HeaderFieldError;
#[cfg(feature = "keys")]
pub use key::DatagramKey;
pub(crate) use writer::CHUNK_RECORDS;
pub use writer::{create_trace_file, TraceWriter};

/// The default UDP port of the `udp` queue and the receiver (`qtrace recv`).
pub const DEFAULT_PORT: u16 = qtrace_core::layout::DEFAULT_UDP_PORT;
