//! The online queue's task: drains the ring into the trace file in batches,
//! reserves disk space ahead of its writes, re-creates a file deleted or
//! replaced under it, cuts the file into chunks when it rotates (closing each
//! as a complete trace, deleting the oldest beyond its retention), and closes
//! the file with the final hoops and close run.

use super::chunks::{chunk_path, first_free, Rotation};
use super::params::Target;
use super::{OnlineQueue, Shared};
use crate::classes::tracer::HOOPS;
use crate::model::clock::Clock;
use crate::model::combine::{RecordedNames, BEGIN, COMBINE, CONTROL, END};
use crate::model::event::Event;
use crate::model::event::TRACER_SOURCE;
use crate::model::handle::QueueHandle;
use crate::queue::config_error::ConfigError;
use crate::queue::queue_trait::QueueContext;
use crate::queues::drained::task::Work;
use crate::storage::reserve::{release, reserve, Reserved, RESERVE_LEN};
use crate::wire::record::{self, RECORD_LEN};
use crate::wire::{CloseRecord, QueueTotals, TraceHeader};
use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Bytes reserved ahead of the writes beyond [`RESERVE_LEN`], so that the
/// reservation costs one system call per MiB written.
const RESERVE_CHUNK: u64 = 1 << 20;

/// Events encoded per `write` call (64 KiB).
const BATCH: usize = 2048;
/// Batches one round may write before it lets the task check its stop flag.
const ROUND_BATCHES: usize = 64;

/// The task's side: drains the ring into the sink.
pub(super) struct Drainer {
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
    /// Chunk bounds and retention (all off: one growing file).
    rotation: Rotation,
    /// The queue's own path, which chunks are named after.
    base: Option<PathBuf>,
    /// The open chunk's number (with rotation).
    chunk: u64,
    /// Records of the open chunk's names prologue.
    prologue: u64,
    /// When the open chunk's first record after its prologue was written.
    first_record_at: Option<Instant>,
    /// The closed chunks kept, oldest first.
    closed: VecDeque<ClosedChunk>,
    /// The tracer's names, for each chunk's names prologue.
    names: Arc<RecordedNames>,
    /// Opening the next chunk failed this round: no retry until the next.
    rotate_blocked: bool,
    /// Records of a combine run held back until its end is drained (see
    /// `hold_open_run`): drained from the ring, not yet in `pending`.
    carry: Vec<u8>,
}

/// A closed chunk still on disk.
struct ClosedChunk {
    path: PathBuf,
    bytes: u64,
    events: u64,
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
        if self.first_record_at.is_none() && self.records > self.prologue {
            self.first_record_at = Some(Instant::now());
        }
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
        let (mut head, prologue) = if self.rotation.on() {
            self.chunk_head()
        } else {
            (self.header.clone(), 0)
        };
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
        self.records = prologue + u64::from(lost > 0);
        self.prologue = prologue;
        self.lost = lost;
        let mut io = self.shared.io.lock();
        io.io_errors += 1;
        io.files_replaced += 1;
        io.last_error = Some(format!(
            "{} was deleted or replaced while being written: the {lost_events} events written to it are lost (counted as overwritten); re-created it, starting with a hoops record of {lost} events",
            self.name
        ));
    }

    /// Records that still fit in the open chunk, keeping room for a hoops
    /// record and the close run (`usize::MAX` without a size bound).
    fn room(&self) -> usize {
        let Some(max) = self.rotation.max_bytes.filter(|_| self.file.is_some()) else {
            return usize::MAX;
        };
        let slots = max.saturating_sub(self.file_len) / RECORD_LEN as u64;
        usize::try_from(slots.saturating_sub(4)).unwrap_or(usize::MAX)
    }

    /// Whether the open chunk's first record is older than the age bound
    /// (an empty chunk is never closed for its age).
    fn age_due(&self) -> bool {
        self.file.is_some()
            && !self.rotate_blocked
            && matches!(
                (self.first_record_at, self.rotation.max_age),
                (Some(at), Some(age)) if at.elapsed() >= age
            )
    }

    /// The header and the names prologue (stamped with the time of the
    /// last record drained, so it precedes what follows) of a chunk after
    /// the first, and the prologue's record count.
    fn chunk_head(&self) -> (Vec<u8>, u64) {
        let mut head = self.header.clone();
        let names = self.names.records(self.last_time);
        for e in &names {
            let mut rec = [0u8; RECORD_LEN];
            record::emit(e, &mut rec);
            head.extend_from_slice(&rec);
        }
        (head, names.len() as u64)
    }

    /// Closes the open chunk and continues in the next (called between
    /// batches: nothing pending). The next chunk is made whole first (header
    /// and names prologue, written under a hidden name and then linked to
    /// its own), then the open one gets its close run and is synced: a
    /// reader that sees the close run finds the next chunk there. Then
    /// retention deletes the oldest closed chunks. If the next chunk cannot
    /// be made, the error is counted and the open chunk goes on past its
    /// bound until the next round tries again.
    fn rotate(&mut self) {
        if self.rotate_blocked || !self.rotation.on() {
            return;
        }
        let Some(base) = self.base.clone().filter(|_| self.file.is_some()) else {
            return;
        };
        self.rotate_blocked = true;
        let next = self.chunk + 1;
        let path = chunk_path(&base, next);
        let (head, prologue) = self.chunk_head();
        let (handle, file) = match create_chunk(&path, &head) {
            Ok(pair) => pair,
            Err(e) => {
                let skip = if e.kind() == io::ErrorKind::AlreadyExists {
                    // Not ours: never written over; the next try takes
                    // the number after it.
                    self.chunk = next;
                    " (a file of that name exists: it is left alone and the number skipped)"
                } else {
                    ""
                };
                self.shared.io_error(
                    &format!(
                        "open the next chunk {}{skip}; {} goes on past its bound until the next round",
                        path.display(),
                        self.name
                    ),
                    &e,
                );
                return;
            }
        };
        self.close(0, 0);
        if let Some(f) = &self.file {
            if let Err(e) = f.sync_data() {
                self.shared
                    .io_error(&format!("sync the closed chunk {}", self.name), &e);
            }
        }
        if let Some(old) = self.path.replace(path.clone()) {
            self.closed.push_back(ClosedChunk {
                path: old,
                bytes: self.file_len,
                events: self.in_file,
            });
        }
        self.file = Some(handle);
        self.sink = Box::new(file);
        self.name = path.display().to_string();
        self.file_len = head.len() as u64;
        self.reserved_to = self.file_len + RESERVE_LEN;
        self.records = prologue;
        self.prologue = prologue;
        self.lost = 0;
        self.in_file = 0;
        self.chunk = next;
        self.first_record_at = None;
        self.rotate_blocked = false;
        self.retain();
    }

    /// Deletes the oldest closed chunks, whole, until the retention holds;
    /// their events count as overwritten. Then publishes the chunks kept.
    fn retain(&mut self) {
        let (keep_chunks, keep_bytes) = (self.rotation.keep_chunks, self.rotation.keep_bytes);
        while let Some(oldest) = self.closed.front() {
            let bytes: u64 = self.closed.iter().map(|c| c.bytes).sum();
            let over = keep_chunks.is_some_and(|k| self.closed.len() + 1 > k)
                || keep_bytes.is_some_and(|b| bytes > b);
            if !over {
                break;
            }
            match std::fs::remove_file(&oldest.path) {
                Ok(()) => {}
                // Gone already: its events are gone too.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    let what = format!("delete the chunk {} (retention)", oldest.path.display());
                    self.shared.io_error(&what, &e);
                    break;
                }
            }
            self.shared
                .retired
                .fetch_add(oldest.events, Ordering::Relaxed);
            self.closed.pop_front();
        }
        let mut kept: Vec<PathBuf> = self.closed.iter().map(|c| c.path.clone()).collect();
        kept.extend(self.path.clone());
        self.shared.io.lock().chunks = kept;
    }

    /// With rotation: holds back a combine run that `pending` ends inside
    /// (its end not drained yet, or the batch cut it) until its end is
    /// drained, so that a chunk boundary never splits a run — unless the run
    /// starts an empty chunk (then it is longer than a chunk, or its
    /// producer is slow: it goes on as it comes).
    fn hold_open_run(&mut self) {
        let flags = |i: usize| {
            let at = i * RECORD_LEN + 10;
            u16::from_be_bytes([self.pending[at], self.pending[at + 1]])
        };
        let in_run = |f: u16| f & (COMBINE | CONTROL) == COMBINE;
        let recs = self.pending.len() / RECORD_LEN;
        if !self.rotation.on() || recs == 0 {
            return;
        }
        let last = flags(recs - 1);
        if !in_run(last) || last & END != 0 {
            return;
        }
        // The run's records are consecutive (queues claim a run whole).
        let mut b = recs - 1;
        while flags(b) & BEGIN == 0 {
            if b == 0 || !in_run(flags(b - 1)) {
                return; // its begin record is not here: nothing to keep whole
            }
            b -= 1;
        }
        if b == 0 && self.records == self.prologue {
            return;
        }
        self.carry
            .extend_from_slice(&self.pending[b * RECORD_LEN..]);
        self.pending.truncate(b * RECORD_LEN);
        self.pending_events -= (recs - b) as u64;
    }

    /// Drains and writes, at most `batches` batches.
    fn round(&mut self, mut batches: usize) -> Round {
        // A rotation that failed is tried again once a round.
        self.rotate_blocked = false;
        if self.pending.is_empty() && self.file_replaced() {
            self.recreate();
        }
        if !self.write_pending() {
            return Round::Failed;
        }
        if self.age_due() {
            self.rotate();
        }
        let shared = Arc::clone(&self.shared);
        let ring = &shared.feed.ring;
        loop {
            let mut left = ring.len();
            while left > 0 {
                // Nothing is pending here (a run held back aside): the
                // chunk may be closed.
                let carried = self.carry.len() / RECORD_LEN;
                if self.room() <= carried && self.records > self.prologue {
                    self.rotate();
                }
                let take = if self.rotate_blocked {
                    left.min(BATCH)
                } else {
                    left.min(BATCH)
                        .min(self.room().saturating_sub(carried).max(1))
                };
                let mut last_time = self.last_time;
                let mut buf = std::mem::take(&mut self.pending);
                buf.extend_from_slice(&self.carry);
                self.carry.clear();
                self.pending_events += carried as u64;
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
                self.hold_open_run();
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
            if left == 0 && ring.is_empty() && self.carry.is_empty() {
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
            if left > 0 || !self.carry.is_empty() {
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
        if !self.carry.is_empty() {
            // A run whose end never came: written as it is (readers show
            // it partial), after what was pending.
            // No hoops record is pending then (one is added only when
            // nothing is held back), so events stay first.
            debug_assert_eq!(self.pending_hoops, 0);
            let carry = std::mem::take(&mut self.carry);
            self.pending_events += (carry.len() / RECORD_LEN) as u64;
            self.pending.extend_from_slice(&carry);
            let _ = self.write_pending();
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

impl OnlineQueue {
    /// Opens the target and writes the header.
    pub(super) fn open(&self, target: Target, ctx: &QueueContext) -> Result<Drainer, ConfigError> {
        let header = TraceHeader::for_queue(ctx).to_bytes();
        let mut file_handle = None;
        let mut remove_if_header_fails = false;
        let mut chunk = 0;
        let mut chunk_file: Option<PathBuf> = None;
        let (mut sink, name): (Box<dyn Write + Send>, String) = match target {
            Target::Writer(w) => (w, "the online queue's writer".to_string()),
            Target::Default | Target::File(_) => {
                let base = self.path.clone().expect("file targets have a path");
                let path = if self.rotation.on() {
                    chunk = first_free(&base);
                    chunk_path(&base, chunk)
                } else {
                    base
                };
                chunk_file = Some(path.clone());
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(|e| {
                        ConfigError::io("create the directory of trace file", &path, e)
                    })?;
                }
                let removable = removable_on_failure(&path);
                // Locked while written: another process tracing into the
                // same directory is refused, never overwrites it.
                let file = crate::storage::save::create_locked(&path)?;
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
            if let Some(path) = chunk_file.as_ref().filter(|_| remove_if_header_fails) {
                // Nothing of the trace is in the file yet: remove it, as above.
                drop(sink);
                let _ = std::fs::remove_file(path);
            }
            return Err(ConfigError::Io(crate::model::io_error::IoError {
                path: chunk_file.clone(),
                action: "write the header of trace file",
                source: e,
            }));
        }
        {
            let mut io = self.shared.io.lock();
            io.file_opened = true;
            io.chunks = chunk_file.iter().filter(|_| chunk > 0).cloned().collect();
        }
        let file_path = file_handle.as_ref().and(chunk_file);
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
            rotation: self.rotation,
            base: self.path.clone(),
            chunk,
            prologue: 0,
            first_record_at: None,
            closed: VecDeque::new(),
            names: Arc::clone(&ctx.names),
            rotate_blocked: false,
            carry: Vec::new(),
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

/// Creates the chunk `path` whole: `head` (header and names prologue) is
/// written to a hidden file beside it (`.<name>.tmp`, room for the close run
/// reserved), which is then linked to `path` — never over an existing file
/// (`AlreadyExists`) — so a reader never sees a chunk without its whole
/// header. Returns two handles to it (one for positioned writes).
fn create_chunk(path: &Path, head: &[u8]) -> io::Result<(File, File)> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let made = (|| -> io::Result<(File, File)> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        reserve(&f, head.len() as u64, RESERVE_LEN)?;
        f.write_all(head)?;
        let handle = f.try_clone()?;
        match std::fs::hard_link(&tmp, path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Err(e),
            // A file system without hard links: a rename, if the name is free.
            Err(_) if !path.exists() => std::fs::rename(&tmp, path)?,
            Err(e) => return Err(e),
        }
        Ok((handle, f))
    })();
    let _ = std::fs::remove_file(&tmp);
    made
}
