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
//!   unless a file (or any writer) is given. Shutdown drains what is left,
//!   flushes and closes it.
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

use std::fmt;
use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::feed::Feed;
use super::reserve::{release, reserve, Reserved, RESERVE_LEN};
use crate::event::TRACER_SOURCE;

/// Bytes reserved ahead of the writes beyond [`RESERVE_LEN`], so that the
/// reservation costs one system call per MiB written.
const RESERVE_CHUNK: u64 = 1 << 20;
use super::task::{Task, Work};
use super::{AnyQueue, QueueType};
use crate::classes::tracer::HOOPS;
use crate::clock::Clock;
use crate::config_error::ConfigError;
use crate::event::Event;
use crate::handle::QueueHandle;
use crate::queue_trait::{Queue, QueueContext, QueueCounters, QueueStatus, Reservation};
use crate::wire::record::{self, RECORD_LEN};
use crate::wire::{CloseRecord, QueueTotals, TraceHeader};

/// Events encoded per `write` call (64 KiB).
const BATCH: usize = 2048;
/// Batches one round may write before it lets the task check its stop flag.
const ROUND_BATCHES: usize = 64;

/// The circular-online queue type. Parameters: [`OnlineParams`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Online;

/// Where an online queue writes.
enum Target {
    /// `<output_dir>/queue<handle>-online.qtr`.
    Default,
    /// A file path.
    File(PathBuf),
    /// Any writer (a pipe, a socket, a test double); the trace header is
    /// written to it first.
    Writer(Box<dyn Write + Send>),
}

/// Parameters of an [`Online`] queue. `Default` gives S.Ha.R.K.'s values:
/// 8192 events, a 500 ms period, and QNX's 80 % high-water mark.
pub struct OnlineParams {
    target: Target,
    /// Capacity in events (a power of two).
    pub capacity: usize,
    /// How often the task drains the queue.
    pub period: Duration,
    /// Fill level, in percent of `capacity` (1–100), at which the task is woken
    /// before its period ends.
    pub high_water_percent: u8,
}

impl Default for OnlineParams {
    fn default() -> Self {
        OnlineParams {
            target: Target::Default,
            capacity: 8192,
            period: Duration::from_millis(500),
            high_water_percent: 80,
        }
    }
}

impl fmt::Debug for OnlineParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let target = match &self.target {
            Target::Default => "default file".to_string(),
            Target::File(p) => p.display().to_string(),
            Target::Writer(_) => "custom writer".to_string(),
        };
        f.debug_struct("OnlineParams")
            .field("target", &target)
            .field("capacity", &self.capacity)
            .field("period", &self.period)
            .field("high_water_percent", &self.high_water_percent)
            .finish()
    }
}

impl OnlineParams {
    /// Writes to `path` (its directory is created) instead of the default
    /// `<output_dir>/queue<handle>-online.qtr`.
    pub fn with_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.target = Target::File(path.into());
        self
    }

    /// Writes the trace (header, then records) to `writer` instead of a file.
    pub fn with_writer(mut self, writer: impl Write + Send + 'static) -> Self {
        self.target = Target::Writer(Box::new(writer));
        self
    }

    /// Holds `capacity` events (a power of two).
    pub fn with_capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity;
        self
    }

    /// Drains every `period`.
    pub fn with_period(mut self, period: Duration) -> Self {
        self.period = period;
        self
    }

    /// Wakes the task early at `percent` % full.
    pub fn with_high_water_percent(mut self, percent: u8) -> Self {
        self.high_water_percent = percent;
        self
    }
}

impl QueueType for Online {
    type Params = OnlineParams;
    const NAME: &'static str = "online";

    fn create(&self, params: OnlineParams, ctx: &QueueContext) -> Result<AnyQueue, ConfigError> {
        if params.period.is_zero() {
            return Err(ConfigError::InvalidParameter {
                queue_type: Self::NAME,
                reason: "period is zero: give the drain task a period such as 500 ms".into(),
            });
        }
        let feed = Feed::new(Self::NAME, params.capacity, params.high_water_percent, true)?;
        let path = match &params.target {
            Target::Default => Some(ctx.output_dir.join(format!(
                "queue{}-{}.qtr",
                ctx.handle,
                Self::NAME
            ))),
            Target::File(p) => Some(p.clone()),
            Target::Writer(_) => None,
        };
        Ok(AnyQueue::OnlineQueue(OnlineQueue {
            shared: Arc::new(Shared {
                feed,
                delivered: AtomicU64::new(0),
                lost_with_file: AtomicU64::new(0),
                io: Mutex::new(IoState::default()),
            }),
            path,
            period: params.period,
            state: Mutex::new(State::Created(params.target)),
        }))
    }
}

/// What the queue and its task share.
#[derive(Debug)]
struct Shared {
    feed: Feed,
    /// Events whose records were written completely.
    delivered: AtomicU64,
    /// Of those, events written to a file that was then deleted or replaced
    /// (lost with its inode): reported as overwritten, not delivered.
    lost_with_file: AtomicU64,
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
}

impl Shared {
    fn counters(&self) -> QueueCounters {
        let lost = self.lost_with_file.load(Ordering::Relaxed);
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

enum State {
    Created(Target),
    Running(Task),
    Done,
}

/// A circular-online queue (see the [module documentation](self)).
pub struct OnlineQueue {
    shared: Arc<Shared>,
    path: Option<PathBuf>,
    period: Duration,
    state: Mutex<State>,
}

impl fmt::Debug for OnlineQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OnlineQueue")
            .field("path", &self.path)
            .field("period", &self.period)
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

    /// Opens the target and writes the header.
    fn open(&self, target: Target, ctx: &QueueContext) -> Result<Drainer, ConfigError> {
        let header = TraceHeader::for_queue(ctx).to_bytes();
        let mut file_handle = None;
        let mut remove_if_header_fails = false;
        let (mut sink, name): (Box<dyn Write + Send>, String) = match target {
            Target::Writer(w) => (w, "the online queue's writer".to_string()),
            Target::Default | Target::File(_) => {
                let path = self.path.clone().expect("file targets have a path");
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(|e| {
                        ConfigError::io("create the directory of trace file", &path, e)
                    })?;
                }
                let removable = removable_on_failure(&path);
                let file = File::create(&path)
                    .map_err(|e| ConfigError::io("create trace file", &path, e))?;
                // Room for the final hoops record and close run, so a disk
                // that fills up still takes them (see `reserve`); then a
                // second handle to reserve room ahead of the writes, cut a
                // torn last record and write the close run at shutdown. If
                // either fails, the file just created (or truncated) goes: a
                // failed phase 2 leaves no empty trace file behind.
                let handle = reserve(&file, header.len() as u64, RESERVE_LEN)
                    .map_err(|e| ("reserve room at the end of trace file", e))
                    .and_then(|_| {
                        file.try_clone()
                            .map_err(|e| ("open a second handle to trace file", e))
                    });
                match handle {
                    Ok(h) => file_handle = Some(h),
                    Err((action, e)) => {
                        drop(file);
                        if removable {
                            let _ = std::fs::remove_file(&path);
                        }
                        return Err(ConfigError::io(action, &path, e));
                    }
                }
                remove_if_header_fails = removable;
                (Box::new(file), path.display().to_string())
            }
        };
        if let Err(e) = sink.write_all(&header) {
            if let Some(path) = self.path.as_ref().filter(|_| remove_if_header_fails) {
                // Nothing of the trace is in the file yet: remove it, as above.
                drop(sink);
                let _ = std::fs::remove_file(path);
            }
            return Err(ConfigError::Io(crate::io_error::IoError {
                path: self.path.clone(),
                action: "write the header of trace file",
                source: e,
            }));
        }
        self.shared.io.lock().file_opened = true;
        let file_path = file_handle.as_ref().and(self.path.clone());
        let file_len_at_open = header.len() as u64;
        Ok(Drainer {
            shared: Arc::clone(&self.shared),
            sink,
            name,
            file: file_handle,
            file_len: header.len() as u64,
            path: file_path,
            header,
            in_file: 0,
            pending: Vec::with_capacity((BATCH + 1) * RECORD_LEN),
            written: 0,
            pending_events: 0,
            credited: 0,
            last_dropped: 0,
            pending_hoops: 0,
            last_time: 0,
            handle: ctx.handle,
            records: 0,
            lost: 0,
            clock: ctx.clock.clone(),
            failed: false,
            reserved_to: file_len_at_open + RESERVE_LEN,
        })
    }
}

/// Whether a trace file about to be created at `path` may be removed if
/// opening it fails: when nothing is there yet or a regular file is (which
/// `File::create` truncates), never a device such as `/dev/full`, a FIFO or
/// a symbolic link.
fn removable_on_failure(path: &std::path::Path) -> bool {
    std::fs::symlink_metadata(path).map_or(true, |m| m.file_type().is_file())
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
    fn post_run(&self, run: &crate::combine::Run<'_>) -> usize {
        self.shared.feed.post_run(run)
    }

    fn activate(&self, ctx: &QueueContext) -> Result<(), ConfigError> {
        let mut state = self.state.lock();
        let target = match std::mem::replace(&mut *state, State::Done) {
            State::Created(t) => t,
            other => {
                *state = other;
                return Ok(());
            }
        };
        // If opening fails, a later phase 2 may try again (a file target is
        // kept; a writer that failed is gone).
        let retry = match &target {
            Target::Default => Some(Target::Default),
            Target::File(p) => Some(Target::File(p.clone())),
            Target::Writer(_) => None,
        };
        let drainer = match self.open(target, ctx).map_err(super::save::with_hint) {
            Ok(d) => d,
            Err(e) => {
                match retry {
                    Some(t) => *state = State::Created(t),
                    // Nothing can be written from now on: say so in the
                    // status too, so the shutdown report is not clean.
                    None => self.shared.io_error(
                        "activate (events routed here will not be written)",
                        &io::Error::other(e.to_string()),
                    ),
                }
                return Err(e);
            }
        };
        let task = Task::start(
            "start the online queue's drain thread",
            format!("qtrace-online-q{}", ctx.handle),
            self.period,
            Arc::clone(&self.shared.feed.control),
            drainer,
        )?;
        *state = State::Running(task);
        Ok(())
    }

    fn terminate(&self, ctx: &QueueContext) -> Result<(), ConfigError> {
        let mut state = self.state.lock();
        match std::mem::replace(&mut *state, State::Done) {
            State::Running(mut task) => task.finish(
                "finish the online queue's drain task (it panicked) for",
                self.path.clone(),
                "drain task panicked",
            )?,
            State::Created(target) => {
                // Never activated: write what was logged since phase 1 now.
                self.open(target, ctx)?.finish();
            }
            State::Done => {}
        }
        Ok(())
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
            files: self
                .path
                .iter()
                .filter(|_| io.file_opened)
                .cloned()
                .collect(),
            snapshots_suppressed: 0,
        }
    }
}

/// The task's side: drains the ring into the sink.
struct Drainer {
    shared: Arc<Shared>,
    sink: Box<dyn Write + Send>,
    name: String,
    /// Encoded records not yet (completely) written.
    pending: Vec<u8>,
    /// Bytes of `pending` already written.
    written: usize,
    /// Events (not hoops) in `pending`; they come first, a hoops record
    /// (if any) last.
    pending_events: u64,
    /// Events of `pending` already counted delivered (completely written).
    credited: u64,
    /// The file, when the target is one (to cut a torn record at the end).
    file: Option<File>,
    /// Bytes written to the target so far.
    file_len: u64,
    /// The ring's drop total already written as hoops.
    last_dropped: u64,
    /// Lost events counted by hoops records still (partly) unwritten in
    /// `pending`.
    pending_hoops: u64,
    /// Time of the last event taken from the ring.
    last_time: u64,
    handle: QueueHandle,
    /// Records (events and hoops) completely written, for the close run.
    records: u64,
    /// Events lost as stated by the hoops records completely written.
    lost: u64,
    /// The tracer's clock (the close run's time).
    clock: Clock,
    /// The last round failed: the next waits for the period.
    failed: bool,
    /// The file is known allocated up to here (`u64::MAX`: reservation
    /// unsupported, never checked).
    reserved_to: u64,
    /// The file's path, when the target is a file (to detect its deletion
    /// or replacement).
    path: Option<PathBuf>,
    /// The encoded header (to re-create a deleted file).
    header: Vec<u8>,
    /// Events delivered into the current file.
    in_file: u64,
}

enum Round {
    /// The queue is empty and everything is written.
    Empty,
    /// Stopped early: budget used up, or a producer is still writing the
    /// oldest record.
    Busy,
    /// A write failed; the bytes are kept for the next round.
    Failed,
}

impl Drainer {
    fn push_record(&mut self, event: &Event) {
        let mut buf = [0u8; RECORD_LEN];
        record::emit(event, &mut buf);
        self.pending.extend_from_slice(&buf);
    }

    /// Counts the events of `pending` whose records are completely written.
    fn credit(&mut self) {
        let done = ((self.written / RECORD_LEN) as u64).min(self.pending_events);
        if done > self.credited {
            self.shared
                .delivered
                .fetch_add(done - self.credited, Ordering::Relaxed);
            self.in_file += done - self.credited;
            self.credited = done;
        }
    }

    /// Writes `pending`; counts each event delivered once its record is
    /// completely written.
    fn write_pending(&mut self) -> bool {
        while self.written < self.pending.len() {
            if !self.reserve_ahead((self.pending.len() - self.written) as u64) {
                return false;
            }
            match self.sink.write(&self.pending[self.written..]) {
                Ok(0) => {
                    let e = io::Error::new(io::ErrorKind::WriteZero, "the writer took no bytes");
                    self.shared.io_error(&format!("write {}", self.name), &e);
                    return false;
                }
                Ok(n) => {
                    self.written += n;
                    self.file_len += n as u64;
                    self.credit();
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.shared.io_error(&format!("write {}", self.name), &e);
                    return false;
                }
            }
        }
        self.credit();
        self.records += (self.pending.len() / RECORD_LEN) as u64;
        self.lost = self.lost.saturating_add(self.pending_hoops);
        self.pending.clear();
        self.written = 0;
        self.pending_events = 0;
        self.credited = 0;
        self.pending_hoops = 0;
        true
    }

    /// Before writing `len` more bytes to a file: makes sure the room for
    /// them and [`RESERVE_LEN`] more is allocated. `false` (counted as an I/O
    /// error) when the disk has no room: the write is not made, so the room
    /// reserved for the close run stays free.
    fn reserve_ahead(&mut self, len: u64) -> bool {
        let Some(file) = &self.file else {
            return true;
        };
        let need = self.file_len + len + RESERVE_LEN;
        if need <= self.reserved_to {
            return true;
        }
        // Reserve a chunk ahead (one call per MiB written, not one per
        // write); on a nearly full disk, just what this write needs.
        let result = match reserve(file, self.file_len, len + RESERVE_LEN + RESERVE_CHUNK) {
            Ok(r) => Ok((r, need + RESERVE_CHUNK)),
            Err(_) => reserve(file, self.file_len, len + RESERVE_LEN).map(|r| (r, need)),
        };
        match result {
            Ok((Reserved::Yes, to)) => {
                self.reserved_to = to;
                true
            }
            Ok((Reserved::Unsupported, _)) => {
                // Never asked again: every later check passes at once.
                self.reserved_to = u64::MAX;
                true
            }
            Err(e) => {
                self.shared.io_error(
                    &format!(
                        "write {} (no room for the next records and the {RESERVE_LEN} bytes kept for the close record)",
                        self.name
                    ),
                    &e,
                );
                false
            }
        }
    }
    /// Whether the file being written was deleted (no link left) or
    /// replaced (its path names another file, or nothing).
    fn file_replaced(&self) -> bool {
        use std::os::unix::fs::MetadataExt;
        let (Some(f), Some(p)) = (&self.file, &self.path) else {
            return false;
        };
        let Ok(meta) = f.metadata() else {
            return false;
        };
        if meta.nlink() == 0 {
            return true;
        }
        match std::fs::metadata(p) {
            Ok(m) => m.ino() != meta.ino() || m.dev() != meta.dev(),
            Err(_) => true,
        }
    }

    /// The file was deleted or replaced: what was written to it is lost with
    /// its inode. Re-creates it with its header and, in the same write, a
    /// hoops record for those events and the losses the old file stated;
    /// counts the events as overwritten and says so in the status. Called
    /// between batches (nothing pending). If the file cannot be re-created,
    /// nothing is counted yet: the error is, and the next round tries again.
    fn recreate(&mut self) {
        let Some(path) = self.path.clone() else {
            return;
        };
        let lost_events = self.in_file;
        let lost = lost_events.saturating_add(self.lost);
        // The hoops record goes with the header, not through `pending`: a
        // batch written in part must hold events only (see `credit`).
        let mut head = self.header.clone();
        if lost > 0 {
            let hoops = Event::new(
                self.last_time,
                HOOPS,
                TRACER_SOURCE,
                [lost, self.handle.0 as u64],
            );
            let mut rec = [0u8; RECORD_LEN];
            record::emit(&hoops, &mut rec);
            head.extend_from_slice(&rec);
        }
        let opened = (|| -> io::Result<(File, File)> {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)?;
            }
            let removable = removable_on_failure(&path);
            let mut f = File::create(&path)?;
            let ready = reserve(&f, head.len() as u64, RESERVE_LEN)
                .and_then(|_| f.write_all(&head))
                .and_then(|()| f.try_clone());
            match ready {
                Ok(handle) => Ok((handle, f)),
                Err(e) => {
                    // No room (a full disk): remove the file just created,
                    // as at phase 2, rather than leave it empty or torn.
                    drop(f);
                    if removable {
                        let _ = std::fs::remove_file(&path);
                    }
                    Err(e)
                }
            }
        })();
        let f = match opened {
            Ok((handle, f)) => {
                self.file = Some(handle);
                f
            }
            Err(e) => {
                self.shared.io_error(
                    &format!(
                        "re-create {} (deleted or replaced while written)",
                        self.name
                    ),
                    &e,
                );
                return;
            }
        };
        self.sink = Box::new(f);
        self.file_len = head.len() as u64;
        self.reserved_to = self.file_len + RESERVE_LEN;
        self.shared
            .lost_with_file
            .fetch_add(lost_events, Ordering::Relaxed);
        self.in_file = 0;
        self.records = u64::from(lost > 0);
        self.lost = lost;
        let mut io = self.shared.io.lock();
        io.io_errors += 1;
        io.files_replaced += 1;
        io.last_error = Some(format!(
            "{} was deleted or replaced while being written: the {lost_events} events written to it are lost (counted as overwritten); re-created it, starting with a hoops record of {lost} events",
            self.name
        ));
    }

    /// Drains and writes, at most `batches` batches.
    fn round(&mut self, mut batches: usize) -> Round {
        if self.pending.is_empty() && self.file_replaced() {
            self.recreate();
        }
        if !self.write_pending() {
            return Round::Failed;
        }
        let shared = Arc::clone(&self.shared);
        let ring = &shared.feed.ring;
        loop {
            let mut left = ring.len();
            while left > 0 {
                let take = left.min(BATCH);
                let mut last_time = self.last_time;
                let mut buf = std::mem::take(&mut self.pending);
                let n = ring.drain(take, |e| {
                    let mut rec = [0u8; RECORD_LEN];
                    record::emit(e, &mut rec);
                    buf.extend_from_slice(&rec);
                    last_time = e.time;
                });
                self.pending = buf;
                self.last_time = last_time;
                self.pending_events += n as u64;
                left -= n;
                if n < take {
                    break;
                }
                if left > 0 && !self.write_pending() {
                    return Round::Failed;
                }
            }
            // The ring latches when full (S.Ha.R.K.'s policy: drop until the
            // task has emptied it). Emptied now: every drop it counted came
            // after every record written so far and before any event accepted
            // after `reopen`, so the hoops record goes exactly here.
            if left == 0 && ring.is_empty() {
                if let Some(dropped) = ring.reopen() {
                    if dropped > self.last_dropped {
                        let hoops = Event::new(
                            self.last_time,
                            HOOPS,
                            TRACER_SOURCE,
                            [dropped - self.last_dropped, self.handle.0 as u64],
                        );
                        self.push_record(&hoops);
                        self.pending_hoops += dropped - self.last_dropped;
                        self.last_dropped = dropped;
                    }
                }
            }
            if !self.write_pending() {
                return Round::Failed;
            }
            if left > 0 {
                return Round::Busy;
            }
            if ring.is_empty() && ring.dropped() == self.last_dropped {
                return Round::Empty;
            }
            batches = batches.saturating_sub(1);
            if batches == 0 {
                return Round::Busy;
            }
        }
    }

    /// Ends the file: a hoops record for the `unwritten` events and
    /// `unmarked` drops not yet in it (if any), then the close run with the
    /// queue's final counters. A file is written at its known end, inside
    /// the room reserved when it was opened; another writer gets the
    /// records appended. Returns whether they were written (if not, the file
    /// reads as cut short, which is the truth).
    fn close(&mut self, unwritten: u64, unmarked: u64) -> bool {
        if self.file.is_none() && self.written % RECORD_LEN != 0 {
            // A writer that took part of a record: what follows would be
            // misaligned. Left without its close run, the trace reads as
            // cut short (with a torn last record), which is the truth.
            return false;
        }
        let mut tail: Vec<Event> = Vec::with_capacity(4);
        let lost_now = unwritten.saturating_add(unmarked);
        if lost_now > 0 {
            tail.push(Event::new(
                self.last_time,
                HOOPS,
                TRACER_SOURCE,
                [lost_now, self.handle.0 as u64],
            ));
        }
        let totals = QueueTotals::from(self.shared.counters());
        let close = CloseRecord::new(
            self.clock.now().max(self.last_time),
            totals,
            self.records + tail.len() as u64,
            self.lost.saturating_add(lost_now),
        );
        tail.extend(close.to_records());
        let mut bytes = vec![0u8; tail.len() * RECORD_LEN];
        for (e, chunk) in tail.iter().zip(bytes.chunks_exact_mut(RECORD_LEN)) {
            let chunk: &mut [u8; RECORD_LEN] = chunk.try_into().expect("32-byte chunks");
            record::emit(e, chunk);
        }
        let result = match &self.file {
            Some(f) => {
                use std::os::unix::fs::FileExt;
                let end = self.file_len + bytes.len() as u64;
                f.write_all_at(&bytes, self.file_len).map(|()| {
                    // Give back the room reserved past the end.
                    if self.reserved_to != u64::MAX {
                        release(f, end);
                    }
                })
            }
            None => self.sink.write_all(&bytes).and_then(|()| self.sink.flush()),
        };
        match result {
            Ok(()) => {
                self.file_len += bytes.len() as u64;
                true
            }
            Err(e) => {
                self.shared
                    .io_error(&format!("write the close record of {}", self.name), &e);
                false
            }
        }
    }

    /// Drops not yet marked by a completely written hoops record.
    fn dropped_unmarked(&self) -> u64 {
        self.shared.feed.ring.dropped() - self.last_dropped + self.pending_hoops
    }

    fn flush(&mut self) {
        if let Err(e) = self.sink.flush() {
            self.shared.io_error(&format!("flush {}", self.name), &e);
        }
    }
}

impl Work for Drainer {
    fn run_once(&mut self) {
        self.failed = matches!(self.round(ROUND_BATCHES), Round::Failed);
        if !self.failed {
            self.flush();
            self.shared.feed.rearm();
        }
        // After a failure the wake-up stays disarmed: the queue fills and
        // drops (counted) until the next period's retry.
    }

    fn backing_off(&self) -> bool {
        self.failed
    }

    fn finish(&mut self) {
        // Drain what is left. A producer preempted between claim and commit
        // holds the drain up: give it a moment. A failing writer gets a few
        // more tries, then what it could not take stays counted as queued.
        let mut failures = 0;
        let mut quiet = 0;
        for _ in 0..1000 {
            match self.round(usize::MAX) {
                Round::Empty => {
                    // A producer that read its route before shutdown masked
                    // it may still be about to claim a slot (preempted in
                    // between): the drain ends only once the queue has stayed
                    // empty for 2 ms.
                    quiet += 1;
                    if quiet >= 2 {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
                Round::Busy => {
                    quiet = 0;
                    std::thread::sleep(Duration::from_millis(1));
                }
                Round::Failed => {
                    failures += 1;
                    if failures >= 3 {
                        break;
                    }
                }
            }
        }
        self.flush();
        let unwritten = self.pending_events - self.credited + self.shared.feed.ring.len() as u64;
        // Writing stopped in the middle of a record: cut the file back to the
        // last whole record, so a reader sees a clean end (a writer that is
        // not a file keeps the partial record; readers report it).
        let torn = (self.written % RECORD_LEN) as u64;
        if torn > 0 {
            if let Some(f) = &self.file {
                if f.set_len(self.file_len - torn).is_ok() {
                    self.file_len -= torn;
                    // Truncating frees the blocks reserved past the end:
                    // reserve them again (best effort) for the close run.
                    self.reserved_to = self.file_len;
                    if reserve(f, self.file_len, RESERVE_LEN).is_ok() {
                        self.reserved_to = self.file_len + RESERVE_LEN;
                    }
                }
            }
        }
        // The whole records of a partly written batch are in the file.
        self.records += (self.written / RECORD_LEN) as u64;
        // Bytes still pending with no event in them: a hoops record that
        // could not be written. Say so: a loss nobody can see is not allowed.
        let unwritten_hoops = self.dropped_unmarked();
        let closed = self.close(unwritten, unwritten_hoops);
        if unwritten > 0 || unwritten_hoops > 0 {
            let mut io = self.shared.io.lock();
            let why = io.last_error.clone().unwrap_or_default();
            let marked = if closed {
                format!(
                    "; the file ends with a hoops record of {} events and its close record",
                    unwritten + unwritten_hoops
                )
            } else {
                String::new()
            };
            let cause = if why.is_empty() {
                "no write failed: they were logged during shutdown, after the last drain"
                    .to_string()
            } else {
                format!("last error: {why}")
            };
            io.last_error = Some(format!(
                "{unwritten} events and the hoops record of {unwritten_hoops} lost events could not be written to {} at shutdown{marked}; {cause}",
                self.name
            ));
        }
    }
}
