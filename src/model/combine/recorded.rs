//! The writer's side of names: every name a tracer recorded at run time
//! ([`crate::Tracer::name_source`], `name_thread`, `name_task`,
//! `name_event`), kept — the newest per subject, bounded — so that a saved
//! file can carry them again at its start (FORMAT.md 1.8, "Names
//! prologue"), whatever the ring overwrote.

use std::collections::BTreeMap;

use parking_lot::Mutex;

use super::{Run, MAX_PAYLOAD};
use crate::model::event::Event;

/// The names a tracer recorded, newest per `(kind, subject)`, written again
/// as name records at the start of every trace file its fixed and circular
/// queues save (shutdown, [`snapshot`](crate::queues::CircularQueue::snapshot),
/// snapshots on trigger, the panic save): a circular queue overwrites its
/// name records like any record, and the saved file still names its
/// sources, tasks and `tracing` callsites.
///
/// Memory is bounded: at most [`RecordedNames::MAX_NAMES`] names and
/// [`RecordedNames::MAX_BYTES`] bytes of names; a name beyond either bound
/// is not kept (counted by [`RecordedNames::not_kept`]; its name record is
/// still recorded into the queues as always). Each name is kept cut to
/// [`MAX_PAYLOAD`] bytes, as its record is. The tracer keeps them on the
/// configuration path (the naming calls); logging never touches them.
///
/// A queue finds the tracer's book in its
/// [`QueueContext`](crate::queue::QueueContext); a user-defined queue that
/// writes its own files can write [`RecordedNames::records`] first, too.
///
/// ```
/// # let _cwd = tempfile::tempdir().unwrap(); std::env::set_current_dir(_cwd.path()).unwrap(); // own directory: doc tests run in parallel
/// use std::sync::Arc;
/// use qtrace::queues::{Circular, CircularParams};
/// use qtrace::{EventId, Tracer};
///
/// let tracer = Arc::new(Tracer::new());
/// let q = tracer.create_queue::<Circular>(CircularParams::default())?;
/// tracer.activate()?;
/// tracer.name_event(EventId(0x0b), "user0 renamed")?;
/// let names = tracer.recorded_names();
/// assert_eq!(names.len(), 1);
/// // One name record of 1 + ⌈13 / 16⌉ records, stamped with the time given.
/// let records = names.records(42);
/// assert_eq!(records.len(), 2);
/// assert!(records.iter().all(|r| r.time == 42 && r.id == qtrace::combine::NAME_EVENT));
/// # Ok::<(), qtrace::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct RecordedNames {
    book: Mutex<Book>,
}

/// One kept name: the source that recorded it, and the name.
type Kept = (u32, Box<[u8]>);

#[derive(Debug, Default)]
struct Book {
    /// `(kind, subject)` → (the source that recorded it, the name).
    names: BTreeMap<(u8, u64), Kept>,
    bytes: usize,
    not_kept: u64,
}

impl RecordedNames {
    /// Names kept at most.
    pub const MAX_NAMES: usize = 8192;
    /// Bytes of names kept at most (512 KiB).
    pub const MAX_BYTES: usize = 512 * 1024;

    /// An empty book.
    ///
    /// ```
    /// let names = qtrace::combine::RecordedNames::new();
    /// assert!(names.is_empty());
    /// ```
    pub fn new() -> Self {
        RecordedNames::default()
    }

    /// Keeps `name` for `subject` of `kind` (the newest wins), recorded by
    /// `source`. A name that does not fit the bounds is not kept and the
    /// older name of that subject, now stale, is forgotten.
    pub(crate) fn keep(&self, source: u32, kind: u8, subject: u64, name: &[u8]) {
        let name = &name[..name.len().min(MAX_PAYLOAD)];
        let key = (kind, subject & ((1 << 56) - 1));
        let mut b = self.book.lock();
        if let Some((_, old)) = b.names.remove(&key) {
            b.bytes -= old.len();
        }
        if b.names.len() >= Self::MAX_NAMES || b.bytes + name.len() > Self::MAX_BYTES {
            b.not_kept += 1;
            return;
        }
        b.bytes += name.len();
        b.names.insert(key, (source, name.into()));
    }

    /// Names kept.
    pub fn len(&self) -> usize {
        self.book.lock().names.len()
    }

    /// Whether no name is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Names not kept because a bound was reached (a saved file may then
    /// lack them where its ring overwrote their records).
    pub fn not_kept(&self) -> u64 {
        self.book.lock().not_kept
    }

    /// Every kept name as name records ([`Run::name`]), stamped `time`,
    /// ordered by kind, then subject: the names prologue of a saved file.
    pub fn records(&self, time: u64) -> Vec<Event> {
        let b = self.book.lock();
        let mut out = Vec::new();
        for (&(kind, subject), (source, name)) in &b.names {
            let run = Run::name(time, *source, kind, subject, name);
            out.extend((0..run.len()).map(|i| run.record(i)));
        }
        out
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::model::combine::{Assembler, Item, Names, NAME_EVENT_ID, NAME_SOURCE};
    use crate::EventId;

    #[test]
    fn the_newest_name_per_subject_in_order_and_bounded() {
        let book = RecordedNames::new();
        book.keep(4, NAME_SOURCE, 9, b"old");
        book.keep(4, NAME_EVENT_ID, 0x20, b"INFO app query");
        book.keep(5, NAME_SOURCE, 9, b"worker-9");
        assert_eq!(book.len(), 2);
        let names = Names::gather(book.records(7));
        assert_eq!(names.source(9), Some("worker-9"));
        assert_eq!(names.event(EventId(0x20)), Some("INFO app query"));
        // Kind order: the source name's run comes first, with its source.
        let first = book.records(7)[0];
        assert_eq!((first.source, first.time), (5, 7));
        let mut payloads = Vec::new();
        let mut asm = Assembler::new();
        for e in book.records(7) {
            asm.push(e, &mut |i| {
                if let Item::Payload(p) = i {
                    payloads.push(p.name_of().unwrap());
                }
            });
        }
        assert_eq!(payloads, vec![(NAME_SOURCE, 9), (NAME_EVENT_ID, 0x20)]);

        // Bytes: a name that does not fit is not kept, and the stale one goes.
        let big = vec![b'x'; MAX_PAYLOAD];
        for s in 0..(RecordedNames::MAX_BYTES / MAX_PAYLOAD) as u64 {
            book.keep(1, NAME_SOURCE, 100 + s, &big);
        }
        assert_eq!(book.not_kept(), 1, "the last one of the loop did not fit");
        book.keep(1, NAME_SOURCE, 9, &big);
        assert_eq!(book.not_kept(), 2);
        assert_eq!(Names::gather(book.records(0)).source(9), None);
        // A name longer than a run carries is kept cut, as its record is.
        let book = RecordedNames::new();
        book.keep(1, NAME_SOURCE, 1, &vec![b'y'; MAX_PAYLOAD + 10]);
        assert_eq!(book.book.lock().bytes, MAX_PAYLOAD);
        // Count bound.
        let book = RecordedNames::new();
        for s in 0..RecordedNames::MAX_NAMES as u64 + 3 {
            book.keep(1, NAME_SOURCE, s, b"n");
        }
        assert_eq!((book.len(), book.not_kept()), (RecordedNames::MAX_NAMES, 3));
    }
}
