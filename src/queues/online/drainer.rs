//! The online queue's task: drains the ring into the trace file in batches,
//! reserves disk space ahead of its writes, re-creates a file deleted or
//! replaced under it, and closes the file with the final hoops and close run.
//! Cutting the file into chunks and deleting the oldest is `rotation.rs`;
//! opening the target at phase 2 is `open.rs`.

use super::chunks::{ClosedChunk, Rotation};
use super::compact::CompactOut;
use super::Shared;
use crate::classes::tracer::HOOPS;
use crate::model::clock::Clock;
use crate::model::combine::RecordedNames;
use crate::model::event::Event;
use crate::model::event::TRACER_SOURCE;
use crate::model::handle::QueueHandle;
use crate::queues::drained::samples::{QueueCounterIds, Sample, SAMPLE_RECORDS};
use crate::queues::drained::task::Work;
use crate::storage::reserve::{release, reserve, Reserved, RESERVE_LEN};
use crate::wire::record::{self, RECORD_LEN};
use crate::wire::{CloseRecord, QueueTotals};
use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Bytes reserved ahead of the writes beyond [`RESERVE_LEN`], so that the
/// reservation costs one system call per MiB written.
const RESERVE_CHUNK: u64 = 1 << 20;

/// Events encoded per `write` call in a 32-byte file (64 KiB).
pub(super) const BATCH: usize = 2048;
/// Events encoded per `write` call in a compact file: four chunks of 2,048
/// (about 32 KiB at 4 bytes an event), so a write carries half a 32-byte
/// file's bytes, not an eighth: fewer system calls an event, measured in
/// `benches/streams.rs` (`online_drain`).
pub(super) const COMPACT_BATCH: usize = 4 * crate::wire::CHUNK_RECORDS;
/// Batches one round may write before it lets the task check its stop flag.
const ROUND_BATCHES: usize = 64;

/// The task's side: drains the ring into the sink.
pub(super) struct Drainer {
    pub(super) shared: Arc<Shared>,
    pub(super) sink: Box<dyn Write + Send>,
    pub(super) name: String,
    /// Records drained and not yet (completely) written, as taken from
    /// the ring: encoded only when written, straight into the file's form.
    pub(super) pending: Vec<Event>,
    /// A 32-byte file's encoding of `pending` (a compact file's is in
    /// `compact`).
    pub(super) plain: Vec<u8>,
    /// Bytes of the encoded `pending` already written.
    pub(super) written: usize,
    /// Events (not hoops) in `pending`; they come first, a hoops record
    /// (if any) last.
    pub(super) pending_events: u64,
    /// Events of `pending` already counted delivered (completely written).
    pub(super) credited: u64,
    /// The file, when the target is one (to cut a torn record at the end).
    pub(super) file: Option<File>,
    /// Bytes written to the target so far.
    pub(super) file_len: u64,
    /// The ring's drop total already written as hoops.
    pub(super) last_dropped: u64,
    /// Lost events counted by hoops records still (partly) unwritten in
    /// `pending`.
    pub(super) pending_hoops: u64,
    /// Time of the last event taken from the ring.
    pub(super) last_time: u64,
    pub(super) handle: QueueHandle,
    /// Records (events and hoops) completely written, for the close run.
    pub(super) records: u64,
    /// Events lost as stated by the hoops records completely written.
    pub(super) lost: u64,
    /// The tracer's clock (the close run's time).
    pub(super) clock: Clock,
    /// The last round failed: the next waits for the period.
    pub(super) failed: bool,
    /// The file is known allocated up to here (`u64::MAX`: reservation
    /// unsupported, never checked).
    pub(super) reserved_to: u64,
    /// The file's path, when the target is a file (to detect its deletion
    /// or replacement).
    pub(super) path: Option<PathBuf>,
    /// The encoded header (to re-create a deleted file).
    pub(super) header: Vec<u8>,
    /// Events delivered into the current file.
    pub(super) in_file: u64,
    /// Chunk bounds and retention (all off: one growing file).
    pub(super) rotation: Rotation,
    /// The queue's own path, which chunks are named after.
    pub(super) base: Option<PathBuf>,
    /// The open chunk's number (with rotation).
    pub(super) chunk: u64,
    /// Records of the open chunk's names prologue.
    pub(super) prologue: u64,
    /// When the open chunk's first record after its prologue was written.
    pub(super) first_record_at: Option<Instant>,
    /// The closed chunks kept, oldest first.
    pub(super) closed: VecDeque<ClosedChunk>,
    /// The tracer's names, for each chunk's names prologue.
    pub(super) names: Arc<RecordedNames>,
    /// Opening the next chunk failed this round: no retry until the next.
    pub(super) rotate_blocked: bool,
    /// Records of a combine run held back until its end is drained (see
    /// `hold_open_run`): drained from the ring, not yet in `pending`.
    pub(super) carry: Vec<Event>,
    /// The file is compact (FORMAT.md 1.11): `pending` is encoded into
    /// chunks when written (`plain` is not used), and `written` counts
    /// bytes of those chunks.
    pub(super) compact: Option<Box<CompactOut>>,
    /// The queue's own counters, when sampled (FORMAT.md 1.3.4).
    pub(super) counters: Option<QueueCounterIds>,
    /// The sample taken and not yet in `pending`.
    pub(super) sample: Option<Sample>,
    /// Sample records in `pending` (after its events: not the queue's).
    pub(super) pending_samples: u64,
    /// Sample records completely written to the open file (or chunk): a
    /// chunk holding nothing else is not closed for its age.
    pub(super) samples: u64,
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
        self.pending.push(*event);
    }

    /// Puts the sample into `pending` once it is due — every event queued
    /// when it was taken drained — and no combine run is held back (a
    /// sample never splits a run). Called only where `pending` is empty or
    /// ends with a batch's events and its hoops record, and followed by a
    /// write, so `pending` keeps its events first (see `credit`).
    fn place_sample(&mut self) {
        if !self.carry.is_empty() || !self.sample.as_ref().is_some_and(Sample::due) {
            return;
        }
        let Some(sample) = self.sample.take() else {
            return;
        };
        for r in sample.records() {
            self.push_record(r);
            // Later records (hoops, names prologues) are never stamped
            // before it.
            self.last_time = self.last_time.max(r.time);
        }
        self.pending_samples += SAMPLE_RECORDS as u64;
    }

    /// Records of `pending` completely written: whole records, or the
    /// records of whole chunks in a compact file.
    fn records_written(&self) -> usize {
        match &self.compact {
            Some(c) => c.records_written(self.written),
            None => self.written / RECORD_LEN,
        }
    }

    /// Bytes written past the last whole record (or whole chunk).
    fn torn(&self) -> usize {
        match &self.compact {
            Some(c) => c.torn(self.written),
            None => self.written % RECORD_LEN,
        }
    }

    /// `events` as the file's body takes them: 32-byte records, or compact
    /// chunks numbered from `next` (updated).
    pub(super) fn encode_events(
        &self,
        next: &mut qtrace_core::compact::ChunkHeader,
        events: &[Event],
        dst: &mut Vec<u8>,
    ) {
        if self.compact.is_some() {
            CompactOut::encode_events(next, events, dst);
            return;
        }
        record::extend_all(events, dst);
    }

    /// Counts the events of `pending` whose records are completely written.
    fn credit(&mut self) {
        let done = (self.records_written() as u64).min(self.pending_events);
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
        // The records not encoded yet (a write that failed keeps both
        // `pending` and its encoding; more records may follow).
        match self.compact.as_mut() {
            Some(c) => c.encode(&self.pending),
            None => {
                let done = self.plain.len() / RECORD_LEN;
                record::extend_all(&self.pending[done..], &mut self.plain);
            }
        }
        loop {
            let len = match &self.compact {
                Some(c) => c.out.len(),
                None => self.plain.len(),
            };
            if self.written >= len {
                break;
            }
            if !self.reserve_ahead((len - self.written) as u64) {
                return false;
            }
            let bytes = match &self.compact {
                Some(c) => &c.out[self.written..],
                None => &self.plain[self.written..],
            };
            match self.sink.write(bytes) {
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
        self.records += self.pending.len() as u64;
        self.lost = self.lost.saturating_add(self.pending_hoops);
        self.samples += std::mem::take(&mut self.pending_samples);
        if self.first_record_at.is_none() && self.records > self.prologue + self.samples {
            self.first_record_at = Some(Instant::now());
        }
        self.pending.clear();
        self.plain.clear();
        if let Some(c) = self.compact.as_mut() {
            c.clear();
        }
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
        let mut events = if self.rotation.on() {
            self.names.records(self.last_time)
        } else {
            Vec::new()
        };
        let prologue = events.len() as u64;
        if lost > 0 {
            events.push(Event::new(
                self.last_time,
                HOOPS,
                TRACER_SOURCE,
                [lost, self.handle.0 as u64],
            ));
        }
        let mut head = self.header.clone();
        let mut next = Default::default();
        self.encode_events(&mut next, &events, &mut head);
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
        if let Some(c) = self.compact.as_mut() {
            c.next = next;
        }
        self.reserved_to = self.file_len + RESERVE_LEN;
        self.shared
            .lost_with_file
            .fetch_add(lost_events, Ordering::Relaxed);
        self.in_file = 0;
        self.records = prologue + u64::from(lost > 0);
        self.samples = 0;
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

    /// Drains and writes, at most `batches` batches; then closes the chunk
    /// if `OnlineQueue::request_rotation` asked before the round began (so
    /// the closed chunk holds every event logged before the request).
    fn round(&mut self, batches: usize) -> Round {
        let requested = self.shared.rotate_requested.swap(false, Ordering::AcqRel);
        let round = self.drain_round(batches);
        if requested {
            if matches!(round, Round::Failed) {
                // Tried again at the next round.
                self.shared.rotate_requested.store(true, Ordering::Release);
            } else {
                self.rotate();
            }
        }
        round
    }

    /// Drains and writes, at most `batches` batches.
    fn drain_round(&mut self, mut batches: usize) -> Round {
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
        // The queue's own counters: one sample a round, unless the last
        // one still waits for the events queued when it was taken.
        if let (Some(counters), None) = (&self.counters, &self.sample) {
            self.sample = Some(counters.sample(ring));
        }
        loop {
            let mut left = ring.len();
            while left > 0 {
                // Nothing is pending here (a run held back aside): the
                // chunk may be closed.
                let carried = self.carry.len();
                if self.room() <= carried && self.records > self.prologue {
                    self.rotate();
                }
                // A sample due already (what was queued when it was taken
                // is drained: it was taken with nothing queued, or a batch
                // ended there) goes alone before the events logged after
                // it. Its drops are marked: the ring took events since.
                if self.pending.is_empty() && self.sample.as_ref().is_some_and(Sample::due) {
                    self.place_sample();
                    if !self.write_pending() {
                        return Round::Failed;
                    }
                }
                let batch = if self.compact.is_some() {
                    COMPACT_BATCH
                } else {
                    BATCH
                };
                let mut take = if self.rotate_blocked {
                    left.min(batch)
                } else {
                    left.min(batch)
                        .min(self.room().saturating_sub(carried).max(1))
                };
                // A batch ends where a sample waiting for its events is due.
                if let Some(after) = self.sample.as_ref().map(Sample::after) {
                    if after > 0 {
                        take = take.min(after);
                    }
                }
                let mut last_time = self.last_time;
                let mut buf = std::mem::take(&mut self.pending);
                buf.extend_from_slice(&self.carry);
                self.carry.clear();
                self.pending_events += carried as u64;
                let n = ring.drain(take, |e| {
                    buf.push(*e);
                    last_time = e.time;
                });
                self.pending = buf;
                self.last_time = last_time;
                self.pending_events += n as u64;
                left -= n;
                if let Some(s) = self.sample.as_mut() {
                    s.drained(n);
                }
                self.hold_open_run();
                if n < take {
                    break;
                }
                if left > 0 {
                    self.place_sample();
                    if !self.write_pending() {
                        return Round::Failed;
                    }
                }
            }
            // A full chunk is closed before this round's own records (a
            // hoops record, a sample) go in with nothing else: they use the
            // room kept for them, and rounds that find the ring empty would
            // otherwise add theirs past the size bound one after another.
            if self.pending.is_empty()
                && self.carry.is_empty()
                && self.room() == 0
                && self.records > self.prologue
            {
                self.rotate();
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
            // After the batch's events and its hoops record: the sample's
            // losses are then those the file has marked.
            self.place_sample();
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
    pub(super) fn close(&mut self, unwritten: u64, unmarked: u64) -> bool {
        if self.file.is_none() && self.torn() != 0 {
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
        let mut bytes = Vec::with_capacity(tail.len() * RECORD_LEN);
        // In a compact file, the close run's chunk follows the last whole
        // chunk written (a torn one is cut off by `finish`).
        let mut next = self
            .compact
            .as_ref()
            .map(|c| c.next_at(self.written))
            .unwrap_or_default();
        self.encode_events(&mut next, &tail, &mut bytes);
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
                if let Some(c) = self.compact.as_mut() {
                    c.next = next;
                }
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
            self.pending_events += carry.len() as u64;
            self.pending.extend_from_slice(&carry);
            let _ = self.write_pending();
        }
        self.flush();
        let unwritten = self.pending_events - self.credited + self.shared.feed.ring.len() as u64;
        // Writing stopped in the middle of a record: cut the file back to the
        // last whole record, so a reader sees a clean end (a writer that is
        // not a file keeps the partial record; readers report it).
        let torn = self.torn() as u64;
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
        // Sample records not written (they end `pending`): no loss of
        // events, but the status says so, as the file may end torn.
        let unwritten_samples = (self.pending.len().saturating_sub(self.records_written()) as u64)
            .min(self.pending_samples);
        // The whole records (or chunks) of a partly written batch are in
        // the file.
        self.records += self.records_written() as u64;
        // Bytes still pending with no event in them: a hoops record that
        // could not be written. Say so: a loss nobody can see is not allowed.
        let unwritten_hoops = self.dropped_unmarked();
        let closed = self.close(unwritten, unwritten_hoops);
        if unwritten == 0 && unwritten_hoops == 0 && unwritten_samples > 0 {
            let mut io = self.shared.io.lock();
            let why = io.last_error.clone().unwrap_or_default();
            let end = if closed {
                "the file ends with its close record"
            } else {
                "the file reads as cut short"
            };
            io.last_error = Some(format!(
                "{unwritten_samples} records of the queue counters' samples (no event) could not be written to {} at shutdown; {end}; last error: {why}",
                self.name
            ));
        }
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

/// Whether a trace file about to be created at `path` may be removed if
/// opening it fails: when nothing is there yet or a regular file is (which
/// `File::create` truncates), never a device such as `/dev/full`, a FIFO or
/// a symbolic link.
pub(super) fn removable_on_failure(path: &std::path::Path) -> bool {
    std::fs::symlink_metadata(path).map_or(true, |m| m.file_type().is_file())
}
