//! Snapshots on a trigger: what a snapshot trigger saves ([`Snapshot`]),
//! the request a logging thread makes when it fires (O(1), never blocks),
//! and the task that writes the last events of a circular queue up to the
//! trigger event into a new, complete trace file (see [`crate::filters`]
//! and the trigger module's documentation for the rules).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::classes::tracer::HOOPS;
use crate::model::event::Event;
use crate::model::handle::QueueHandle;
use crate::queue::{Queue, QueueContext};
use crate::queues::drained::task::{TaskControl, Work};
use crate::queues::CircularQueue;
use crate::storage::save::{write_trace, StatusCell};

/// What a snapshot trigger saves, and how often.
///
/// ```
/// use qtrace::filters::Snapshot;
/// use qtrace::QueueHandle;
/// use std::time::Duration;
///
/// let s = Snapshot::new(QueueHandle(0), 512)
///     .min_interval(Duration::from_millis(10))
///     .max_files(Some(5));
/// assert_eq!((s.last, s.max_files), (512, Some(5)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// The circular queue to save.
    pub queue: QueueHandle,
    /// How many events (ending with the trigger event) a file holds: 1 to
    /// the queue's capacity.
    pub last: usize,
    /// The shortest time between the trigger events of two snapshots, by
    /// the events' timestamps (default 100 ms).
    pub min_interval: Duration,
    /// The most files written by this trigger, `None` for no limit
    /// (default `Some(100)`).
    pub max_files: Option<u64>,
}

impl Snapshot {
    /// The last `last` events of circular queue `queue`, at most one file
    /// per 100 ms and 100 files.
    ///
    /// ```
    /// use qtrace::filters::Snapshot;
    /// let s = Snapshot::new(qtrace::QueueHandle(0), 256);
    /// assert_eq!((s.queue, s.last), (qtrace::QueueHandle(0), 256));
    /// ```
    pub fn new(queue: QueueHandle, last: usize) -> Self {
        Snapshot {
            queue,
            last,
            min_interval: Duration::from_millis(100),
            max_files: Some(100),
        }
    }

    /// Sets [`Snapshot::min_interval`].
    pub fn min_interval(mut self, interval: Duration) -> Self {
        self.min_interval = interval;
        self
    }

    /// Sets [`Snapshot::max_files`].
    pub fn max_files(mut self, max: Option<u64>) -> Self {
        self.max_files = max;
        self
    }
}

/// The snapshot side of a trigger: shared by the logging threads (the
/// request), the task (the writing) and the owner (the counters).
pub(super) struct Snapper {
    /// The circular queue, in the tracer's queue table.
    queue: *const CircularQueue,
    /// The circular queue's context (header, clock, directory).
    ctx: QueueContext,
    last: usize,
    min_interval: u64,
    max_files: Option<u64>,
    /// The trigger time + 1 of the request waiting for the task, 0 when none.
    pub(super) pending: AtomicU64,
    /// No request is granted before this time (rate limit).
    next_allowed: AtomicU64,
    /// Set once `max_files` files are written: later triggers are
    /// suppressed without waking the task.
    full: AtomicBool,
    pub(super) written: AtomicU64,
    pub(super) suppressed: AtomicU64,
    pub(super) failed: AtomicU64,
    pub(super) status: StatusCell,
    /// `<dir>/<stem>-snap-`, and the extension with its dot.
    stem: PathBuf,
    ext: String,
}

// SAFETY: `queue` is only read as a `&CircularQueue`, which is `Sync`; the
// rest is `Send + Sync`.
unsafe impl Send for Snapper {}
// SAFETY: as above.
unsafe impl Sync for Snapper {}

impl Snapper {
    fn queue(&self) -> &CircularQueue {
        // SAFETY: the contract of `TriggerQueue::new`: the circular queue
        // is in the tracer's queue table, which outlives every use (the task
        // is stopped at shutdown, before the table is dropped).
        unsafe { &*self.queue }
    }

    /// On the logging thread: O(1), never blocks.
    #[inline]
    pub(super) fn request(&self, time: u64, control: &TaskControl) {
        if self.full.load(Ordering::Relaxed)
            || time < self.next_allowed.load(Ordering::Relaxed)
            || self
                .pending
                .compare_exchange(
                    0,
                    time.saturating_add(1),
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_err()
        {
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            return;
        }
        // Checked again now that this request holds the slot: a snapshot
        // served since the first check moved the limit (`serve` moves it
        // before it frees the slot, and the compare-and-swap above
        // synchronised with that).
        if time < self.next_allowed.load(Ordering::Acquire) {
            self.pending.store(0, Ordering::Release);
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.next_allowed
            .fetch_max(time.saturating_add(self.min_interval), Ordering::Relaxed);
        control.request_wake();
    }

    /// The path of snapshot `n` (1, 2, …).
    fn path(&self, n: u64) -> PathBuf {
        let mut s = self.stem.clone().into_os_string();
        s.push(format!("{n:04}{}", self.ext));
        PathBuf::from(s)
    }

    /// On the task: writes the pending snapshot, if any.
    pub(super) fn serve(&self) {
        let pending = self.pending.load(Ordering::Acquire);
        if pending == 0 {
            return;
        }
        let until = pending - 1;
        let written = self.written.load(Ordering::Relaxed);
        if self.max_files.is_some_and(|max| written >= max) {
            self.full.store(true, Ordering::Relaxed);
            self.suppressed.fetch_add(1, Ordering::Relaxed);
        } else {
            let queue = self.queue();
            let events = window(queue.snapshot_events(), until, self.last);
            let path = self.path(written + 1);
            let totals = queue.counters().into();
            match self.status.record(
                &path,
                write_trace(&path, &self.ctx, &events, totals, queue.compact()),
            ) {
                Ok(()) => {
                    self.written.fetch_add(1, Ordering::Relaxed);
                    if self.max_files.is_some_and(|max| written + 1 >= max) {
                        self.full.store(true, Ordering::Relaxed);
                    }
                }
                Err(_) => {
                    self.failed.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        // Free for the next request only now (a trigger meanwhile was
        // suppressed and counted, never lost), with the rate limit of this
        // request in place first.
        self.next_allowed
            .fetch_max(until.saturating_add(self.min_interval), Ordering::Release);
        self.pending.store(0, Ordering::Release);
    }
}

/// The last `last` events of `events` (a snapshot, oldest first) at or
/// before time `until`, with the hoops records among them and those just
/// before the oldest kept event (what its ring had lost before it).
pub(crate) fn window(mut events: Vec<Event>, until: u64, last: usize) -> Vec<Event> {
    let end = events.partition_point(|e| e.time <= until);
    events.truncate(end);
    let mut seen = 0;
    let mut start = events.len();
    while start > 0 && seen < last {
        start -= 1;
        if events[start].id != HOOPS {
            seen += 1;
        }
    }
    while start > 0 && events[start - 1].id == HOOPS {
        start -= 1;
    }
    events.drain(..start);
    events
}

/// The task's work: serve requests.
pub(super) struct SnapWork(pub(super) Arc<Snapper>);

impl Work for SnapWork {
    fn run_once(&mut self) {
        self.0.serve();
    }
    fn finish(&mut self) {
        self.0.serve();
    }
}

impl Snapper {
    /// The snapshot side of trigger `s`, saving `queue` (whose context is
    /// `ctx`) into files named after its trace file.
    pub(super) fn new(s: &Snapshot, queue: &CircularQueue, ctx: QueueContext) -> Self {
        let file = queue.file();
        let stem = file.file_stem().map_or_else(
            || format!("queue{}-circular", ctx.handle),
            |s| s.to_string_lossy().into_owned(),
        );
        let ext = file
            .extension()
            .map_or_else(String::new, |e| format!(".{}", e.to_string_lossy()));
        let dir = file.parent().unwrap_or_else(|| Path::new("."));
        Snapper {
            queue,
            stem: dir.join(format!("{stem}-snap-")),
            ext,
            ctx,
            last: s.last,
            min_interval: u64::try_from(s.min_interval.as_nanos()).unwrap_or(u64::MAX),
            max_files: s.max_files,
            pending: AtomicU64::new(0),
            next_allowed: AtomicU64::new(0),
            full: AtomicBool::new(s.max_files == Some(0)),
            written: AtomicU64::new(0),
            suppressed: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            status: StatusCell::default(),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::model::event::EventId;
    use crate::model::handle::QueueHandle;
    use crate::storage::save::hoops;

    fn ev(time: u64) -> Event {
        Event::new(time, EventId(0x0b), 0, [time, 0])
    }

    #[test]
    fn window_keeps_the_last_events_up_to_the_trigger() {
        let h = |t, n| hoops(t, n, QueueHandle(0));
        let events = vec![h(1, 5), ev(1), ev(2), h(3, 2), ev(3), ev(4), ev(5), ev(6)];
        assert_eq!(window(events.clone(), 5, 2), vec![ev(4), ev(5)]);
        // The hoops record just before the oldest kept event stays.
        assert_eq!(window(events.clone(), 4, 2), vec![h(3, 2), ev(3), ev(4)]);
        assert_eq!(window(events.clone(), 2, 10), vec![h(1, 5), ev(1), ev(2)]);
        assert_eq!(window(events.clone(), 0, 10), vec![]);
        assert_eq!(window(events, 99, 1), vec![ev(6)]);
    }
}
