//! A minimal Protocol Buffers *encoder*: varints, fixed fields and
//! length-delimited fields appended to a byte buffer — what the
//! [Perfetto](super) writer needs, and nothing else.
//!
//! # Why by hand
//!
//! The Perfetto writer emits a handful of message types with a few scalar
//! fields each. The `prost` and `protobuf` crates either generate code from
//! `.proto` files at build time (a `protoc` binary or a build script) or
//! expect one owned message struct per packet, which would allocate per event
//! in the converter's inner loop. Encoding straight into a reused buffer costs
//! no allocation per event and no dependency; the wire format it writes is
//! small and fixed (see the tests below, and the Python check in
//! `scripts/check-perfetto.py`, which decodes the output with Perfetto's own
//! schema).

/// Wire type of a varint field.
const VARINT: u32 = 0;
/// Wire type of a 64-bit fixed-size field (`double`, `fixed64`).
const FIXED64: u32 = 1;
/// Wire type of a length-delimited field (strings, bytes, messages).
const LEN: u32 = 2;

/// Appends `v` as a base-128 varint.
#[inline]
pub(crate) fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// The bytes of `v` as a varint.
#[inline]
pub(crate) fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// Writes an unsigned field (as [`put_uint`]) into `buf` at `at`; returns
/// where it ends. `buf` must have room for the key and a 10-byte varint.
#[inline(always)]
pub(crate) fn put_uint_at(buf: &mut [u8], at: usize, field: u32, v: u64) -> usize {
    let key = field << 3 | VARINT;
    let at = if key < 0x80 {
        buf[at] = key as u8;
        at + 1
    } else {
        put_varint_at(buf, at, u64::from(key))
    };
    put_varint_at(buf, at, v)
}

/// Writes `v` as a varint into `buf` at `at`; returns where it ends. One
/// bounds check for the 10 bytes a varint may take, and the one- and
/// two-byte varints (most timestamps, iids and arguments) without a loop:
/// the byte-at-a-time loop, checked at every byte, was a tenth of the
/// Perfetto writer's instructions.
#[inline(always)]
fn put_varint_at(buf: &mut [u8], at: usize, v: u64) -> usize {
    let out: &mut [u8; 10] = (&mut buf[at..at + 10])
        .try_into()
        .expect("a range of 10 bytes");
    if v < 0x80 {
        out[0] = v as u8;
        return at + 1;
    }
    if v < 0x4000 {
        out[0] = v as u8 | 0x80;
        out[1] = (v >> 7) as u8;
        return at + 2;
    }
    let mut x = v;
    let mut i = 0;
    while x >= 0x80 && i < 9 {
        out[i] = x as u8 | 0x80;
        x >>= 7;
        i += 1;
    }
    out[i] = x as u8;
    at + i + 1
}

/// Appends the first `n` bytes of `bytes` (at most `N`): a copy of a
/// constant size (a few vector stores, not a call to `memcpy` for a few
/// bytes), then the length cut back.
#[inline(always)]
pub(crate) fn put_prefix<const N: usize>(buf: &mut Vec<u8>, bytes: &[u8; N], n: usize) {
    buf.extend_from_slice(bytes);
    buf.truncate(buf.len() - N + n.min(N));
}

/// Appends a `fixed64` field (wire type 1: eight bytes, little-endian).
pub(crate) fn put_fixed64(buf: &mut Vec<u8>, field: u32, v: u64) {
    put_key(buf, field, FIXED64);
    buf.extend_from_slice(&v.to_le_bytes());
}

/// Appends a length-delimited field `field` holding two unsigned fields,
/// `a` = `va` and `b` = `vb` (fields below 16): a debug annotation's name
/// iid and value, written without a length patched afterwards when both
/// values are small (the usual case), as [`put_message`] would otherwise.
#[inline]
pub(crate) fn put_pair(buf: &mut Vec<u8>, field: u32, (a, va): (u32, u64), (b, vb): (u32, u64)) {
    if field < 16 && a < 16 && b < 16 && va < 1 << 56 && vb < 1 << 56 {
        let mut bytes = [0u8; 32];
        bytes[0] = (field << 3 | LEN) as u8;
        let mut n = put_uint_at(&mut bytes, 2, a, va);
        n = put_uint_at(&mut bytes, n, b, vb);
        // At most 2 + 2 * (1 + 8) bytes: the length fits one byte.
        bytes[1] = (n - 2) as u8;
        put_prefix(buf, &bytes, n);
    } else {
        put_message(buf, field, |m| {
            put_uint(m, a, va);
            put_uint(m, b, vb);
        });
    }
}

/// Appends a field key (field number and wire type).
#[inline]
fn put_key(buf: &mut Vec<u8>, field: u32, wire_type: u32) {
    put_varint(buf, u64::from(field << 3 | wire_type));
}

/// Appends the key of a length-delimited field (its length and body to
/// follow, as [`put_message`] writes them).
#[inline]
pub(crate) fn put_key_len(buf: &mut Vec<u8>, field: u32) {
    put_key(buf, field, LEN);
}

/// Appends an unsigned or enum field (`uint64`, `uint32`, `bool`, enums, and
/// non-negative `int64`/`int32`).
#[inline]
pub(crate) fn put_uint(buf: &mut Vec<u8>, field: u32, v: u64) {
    put_key(buf, field, VARINT);
    put_varint(buf, v);
}

/// Appends a signed `int64` field (two's complement varint, as protobuf's
/// `int64`, not `sint64`).
#[inline]
pub(crate) fn put_int(buf: &mut Vec<u8>, field: u32, v: i64) {
    put_uint(buf, field, v as u64);
}

/// Appends a `double` field (wire type 1: eight bytes, little-endian).
pub(crate) fn put_double(buf: &mut Vec<u8>, field: u32, v: f64) {
    put_key(buf, field, FIXED64);
    buf.extend_from_slice(&v.to_bits().to_le_bytes());
}

/// Appends a length-delimited field: a string, bytes, or an already encoded
/// message.
#[inline]
pub(crate) fn put_bytes(buf: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    put_key(buf, field, LEN);
    put_varint(buf, bytes.len() as u64);
    buf.extend_from_slice(bytes);
}

/// Appends a nested message whose body `body` writes in place, after a
/// one-byte length that is patched once the body is known (and widened, by
/// moving the body, in the rare case it is 128 bytes or more): no scratch
/// buffer, no copy of the body (copies of small nested messages were 13 %
/// of the export's time).
#[inline]
pub(crate) fn put_message(buf: &mut Vec<u8>, field: u32, body: impl FnOnce(&mut Vec<u8>)) {
    put_key_len(buf, field);
    let at = buf.len();
    buf.push(0);
    body(buf);
    patch_len(buf, at);
}

/// Writes the length of the body that follows the one-byte placeholder at
/// `at` (to the end of `buf`) into the placeholder, widening it when the
/// length needs more than one varint byte.
#[inline(always)]
pub(crate) fn patch_len(buf: &mut Vec<u8>, at: usize) {
    let len = buf.len() - at - 1;
    if len < 0x80 {
        buf[at] = len as u8;
    } else {
        widen_len(buf, at, len);
    }
}

/// [`patch_len`]'s rare case: a length of more than one varint byte.
#[cold]
#[inline(never)]
fn widen_len(buf: &mut Vec<u8>, at: usize, len: usize) {
    let mut v = Vec::with_capacity(10);
    put_varint(&mut v, len as u64);
    buf.splice(at..=at, v);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_match_the_protobuf_spec() {
        let enc = |v| {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            b
        };
        assert_eq!(enc(0), [0x00]);
        assert_eq!(enc(1), [0x01]);
        assert_eq!(enc(127), [0x7f]);
        assert_eq!(enc(128), [0x80, 0x01]);
        assert_eq!(enc(300), [0xac, 0x02]);
        assert_eq!(
            enc(u64::MAX),
            [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
        );
        for v in [0, 1, 127, 128, 300, 16_383, 16_384, u64::MAX >> 1, u64::MAX] {
            assert_eq!(varint_len(v), enc(v).len(), "{v}");
            // Written at an offset of a stack buffer: the same bytes as put_uint.
            for field in [1, 15, 16, 58] {
                let mut b = Vec::new();
                put_uint(&mut b, field, v);
                let mut arr = [0xaau8; 24];
                let end = put_uint_at(&mut arr, 2, field, v);
                assert_eq!(&arr[2..end], &b[..], "{field} {v}");
                assert_eq!(arr[end], 0xaa);
            }
        }
    }

    #[test]
    fn fields_have_key_length_and_payload() {
        // The protobuf documentation's examples: field 1 = 150, field 2 = "testing".
        let mut b = Vec::new();
        put_uint(&mut b, 1, 150);
        assert_eq!(b, [0x08, 0x96, 0x01]);
        b.clear();
        put_bytes(&mut b, 2, b"testing");
        assert_eq!(b, [0x12, 0x07, b't', b'e', b's', b't', b'i', b'n', b'g']);
        b.clear();
        put_int(&mut b, 1, -1);
        assert_eq!(b.len(), 11); // key + 10-byte varint
                                 // A pair of small fields in a message: the same bytes as put_message.
        for (field, va, vb) in [
            (4, 1, 0),
            (4, 127, 1 << 55),
            (4, 128, 300),
            (4, 3, 1 << 56),
            (16, 1, 1),
        ] {
            let (mut fast, mut slow) = (vec![9u8], vec![9u8]);
            put_pair(&mut fast, field, (1, va), (3, vb));
            put_message(&mut slow, field, |m| {
                put_uint(m, 1, va);
                put_uint(m, 3, vb);
            });
            assert_eq!(fast, slow, "{field} {va} {vb}");
        }
        b.clear();
        // Field 60 (track_descriptor) needs a two-byte key.
        put_message(&mut b, 60, |m| put_uint(m, 1, 5));
        assert_eq!(b, [0xe2, 0x03, 0x02, 0x08, 0x05]);
        // Bodies of 127, 128 and 300 bytes: the length widens in place, as
        // `put_bytes` writes the same body.
        for n in [0usize, 127, 128, 300, 20_000] {
            let body: Vec<u8> = (0..n).map(|i| i as u8).collect();
            let (mut nested, mut flat) = (vec![7u8], vec![7u8]);
            put_message(&mut nested, 3, |m| m.extend_from_slice(&body));
            put_bytes(&mut flat, 3, &body);
            assert_eq!(nested, flat, "body of {n} bytes");
        }
    }
}
