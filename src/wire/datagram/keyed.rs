//! Keyed datagrams (FORMAT.md 2.6): version 2, the version 1 datagram with
//! a key id (bytes 14–15, reserved in version 1), the sender's session
//! (8 bytes after the 40-byte header) and a 16-byte tag at the end: the
//! first 16 bytes of HMAC-SHA256 under the key of every byte before it.
//! The payload stays in clear (RELIABILITY.md, "Security").
//!
//! Without feature `keys` a receiver still tells a keyed datagram apart
//! ([`keyed_fields`]), and counts it as sent with a key it does not hold.

#![forbid(unsafe_code)]

use super::*;

/// The version of a keyed datagram.
pub const KEYED_VERSION: u16 = 2;
/// The version of a keyed compact datagram: a version 3 datagram keyed as
/// version 2 keys a version 1 one (FORMAT.md 2.7).
pub const KEYED_COMPACT_VERSION: u16 = 4;

/// Whether `version` is a keyed one (2 or 4).
pub const fn is_keyed(version: u16) -> bool {
    version == KEYED_VERSION || version == KEYED_COMPACT_VERSION
}

/// The version of the datagram a keyed one carries (2 → 1, 4 → 3); any
/// other version is its own.
pub const fn unkeyed_version(version: u16) -> u16 {
    match version {
        KEYED_VERSION => VERSION,
        KEYED_COMPACT_VERSION => COMPACT_VERSION,
        v => v,
    }
}

/// The version a datagram of `version` takes once keyed (1 → 2, 3 → 4).
pub const fn keyed_version(version: u16) -> u16 {
    match version {
        COMPACT_VERSION => KEYED_COMPACT_VERSION,
        _ => KEYED_VERSION,
    }
}
/// `u16` key id (the version 1 reserved field).
pub const KEY_ID: usize = field::RESERVED;
/// `u64` session: the sender's start, nanoseconds since the Unix epoch.
pub const SESSION: usize = HEADER_LEN;
/// The length of the session field.
pub const SESSION_LEN: usize = 8;
/// The length of the tag at the end.
pub const TAG_LEN: usize = 16;
/// A keyed datagram is this much longer than the same datagram unkeyed.
pub const KEYED_OVERHEAD: usize = SESSION_LEN + TAG_LEN;
/// The shortest keyed datagram: the header, the session and the tag.
pub const MIN_KEYED_LEN: usize = HEADER_LEN + KEYED_OVERHEAD;

/// The key id and session of a keyed datagram (`bytes` starts with the
/// magic and version 2 or 4), checking only its length: FORMAT.md 4.3 steps 4
/// and 5 for version 2.
///
/// # Errors
/// [`WireError::Truncated`] below 64 bytes, [`WireError::TooLarge`] above
/// [`MAX_DATAGRAM_LEN`].
pub fn keyed_fields(bytes: &[u8]) -> Result<(u16, u64), WireError> {
    if bytes.len() < MIN_KEYED_LEN {
        return Err(truncated(0, MIN_KEYED_LEN, bytes.len(), "keyed datagram"));
    }
    if bytes.len() > MAX_DATAGRAM_LEN {
        return Err(WireError::TooLarge {
            offset: 0,
            what: "datagram",
            len: bytes.len() as u64,
            max: MAX_DATAGRAM_LEN as u64,
        });
    }
    Ok((be16(bytes, KEY_ID), be64(bytes, SESSION)))
}

/// The unkeyed datagram a keyed one carries: its header with version 1
/// (version 3 for a keyed compact one, 4) and a zero reserved field, then its payload (session and tag left out),
/// written into `out` (cleared first; no allocation once it has room).
/// `bytes` passed [`keyed_fields`].
pub fn unkeyed_into(bytes: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let end = bytes
        .len()
        .saturating_sub(TAG_LEN)
        .max(SESSION + SESSION_LEN);
    out.extend_from_slice(&bytes[..HEADER_LEN.min(bytes.len())]);
    if out.len() == HEADER_LEN {
        let version = unkeyed_version(be16(out, field::VERSION));
        out[field::VERSION..field::VERSION + 2].copy_from_slice(&version.to_be_bytes());
        out[KEY_ID..KEY_ID + 2].copy_from_slice(&[0, 0]);
    }
    if let Some(payload) = bytes.get(SESSION + SESSION_LEN..end) {
        out.extend_from_slice(payload);
    }
}

#[cfg(feature = "keys")]
pub use sealing::{seal, verify};

#[cfg(feature = "keys")]
mod sealing {
    use super::*;
    use crate::wire::key::DatagramKey;
    use hmac::Mac;

    /// Turns the version 1 (or 3) datagram in `buf[..len]` into a keyed one
    /// (version 2, or 4) under
    /// `key` with `session`, in place: `buf` must have room for
    /// [`KEYED_OVERHEAD`] more bytes. Returns the keyed length.
    ///
    /// # Errors
    /// [`WireError::Truncated`] when `buf` has no room or `len` is shorter
    /// than a header; [`WireError::TooLarge`] when the result would exceed
    /// [`MAX_DATAGRAM_LEN`].
    pub fn seal(
        key: &DatagramKey,
        session: u64,
        buf: &mut [u8],
        len: usize,
    ) -> Result<usize, WireError> {
        let keyed = len + KEYED_OVERHEAD;
        if len < HEADER_LEN || buf.len() < keyed {
            return Err(truncated(0, keyed, buf.len(), "keyed datagram buffer"));
        }
        if keyed > MAX_DATAGRAM_LEN {
            return Err(WireError::TooLarge {
                offset: 0,
                what: "datagram",
                len: keyed as u64,
                max: MAX_DATAGRAM_LEN as u64,
            });
        }
        let version = keyed_version(be16(buf, field::VERSION));
        buf.copy_within(HEADER_LEN..len, SESSION + SESSION_LEN);
        buf[field::VERSION..field::VERSION + 2].copy_from_slice(&version.to_be_bytes());
        buf[KEY_ID..KEY_ID + 2].copy_from_slice(&key.id().to_be_bytes());
        buf[SESSION..SESSION + SESSION_LEN].copy_from_slice(&session.to_be_bytes());
        let body = keyed - TAG_LEN;
        let mut mac = key.mac().clone();
        mac.update(&buf[..body]);
        let tag = mac.finalize().into_bytes();
        buf[body..keyed].copy_from_slice(&tag[..TAG_LEN]);
        Ok(keyed)
    }

    /// Whether the tag of the keyed datagram `bytes` (it passed
    /// [`keyed_fields`]) is right under `key`, compared in constant time.
    pub fn verify(key: &DatagramKey, bytes: &[u8]) -> bool {
        let Some(body) = bytes.len().checked_sub(TAG_LEN) else {
            return false;
        };
        let mut mac = key.mac().clone();
        mac.update(&bytes[..body]);
        mac.verify_truncated_left(&bytes[body..]).is_ok()
    }
}
