//! The one error type of the wire codecs: what is wrong with the bytes, and
//! where (the byte offset from the start of the file or datagram).

use std::fmt;

/// Why bytes could not be decoded. Every variant names the byte offset at
/// which the problem was found, counted from the start of the file (or of the
/// datagram).
///
/// [`WireError::Truncated`] means "more bytes are needed" (the input ended
/// early); every other variant means the bytes that are there are wrong.
///
/// ```
/// use qtrace::wire::{TraceHeader, WireError};
///
/// // Eight bytes of a trace file's magic, then nothing: more bytes are needed.
/// let err = TraceHeader::decode(b"QTRC\r\n\x1a\n").unwrap_err();
/// assert!(err.is_truncated());
/// // Bytes that are not a trace file at all.
/// let err = TraceHeader::decode(b"%PDF-1.7 and so on, and so on, and so on, and on").unwrap_err();
/// assert!(matches!(err, WireError::BadMagic { .. }));
/// assert_eq!(err.offset(), 0);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WireError {
    /// The input ended before a complete item: `needed` bytes were expected at
    /// `offset`, only `available` are there.
    Truncated {
        /// Where the incomplete item starts.
        offset: u64,
        /// Bytes the item needs.
        needed: u64,
        /// Bytes that are there.
        available: u64,
        /// What was being read.
        what: &'static str,
    },
    /// The magic number is wrong: this is not a qtrace file or datagram.
    BadMagic {
        /// "trace file" or "datagram".
        what: &'static str,
    },
    /// A format version this reader does not know.
    UnsupportedVersion {
        /// Where the version field is: 8 in a trace file, 4 in a datagram.
        offset: u64,
        /// The version found.
        version: u16,
        /// The versions this reader accepts.
        supported: &'static [u16],
    },
    /// The byte-order mark is not the big-endian mark `01 02`.
    BadByteOrder {
        /// The mark found, read big-endian.
        found: u16,
    },
    /// The record size is not 32.
    BadRecordSize {
        /// The size found.
        found: u16,
    },
    /// A length field claims more than the format allows.
    TooLarge {
        /// Where the length field is.
        offset: u64,
        /// What the length measures.
        what: &'static str,
        /// The length claimed.
        len: u64,
        /// The largest length allowed.
        max: u64,
    },
    /// A field holds a value the format does not allow.
    Invalid {
        /// Where the field is.
        offset: u64,
        /// Which field.
        what: &'static str,
        /// What is wrong with it.
        reason: String,
    },
}

impl WireError {
    /// The byte offset the error refers to: the first byte of the field at
    /// fault (FORMAT.md 4.4). 0 for a wrong magic, 10 for the
    /// byte-order mark, 12 for the record size.
    pub fn offset(&self) -> u64 {
        match self {
            WireError::Truncated { offset, .. }
            | WireError::TooLarge { offset, .. }
            | WireError::Invalid { offset, .. }
            | WireError::UnsupportedVersion { offset, .. } => *offset,
            WireError::BadMagic { .. } => 0,
            WireError::BadByteOrder { .. } => 10,
            WireError::BadRecordSize { .. } => 12,
        }
    }

    /// Whether more input could fix it (the input ended early), as opposed to
    /// the bytes being corrupt.
    pub fn is_truncated(&self) -> bool {
        matches!(self, WireError::Truncated { .. })
    }

    /// The same error with its offset moved by `base` (for an item decoded
    /// from a slice that starts `base` bytes into the input).
    pub(crate) fn shifted(self, base: u64) -> Self {
        match self {
            WireError::Truncated {
                offset,
                needed,
                available,
                what,
            } => WireError::Truncated {
                offset: offset + base,
                needed,
                available,
                what,
            },
            WireError::TooLarge {
                offset,
                what,
                len,
                max,
            } => WireError::TooLarge {
                offset: offset + base,
                what,
                len,
                max,
            },
            WireError::Invalid {
                offset,
                what,
                reason,
            } => WireError::Invalid {
                offset: offset + base,
                what,
                reason,
            },
            other => other,
        }
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Truncated {
                offset,
                needed,
                available,
                what,
            } => write!(
                f,
                "truncated at byte {offset}: the {what} needs {needed} bytes but only {available} remain (the file was cut short or is still being written)"
            ),
            WireError::BadMagic { what } => write!(
                f,
                "not a qtrace {what}: the magic number at byte 0 is wrong"
            ),
            WireError::UnsupportedVersion {
                offset,
                version,
                supported,
            } => write!(
                f,
                "format version {version} at byte {offset} is not supported: this reader accepts versions {supported:?}; use a newer qtrace"
            ),
            WireError::BadByteOrder { found } => write!(
                f,
                "byte-order mark {found:#06x} at byte 10 is not the big-endian mark 0x0102: the file is corrupt"
            ),
            WireError::BadRecordSize { found } => write!(
                f,
                "record size {found} at byte 12 is impossible: qtrace records are 32 bytes; the file is corrupt"
            ),
            WireError::TooLarge {
                offset,
                what,
                len,
                max,
            } => write!(
                f,
                "corrupt at byte {offset}: the {what} claims {len} bytes, more than the {max} allowed"
            ),
            WireError::Invalid {
                offset,
                what,
                reason,
            } => write!(f, "corrupt at byte {offset}: {what}: {reason}"),
        }
    }
}

impl std::error::Error for WireError {}
