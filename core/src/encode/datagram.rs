//! The 40-byte datagram header (FORMAT.md 2.1): its values
//! ([`DatagramHeader`], the one header value type; `qtrace` re-exports it as
//! `qtrace::wire::datagram::DatagramHeader`) and its encoder.
//!
//! ```
//! use qtrace_core::encode::datagram::{DatagramHeader, DatagramKind};
//!
//! let header = DatagramHeader { kind: DatagramKind::Events, sender: 7, sequence: 1, dropped: 0, first_event: 44 };
//! let mut buf = [0u8; 40];
//! header.emit(2, &mut buf);
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

/// What a datagram carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum DatagramKind {
    /// Event records.
    Events = KIND_EVENTS,
    /// A fragment of the sender's trace header (clock, host, class table).
    Catalog = KIND_CATALOG,
    /// The end of the sender's stream, with its final counts; sent several
    /// times, each copy the same.
    Close = KIND_CLOSE,
}

impl DatagramKind {
    /// The kind for a wire value, if it is one.
    ///
    /// ```
    /// use qtrace_core::encode::datagram::DatagramKind;
    ///
    /// assert_eq!(DatagramKind::from_u8(3), Some(DatagramKind::Close));
    /// assert_eq!(DatagramKind::from_u8(9), None);
    /// ```
    pub const fn from_u8(v: u8) -> Option<Self> {
        match v {
            KIND_EVENTS => Some(DatagramKind::Events),
            KIND_CATALOG => Some(DatagramKind::Catalog),
            KIND_CLOSE => Some(DatagramKind::Close),
            _ => None,
        }
    }
}

/// The header fields of a datagram, as values (every combination is valid);
/// the record or byte count is the payload's, given to [`DatagramHeader::emit`].
///
/// ```
/// use qtrace_core::encode::datagram::{DatagramHeader, DatagramKind};
///
/// let header = DatagramHeader { kind: DatagramKind::Close, sender: 1, sequence: 9, dropped: 0, first_event: 100 };
/// let mut buf = [0u8; 40];
/// header.emit(0, &mut buf);
/// assert_eq!(buf[6], 3); // the kind
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DatagramHeader {
    /// What the datagram carries.
    pub kind: DatagramKind,
    /// Who sent it (chosen by the sender; the receiver keeps state per sender
    /// id and source address).
    pub sender: u32,
    /// The sender's datagram number: 0, 1, 2, … across both kinds, so a gap
    /// is a lost datagram.
    pub sequence: u64,
    /// Events the sender has dropped since it started (cumulative, so a lost
    /// datagram does not lose the count).
    pub dropped: u64,
    /// Events the sender has sent (in events datagrams) before this datagram:
    /// the index of this datagram's first event in the sender's stream. The
    /// events of lost datagrams are the gaps between these ranges.
    pub first_event: u64,
}

impl DatagramHeader {
    /// Encodes the header into `out`, with `count` records (events), fragment
    /// bytes (catalog) or 0 (close).
    pub fn emit(&self, count: u16, out: &mut [u8; field::HEADER_LEN]) {
        out[field::MAGIC].copy_from_slice(&field::MAGIC_BYTES);
        BigEndian::write_u16(&mut out[field::VERSION..], field::VERSION_VALUE);
        out[field::KIND] = self.kind as u8;
        out[field::FLAGS] = 0;
        BigEndian::write_u32(&mut out[field::SENDER..], self.sender);
        BigEndian::write_u16(&mut out[field::COUNT..], count);
        BigEndian::write_u16(&mut out[field::RESERVED..], 0);
        BigEndian::write_u64(&mut out[field::SEQUENCE..], self.sequence);
        BigEndian::write_u64(&mut out[field::DROPPED..], self.dropped);
        BigEndian::write_u64(&mut out[field::FIRST_EVENT..], self.first_event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_is_big_endian_at_format_md_offsets() {
        let h = DatagramHeader {
            kind: DatagramKind::Catalog,
            sender: 0xdead_beef,
            sequence: 7,
            dropped: 3,
            first_event: 1 << 40,
        };
        let mut out = [0xffu8; field::HEADER_LEN];
        h.emit(300, &mut out);
        let mut want = [0u8; 40];
        want[..4].copy_from_slice(b"QTRU");
        want[4..6].copy_from_slice(&[0, 1]); // version 1
        want[6] = 2; // kind: catalog
        want[7] = 0; // flags
        want[8..12].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
        want[12..14].copy_from_slice(&[0x01, 0x2c]); // count 300
        want[14..16].copy_from_slice(&[0, 0]); // reserved
        want[16..24].copy_from_slice(&[0, 0, 0, 0, 0, 0, 0, 7]);
        want[24..32].copy_from_slice(&[0, 0, 0, 0, 0, 0, 0, 3]);
        want[32..40].copy_from_slice(&[0, 0, 1, 0, 0, 0, 0, 0]);
        assert_eq!(out, want);
    }
}
