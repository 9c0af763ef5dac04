//! Combine runs: payloads longer than one record (strings, bytes, names),
//! carried as consecutive 32-byte records flagged begin / continuation / end
//! in the record's `flags` field (QNX Neutrino's *combine events*).
//!
//! A run of a payload of `len` bytes is `1 + ⌈len / 16⌉` records, all with
//! the same `time`, `id` and `source`:
//!
//! - the **begin** record (index 0): `flags = COMBINE | BEGIN` (`| END` when
//!   the payload is empty), `args[0] = checksum << 32 | logged length`,
//!   `args[1]` = the event's own argument (0 for [`crate::Tracer::log_str`]);
//! - **continuation** records (index 1, 2, …): `flags = COMBINE | index`
//!   (`| END` on the last), `args` = the next 16 payload bytes, big-endian
//!   (the first byte is the top byte of `args[0]`), zero-padded in the last.
//!
//! The logged length may exceed [`MAX_PAYLOAD`]: the payload was then cut to
//! its first [`MAX_PAYLOAD`] bytes when it was logged, and readers say so. The
//! checksum (FORMAT.md §1.8) covers the stored bytes, so a reader that
//! reassembled a run from every record can prove it is the payload that was
//! logged. FORMAT.md §1.8 is the specification.
//!
//! Readers reassemble runs with an [`Assembler`]: a run cut by a loss, an
//! overwrite (a circular queue may evict a run's head) or a crash comes out
//! as a [`Payload`] whose [`PayloadState`] says what is missing; it is never
//! shown as a complete payload.
//!
//! ```
//! use qtrace::combine::{Assembler, Item, PayloadState, Run};
//! use qtrace::EventId;
//!
//! let run = Run::new(1_000, EventId(0x17), 3, 7, b"hello, combine events");
//! assert_eq!(run.len(), 3); // the begin record and two of 16 bytes
//! let mut items = Vec::new();
//! let mut asm = Assembler::new();
//! for i in 0..run.len() {
//!     asm.push(run.record(i), &mut |item| items.push(item));
//! }
//! asm.finish(&mut |item| items.push(item));
//! let Item::Payload(p) = &items[0] else { panic!() };
//! assert_eq!((p.bytes.as_slice(), p.arg, p.state), (&b"hello, combine events"[..], Some(7), PayloadState::Complete));
//!
//! // The same run without its begin record (overwritten): partial, marked.
//! let mut items = Vec::new();
//! for i in 1..run.len() {
//!     asm.push(run.record(i), &mut |item| items.push(item));
//! }
//! let Item::Payload(p) = &items[0] else { panic!() };
//! assert_eq!(p.state, PayloadState::Cut { received: 2, expected: None });
//! ```

use std::collections::VecDeque;

use crate::model::event::{Event, EventId};

mod recorded;
pub use recorded::RecordedNames;

/// `flags` bit 14: the record belongs to a combine run.
pub(crate) const COMBINE: u16 = 0x4000;
/// `flags` bit 13: the run's first record.
pub(crate) const BEGIN: u16 = 0x2000;
/// `flags` bit 12: the run's last record.
pub(crate) const END: u16 = 0x1000;
/// `flags` bits 0–8: the record's index in its run (0 for the begin record).
pub(crate) const INDEX_MASK: u16 = 0x01ff;
/// `flags` bit 15: control records (with `id = 0`, the close run); a record
/// with this bit is never part of a combine run.
pub(crate) const CONTROL: u16 = 0x8000;

/// The largest payload a run carries, in bytes (4 KiB). A longer payload is
/// cut to this length when it is logged; the begin record keeps its logged
/// length so readers show the cut.
pub const MAX_PAYLOAD: usize = 4096;
/// Payload bytes per continuation record.
pub(crate) const BYTES_PER_RECORD: usize = 16;
/// The most records one run takes: `1 + MAX_PAYLOAD / 16` = 257.
pub const MAX_RECORDS: usize = 1 + MAX_PAYLOAD / BYTES_PER_RECORD;

/// The event of name records: `tracer:reserved` (id 0) with the combine
/// flags and without the control bit (15). `args[1]` of the begin record is
/// `kind << 56 | subject` ([`NAME_SOURCE`], [`NAME_TASK`]).
pub const NAME_EVENT: EventId = EventId(0);
/// Name kind: the name of a source (a thread or CPU number); subject = the
/// source number.
pub const NAME_SOURCE: u8 = 1;
/// Name kind: the name of a task id (the system class's task argument);
/// subject = the task id.
pub const NAME_TASK: u8 = 2;

/// Name kind: a run-time name of an event id (the `tracing` bridge's
/// callsites); subject = the event id.
pub const NAME_EVENT_ID: u8 = 3;

/// Whether `e` is a record of a combine run (bit 14 set, bit 15 clear).
#[inline]
pub const fn is_combine(e: &Event) -> bool {
    e.flags & (COMBINE | CONTROL) == COMBINE
}

/// Records a payload of `len` bytes (after the cut to [`MAX_PAYLOAD`]) takes.
#[inline]
pub const fn records_for(len: usize) -> usize {
    let len = if len > MAX_PAYLOAD { MAX_PAYLOAD } else { len };
    1 + len.div_ceil(BYTES_PER_RECORD)
}

/// The 32-bit checksum of a stored payload, as the begin record carries it.
///
/// The payload is taken as big-endian 64-bit words (the last zero-padded);
/// `h` starts at `len`; for each word `w`,
/// `h = (h.rotate_left(5) ^ w) * 0x517cc1b727220a95` (wrapping); the
/// checksum is `(h >> 32) ^ (h & 0xffffffff)`.
///
pub(crate) fn checksum(payload: &[u8]) -> u32 {
    let mut h = payload.len() as u64;
    let mut chunks = payload.chunks_exact(8);
    for c in &mut chunks {
        h = mix(h, u64::from_be_bytes(c.try_into().expect("8 bytes")));
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = mix(h, u64::from_be_bytes(w));
    }
    ((h >> 32) ^ (h & 0xffff_ffff)) as u32
}

#[inline(always)]
fn mix(h: u64, w: u64) -> u64 {
    (h.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95)
}

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

    /// Records in the run (1 to [`MAX_RECORDS`]).
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
    /// The bytes recovered (for a cut run whose begin record is missing, the
    /// last record's zero padding is kept: the length is unknown).
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
            _ => out(Item::Payload(close_cut(p))),
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

/// Names learned from name records ([`NAME_EVENT`]): sources and task ids,
/// at most [`Names::MAX`] of each (later ones are ignored and counted).
///
/// ```
/// use qtrace::combine::{Names, Run, NAME_SOURCE};
///
/// let run = Run::name(0, 0, NAME_SOURCE, 3, b"worker-3");
/// let names = Names::gather((0..run.len()).map(|i| run.record(i)));
/// assert_eq!(names.source(3), Some("worker-3"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct Names {
    sources: std::collections::HashMap<u32, String>,
    tasks: std::collections::HashMap<u64, String>,
    events: std::collections::HashMap<u16, String>,
    /// Names ignored because a table was full.
    pub ignored: u64,
}

impl Names {
    /// Names kept per kind, at most.
    pub const MAX: usize = 65536;

    /// No names.
    pub fn new() -> Self {
        Names::default()
    }

    /// Learns the name `p` carries if it is a whole name record; returns
    /// `Some((kind, subject))` for any name record (whole or not), `None` for
    /// other payloads. A cut name record teaches nothing.
    pub fn learn(&mut self, p: &Payload) -> Option<(u8, u64)> {
        let (kind, subject) = p.name_of()?;
        if p.state == PayloadState::Complete {
            let name = p.text().into_owned();
            let full = match kind {
                NAME_SOURCE => insert(&mut self.sources, subject as u32, name),
                NAME_TASK => insert(&mut self.tasks, subject, name),
                NAME_EVENT_ID => insert(&mut self.events, subject as u16, name),
                _ => false,
            };
            self.ignored += full as u64;
        }
        Some((kind, subject))
    }

    /// Every name the name records among `records` carry (a first pass over
    /// a trace, for a reader that needs names before the records they name).
    pub fn gather(records: impl IntoIterator<Item = Event>) -> Self {
        let mut names = Names::new();
        let mut asm = Assembler::new();
        let mut learn = |item: Item| {
            if let Item::Payload(p) = item {
                names.learn(&p);
            }
        };
        for e in records {
            if is_combine(&e) && e.id == NAME_EVENT {
                asm.push(e, &mut learn);
            }
        }
        asm.finish(&mut learn);
        names
    }

    /// Whether no name was learned.
    pub fn is_empty(&self) -> bool {
        self.sources.is_empty() && self.tasks.is_empty() && self.events.is_empty()
    }

    /// The name of `source`, if one was learned.
    pub fn source(&self, source: u32) -> Option<&str> {
        self.sources.get(&source).map(String::as_str)
    }

    /// The run-time name of event `id`, if one was learned.
    pub fn event(&self, id: EventId) -> Option<&str> {
        self.events.get(&id.0).map(String::as_str)
    }

    /// The name of task `task`, if one was learned.
    pub fn task(&self, task: u64) -> Option<&str> {
        self.tasks.get(&task).map(String::as_str)
    }
}

/// Inserts unless the table is full (a new key beyond [`Names::MAX`]);
/// returns whether it was full.
fn insert<K: std::hash::Hash + Eq>(
    map: &mut std::collections::HashMap<K, String>,
    k: K,
    v: String,
) -> bool {
    if map.len() >= Names::MAX && !map.contains_key(&k) {
        return true;
    }
    map.insert(k, v);
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (Was the doc example of the then public `checksum`.)
    #[test]
    fn checksum_of_empty_is_zero_and_differs_by_content() {
        assert_eq!(checksum(b""), 0);
        assert_ne!(checksum(b"a"), checksum(b"b"));
    }

    fn run_records(time: u64, source: u32, text: &[u8]) -> Vec<Event> {
        let run = Run::new(time, EventId(0x0c), source, 9, text);
        (0..run.len()).map(|i| run.record(i)).collect()
    }

    fn assemble(records: &[Event]) -> Vec<Item> {
        let mut items = Vec::new();
        let mut asm = Assembler::new();
        for e in records {
            asm.push(*e, &mut |i| items.push(i));
        }
        asm.finish(&mut |i| items.push(i));
        items
    }

    fn payload(item: &Item) -> &Payload {
        match item {
            Item::Payload(p) => p,
            Item::Event(e) => panic!("not a payload: {e:?}"),
        }
    }

    #[test]
    fn records_are_byte_exact() {
        let r = run_records(5, 2, b"0123456789abcdefXY");
        assert_eq!(r.len(), 3);
        let sum = checksum(b"0123456789abcdefXY") as u64;
        assert_eq!(sum, 0x8240_856d); // FORMAT.md §1.8's worked example
        assert_eq!(r[0].flags, 0x6000);
        assert_eq!(r[0].args, [sum << 32 | 18, 9]);
        assert_eq!(r[1].flags, 0x4001);
        assert_eq!(r[1].args, [0x3031_3233_3435_3637, 0x3839_6162_6364_6566]);
        assert_eq!(r[2].flags, 0x5002);
        assert_eq!(r[2].args, [0x5859_0000_0000_0000, 0]);
        assert!(r
            .iter()
            .all(|e| (e.time, e.source, e.id) == (5, 2, EventId(0x0c))));
        // The empty payload: one record, begin and end.
        let r = run_records(5, 2, b"");
        assert_eq!((r.len(), r[0].flags, r[0].args), (1, 0x7000, [0, 9]));
        assert_eq!(records_for(0), 1);
        assert_eq!(records_for(MAX_PAYLOAD), MAX_RECORDS);
        assert_eq!(records_for(MAX_PAYLOAD + 1), MAX_RECORDS);
    }

    #[test]
    fn whole_runs_and_other_records_keep_their_order() {
        let other = Event::new(4, EventId(0x0b), 1, [1, 2]);
        let mut records = vec![other];
        records.extend(run_records(5, 2, b"hello"));
        records.push(other);
        let items = assemble(&records);
        assert_eq!(items.len(), 3);
        assert_eq!(items[0], Item::Event(other));
        assert_eq!(payload(&items[1]).bytes, b"hello");
        assert_eq!(payload(&items[1]).state, PayloadState::Complete);
        assert_eq!(items[2], Item::Event(other));
    }

    #[test]
    fn a_missing_middle_record_keeps_the_prefix_and_marks_the_cut() {
        let text: Vec<u8> = (0..40).collect();
        let mut r = run_records(5, 2, &text);
        r.remove(2);
        let items = assemble(&r);
        assert_eq!(items.len(), 1);
        let p = payload(&items[0]);
        assert_eq!(p.bytes, &text[..16]);
        assert_eq!(
            p.state,
            PayloadState::Cut {
                received: 3,
                expected: Some(4)
            }
        );
    }

    #[test]
    fn a_missing_end_is_cut_at_finish_or_by_the_next_run() {
        let r = run_records(5, 2, &[7; 40]);
        let items = assemble(&r[..3]);
        assert_eq!(
            payload(&items[0]).state,
            PayloadState::Cut {
                received: 3,
                expected: Some(4)
            }
        );
        let mut records = r[..2].to_vec();
        records.extend(run_records(6, 2, b"next"));
        let items = assemble(&records);
        assert_eq!(items.len(), 2);
        assert!(matches!(payload(&items[0]).state, PayloadState::Cut { .. }));
        assert_eq!(payload(&items[1]).bytes, b"next");
    }

    #[test]
    fn runs_of_different_sources_interleave() {
        let a = run_records(5, 1, &[1; 33]);
        let b = run_records(5, 2, &[2; 33]);
        let records: Vec<Event> = a.iter().zip(&b).flat_map(|(x, y)| [*x, *y]).collect();
        let items = assemble(&records);
        assert_eq!(items.len(), 2);
        assert_eq!(payload(&items[0]).bytes, [1; 33]);
        assert_eq!(payload(&items[1]).bytes, [2; 33]);
        assert!(items
            .iter()
            .all(|i| payload(i).state == PayloadState::Complete));
    }

    #[test]
    fn mixed_runs_of_one_source_are_never_shown_whole() {
        // Two runs with the same time, id and source: records swapped.
        let a = run_records(5, 1, &[1; 32]);
        let b = run_records(5, 1, &[2; 32]);
        let items = assemble(&[b[0], a[1], a[2], a[0], b[1], b[2]]);
        assert!(items
            .iter()
            .all(|i| payload(i).state != PayloadState::Complete));
        // A changed byte is caught by the checksum.
        let mut r = run_records(5, 1, b"checksummed payload");
        r[1].args[0] ^= 1;
        assert_eq!(payload(&assemble(&r)[0]).state, PayloadState::Mismatch);
    }

    #[test]
    fn control_records_are_not_runs() {
        let mut close = Event::new(5, EventId(0), crate::model::event::TRACER_SOURCE, [1, 2]);
        close.flags = 0x8001 | COMBINE;
        assert_eq!(assemble(&[close]), [Item::Event(close)]);
    }

    #[test]
    fn open_runs_are_bounded() {
        let records: Vec<Event> = (0..Assembler::MAX_PENDING as u32 + 1)
            .map(|s| run_records(5, s, &[0; 20])[0])
            .collect();
        let mut items = Vec::new();
        let mut asm = Assembler::new();
        for e in &records {
            asm.push(*e, &mut |i| items.push(i));
        }
        // The oldest was closed as cut to make room.
        assert_eq!(items.len(), 1);
        assert_eq!(payload(&items[0]).source, 0);
        asm.finish(&mut |i| items.push(i));
        assert_eq!(items.len(), Assembler::MAX_PENDING + 1);
    }

    #[test]
    fn names_are_learned_from_whole_name_records() {
        let run = Run::name(1, 4, NAME_TASK, 12, b"idle");
        let items = assemble(&(0..run.len()).map(|i| run.record(i)).collect::<Vec<_>>());
        let mut names = Names::new();
        assert_eq!(names.learn(payload(&items[0])), Some((NAME_TASK, 12)));
        assert_eq!(names.task(12), Some("idle"));
        assert_eq!(names.source(4), None);
    }
}
