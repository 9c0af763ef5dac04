//! CRC-32 (ISO-HDLC, the CRC of Ethernet, zlib and PNG), by a 256-entry
//! table computed at compile time (1 KiB of flash).

/// The reflected polynomial `0x04c11db7`.
const POLY_REFLECTED: u32 = 0xedb8_8320;

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
        let mut c = self.0;
        for &b in bytes {
            c = TABLE[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
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

    #[test]
    fn check_value_and_bitwise_definition() {
        assert_eq!(Crc32::of(b"123456789"), 0xcbf4_3926);
        assert_eq!(Crc32::of(b""), 0);
        let data: [u8; 300] = core::array::from_fn(|i| (i * 7 + 3) as u8);
        assert_eq!(Crc32::of(&data), bitwise(&data));
    }
}
