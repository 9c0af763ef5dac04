//! The close run: the last three records of a complete trace file, carrying
//! the writing queue's final counters (FORMAT.md 1.5), and the hoops record
//! that states a loss (FORMAT.md 1.4).
//!
//! Each record of the run has `id = 0x0000` (tracer class, `reserved`),
//! `source = 0xffffffff` ([`TRACER_SOURCE`]), the time of closing, and
//! `flags = 0x8000 | part`:
//!
//! | part | `arg0` | `arg1` |
//! |-----:|--------|--------|
//! | 1 | accepted | dropped |
//! | 2 | overwritten | delivered |
//! | 3 | records in the file before the run (events + hoops) | events lost as stated by the file's hoops records |
//!
//! ```
//! use qtrace_core::encode::close::{CloseRecord, QueueTotals};
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

use crate::classes::tracer::HOOPS;
use crate::{Event, EventId, QueueCounters, TRACER_SOURCE};

pub use crate::layout::header::CLOSES_FLAG;
/// Record flag bit 15: a close-run record.
pub const CLOSE_RECORD_FLAG: u16 = 0x8000;
/// The id of a close-run record (tracer class, `reserved`).
pub const CLOSE_ID: EventId = EventId(0x0000);
/// The source of a close-run record (the tracer itself).
pub const CLOSE_SOURCE: u32 = TRACER_SOURCE;
/// Records in a close run.
pub const CLOSE_RUN_LEN: usize = 3;

/// A queue's final counters, as a close run carries them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueTotals {
    /// Events the queue took.
    pub accepted: u64,
    /// Events refused because the queue was full.
    pub dropped: u64,
    /// Events evicted by newer ones.
    pub overwritten: u64,
    /// Events written (or sent) by the queue.
    pub delivered: u64,
}

impl From<QueueCounters> for QueueTotals {
    fn from(c: QueueCounters) -> Self {
        QueueTotals {
            accepted: c.accepted,
            dropped: c.dropped,
            overwritten: c.overwritten,
            delivered: c.delivered,
        }
    }
}

/// A decoded (or to be written) close run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CloseRecord {
    /// The time of closing (the same in all three records).
    pub time: u64,
    /// The writing queue's final counters.
    pub totals: QueueTotals,
    /// Records in the file before the close run (events and hoops).
    pub records: u64,
    /// Events lost as stated by the file's hoops records (sum of their
    /// `arg0`).
    pub lost: u64,
}

/// Which part (1, 2 or 3) of a close run `event` claims to be: id 0 and flag
/// bit 15 set. `Some(0)` or `Some(4..)` is a malformed control record.
pub fn close_part(event: &Event) -> Option<u16> {
    if event.id == CLOSE_ID && event.flags & CLOSE_RECORD_FLAG != 0 {
        Some(event.flags & !CLOSE_RECORD_FLAG)
    } else {
        None
    }
}

/// Whether `event` is a hoops record, and if so how many events it says were
/// lost.
pub fn hoops_lost(event: &Event) -> Option<u64> {
    (event.id == HOOPS).then_some(event.args[0])
}

/// The hoops record: `lost` events lost by queue `queue` at `time`
/// (FORMAT.md 1.4).
pub const fn hoops(time: u64, lost: u64, queue: u16) -> Event {
    Event::new(time, HOOPS, TRACER_SOURCE, [lost, queue as u64])
}

impl CloseRecord {
    /// A close run at `time` for a file of `records` records (events and
    /// hoops) whose hoops records state `lost` events lost.
    pub fn new(time: u64, totals: QueueTotals, records: u64, lost: u64) -> Self {
        CloseRecord {
            time,
            totals,
            records,
            lost,
        }
    }

    /// The three records, in file order.
    pub fn to_records(&self) -> [Event; CLOSE_RUN_LEN] {
        let rec = |part: u16, args: [u64; 2]| Event {
            time: self.time,
            id: CLOSE_ID,
            flags: CLOSE_RECORD_FLAG | part,
            source: CLOSE_SOURCE,
            args,
        };
        let t = &self.totals;
        [
            rec(1, [t.accepted, t.dropped]),
            rec(2, [t.overwritten, t.delivered]),
            rec(3, [self.records, self.lost]),
        ]
    }

    /// Decodes a close run: parts 1, 2, 3 in order, each with id 0, source
    /// `0xffffffff`, flags `0x8000 | part` exactly, and one time. Anything
    /// else is `None` (not a well-formed run).
    pub fn from_records(run: &[Event; CLOSE_RUN_LEN]) -> Option<Self> {
        let time = run[0].time;
        for (i, e) in run.iter().enumerate() {
            if e.id != CLOSE_ID
                || e.source != CLOSE_SOURCE
                || e.flags != CLOSE_RECORD_FLAG | (i as u16 + 1)
                || e.time != time
            {
                return None;
            }
        }
        Some(CloseRecord {
            time,
            totals: QueueTotals {
                accepted: run[0].args[0],
                dropped: run[0].args[1],
                overwritten: run[1].args[0],
                delivered: run[1].args[1],
            },
            records: run[2].args[0],
            lost: run[2].args[1],
        })
    }
}
