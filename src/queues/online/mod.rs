//! The circular-online queue: a bounded queue drained to a trace file by a
//! background task while the program runs (S.Ha.R.K.'s circular queue with
//! its online task).
//!
//! - **Policy**: when the queue is full, new events are dropped until the task
//!   has emptied it (the S.Ha.R.K. policy: the ring latches shut when full and
//!   the task reopens it once empty); every drop is counted, and the task
//!   writes one hoops record (`args = [lost, queue]`) into the file right
//!   after the events that were in the queue, before any event accepted after
//!   it reopened — so a reader sees exactly where events are missing and how
//!   many. With several producers, one that was already past the check when
//!   the queue latched may still add one event before the mark: a loss is then
//!   marked at most one event per producer late, never early.
//! - **Task**: one thread per queue, run every `period` (500 ms) and woken
//!   early when the queue reaches its high-water mark (80 %, as QNX). It has
//!   its own stop flag, never blocks producers, and never logs events itself,
//!   so it cannot feed the queue it drains.
//! - **File**: the FORMAT.md trace format, `<output_dir>/queue<handle>-online.qtr`
//!   unless a file (or any writer) is given, in compact chunks (FORMAT.md
//!   1.11, encoded by the task when it writes; [`OnlineParams::with_compact`])
//!   or 32-byte records. Shutdown drains what is left, flushes and closes it.
//! - **Chunks** (off by default; [`OnlineParams::with_rotation`],
//!   [`OnlineParams::with_retention`]): the file is cut into
//!   `<stem>.000001.<ext>`, `<stem>.000002.<ext>`, …, each a complete trace
//!   (FORMAT.md 1.10); the task closes a chunk between batches and deletes
//!   the oldest beyond the retention, counting their events overwritten.
//! - **I/O errors** (disk full, a pipe closed): the task counts them in
//!   [`Queue::status`], keeps the bytes it could not write and tries again at
//!   its next period — not before, whatever wake-ups producers send, so a
//!   failing disk costs one attempt per period, not a spinning core;
//!   meanwhile the queue fills and drops (counted, then written as hoops once
//!   writing works again). The program keeps running and logging never
//!   blocks. Events that could never be written stay counted as `queued`, so
//!   `accepted = delivered + overwritten + queued` holds at the end.
//! - **Close**: shutdown ends the file with a hoops record for whatever could
//!   not be written (if anything) and the close run (FORMAT.md 1.5). A file
//!   target keeps 4 KiB allocated past its end (`fallocate` with
//!   `FALLOC_FL_KEEP_SIZE` on Linux; a write that would eat into it is not
//!   made), so a disk that stays full still takes them.
//! - **Queue counters** (off by default;
//!   [`OnlineParams::with_queue_counters`]): the task samples the queue's
//!   fill level and losses so far into the file as counter records of the
//!   class `qtrace`, as the UDP queue does (FORMAT.md 1.3.4).
//! - **A failed activation** (the file cannot be created, or is locked by
//!   another process): [`Queue::status`] counts the I/O error and holds its
//!   message, and the queue latches shut: events logged afterwards are
//!   refused and counted as dropped, never accepted into a queue that
//!   cannot write them. A later phase 2 that succeeds drains it, reopens it
//!   and writes a hoops record for those drops.
//! - **A file deleted or replaced while written** (link count 0, or the path
//!   names another inode; checked once per round) is re-created with a header
//!   and a hoops record for the events that went with the old inode, which
//!   count as `overwritten`; the status reports it
//!   ([`OnlineQueue::files_replaced`]).
//!
//! ```
//! use qtrace::classes::user;
//! use qtrace::queues::{Online, OnlineParams};
//! use qtrace::Tracer;
//!
//! let dir = std::env::temp_dir().join(format!("qtrace-doc-online-{}", std::process::id()));
//! let tracer = Tracer::with_config(qtrace::Config::default().with_output_dir(&dir));
//! let q = tracer.create_queue::<Online>(OnlineParams::default().with_capacity(1024))?;
//! tracer.assign_class(user::CLASS, q)?;
//! tracer.activate()?;
//! for i in 0..10_000 {
//!     tracer.log_event(user::USER0, [i, 0]);
//! }
//! let report = tracer.shutdown()?;
//! let c = report.queues[0].counters;
//! // Every event is either in the file or counted (and marked by hoops) as dropped.
//! assert_eq!(c.delivered + c.dropped, 10_000);
//! assert_eq!(report.queues[0].status.files, [dir.join("queue0-online.qtr")]);
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), qtrace::Error>(())
//! ```

use crate::model::event::Event;
use crate::queue::config_error::ConfigError;
use crate::queue::queue_trait::{Queue, QueueContext, QueueCounters, QueueStatus, Reservation};
use crate::queues::drained::feed::Feed;
use crate::queues::drained::lifecycle::Lifecycle;
use crate::queues::drained::samples::{with_queue_counters, QueueCounterIds};
use parking_lot::Mutex;
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

mod chunks;
mod compact;
mod drainer;
mod open;
mod params;
mod rotation;

use params::Target;
pub use params::{Online, OnlineParams};

/// What the queue and its task share.
#[derive(Debug)]
struct Shared {
    feed: Feed,
    /// Events whose records were written completely.
    delivered: AtomicU64,
    /// Of those, events written to a file that was then deleted or replaced
    /// (lost with its inode): reported as overwritten, not delivered.
    lost_with_file: AtomicU64,
    /// Of those, events in chunks that retention deleted: overwritten too.
    retired: AtomicU64,
    /// [`OnlineQueue::request_rotation`] asked the task to close the open
    /// chunk at its next round.
    rotate_requested: std::sync::atomic::AtomicBool,
    io: Mutex<IoState>,
}

#[derive(Debug, Default)]
struct IoState {
    io_errors: u64,
    last_error: Option<String>,
    /// The file was created and its header written (a report lists only
    /// files that were written).
    file_opened: bool,
    /// Times the file was found deleted or replaced and re-created.
    files_replaced: u64,
    /// With rotation: the chunks kept, oldest first, the open one last.
    chunks: Vec<PathBuf>,
}

impl Shared {
    fn counters(&self) -> QueueCounters {
        let lost = self
            .lost_with_file
            .load(Ordering::Relaxed)
            .saturating_add(self.retired.load(Ordering::Relaxed));
        let mut c = self.feed.counters(self.delivered.load(Ordering::Relaxed));
        let lost = lost.min(c.delivered);
        c.delivered -= lost;
        c.overwritten += lost;
        c
    }

    fn io_error(&self, what: &str, e: &io::Error) {
        let mut io = self.io.lock();
        io.io_errors += 1;
        io.last_error = Some(format!("{what}: {e}"));
    }
}

/// A circular-online queue (see [`Online`], its policy).
///
/// ```
/// # let _cwd = tempfile::tempdir().unwrap(); std::env::set_current_dir(_cwd.path()).unwrap(); // own directory: doc tests run in parallel
/// use qtrace::classes::user;
/// use qtrace::queues::{Online, OnlineParams, OnlineQueue};
///
/// let dir = std::env::temp_dir().join(format!("qtrace-doc-online-{}", std::process::id()));
/// let tracer = qtrace::Tracer::new();
/// let q = tracer.create_queue::<Online>(
///     OnlineParams::default().with_capacity(1024).with_file(dir.join("online.qtr")),
/// )?;
/// tracer.assign_class(user::CLASS, q)?;
/// tracer.activate()?;
/// tracer.log_event(user::USER0, [1, 0]);
/// let online: &OnlineQueue = tracer.queue(q)?.as_online().unwrap();
/// assert_eq!(online.capacity(), 1024);
/// let report = tracer.shutdown()?;
/// assert_eq!(report.queues[0].counters.accepted, 1);
/// assert!(dir.join("online.qtr").exists());
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), qtrace::Error>(())
/// ```
pub struct OnlineQueue {
    shared: Arc<Shared>,
    path: Option<PathBuf>,
    period: Duration,
    rotation: chunks::Rotation,
    /// The file's records are compact chunks (FORMAT.md 1.11).
    compact: bool,
    /// The task samples the queue's own counters (FORMAT.md 1.3.4).
    queue_counters: bool,
    lifecycle: Lifecycle<Target>,
}

impl fmt::Debug for OnlineQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OnlineQueue")
            .field("path", &self.path)
            .field("period", &self.period)
            .field("rotation", &self.rotation)
            .field("compact", &self.compact)
            .field("queue_counters", &self.queue_counters)
            .field("capacity", &self.shared.feed.ring.capacity())
            .field("counters", &self.counters())
            .finish()
    }
}

impl OnlineQueue {
    /// The number of events the queue holds.
    pub fn capacity(&self) -> usize {
        self.shared.feed.ring.capacity()
    }

    /// Times the task found its trace file deleted or replaced while
    /// writing it, and re-created it (each is also an I/O error in
    /// [`Queue::status`], and the events written to the lost file count as
    /// overwritten).
    pub fn files_replaced(&self) -> u64 {
        self.shared.io.lock().files_replaced
    }

    /// The fill level (in events) at which the task is woken early.
    pub fn high_water_mark(&self) -> u64 {
        self.shared.feed.high_water()
    }

    /// Asks the task to close the open chunk and go on in the next one at
    /// once (it wakes the task; the chunk is closed at its next round, as a
    /// size or age bound would close it). Returns `false`, and does
    /// nothing, when the queue does not rotate (no
    /// [`OnlineParams::with_rotation`]). An empty chunk is closed too.
    pub fn request_rotation(&self) -> bool {
        if !self.rotation.on() {
            return false;
        }
        self.shared.rotate_requested.store(true, Ordering::Release);
        self.shared.feed.control.request_wake();
        true
    }
}

impl OnlineQueue {
    /// The context the file is written in: with the queue counters' class
    /// in its catalog, and their ids, when the task samples them.
    fn counters_ctx(
        &self,
        ctx: &QueueContext,
    ) -> Result<(QueueContext, Option<QueueCounterIds>), ConfigError> {
        if !self.queue_counters {
            return Ok((ctx.clone(), None));
        }
        let (ctx, ids) =
            with_queue_counters(ctx, "online", "OnlineParams::with_queue_counters(false)")?;
        Ok((ctx, Some(ids)))
    }
}

impl OnlineQueue {
    /// The ring and wake-up behind `get` and `post`: what the tracer's
    /// producer cache keeps for this queue (`Tracer::record`).
    #[inline(always)]
    pub(crate) fn feed(&self) -> &Feed {
        &self.shared.feed
    }
}

impl Queue for OnlineQueue {
    #[inline]
    fn get(&self) -> Option<Reservation> {
        self.shared.feed.get()
    }

    #[inline]
    fn post(&self, reservation: Reservation, event: &Event) {
        self.shared.feed.post(reservation, event)
    }

    /// The whole run in consecutive positions, or none of it (dropped and
    /// counted, and marked in the file like any drop).
    fn post_run(&self, run: &crate::model::combine::Run<'_>) -> usize {
        self.shared.feed.post_run(run)
    }

    fn activate(&self, ctx: &QueueContext) -> Result<(), ConfigError> {
        // A class named `qtrace` refuses the counters before anything is
        // opened (a configuration error: the queue is not latched).
        let (ctx, counters) = self.counters_ctx(ctx)?;
        let ctx = &ctx;
        self.lifecycle.activate(ctx.handle, |target| {
            // If opening fails, a later phase 2 may try again (a file target
            // is kept; a writer that failed is gone).
            let retry = match &target {
                Target::Default => Some(Target::Default),
                Target::File(p) => Some(Target::File(p.clone())),
                Target::Writer(_) => None,
            };
            self.open(target, ctx, counters)
                .map_err(crate::storage::save::with_hint)
                .map_err(|e| {
                    // The status says so (the shutdown report is not clean),
                    // and the queue refuses events from now on, counting
                    // them dropped, rather than accept what it cannot write.
                    // A phase 2 that succeeds later reopens it once drained,
                    // marking the drops with a hoops record.
                    self.shared.feed.ring.latch();
                    let what = if retry.is_none() {
                        "activate (events routed here are dropped from now on, counted: nothing can be written)"
                    } else {
                        "activate (events routed here are dropped from now on, counted, until a phase 2 succeeds)"
                    };
                    self.shared.io_error(what, &io::Error::other(e.to_string()));
                    (e, retry)
                })
        })
    }

    fn terminate(&self, ctx: &QueueContext) -> Result<(), ConfigError> {
        // Never activated: what was logged since phase 1 is written now.
        self.lifecycle.terminate(self.path.clone(), |target| {
            let (ctx, counters) = self.counters_ctx(ctx)?;
            self.open(target, &ctx, counters)
        })
    }

    /// Events written to a trace file that was then deleted or replaced
    /// count as overwritten (accepted, then lost), not delivered.
    fn counters(&self) -> QueueCounters {
        self.shared.counters()
    }

    fn status(&self) -> QueueStatus {
        let io = self.shared.io.lock();
        QueueStatus {
            io_errors: io.io_errors,
            last_error: io.last_error.clone(),
            files: if self.rotation.on() {
                io.chunks.clone()
            } else {
                self.path
                    .iter()
                    .filter(|_| io.file_opened)
                    .cloned()
                    .collect()
            },
            snapshots_suppressed: 0,
            lost_to_panic: 0,
        }
    }
}
