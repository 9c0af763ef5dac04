//! Crash recovery: turns the ring file a fixed or circular queue left
//! behind (its process died without shutting down) into an ordinary trace.
//!
//! The recovered trace holds what a clean save would have held, as far as
//! the memory shows it: the events oldest-first (a circular queue's rings
//! merged by time, the newest `capacity`; a fixed queue's first
//! `capacity`), a hoops record wherever events are missing, and for every
//! slot that was being written at the moment the process stopped a hoops
//! record of 1 lost event marked [`UNREADABLE`] (bit 0 of its flags)
//! instead of the torn record. Its counters ([`RecoveryCounts`]) satisfy the
//! queues' equations exactly, and the written trace ends with the close run
//! that carries them ([`write_trace`]).
//!
//! Unlike a save, a recovered trace has no names prologue (FORMAT.md 1.8):
//! the names the process recorded ([`RecordedNames`](crate::model::combine::RecordedNames))
//! lived in its memory, not in the ring file, so only the name records the
//! rings still hold name its sources and callsites. FORMAT.md 6.3 says what
//! keeping them in the file would take, and the remedy meanwhile (name
//! again now and then).
//!
//! ```no_run
//! use qtrace::storage;
//!
//! let rec = storage::recover_file("qtrace-out/queue0-circular.ring")?;
//! println!("{} events, {} lost", rec.counts.recovered, rec.counts.lost());
//! storage::write_trace(&rec, "recovered/queue0-circular.qtr")?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::path::Path;

use crate::model::event::Event;
use crate::model::handle::QueueHandle;
use crate::model::io_error::IoError;
use crate::storage::ring_file::{
    Damage, RingContents, RingFileError, RingImage, HEADER_FIXED_LEN, KIND_CIRCULAR,
};
use crate::storage::save::hoops;
use crate::wire::create_trace_file;
use crate::wire::{QueueTotals, TraceHeader};

/// Flag bit of a hoops record standing for a slot that was being written
/// when the process stopped (its record would be torn, so it is not shown).
/// Bit 0, not a high bit: bit 15 marks control records and bit 14 combine
/// runs (FORMAT.md 1.4), and a plain record's low bits are free.
pub const UNREADABLE: u16 = 0x0001;

/// Flag bit of the hoops record (of 0 events) that ends a trace recovered
/// from a damaged ring file ([`Recovered::damage`]): the counts before it are
/// what the trusted fields show, not the whole truth. Bit 1. With
/// [`UNREADABLE`] (`0x0003`), on a hoops record of 1: a record left out
/// because it failed a check of its words (FORMAT.md 6.4).
pub const DAMAGED: u16 = 0x0002;

/// The counters of a recovered queue, as the queue would have reported
/// them at the moment it stopped.
///
/// `attempts = accepted + dropped` and
/// `accepted = recovered + overwritten + unreadable` hold exactly, and the
/// hoops records of the recovered trace add up to
/// `attempts - recovered` ([`RecoveryCounts::lost`]).
///
/// ```
/// # let _cwd = tempfile::tempdir().unwrap(); std::env::set_current_dir(_cwd.path()).unwrap(); // own directory: doc tests run in parallel
/// use qtrace::classes::user;
/// use qtrace::queues::{Circular, CircularParams};
/// use qtrace::storage::{self, RingImage, RingStorage};
///
/// let dir = std::env::temp_dir().join(format!("qtrace-doc-recover-{}", std::process::id()));
/// let ring = dir.join("q.ring");
/// let tracer = qtrace::Tracer::new();
/// let params = CircularParams::default()
///     .with_capacity(64)
///     .with_shards(0)
///     .with_ring(RingStorage::FileAt(ring.clone()));
/// let q = tracer.create_queue::<Circular>(params)?;
/// tracer.assign_class(user::CLASS, q)?;
/// tracer.log_event(user::USER0, [7, 0]);
/// // While the program runs (or after it died), the ring file holds the events.
/// let rec = storage::recover_file(&ring)?;
/// assert_eq!((rec.counts.attempts, rec.counts.recovered), (1, 1));
/// assert_eq!(rec.events.iter().filter(|e| e.id == user::USER0).count(), 1);
/// let image = RingImage::parse(&std::fs::read(&ring)?)?;
/// assert_eq!(image.rings[0].records.len(), 1);
/// storage::write_trace(&rec, dir.join("recovered.qtr"))?;
/// # tracer.shutdown()?;
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecoveryCounts {
    /// Every event the program tried to log into the queue.
    pub attempts: u64,
    /// Events the queue took.
    pub accepted: u64,
    /// Events refused (fixed: full; circular: a slot busy or lapped).
    pub dropped: u64,
    /// Accepted events evicted by newer ones (circular).
    pub overwritten: u64,
    /// Events whose slot was being written when the process stopped, or
    /// whose record failed a check of its words (FORMAT.md 6.4): each is a
    /// hoops record marked [`UNREADABLE`] (and [`DAMAGED`] for the latter).
    pub unreadable: u64,
    /// Events in the recovered trace.
    pub recovered: u64,
}

impl RecoveryCounts {
    /// Events missing from the recovered trace (the sum of its hoops
    /// records' counts).
    pub fn lost(&self) -> u64 {
        self.attempts - self.recovered
    }
}

/// A recovered queue: an ordinary trace's header and records.
///
/// ```
/// # let _cwd = tempfile::tempdir().unwrap(); std::env::set_current_dir(_cwd.path()).unwrap(); // own directory: doc tests run in parallel
/// use qtrace::classes::user;
/// use qtrace::queues::{Circular, CircularParams};
/// use qtrace::storage::{self, RingImage, RingStorage};
///
/// let dir = std::env::temp_dir().join(format!("qtrace-doc-recover-{}", std::process::id()));
/// let ring = dir.join("q.ring");
/// let tracer = qtrace::Tracer::new();
/// let params = CircularParams::default()
///     .with_capacity(64)
///     .with_shards(0)
///     .with_ring(RingStorage::FileAt(ring.clone()));
/// let q = tracer.create_queue::<Circular>(params)?;
/// tracer.assign_class(user::CLASS, q)?;
/// tracer.log_event(user::USER0, [7, 0]);
/// // While the program runs (or after it died), the ring file holds the events.
/// let rec = storage::recover_file(&ring)?;
/// assert_eq!((rec.counts.attempts, rec.counts.recovered), (1, 1));
/// assert_eq!(rec.events.iter().filter(|e| e.id == user::USER0).count(), 1);
/// let image = RingImage::parse(&std::fs::read(&ring)?)?;
/// assert_eq!(image.rings[0].records.len(), 1);
/// storage::write_trace(&rec, dir.join("recovered.qtr"))?;
/// # tracer.shutdown()?;
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Recovered {
    /// The queue's trace header (catalog, clock, queue), the one
    /// [`write_trace`] writes: compact chunks (trace-file version 2,
    /// FORMAT.md 1.11), as the queue's own save by default; set
    /// `header = header.with_compact(false)` for 32-byte records (version 1).
    pub header: TraceHeader,
    /// The queue handle that wrote the ring file.
    pub queue: QueueHandle,
    /// The writer's process id.
    pub process_id: u32,
    /// The records, oldest first: events and hoops records.
    pub events: Vec<Event>,
    /// The counters. When [`Recovered::damage`] is not empty they are what
    /// the fields that passed the cross-checks show (FORMAT.md 6.4).
    pub counts: RecoveryCounts,
    /// What the cross-checks found wrong in the ring file (empty for a
    /// well-formed file). A damaged recovery is written without its close
    /// run, so readers never report it complete.
    pub damage: Vec<Damage>,
    /// Read from the ring of a process still running (`qtrace recover
    /// --force`): a snapshot, written without its close run.
    pub snapshot: bool,
}

impl Recovered {
    /// Whether the recovery is the whole record of a dead process's ring:
    /// no damage and not a snapshot of a live one.
    pub fn is_complete(&self) -> bool {
        self.damage.is_empty() && !self.snapshot
    }
}

/// Why a ring file could not be recovered.
///
/// ```
/// use qtrace::storage::{recover_file, RecoverError};
/// let e = recover_file("/no/such/ring/file").unwrap_err();
/// assert!(matches!(e, RecoverError::Io(_)));
/// ```
#[derive(Debug)]
pub enum RecoverError {
    /// The file could not be read.
    Io(std::io::Error),
    /// It is not a ring file this version reads.
    Format(RingFileError),
    /// The process that writes it is still running (its header's process
    /// id maps the file): recovering it would give a snapshot, not its
    /// last events.
    Live {
        /// The writer's process id.
        pid: u32,
    },
}

impl std::fmt::Display for RecoverError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecoverError::Io(e) => write!(f, "cannot read the ring file: {e}"),
            RecoverError::Format(e) => e.fmt(f),
            RecoverError::Live { pid } => write!(
                f,
                "the process that writes this ring file (pid {pid}) is still running: stop it (a clean shutdown saves its trace), or read it anyway as a snapshot, which is not complete (its producers keep writing)"
            ),
        }
    }
}

/// The cause is held once: its text is part of the message, so `source()`
/// is `None`; the cause itself is the variant's field.
impl std::error::Error for RecoverError {}

/// Recovers the ring file at `path`.
///
/// # Errors
///
/// [`RecoverError::Io`] when it cannot be read, [`RecoverError::Format`]
/// when it is not a ring file (or is cut short). The magic and the layout
/// are checked on the first 128 bytes before the body is read, and no more
/// than the layout's length (and one byte, to see whether the file is
/// longer) is ever read: `/dev/zero` or an endless pipe ends at once.
/// This does not check whether the writer is alive ([`writer_alive`]).
///
/// ```
/// # let _cwd = tempfile::tempdir().unwrap(); std::env::set_current_dir(_cwd.path()).unwrap(); // own directory: doc tests run in parallel
/// use qtrace::classes::user;
/// use qtrace::queues::{Circular, CircularParams};
/// use qtrace::storage::{self, RingImage, RingStorage};
///
/// let dir = std::env::temp_dir().join(format!("qtrace-doc-recover-{}", std::process::id()));
/// let ring = dir.join("q.ring");
/// let tracer = qtrace::Tracer::new();
/// let params = CircularParams::default()
///     .with_capacity(64)
///     .with_shards(0)
///     .with_ring(RingStorage::FileAt(ring.clone()));
/// let q = tracer.create_queue::<Circular>(params)?;
/// tracer.assign_class(user::CLASS, q)?;
/// tracer.log_event(user::USER0, [7, 0]);
/// // While the program runs (or after it died), the ring file holds the events.
/// let rec = storage::recover_file(&ring)?;
/// assert_eq!((rec.counts.attempts, rec.counts.recovered), (1, 1));
/// assert_eq!(rec.events.iter().filter(|e| e.id == user::USER0).count(), 1);
/// let image = RingImage::parse(&std::fs::read(&ring)?)?;
/// assert_eq!(image.rings[0].records.len(), 1);
/// storage::write_trace(&rec, dir.join("recovered.qtr"))?;
/// # tracer.shutdown()?;
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn recover_file(path: impl AsRef<Path>) -> Result<Recovered, RecoverError> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(RecoverError::Io)?;
    let mut bytes = Vec::with_capacity(HEADER_FIXED_LEN);
    (&mut f)
        .take(HEADER_FIXED_LEN as u64)
        .read_to_end(&mut bytes)
        .map_err(RecoverError::Io)?;
    let len = RingImage::layout_len(&bytes).map_err(RecoverError::Format)?;
    // A regular file shorter than its layout: say so before reading it.
    if let Ok(m) = f.metadata() {
        if m.is_file() && m.len() < len {
            return Err(RecoverError::Format(RingFileError::Truncated {
                needed: len,
                present: m.len(),
            }));
        }
    }
    // The layout's bytes and one more (which only says "longer").
    (&mut f)
        .take(len + 1 - HEADER_FIXED_LEN as u64)
        .read_to_end(&mut bytes)
        .map_err(RecoverError::Io)?;
    recover_bytes(&bytes).map_err(RecoverError::Format)
}

/// The process id of the live process writing the ring file at `path`, if
/// there is one: the pid in its header, when that process maps this very
/// file (Linux: `/proc/<pid>/maps` names its device and inode). `None` when
/// the writer is gone, the file cannot be read or is not a regular file
/// (a pipe is never read here), or this is not Linux (where nothing is
/// checked).
pub fn writer_alive(path: impl AsRef<Path>) -> Option<u32> {
    use std::io::Read;
    let path = path.as_ref();
    // Only a regular file can be a live ring (and reading a pipe here
    // would take bytes from the recovery).
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let mut head = [0u8; HEADER_FIXED_LEN];
    std::fs::File::open(path).ok()?.read_exact(&mut head).ok()?;
    RingImage::layout_len(&head).ok()?;
    let swap = u32::from_ne_bytes(head[12..16].try_into().ok()?) != 0x0102_0304;
    let pid = u32::from_ne_bytes(head[72..76].try_into().ok()?);
    let pid = if swap { pid.swap_bytes() } else { pid };
    if pid == 0 {
        return None; // names no process
    }
    crate::storage::ring_file::mapped_by(pid, path).then_some(pid)
}

/// Recovers a ring file from its bytes (safe code; never panics on bad
/// bytes).
///
/// # Errors
///
/// [`RingFileError`] when the bytes are not a ring file this version reads.
///
/// ```
/// use qtrace::storage::{recover_bytes, RingFileError};
/// // Not a ring file: a typed error, never a panic.
/// assert!(matches!(recover_bytes(b"not a ring file"), Err(RingFileError::NotARingFile | RingFileError::Truncated { .. })));
/// ```
pub fn recover_bytes(bytes: &[u8]) -> Result<Recovered, RingFileError> {
    let image = RingImage::parse(bytes)?;
    let queue = QueueHandle(image.queue);
    let capacity = if image.layout.kind == KIND_CIRCULAR {
        image.layout.capacity
    } else {
        u64::MAX // a fixed queue keeps every record it holds
    };
    let (mut events, counts) = rebuild(&image.rings, capacity, queue);
    if !image.damage.is_empty() {
        let time = events.iter().map(|e| e.time).max().unwrap_or(0);
        let mut mark = hoops(time, 0, queue);
        mark.flags = DAMAGED;
        events.push(mark);
    }
    Ok(Recovered {
        // Written as the queue's save is by default: compact chunks (the
        // ring file does not say whether the queue was made with
        // `with_compact(false)`; its slots are 32-byte records either way).
        header: image.trace_header.with_compact(true),
        queue,
        process_id: image.process_id,
        events,
        counts,
        damage: image.damage,
        snapshot: false,
    })
}

/// Writes `rec` as an ordinary trace file at `path`, ending with the close
/// run (FORMAT.md 1.5) that carries the recovered counters, so readers
/// report it complete: everything the ring file can tell is in it, and what
/// it cannot is stated by its hoops records. A damaged recovery or a
/// snapshot ([`Recovered::is_complete`] false) is written without the close
/// run: readers report it cut, never complete. In the close run, the
/// unreadable events count as overwritten (lost from the accepted ones:
/// `accepted = delivered + overwritten`), and its time is the newest
/// record's.
///
/// # Errors
///
/// [`IoError`] naming the path.
///
/// ```
/// # let _cwd = tempfile::tempdir().unwrap(); std::env::set_current_dir(_cwd.path()).unwrap(); // own directory: doc tests run in parallel
/// use qtrace::classes::user;
/// use qtrace::queues::{Circular, CircularParams};
/// use qtrace::storage::{self, RingImage, RingStorage};
///
/// let dir = std::env::temp_dir().join(format!("qtrace-doc-recover-{}", std::process::id()));
/// let ring = dir.join("q.ring");
/// let tracer = qtrace::Tracer::new();
/// let params = CircularParams::default()
///     .with_capacity(64)
///     .with_shards(0)
///     .with_ring(RingStorage::FileAt(ring.clone()));
/// let q = tracer.create_queue::<Circular>(params)?;
/// tracer.assign_class(user::CLASS, q)?;
/// tracer.log_event(user::USER0, [7, 0]);
/// // While the program runs (or after it died), the ring file holds the events.
/// let rec = storage::recover_file(&ring)?;
/// assert_eq!((rec.counts.attempts, rec.counts.recovered), (1, 1));
/// assert_eq!(rec.events.iter().filter(|e| e.id == user::USER0).count(), 1);
/// let image = RingImage::parse(&std::fs::read(&ring)?)?;
/// assert_eq!(image.rings[0].records.len(), 1);
/// storage::write_trace(&rec, dir.join("recovered.qtr"))?;
/// # tracer.shutdown()?;
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_trace(rec: &Recovered, path: impl AsRef<Path>) -> Result<(), IoError> {
    let path = path.as_ref();
    let header = rec.header.clone().with_close_run(true);
    let mut w = create_trace_file(path, &header)?;
    w.write_events(&rec.events)
        .map_err(|e| IoError::new("write recovered trace", path, e))?;
    if !rec.is_complete() {
        return w
            .finish()
            .map(|_| ())
            .map_err(|e| IoError::new("flush recovered trace", path, e));
    }
    let c = rec.counts;
    let totals = QueueTotals {
        accepted: c.accepted,
        dropped: c.dropped,
        overwritten: c.overwritten + c.unreadable,
        delivered: c.recovered,
    };
    let time = rec.events.iter().map(|e| e.time).max().unwrap_or(0);
    w.finish_with_close(time, totals)
        .map(|_| ())
        .map_err(|e| IoError::new("flush recovered trace", path, e))
}

/// One record of a ring, or a mark for an unreadable one.
#[derive(Clone, Copy)]
enum Item {
    Event(Event),
    /// Flags of its mark: [`UNREADABLE`], or with [`DAMAGED`] for a record
    /// that failed a check of its words.
    Unreadable(u16),
}

/// Sort key of a merged record: time, ticket, ring, then 0 for a hoops
/// record (before the event it precedes) and 1 for an event.
type Key = (u64, u64, usize, u8);

/// The trace of `rings`: the newest `capacity` events overall (by time,
/// ticket, ring), each ring's unreadable marks, and hoops records for every
/// missing ticket; sorted by time.
fn rebuild(
    rings: &[RingContents],
    capacity: u64,
    queue: QueueHandle,
) -> (Vec<Event>, RecoveryCounts) {
    let total: u64 = rings.iter().map(|r| r.records.len() as u64).sum();
    let first_kept: Option<Key> = (total > capacity).then(|| {
        let mut keys: Vec<Key> = rings
            .iter()
            .enumerate()
            .flat_map(|(i, r)| r.records.iter().map(move |(t, e)| (e.time, *t, i, 1)))
            .collect();
        let cut = (total - capacity) as usize;
        *keys.select_nth_unstable(cut).1
    });
    let mut counts = RecoveryCounts::default();
    let mut out: Vec<(Key, Event)> = Vec::new();
    for (i, ring) in rings.iter().enumerate() {
        // Saturating: a corrupt file may claim any counts.
        counts.attempts = counts.attempts.saturating_add(ring.attempts);
        counts.dropped = counts.dropped.saturating_add(ring.dropped);
        let newest_time = ring.records.last().map_or(0, |(_, e)| e.time);
        let mut items: Vec<(u64, Item)> = ring
            .records
            .iter()
            .filter(|(t, e)| first_kept.map_or(true, |k| (e.time, *t, i, 1) >= k))
            .map(|(t, e)| (*t, Item::Event(*e)))
            .chain(
                ring.unreadable
                    .iter()
                    .map(|t| (*t, Item::Unreadable(UNREADABLE))),
            )
            .chain(
                ring.damaged
                    .iter()
                    .map(|t| (*t, Item::Unreadable(UNREADABLE | DAMAGED))),
            )
            .collect();
        items.sort_by_key(|(t, _)| *t);
        let mut next = 0u64;
        let mut last_time = None;
        for (n, &(ticket, item)) in items.iter().enumerate() {
            let time = match item {
                Item::Event(e) => e.time,
                // The time of the record before it in this ring, else after
                // it, else the ring's newest.
                Item::Unreadable(_) => last_time.unwrap_or_else(|| {
                    items[n..]
                        .iter()
                        .find_map(|(_, it)| match it {
                            Item::Event(e) => Some(e.time),
                            Item::Unreadable(_) => None,
                        })
                        .unwrap_or(newest_time)
                }),
            };
            if ticket > next {
                out.push(((time, ticket, i, 0), hoops(time, ticket - next, queue)));
            }
            match item {
                Item::Event(e) => {
                    out.push(((time, ticket, i, 1), e));
                    counts.recovered += 1;
                }
                Item::Unreadable(flags) => {
                    let mut mark = hoops(time, 1, queue);
                    mark.flags = flags;
                    out.push(((time, ticket, i, 0), mark));
                    counts.unreadable += 1;
                }
            }
            next = ticket + 1;
            last_time = Some(time);
        }
        if ring.attempts > next {
            let time = last_time.unwrap_or(newest_time);
            out.push((
                (time, u64::MAX, i, 0),
                hoops(time, ring.attempts - next, queue),
            ));
        }
    }
    counts.accepted = counts.attempts - counts.dropped.min(counts.attempts);
    counts.overwritten = counts
        .accepted
        .saturating_sub(counts.recovered + counts.unreadable);
    out.sort_by_key(|(k, _)| *k);
    (out.into_iter().map(|(_, e)| e).collect(), counts)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::classes::tracer::HOOPS;
    use crate::model::event::TRACER_SOURCE;
    use crate::EventId;

    fn ev(t: u64) -> Event {
        Event::new(t * 10, EventId(0x0b), 1, [t, 0])
    }

    #[test]
    fn an_unreadable_mark_is_neither_a_combine_record_nor_a_control_record() {
        let mut mark = Event::new(5, HOOPS, TRACER_SOURCE, [1, 0]);
        mark.flags = UNREADABLE;
        assert!(!crate::model::combine::is_combine(&mark));
        assert!(crate::wire::close::close_part(&mark).is_none());
    }

    fn lost(events: &[Event]) -> u64 {
        events
            .iter()
            .filter(|e| e.id == HOOPS)
            .map(|e| e.args[0])
            .sum()
    }

    #[test]
    fn fixed_ring_with_a_slot_being_written_and_drops() {
        let ring = RingContents {
            records: vec![(0, ev(0)), (2, ev(2))],
            unreadable: vec![1],
            attempts: 5,
            dropped: 2,
            ..Default::default()
        };
        let (events, c) = rebuild(&[ring], u64::MAX, QueueHandle(1));
        let mut mark = hoops(0, 1, QueueHandle(1));
        mark.flags = UNREADABLE;
        assert_eq!(events, [ev(0), mark, ev(2), hoops(20, 2, QueueHandle(1))]);
        assert_eq!(
            c,
            RecoveryCounts {
                attempts: 5,
                accepted: 3,
                dropped: 2,
                overwritten: 0,
                unreadable: 1,
                recovered: 2
            }
        );
        assert_eq!(lost(&events), c.lost());
    }

    #[test]
    fn circular_rings_keep_the_newest_capacity_overall() {
        let q = QueueHandle(0);
        // Shared ring: nothing. Shard A: tickets 0..4 (times 0..30), B:
        // tickets 0..3 with ticket 3 being written.
        let mp = RingContents::default();
        let a = RingContents {
            records: (0..4).map(|t| (t, ev(t))).collect(),
            attempts: 4,
            ..Default::default()
        };
        let b = RingContents {
            records: (0..3)
                .map(|t| (t, Event::new(t * 10 + 5, EventId(0x0c), 2, [t, 0])))
                .collect(),
            unreadable: vec![3],
            attempts: 4,
            dropped: 0,
            ..Default::default()
        };
        let (events, c) = rebuild(&[mp, a, b], 4, q);
        // Newest 4 by time: a2 (20), b2 (25), a3 (30)... and b1 (15).
        let kept: Vec<u64> = events
            .iter()
            .filter(|e| e.id != HOOPS)
            .map(|e| e.time)
            .collect();
        assert_eq!(kept, [15, 20, 25, 30]);
        assert_eq!(c.recovered, 4);
        assert_eq!(c.unreadable, 1);
        assert_eq!(c.attempts, 8);
        assert_eq!(c.accepted, c.recovered + c.overwritten + c.unreadable);
        assert_eq!(lost(&events), c.lost());
        assert_eq!(events.iter().filter(|e| e.flags == UNREADABLE).count(), 1);
    }
}
