//! Bounds-checked big-endian reading and writing, shared by the codecs.
//! Every read either returns a value or a [`WireError::Truncated`]; nothing
//! here can panic.

use super::WireError;

/// Reads big-endian fields from a byte slice, tracking the offset.
#[derive(Debug)]
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Cursor { bytes, pos: 0 }
    }

    /// Bytes consumed so far.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    pub(crate) fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], WireError> {
        match self.bytes.get(self.pos..).and_then(|rest| rest.get(..n)) {
            Some(s) => {
                self.pos += n;
                Ok(s)
            }
            None => Err(WireError::Truncated {
                offset: self.pos as u64,
                needed: n as u64,
                available: self.remaining() as u64,
                what,
            }),
        }
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], WireError> {
        let s = self.take(N, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, WireError> {
        Ok(self.array::<1>(what)?[0])
    }

    pub(crate) fn u16(&mut self, what: &'static str) -> Result<u16, WireError> {
        Ok(u16::from_be_bytes(self.array(what)?))
    }

    /// A string: a u16 length then that many bytes of UTF-8, at most `max`
    /// bytes long.
    pub(crate) fn str(&mut self, what: &'static str, max: usize) -> Result<&'a str, WireError> {
        let at = self.pos as u64;
        let len = self.u16(what)? as usize;
        if len > max {
            return Err(WireError::TooLarge {
                offset: at,
                what,
                len: len as u64,
                max: max as u64,
            });
        }
        // A string cut short is reported where it starts (its length field),
        // like every other incomplete item (FORMAT.md 4.4).
        let bytes = self.take(len, what).map_err(|e| match e {
            WireError::Truncated {
                needed, available, ..
            } => WireError::Truncated {
                offset: at,
                needed: needed + 2,
                available: available + 2,
                what,
            },
            other => other,
        })?;
        std::str::from_utf8(bytes).map_err(|_| WireError::Invalid {
            offset: at + 2,
            what,
            reason: "not valid UTF-8".into(),
        })
    }
}

/// Reads a big-endian u16 at `at` of a slice known to be long enough.
pub(crate) fn be16(b: &[u8], at: usize) -> u16 {
    let mut a = [0u8; 2];
    a.copy_from_slice(&b[at..at + 2]);
    u16::from_be_bytes(a)
}

/// Reads a big-endian u32 at `at` of a slice known to be long enough.
pub(crate) fn be32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_be_bytes(a)
}

/// Reads a big-endian u64 at `at` of a slice known to be long enough.
pub(crate) fn be64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(a)
}
