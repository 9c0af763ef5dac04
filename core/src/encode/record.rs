//! The 32-byte big-endian event record (FORMAT.md 1.4).
//!
//! ```
//! use qtrace_core::encode::record;
//! use qtrace_core::{Event, EventId};
//!
//! let e = Event::new(5, EventId(0x04), 1, [3, 0]);
//! let mut buf = [0u8; record::RECORD_LEN];
//! record::emit(&e, &mut buf);
//! assert_eq!(&buf[..10], &[0, 0, 0, 0, 0, 0, 0, 5, 0, 4]);
//! assert_eq!(record::parse(&buf), e);
//! ```

use byteorder::{BigEndian, ByteOrder};

use crate::layout::record as field;
use crate::{Event, EventId};

/// The size of one record, in bytes.
pub const RECORD_LEN: usize = field::LEN;

/// Encodes `event` into 32 bytes.
#[inline]
pub fn emit(event: &Event, out: &mut [u8; RECORD_LEN]) {
    BigEndian::write_u64(&mut out[field::TIME..], event.time);
    BigEndian::write_u16(&mut out[field::ID..], event.id.0);
    BigEndian::write_u16(&mut out[field::FLAGS..], event.flags);
    BigEndian::write_u32(&mut out[field::SOURCE..], event.source);
    BigEndian::write_u64(&mut out[field::ARG0..], event.args[0]);
    BigEndian::write_u64(&mut out[field::ARG1..], event.args[1]);
}

/// Decodes 32 bytes (every pattern is a valid record).
#[inline]
pub fn parse(bytes: &[u8; RECORD_LEN]) -> Event {
    Event {
        time: BigEndian::read_u64(&bytes[field::TIME..]),
        id: EventId(BigEndian::read_u16(&bytes[field::ID..])),
        flags: BigEndian::read_u16(&bytes[field::FLAGS..]),
        source: BigEndian::read_u32(&bytes[field::SOURCE..]),
        args: [
            BigEndian::read_u64(&bytes[field::ARG0..]),
            BigEndian::read_u64(&bytes[field::ARG1..]),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 8 } else { 256 }))]

        #[test]
        fn round_trip(time: u64, id: u16, flags: u16, source: u32, a: u64, b: u64) {
            let e = Event { time, id: EventId(id), flags, source, args: [a, b] };
            let mut buf = [0u8; RECORD_LEN];
            emit(&e, &mut buf);
            prop_assert_eq!(parse(&buf), e);
            prop_assert_eq!(&buf[..8], &time.to_be_bytes()[..]);
            prop_assert_eq!(&buf[12..16], &source.to_be_bytes()[..]);
        }
    }
}
