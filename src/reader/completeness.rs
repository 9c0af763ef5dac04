//! Whether a trace file says it is complete ([`Completeness`]), and what
//! it lost when it is not.

use super::*;

/// Whether a trace file is complete, known once it has been read to its end
/// ([`TraceReader::completeness`]). FORMAT.md 1.5 specifies the close run.
///
/// ```
/// use qtrace::classes::{system, Catalog};
/// use qtrace::clock::{Clock, ManualClock};
/// use qtrace::reader::{Completeness, TraceReader};
/// use qtrace::wire::{QueueTotals, TraceHeader, TraceWriter};
/// use qtrace::Event;
///
/// let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)))
///     .with_close_run(true);
/// let mut w = TraceWriter::new(Vec::new(), &header)?;
/// w.write_event(&Event::new(1, system::SCHEDULE, 0, [3, 0]))?;
/// let totals = QueueTotals { accepted: 1, dropped: 0, overwritten: 0, delivered: 1 };
/// let bytes = w.finish_with_close(2, totals)?;
///
/// let mut whole = TraceReader::new(&bytes[..])?;
/// assert_eq!(whole.by_ref().count(), 1);
/// assert!(matches!(whole.completeness(), Some(Completeness::Complete(_))));
///
/// // The same file without its close run (3 records): cut short.
/// let mut cut = TraceReader::new(&bytes[..bytes.len() - 3 * 32])?;
/// assert_eq!(cut.by_ref().count(), 1);
/// assert_eq!(cut.completeness(), Some(Completeness::Cut { records: 1, lost: 0 }));
/// assert_eq!(cut.completeness().unwrap().is_complete(), Some(false));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Completeness {
    /// The file ends with a well-formed close run whose record and loss
    /// counts agree with the file: nothing is missing beyond what its hoops
    /// records state.
    Complete(CloseRecord),
    /// The file ends with a well-formed close run, but the run's part 3
    /// disagrees with what was read (`records` records stating `lost` lost
    /// events): records were removed or added after writing.
    Mismatch {
        /// The close run as written.
        close: CloseRecord,
        /// Records read before the run.
        records: u64,
        /// Lost events stated by the hoops records read.
        lost: u64,
    },
    /// The header says the writer closes its files, and this one has no
    /// close run at its end: the writer stopped (crash, kill, full disk)
    /// before closing it. Events after the cut are lost without a count.
    Cut {
        /// Records read before the cut (events, hoops, stray control records).
        records: u64,
        /// Events known lost before the cut (the sum of the hoops records).
        lost: u64,
    },
    /// The file was written before close runs existed (header flag bit 0
    /// clear): whether it is complete cannot be known.
    Unknown,
}

impl Completeness {
    /// `Some(true)` when complete, `Some(false)` when cut short or its close
    /// run disagrees with it, `None` when unknown (an old file).
    pub fn is_complete(&self) -> Option<bool> {
        match self {
            Completeness::Complete(_) => Some(true),
            Completeness::Mismatch { .. } | Completeness::Cut { .. } => Some(false),
            Completeness::Unknown => None,
        }
    }
}

/// The wording of a completeness, written once for every reader: the plain
/// form (`{}`) is a sentence (`qtrace stats` prints `end: {}`), the alternate
/// form (`{:#}`) the shorter text of `qtrace dump`'s `[END: {:#}]` line.
///
/// ```
/// use qtrace::reader::Completeness;
///
/// let cut = Completeness::Cut { records: 4, lost: 2 };
/// assert_eq!(
///     cut.to_string(),
///     "CUT SHORT: no close record after 4 records; 2 events known lost before the cut, \
///      events after it lost without a count"
/// );
/// assert_eq!(
///     format!("{cut:#}"),
///     "CUT SHORT after 4 records; 2 events known lost before the cut, \
///      events after it lost without a count"
/// );
/// ```
impl fmt::Display for Completeness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let short = f.alternate();
        match self {
            Completeness::Complete(c) => {
                f.write_str(if short {
                    "complete; "
                } else {
                    "complete (closed; "
                })?;
                // The file's own count, then the queue's counters at the
                // moment the file was written (a snapshot's queue goes on:
                // they are not statements about the file).
                write!(
                    f,
                    "the file holds {} records; its queue had then accepted {}, dropped {}, overwritten {}, delivered {}",
                    c.records,
                    c.totals.accepted,
                    c.totals.dropped,
                    c.totals.overwritten,
                    c.totals.delivered
                )?;
                if !short {
                    f.write_str(")")?;
                }
                Ok(())
            }
            Completeness::Mismatch {
                close,
                records,
                lost,
            } => write!(
                f,
                "{} close record says {} records stating {} lost events, the file holds {records} records stating {lost}",
                if short { "DAMAGED: the" } else { "damaged: its" },
                close.records,
                close.lost
            ),
            Completeness::Cut { records, lost } => write!(
                f,
                "CUT SHORT{} after {records} records; {lost} events known lost before the cut, events after it lost without a count",
                if short { "" } else { ": no close record" }
            ),
            Completeness::Unknown => {
                write!(f, "completeness unknown (written before close records)")
            }
        }
    }
}
