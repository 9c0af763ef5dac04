//! Byte streams from firmware (FORMAT.md section 10): the compact stream
//! (section 8) in frames a UART, a USB CDC endpoint or a socket carries,
//! with every loss counted.
//!
//! A **frame** is a kind byte, a body and a CRC-32 ([`Crc32`], big-endian),
//! COBS-encoded so that it holds no zero byte, then a zero delimiter. The
//! kinds ([`FrameKind`]): the catalog (fragments of the trace header, as
//! catalog datagrams, FORMAT.md 2.2), a chunk (a compact chunk), the end (a
//! close datagram, 2.4). A host that attaches late skips to the next
//! delimiter, decodes the chunks from there (each is self-contained), and
//! names their events once the next catalog is in.
//!
//! - [`Drain`] (the firmware): takes events from a
//!   [`Ring`](crate::ring::Ring), fills chunks and hands frames to any
//!   `FnMut(&[u8]) -> usize` sink from the firmware's idle loop or a timer;
//!   never blocks a producer; when the sink is busy as a chunk fills, the
//!   chunk is dropped whole and the next one's `dropped` says exactly how
//!   many events were lost.
//! - [`RttRing`] (the firmware): a SEGGER-RTT-layout memory ring a debugger
//!   or QEMU reads while the core runs, the drain's sink; [`RttCursor`] (the
//!   host) takes from it only bytes the writer is done with, and counts
//!   exactly the bytes it missed (FORMAT.md 10.7).
//! - [`FrameDecoder`] (the host): bytes in any pieces, checked [`Frame`]s or
//!   typed [`FrameError`]s out, resynchronising at every delimiter.
//!
//! No allocation, no `unsafe`, no panic on any input; builds for thumbv6m.

mod cobs;
mod crc;
mod decode;
mod drain;
mod rtt;

pub use cobs::max_encoded_len;
pub use crc::Crc32;
pub use decode::{DecoderCounts, Frame, FrameDecoder, FrameError};
pub use drain::{BufferTooSmall, Drain, DrainStats, Status, MAX_CHUNK_EVENTS, MIN_BUFFER_LEN};
pub use rtt::{
    offset as rtt_offset, RttCursor, RttError, RttHeader, RttRing, RttTake, RTT_HEADER_LEN, RTT_ID,
    RTT_MAGIC,
};

/// The CRC-32 at the end of every frame: 4 bytes.
pub const CRC_LEN: usize = 4;

/// What a frame's body is (its first byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum FrameKind {
    /// A catalog fragment: a version 1 catalog datagram (FORMAT.md 2.2).
    Catalog = 1,
    /// A compact chunk (FORMAT.md 8).
    Chunk = 2,
    /// The end of the stream: a version 1 close datagram (FORMAT.md 2.4).
    End = 3,
}

impl FrameKind {
    /// The kind of byte `v`, if any.
    pub const fn from_u8(v: u8) -> Option<Self> {
        match v {
            1 => Some(FrameKind::Catalog),
            2 => Some(FrameKind::Chunk),
            3 => Some(FrameKind::End),
            _ => None,
        }
    }
}

/// Writes one whole frame — `kind`, `body`, their CRC-32, COBS, the
/// delimiter — into `out`; returns its length, or `None` when `out` is
/// shorter than `max_encoded_len(body.len() + 5) + 1`. (The [`Drain`]
/// writes the same bytes; this is for hosts, tests and other senders.)
///
/// ```
/// use qtrace_core::stream::{encode_frame, FrameKind};
///
/// let mut out = [0u8; 16];
/// let n = encode_frame(FrameKind::End, &[1, 2], &mut out).unwrap();
/// assert_eq!(&out[..n], [0x08, 0x03, 0x01, 0x02, 0x0a, 0x12, 0x37, 0x26, 0x00]);
/// ```
pub fn encode_frame(kind: FrameKind, body: &[u8], out: &mut [u8]) -> Option<usize> {
    if out.len() < max_encoded_len(body.len() + 1 + CRC_LEN) + 1 {
        return None;
    }
    let mut crc = Crc32::new();
    let k = [kind as u8];
    crc.update(&k);
    crc.update(body);
    let mut enc = cobs::Encoder::new(out, 0);
    enc.push(&k);
    enc.push(body);
    enc.push(&crc.value().to_be_bytes());
    Some(enc.finish())
}

#[cfg(test)]
mod tests;
