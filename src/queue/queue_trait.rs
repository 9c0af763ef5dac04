//! The core's side of a queue: the [`Queue`] trait, its counters, context
//! and reservations. It imports no queue (the enum of built-in queues and
//! [`QueueType`](crate::queues::QueueType) live in [`crate::queues`]); users
//! reach all of it at [`qtrace::queue`](crate::queue), whose docs explain the
//! get/post protocol with an example.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::classes::Catalog;
use crate::model::clock::Clock;
use crate::model::combine::{RecordedNames, Run};
use crate::model::event::Event;
use crate::queue::config_error::ConfigError;

use crate::model::handle::QueueHandle;

// The reservation and the counters are the no_std core's: one definition
// serves the firmware rings and the std queues.
pub use qtrace_core::{AtomicCounters, QueueCounters, Reservation};

/// A queue's health, as its background task or hooks saw it.
///
/// ```
/// let tracer = qtrace::Tracer::new();
/// let q = tracer.create_queue::<qtrace::queues::Dummy>(())?;
/// let status: qtrace::queue::QueueStatus = tracer.status(q)?;
/// assert!(status.is_healthy());
/// assert!(status.files.is_empty());
/// # Ok::<(), qtrace::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueStatus {
    /// I/O operations (writes, sends) that failed.
    pub io_errors: u64,
    /// The last failure, in words.
    pub last_error: Option<String>,
    /// Files the queue wrote or is writing.
    pub files: Vec<PathBuf>,
    /// Snapshots on trigger that a rate limit suppressed (a trigger queue's
    /// count, [`crate::filters::TriggerQueue::suppressed`]; 0 for other
    /// queues). Counted, not an error: the limit was asked for.
    pub snapshots_suppressed: u64,
    /// Events that may be lost to a panic: a user-defined queue's `get`,
    /// `post` or `post_run` that panicked (counted by the tracer, see
    /// [`DynQueue`]; 0 for the built-in queues, whose get and post do not
    /// panic). Whether such an event was kept is unknown, so any count here
    /// makes the queue unhealthy and the shutdown report not clean.
    pub lost_to_panic: u64,
}

impl QueueStatus {
    /// No failure so far: no I/O error, no error noted, and no event that
    /// may be lost to a panic.
    pub fn is_healthy(&self) -> bool {
        self.io_errors == 0 && self.last_error.is_none() && self.lost_to_panic == 0
    }
}

/// What a queue's hooks are told about where they live.
///
/// ```
/// use qtrace::queue::QueueContext;
/// use qtrace::queues::{AnyQueue, DummyQueue, QueueType};
/// use qtrace::ConfigError;
///
/// /// A queue type that looks at where its queue lives.
/// struct Named;
/// impl QueueType for Named {
///     type Params = ();
///     const NAME: &'static str = "named";
///     fn create(&self, _: (), ctx: &QueueContext) -> Result<AnyQueue, ConfigError> {
///         assert_eq!(ctx.type_name, "named");
///         assert!(ctx.catalog.event_count() > 0);
///         Ok(AnyQueue::from(DummyQueue::default()))
///     }
/// }
/// let tracer = qtrace::Tracer::new();
/// tracer.register_queue_type(Named)?;
/// tracer.create_queue::<Named>(())?;
/// # Ok::<(), ConfigError>(())
/// ```
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
    /// The names the tracer recorded at run time, the newest per subject:
    /// a queue that saves a trace file writes them first (FORMAT.md 1.8,
    /// "Names prologue"), so the file names its sources, tasks and
    /// `tracing` callsites even where its ring overwrote their records.
    /// Shared: names recorded after the context was made are in it.
    pub names: Arc<RecordedNames>,
}

/// The get/post interface of a queue, plus its lifecycle hooks.
///
/// `get` and `post` are the hot path: bounded time, no blocking, no
/// allocation, callable from many threads at once. The hooks run on the
/// configuration path and may block, allocate and fail.
///
/// ```
/// use qtrace::queue::{AtomicCounters, Queue, QueueCounters, Reservation};
/// use qtrace::queues::AnyQueue;
/// use qtrace::Event;
///
/// /// Counts events and keeps none.
/// #[derive(Default)]
/// struct Counter(AtomicCounters);
/// impl Queue for Counter {
///     fn get(&self) -> Option<Reservation> {
///         Some(Reservation::new(0))
///     }
///     fn post(&self, _: Reservation, _: &Event) {
///         self.0.add_accepted(1);
///     }
///     fn counters(&self) -> QueueCounters {
///         self.0.snapshot()
///     }
/// }
/// let q = AnyQueue::custom(Counter::default());
/// let r = q.get().unwrap();
/// q.post(r, &Event::new(0, qtrace::EventId(0x0b), 0, [0, 0]));
/// assert_eq!(q.counters().accepted, 1);
/// ```
pub trait Queue: Send + Sync {
    /// Reserves room for one event, or returns `None` at once when there is
    /// none. A queue that returns `None` counts the event as dropped (for a
    /// user-defined queue the tracer also counts it: see [`DynQueue`]).
    fn get(&self) -> Option<Reservation>;

    /// Publishes `event` into the room `reservation` holds.
    fn post(&self, reservation: Reservation, event: &Event);

    /// Records a combine run ([`crate::model::combine`]): its `run.len()` records,
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
    ///
    /// # Errors
    ///
    /// Whatever stops the queue from recording: [`ConfigError::Io`] for a file or
    /// socket it cannot open, [`ConfigError::Hook`] for anything else (say what to
    /// do in the message). [`Tracer::activate`](crate::Tracer::activate) returns
    /// it.
    fn activate(&self, _ctx: &QueueContext) -> Result<(), ConfigError> {
        Ok(())
    }

    /// Shutdown: save, flush, stop tasks. Called once, after the tracer is
    /// suspended; late posts from threads still inside `log_event` must stay
    /// safe (and counted).
    ///
    /// # Errors
    ///
    /// What failed while saving or flushing ([`ConfigError::Io`],
    /// [`ConfigError::Hook`]); the shutdown report shows it in the queue's entry
    /// and the other queues still terminate.
    fn terminate(&self, _ctx: &QueueContext) -> Result<(), ConfigError> {
        Ok(())
    }

    /// What the queue did with its events so far.
    fn counters(&self) -> QueueCounters;

    /// Health and output files.
    fn status(&self) -> QueueStatus {
        QueueStatus::default()
    }
}

/// A [`Queue`] that can also be seen as [`Any`](std::any::Any), so that
/// [`AnyQueue::as_custom`](crate::queues::AnyQueue::as_custom) can give a user-defined queue back as its own type.
/// Every `Queue + 'static` type implements it: there is nothing to write.
///
/// ```
/// use qtrace::queue::{CustomQueue, Queue, QueueCounters, Reservation};
/// use qtrace::Event;
///
/// struct Nothing;
/// impl Queue for Nothing {
///     fn get(&self) -> Option<Reservation> { None }
///     fn post(&self, _: Reservation, _: &Event) {}
///     fn counters(&self) -> QueueCounters { QueueCounters::default() }
/// }
/// let q: &dyn CustomQueue = &Nothing;
/// assert!(q.as_any().downcast_ref::<Nothing>().is_some());
/// ```
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
/// count of the events its `get` refused and of those its `get`, `post` or
/// `post_run` panicked on (build it with [`AnyQueue::custom`](crate::queues::AnyQueue::custom);
/// get the concrete type back with [`AnyQueue::as_custom`](crate::queues::AnyQueue::as_custom)).
///
/// A `None` from a user queue's [`Queue::get`] is a lost event whatever the
/// queue counts itself: the tracer counts it here (only this path pays; the
/// built-in queues' hot paths are unchanged), and [`Queue::counters`] reports
/// `dropped` as the larger of the queue's own count and the tracer's. A queue
/// whose own count is lower than the tracer's is under-reporting: its
/// [`Queue::status`] says so, which makes the shutdown report not clean.
///
/// A panic in the user queue's `get`, `post` or `post_run` still unwinds
/// to the caller of [`Tracer::log_event`](crate::Tracer::log_event) (the
/// tracer does not hide a bug), but on its way the tracer counts the events
/// involved as *lost to a panic* (one for `get` or `post`, the run's length
/// for `post_run`: whether the queue kept any of them is unknown).
/// [`QueueStatus::lost_to_panic`] carries the count and `last_error` says
/// it, so the shutdown report is not clean. The count costs nothing until a
/// panic: a guard armed before the call is forgotten after it.
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
    panicked: AtomicU64,
}

/// Adds `n` to a counter if dropped, i.e. if the call it guards unwound
/// (forgotten when the call returns).
struct OnUnwind<'a> {
    counter: &'a AtomicU64,
    n: u64,
}

impl Drop for OnUnwind<'_> {
    #[cold]
    fn drop(&mut self) {
        self.counter.fetch_add(self.n, Ordering::Relaxed);
    }
}

impl DynQueue {
    /// Wraps a user-defined queue.
    ///
    /// ```
    /// use qtrace::queue::{DynQueue, Queue, QueueCounters, Reservation};
    /// use qtrace::Event;
    ///
    /// struct Nothing;
    /// impl Queue for Nothing {
    ///     fn get(&self) -> Option<Reservation> { None }
    ///     fn post(&self, _: Reservation, _: &Event) {}
    ///     fn counters(&self) -> QueueCounters { QueueCounters::default() }
    /// }
    /// assert_eq!(DynQueue::new(Nothing).refused(), 0);
    /// ```
    pub fn new(queue: impl Queue + 'static) -> Self {
        DynQueue {
            inner: Box::new(queue),
            refused: AtomicU64::new(0),
            panicked: AtomicU64::new(0),
        }
    }

    /// Events that may be lost because the queue's `get`, `post` or
    /// `post_run` panicked while handling them, as the tracer counted them.
    ///
    /// ```
    /// use qtrace::queue::{DynQueue, Queue, QueueCounters, Reservation};
    /// use qtrace::Event;
    ///
    /// struct Broken;
    /// impl Queue for Broken {
    ///     fn get(&self) -> Option<Reservation> { Some(Reservation::new(0)) }
    ///     fn post(&self, _: Reservation, _: &Event) { panic!("bug") }
    ///     fn counters(&self) -> QueueCounters { QueueCounters::default() }
    /// }
    /// let q = DynQueue::new(Broken);
    /// let r = q.get().unwrap();
    /// let e = Event::new(0, qtrace::EventId(0x0b), 0, [0, 0]);
    /// assert!(std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| q.post(r, &e))).is_err());
    /// assert_eq!(q.lost_to_panic(), 1);
    /// assert_eq!(q.status().lost_to_panic, 1);
    /// assert!(!q.status().is_healthy());
    /// ```
    pub fn lost_to_panic(&self) -> u64 {
        self.panicked.load(Ordering::Relaxed)
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
            .field("lost_to_panic", &self.lost_to_panic())
            .finish_non_exhaustive()
    }
}

// `get` and `post` out of line: their unwind guards (landing pads) inlined
// into the tracer's `record`, which holds every queue kind's arm, cost the
// circular queue's hot path 1/8 instruction per event
// (`scripts/instructions.sh`: 28.88 instead of 28.76 besides the clock); a
// user queue pays one direct call beside its virtual one.
impl Queue for DynQueue {
    #[inline(never)]
    fn get(&self) -> Option<Reservation> {
        let guard = OnUnwind {
            counter: &self.panicked,
            n: 1,
        };
        let r = self.inner.get();
        std::mem::forget(guard);
        if r.is_none() {
            self.refused.fetch_add(1, Ordering::Relaxed);
        }
        r
    }
    #[inline(never)]
    fn post(&self, reservation: Reservation, event: &Event) {
        let guard = OnUnwind {
            counter: &self.panicked,
            n: 1,
        };
        self.inner.post(reservation, event);
        std::mem::forget(guard);
    }
    /// The user queue's own `post_run`; records it did not accept count
    /// as refused, and all of the run's records as lost to a panic if it
    /// panics.
    fn post_run(&self, run: &Run<'_>) -> usize {
        let guard = OnUnwind {
            counter: &self.panicked,
            n: run.len() as u64,
        };
        let accepted = self.inner.post_run(run);
        std::mem::forget(guard);
        if accepted < run.len() {
            self.refused
                .fetch_add((run.len() - accepted) as u64, Ordering::Relaxed);
        }
        accepted
    }
    fn activate(&self, ctx: &QueueContext) -> Result<(), ConfigError> {
        self.inner.activate(ctx)
    }
    fn terminate(&self, ctx: &QueueContext) -> Result<(), ConfigError> {
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
    /// `last_error` saying so; the events lost to a panic, and a
    /// `last_error` saying so.
    fn status(&self) -> QueueStatus {
        let mut s = self.inner.status();
        let panicked = self.lost_to_panic();
        if panicked > 0 {
            s.lost_to_panic += panicked;
            let note = format!(
                "the queue's get, post or post_run panicked on {panicked} events, which may be lost (whether the queue kept them is unknown): fix the panic in the queue's code"
            );
            s.last_error = Some(match s.last_error {
                Some(e) => format!("{e}; {note}"),
                None => note,
            });
        }
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
