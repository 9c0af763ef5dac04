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

/// Appends a field key (field number and wire type).
#[inline]
fn put_key(buf: &mut Vec<u8>, field: u32, wire_type: u32) {
    put_varint(buf, u64::from(field << 3 | wire_type));
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

/// Appends a length-delimited field: a string, bytes, or an already encoded
/// message.
#[inline]
pub(crate) fn put_bytes(buf: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    put_key(buf, field, LEN);
    put_varint(buf, bytes.len() as u64);
    buf.extend_from_slice(bytes);
}

/// Appends a nested message whose body `body` writes into `scratch` (cleared
/// first; reused so that nesting allocates nothing once warm).
#[inline]
pub(crate) fn put_message(
    buf: &mut Vec<u8>,
    field: u32,
    scratch: &mut Vec<u8>,
    body: impl FnOnce(&mut Vec<u8>),
) {
    scratch.clear();
    body(scratch);
    put_bytes(buf, field, scratch);
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
        b.clear();
        // Field 60 (track_descriptor) needs a two-byte key.
        let mut scratch = Vec::new();
        put_message(&mut b, 60, &mut scratch, |m| put_uint(m, 1, 5));
        assert_eq!(b, [0xe2, 0x03, 0x02, 0x08, 0x05]);
    }
}
