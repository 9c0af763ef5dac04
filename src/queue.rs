//! The queue trait (S.Ha.R.K.'s `trc_queue_t { get, post }`), queue types with
//! their create / activate / terminate hooks, and the counters every queue keeps.
//!
//! A queue decides the fate of the events routed to it. The tracer calls
//! [`Queue::get`] to reserve room for one event — the queue answers at once,
//! with a [`Reservation`] or with `None` ("no room", which the queue counts as a
//! drop) — then fills the record and calls [`Queue::post`] to publish it.
//! Both run on the hot path, from any thread, and must never block or allocate.
//!
//! Built-in queues are dispatched statically through the [`AnyQueue`] enum; a
//! user-defined queue (safe code is enough) is wrapped with
//! [`AnyQueue::custom`] and reached through one virtual call.
//!
//! ```
//! use qtrace::queue::{AtomicCounters, Queue, QueueCounters, Reservation};
//! use qtrace::Event;
//! use std::sync::atomic::{AtomicU64, Ordering};
//!
//! /// Keeps only the most recent event's time.
//! #[derive(Default)]
//! struct Latest { time: AtomicU64, counters: AtomicCounters }
//!
//! impl Queue for Latest {
//!     fn get(&self) -> Option<Reservation> {
//!         Some(Reservation::new(0))
//!     }
//!     fn post(&self, _r: Reservation, event: &Event) {
//!         // The previous value is evicted: count it so nothing is lost silently.
//!         if self.time.swap(event.time, Ordering::Relaxed) != 0 {
//!             self.counters.add_overwritten(1);
//!         }
//!         self.counters.add_accepted(1);
//!     }
//!     fn counters(&self) -> QueueCounters {
//!         let mut c = self.counters.snapshot();
//!         c.queued = c.accepted - c.overwritten;
//!         c
//!     }
//! }
//! ```

use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::classes::Catalog;
use crate::clock::Clock;
use crate::combine::Run;
use crate::error::Error;
use crate::event::Event;

pub use crate::queues::AnyQueue;

/// A queue's handle: 0, 1, 2, … in creation order, as in S.Ha.R.K.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct QueueHandle(pub u16);

impl QueueHandle {
    /// The largest number of queues a tracer holds.
    pub const MAX_QUEUES: usize = 256;

    /// The handle as an index.
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for QueueHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Room for one event, handed out by [`Queue::get`] and consumed by
/// [`Queue::post`]. The number inside is the queue's own business (a slot
/// index, a ticket); the tracer only carries it from `get` to `post`.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a reservation must be posted"]
pub struct Reservation(u64);

impl Reservation {
    /// A reservation carrying `ticket`.
    #[inline(always)]
    pub const fn new(ticket: u64) -> Self {
        Reservation(ticket)
    }

    /// The ticket given to [`Reservation::new`].
    #[inline(always)]
    pub const fn ticket(&self) -> u64 {
        self.0
    }
}

/// What a queue has done with the events routed to it.
///
/// Invariants every queue keeps (checked by [`QueueCounters::is_consistent`]):
/// `attempts = accepted + dropped` and
/// `accepted = delivered + overwritten + queued`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueCounters {
    /// Events the queue took in.
    pub accepted: u64,
    /// Events refused because there was no room (the queue was full or busy).
    pub dropped: u64,
    /// Accepted events later evicted to make room for newer ones.
    pub overwritten: u64,
    /// Accepted events handed on: written to a file, sent, or discarded on
    /// purpose (the dummy queue delivers to nowhere).
    pub delivered: u64,
    /// Accepted events still held by the queue.
    pub queued: u64,
}

impl QueueCounters {
    /// The counters of a queue that takes every event and hands it on at
    /// once (the dummy queue, a queue that forwards): `n` accepted, `n`
    /// delivered, nothing dropped, overwritten or queued.
    ///
    /// ```
    /// let c = qtrace::QueueCounters::all_delivered(3);
    /// assert_eq!((c.accepted, c.delivered, c.queued), (3, 3, 0));
    /// assert!(c.is_consistent());
    /// ```
    pub fn all_delivered(n: u64) -> Self {
        QueueCounters {
            accepted: n,
            delivered: n,
            ..QueueCounters::default()
        }
    }

    /// Every event routed to the queue.
    pub fn attempts(&self) -> u64 {
        self.accepted + self.dropped
    }

    /// Events lost: dropped plus overwritten.
    pub fn lost(&self) -> u64 {
        self.dropped + self.overwritten
    }

    /// Whether `accepted = delivered + overwritten + queued`.
    pub fn is_consistent(&self) -> bool {
        self.accepted == self.delivered + self.overwritten + self.queued
    }
}

/// Counters for queue implementations: relaxed atomic adds, summed on demand.
#[derive(Debug, Default)]
pub struct AtomicCounters {
    accepted: AtomicU64,
    dropped: AtomicU64,
    overwritten: AtomicU64,
    delivered: AtomicU64,
}

impl AtomicCounters {
    /// Counts `n` accepted events.
    #[inline]
    pub fn add_accepted(&self, n: u64) {
        self.accepted.fetch_add(n, Ordering::Relaxed);
    }
    /// Counts `n` dropped events.
    #[inline]
    pub fn add_dropped(&self, n: u64) {
        self.dropped.fetch_add(n, Ordering::Relaxed);
    }
    /// Counts `n` overwritten events.
    #[inline]
    pub fn add_overwritten(&self, n: u64) {
        self.overwritten.fetch_add(n, Ordering::Relaxed);
    }
    /// Counts `n` delivered events.
    #[inline]
    pub fn add_delivered(&self, n: u64) {
        self.delivered.fetch_add(n, Ordering::Relaxed);
    }
    /// The current values, with `queued = accepted - delivered - overwritten`.
    pub fn snapshot(&self) -> QueueCounters {
        let accepted = self.accepted.load(Ordering::Relaxed);
        let dropped = self.dropped.load(Ordering::Relaxed);
        let overwritten = self.overwritten.load(Ordering::Relaxed);
        let delivered = self.delivered.load(Ordering::Relaxed);
        QueueCounters {
            accepted,
            dropped,
            overwritten,
            delivered,
            queued: accepted.saturating_sub(delivered + overwritten),
        }
    }
}

/// A queue's health, as its background task or hooks saw it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueStatus {
    /// I/O operations (writes, sends) that failed.
    pub io_errors: u64,
    /// The last failure, in words.
    pub last_error: Option<String>,
    /// Files the queue wrote or is writing.
    pub files: Vec<PathBuf>,
    /// Snapshots on trigger that a rate limit suppressed (a trigger queue's
    /// count, [`crate::queues::TriggerQueue::suppressed`]; 0 for other
    /// queues). Counted, not an error: the limit was asked for.
    pub snapshots_suppressed: u64,
}

impl QueueStatus {
    /// No failure so far.
    pub fn is_healthy(&self) -> bool {
        self.io_errors == 0 && self.last_error.is_none()
    }
}

/// What a queue's hooks are told about where they live.
#[derive(Clone, Debug)]
pub struct QueueContext {
    /// This queue's handle.
    pub handle: QueueHandle,
    /// The registered name of its type.
    pub type_name: &'static str,
    /// Where the tracer puts files unless a queue is told otherwise.
    pub output_dir: PathBuf,
    /// Every class and event the tracer knows (for self-describing files).
    pub catalog: Arc<Catalog>,
    /// The tracer's clock (for timestamps the queue writes itself, such as
    /// hoops records).
    pub clock: Clock,
}

/// The get/post interface of a queue, plus its lifecycle hooks.
///
/// `get` and `post` are the hot path: bounded time, no blocking, no
/// allocation, callable from many threads at once. The hooks run on the
/// configuration path and may block, allocate and fail.
pub trait Queue: Send + Sync {
    /// Reserves room for one event, or returns `None` at once when there is
    /// none. A queue that returns `None` counts the event as dropped (for a
    /// user-defined queue the tracer also counts it: see [`DynQueue`]).
    fn get(&self) -> Option<Reservation>;

    /// Publishes `event` into the room `reservation` holds.
    fn post(&self, reservation: Reservation, event: &Event);

    /// Records a combine run ([`crate::combine`]): its `run.len()` records,
    /// reserved together so they are consecutive in the queue, and returns
    /// how many were accepted (the rest are counted dropped). Not the
    /// fixed-size hot path: [`crate::Tracer::log_str`] and friends call it.
    ///
    /// The built-in queues reserve the whole run at once (a queue that has
    /// no room for all of it keeps the records that fit, and readers show
    /// the run as cut). This default, for user-defined queues, reserves and
    /// posts the records one by one with [`Queue::get`] and [`Queue::post`]:
    /// records of runs logged at once by several threads may then
    /// interleave, which readers handle (they reassemble per source).
    fn post_run(&self, run: &Run<'_>) -> usize {
        let mut accepted = 0;
        for i in 0..run.len() {
            if let Some(r) = self.get() {
                self.post(r, &run.record(i));
                accepted += 1;
            }
        }
        accepted
    }

    /// Phase 2: start tasks, open files and sockets. Events may already have
    /// been posted (they were logged between phase 1 and phase 2).
    fn activate(&self, _ctx: &QueueContext) -> Result<(), Error> {
        Ok(())
    }

    /// Shutdown: save, flush, stop tasks. Called once, after the tracer is
    /// suspended; late posts from threads still inside `log_event` must stay
    /// safe (and counted).
    fn terminate(&self, _ctx: &QueueContext) -> Result<(), Error> {
        Ok(())
    }

    /// What the queue did with its events so far.
    fn counters(&self) -> QueueCounters;

    /// Health and output files.
    fn status(&self) -> QueueStatus {
        QueueStatus::default()
    }
}

/// A queue type (S.Ha.R.K.'s `trc_register_queue_type`): a name, typed
/// parameters and the `create` hook. The `activate` and `terminate` hooks are
/// methods of the queue it creates.
///
/// A value of the type is registered with
/// [`Tracer::register_queue_type`](crate::Tracer::register_queue_type), so a
/// type may carry state its queues share (a channel, a directory).
pub trait QueueType: Send + Sync + 'static {
    /// Parameters of one queue; `Default` gives the documented defaults.
    type Params;
    /// The type's name, for reports and errors.
    const NAME: &'static str;
    /// The create hook: build a queue from parameters. Allocation happens here,
    /// never on the hot path.
    fn create(&self, params: Self::Params, ctx: &QueueContext) -> Result<AnyQueue, Error>;
}

/// A [`Queue`] that can also be seen as [`Any`](std::any::Any), so that
/// [`AnyQueue::as_custom`] can give a user-defined queue back as its own type.
/// Every `Queue + 'static` type implements it: there is nothing to write.
pub trait CustomQueue: Queue + std::any::Any {
    /// `self`, to downcast with `<dyn Any>::downcast_ref`.
    fn as_any(&self) -> &dyn std::any::Any;
}

impl<T: Queue + std::any::Any> CustomQueue for T {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A user-defined queue behind one virtual call, with the tracer's own
/// count of the events its `get` refused (build it with [`AnyQueue::custom`];
/// get the concrete type back with [`AnyQueue::as_custom`]).
///
/// A `None` from a user queue's [`Queue::get`] is a lost event whatever the
/// queue counts itself: the tracer counts it here (only this path pays; the
/// built-in queues' hot paths are unchanged), and [`Queue::counters`] reports
/// `dropped` as the larger of the queue's own count and the tracer's. A queue
/// whose own count is lower than the tracer's is under-reporting: its
/// [`Queue::status`] says so, which makes the shutdown report not clean.
///
/// ```
/// use qtrace::queue::{DynQueue, Queue, QueueCounters, Reservation};
/// use qtrace::Event;
///
/// /// Refuses everything and counts nothing.
/// struct Closed;
/// impl Queue for Closed {
///     fn get(&self) -> Option<Reservation> { None }
///     fn post(&self, _: Reservation, _: &Event) {}
///     fn counters(&self) -> QueueCounters { QueueCounters::default() }
/// }
///
/// let q = DynQueue::new(Closed);
/// assert!(q.get().is_none());
/// assert_eq!(q.refused(), 1);
/// assert_eq!(q.counters().dropped, 1);
/// assert!(!q.status().is_healthy());
/// ```
pub struct DynQueue {
    inner: Box<dyn CustomQueue>,
    refused: AtomicU64,
}

impl DynQueue {
    /// Wraps a user-defined queue.
    pub fn new(queue: impl Queue + 'static) -> Self {
        DynQueue {
            inner: Box::new(queue),
            refused: AtomicU64::new(0),
        }
    }

    /// Events the queue's `get` refused (returned `None`), as the tracer
    /// counted them.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// The user's queue.
    pub fn inner(&self) -> &dyn CustomQueue {
        &*self.inner
    }
}

impl std::fmt::Debug for DynQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynQueue")
            .field("refused", &self.refused())
            .finish_non_exhaustive()
    }
}

impl Queue for DynQueue {
    #[inline]
    fn get(&self) -> Option<Reservation> {
        let r = self.inner.get();
        if r.is_none() {
            self.refused.fetch_add(1, Ordering::Relaxed);
        }
        r
    }
    #[inline]
    fn post(&self, reservation: Reservation, event: &Event) {
        self.inner.post(reservation, event)
    }
    /// The user queue's own `post_run`; records it did not accept count
    /// as refused.
    fn post_run(&self, run: &Run<'_>) -> usize {
        let accepted = self.inner.post_run(run);
        if accepted < run.len() {
            self.refused
                .fetch_add((run.len() - accepted) as u64, Ordering::Relaxed);
        }
        accepted
    }
    fn activate(&self, ctx: &QueueContext) -> Result<(), Error> {
        self.inner.activate(ctx)
    }
    fn terminate(&self, ctx: &QueueContext) -> Result<(), Error> {
        self.inner.terminate(ctx)
    }
    /// The queue's counters, with `dropped` at least what the tracer counted
    /// refused.
    fn counters(&self) -> QueueCounters {
        let mut c = self.inner.counters();
        c.dropped = c.dropped.max(self.refused());
        c
    }
    /// The queue's status; if its own drop count is below the tracer's, a
    /// `last_error` saying so.
    fn status(&self) -> QueueStatus {
        let mut s = self.inner.status();
        let (refused, own) = (self.refused(), self.inner.counters().dropped);
        if refused > own {
            let note = format!(
                "the queue's get refused {refused} events but its counters show {own} dropped: the tracer counts all {refused} as dropped"
            );
            s.last_error = Some(match s.last_error {
                Some(e) => format!("{e}; {note}"),
                None => note,
            });
        }
        s
    }
}
