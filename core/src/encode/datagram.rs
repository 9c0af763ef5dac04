//! The 40-byte datagram header (FORMAT.md 2.1).
//!
//! ```
//! use qtrace_core::encode::datagram::{emit_header, HeaderFields, KIND_EVENTS};
//!
//! let mut buf = [0u8; 40];
//! emit_header(&HeaderFields { kind: KIND_EVENTS, sender: 7, count: 2, sequence: 1, dropped: 0, first_event: 44 }, &mut buf);
//! assert_eq!(&buf[..8], b"QTRU\x00\x01\x01\x00");
//! ```

use byteorder::{BigEndian, ByteOrder};

use crate::layout::datagram as field;

/// Kind 1: event records.
pub const KIND_EVENTS: u8 = 1;
/// Kind 2: a catalog fragment.
pub const KIND_CATALOG: u8 = 2;
/// Kind 3: close.
pub const KIND_CLOSE: u8 = 3;

/// The values of a datagram header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeaderFields {
    /// [`KIND_EVENTS`], [`KIND_CATALOG`] or [`KIND_CLOSE`].
    pub kind: u8,
    /// The sender id.
    pub sender: u32,
    /// Records (events), fragment bytes (catalog) or 0 (close).
    pub count: u16,
    /// The datagram's sequence number.
    pub sequence: u64,
    /// Events dropped by the sender since it started.
    pub dropped: u64,
    /// The index of this datagram's first record in the sender's stream.
    pub first_event: u64,
}

/// Encodes the header into `out`.
pub fn emit_header(h: &HeaderFields, out: &mut [u8; field::HEADER_LEN]) {
    out[field::MAGIC].copy_from_slice(&field::MAGIC_BYTES);
    BigEndian::write_u16(&mut out[field::VERSION..], field::VERSION_VALUE);
    out[field::KIND] = h.kind;
    out[field::FLAGS] = 0;
    BigEndian::write_u32(&mut out[field::SENDER..], h.sender);
    BigEndian::write_u16(&mut out[field::COUNT..], h.count);
    BigEndian::write_u16(&mut out[field::RESERVED..], 0);
    BigEndian::write_u64(&mut out[field::SEQUENCE..], h.sequence);
    BigEndian::write_u64(&mut out[field::DROPPED..], h.dropped);
    BigEndian::write_u64(&mut out[field::FIRST_EVENT..], h.first_event);
}
