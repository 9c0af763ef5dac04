//! The circular queue: keeps the last N events, overwriting the oldest and
//! counting every overwrite; saves oldest-first at shutdown; takes snapshots
//! while the program runs (a flight recorder).
//!
//! Storage: up to `shards` single-producer rings (each owned by the first
//! thread that logs into it, written with plain stores: no atomic
//! read-modify-write on the hot path) and one multi-producer ring for every
//! other thread. Snapshots and saves merge them by time; see [`CircularQueue`].
//!
//! ```
//! use qtrace::classes::user;
//! use qtrace::queues::{Circular, CircularParams};
//! use qtrace::{Config, Tracer};
//!
//! let dir = std::env::temp_dir().join(format!("qtrace-doc-circular-{}", std::process::id()));
//! let tracer = Tracer::with_config(Config::default().with_output_dir(&dir));
//! let q = tracer.create_queue::<Circular>(CircularParams::default().with_capacity(4))?;
//! tracer.assign_event(user::USER0, q)?;
//! tracer.activate()?;
//! for i in 0..10 {
//!     tracer.log_event(user::USER0, [i, 0]);
//! }
//! let circular = tracer.queue(q)?.as_circular().unwrap();
//! let now = circular.snapshot_events();
//! // A hoops record for the 6 overwritten events, then the last 4.
//! assert_eq!(now[0].args, [6, 0]);
//! assert_eq!(now[1..].iter().map(|e| e.args[0]).collect::<Vec<_>>(), [6, 7, 8, 9]);
//! let report = tracer.shutdown()?;
//! assert_eq!(report.queues[0].counters.overwritten, 6);
//! assert_eq!(report.queues[0].status.files, [dir.join("queue0-circular.qtr")]);
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), qtrace::Error>(())
//! ```

use std::path::{Path, PathBuf};

use super::{AnyQueue, QueueType};
use crate::model::event::Event;
use crate::queue::config_error::ConfigError;
use crate::queue::queue_trait::{Queue, QueueContext, QueueCounters, QueueStatus, Reservation};
use crate::ring::backing::{Backing, Placed, Region};
use crate::ring::shard::{Record, ShardRing};
use crate::ring::{check_capacity, OverwriteRing, Padded, Slot, Ticketed};
use crate::storage::ring_file::{RingLayout, RingStorage, RECORD_BYTES};
use crate::storage::save::{
    create_at_activate, default_path, write_trace_from, FileContext, StatusCell, BATCH,
};
use crate::sync::{AtomicU64, Ordering};
use crate::wire::record::RECORD_LEN;
use crate::wire::{QueueTotals, TraceHeader};

/// A shard's owner word: no owner yet.
const FREE: u64 = 0;
/// A shard's owner word that no thread token equals (the placeholder shard
/// of a queue with no shards).
const NEVER: u64 = u64::MAX;
/// Low bits of a [`Reservation`] naming the ring (0 = the shared ring,
/// `s + 1` = shard `s`); the ticket is above them.
const RING_BITS: u32 = 9;
const RING_MASK: u64 = (1 << RING_BITS) - 1;

mod merge;
mod params;
mod runs;

use merge::{merge, Merged};

pub use params::{Circular, CircularParams};

/// A single-producer ring and the thread that owns it. `repr(C)`: placed
/// in the queue's region (a ring file: the owner at byte 0, the ring's
/// indices at byte 128; FORMAT.md section 6).
#[derive(Debug)]
#[repr(C)]
struct Shard {
    /// The owning thread's [`crate::ring::thread_token::thread_token`], [`FREE`] or
    /// [`NEVER`]. Set once, by compare-and-swap, and never changed again.
    owner: Padded<AtomicU64>,
    ring: ShardRing,
}

#[cfg(not(loom))]
const _: () = {
    use crate::storage::ring_file::{CLAIMED_AT, OWNER_AT, SHARD_BYTES};
    assert!(std::mem::offset_of!(Shard, owner) == OWNER_AT);
    assert!(std::mem::offset_of!(Shard, ring) == CLAIMED_AT);
    assert!(std::mem::size_of::<Shard>() == SHARD_BYTES);
};

impl Shard {
    /// Whether a reader must look at this shard (someone owns it, so it may
    /// hold records).
    fn in_use(&self) -> bool {
        !matches!(self.owner.load(Ordering::Acquire), FREE | NEVER)
    }
}

/// The buffers a snapshot copied the rings into, kept for the next one: a
/// 1 M-event ring's copy allocated afresh cost half the snapshot's CPU time
/// in page faults and its unmap (issue 36). A snapshot keeps those of the
/// way it was written, at most one per ring, and drops the others.
#[derive(Debug, Default)]
struct Kept {
    /// For [`merge`]: the records with their tickets (40 bytes ×
    /// `capacity` each at most).
    merge: Vec<Vec<Ticketed>>,
    /// For [`runs`]: the shards' copies in the file's encoding (32 bytes ×
    /// `capacity` each at most).
    runs: Vec<Vec<[u8; RECORD_LEN]>>,
}

/// A queue that keeps the most recent `capacity` events.
///
/// Many threads log at once without a lock. The queue holds `shards`
/// single-producer rings (see [`CircularParams::shards`]) and one
/// multi-producer ring, each of `capacity` events. A
/// thread with token `t` (a number unique to the thread, 1, 2, … in the
/// order threads first log) uses shard `t mod shards`: the first thread to
/// log there becomes its owner (one compare-and-swap, once) and from then on
/// logs with plain stores — no atomic read-modify-write, no lock. A thread
/// whose shard is owned by another thread logs into the shared ring (a
/// ticket `fetch_add` and a slot compare-and-swap); so does every thread
/// when `shards` is 0. A shard belongs to a token, not to a thread: when a
/// thread exits, its records stay (and are saved) and its token goes back
/// to a pool; the next new thread takes that token and with it the shards
/// (it continues their tickets), so short-lived threads do not use up the
/// shards. More threads alive than `shards` share the shared ring.
/// Ownership is per *thread*, not per source number, because a program may
/// give one source number to several threads
/// ([`crate::model::source::set_current`], [`crate::Tracer::log_event_from`]).
///
/// In the shared ring, a producer that would overwrite a slot another
/// producer is still writing drops its event instead, and counts it; no
/// reader ever sees a torn record (every slot is a seqlock).
///
/// Snapshots and saves merge all rings by time (then ticket) and keep the
/// newest `capacity` events overall; every other accepted event counts as
/// overwritten, so `accepted = delivered + overwritten + queued` holds
/// exactly and a single thread sees exactly the behaviour of one ring of
/// `capacity` events. They hold the events oldest-first, with a hoops
/// record (tracer class, `args = [lost, queue]`) before the oldest event
/// kept of each ring for the events lost before it, and wherever events are
/// missing in between.
///
/// Through a [`crate::Tracer`], a thread finds its shard once per queue and
/// then keeps it in a small per-thread cache (the four circular queues it
/// logged into most recently), so an event costs two compares of a
/// thread-local key (read twice, for signal handlers) before the stores.
///
/// Signal handlers may log into another queue than the code they
/// interrupt: the per-thread cache stays consistent whatever instruction
/// the handler interrupts. Limitation: not into the *same* queue. A
/// handler writes the same shard as the thread it interrupted, with the
/// same plain loads and stores, so one that interrupts the thread's claim
/// (between its load and its store of the ticket) takes the same ticket,
/// and one of the two events is lost without being counted; one that
/// interrupts between claim and commit leaves the published index behind
/// its own record until the thread's next event, and if it logs
/// `capacity` or more events it can make the interrupted record
/// unreliable.
///
/// ```
/// # let _cwd = tempfile::tempdir().unwrap(); std::env::set_current_dir(_cwd.path()).unwrap(); // the queue's file at shutdown: not into the checkout
/// use qtrace::classes::user;
/// use qtrace::queues::{Circular, CircularParams, CircularQueue};
/// use qtrace::storage::RingStorage;
///
/// let tracer = qtrace::Tracer::new();
/// let params = CircularParams::default().with_capacity(4).with_shards(0).with_ring(RingStorage::Memory);
/// let q = tracer.create_queue::<Circular>(params)?;
/// tracer.assign_class(user::CLASS, q)?;
/// for i in 0..6 {
///     tracer.log_event(user::USER0, [i, 0]);
/// }
/// let circular: &CircularQueue = tracer.queue(q)?.as_circular().unwrap();
/// let kept: Vec<u64> = circular.snapshot_events().iter().skip(1).map(|e| e.args[0]).collect();
/// assert_eq!(kept, [2, 3, 4, 5]); // after a hoops record for the 2 overwritten
/// # Ok::<(), qtrace::Error>(())
/// ```
#[derive(Debug)]
pub struct CircularQueue {
    shards: Region<Shard>,
    shard_mask: u64,
    mp: Placed<OverwriteRing>,
    capacity: usize,
    /// Events saved by `terminate` (the rings' own `delivered` counts also
    /// the records consumed but left out as older than the newest `capacity`).
    delivered: AtomicU64,
    file: PathBuf,
    /// The context snapshots are written with (updated at `activate`).
    ctx: FileContext,
    status: StatusCell,
    /// Set once `terminate` has written the file: a later call must not
    /// overwrite it with the (empty) rest.
    saved: std::sync::atomic::AtomicBool,
    /// Files are written in compact chunks
    /// ([`CircularParams::with_compact`]).
    compact: bool,
    /// The buffers the last snapshot copied the rings into, kept for the
    /// next one (see [`Kept`]; boxed: the queue's size is part of the
    /// tracer's queue table stride).
    scratch: parking_lot::Mutex<Box<Kept>>,
    /// The memory `shards` and `mp` are placed in: a ring file or the heap.
    mem: Backing,
}

impl Drop for CircularQueue {
    fn drop(&mut self) {
        // SAFETY: placed in `mem` by `create`, dropped once here, before
        // `mem` (a field dropped after this body), and never used again.
        unsafe {
            self.shards.drop_in_place();
            self.mp.drop_in_place();
        }
    }
}

impl CircularQueue {
    /// The ring file the rings live in (recoverable after a crash with
    /// [`recover_file`](crate::storage::recover_file)), or `None` when they are on the heap
    /// ([`RingStorage::Memory`]). Removed by a successful save at shutdown.
    pub fn ring_file(&self) -> Option<&Path> {
        self.mem.path()
    }

    /// The number of events kept.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The number of single-producer shards (0 when every thread shares one
    /// ring).
    pub fn shards(&self) -> usize {
        if self.shards[0].owner.load(Ordering::Relaxed) == NEVER {
            0
        } else {
            self.shards.len()
        }
    }

    /// The file `terminate` saves to.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Whether saves and snapshots are compact chunks
    /// ([`CircularParams::with_compact`]).
    pub fn compact(&self) -> bool {
        self.compact
    }

    #[inline(always)]
    fn shard_of(&self, token: u64) -> (usize, &Shard) {
        let i = (token & self.shard_mask) as usize;
        debug_assert!(i < self.shards.len());
        // SAFETY: `shards.len() == shard_mask + 1` (set together in
        // `create`, never changed), so `i < shards.len()`. Unchecked: saves
        // a compare and a branch per event.
        (i, unsafe { self.shards.get_unchecked(i) })
    }

    /// Records `make()` (called after room is reserved, so the clock is
    /// read as late as possible) from this thread: into its shard, or the
    /// shared ring. The tracer's hot path goes through
    /// [`CircularQueue::producer_shard`] once per thread and then writes the
    /// shard directly (see `queues::producer_cache`).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn log_with(&self, make: impl FnOnce() -> Event) {
        match self.producer_shard() {
            Some(ring) => ring.push_with(make),
            None => self.log_shared(make),
        }
    }

    /// The shard this thread owns, becoming its owner if it is free; `None`
    /// when another thread owns it (or the queue has no shards): then this
    /// thread logs with [`CircularQueue::log_shared`]. A thread's answer
    /// never changes from `Some(ring)` to anything else while it lives.
    #[inline]
    pub(crate) fn producer_shard(&self) -> Option<&ShardRing> {
        self.owned_shard(crate::ring::thread_token::thread_token())
            .map(|(_, shard)| &shard.ring)
    }

    /// The shard the thread with `token` owns (and its index), making it
    /// the owner if the shard is free.
    #[inline(always)]
    fn owned_shard(&self, token: u64) -> Option<(usize, &Shard)> {
        let (i, shard) = self.shard_of(token);
        // Relaxed: only this thread ever stored its own token there.
        (shard.owner.load(Ordering::Relaxed) == token || self.acquire_shard(shard, token))
            .then_some((i, shard))
    }

    /// Makes this thread the owner of `shard` if it is free (once per
    /// thread and queue).
    #[inline(never)]
    fn acquire_shard(&self, shard: &Shard, token: u64) -> bool {
        token != crate::ring::thread_token::EXITED_TOKEN
            && shard.owner.load(Ordering::Relaxed) == FREE
            && shard
                .owner
                .compare_exchange(FREE, token, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
    }

    /// Records `make()` into the shared multi-producer ring (or counts it
    /// dropped, see [`CircularQueue`]).
    #[inline]
    pub(crate) fn log_shared(&self, make: impl FnOnce() -> Event) {
        if let Some(ticket) = self.mp.claim() {
            self.mp.commit(ticket, &make());
        }
    }

    #[inline(always)]
    fn reserve(&self) -> Option<u64> {
        self.reserve_as(crate::ring::thread_token::thread_token())
    }

    /// A reservation for the thread with `token`: in its shard (ring
    /// `s + 1` in the low bits), else in the shared ring (0).
    #[inline(always)]
    fn reserve_as(&self, token: u64) -> Option<u64> {
        match self.owned_shard(token) {
            Some((i, shard)) => Some(shard.ring.claim().1 << RING_BITS | (i as u64 + 1)),
            None => self.mp.claim().map(|t| t << RING_BITS),
        }
    }

    #[inline(always)]
    fn commit(&self, reservation: u64, event: &Event) {
        let ticket = reservation >> RING_BITS;
        match (reservation & RING_MASK) as usize {
            0 => self.mp.commit(ticket, event),
            s => {
                let ring = &self.shards[s - 1].ring;
                ring.commit(ring.record(ticket), ticket, event)
            }
        }
    }

    /// The shards a reader must look at: those with an owner.
    fn shards_in_use(&self) -> impl Iterator<Item = &ShardRing> {
        self.shards.iter().filter(|s| s.in_use()).map(|s| &s.ring)
    }

    /// The current contents, oldest-first, with hoops records for what is
    /// missing (see [`CircularQueue`]), without stopping producers. Events
    /// being written at this instant are left out.
    pub fn snapshot_events(&self) -> Vec<Event> {
        let mut merged = self.merged_now();
        let events = merged.by_ref().collect();
        self.keep_buffers(merged);
        events
    }

    /// The current contents as [`merge`] gives them (for a snapshot),
    /// copied into the buffers of the last snapshot.
    fn merged_now(&self) -> Merged {
        let (shared, spare) = self.read_shared();
        self.merged_with(shared, spare)
    }

    /// The shared ring's records, read into a kept buffer, and the other
    /// kept buffers.
    fn read_shared(&self) -> (Vec<Ticketed>, Vec<Vec<Ticketed>>) {
        let mut spare = std::mem::take(&mut self.scratch.lock().merge);
        let mut shared = spare.pop().unwrap_or_default();
        shared.clear();
        // A shared ring nobody logged into is empty: not scanned.
        if self.mp.attempts() != 0 {
            self.mp.read_into(&mut shared);
        }
        (shared, spare)
    }

    /// [`merge`] of the shared ring's records `shared` and the shards',
    /// read now into the buffers `spare` (then fresh ones).
    fn merged_with(&self, shared: Vec<Ticketed>, mut spare: Vec<Vec<Ticketed>>) -> Merged {
        let mut rings: Vec<(Vec<Ticketed>, Option<u64>)> = vec![(shared, None)];
        for ring in self.shards_in_use() {
            let mut records = spare.pop().unwrap_or_default();
            // A copy its producer lapped whole: its events are lost to the
            // snapshot, a trailing hoops record up to `end` says so.
            let end = ring.read_into(&mut records);
            rings.push((records, end));
        }
        let ctx = self.ctx.get();
        merge(rings, self.capacity, ctx.handle, || ctx.clock.now())
    }

    /// Keeps the buffers of a merged snapshot for the next one: as many as
    /// the rings in use, the largest (and drops those of runs).
    fn keep_buffers(&self, merged: Merged) {
        let mut buffers = merged.into_buffers();
        buffers.sort_by_key(|b| std::cmp::Reverse(b.capacity()));
        buffers.truncate(1 + self.shards_in_use().count());
        let mut kept = self.scratch.lock();
        if kept.merge.is_empty() {
            kept.merge = buffers;
            kept.runs.clear();
        }
    }

    /// The snapshot written as runs ([`runs`]) when the shared ring holds
    /// nothing and every shard's records are in time order without a hoops
    /// record (the usual case: a shard has one producer); else `Err` with
    /// the rings merged ([`merge`]), for [`CircularQueue::write_merged`].
    /// The rings are read once either way: a shard's copy that cannot be
    /// written as runs is decoded for the merge.
    fn snapshot_runs(&self, path: &Path) -> Result<Result<u64, ConfigError>, Box<Merged>> {
        let (shared, mut spare) = self.read_shared();
        if !shared.is_empty() {
            return Err(Box::new(self.merged_with(shared, spare)));
        }
        let mut pool = std::mem::take(&mut self.scratch.lock().runs);
        let copies: Vec<_> = self
            .shards_in_use()
            .map(|ring| {
                let mut buffer = pool.pop().unwrap_or_default();
                let read = ring.read_encoded(&mut buffer);
                (buffer, read)
            })
            .collect();
        if !copies.iter().all(|(_, r)| r.in_order && !r.hoops) {
            // Decoded into the kept buffers of the merge; those of runs go.
            let mut rings: Vec<(Vec<Ticketed>, Option<u64>)> = vec![(shared, None)];
            for (buffer, read) in &copies {
                let mut records = spare.pop().unwrap_or_default();
                records.clear();
                records.extend(buffer[read.start..].iter().zip(read.first..).map(
                    |(bytes, ticket)| Ticketed {
                        ticket,
                        event: crate::wire::record::parse(bytes),
                    },
                ));
                let end = read.lapped.then_some(read.first);
                rings.push((records, end));
            }
            let ctx = self.ctx.get();
            return Err(Box::new(merge(rings, self.capacity, ctx.handle, || {
                ctx.clock.now()
            })));
        }
        // The close run carries the counters at the moment of the snapshot.
        let totals = self.counters().into();
        let rings: Vec<runs::Copied<'_>> = copies
            .iter()
            .enumerate()
            .map(|(k, (buffer, read))| runs::Copied {
                records: &buffer[read.start..],
                first: read.first,
                ring: k + 1,
                lapped: read.lapped,
            })
            .collect();
        let result = runs::write_runs(
            path,
            &self.ctx.get(),
            &rings,
            self.capacity,
            totals,
            self.compact,
        );
        // Kept: the shards' copies and the shared ring's buffer (the room
        // it had), no other of the merge's.
        let mut kept = self.scratch.lock();
        if kept.runs.is_empty() {
            kept.runs = copies.into_iter().map(|(b, _)| b).collect();
            kept.merge = vec![shared];
        }
        Ok(result)
    }

    /// Writes [`CircularQueue::snapshot_events`] to `path` as a trace file
    /// while producers keep logging (flight-recorder use). Returns the number
    /// of records written (events and hoops). The queue's counters do not
    /// change: the events stay in the queue. The rings are copied out first:
    /// in the usual case (the shared ring holds nothing, each shard's times
    /// do not go back) as 32-byte records, 32 bytes per event held,
    /// and written from that copy in runs; else with their tickets, 40
    /// bytes per event held, and merged as [`CircularQueue::snapshot_events`]
    /// merges (the same file either way). The file is compact chunks or
    /// 32-byte records as [`CircularParams::with_compact`] says. The queue keeps that copy's
    /// buffers for the next snapshot, so only the first one allocates them.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Io`] naming the path (also counted in
    /// [`Queue::status`]).
    pub fn snapshot(&self, path: impl AsRef<Path>) -> Result<u64, ConfigError> {
        let path = path.as_ref();
        let result = match self.snapshot_runs(path) {
            Ok(written) => written,
            Err(merged) => self.write_merged(path, *merged),
        };
        self.status.record(path, result)
    }

    /// Writes a merged snapshot to `path` (and keeps its buffers).
    fn write_merged(&self, path: &Path, mut events: Merged) -> Result<u64, ConfigError> {
        // The close run carries the counters at the moment of the snapshot.
        let totals = self.counters().into();
        // Written as merged: the events are not copied again.
        let fill = |b: &mut Vec<Event>| events.fill(b, BATCH);
        let result = write_trace_from(path, &self.ctx.get(), fill, totals, self.compact);
        self.keep_buffers(events);
        result
    }
}

impl Queue for CircularQueue {
    /// Reserves room in this thread's shard (becoming its owner if it has
    /// none), or else in the shared ring. The reservation must be posted by
    /// the thread that got it (the tracer always does).
    #[inline(always)]
    fn get(&self) -> Option<Reservation> {
        self.reserve().map(Reservation::new)
    }

    #[inline(always)]
    fn post(&self, reservation: Reservation, event: &Event) {
        self.commit(reservation.ticket(), event);
    }

    /// The run goes into this thread's shard (consecutive: the thread is its
    /// only producer) or the shared ring (consecutive tickets; a slot still
    /// being written drops that record, a gap readers mark). A run longer
    /// than the capacity overwrites its own head: readers show it cut.
    fn post_run(&self, run: &crate::model::combine::Run<'_>) -> usize {
        match self.producer_shard() {
            Some(ring) => {
                for i in 0..run.len() {
                    ring.push_with(|| run.record(i));
                }
                run.len()
            }
            None => self.mp.push_run(run.len(), |i| run.record(i)),
        }
    }

    /// Saves the events oldest-first (all rings merged by time, the newest
    /// `capacity`), with hoops records for the lost ones. On failure the
    /// events stay in the queue (counted as queued, not delivered) and the
    /// error is also in [`Queue::status`]; a later call tries again. Once
    /// saved, later calls do nothing (the file is kept as written).
    /// Creates the file the queue saves to (directory and header), so a
    /// bad directory is an error of phase 2. Until the save, the file reads
    /// as cut short.
    fn activate(&self, ctx: &QueueContext) -> Result<(), ConfigError> {
        self.mp.fault_in();
        for shard in self.shards.iter() {
            shard.ring.fault_in();
        }
        // From now on snapshots list every class defined in phase 1.
        self.ctx.update(ctx);
        create_at_activate(&self.file, ctx, self.compact)
    }

    fn terminate(&self, ctx: &QueueContext) -> Result<(), ConfigError> {
        if self.saved.load(std::sync::atomic::Ordering::Acquire) {
            return Ok(());
        }
        let mp = self.mp.consume();
        let mut taken: Vec<(Vec<Ticketed>, Option<u64>)> =
            vec![(mp.clone(), Some(self.mp.attempts()))];
        let mut moved = Vec::new();
        for ring in self.shards_in_use() {
            let (records, m) = ring.consume();
            taken.push((records, Some(ring.attempts())));
            moved.push((ring, m));
        }
        let events = merge(taken, self.capacity, ctx.handle, || ctx.clock.now());
        let kept = events.kept;
        // The counters as they are once this save succeeds: the kept events
        // delivered, every other accepted one overwritten.
        let c = self.counters();
        let delivered = self.delivered.load(Ordering::Relaxed) + kept;
        let totals = QueueTotals {
            accepted: c.accepted,
            dropped: c.dropped,
            overwritten: c.accepted.saturating_sub(delivered),
            delivered,
        };
        let mut events = events;
        let fill = |b: &mut Vec<Event>| events.fill(b, BATCH);
        let result = write_trace_from(&self.file, ctx, fill, totals, self.compact).map(drop);
        if result.is_err() {
            self.mp.restore(&mp);
            for (ring, m) in moved {
                ring.restore(m);
            }
        } else {
            self.delivered.fetch_add(kept, Ordering::Relaxed);
            self.saved.store(true, std::sync::atomic::Ordering::Release);
            // The trace file now holds everything: the ring file is no
            // longer needed to recover (a left-over one means the process
            // did not shut down). Best effort: a ring file that cannot be
            // removed is recovered as a duplicate of the trace, never as a
            // loss.
            let _ = self.mem.remove_file();
        }
        self.status.record(&self.file, result)
    }

    /// Summed over the rings; `queued` is at most `capacity` (what a save
    /// would keep), and `overwritten` is derived (`accepted - delivered -
    /// queued`), exact whenever no producer is between reservation and commit.
    fn counters(&self) -> QueueCounters {
        // `dropped` before `attempts`: a drop is always counted after its
        // ticket, so `accepted` never goes negative.
        let dropped = self.mp.dropped();
        let attempts = self.mp.attempts();
        // A shared ring nobody logged into holds nothing: not scanned.
        let held = if attempts == 0 { 0 } else { self.mp.queued() };
        let (mut attempts, mut held) = (attempts, held);
        for ring in self.shards_in_use() {
            attempts += ring.attempts();
            held += ring.queued();
        }
        let accepted = attempts.saturating_sub(dropped);
        let queued = held.min(self.capacity as u64);
        let delivered = self.delivered.load(Ordering::Relaxed);
        QueueCounters {
            accepted,
            dropped,
            overwritten: accepted.saturating_sub(delivered + queued),
            delivered,
            queued,
        }
    }

    fn status(&self) -> QueueStatus {
        self.status.get()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::classes::{user, Catalog};
    use crate::model::clock::{Clock, ManualClock};
    use std::sync::Arc;

    fn queue(shards: usize) -> CircularQueue {
        let ctx = QueueContext {
            handle: crate::model::handle::QueueHandle(0),
            type_name: "circular",
            output_dir: std::env::temp_dir(),
            catalog: Arc::new(Catalog::builtin()),
            clock: Clock::manual(&ManualClock::new(0)),
            names: Default::default(),
        };
        let params = CircularParams::default()
            .with_capacity(4)
            .with_shards(shards)
            .with_ring(RingStorage::Memory);
        match Circular.create(params, &ctx).unwrap() {
            AnyQueue::CircularQueue(q) => q,
            _ => unreachable!(),
        }
    }

    fn log(q: &CircularQueue, n: u64) {
        std::thread::scope(|s| {
            s.spawn(|| {
                for i in 0..n {
                    q.log_with(|| Event::new(i, user::USER0, 0, [i, 0]));
                }
            });
        });
    }

    #[test]
    fn first_thread_owns_the_shard_other_threads_use_the_shared_ring() {
        let q = queue(1);
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (logged_tx, logged_rx) = std::sync::mpsc::channel::<()>();
        std::thread::scope(|s| {
            let q = &q;
            s.spawn(move || {
                for i in 0..3 {
                    q.log_with(|| Event::new(i, user::USER0, 0, [i, 0]));
                }
                logged_tx.send(()).unwrap();
                rx.recv().unwrap(); // stays alive while the others log
            });
            logged_rx.recv().unwrap();
            log(q, 2);
            log(q, 1);
            tx.send(()).unwrap();
        });
        assert_eq!(q.shards[0].ring.attempts(), 3);
        assert_eq!(q.mp.attempts(), 3);
        assert_ne!(q.shards[0].owner.load(Ordering::Relaxed), FREE);
        assert_eq!(q.counters().accepted, 6);
    }

    #[test]
    fn an_exiting_thread_never_becomes_an_owner() {
        let q = queue(1);
        assert!(q
            .reserve_as(crate::ring::thread_token::EXITED_TOKEN)
            .is_some());
        assert_eq!(q.shards[0].owner.load(Ordering::Relaxed), FREE);
        assert_eq!(q.mp.attempts(), 1);
    }

    #[test]
    fn no_shards_means_the_shared_ring_only() {
        let q = queue(0);
        log(&q, 3);
        assert_eq!(q.shards(), 0);
        assert_eq!(q.shards[0].ring.attempts(), 0);
        assert_eq!(q.mp.attempts(), 3);
    }

    /// A snapshot writes byte for byte what the save at shutdown writes for
    /// the same rings (all but the close run, whose counters differ), and a
    /// second snapshot, into the buffers the first one kept, the same file:
    /// in 32-byte records (`with_compact(false)`, the bytes) and in compact
    /// chunks (the header's bytes, then the same records and close-run
    /// counts of records and losses; the chunk with the close run differs).
    #[test]
    fn a_snapshot_has_the_bytes_of_the_save() {
        for compact in [false, true] {
            snapshot_has_the_bytes_of_the_save(compact);
        }
    }

    fn snapshot_has_the_bytes_of_the_save(compact: bool) {
        use crate::reader::{Completeness, TraceReader};
        let dir = tempfile::tempdir().unwrap();
        let ctx = QueueContext {
            handle: crate::model::handle::QueueHandle(1),
            type_name: "circular",
            output_dir: dir.path().to_path_buf(),
            catalog: Arc::new(Catalog::builtin()),
            clock: Clock::manual(&ManualClock::new(9999)),
            names: Default::default(),
        };
        let params = CircularParams::default()
            .with_capacity(64)
            .with_shards(2)
            .with_ring(RingStorage::Memory)
            .with_compact(compact);
        let q = match Circular.create(params, &ctx).unwrap() {
            AnyQueue::CircularQueue(q) => q,
            _ => unreachable!(),
        };
        assert_eq!(q.compact(), compact);
        // Three threads one after the other, their times interleaved (so
        // the merge alternates rings), each wrapping the rings; one of them
        // at least shares the shared ring or a shard with another.
        for k in 0..3u64 {
            std::thread::scope(|s| {
                s.spawn(|| {
                    for i in 0..100u64 {
                        q.log_with(|| Event::new(3 * i + k, user::USER0, k as u32, [i, k]));
                    }
                });
            });
        }
        let (a, b) = (dir.path().join("a.qtr"), dir.path().join("b.qtr"));
        let n = q.snapshot(&a).unwrap();
        assert!(!q.scratch.lock().merge.is_empty(), "the buffers are kept");
        assert_eq!(q.snapshot(&b).unwrap(), n);
        // Over a longer file: emptied first.
        let c = dir.path().join("c.qtr");
        std::fs::write(&c, vec![0xa5; 100_000]).unwrap();
        assert_eq!(q.snapshot(&c).unwrap(), n);
        let (a, b) = (std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
        assert_eq!(a, b);
        assert_eq!(std::fs::read(c).unwrap(), a);
        q.terminate(&ctx).unwrap();
        let saved = std::fs::read(q.file()).unwrap();
        let read = |bytes: &[u8]| {
            let mut r = TraceReader::new(bytes).unwrap();
            assert_eq!(r.header().is_compact(), compact);
            let events: Vec<Event> = r.by_ref().map(Result::unwrap).collect();
            let Some(Completeness::Complete(close)) = r.completeness() else {
                panic!("not complete: {:?}", r.completeness());
            };
            (r.header_len() as usize, events, close)
        };
        let (len, snap_events, snap_close) = read(&a);
        let (_, save_events, save_close) = read(&saved);
        if compact {
            assert_eq!(saved[..len], a[..len], "the header");
            assert!(a.len() < len + snap_events.len() * 16, "{} bytes", a.len());
        } else {
            let close = crate::wire::close::CLOSE_RUN_LEN * crate::wire::record::RECORD_LEN;
            assert_eq!(saved.len(), a.len());
            assert_eq!(saved[..saved.len() - close], a[..a.len() - close]);
            assert_eq!(a.len(), len + (snap_events.len() + 3) * 32);
        }
        assert_eq!(snap_events, save_events);
        assert_eq!((snap_close.records, snap_close.lost), (n, 300 - 64));
        assert_eq!((save_close.records, save_close.lost), (n, 300 - 64));
        // The snapshot's counters: all queued; the save's: 64 delivered.
        assert_eq!(snap_close.totals.accepted, 300);
        assert_eq!(snap_close.totals.delivered, 0);
        assert_eq!(save_close.totals.delivered, 64);
        assert_eq!(save_close.totals.overwritten, 300 - 64);
        // 64 events kept, oldest first, each as logged, and the hoops
        // records for the rest.
        let kept: Vec<Event> = save_events
            .iter()
            .copied()
            .filter(|e| e.id == user::USER0)
            .collect();
        assert_eq!(kept.len(), 64);
        // (Which 64: the newest the rings held; a thread that takes an
        // exited one's token continues its shard.)
        assert!(kept.windows(2).all(|w| w[0].time < w[1].time));
        assert_eq!(kept.last().map(|e| e.time), Some(299));
        for e in &kept {
            assert_eq!(e.args, [e.time / 3, e.time % 3]);
            assert_eq!(e.source, (e.time % 3) as u32);
        }
        let lost: u64 = save_events
            .iter()
            .filter(|e| e.id == crate::classes::tracer::HOOPS)
            .map(|e| e.args[0])
            .sum();
        assert_eq!(lost, 300 - 64);
    }

    /// Logs `event` as the thread with `token` would (its shard, else the
    /// shared ring).
    fn log_as(q: &CircularQueue, token: u64, event: Event) {
        let r = q.reserve_as(token).expect("room");
        q.commit(r, &event);
    }

    /// The snapshot of `q` as written, and as the merge writes it (the
    /// way every snapshot was written before runs): byte for byte the same
    /// file and count. Returns whether the snapshot was written as runs.
    fn same_as_merged(q: &CircularQueue, dir: &Path) -> bool {
        let (a, b) = (dir.join("snapshot.qtr"), dir.join("merged.qtr"));
        let n = q.snapshot(&a).unwrap();
        let runs = !q.scratch.lock().runs.is_empty();
        assert_eq!(q.write_merged(&b, q.merged_now()).unwrap(), n);
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        // And again, into the buffers kept.
        assert_eq!(q.snapshot(&a).unwrap(), n);
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        runs
    }

    fn queue_in(dir: &Path, capacity: usize, shards: usize, compact: bool) -> CircularQueue {
        let ctx = QueueContext {
            handle: crate::model::handle::QueueHandle(2),
            type_name: "circular",
            output_dir: dir.to_path_buf(),
            catalog: Arc::new(Catalog::builtin()),
            clock: Clock::manual(&ManualClock::new(777)),
            names: Default::default(),
        };
        let params = CircularParams::default()
            .with_capacity(capacity)
            .with_shards(shards)
            .with_ring(RingStorage::Memory)
            .with_compact(compact);
        match Circular.create(params, &ctx).unwrap() {
            AnyQueue::CircularQueue(q) => q,
            _ => unreachable!(),
        }
    }

    /// Shards only, their times interleaved and tied, wrapped and cut: the
    /// snapshot is written as runs, with the merge's bytes; so is a queue
    /// with one shard in use, and one with none. In both forms.
    #[test]
    fn a_snapshot_of_shards_only_is_written_as_runs_with_the_merges_bytes() {
        for compact in [false, true] {
            shards_only_written_as_runs(compact);
        }
    }

    fn shards_only_written_as_runs(compact: bool) {
        let dir = tempfile::tempdir().unwrap();
        let q = queue_in(dir.path(), 64, 4, compact);
        // Nothing logged: no shard in use, so no buffer tells the way.
        same_as_merged(&q, dir.path());
        for i in 0..50u64 {
            log_as(&q, 1, Event::new(2 * i, user::USER0, 1, [i, 1]));
        }
        assert!(same_as_merged(&q, dir.path()), "one shard");
        for i in 0..100u64 {
            for token in [2, 3] {
                let e = Event::new(100 + i - i % 2, user::USER1, token as u32, [i, token]);
                log_as(&q, token, e);
            }
        }
        assert!(same_as_merged(&q, dir.path()), "three shards, cut");
        assert_eq!(q.mp.attempts(), 0);
        // Shard 1's 50 records are all cut: one hoops record for them,
        // stamped with the newest's time, before the 64 records kept.
        let mut r = crate::reader::TraceReader::open(dir.path().join("snapshot.qtr")).unwrap();
        assert_eq!(r.header().is_compact(), compact);
        let events: Vec<Event> = r.by_ref().map(Result::unwrap).collect();
        let Some(crate::reader::Completeness::Complete(close)) = r.completeness() else {
            panic!("not complete: {:?}", r.completeness());
        };
        // 50 + 2 x 100 logged, 64 kept: the rest stated lost.
        assert_eq!((close.records, close.lost), (67, 250 - 64));
        assert_eq!(events.len(), 67);
        let hoops = |e: &Event| e.id == crate::classes::tracer::HOOPS;
        assert!(hoops(&events[0]));
        assert_eq!((events[0].time, events[0].args), (98, [50, 2]));
        assert_eq!(events.iter().filter(|e| e.id == user::USER1).count(), 64);
        assert_eq!(events.iter().filter(|e| hoops(e)).count(), 3);
    }

    /// A shard whose times go back, a hoops record in a shard, records in
    /// the shared ring: the merge writes the snapshot (its buffers kept,
    /// those of runs dropped), the same bytes. In both forms.
    #[test]
    fn a_snapshot_runs_cannot_write_is_merged() {
        for compact in [false, true] {
            runs_cannot_write_is_merged(compact);
        }
    }

    fn runs_cannot_write_is_merged(compact: bool) {
        let dir = tempfile::tempdir().unwrap();
        let q = queue_in(dir.path(), 64, 4, compact);
        for i in 0..10u64 {
            log_as(&q, 1, Event::new(10 + i, user::USER0, 1, [i, 1]));
        }
        assert!(same_as_merged(&q, dir.path()));
        log_as(&q, 1, Event::new(5, user::USER0, 1, [0, 0]));
        assert!(!same_as_merged(&q, dir.path()), "a time going back");
        let q = queue_in(dir.path(), 64, 4, compact);
        log_as(
            &q,
            1,
            Event::new(3, crate::classes::tracer::HOOPS, 0, [7, 2]),
        );
        log_as(&q, 2, Event::new(4, user::USER0, 2, [0, 0]));
        assert!(!same_as_merged(&q, dir.path()), "a hoops record");
        let q = queue_in(dir.path(), 64, 4, compact);
        log_as(&q, 1, Event::new(3, user::USER0, 1, [0, 0]));
        assert!(same_as_merged(&q, dir.path()));
        log_as(
            &q,
            crate::ring::thread_token::EXITED_TOKEN,
            Event::new(4, user::USER0, 0, [0, 0]),
        );
        assert_eq!(q.mp.attempts(), 1);
        assert!(!same_as_merged(&q, dir.path()), "the shared ring");
        assert!(q.scratch.lock().runs.is_empty(), "dropped");
    }

    #[test]
    fn reservations_name_their_ring() {
        let q = queue(16);
        let r = q.get().unwrap(); // this thread's shard, ticket 0
        let shard = crate::ring::thread_token::thread_token() & 15;
        assert_eq!(r.ticket(), shard + 1);
        q.post(r, &Event::new(5, user::USER0, 0, [0, 0]));
        let r = q.get().unwrap();
        assert_eq!(r.ticket(), 1 << RING_BITS | (shard + 1));
        q.post(r, &Event::new(6, user::USER0, 0, [0, 0]));
        let times: Vec<u64> = q.snapshot_events().iter().map(|e| e.time).collect();
        assert_eq!(times, [5, 6]);
    }
}
