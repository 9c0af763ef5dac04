//! The writer's side: a payload as a run of records ([`Run`]).

use crate::model::event::{Event, EventId};

use super::{checksum, BEGIN, BYTES_PER_RECORD, COMBINE, END, INDEX_MASK, MAX_PAYLOAD, NAME_EVENT};

/// A payload to record as a combine run: builds its records one by one
/// ([`Run::record`]), so a queue writes them straight into the slots it
/// reserved, without a buffer.
///
/// ```
/// use qtrace::combine::{Assembler, Item, PayloadState, Run};
/// use qtrace::classes::user;
///
/// // A string logged with an event is a run of records...
/// let run = Run::new(5, user::USER0, 1, 42, b"hello, world");
/// let records: Vec<_> = (0..run.len()).map(|i| run.record(i)).collect();
/// assert_eq!(records.len(), 2);
/// // ...which a reader reassembles.
/// let mut asm = Assembler::new();
/// let mut items = Vec::new();
/// for r in records {
///     asm.push(r, &mut |item| items.push(item));
/// }
/// asm.finish(&mut |item| items.push(item));
/// match &items[..] {
///     [Item::Payload(p)] => {
///         assert_eq!(p.text(), "hello, world");
///         assert_eq!(p.arg, Some(42));
///         assert_eq!(p.state, PayloadState::Complete);
///     }
///     other => panic!("{other:?}"),
/// }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Run<'a> {
    time: u64,
    id: EventId,
    source: u32,
    arg: u64,
    payload: &'a [u8],
    logged_len: u32,
    checksum: u32,
}

impl<'a> Run<'a> {
    /// A run of `payload` (cut to [`MAX_PAYLOAD`] bytes) for event `id`
    /// with its argument `arg`, at `time` from `source`.
    ///
    /// ```
    /// let run = qtrace::combine::Run::new(0, qtrace::classes::user::USER0, 0, 0, &[0u8; 40]);
    /// assert_eq!(run.len(), 1 + 3); // the begin record and three of 16 bytes
    /// ```
    pub fn new(time: u64, id: EventId, source: u32, arg: u64, payload: &'a [u8]) -> Self {
        let logged_len = payload.len().min(u32::MAX as usize) as u32;
        let payload = &payload[..payload.len().min(MAX_PAYLOAD)];
        Run {
            time,
            id,
            source,
            arg,
            payload,
            logged_len,
            checksum: checksum(payload),
        }
    }

    /// A name record ([`NAME_EVENT`]): `name` for `subject` of `kind`.
    pub fn name(time: u64, source: u32, kind: u8, subject: u64, name: &'a [u8]) -> Self {
        let subject = subject & ((1 << 56) - 1);
        Run::new(
            time,
            NAME_EVENT,
            source,
            (kind as u64) << 56 | subject,
            name,
        )
    }

    /// Records in the run (1 to [`MAX_RECORDS`](super::MAX_RECORDS)).
    #[inline]
    #[allow(clippy::len_without_is_empty)] // a run always has its begin record
    pub fn len(&self) -> usize {
        1 + self.payload.len().div_ceil(BYTES_PER_RECORD)
    }

    /// The event the run was logged as — its id, source and time, with
    /// `[arg, 0]` for arguments — not one of its records: what a
    /// [`Filter`](crate::filters::Filter) decides on.
    pub fn logged_event(&self) -> Event {
        Event::new(self.time, self.id, self.source, [self.arg, 0])
    }

    /// The bytes the run stores (the payload cut to [`MAX_PAYLOAD`]).
    pub fn payload(&self) -> &'a [u8] {
        self.payload
    }

    /// Record `i` (`0..len()`) of the run.
    pub fn record(&self, i: usize) -> Event {
        let n = self.len();
        debug_assert!(i < n);
        let end = if i + 1 == n { END } else { 0 };
        let (flags, args) = if i == 0 {
            (
                COMBINE | BEGIN | end,
                [
                    (self.checksum as u64) << 32 | self.logged_len as u64,
                    self.arg,
                ],
            )
        } else {
            let start = (i - 1) * BYTES_PER_RECORD;
            let piece = &self.payload
                [start.min(self.payload.len())..(start + BYTES_PER_RECORD).min(self.payload.len())];
            let mut bytes = [0u8; BYTES_PER_RECORD];
            bytes[..piece.len()].copy_from_slice(piece);
            (
                COMBINE | end | (i as u16 & INDEX_MASK),
                [
                    u64::from_be_bytes(bytes[..8].try_into().expect("8 bytes")),
                    u64::from_be_bytes(bytes[8..].try_into().expect("8 bytes")),
                ],
            )
        };
        Event {
            time: self.time,
            id: self.id,
            flags,
            source: self.source,
            args,
        }
    }
}
