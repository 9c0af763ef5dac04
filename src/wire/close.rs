//! The close run: the last three records of a complete trace file, carrying
//! the writing queue's final counters (FORMAT.md, section 1.5).
//!
//! A writer that closes its files sets [`CLOSES_FLAG`] in the header flags;
//! a file with that flag that does not end with a well-formed close run was
//! cut short (a crash, a kill, a full disk). Each record of the run has
//! `id = 0x0000` (tracer class, `reserved`: never logged by users),
//! `source = 0xffffffff`, the time of closing, and `flags = 0x8000 | part`:
//!
//! | part | `arg0` | `arg1` |
//! |-----:|--------|--------|
//! | 1 | accepted | dropped |
//! | 2 | overwritten | delivered |
//! | 3 | records in the file before the run (events + hoops) | events lost as stated by the file's hoops records |
//!
//! ```
//! use qtrace::wire::{CloseRecord, QueueTotals};
//!
//! let close = CloseRecord::new(
//!     5000,
//!     QueueTotals { accepted: 10, dropped: 2, overwritten: 0, delivered: 10 },
//!     11,
//!     2,
//! );
//! let run = close.to_records();
//! assert_eq!(run[0].flags, 0x8001);
//! assert_eq!(run[2].args, [11, 2]);
//! assert_eq!(CloseRecord::from_records(&run), Some(close));
//! ```

use crate::Event;

// The close run and the hoops record are the core's: one definition for the
// std writers and a firmware's dump.
pub use qtrace_core::encode::close::{
    close_part, hoops_lost, CloseRecord, QueueTotals, CLOSES_FLAG, CLOSE_ID, CLOSE_RECORD_FLAG,
    CLOSE_RUN_LEN, CLOSE_SOURCE,
};

/// Record flags of the receiver's *unclosed-stream mark* (FORMAT.md 1.5):
/// `0x8000 | 4`, a tracer control record that is not part of a close run.
pub const UNCLOSED_FLAGS: u16 = CLOSE_RECORD_FLAG | 4;

/// The receiver's mark that a sender's stream ended without its close
/// datagram (FORMAT.md 1.5 and 3.3): id 0, source `0xffffffff`, flags
/// `0x8004`, `arg0` = the sender id, `arg1` = the events of that
/// stream received or marked lost; its time is the last event time written
/// for the stream. Events the sender logged after its last datagram that
/// arrived are lost without a count.
///
/// ```
/// use qtrace::wire::{close_part, unclosed_mark, unclosed_stream};
/// use qtrace::{Event, EventId};
///
/// let mark = unclosed_mark(7000, 42, 9);
/// assert_eq!((mark.id, mark.source, mark.flags), (EventId(0), 0xffff_ffff, 0x8004));
/// assert_eq!(unclosed_stream(&mark), Some((42, 9)));
/// // A tracer control record (id 0, flag bit 15), but not part 1 to 3 of a
/// // close run: tell it apart with `unclosed_stream` first.
/// assert_eq!(close_part(&mark), Some(4));
/// assert_eq!(unclosed_stream(&Event::new(7000, EventId(0), 0, [42, 9])), None);
/// ```
pub fn unclosed_mark(time: u64, sender: u32, events: u64) -> Event {
    Event {
        time,
        id: CLOSE_ID,
        flags: UNCLOSED_FLAGS,
        source: CLOSE_SOURCE,
        args: [u64::from(sender), events],
    }
}

/// Whether `event` is an unclosed-stream mark ([`unclosed_mark`]: id 0,
/// source `0xffffffff`, flags exactly `0x8004`, a sender id that
/// fits 32 bits); if so, the sender id and the events accounted for.
/// (The example is [`unclosed_mark`]'s.)
pub fn unclosed_stream(event: &Event) -> Option<(u32, u64)> {
    if event.id == CLOSE_ID && event.flags == UNCLOSED_FLAGS && event.source == CLOSE_SOURCE {
        let sender = u32::try_from(event.args[0]).ok()?;
        Some((sender, event.args[1]))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classes::tracer::HOOPS;
    use crate::model::event::TRACER_SOURCE;
    use crate::EventId;

    fn sample() -> CloseRecord {
        CloseRecord::new(
            77,
            QueueTotals {
                accepted: 1,
                dropped: 2,
                overwritten: 3,
                delivered: 4,
            },
            5,
            6,
        )
    }

    #[test]
    fn round_trip_and_layout() {
        let c = sample();
        let run = c.to_records();
        for (i, e) in run.iter().enumerate() {
            assert_eq!((e.time, e.id, e.source), (77, EventId(0), TRACER_SOURCE));
            assert_eq!(e.flags, 0x8000 | (i as u16 + 1));
            assert_eq!(close_part(e), Some(i as u16 + 1));
        }
        assert_eq!(
            run.map(|e| e.args),
            [[1, 2], [3, 4], [5, 6]],
            "accepted/dropped, overwritten/delivered, records/lost"
        );
        assert_eq!(CloseRecord::from_records(&run), Some(c));
    }

    #[test]
    fn malformed_runs_are_refused() {
        let good = sample().to_records();
        let mut swapped = good;
        swapped.swap(0, 1);
        assert_eq!(CloseRecord::from_records(&swapped), None);
        let mut other_time = good;
        other_time[2].time = 78;
        assert_eq!(CloseRecord::from_records(&other_time), None);
        let mut other_source = good;
        other_source[1].source = 0;
        assert_eq!(CloseRecord::from_records(&other_source), None);
        let mut extra_flag = good;
        extra_flag[0].flags |= 0x0100;
        assert_eq!(CloseRecord::from_records(&extra_flag), None);
        let mut other_id = good;
        other_id[0].id = HOOPS;
        assert_eq!(CloseRecord::from_records(&other_id), None);
        assert_eq!(close_part(&other_id[0]), None);
        let plain = Event::new(0, CLOSE_ID, 0, [0, 0]);
        assert_eq!(close_part(&plain), None);
    }
}
