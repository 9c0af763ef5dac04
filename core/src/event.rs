//! The event record: a fixed 32-byte value that every queue stores and every
//! format carries.

use core::fmt;

/// The source of the records the tracer writes itself (hoops records, close
/// runs, the receiver's marks): `0xffffffff`, "the tracer's own source"
/// (FORMAT.md 1.4).
///
/// ```
/// assert_eq!(qtrace_core::TRACER_SOURCE, u32::MAX);
/// ```
pub const TRACER_SOURCE: u32 = u32::MAX;

/// The number of an event, global to the whole tracer (as in S.Ha.R.K.).
///
/// Built-in events keep the S.Ha.R.K. numbering (`0x00`–`0x16`); events of
/// user-defined classes are numbered after them, from
/// [`EventId::FIRST_USER_DEFINED`].
///
/// # An id belongs to no tracer
///
/// An `EventId` is a plain number: it does not remember which tracer's
/// catalog defined it, and no call checks that. Built-in ids mean the same
/// event in every tracer. An id that one tracer handed out for a
/// user-defined class means, in another tracer, whatever event has that
/// number there: the same event if both tracers defined the same classes in
/// the same order, another event (of another class) if not. Configuration
/// calls refuse a number past the end of the tracer's catalog; logging does
/// not look the id up (one load, no check: the hot path) and records nothing
/// for a number no event of the tracer has, since no route leads anywhere
/// from it. Keep the ids of each tracer with that tracer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct EventId(pub u16);

impl EventId {
    /// The first id handed to an event of a user-defined class.
    pub const FIRST_USER_DEFINED: EventId = EventId(0x17);
    /// The largest number of events (built-in plus user-defined) a tracer knows.
    pub const MAX_EVENTS: usize = 4096;

    /// The raw number.
    #[inline]
    pub const fn get(self) -> u16 {
        self.0
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#06x}", self.0)
    }
}

impl From<u16> for EventId {
    fn from(raw: u16) -> Self {
        EventId(raw)
    }
}

/// One recorded event: 32 bytes, `Copy`, no pointers.
///
/// | field    | bits | meaning                                                          |
/// |----------|------|------------------------------------------------------------------|
/// | `time`   | 64   | clock ticks (nanoseconds for qtrace's clocks) since the origin   |
/// | `id`     | 16   | the event number                                                 |
/// | `flags`  | 16   | reserved, zero (readers must ignore bits they do not know)       |
/// | `source` | 32   | the CPU or thread the event came from                            |
/// | `args`   | 128  | the payload: two 64-bit arguments                                |
///
/// Every S.Ha.R.K. payload fits in `args`: the tracer class's u32, the system
/// class's u16 task id, the user class's 64-bit value, the interrupt number,
/// the semaphore class's task and semaphore ids (`args[0]`, `args[1]`). The
/// meaning and name of each argument is in the event's catalog entry, so a
/// trace file describes itself.
///
/// ```
/// assert_eq!(core::mem::size_of::<qtrace_core::Event>(), 32);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(C)]
pub struct Event {
    /// Clock ticks since the clock's origin.
    pub time: u64,
    /// Which event this is.
    pub id: EventId,
    /// Reserved for future use; written as zero.
    pub flags: u16,
    /// The CPU or thread the event came from.
    pub source: u32,
    /// The payload.
    pub args: [u64; 2],
}

const _: () = assert!(core::mem::size_of::<Event>() == 32);

impl Event {
    /// Size of one record in memory and on every wire format, in bytes.
    pub const SIZE: usize = 32;
    /// The all-zero event (a `const` for static ring initialisers).
    pub const ZERO: Event = Event::new(0, EventId(0), 0, [0, 0]);

    /// Builds an event.
    #[inline]
    pub const fn new(time: u64, id: EventId, source: u32, args: [u64; 2]) -> Self {
        Event {
            time,
            id,
            flags: 0,
            source,
            args,
        }
    }

    /// The event as four 64-bit words, the form lock-free queues store it in
    /// (word 1 packs `id`, `flags` and `source`).
    #[inline]
    pub const fn to_words(&self) -> [u64; 4] {
        [
            self.time,
            (self.id.0 as u64) | ((self.flags as u64) << 16) | ((self.source as u64) << 32),
            self.args[0],
            self.args[1],
        ]
    }

    /// Word 1 of [`Event::to_words`] (flags 0) from the source already
    /// shifted into place (`source_word = (source as u64) << 32`): one `or`
    /// on a hot path.
    #[inline(always)]
    pub const fn id_word(id: EventId, source_word: u64) -> u64 {
        source_word | id.0 as u64
    }

    /// The inverse of [`Event::to_words`].
    #[inline]
    pub const fn from_words(w: [u64; 4]) -> Self {
        Event {
            time: w[0],
            id: EventId(w[1] as u16),
            flags: (w[1] >> 16) as u16,
            source: (w[1] >> 32) as u32,
            args: [w[2], w[3]],
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::ToString;

    #[test]
    fn words_round_trip() {
        let e = Event {
            time: u64::MAX - 3,
            id: EventId(0xabcd),
            flags: 0x1234,
            source: 0xdead_beef,
            args: [1, u64::MAX],
        };
        assert_eq!(Event::from_words(e.to_words()), e);
    }

    #[test]
    fn display_is_hex() {
        assert_eq!(EventId(0x13).to_string(), "0x0013");
    }
}
