//! The fixed queue: keeps the first N events, drops and counts the rest, saves
//! at shutdown with a trailing hoops record for the drops.
//!
//! ```
//! use qtrace::classes::user;
//! use qtrace::queues::{Fixed, FixedParams};
//! use qtrace::{Config, Tracer};
//!
//! let dir = std::env::temp_dir().join(format!("qtrace-doc-fixed-{}", std::process::id()));
//! let tracer = Tracer::with_config(Config::default().with_output_dir(&dir));
//! let q = tracer.create_queue::<Fixed>(FixedParams::default().with_capacity(3))?;
//! tracer.assign_event(user::USER0, q)?;
//! tracer.activate()?;
//! for i in 0..5 {
//!     tracer.log_event(user::USER0, [i, 0]);
//! }
//! let kept = tracer.queue(q)?.as_fixed().unwrap().snapshot_events();
//! assert_eq!(kept.iter().map(|e| e.args).collect::<Vec<_>>(), [[0, 0], [1, 0], [2, 0], [2, 0]]);
//! //                                                     the trailing hoops record: 2 lost ^
//! let report = tracer.shutdown()?;
//! assert_eq!((report.queues[0].counters.accepted, report.queues[0].counters.dropped), (3, 2));
//! assert_eq!(report.queues[0].status.files, [dir.join("queue0-fixed.qtr")]);
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), qtrace::Error>(())
//! ```

use std::path::{Path, PathBuf};

use super::{AnyQueue, QueueType};
use crate::model::combine::Run;
use crate::model::event::Event;
use crate::queue::config_error::ConfigError;
use crate::queue::queue_trait::{Queue, QueueContext, QueueCounters, QueueStatus, Reservation};
use crate::ring::backing::{Backing, Placed, Region};
use crate::ring::{Padded, Slot, Ticketed, MAX_CAPACITY};
use crate::storage::ring_file::{RingLayout, RingStorage};
use crate::storage::save::{
    create_at_activate, default_path, with_hoops, write_trace, FileContext, StatusCell,
};
use crate::sync::{AtomicU64, Ordering};
use crate::wire::TraceHeader;

/// The fixed queue type (`"fixed"`).
///
/// ```
/// # let _cwd = tempfile::tempdir().unwrap(); std::env::set_current_dir(_cwd.path()).unwrap(); // the queue's file at shutdown: not into the checkout
/// use qtrace::classes::user;
/// use qtrace::queues::{Fixed, FixedParams, FixedQueue};
/// use qtrace::storage::RingStorage;
///
/// let tracer = qtrace::Tracer::new();
/// let params = FixedParams::default().with_capacity(2).with_ring(RingStorage::Memory);
/// assert_eq!((params.capacity(), params.ring(), params.file()), (2, &RingStorage::Memory, None));
/// let q = tracer.create_queue::<Fixed>(params)?;
/// tracer.assign_class(user::CLASS, q)?;
/// for i in 0..5 {
///     tracer.log_event(user::USER0, [i, 0]);
/// }
/// let fixed: &FixedQueue = tracer.queue(q)?.as_fixed().unwrap();
/// let kept: Vec<u64> = fixed.snapshot_events().iter().map(|e| e.args[0]).collect();
/// assert_eq!(&kept[..2], [0, 1]); // the first 2 (then a hoops record for the 3 dropped)
/// assert_eq!(tracer.counters(q)?.dropped, 3);
/// # Ok::<(), qtrace::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Fixed;

/// Parameters of a fixed queue.
///
/// ```
/// # let _cwd = tempfile::tempdir().unwrap(); std::env::set_current_dir(_cwd.path()).unwrap(); // the queue's file at shutdown: not into the checkout
/// use qtrace::classes::user;
/// use qtrace::queues::{Fixed, FixedParams, FixedQueue};
/// use qtrace::storage::RingStorage;
///
/// let tracer = qtrace::Tracer::new();
/// let params = FixedParams::default().with_capacity(2).with_ring(RingStorage::Memory);
/// let q = tracer.create_queue::<Fixed>(params)?;
/// tracer.assign_class(user::CLASS, q)?;
/// for i in 0..5 {
///     tracer.log_event(user::USER0, [i, 0]);
/// }
/// let fixed: &FixedQueue = tracer.queue(q)?.as_fixed().unwrap();
/// let kept: Vec<u64> = fixed.snapshot_events().iter().map(|e| e.args[0]).collect();
/// assert_eq!(&kept[..2], [0, 1]); // the first 2 (then a hoops record for the 3 dropped)
/// assert_eq!(tracer.counters(q)?.dropped, 3);
/// # Ok::<(), qtrace::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FixedParams {
    capacity: usize,
    file: Option<PathBuf>,
    ring: RingStorage,
    compact: bool,
}

impl FixedParams {
    /// Events kept: any number from 1 to 2^32 (default 8192; checked by
    /// [`Tracer::create_queue`](crate::Tracer::create_queue)).
    pub fn with_capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity;
        self
    }

    /// Where `terminate` saves; default `<output_dir>/queue<handle>-fixed.qtr`.
    pub fn with_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.file = Some(path.into());
        self
    }

    /// Where the ring lives while the program runs: by default a ring file
    /// `<output_dir>/queue<handle>-fixed.ring` that survives a crash (see
    /// [`RingStorage`]).
    pub fn with_ring(mut self, ring: RingStorage) -> Self {
        self.ring = ring;
        self
    }

    /// Saves and snapshots in compact chunks (`true`, the default:
    /// trace-file version 2, FORMAT.md 1.11, about 5 bytes an event,
    /// encoded when the file is written, never by the producers) or in
    /// 32-byte records (`false`: version 1, for tools that read the records
    /// at fixed offsets). Every reader of this crate and `qtrace` reads
    /// both. The ring (and its ring file) keeps 32-byte slots either way.
    ///
    /// ```
    /// use qtrace::queues::FixedParams;
    ///
    /// assert!(FixedParams::default().compact());
    /// assert!(!FixedParams::default().with_compact(false).compact());
    /// ```
    pub fn with_compact(mut self, compact: bool) -> Self {
        self.compact = compact;
        self
    }

    /// Events kept.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The file `terminate` saves to, if one was given (else the default
    /// under the tracer's output directory).
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// Where the ring lives while the program runs.
    pub fn ring(&self) -> &RingStorage {
        &self.ring
    }

    /// Whether saves and snapshots are compact chunks
    /// ([`with_compact`](Self::with_compact)).
    pub fn compact(&self) -> bool {
        self.compact
    }
}

impl Default for FixedParams {
    fn default() -> Self {
        FixedParams {
            capacity: 8192,
            file: None,
            ring: RingStorage::File,
            compact: true,
        }
    }
}

impl QueueType for Fixed {
    type Params = FixedParams;
    const NAME: &'static str = "fixed";

    fn create(&self, params: FixedParams, ctx: &QueueContext) -> Result<AnyQueue, ConfigError> {
        if params.capacity == 0 || params.capacity > MAX_CAPACITY {
            return Err(ConfigError::InvalidParameter {
                queue_type: Self::NAME,
                reason: format!(
                    "capacity {} is out of range: use 1 to {MAX_CAPACITY} events",
                    params.capacity
                ),
            });
        }
        let bad = |reason: String| ConfigError::InvalidParameter {
            queue_type: Self::NAME,
            reason,
        };
        let header = TraceHeader::for_queue(ctx).to_bytes();
        let layout = RingLayout::fixed(header.len(), params.capacity as u64)
            .ok_or_else(|| bad(format!("capacity {} is too large", params.capacity)))?;
        let mut mem = params.ring.allocate(ctx, &layout, &header, Self::NAME)?;
        let slots = mem.place_slice(layout.slots_at as usize, params.capacity, |_| {
            Slot::new(EMPTY)
        });
        let ctl = mem.place(
            layout.header_len as usize,
            Control {
                tail: Padded(AtomicU64::new(0)),
            },
        );
        Ok(AnyQueue::FixedQueue(FixedQueue {
            ctl,
            delivered: AtomicU64::new(0),
            slots,
            file: params.file.unwrap_or_else(|| default_path(ctx)),
            ctx: FileContext::new(ctx),
            status: StatusCell::default(),
            saved: std::sync::atomic::AtomicBool::new(false),
            compact: params.compact,
            mem,
        }))
    }
}

/// The fixed queue's control block, placed in its region (a ring file: the
/// ticket counter at byte 0; FORMAT.md section 6).
#[derive(Debug)]
#[repr(C)]
struct Control {
    tail: Padded<AtomicU64>,
}

#[cfg(not(loom))]
const _: () = {
    assert!(std::mem::offset_of!(Control, tail) == crate::storage::ring_file::TAIL_AT);
    assert!(std::mem::size_of::<Control>() <= crate::storage::ring_file::CTL_BYTES);
};

// Slot states: each slot is written once, by the producer holding its ticket.
const EMPTY: u64 = 0;
const COMMITTED: u64 = 1;
const SAVED: u64 = 2;

/// A queue that keeps the first `capacity` events and drops the rest.
///
/// Hot path: one `fetch_add` on the ticket counter (kept in the queue's
/// region, so that a ring file holds it: one pointer load away; it counts
/// every attempt: `accepted = min(tickets, capacity)`, `dropped = tickets -
/// accepted`, no other atomic add), four relaxed stores and one release store.
///
/// ```
/// # let _cwd = tempfile::tempdir().unwrap(); std::env::set_current_dir(_cwd.path()).unwrap(); // the queue's file at shutdown: not into the checkout
/// use qtrace::classes::user;
/// use qtrace::queues::{Fixed, FixedParams, FixedQueue};
/// use qtrace::storage::RingStorage;
///
/// let tracer = qtrace::Tracer::new();
/// let params = FixedParams::default().with_capacity(2).with_ring(RingStorage::Memory);
/// let q = tracer.create_queue::<Fixed>(params)?;
/// tracer.assign_class(user::CLASS, q)?;
/// for i in 0..5 {
///     tracer.log_event(user::USER0, [i, 0]);
/// }
/// let fixed: &FixedQueue = tracer.queue(q)?.as_fixed().unwrap();
/// let kept: Vec<u64> = fixed.snapshot_events().iter().map(|e| e.args[0]).collect();
/// assert_eq!(&kept[..2], [0, 1]); // the first 2 (then a hoops record for the 3 dropped)
/// assert_eq!(tracer.counters(q)?.dropped, 3);
/// # Ok::<(), qtrace::Error>(())
/// ```
#[derive(Debug)]
pub struct FixedQueue {
    ctl: Placed<Control>,
    delivered: AtomicU64,
    slots: Region<Slot>,
    file: PathBuf,
    /// The context snapshots are written with (updated at `activate`).
    ctx: FileContext,
    status: StatusCell,
    /// Set once `terminate` has written the file: a later call must not
    /// overwrite it with the (empty) rest.
    saved: std::sync::atomic::AtomicBool,
    /// Files are written in compact chunks ([`FixedParams::with_compact`]).
    compact: bool,
    /// The memory `ctl` and `slots` are placed in: a ring file or the heap.
    mem: Backing,
}

impl Drop for FixedQueue {
    fn drop(&mut self) {
        // SAFETY: placed in `mem` by `create`, dropped once here, before
        // `mem` (a field dropped after this body), and never used again.
        unsafe {
            self.slots.drop_in_place();
            self.ctl.drop_in_place();
        }
    }
}

impl FixedQueue {
    /// The ring file the events live in (recoverable after a crash with
    /// [`recover_file`](crate::storage::recover_file)), or `None` when they are on the heap
    /// ([`RingStorage::Memory`]). Removed by a successful save at shutdown.
    pub fn ring_file(&self) -> Option<&Path> {
        self.mem.path()
    }

    /// The number of events kept.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// The file `terminate` saves to.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Whether saves and snapshots are compact chunks
    /// ([`FixedParams::with_compact`]).
    pub fn compact(&self) -> bool {
        self.compact
    }

    /// The committed records not yet saved, by ticket; and the number of
    /// tickets handed out before the scan ended.
    fn records(&self, state: u64, mark: Option<u64>) -> (Vec<Ticketed>, u64) {
        let filled = (self.ctl.tail.load(Ordering::Relaxed) as usize).min(self.slots.len());
        let mut out = Vec::with_capacity(filled);
        for (i, slot) in self.slots[..filled].iter().enumerate() {
            if slot.seq.load(Ordering::Acquire) != state {
                continue; // still being written, or already saved
            }
            let event = slot.read();
            if let Some(to) = mark {
                slot.seq.store(to, Ordering::Relaxed);
            }
            out.push(Ticketed {
                ticket: i as u64,
                event,
            });
        }
        (out, self.ctl.tail.load(Ordering::Relaxed))
    }

    /// The events kept so far, in order, followed by a hoops record for the
    /// drops so far (and one wherever a record is still being written).
    pub fn snapshot_events(&self) -> Vec<Event> {
        let (records, end) = self.records(COMMITTED, None);
        let ctx = self.ctx.get();
        with_hoops(&records, end, ctx.handle, || ctx.clock.now())
    }

    /// Writes [`FixedQueue::snapshot_events`] to `path` as a trace file
    /// while producers keep logging. Returns the number of records written
    /// (events and hoops). The queue's counters do not change.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Io`] naming the path (also counted in [`Queue::status`]).
    pub fn snapshot(&self, path: impl AsRef<Path>) -> Result<u64, ConfigError> {
        let path = path.as_ref();
        let events = self.snapshot_events();
        // The close run carries the counters at the moment of the snapshot.
        let totals = self.counters().into();
        let result = write_trace(path, &self.ctx.get(), &events, totals, self.compact)
            .map(|()| events.len() as u64);
        self.status.record(path, result)
    }
}

impl Queue for FixedQueue {
    #[inline]
    fn get(&self) -> Option<Reservation> {
        let ticket = self.ctl.tail.fetch_add(1, Ordering::Relaxed);
        if ticket < self.slots.len() as u64 {
            Some(Reservation::new(ticket))
        } else {
            None
        }
    }

    #[inline]
    fn post(&self, reservation: Reservation, event: &Event) {
        if let Some(slot) = self.slots.get(reservation.ticket() as usize) {
            slot.write(event);
            slot.seq.store(COMMITTED, Ordering::Release);
        }
    }

    /// One `fetch_add` reserves the whole run; when it does not fit, the
    /// records that do are kept (a cut run) and the rest count as dropped.
    fn post_run(&self, run: &Run<'_>) -> usize {
        let n = run.len() as u64;
        let first = self.ctl.tail.fetch_add(n, Ordering::Relaxed);
        let mut accepted = 0;
        for i in 0..n {
            if let Some(slot) = self.slots.get((first + i) as usize) {
                slot.write(&run.record(i as usize));
                slot.seq.store(COMMITTED, Ordering::Release);
                accepted += 1;
            }
        }
        accepted
    }

    /// Saves the events kept, in order, then a hoops record for the drops. On
    /// failure the events stay in the queue (counted as queued) and the error
    /// is also in [`Queue::status`]; a later call tries again. Once saved,
    /// later calls do nothing (the file is kept as written).
    /// Creates the file the queue saves to (directory and header), so a
    /// bad directory is an error of phase 2. Until the save, the file reads
    /// as cut short.
    fn activate(&self, ctx: &QueueContext) -> Result<(), ConfigError> {
        self.slots.fault_in(|s| {
            s.seq.fetch_add(0, Ordering::Relaxed);
        });
        // From now on snapshots list every class defined in phase 1.
        self.ctx.update(ctx);
        create_at_activate(&self.file, ctx, self.compact)
    }

    fn terminate(&self, ctx: &QueueContext) -> Result<(), ConfigError> {
        if self.saved.load(std::sync::atomic::Ordering::Acquire) {
            return Ok(());
        }
        let (records, end) = self.records(COMMITTED, Some(SAVED));
        self.delivered
            .fetch_add(records.len() as u64, Ordering::Relaxed);
        let events = with_hoops(&records, end, ctx.handle, || ctx.clock.now());
        // The counters as they are once this save succeeds (delivered is
        // already counted above).
        let result = write_trace(
            &self.file,
            ctx,
            &events,
            self.counters().into(),
            self.compact,
        );
        if result.is_err() {
            for r in &records {
                self.slots[r.ticket as usize]
                    .seq
                    .store(COMMITTED, Ordering::Relaxed);
            }
            self.delivered
                .fetch_sub(records.len() as u64, Ordering::Relaxed);
        } else {
            self.saved.store(true, std::sync::atomic::Ordering::Release);
            // The trace file holds everything now (see `CircularQueue`).
            let _ = self.mem.remove_file();
        }
        self.status.record(&self.file, result)
    }

    fn counters(&self) -> QueueCounters {
        let tickets = self.ctl.tail.load(Ordering::Relaxed);
        let accepted = tickets.min(self.slots.len() as u64);
        let delivered = self.delivered.load(Ordering::Relaxed);
        QueueCounters {
            accepted,
            dropped: tickets - accepted,
            overwritten: 0,
            delivered,
            queued: accepted.saturating_sub(delivered),
        }
    }

    fn status(&self) -> QueueStatus {
        self.status.get()
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    //! `RUSTFLAGS="--cfg loom" cargo test --release --lib loom`.
    use super::*;
    use crate::classes::{user, Catalog};
    use crate::model::clock::{Clock, ManualClock};
    use crate::model::handle::QueueHandle;
    use loom::sync::Arc;
    use loom::thread;

    #[test]
    fn loom_fixed_two_producers_and_a_reader() {
        // Bounded preemptions keep this under a minute; the ring's own loom
        // tests are exhaustive.
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let ctx = QueueContext {
                handle: QueueHandle(0),
                type_name: "fixed",
                output_dir: std::env::temp_dir(),
                catalog: std::sync::Arc::new(Catalog::builtin()),
                clock: Clock::manual(&ManualClock::new(0)),
                names: Default::default(),
            };
            let queue = match Fixed.create(
                FixedParams::default()
                    .with_capacity(3)
                    .with_ring(RingStorage::Memory),
                &ctx,
            ) {
                Ok(AnyQueue::FixedQueue(q)) => Arc::new(q),
                _ => unreachable!(),
            };
            let producers: Vec<_> = (0..2u64)
                .map(|t| {
                    let queue = Arc::clone(&queue);
                    thread::spawn(move || {
                        for s in 0..2 {
                            if let Some(r) = queue.get() {
                                queue.post(r, &Event::new(s, user::USER0, t as u32, [t, s]));
                            }
                        }
                    })
                })
                .collect();
            let check = |events: &[Event]| {
                for e in events.iter().filter(|e| e.id == user::USER0) {
                    assert_eq!((e.source as u64, e.time), (e.args[0], e.args[1]));
                }
            };
            check(&queue.snapshot_events());
            for p in producers {
                p.join().unwrap();
            }
            let events = queue.snapshot_events();
            check(&events);
            assert_eq!(events.len(), 4); // 3 kept + 1 hoops record
            assert_eq!(events[3].args, [1, 0]);
            let c = queue.counters();
            assert_eq!((c.accepted, c.dropped, c.queued), (3, 1, 3));
        });
    }
}
