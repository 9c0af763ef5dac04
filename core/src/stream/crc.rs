//! CRC-32 (ISO-HDLC, the CRC of Ethernet, zlib and PNG), four bytes a
//! step ("slice-by-4": four 256-entry tables computed at compile time, 4 KiB
//! of flash; about half the instructions a byte of one table on a 32-bit
//! MCU), the bytes left over one at a time.

/// The reflected polynomial `0x04c11db7`.
const POLY_REFLECTED: u32 = 0xedb8_8320;

/// `TABLES[0]` is the byte-at-a-time table; `TABLES[k][i]` is the CRC
/// register after byte `i` and then `k` zero bytes.
const TABLES: [[u32; 256]; 4] = {
    let mut t = [[0u32; 256]; 4];
    t[0] = TABLE;
    let mut k = 1;
    while k < 4 {
        let mut i = 0;
        while i < 256 {
            let c = t[k - 1][i];
            t[k][i] = (c >> 8) ^ TABLE[(c & 0xff) as usize];
            i += 1;
        }
        k += 1;
    }
    t
};

const TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ POLY_REFLECTED
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

/// A running CRC-32: [`Crc32::new`], [`Crc32::update`] with the bytes in
/// order, [`Crc32::value`].
///
/// ```
/// use qtrace_core::stream::Crc32;
///
/// let mut crc = Crc32::new();
/// crc.update(b"1234");
/// crc.update(b"56789");
/// assert_eq!(crc.value(), 0xcbf4_3926); // the check value
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Crc32(u32);

impl Default for Crc32 {
    fn default() -> Self {
        Crc32::new()
    }
}

impl Crc32 {
    /// A CRC over no byte yet (register `0xffffffff`).
    pub const fn new() -> Self {
        Crc32(0xffff_ffff)
    }

    /// Adds `bytes`.
    #[inline]
    pub fn update(&mut self, bytes: &[u8]) {
        let [t0, t1, t2, t3] = &TABLES;
        let mut c = self.0;
        let mut words = bytes.chunks_exact(4);
        for w in &mut words {
            let x = c ^ u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            c = t3[(x & 0xff) as usize]
                ^ t2[(x >> 8 & 0xff) as usize]
                ^ t1[(x >> 16 & 0xff) as usize]
                ^ t0[(x >> 24) as usize];
        }
        for &b in words.remainder() {
            c = t0[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
        }
        self.0 = c;
    }

    /// The CRC of the bytes added so far (the register `xor 0xffffffff`).
    pub const fn value(&self) -> u32 {
        self.0 ^ 0xffff_ffff
    }

    /// The CRC of `bytes`.
    pub fn of(bytes: &[u8]) -> u32 {
        let mut c = Crc32::new();
        c.update(bytes);
        c.value()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bit-by-bit definition, against the table.
    fn bitwise(bytes: &[u8]) -> u32 {
        let mut c = 0xffff_ffffu32;
        for &b in bytes {
            c ^= b as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    (c >> 1) ^ POLY_REFLECTED
                } else {
                    c >> 1
                };
            }
        }
        !c
    }

    /// Every length and alignment, and in pieces: the slices' words and the
    /// bytes left over give the bit-by-bit CRC.
    #[test]
    fn every_length_and_split_is_the_bitwise_crc() {
        let data: [u8; 80] = core::array::from_fn(|i| (i * 37 + 11) as u8 ^ (i >> 3) as u8);
        for start in 0..5 {
            for end in start..data.len() {
                let d = &data[start..end];
                assert_eq!(Crc32::of(d), bitwise(d), "{start}..{end}");
                let mid = d.len() / 3;
                let mut c = Crc32::new();
                c.update(&d[..mid]);
                c.update(&d[mid..]);
                assert_eq!(c.value(), bitwise(d));
            }
        }
    }

    #[test]
    fn check_value_and_bitwise_definition() {
        assert_eq!(Crc32::of(b"123456789"), 0xcbf4_3926);
        assert_eq!(Crc32::of(b""), 0);
        let data: [u8; 300] = core::array::from_fn(|i| (i * 7 + 3) as u8);
        assert_eq!(Crc32::of(&data), bitwise(&data));
    }
}
