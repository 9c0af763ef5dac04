//! LEB128 varints: 7 bits a byte, least significant group first, the top
//! bit set on every byte but the last; a `u64` takes 1 to 10 bytes.

/// The bytes [`write`] takes for `v` (1 to 10).
#[cfg(test)]
#[inline(always)]
pub(crate) const fn len(v: u64) -> usize {
    // 64 - leading zeros = significant bits (0 for v = 0, which takes 1 byte).
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Writes `v` at `out[*pos..]`, advancing `pos`. The caller has checked
/// that `len(v)` bytes are there.
#[inline(always)]
pub(crate) fn write(out: &mut [u8], pos: &mut usize, v: u64) {
    if v < 0x80 {
        out[*pos] = v as u8;
        *pos += 1;
    } else if let Ok(v) = u32::try_from(v) {
        // 32-bit shifts: one register on a 32-bit MCU, not two.
        write_u32(out, pos, v);
    } else {
        write_u64(out, pos, v);
    }
}

/// Writes `v` into `out` (a `u32` takes 1 to 5 bytes); returns the bytes
/// written, as [`write`] does for the same value. Unrolled, every index
/// constant: no loop and no bounds check on a 32-bit MCU.
#[inline(always)]
pub(crate) fn put_u32(out: &mut [u8; 5], v: u32) -> usize {
    if v < 1 << 7 {
        out[0] = v as u8;
        return 1;
    }
    out[0] = v as u8 | 0x80;
    if v < 1 << 14 {
        out[1] = (v >> 7) as u8;
        return 2;
    }
    out[1] = (v >> 7) as u8 | 0x80;
    if v < 1 << 21 {
        out[2] = (v >> 14) as u8;
        return 3;
    }
    out[2] = (v >> 14) as u8 | 0x80;
    if v < 1 << 28 {
        out[3] = (v >> 21) as u8;
        return 4;
    }
    out[3] = (v >> 21) as u8 | 0x80;
    out[4] = (v >> 28) as u8;
    5
}

#[inline]
fn write_u32(out: &mut [u8], pos: &mut usize, mut v: u32) {
    while v >= 0x80 {
        out[*pos] = (v as u8) | 0x80;
        *pos += 1;
        v >>= 7;
    }
    out[*pos] = v as u8;
    *pos += 1;
}

#[inline]
fn write_u64(out: &mut [u8], pos: &mut usize, mut v: u64) {
    while v >= 0x80 {
        out[*pos] = (v as u8) | 0x80;
        *pos += 1;
        v >>= 7;
    }
    out[*pos] = v as u8;
    *pos += 1;
}

/// Reads a varint at `buf[*pos..]`, advancing `pos`: `None` when it runs
/// past the end of `buf` or does not fit 64 bits (an 11th byte, or a 10th
/// carrying more than the top bit).
#[inline(always)]
pub(crate) fn read(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let b = *buf.get(*pos)?;
    *pos += 1;
    if b < 0x80 {
        return Some(b as u64);
    }
    let mut v = (b & 0x7f) as u64;
    let mut shift = 7;
    loop {
        let b = *buf.get(*pos)?;
        *pos += 1;
        if shift == 63 {
            // The 10th byte holds bit 63 only.
            return if b > 1 {
                None
            } else {
                Some(v | (b as u64) << 63)
            };
        }
        v |= ((b & 0x7f) as u64) << shift;
        if b < 0x80 {
            return Some(v);
        }
        shift += 7;
    }
}

/// Reads a varint as [`read`] does (the same value, bytes taken and
/// refusals): a varint of one or two bytes directly; else in one 8-byte
/// load and a few shifts, without a loop, when 8 bytes are there and the
/// varint ends within them (every value below 2⁵⁶); else byte by byte.
#[inline(always)]
pub(crate) fn read_fast(buf: &[u8], pos: &mut usize) -> Option<u64> {
    // One byte, the most common (small arguments, short deltas): no load of 8.
    if let Some(&b) = buf.get(*pos) {
        if b < 0x80 {
            *pos += 1;
            return Some(b as u64);
        }
        // Two bytes, the next most common (a real clock's deltas of
        // 128 ns to 16 µs): fewer steps than gathering a word's groups.
        if let Some(&c) = buf.get(*pos + 1) {
            if c < 0x80 {
                *pos += 2;
                return Some((b & 0x7f) as u64 | (c as u64) << 7);
            }
        }
    }
    if let Some(w) = buf.get(*pos..).and_then(<[u8]>::first_chunk::<8>) {
        let x = u64::from_le_bytes(*w);
        let stops = stops8(x);
        if stops != 0 {
            *pos += gathered_len(stops);
            return Some(gather8(x, stops));
        }
    }
    read(buf, pos)
}

/// The bytes of `x` (8 bytes, little-endian) that a varint can end at:
/// bit 7 of each byte clear. Zero when no varint ends within them.
#[inline(always)]
fn stops8(x: u64) -> u64 {
    !x & 0x8080_8080_8080_8080
}

/// The bytes the varint at the low byte takes, given its `stops8` (not 0):
/// the lowest stop bit is bit 8k + 7 of the k-th byte, so k + 1 bytes.
#[inline(always)]
fn gathered_len(stops: u64) -> usize {
    (stops.trailing_zeros() as usize + 1) / 8
}

/// The value of the varint at the low byte of `x`, given its `stops8`
/// (not 0): the bytes up to the last one, then their 7-bit groups gathered
/// pairwise (14 bits in each 16, 28 in each 32, 56) — one load and a few
/// shifts, no loop: [`read_fast`]'s and [`read_window`]'s common step.
#[inline(always)]
fn gather8(x: u64, stops: u64) -> u64 {
    let x = x & (stops ^ (stops - 1));
    let x = (x & 0x007f_007f_007f_007f) | ((x & 0x7f00_7f00_7f00_7f00) >> 1);
    let x = (x & 0x0000_3fff_0000_3fff) | ((x & 0x3fff_0000_3fff_0000) >> 2);
    (x & 0x0000_0000_0fff_ffff) | ((x & 0x0fff_ffff_0000_0000) >> 4)
}

/// Reads a varint at `w[*at..]` as [`read`] does when it ends within the
/// 8 bytes from `*at` (every value below 2⁵⁶), advancing `at`; `None`
/// otherwise, with `at` unchanged (the caller reads it the slow way). `*at`
/// is below 32, so every byte it looks at is in the window: no bounds
/// check (the record decoder's path for a record with 64 bytes after it).
#[inline(always)]
pub(crate) fn read_window(w: &[u8; 64], at: &mut usize) -> Option<u64> {
    // `& 31` keeps `i` as it is (the caller's offsets are below 32) and
    // shows the compiler that `i + 8 <= 64`.
    let i = *at & 31;
    let x = u64::from_le_bytes(*w[i..].first_chunk::<8>()?);
    if x & 0x80 == 0 {
        *at = i + 1;
        return Some(x & 0x7f);
    }
    if x & 0x8000 == 0 {
        *at = i + 2;
        return Some((x & 0x7f) | (x >> 1 & 0x3f80));
    }
    let stops = stops8(x);
    if stops == 0 {
        return None;
    }
    *at = i + gathered_len(stops);
    Some(gather8(x, stops))
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn lengths_at_the_boundaries() {
        let cases = [
            (0, 1),
            (127, 1),
            (128, 2),
            (16_383, 2),
            (16_384, 3),
            ((1 << 56) - 1, 8),
            (1 << 56, 9),
            ((1 << 63) - 1, 9),
            (1 << 63, 10),
            (u64::MAX, 10),
        ];
        for (v, n) in cases {
            assert_eq!(len(v), n, "{v}");
            let mut buf = [0u8; 10];
            let mut pos = 0;
            write(&mut buf, &mut pos, v);
            assert_eq!(pos, n);
            let mut at = 0;
            assert_eq!(read(&buf[..n], &mut at), Some(v));
            assert_eq!(at, n);
            let mut at = 0;
            assert_eq!(read(&buf[..n - 1], &mut at), None, "cut {v}");
        }
    }

    #[test]
    fn overflow_is_refused() {
        let mut at = 0;
        assert_eq!(
            read(
                &[0xff; 9]
                    .iter()
                    .chain(&[2])
                    .copied()
                    .collect::<std::vec::Vec<u8>>(),
                &mut at
            ),
            None
        );
        let mut at = 0;
        assert_eq!(read(&[0xff; 11], &mut at), None);
        let mut at = 0;
        let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(read(&max, &mut at), Some(u64::MAX));
    }

    /// `read_fast` against `read` on any bytes at any offset: the same
    /// value or refusal, the same bytes taken.
    #[test]
    fn fast_reads_as_read_does_at_the_boundaries() {
        for v in [
            0,
            1,
            127,
            128,
            16_383,
            16_384,
            (1 << 49) - 1,
            1 << 49,
            (1 << 56) - 1,
            1 << 56,
            u64::MAX,
        ] {
            for pad in 0..10 {
                let mut buf = [0u8; 20];
                let mut pos = 0;
                write(&mut buf, &mut pos, v);
                let end = pos + pad;
                let (mut a, mut b) = (0, 0);
                assert_eq!(read_fast(&buf[..end], &mut a), Some(v), "{v} pad {pad}");
                assert_eq!(read(&buf[..end], &mut b), Some(v));
                assert_eq!(a, b);
            }
        }
    }

    proptest! {
        #[test]
        fn fast_reads_as_read_does(
            bytes in proptest::collection::vec(prop_oneof![any::<u8>(), 0x80u8..=0xff, Just(0xff)], 0..24),
            at in 0usize..24,
        ) {
            let (mut a, mut b) = (at, at);
            let fast = read_fast(&bytes, &mut a);
            let slow = read(&bytes, &mut b);
            prop_assert_eq!(fast, slow);
            if slow.is_some() {
                prop_assert_eq!(a, b);
            }
        }

        /// `read_window` against `read`: the same value and bytes taken
        /// wherever it answers, and an answer for every varint of at most
        /// 8 bytes.
        #[test]
        fn window_reads_as_read_does(
            bytes in proptest::collection::vec(prop_oneof![any::<u8>(), 0x80u8..=0xff, Just(0xff)], 64),
            at in 0usize..32,
        ) {
            let w: &[u8; 64] = bytes[..].try_into().unwrap();
            let (mut a, mut b) = (at, at);
            let fast = read_window(w, &mut a);
            let slow = read(&bytes, &mut b);
            match fast {
                Some(v) => {
                    prop_assert_eq!(Some(v), slow);
                    prop_assert_eq!(a, b);
                }
                None => {
                    prop_assert_eq!(a, at);
                    prop_assert!(slow.is_none() || b - at > 8);
                }
            }
        }

        #[test]
        fn put_u32_writes_what_write_writes(v: u32, shift in 0u32..32) {
            for v in [v, v >> shift] {
                let (mut a, mut b) = ([0u8; 5], [0u8; 10]);
                let n = put_u32(&mut a, v);
                let mut pos = 0;
                write(&mut b, &mut pos, v as u64);
                prop_assert_eq!(n, pos);
                prop_assert_eq!(&a[..], &b[..5]);
            }
        }

        #[test]
        fn round_trip(v: u64) {
            let mut buf = [0u8; 10];
            let mut pos = 0;
            write(&mut buf, &mut pos, v);
            prop_assert_eq!(pos, len(v));
            let mut at = 0;
            prop_assert_eq!(read(&buf[..pos], &mut at), Some(v));
        }
    }
}
