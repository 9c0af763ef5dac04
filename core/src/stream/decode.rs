//! The host's side: bytes in, checked frames out.

use core::fmt;

use super::crc::Crc32;
use super::{FrameKind, CRC_LEN};

/// One checked frame: its kind and its body (the bytes between the kind
/// byte and the CRC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// What the body is.
    pub kind: FrameKind,
    /// A version 1 catalog datagram ([`FrameKind::Catalog`]), a compact
    /// chunk ([`FrameKind::Chunk`]) or a version 1 close datagram
    /// ([`FrameKind::End`]); not checked further here.
    pub body: &'a [u8],
}

/// Why the bytes between two delimiters are not a frame. The decoder goes
/// on with the next frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FrameError {
    /// A COBS code byte announces more bytes than the frame has.
    Cobs,
    /// Fewer than 5 bytes once decoded (a kind byte and the CRC).
    TooShort {
        /// Decoded bytes.
        len: usize,
    },
    /// More bytes than the decoder's buffer holds.
    TooLong {
        /// The buffer's size.
        limit: usize,
    },
    /// The CRC-32 stored in the frame is not the one of its bytes.
    BadChecksum {
        /// The CRC computed over the kind and the body.
        computed: u32,
        /// The CRC the frame ends with.
        stored: u32,
    },
    /// A kind byte this decoder does not know (the CRC is right).
    UnknownKind {
        /// The kind byte.
        kind: u8,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            FrameError::Cobs => {
                f.write_str("a COBS code byte runs past the end of the frame (a cut frame)")
            }
            FrameError::TooShort { len } => {
                write!(f, "a frame of {len} bytes: at least 5 (kind and CRC-32)")
            }
            FrameError::TooLong { limit } => write!(
                f,
                "a frame longer than the decoder's {limit}-byte buffer (a lost delimiter?)"
            ),
            FrameError::BadChecksum { computed, stored } => write!(
                f,
                "bad CRC-32: the frame says {stored:#010x}, its bytes give {computed:#010x}"
            ),
            FrameError::UnknownKind { kind } => {
                write!(
                    f,
                    "unknown frame kind {kind} (known: 1 catalog, 2 chunk, 3 end)"
                )
            }
        }
    }
}

/// What [`FrameDecoder`] has seen so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DecoderCounts {
    /// Bytes fed.
    pub bytes: u64,
    /// Bytes skipped before the first delimiter (a host that attached in
    /// the middle of a frame).
    pub skipped: u64,
    /// Good frames.
    pub frames: u64,
    /// Bad frames (every [`FrameError`]).
    pub bad: u64,
}

/// Splits a byte stream at its zero delimiters, undoes COBS into a caller's
/// buffer and checks each frame's CRC-32 and kind (FORMAT.md 10). Safe code,
/// no allocation, no panic on any input.
///
/// A decoder starts unsynchronised: bytes before the first zero are
/// skipped (a host that attached in the middle of a frame cannot check
/// them). Empty frames (two zeros in a row) are nothing.
///
/// ```
/// use qtrace_core::stream::{FrameDecoder, FrameKind};
///
/// // A frame of kind 3 and body `01 02`, its CRC, COBS and the delimiter,
/// // after 3 bytes of the middle of an earlier frame.
/// let bytes = [7, 7, 7, 0, 0x08, 0x03, 0x01, 0x02, 0x0a, 0x12, 0x37, 0x26, 0];
/// let mut buf = [0u8; 64];
/// let mut decoder = FrameDecoder::new(&mut buf);
/// let mut frames = 0;
/// decoder.feed(&bytes, |frame| {
///     let frame = frame.unwrap();
///     assert_eq!((frame.kind, frame.body), (FrameKind::End, &[1u8, 2][..]));
///     frames += 1;
/// });
/// assert_eq!(frames, 1);
/// assert_eq!(decoder.counts().skipped, 3);
/// ```
#[derive(Debug)]
pub struct FrameDecoder<'b> {
    buf: &'b mut [u8],
    len: usize,
    /// Data bytes left in the current COBS block.
    left: u8,
    /// Whether the current block ends with a zero (its code is below 0xff).
    zero_after: bool,
    /// Whether any byte of this frame has been seen.
    started: bool,
    overflow: bool,
    synced: bool,
    counts: DecoderCounts,
}

impl<'b> FrameDecoder<'b> {
    /// A decoder whose frames may be as long as `buf` (decoded: kind, body
    /// and CRC). A chunk of up to `n` bytes needs `n + 5`.
    pub fn new(buf: &'b mut [u8]) -> Self {
        FrameDecoder {
            buf,
            len: 0,
            left: 0,
            zero_after: false,
            started: false,
            overflow: false,
            synced: false,
            counts: DecoderCounts::default(),
        }
    }

    /// The counts so far.
    pub fn counts(&self) -> DecoderCounts {
        self.counts
    }

    /// Whether the decoder has seen its first delimiter.
    pub fn is_synced(&self) -> bool {
        self.synced
    }

    /// Forgets the frame in progress and skips to the next delimiter, as at
    /// the start: for a reader that knows bytes are missing before the next
    /// ones it feeds ([`RttCursor::take`](super::RttCursor::take) said
    /// `lost > 0`), so that no frame is glued from two pieces. The bytes of
    /// the forgotten frame are not counted again; those skipped next are.
    pub fn resync(&mut self) {
        self.len = 0;
        self.left = 0;
        self.zero_after = false;
        self.started = false;
        self.overflow = false;
        self.synced = false;
    }

    /// Feeds `bytes`; every frame they end goes to `on`, good or bad, in
    /// order. A frame may span any number of calls.
    pub fn feed(&mut self, bytes: &[u8], mut on: impl FnMut(Result<Frame<'_>, FrameError>)) {
        self.counts.bytes += bytes.len() as u64;
        for &b in bytes {
            if !self.synced {
                if b == 0 {
                    self.synced = true;
                } else {
                    self.counts.skipped += 1;
                }
                continue;
            }
            if b == 0 {
                if self.started {
                    let r = self.end();
                    match r {
                        Ok(_) => self.counts.frames += 1,
                        Err(_) => self.counts.bad += 1,
                    }
                    on(r.map(|(kind, n)| Frame {
                        kind,
                        body: &self.buf[1..n - CRC_LEN],
                    }));
                }
                self.len = 0;
                self.left = 0;
                self.zero_after = false;
                self.started = false;
                self.overflow = false;
                continue;
            }
            if self.left == 0 {
                // A code byte.
                if self.started && self.zero_after {
                    self.put(0);
                }
                self.started = true;
                self.left = b - 1;
                self.zero_after = b != 0xff;
            } else {
                self.put(b);
                self.left -= 1;
            }
        }
    }

    #[inline]
    fn put(&mut self, b: u8) {
        match self.buf.get_mut(self.len) {
            Some(slot) => {
                *slot = b;
                self.len += 1;
            }
            None => self.overflow = true,
        }
    }

    /// Checks the frame that just ended: its kind and length.
    fn end(&self) -> Result<(FrameKind, usize), FrameError> {
        if self.overflow {
            return Err(FrameError::TooLong {
                limit: self.buf.len(),
            });
        }
        if self.left != 0 {
            return Err(FrameError::Cobs);
        }
        let n = self.len;
        if n < 1 + CRC_LEN {
            return Err(FrameError::TooShort { len: n });
        }
        let frame = &self.buf[..n];
        let computed = Crc32::of(&frame[..n - CRC_LEN]);
        let stored = u32::from_be_bytes([frame[n - 4], frame[n - 3], frame[n - 2], frame[n - 1]]);
        if computed != stored {
            return Err(FrameError::BadChecksum { computed, stored });
        }
        let kind =
            FrameKind::from_u8(frame[0]).ok_or(FrameError::UnknownKind { kind: frame[0] })?;
        Ok((kind, n))
    }
}
