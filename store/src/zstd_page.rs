//! Zstd compression of pages into one reused buffer: a page's bytes are then
//! copied out at their compressed size. Compressing into a fresh vector of
//! the bound's size (the input's, about) allocated and freed hundreds of
//! KiB a page, which glibc handed back to the kernel and faulted in again
//! (page faults and `madvise` were 4 % of a conversion's CPU, measured).
//!
//! A page that zstd would not halve is stored instead: a zstd frame of raw
//! blocks (RFC 8878 3.1.1: the frame header with the content size, then the
//! bytes in blocks of at most 128 KiB, each behind a 3-byte block header),
//! which every zstd decoder reads and which costs a copy. Whether zstd
//! halves a page is judged on its first [`SAMPLE`] bytes: compressing
//! bit-packed deltas of scattered values ran at 300 MB/s to save a third.

use bytes::Bytes;
use parquet::errors::ParquetError;

/// The bytes of a page zstd is tried on first; pages under twice this are
/// compressed whole.
const SAMPLE: usize = 32 * 1024;

/// A raw block's largest size (RFC 8878 3.1.1.2.4, `Block_Maximum_Size`).
const BLOCK: usize = 128 * 1024;

/// A zstd context and its output buffer.
pub(crate) struct Zstd {
    compressor: zstd::bulk::Compressor<'static>,
    out: Vec<u8>,
}

fn zstd_err(e: std::io::Error) -> ParquetError {
    ParquetError::General(format!("zstd: {e}"))
}

impl Zstd {
    /// A context at `level`.
    ///
    /// # Errors
    /// [`ParquetError`] when zstd cannot make it.
    pub(crate) fn new(level: i32) -> Result<Self, ParquetError> {
        Ok(Zstd {
            compressor: zstd::bulk::Compressor::new(level).map_err(zstd_err)?,
            out: Vec::new(),
        })
    }

    /// `page` as one zstd frame: compressed, or stored when its first
    /// [`SAMPLE`] bytes do not compress to half.
    ///
    /// # Errors
    /// [`ParquetError`] when zstd fails.
    pub(crate) fn compress(&mut self, page: &[u8]) -> Result<Bytes, ParquetError> {
        if page.len() >= 2 * SAMPLE {
            self.squeeze(&page[..SAMPLE])?;
            if self.out.len() * 2 > SAMPLE {
                return Ok(Bytes::from(stored(page)));
            }
        }
        self.squeeze(page)?;
        Ok(Bytes::copy_from_slice(&self.out))
    }

    /// `input` compressed into `self.out`.
    fn squeeze(&mut self, input: &[u8]) -> Result<(), ParquetError> {
        self.out.clear();
        self.out
            .reserve(zstd::zstd_safe::compress_bound(input.len()));
        self.compressor
            .compress_to_buffer(input, &mut self.out)
            .map_err(zstd_err)?;
        Ok(())
    }
}

/// `data` as a zstd frame of raw blocks: the magic number, a frame header
/// descriptor `0xE0` (an 8-byte content size, a single segment: no window
/// descriptor, no dictionary, no checksum), the content size, then blocks of
/// at most [`BLOCK`] bytes, the last one flagged (one empty block for no
/// bytes).
fn stored(data: &[u8]) -> Vec<u8> {
    let blocks = data.len().div_ceil(BLOCK).max(1);
    let mut out = Vec::with_capacity(13 + 3 * blocks + data.len());
    out.extend_from_slice(&0xFD2F_B528u32.to_le_bytes());
    out.push(0xE0);
    out.extend_from_slice(&(data.len() as u64).to_le_bytes());
    let mut rest = data;
    loop {
        let n = rest.len().min(BLOCK);
        let last = u32::from(n == rest.len());
        // Block header: bit 0 last, bits 1-2 type (0: raw), bits 3-23 size.
        let header = last | (n as u32) << 3;
        out.extend_from_slice(&header.to_le_bytes()[..3]);
        out.extend_from_slice(&rest[..n]);
        rest = &rest[n..];
        if last == 1 {
            return out;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes no compressor shrinks (xorshift).
    fn noise(n: usize) -> Vec<u8> {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    #[test]
    fn stored_frames_are_read_by_zstd_at_every_block_boundary() {
        for n in [
            0,
            1,
            100,
            BLOCK - 1,
            BLOCK,
            BLOCK + 1,
            3 * BLOCK,
            3 * BLOCK + 7,
        ] {
            let data = noise(n);
            let frame = stored(&data);
            assert_eq!(
                frame.len(),
                13 + 3 * n.div_ceil(BLOCK).max(1) + n,
                "{n} bytes"
            );
            assert_eq!(&frame[..5], &[0x28, 0xB5, 0x2F, 0xFD, 0xE0]);
            let back = zstd::bulk::decompress(&frame, n).expect("a valid zstd frame");
            assert_eq!(back, data, "{n} bytes");
            // A streaming decoder, as readers that do not know the size use.
            let back = zstd::stream::decode_all(&frame[..]).expect("a valid zstd frame");
            assert_eq!(back, data, "{n} bytes, streamed");
        }
        // One empty last block: header 1 (last, raw, size 0).
        assert_eq!(&stored(&[])[13..], &[1, 0, 0]);
        // 5 bytes: header 5 << 3 | 1 = 41.
        assert_eq!(&stored(&[7; 5])[13..16], &[41, 0, 0]);
    }

    #[test]
    fn pages_that_zstd_would_not_halve_are_stored_and_others_compressed() {
        let mut z = Zstd::new(1).unwrap();
        // Noise: stored, 13 + 3 bytes a block more than the page.
        let page = noise(4 * SAMPLE);
        let out = z.compress(&page).unwrap();
        assert_eq!(out.len(), 13 + 3 + page.len());
        assert_eq!(zstd::bulk::decompress(&out, page.len()).unwrap(), page);
        // Repeating numbers: compressed far below half.
        let page: Vec<u8> = (0..4 * SAMPLE as u32 / 4)
            .flat_map(|i| (i % 7).to_le_bytes())
            .collect();
        let out = z.compress(&page).unwrap();
        assert!(out.len() * 20 < page.len(), "{} bytes", out.len());
        assert_eq!(zstd::bulk::decompress(&out, page.len()).unwrap(), page);
        // A small page of noise is compressed whole (zstd then stores it in
        // its own raw block: its frame, not ours).
        let page = noise(SAMPLE);
        let out = z.compress(&page).unwrap();
        assert_eq!(zstd::bulk::decompress(&out, page.len()).unwrap(), page);
        assert_ne!(out[4], 0xE0);
    }
}
