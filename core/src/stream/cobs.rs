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

    /// Appends `bytes`. Every byte lands where a byte-at-a-time encoder
    /// puts it, a zero's place taking the next block's code: so the bytes
    /// are copied a word at a time, and each zero among them (a word with
    /// one is looked at byte by byte) closes the block before it, its code
    /// the distance to the zero. A block holds at most 254 non-zero bytes:
    /// a span never runs past that, and a full block is closed with 0xff.
    #[inline]
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while !rest.is_empty() {
            // Bytes the block takes before it must be closed (1 to 254).
            let room = 0xff - (self.pos - self.code_at);
            let (span, after) = rest.split_at(rest.len().min(room));
            let words = span.chunks_exact(4);
            let tail = words.remainder();
            let mut at = self.pos;
            for w in words {
                let w = [w[0], w[1], w[2], w[3]];
                self.out[at..at + 4].copy_from_slice(&w);
                let x = u32::from_le_bytes(w);
                if x.wrapping_sub(0x0101_0101) & !x & 0x8080_8080 != 0 {
                    for (k, &b) in w.iter().enumerate() {
                        if b == 0 {
                            self.close_at(at + k);
                        }
                    }
                }
                at += 4;
            }
            for &b in tail {
                self.out[at] = b;
                if b == 0 {
                    self.close_at(at);
                }
                at += 1;
            }
            self.pos = at;
            rest = after;
            if self.pos - self.code_at == 0xff {
                self.out[self.code_at] = 0xff;
                self.code_at = self.pos;
                self.pos += 1;
            }
        }
    }

    /// The zero at `zero` closes the block: its code is the distance.
    #[inline(always)]
    fn close_at(&mut self, zero: usize) {
        self.out[self.code_at] = (zero - self.code_at) as u8;
        self.code_at = zero;
    }

    /// Ends the frame with its delimiter; returns the bytes written from
    /// `out[0]`.
    pub(crate) fn finish(self) -> usize {
        self.out[self.code_at] = (self.pos - self.code_at) as u8;
        self.out[self.pos] = 0;
        self.pos + 1
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::vec::Vec;

    use super::*;
    use proptest::prelude::*;

    /// The byte-at-a-time encoder this one replaced: the reference.
    fn reference(pieces: &[Vec<u8>], start: usize) -> Vec<u8> {
        let len: usize = pieces.iter().map(Vec::len).sum();
        let mut out = std::vec![0u8; start + max_encoded_len(len) + 1];
        let (mut code_at, mut pos) = (start, start + 1);
        for &b in pieces.iter().flatten() {
            if b == 0 {
                out[code_at] = (pos - code_at) as u8;
                code_at = pos;
                pos += 1;
            } else {
                out[pos] = b;
                pos += 1;
                if pos - code_at == 0xff {
                    out[code_at] = 0xff;
                    code_at = pos;
                    pos += 1;
                }
            }
        }
        out[code_at] = (pos - code_at) as u8;
        out[pos] = 0;
        out.truncate(pos + 1);
        out
    }

    fn encoded(pieces: &[Vec<u8>], start: usize) -> Vec<u8> {
        let len: usize = pieces.iter().map(Vec::len).sum();
        let mut out = std::vec![0u8; start + max_encoded_len(len) + 1];
        let mut enc = Encoder::new(&mut out, start);
        for p in pieces {
            enc.push(p);
        }
        let n = enc.finish();
        out.truncate(n);
        out
    }

    /// Zero-free runs of 253 to 256 around a zero, in pieces cut anywhere.
    #[test]
    fn block_boundaries_match_the_reference() {
        for run in 250..260 {
            for tail in [0usize, 1, 2, 300] {
                let mut bytes: Vec<u8> = (0..run).map(|i| (i % 255 + 1) as u8).collect();
                bytes.push(0);
                bytes.extend((0..tail).map(|i| (i % 7) as u8));
                for cut in [0, 1, 3, 4, 5, 254, 255] {
                    let cut = cut.min(bytes.len());
                    let pieces = [bytes[..cut].to_vec(), bytes[cut..].to_vec()];
                    assert_eq!(
                        encoded(&pieces, 1),
                        reference(&pieces, 1),
                        "{run} {tail} {cut}"
                    );
                }
            }
        }
    }

    proptest! {
        #[test]
        fn writes_the_reference_bytes(
            pieces in prop::collection::vec(
                prop::collection::vec(prop_oneof![Just(0u8), 1u8..=255, 1u8..=255, 1u8..=255], 0..600),
                0..5,
            ),
            start in 0usize..2,
        ) {
            prop_assert_eq!(encoded(&pieces, start), reference(&pieces, start));
        }
    }
}
