//! Triggers (Barrelfish's start/stop triggers, LTTng's "snapshot on
//! event"): when a chosen event is logged — optionally only from its n-th
//! occurrence on, optionally only when a [`Filter`] keeps it — start or stop
//! recording (for one queue or for the whole tracer), or save the last N
//! events of a circular queue to a new file.
//!
//! [`Tracer::add_trigger`](crate::Tracer::add_trigger) routes the event
//! through a [`TriggerQueue`] (a queue of its own, in the next free queue
//! slot), which counts it, fires, and forwards it to where it went before
//! (its filter, its queue's gate, its queue). Events without a trigger take
//! exactly the path they took before: the hot path has no test for
//! triggers.
//!
//! What runs on the logging thread when a trigger fires is O(1) and never
//! blocks:
//!
//! - **start / stop**: one store to a recording flag that the
//!   [`GateQueue`] in front of the scope's queues
//!   reads. A start trigger switches recording on *before* its event is
//!   forwarded and a stop trigger switches it off *after*, so both trigger
//!   events are recorded: they mark, in the trace, where recording started
//!   and stopped. Events masked while recording is off are not lost and no
//!   hoops record stands for them (see [`crate::filters::gate`]).
//! - **snapshot**: the event is forwarded first (so it is in the snapshot
//!   when it is routed to the snapshot's queue),
//!   then the rate limit is checked against the event's time, the request
//!   is stored in one atomic word and the trigger's task is woken. The task
//!   — never the logging thread — reads the circular queue while producers
//!   keep logging and writes the last [`Snapshot::last`] events up to the
//!   trigger event (all rings merged by time; events logged after it stay
//!   out) to a new, complete trace file: header, records, hoops records for
//!   what the ring had already overwritten, close run. Files are named in
//!   order next to the queue's trace file: `queue0-circular-snap-0001.qtr`,
//!   `…-0002.qtr`, … A trigger that fires while a snapshot is still
//!   pending, sooner than [`Snapshot::min_interval`] after the last one
//!   granted, or after [`Snapshot::max_files`] files, is *suppressed*:
//!   counted ([`TriggerQueue::suppressed`], and the trigger's
//!   [`QueueStatus::snapshots_suppressed`] in the shutdown report), never
//!   silently skipped. `fired = written + suppressed + failed` once the
//!   task is idle (failed writes are I/O errors in the trigger's status).
//!
//! Triggers see their event whether recording is on or off (a start
//! trigger must): the gates are behind them. An event has at most one
//! trigger; log a second event next to it for a second action.
//!
//! A request still pending at shutdown is written before any queue
//! terminates. Counters: a trigger queue accepts and delivers every event
//! routed to it (`accepted = delivered`); [`TriggerQueue::seen`] counts
//! those its condition kept, [`TriggerQueue::fired`] those it fired on.
//!
//! ```
//! # let _cwd = tempfile::tempdir().unwrap(); std::env::set_current_dir(_cwd.path()).unwrap(); // own directory: doc tests run in parallel
//! use qtrace::classes::user;
//! use qtrace::queues::{Fixed, FixedParams};
//! use qtrace::filters::{Scope, Trigger};
//! use qtrace::Tracer;
//!
//! let tracer = Tracer::new();
//! let q = tracer.create_queue::<Fixed>(FixedParams::default().with_capacity(16))?;
//! tracer.assign_class(user::CLASS, q)?;
//! // Recording of queue q starts at the second USER1 event.
//! tracer.add_trigger(user::USER1, Trigger::start(Scope::Queue(q)).after(2))?;
//! for i in 0..4 {
//!     tracer.log_event(user::USER0, [i, 0]);
//!     tracer.log_event(user::USER1, [i, 0]);
//! }
//! let kept: Vec<(u16, u64)> = tracer.queue(q)?.as_fixed().unwrap()
//!     .snapshot_events().iter().map(|e| (e.id.0, e.args[0])).collect();
//! let (u0, u1) = (user::USER0.0, user::USER1.0);
//! assert_eq!(kept, [(u1, 1), (u0, 2), (u1, 2), (u0, 3), (u1, 3)]);
//! # Ok::<(), qtrace::Error>(())
//! ```

use std::fmt;

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::filters::filter::{Filter, FilterQueue};
use crate::filters::gate::GateQueue;
use crate::filters::snapshot::{SnapWork, Snapper, Snapshot};
use crate::model::combine::Run;
use crate::model::event::Event;
use crate::model::handle::QueueHandle;
use crate::queue::config_error::ConfigError;
use crate::queue::{Queue, QueueContext, QueueCounters, QueueStatus};
use crate::queues::drained::task::{Task, TaskControl};
use crate::queues::AnyQueue;
use crate::queues::CircularQueue;

/// Where a start or stop trigger switches recording.
///
/// ```
/// use qtrace::filters::{Scope, Trigger};
///
/// let tracer = qtrace::Tracer::new();
/// let q = tracer.create_queue::<qtrace::queues::Dummy>(())?;
/// tracer.add_trigger(qtrace::classes::user::USER7, Trigger::start(Scope::Queue(q)))?;
/// assert!(tracer.is_recording(Scope::Global)?);
/// # Ok::<(), qtrace::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every queue that records events (created before or after the
    /// trigger).
    Global,
    /// One queue (the handle [`Tracer::create_queue`](crate::Tracer::create_queue)
    /// returned).
    Queue(QueueHandle),
}

/// What a trigger does when it fires.
///
/// ```
/// use qtrace::filters::{Action, Scope, Trigger};
///
/// let stop = Trigger::stop(Scope::Global);
/// assert!(matches!(stop.action(), Action::Stop(Scope::Global)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Switch recording on.
    Start(Scope),
    /// Switch recording off.
    Stop(Scope),
    /// Save the last events of a circular queue to a new file.
    Snapshot(Snapshot),
}

/// A trigger: an [`Action`], from which occurrence of its event on it
/// fires, and an optional condition. Attach it to an event with
/// [`Tracer::add_trigger`](crate::Tracer::add_trigger); see the
/// [module documentation](crate::filters).
///
/// The first trigger added for a scope decides how recording starts there:
/// off when it is a start trigger, on when it is a stop trigger. Later
/// triggers share that scope's state (a start trigger on one event and a
/// stop trigger on another switch the same recording on and off).
///
/// ```
/// use qtrace::filters::{Filter, Scope, Trigger};
///
/// // Start recording at the third event whose argument 0 is 7.
/// let start = Trigger::start(Scope::Global).after(3).when(Filter::arg(0, 7..=7));
/// assert_eq!(start.count(), 3);
/// ```
#[derive(Clone, Debug)]
pub struct Trigger {
    action: Action,
    after: u64,
    when: Option<Filter>,
}

impl Trigger {
    /// Starts recording in `scope` when it fires; recording there is off
    /// until then (if this is the scope's first trigger).
    pub fn start(scope: Scope) -> Self {
        Trigger::new(Action::Start(scope))
    }

    /// Stops recording in `scope` when it fires.
    pub fn stop(scope: Scope) -> Self {
        Trigger::new(Action::Stop(scope))
    }

    /// Saves a snapshot when it fires.
    pub fn snapshot(snapshot: Snapshot) -> Self {
        Trigger::new(Action::Snapshot(snapshot))
    }

    /// A trigger doing `action`, from the first occurrence, on every event.
    ///
    /// ```
    /// use qtrace::filters::{Action, Scope, Trigger};
    /// let t = Trigger::new(Action::Start(Scope::Global));
    /// assert_eq!(t.count(), 1);
    /// ```
    pub fn new(action: Action) -> Self {
        Trigger {
            action,
            after: 1,
            when: None,
        }
    }

    /// Fires at the `n`-th occurrence of its event (counting only those
    /// [`Trigger::when`] keeps) and at every one after it; default 1.
    /// `n = 0` is refused by [`Tracer::add_trigger`](crate::Tracer::add_trigger).
    pub fn after(mut self, n: u64) -> Self {
        self.after = n;
        self
    }

    /// Counts (and fires on) only the events `condition` keeps: a built-in
    /// [`Filter`] or a handler's verdict ([`Filter::handler`], which runs on
    /// the logging thread; a panic in it counts as "not kept").
    pub fn when(mut self, condition: Filter) -> Self {
        self.when = Some(condition);
        self
    }

    /// The action.
    pub fn action(&self) -> &Action {
        &self.action
    }

    /// The occurrence it first fires at.
    pub fn count(&self) -> u64 {
        self.after
    }

    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        if self.after == 0 {
            return Err(ConfigError::InvalidParameter {
                queue_type: TriggerQueue::NAME,
                reason: "Trigger::after(0): occurrences count from 1; use after(1) (the default) to fire at the first".into(),
            });
        }
        match &self.when {
            Some(f) => f.validate(),
            None => Ok(()),
        }
    }
}

/// Where a trigger queue forwards its event: a pointer into the tracer's
/// queue table, null for nowhere.
type Next = AtomicPtr<AnyQueue>;

/// A queue that counts its event, fires its [`Trigger`] and forwards the
/// event (see the [module documentation](crate::filters)). Made by
/// [`Tracer::add_trigger`](crate::Tracer::add_trigger); reach it with
/// `tracer.queue(handle)?.as_custom::<TriggerQueue>()`.
///
/// ```
/// use qtrace::classes::user;
/// use qtrace::filters::{Scope, Trigger, TriggerQueue};
///
/// let tracer = qtrace::Tracer::new();
/// let t = tracer.add_trigger(user::USER7, Trigger::stop(Scope::Global).after(2))?;
/// for _ in 0..3 {
///     tracer.log_event(user::USER7, [0, 0]);
/// }
/// let trigger = tracer.queue(t)?.as_custom::<TriggerQueue>().unwrap();
/// assert_eq!(trigger.seen(), 3);
/// assert!(trigger.fired() >= 1);
/// # Ok::<(), qtrace::Error>(())
/// ```
pub struct TriggerQueue {
    trigger: Trigger,
    next: Next,
    /// The recording flag a start/stop trigger sets.
    flag: Option<Arc<AtomicBool>>,
    snapper: Option<Arc<Snapper>>,
    control: Arc<TaskControl>,
    task: Mutex<Option<Task>>,
    /// Set once the task is stopped (or, never started, stood in for):
    /// later requests are counted suppressed at terminate.
    stopped: AtomicBool,
    /// Records routed through when the trigger has a condition; without
    /// one, only the records of combine runs past their first (`seen`
    /// counts the rest: one atomic add less per event).
    accepted: AtomicU64,
    seen: AtomicU64,
    panicked: AtomicU64,
}

impl TriggerQueue {
    /// The type name in reports.
    pub const NAME: &'static str = "trigger";

    /// A trigger for a start/stop action switching `flag`, or for a
    /// snapshot of `circular` (whose context is `ctx`).
    ///
    /// # Safety
    ///
    /// `circular` must stay valid, at the same address, until the trigger's
    /// task is stopped ([`TriggerQueue::stop_task`]): a queue in the
    /// tracer's queue table, whose slots are set once and never moved or
    /// cleared, with the task stopped at shutdown. Every target given to
    /// [`TriggerQueue::retarget`] must be in that table too.
    pub(crate) unsafe fn new(
        trigger: Trigger,
        flag: Option<Arc<AtomicBool>>,
        circular: Option<(&CircularQueue, QueueContext)>,
    ) -> Self {
        let snapper = match (&trigger.action, circular) {
            (Action::Snapshot(s), Some((queue, ctx))) => {
                Some(Arc::new(Snapper::new(s, queue, ctx)))
            }
            _ => None,
        };
        TriggerQueue {
            trigger,
            next: AtomicPtr::new(std::ptr::null_mut()),
            flag,
            snapper,
            control: TaskControl::new(),
            task: Mutex::new(None),
            stopped: AtomicBool::new(false),
            accepted: AtomicU64::new(0),
            seen: AtomicU64::new(0),
            panicked: AtomicU64::new(0),
        }
    }

    /// Forwards to `next` from now on (`None`: the event goes nowhere else).
    ///
    /// # Safety
    ///
    /// As for [`TriggerQueue::new`].
    pub(crate) unsafe fn retarget(&self, next: Option<&AnyQueue>) {
        let p = next.map_or(std::ptr::null_mut(), |q| q as *const AnyQueue as *mut _);
        self.next.store(p, Ordering::Release);
    }

    fn forward(&self, event: &Event) {
        let p = self.next.load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: the contract of `retarget`: a queue of the table.
            let next = unsafe { &*p };
            if let Some(r) = next.get() {
                next.post(r, event);
            }
        }
    }

    /// The trigger.
    pub fn trigger(&self) -> &Trigger {
        &self.trigger
    }

    /// Events its condition kept (all events of its event without one).
    pub fn seen(&self) -> u64 {
        self.seen.load(Ordering::Relaxed)
    }

    /// Times it fired: `seen - (after - 1)` once past the count.
    pub fn fired(&self) -> u64 {
        self.seen().saturating_sub(self.trigger.after - 1)
    }

    /// Events routed through the trigger.
    fn accepted(&self) -> u64 {
        match self.trigger.when {
            Some(_) => self.accepted.load(Ordering::Relaxed),
            None => self.seen() + self.accepted.load(Ordering::Relaxed),
        }
    }

    /// Snapshot files written.
    pub fn written(&self) -> u64 {
        self.snapper
            .as_ref()
            .map_or(0, |s| s.written.load(Ordering::Relaxed))
    }

    /// Snapshots suppressed by the rate limit (see the
    /// [module documentation](crate::filters)).
    pub fn suppressed(&self) -> u64 {
        self.snapper
            .as_ref()
            .map_or(0, |s| s.suppressed.load(Ordering::Relaxed))
    }

    /// Snapshots that failed to write (I/O errors, also in its status).
    pub fn failed(&self) -> u64 {
        self.snapper
            .as_ref()
            .map_or(0, |s| s.failed.load(Ordering::Relaxed))
    }

    /// Whether a snapshot request waits for the task.
    pub fn is_pending(&self) -> bool {
        self.snapper
            .as_ref()
            .is_some_and(|s| s.pending.load(Ordering::Acquire) != 0)
    }

    /// Whether the condition keeps `event` and this occurrence fires.
    fn fires(&self, event: &Event, records: u64) -> bool {
        if self.trigger.when.is_some() {
            self.accepted.fetch_add(records, Ordering::Relaxed);
        } else if records > 1 {
            self.accepted.fetch_add(records - 1, Ordering::Relaxed);
        }
        if let Some(cond) = &self.trigger.when {
            let keep = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cond.keeps(event)));
            match keep {
                Ok(true) => {}
                Ok(false) => return false,
                Err(_) => {
                    self.panicked.fetch_add(1, Ordering::Relaxed);
                    return false;
                }
            }
        }
        let n = self.seen.fetch_add(1, Ordering::Relaxed) + 1;
        n >= self.trigger.after
    }

    fn act(&self, event: &Event) {
        match (&self.trigger.action, &self.flag, &self.snapper) {
            (Action::Start(_), Some(flag), _) => {
                flag.store(true, Ordering::Relaxed);
                self.forward(event);
            }
            (Action::Stop(_), Some(flag), _) => {
                self.forward(event);
                flag.store(false, Ordering::Relaxed);
            }
            (Action::Snapshot(_), _, Some(s)) => {
                self.forward(event);
                s.request(event.time, &self.control);
            }
            _ => self.forward(event),
        }
    }

    /// Stops the snapshot task after it wrote the request still pending
    /// (written here when the task never started: a tracer shut down
    /// without phase 2).
    pub(crate) fn stop_task(&self) -> Result<(), ConfigError> {
        let mut task = self.task.lock();
        if self.stopped.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        match task.take() {
            Some(mut task) => task.finish(
                "write a snapshot on trigger",
                None,
                "the snapshot task panicked",
            ),
            None => {
                if let Some(s) = &self.snapper {
                    s.serve();
                }
                Ok(())
            }
        }
    }
}

impl fmt::Debug for TriggerQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TriggerQueue")
            .field("trigger", &self.trigger)
            .field("seen", &self.seen())
            .field("fired", &self.fired())
            .field("written", &self.written())
            .field("suppressed", &self.suppressed())
            .finish_non_exhaustive()
    }
}

impl Queue for TriggerQueue {
    /// Always room: the next queue is asked in `post`.
    fn get(&self) -> Option<crate::queue::Reservation> {
        Some(crate::queue::Reservation::new(0))
    }

    fn post(&self, _reservation: crate::queue::Reservation, event: &Event) {
        if self.fires(event, 1) {
            self.act(event);
        } else {
            self.forward(event);
        }
    }

    /// The trigger looks at the event the run was logged as
    /// ([`Run::logged_event`]); the run is forwarded whole (before a stop or
    /// snapshot action, after a start).
    fn post_run(&self, run: &Run<'_>) -> usize {
        let event = run.logged_event();
        let fires = self.fires(&event, run.len() as u64);
        let forward = |q: &Self| {
            let p = q.next.load(Ordering::Acquire);
            if !p.is_null() {
                // SAFETY: as in `forward`.
                unsafe { &*p }.post_run(run);
            }
        };
        match (&self.trigger.action, fires) {
            (_, false) => forward(self),
            (Action::Start(_), true) => {
                if let Some(flag) = &self.flag {
                    flag.store(true, Ordering::Relaxed);
                }
                forward(self);
            }
            (Action::Stop(_), true) => {
                forward(self);
                if let Some(flag) = &self.flag {
                    flag.store(false, Ordering::Relaxed);
                }
            }
            (Action::Snapshot(_), true) => {
                forward(self);
                if let Some(s) = &self.snapper {
                    s.request(event.time, &self.control);
                }
            }
        }
        run.len()
    }

    /// Starts the snapshot task.
    fn activate(&self, ctx: &QueueContext) -> Result<(), ConfigError> {
        let Some(s) = &self.snapper else {
            return Ok(());
        };
        let mut task = self.task.lock();
        if task.is_none() {
            *task = Some(Task::start(
                "start the snapshot task of a trigger",
                format!("qtrace-snap-q{}", ctx.handle),
                Duration::from_millis(250),
                Arc::clone(&self.control),
                SnapWork(Arc::clone(s)),
            )?);
        }
        Ok(())
    }

    /// Stops the snapshot task (the tracer already did, before any queue
    /// terminated). A request made after that, by a thread that was inside
    /// `log_event` while the tracer shut down, is counted suppressed.
    fn terminate(&self, _ctx: &QueueContext) -> Result<(), ConfigError> {
        let result = self.stop_task();
        if let Some(s) = &self.snapper {
            if s.pending.swap(0, Ordering::AcqRel) != 0 {
                s.suppressed.fetch_add(1, Ordering::Relaxed);
            }
        }
        result
    }

    /// `accepted = delivered`: every event is forwarded.
    fn counters(&self) -> QueueCounters {
        QueueCounters::all_delivered(self.accepted())
    }

    /// Snapshot files, write failures, suppressed snapshots, a condition's
    /// panics.
    fn status(&self) -> QueueStatus {
        let mut status = self
            .snapper
            .as_ref()
            .map_or_else(QueueStatus::default, |s| {
                let mut st = s.status.get();
                st.snapshots_suppressed = s.suppressed.load(Ordering::Relaxed);
                st
            });
        let panicked = self.panicked.load(Ordering::Relaxed);
        if panicked > 0 {
            let note = format!(
                "the trigger's condition panicked on {panicked} events (counted as not kept)"
            );
            status.last_error = Some(match status.last_error {
                Some(e) => format!("{e}; {note}"),
                None => note,
            });
        }
        status
    }
}

/// Whether `queue` only forwards events (a filter, a gate, a trigger): it
/// gets no name records and cannot be a trigger's scope.
pub(crate) fn forwards(queue: &AnyQueue) -> bool {
    queue.as_custom::<FilterQueue>().is_some()
        || queue.as_custom::<GateQueue>().is_some()
        || queue.as_custom::<TriggerQueue>().is_some()
}

/// Stops every trigger's snapshot task (each writes its pending request
/// first), before any queue terminates.
pub(crate) fn stop_tasks(queues: &[std::sync::OnceLock<AnyQueue>]) {
    for t in queues
        .iter()
        .filter_map(|q| q.get())
        .filter_map(|q| q.as_custom::<TriggerQueue>())
    {
        // A task that panicked is reported by the trigger's terminate.
        let _ = t.stop_task();
    }
}
