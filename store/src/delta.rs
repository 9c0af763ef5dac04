//! Parquet's DELTA_BINARY_PACKED encoding of 64-bit integers (the Parquet
//! format's Encodings.md): a header (block size 128, 4 miniblocks of 32,
//! the value count, the first value), then per block of 128 deltas their
//! minimum (zigzag ULEB128), the bit width of each miniblock (one byte
//! each, 0 for a miniblock past the last value) and the miniblocks, each
//! delta minus the minimum bit-packed least significant bit first; the last
//! miniblock padded with zeros to 32 values. Deltas wrap (two's
//! complement), as readers undo them.

use crate::names::varint;

/// Values per block.
const BLOCK: usize = 128;
/// Miniblocks per block.
const MINIBLOCKS: usize = 4;
/// Values per miniblock.
const MINI: usize = BLOCK / MINIBLOCKS;

/// `v` zigzag-encoded (0, -1, 1, -2 … as 0, 1, 2, 3 …).
#[inline]
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Appends `values` DELTA_BINARY_PACKED: a whole page's values.
pub(crate) fn encode(values: &[i64], out: &mut Vec<u8>) {
    varint(BLOCK as u64, out);
    varint(MINIBLOCKS as u64, out);
    varint(values.len() as u64, out);
    varint(zigzag(values.first().copied().unwrap_or(0)), out);
    let Some(&first) = values.first() else {
        return;
    };
    let mut deltas = [0u64; BLOCK];
    let mut prev = first;
    for chunk in values[1..].chunks(BLOCK) {
        let n = chunk.len();
        let mut min = i64::MAX;
        for (d, &x) in deltas.iter_mut().zip(chunk) {
            let delta = x.wrapping_sub(prev);
            prev = x;
            min = min.min(delta);
            *d = delta as u64;
        }
        varint(zigzag(min), out);
        let used = n.div_ceil(MINI);
        let mut widths = [0u8; MINIBLOCKS];
        for (k, w) in widths.iter_mut().enumerate().take(used) {
            let end = ((k + 1) * MINI).min(n);
            let mut any = 0u64;
            for d in &mut deltas[k * MINI..end] {
                *d = d.wrapping_sub(min as u64);
                any |= *d;
            }
            // Padding past the last value: zeros.
            deltas[end..(k + 1) * MINI].fill(0);
            *w = (64 - any.leading_zeros()) as u8;
        }
        out.extend_from_slice(&widths);
        for (k, &w) in widths.iter().enumerate().take(used) {
            pack(&deltas[k * MINI..(k + 1) * MINI], u32::from(w), out);
        }
    }
}

/// Appends 32 values of `width` bits, least significant bit first
/// (`width * 4` bytes): gathered in a 64-bit word, each full word stored
/// into room made at once (no 128-bit shifts, no capacity check a word).
#[inline]
fn pack(values: &[u64], width: u32, out: &mut Vec<u8>) {
    if width == 0 {
        return;
    }
    let start = out.len();
    out.resize(start + 4 * width as usize, 0);
    let mut words = out[start..].chunks_exact_mut(8);
    let mut acc = 0u64;
    let mut bits = 0u32;
    for &v in values {
        // `bits` < 64 here; `v` < 2^width (the widths are the values' own).
        acc |= v << bits;
        bits += width;
        if bits >= 64 {
            if let Some(w) = words.next() {
                w.copy_from_slice(&acc.to_le_bytes());
            }
            bits -= 64;
            // The bits of `v` past the word (none when `bits` is 0: a
            // shift by `width`, 64 at most, gives 0).
            acc = v.checked_shr(width - bits).unwrap_or(0);
        }
    }
    // 32 * width bits in all: an odd width leaves 4 bytes.
    let rest = words.into_remainder();
    let n = rest.len();
    rest.copy_from_slice(&acc.to_le_bytes()[..n]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(values: &[i64]) -> Vec<u8> {
        let mut out = Vec::new();
        encode(values, &mut out);
        out
    }

    #[test]
    fn a_constant_step_is_a_header_and_zero_widths() {
        // 128, 4, 5 values, first 10 (zigzag 20); one block: min delta 1
        // (zigzag 2), widths 1 used + 3 unused, all 0: no miniblock bytes.
        assert_eq!(
            enc(&[10, 11, 12, 13, 14]),
            vec![0x80, 0x01, 4, 5, 20, 2, 0, 0, 0, 0]
        );
        assert_eq!(enc(&[]), vec![0x80, 0x01, 4, 0, 0]);
        assert_eq!(enc(&[-3]), vec![0x80, 0x01, 4, 1, 5]);
    }

    #[test]
    fn deltas_above_the_minimum_are_bit_packed_and_padded() {
        // Deltas 1, 3, 2: min 1, then 0, 2, 1 in 2 bits, padded to 32
        // values (8 bytes).
        let out = enc(&[0, 1, 4, 6]);
        assert_eq!(&out[..9], &[0x80, 0x01, 4, 4, 0, 2, 2, 0, 0]);
        assert_eq!(out[9], 0);
        assert_eq!(&out[10..], &[0b01_10_00, 0, 0, 0, 0, 0, 0, 0]);
    }

    /// The bytes after the header (checked).
    fn body(values: &[i64]) -> Vec<u8> {
        let mut header = Vec::new();
        varint(128, &mut header);
        varint(4, &mut header);
        varint(values.len() as u64, &mut header);
        varint(zigzag(values[0]), &mut header);
        let out = enc(values);
        assert_eq!(&out[..header.len()], &header[..]);
        out[header.len()..].to_vec()
    }

    #[test]
    fn wrapping_deltas_take_up_to_64_bits() {
        // Deltas 1 (wrapped) and -1: min -1 (zigzag 1); 2 and 0 in 2 bits.
        assert_eq!(
            body(&[i64::MAX, i64::MIN, i64::MAX]),
            vec![1, 2, 0, 0, 0, 0b10, 0, 0, 0, 0, 0, 0, 0]
        );
        // Deltas MIN and MIN (0 - MIN wraps to MIN): nothing above the min.
        let mut want = Vec::new();
        varint(u64::MAX, &mut want);
        want.extend([0, 0, 0, 0]);
        assert_eq!(body(&[0, i64::MIN, 0]), want);
        // One delta of -1 (wrapped).
        assert_eq!(body(&[i64::MIN, i64::MAX]), vec![1, 0, 0, 0, 0]);
        // Deltas MAX, 2 (wrapped), MAX: min 2 (zigzag 4); MAX - 2 takes 63
        // bits, 32 of them 252 bytes.
        let b = body(&[0, i64::MAX, i64::MIN + 1, 0]);
        assert_eq!(&b[..5], &[4, 63, 0, 0, 0]);
        assert_eq!(b.len(), 5 + 63 * 4);
    }

    /// The packing against a plain bit-by-bit one, every width.
    #[test]
    fn every_width_packs_bit_for_bit() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for width in 1..=64u32 {
            let mask = if width == 64 {
                u64::MAX
            } else {
                (1 << width) - 1
            };
            let values: Vec<u64> = (0..MINI)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x & mask
                })
                .collect();
            let mut want = vec![0u8; 4 * width as usize];
            for (i, v) in values.iter().enumerate() {
                for b in 0..width as usize {
                    if v >> b & 1 == 1 {
                        let at = i * width as usize + b;
                        want[at / 8] |= 1 << (at % 8);
                    }
                }
            }
            let mut got = Vec::new();
            pack(&values, width, &mut got);
            assert_eq!(got, want, "width {width}");
        }
    }

    #[test]
    fn full_blocks_and_a_last_short_one() {
        // 1 + 128 + 33 values: two blocks, the second with 2 miniblocks.
        let v: Vec<i64> = (0..162).map(|i| i * 3 + (i % 2)).collect();
        let b = body(&v);
        // Deltas alternate 4, 2 (the first 4): min 2, values 2 and 0 in 2
        // bits; four miniblocks of 8 bytes.
        assert_eq!(&b[..5], &[4, 2, 2, 2, 2]);
        assert_eq!(b[5], 0b0010_0010);
        let second = &b[5 + 32..];
        assert_eq!(&second[..5], &[4, 2, 2, 0, 0]);
        assert_eq!(second.len(), 5 + 2 * 8);
    }
}
