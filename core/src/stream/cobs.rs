//! Consistent Overhead Byte Stuffing: a frame's bytes without any zero, so
//! that a zero byte delimits frames.

/// The most bytes COBS turns `n` bytes into (without the delimiter): one
/// code byte per 254 bytes, and one more.
pub const fn max_encoded_len(n: usize) -> usize {
    n + n / 254 + 1
}

/// A COBS encoder writing into a caller's buffer, fed in pieces.
#[derive(Debug)]
pub(crate) struct Encoder<'a> {
    out: &'a mut [u8],
    /// Where the current block's code byte goes.
    code_at: usize,
    /// The next byte's place.
    pos: usize,
}

impl<'a> Encoder<'a> {
    /// Starts at `out[start]`. The caller sized `out` with
    /// [`max_encoded_len`] (plus the delimiter).
    pub(crate) fn new(out: &'a mut [u8], start: usize) -> Self {
        Encoder {
            out,
            code_at: start,
            pos: start + 1,
        }
    }

    #[inline]
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if b == 0 {
                self.out[self.code_at] = (self.pos - self.code_at) as u8;
                self.code_at = self.pos;
                self.pos += 1;
            } else {
                self.out[self.pos] = b;
                self.pos += 1;
                if self.pos - self.code_at == 0xff {
                    self.out[self.code_at] = 0xff;
                    self.code_at = self.pos;
                    self.pos += 1;
                }
            }
        }
    }

    /// Ends the frame with its delimiter; returns the bytes written from
    /// `out[0]`.
    pub(crate) fn finish(self) -> usize {
        self.out[self.code_at] = (self.pos - self.code_at) as u8;
        self.out[self.pos] = 0;
        self.pos + 1
    }
}
