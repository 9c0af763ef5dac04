//! The 32-byte big-endian event record, shared by trace files and datagrams.
//! The offsets are the core's ([`qtrace_core::layout::record`]); [`emit`]
//! and [`parse`] are the core's encoder and decoder, re-exported.
//!
//! | offset | size | field    |
//! |--------|------|----------|
//! | 0      | 8    | `time`   |
//! | 8      | 2    | `id`     |
//! | 10     | 2    | `flags`  |
//! | 12     | 4    | `source` |
//! | 16     | 8    | `arg0`   |
//! | 24     | 8    | `arg1`   |
//!
//! Every 32-byte pattern is a valid record: an id the catalog does not define
//! is kept (readers name it "unknown"), and flag bits a reader does not know
//! are kept and otherwise ignored.

use super::cursor::{be16, be32, be64};
use super::WireError;
use crate::{Event, EventId};
use qtrace_core::layout::record as field;

pub use qtrace_core::encode::record::{emit, parse, RECORD_LEN};

/// A checked view of one record: [`RecordView::new_checked`] checks the
/// length once; the accessors cannot panic after that.
#[derive(Clone, Copy, Debug)]
pub struct RecordView<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> RecordView<T> {
    /// A view of `buffer`, which must be at least [`RECORD_LEN`] bytes long
    /// (bytes past the record are ignored).
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let len = buffer.as_ref().len();
        if len < RECORD_LEN {
            return Err(WireError::Truncated {
                offset: 0,
                needed: RECORD_LEN as u64,
                available: len as u64,
                what: "record",
            });
        }
        Ok(RecordView { buffer })
    }

    /// The timestamp.
    pub fn time(&self) -> u64 {
        be64(self.buffer.as_ref(), field::TIME)
    }

    /// The event number.
    pub fn id(&self) -> EventId {
        EventId(be16(self.buffer.as_ref(), field::ID))
    }

    /// The flags (zero as written by qtrace 1; unknown bits are ignored).
    pub fn flags(&self) -> u16 {
        be16(self.buffer.as_ref(), field::FLAGS)
    }

    /// The CPU or thread.
    pub fn source(&self) -> u32 {
        be32(self.buffer.as_ref(), field::SOURCE)
    }

    /// The first argument.
    pub fn arg0(&self) -> u64 {
        be64(self.buffer.as_ref(), field::ARG0)
    }

    /// The second argument.
    pub fn arg1(&self) -> u64 {
        be64(self.buffer.as_ref(), field::ARG1)
    }

    /// The record as an [`Event`].
    pub fn to_event(&self) -> Event {
        Event {
            time: self.time(),
            id: self.id(),
            flags: self.flags(),
            source: self.source(),
            args: [self.arg0(), self.arg1()],
        }
    }
}

/// Encodes events back to back into `out` (`out.len()` must be a multiple of
/// 32 and at least `32 * events.len()`); returns the number of bytes written.
pub(crate) fn emit_all(events: &[Event], out: &mut [u8]) -> usize {
    let mut n = 0;
    for (e, chunk) in events.iter().zip(out.chunks_exact_mut(RECORD_LEN)) {
        let chunk: &mut [u8; RECORD_LEN] = chunk.try_into().expect("chunks_exact gives 32 bytes");
        emit(e, chunk);
        n += RECORD_LEN;
    }
    n
}

/// Appends the 32-byte records of `events` to `dst`.
pub(crate) fn extend_all(events: &[Event], dst: &mut Vec<u8>) {
    dst.reserve(events.len() * RECORD_LEN);
    for e in events {
        let mut rec = [0u8; RECORD_LEN];
        emit(e, &mut rec);
        dst.extend_from_slice(&rec);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emit_then_view() {
        let e = Event::new(5, EventId(0x04), 1, [3, 0]);
        let mut buf = [0u8; RECORD_LEN];
        emit(&e, &mut buf);
        assert_eq!(&buf[..10], &[0, 0, 0, 0, 0, 0, 0, 5, 0, 4]);
        let view = RecordView::new_checked(&buf[..]).unwrap();
        assert_eq!(view.to_event(), e);
        assert_eq!(parse(&buf), e);
    }
}
