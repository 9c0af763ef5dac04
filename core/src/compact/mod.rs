//! The compact stream (FORMAT.md section 8): events in about 5 bytes instead
//! of 32, in self-contained **chunks** that carry the loss arithmetic of the
//! datagram header (sender, sequence, first event, dropped so far) and a
//! base time.
//!
//! A chunk is a 48-byte header ([`ChunkHeader`], [`HEADER_LEN`]) and its
//! records, each a header byte, an optional extension byte, varint (LEB128)
//! fields and optional arguments. The table of interned `(id, source)`
//! pairs starts empty in every chunk, so a decoder can start at any chunk
//! boundary with no other state. Every 32-byte [`Event`](crate::Event)
//! round-trips exactly (time, id, flags, source and both arguments); a record
//! takes at most [`MAX_RECORD_LEN`] bytes.
//!
//! - [`ChunkEncoder`] writes into a caller's `&mut [u8]` and says
//!   [`Full`] when the next record does not fit, so the caller finishes the
//!   chunk and starts the next; [`ChunkEncoder::push_run`] writes a combine
//!   run whole or not at all.
//! - [`Chunk`] is a checked view (`new_checked` validates the header and the
//!   length once) whose [`records`](Chunk::records) iterator yields each
//!   [`Event`](crate::Event) or a typed [`DecodeError`], never panicking.
//!
//! ```
//! use qtrace_core::compact::{Chunk, ChunkEncoder, ChunkHeader};
//! use qtrace_core::{Event, EventId};
//!
//! let header = ChunkHeader { sender: 42, sequence: 0, first_event: 0, dropped: 0, base_time: 0 };
//! let mut buf = [0u8; 256];
//! let mut enc = ChunkEncoder::new(&mut buf, header).unwrap();
//! let events = [
//!     Event::new(1_000, EventId(0x04), 1, [3, 0]),
//!     Event::new(1_250, EventId(0x04), 1, [4, 0]),
//!     Event::new(1_200, EventId(0x13), 0, [15, 0]), // time went back
//! ];
//! for e in &events {
//!     enc.push(e).unwrap();
//! }
//! let n = enc.finish();
//! assert_eq!(n, 48 + 15); // 5 bytes an event
//!
//! let chunk = Chunk::new_checked(&buf[..n]).unwrap();
//! assert_eq!(chunk.header().base_time, 1_000);
//! let mut decoded = chunk.records();
//! for e in &events {
//!     assert_eq!(decoded.next(), Some(Ok(*e)));
//! }
//! assert_eq!(decoded.next(), None);
//! ```

mod decode;
mod encode;
mod varint;

use core::fmt;

pub use decode::{Chunk, Records};
pub use encode::{ChunkEncoder, Full};

/// The first 4 bytes of every chunk: `QTRZ`.
pub const MAGIC: [u8; 4] = *b"QTRZ";
/// The compact stream version written and read.
pub const VERSION: u16 = 1;
/// The versions [`Chunk::new_checked`] accepts.
pub const SUPPORTED_VERSIONS: [u16; 1] = [VERSION];
/// The size of a chunk's header.
pub const HEADER_LEN: usize = 48;
/// Entries of a chunk's interning table: codes `0..=30` name an entry.
pub const TABLE_LEN: usize = 31;
/// The header-byte code of a literal record: its id and source follow.
pub const LITERAL: u8 = 31;
/// The largest encoded record: header and extension bytes (2), a literal id
/// (3) and source (5), a time delta (10), flags (3) and two raw arguments
/// (16).
pub const MAX_RECORD_LEN: usize = 39;
/// The smallest encoded record: a header byte and a one-byte time delta.
pub const MIN_RECORD_LEN: usize = 2;

/// Header-byte bit 2: `arg0` is present (else it is 0).
pub const ARG0_PRESENT: u8 = 0x04;
/// Header-byte bit 1: `arg1` is present (else it is 0).
pub const ARG1_PRESENT: u8 = 0x02;
/// Header-byte bit 0: an extension byte follows.
pub const EXTENDED: u8 = 0x01;
/// Extension bit 0: the time delta is subtracted (time went backwards).
pub const EXT_BACKWARDS: u8 = 0x01;
/// Extension bit 1: a flags varint follows the time delta (else flags are 0).
pub const EXT_FLAGS: u8 = 0x02;
/// Extension bit 2: `arg0` is 8 raw big-endian bytes, not a varint.
pub const EXT_ARG0_RAW: u8 = 0x04;
/// Extension bit 3: `arg1` is 8 raw big-endian bytes, not a varint.
pub const EXT_ARG1_RAW: u8 = 0x08;
/// Extension bits 4–7: reserved, zero (a chunk with one set is corrupt).
pub const EXT_RESERVED: u8 = 0xf0;

/// Byte offsets of the chunk header's fields (every integer big-endian).
pub mod field {
    /// `[u8; 4]` magic.
    pub const MAGIC: core::ops::Range<usize> = 0..4;
    /// `u16` version.
    pub const VERSION: usize = 4;
    /// `u16` records in the chunk.
    pub const COUNT: usize = 6;
    /// `u32` sender id.
    pub const SENDER: usize = 8;
    /// `u32` bytes of records after the header.
    pub const LENGTH: usize = 12;
    /// `u64` sequence number.
    pub const SEQUENCE: usize = 16;
    /// `u64` the stream index of the chunk's first record.
    pub const FIRST_EVENT: usize = 24;
    /// `u64` events dropped by the sender so far.
    pub const DROPPED: usize = 32;
    /// `u64` base time.
    pub const BASE_TIME: usize = 40;
}

/// The values of a chunk's header that the writer chooses (the record count
/// and the payload length are the encoder's); every combination is valid.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ChunkHeader {
    /// Who sent the stream (the datagram header's sender id).
    pub sender: u32,
    /// The chunk's number in the stream: 0, 1, 2, …, so a gap is a lost
    /// chunk.
    pub sequence: u64,
    /// The records in every chunk numbered below this one (sent, whether
    /// they arrived or not): the stream index of this chunk's first record.
    pub first_event: u64,
    /// Events the sender dropped since it started (cumulative).
    pub dropped: u64,
    /// The time the first record's delta counts from. [`ChunkEncoder`]
    /// writes the first record's time here (so its delta is 0); a chunk with
    /// no record keeps the value it was given.
    pub base_time: u64,
}

impl ChunkHeader {
    /// The header of the chunk after one of `count` records: the next
    /// sequence number, `first_event + count`, and `dropped` (the sender's
    /// count when it opens the next chunk).
    ///
    /// ```
    /// use qtrace_core::compact::ChunkHeader;
    ///
    /// let h = ChunkHeader { sender: 7, sequence: 5, first_event: 120, dropped: 3, base_time: 0 };
    /// let next = h.following(90, 4);
    /// assert_eq!((next.sequence, next.first_event, next.dropped), (6, 210, 4));
    /// ```
    pub const fn following(&self, count: u16, dropped: u64) -> ChunkHeader {
        ChunkHeader {
            sender: self.sender,
            sequence: self.sequence.wrapping_add(1),
            first_event: self.first_event.wrapping_add(count as u64),
            dropped,
            base_time: self.base_time,
        }
    }
}

/// Why a chunk's bytes do not decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// The bytes end before the chunk does: `needed` bytes make the chunk
    /// (or its header), `available` are there. More bytes may complete it.
    Truncated {
        /// Bytes the chunk (or its header) needs.
        needed: usize,
        /// Bytes given.
        available: usize,
    },
    /// The first 4 bytes are not `QTRZ`: not a compact chunk.
    BadMagic,
    /// A version this decoder does not read ([`SUPPORTED_VERSIONS`]).
    UnsupportedVersion {
        /// The version found.
        version: u16,
    },
    /// The chunk is whole but its bytes are impossible: more bytes will not
    /// help. `offset` is from the chunk's first byte.
    Corrupt {
        /// The byte the problem was found at (a record's header byte, or a
        /// header field).
        offset: usize,
        /// What is wrong.
        what: &'static str,
    },
}

impl DecodeError {
    /// Whether more bytes may make the input decode ([`DecodeError::Truncated`]).
    pub const fn is_truncated(&self) -> bool {
        matches!(self, DecodeError::Truncated { .. })
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DecodeError::Truncated { needed, available } => write!(
                f,
                "truncated compact chunk: it needs {needed} bytes but only {available} are there"
            ),
            DecodeError::BadMagic => f.write_str("not a compact chunk: the magic is not QTRZ"),
            DecodeError::UnsupportedVersion { version } => write!(
                f,
                "compact stream version {version} is not supported: this decoder reads \
                 versions {SUPPORTED_VERSIONS:?}; use a newer qtrace"
            ),
            DecodeError::Corrupt { offset, what } => {
                write!(f, "corrupt compact chunk at byte {offset}: {what}")
            }
        }
    }
}
