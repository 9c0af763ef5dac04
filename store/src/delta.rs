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
///
/// One pass a block makes the deltas, their minimum and each miniblock's
/// greatest delta (its bit width: `max - min` has the highest bit of the
/// OR of every `delta - min`); the packing subtracts the minimum as it
/// goes. A miniblock of width 0 (a step that does not change, as `seq`'s)
/// is never read again.
pub(crate) fn encode(values: &[i64], out: &mut Vec<u8>) {
    varint(BLOCK as u64, out);
    varint(MINIBLOCKS as u64, out);
    varint(values.len() as u64, out);
    varint(zigzag(values.first().copied().unwrap_or(0)), out);
    let Some(&first) = values.first() else {
        return;
    };
    let mut deltas = [0i64; BLOCK];
    let mut prev = first;
    for chunk in values[1..].chunks(BLOCK) {
        let n = chunk.len();
        let mut min = i64::MAX;
        let mut max = [i64::MIN; MINIBLOCKS];
        for ((d, x), hi) in deltas
            .chunks_exact_mut(MINI)
            .zip(chunk.chunks(MINI))
            .zip(&mut max)
        {
            for (d, &x) in d.iter_mut().zip(x) {
                let delta = x.wrapping_sub(prev);
                prev = x;
                min = min.min(delta);
                *hi = (*hi).max(delta);
                *d = delta;
            }
        }
        varint(zigzag(min), out);
        let used = n.div_ceil(MINI);
        let mut widths = [0u8; MINIBLOCKS];
        for (w, &hi) in widths.iter_mut().zip(&max).take(used) {
            // `hi >= min`: the difference is exact as u64.
            *w = (64 - (hi.wrapping_sub(min) as u64).leading_zeros()) as u8;
        }
        out.extend_from_slice(&widths);
        // Padding past the last value: the minimum (packed as zeros).
        deltas[n..used * MINI].fill(min);
        for (k, &w) in widths.iter().enumerate().take(used) {
            pack(&deltas[k * MINI..(k + 1) * MINI], min, u32::from(w), out);
        }
    }
}

/// Appends 32 values of `width` bits, each `value - min` (wrapping, the
/// values at least `min`), least significant bit first (`width * 4`
/// bytes), by the packer of that width ([`fixed`]).
#[inline]
fn pack(values: &[i64], min: i64, width: u32, out: &mut Vec<u8>) {
    let (Ok(values), 1..=64) = (<&[i64; MINI]>::try_from(values), width) else {
        return;
    };
    let start = out.len();
    out.resize(start + 4 * width as usize, 0);
    fixed(values, min, width, &mut out[start..]);
}

/// One packer a width, its 32 steps unrolled: every shift and every
/// word's place is a constant (the generic loop's shift, add and branch a
/// value were half of the encoder's instructions, measured).
macro_rules! packers {
    ($($w:literal)*) => {
        /// `values` packed at `width` bits (1-64) into `out`
        /// (`width * 4` bytes).
        fn fixed(values: &[i64; MINI], min: i64, width: u32, out: &mut [u8]) {
            match width {
                $($w => packed::<$w>(values, min, out),)*
                _ => {}
            }
        }
    };
}

packers!(
    1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32
    33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62
    63 64
);

/// The packer of width `W`: gathered in a 64-bit word, each full word
/// stored as it fills; `out` is `4 * W` bytes.
#[inline(always)]
fn packed<const W: u32>(values: &[i64; MINI], min: i64, out: &mut [u8]) {
    if out.len() != 4 * W as usize {
        return;
    }
    let mut acc = 0u64;
    let mut bits = 0u32;
    let mut at = 0usize;
    // Unrolled by hand, `W` a constant: `bits` and `at` fold at every step.
    macro_rules! step {
        ($($i:literal)*) => {$(
            let v = values[$i].wrapping_sub(min) as u64;
            // `bits` < 64 here; `v` < 2^W (the width is the values' own).
            acc |= v << bits;
            bits += W;
            if bits >= 64 {
                out[at..at + 8].copy_from_slice(&acc.to_le_bytes());
                at += 8;
                bits -= 64;
                // The bits of `v` past the word (none when `bits` is 0).
                acc = if bits == 0 { 0 } else { v >> (W - bits) };
            }
        )*};
    }
    step!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
    // 32 * W bits in all: an odd width leaves 4 bytes.
    if at < out.len() {
        out[at..at + 4].copy_from_slice(&acc.to_le_bytes()[..4]);
    }
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
            let signed: Vec<i64> = values.iter().map(|&v| v as i64).collect();
            let mut got = Vec::new();
            pack(&signed, 0, width, &mut got);
            assert_eq!(got, want, "width {width}");
            // The same values above a minimum (wrapping as i64).
            let min = -(1i64 << 40) - 7;
            let above: Vec<i64> = values
                .iter()
                .map(|&v| (v as i64).wrapping_add(min))
                .collect();
            let mut got = Vec::new();
            pack(&above, min, width, &mut got);
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

    /// The encoder against the two-pass one it replaced (deltas and their
    /// minimum, then each miniblock's `delta - min` and their OR, then the
    /// packing), on steps of every size, wrapping ones included, and on
    /// lengths around the block and miniblock bounds.
    #[test]
    fn the_same_bytes_as_the_two_pass_encoder() {
        fn two_pass(values: &[i64], out: &mut Vec<u8>) {
            varint(BLOCK as u64, out);
            varint(MINIBLOCKS as u64, out);
            varint(values.len() as u64, out);
            varint(zigzag(values.first().copied().unwrap_or(0)), out);
            let Some(&first) = values.first() else {
                return;
            };
            let mut prev = first;
            for chunk in values[1..].chunks(BLOCK) {
                let n = chunk.len();
                let mut deltas = [0u64; BLOCK];
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
                    deltas[end..(k + 1) * MINI].fill(0);
                    *w = (64 - any.leading_zeros()) as u8;
                }
                out.extend_from_slice(&widths);
                for (k, &w) in widths.iter().enumerate().take(used) {
                    let d: Vec<i64> = deltas[k * MINI..(k + 1) * MINI]
                        .iter()
                        .map(|&d| d as i64)
                        .collect();
                    pack(&d, 0, u32::from(w), out);
                }
            }
        }
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for len in [1, 2, 31, 32, 33, 127, 128, 129, 160, 161, 257, 1000, 4097] {
            for shift in [0u32, 1, 7, 20, 40, 62, 63, 64] {
                let mut v = next() as i64;
                let values: Vec<i64> = (0..len)
                    .map(|i| {
                        let step = if shift == 64 { 1 } else { next() >> shift };
                        v = if i % 97 == 5 {
                            next() as i64
                        } else {
                            v.wrapping_add(step as i64)
                        };
                        v
                    })
                    .collect();
                let mut want = Vec::new();
                two_pass(&values, &mut want);
                assert_eq!(enc(&values), want, "len {len}, shift {shift}");
            }
        }
    }
}
