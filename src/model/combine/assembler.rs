//! The reader's side: runs reassembled into payloads ([`Assembler`],
//! [`Payload`], [`PayloadState`], [`Item`]), cut runs marked.

use std::collections::VecDeque;

use crate::model::event::{Event, EventId};

use super::{
    checksum, is_combine, records_for, BEGIN, BYTES_PER_RECORD, END, INDEX_MASK, MAX_PAYLOAD,
    NAME_EVENT,
};

/// What an [`Assembler`] made of a reassembled run.
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PayloadState {
    /// Every record arrived and the checksum matches: exactly the payload
    /// that was logged (or its first [`MAX_PAYLOAD`] bytes, see
    /// [`Payload::logged_len`]).
    Complete,
    /// Records are missing (lost, overwritten, or the trace ends inside the
    /// run). `received` records arrived; `expected` is the run's length when
    /// its begin record arrived (`None` when the begin record is missing).
    /// [`Payload::bytes`] holds the bytes up to the first missing record.
    Cut {
        /// Records of the run that arrived.
        received: u32,
        /// Records the run had, when known.
        expected: Option<u32>,
    },
    /// Every record arrived but the checksum disagrees: records of two runs
    /// were mixed (two threads logging with one source number at the same
    /// nanosecond) or the trace was damaged. The bytes are not the payload.
    Mismatch,
}

/// A reassembled (or partly reassembled) payload.
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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Payload {
    /// The run's time.
    pub time: u64,
    /// The event the payload is attached to.
    pub id: EventId,
    /// The run's source.
    pub source: u32,
    /// The event's own argument, from the begin record (`None` when it is
    /// missing).
    pub arg: Option<u64>,
    /// The length as logged, from the begin record (`None` when it is
    /// missing). More than [`MAX_PAYLOAD`] when the payload was cut at
    /// logging.
    pub logged_len: Option<u32>,
    /// The bytes recovered. A cut run whose begin record is missing has lost
    /// its length: when its last record is here, the zero bytes ending it
    /// (at most 15) are taken for padding and dropped (a payload that itself
    /// ends in zero bytes loses them).
    pub bytes: Vec<u8>,
    /// Whether the payload is whole.
    pub state: PayloadState,
}

impl Payload {
    /// Whether this is a name record ([`NAME_EVENT`]); then
    /// `(kind, subject)`.
    pub fn name_of(&self) -> Option<(u8, u64)> {
        (self.id == NAME_EVENT)
            .then_some(self.arg)
            .flatten()
            .map(|a| ((a >> 56) as u8, a & ((1 << 56) - 1)))
    }

    /// Whether the payload was cut at logging (longer than [`MAX_PAYLOAD`]).
    pub fn truncated_at_logging(&self) -> bool {
        self.logged_len.is_some_and(|l| l as usize > MAX_PAYLOAD)
    }

    /// The bytes as text, invalid UTF-8 replaced.
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.bytes)
    }
}

/// One item of a reassembled trace.
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
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    /// An ordinary record (not part of a run), as read.
    Event(Event),
    /// A run, whole or cut.
    Payload(Payload),
}

/// A run being reassembled.
#[derive(Debug)]
struct Pending {
    payload: Payload,
    /// Index of the next record expected.
    next: u32,
    /// Records in the run (from the begin record).
    expected: Option<u32>,
    received: u32,
    /// A record is missing before the last one received: bytes stop there.
    gap: bool,
    /// The checksum from the begin record.
    checksum: Option<u32>,
}

/// Reassembles combine runs from records in trace order, one run per source
/// at a time, in bounded memory: at most [`Assembler::MAX_PENDING`] runs
/// (of at most [`MAX_PAYLOAD`] bytes each) are open at once; opening one more
/// closes the oldest as cut.
///
/// A run is emitted when its last record arrives, or as cut when a record
/// that cannot continue it arrives from its source, or at
/// [`Assembler::finish`]. Records that are not part of a run pass through at
/// once, in order.
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
#[derive(Debug, Default)]
pub struct Assembler {
    pending: VecDeque<(u32, Pending)>,
}

impl Assembler {
    /// Runs open at once, at most.
    pub const MAX_PENDING: usize = 256;

    /// An assembler with no open run.
    pub fn new() -> Self {
        Assembler::default()
    }

    /// Takes the next record; calls `out` for every item it completes (0, 1
    /// or 2 items).
    pub fn push(&mut self, e: Event, out: &mut impl FnMut(Item)) {
        if !is_combine(&e) {
            return out(Item::Event(e));
        }
        let index = (e.flags & INDEX_MASK) as u32;
        let is_end = e.flags & END != 0;
        let at = self.pending.iter().position(|(s, _)| *s == e.source);
        if e.flags & BEGIN != 0 {
            if let Some(at) = at {
                let (_, p) = self.pending.remove(at).expect("found");
                out(Item::Payload(close_cut(p)));
            }
            let logged_len = e.args[0] as u32;
            let stored = (logged_len as usize).min(MAX_PAYLOAD);
            let expected = records_for(stored) as u32;
            let p = Pending {
                payload: Payload {
                    time: e.time,
                    id: e.id,
                    source: e.source,
                    arg: Some(e.args[1]),
                    logged_len: Some(logged_len),
                    bytes: Vec::with_capacity(stored),
                    state: PayloadState::Complete,
                },
                next: 1,
                expected: Some(expected),
                received: 1,
                // A begin record with another index is corrupt: never whole.
                gap: index != 0,
                checksum: Some((e.args[0] >> 32) as u32),
            };
            return self.open(p, is_end, out);
        }
        if let Some(at) = at {
            let p = &self.pending[at].1;
            let fits = p.payload.id == e.id
                && p.payload.time == e.time
                && index >= p.next
                && p.expected.map_or(true, |n| index < n);
            if fits {
                let (_, mut p) = self.pending.remove(at).expect("found");
                if index != p.next {
                    p.gap = true;
                }
                if !p.gap {
                    p.payload.bytes.extend_from_slice(&piece(&e));
                }
                p.received += 1;
                p.next = index + 1;
                return self.open(p, is_end, out);
            }
            let (_, p) = self.pending.remove(at).expect("found");
            out(Item::Payload(close_cut(p)));
        }
        // A continuation without its run: the head was lost.
        let p = Pending {
            payload: Payload {
                time: e.time,
                id: e.id,
                source: e.source,
                arg: None,
                logged_len: None,
                bytes: piece(&e).to_vec(),
                state: PayloadState::Complete,
            },
            next: index + 1,
            expected: None,
            received: 1,
            gap: false,
            checksum: None,
        };
        self.open(p, is_end, out)
    }

    /// Keeps `p` open, or emits it if `is_end`.
    fn open(&mut self, mut p: Pending, is_end: bool, out: &mut impl FnMut(Item)) {
        let last = p.expected.is_some_and(|n| p.next >= n);
        if !(is_end || last) {
            if self.pending.len() >= Self::MAX_PENDING {
                let (_, old) = self.pending.pop_front().expect("full");
                out(Item::Payload(close_cut(old)));
            }
            self.pending.push_back((p.payload.source, p));
            return;
        }
        match p.expected {
            Some(n) if !p.gap && p.received == n && is_end && last => {
                let stored = (p.payload.logged_len.unwrap_or(0) as usize).min(MAX_PAYLOAD);
                p.payload.bytes.truncate(stored);
                p.payload.state = if p.checksum == Some(checksum(&p.payload.bytes)) {
                    PayloadState::Complete
                } else {
                    PayloadState::Mismatch
                };
                out(Item::Payload(p.payload))
            }
            _ => {
                // Without its begin record a run's length is lost: the zero
                // bytes that fill its last record (at most 15, when that
                // record is here and nothing is missing before it) are
                // taken for padding.
                let padded = is_end && !p.gap && p.payload.logged_len.is_none();
                let mut payload = close_cut(p);
                if padded {
                    let bytes = &mut payload.bytes;
                    let keep = bytes.len()
                        - bytes
                            .iter()
                            .rev()
                            .take(BYTES_PER_RECORD - 1)
                            .take_while(|&&b| b == 0)
                            .count();
                    bytes.truncate(keep);
                }
                out(Item::Payload(payload))
            }
        }
    }

    /// The end of the records: every open run is emitted as cut.
    pub fn finish(&mut self, out: &mut impl FnMut(Item)) {
        while let Some((_, p)) = self.pending.pop_front() {
            out(Item::Payload(close_cut(p)));
        }
    }
}

/// The 16 payload bytes of a continuation record.
fn piece(e: &Event) -> [u8; BYTES_PER_RECORD] {
    let mut b = [0u8; BYTES_PER_RECORD];
    b[..8].copy_from_slice(&e.args[0].to_be_bytes());
    b[8..].copy_from_slice(&e.args[1].to_be_bytes());
    b
}

/// A run that did not arrive whole.
fn close_cut(mut p: Pending) -> Payload {
    if let Some(len) = p.payload.logged_len {
        p.payload.bytes.truncate((len as usize).min(MAX_PAYLOAD));
    }
    p.payload.state = PayloadState::Cut {
        received: p.received,
        expected: p.expected,
    };
    p.payload
}
