//! Dynamic filters (QNX's model): a predicate that decides, per event,
//! whether an event routed through it is recorded.
//!
//! A filter is a queue of its own, a [`FilterQueue`], that
//! [`Tracer::filter_event`](crate::Tracer::filter_event) and
//! [`Tracer::filter_class`](crate::Tracer::filter_class) create in the next
//! free queue slot and route the filtered events to. Its `post` runs the
//! predicate and forwards the events that pass to the queue the event was
//! routed to before (the *target*). Events without a filter take exactly
//! the path they took before: the hot path has no test for filters.
//!
//! Counters: a filter queue *accepts* every event routed to it and
//! *delivers* every one of them — passed on to the target, or discarded on
//! purpose (as the dummy queue delivers to nowhere). A rejected event is
//! not a loss: [`FilterQueue::rejected`] counts it, [`FilterQueue::passed`]
//! counts the rest; `accepted = delivered = passed + rejected`. The target
//! counts what it does with the passed events (including its own drops).
//!
//! A handler that panics: the panic is caught (the process's panic hook
//! still runs and prints it, and a tracer with
//! [`Config::save_on_panic`](crate::Config::save_on_panic) saves its
//! queues), the event is rejected, and [`FilterQueue::panicked`] counts
//! it; the filter's status then carries the message, so the shutdown
//! report is not clean. Under `panic = "abort"` the process aborts.

use std::fmt;
use std::ops::RangeInclusive;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::model::combine::Run;
use crate::model::event::Event;
use crate::queue::config_error::ConfigError;
use crate::queue::queue_trait::{Queue, QueueCounters, QueueStatus, Reservation};
use crate::queues::AnyQueue;

type Handler = dyn Fn(&Event) -> bool + Send + Sync;

/// What a filter keeps: built-in tests by source and by argument value, or
/// a user handler.
///
/// ```
/// use qtrace::filters::Filter;
/// use qtrace::{Event, EventId};
///
/// let e = Event::new(0, EventId(1), 3, [10, 20]);
/// assert!(Filter::source(3).keeps(&e));
/// assert!(!Filter::sources(4..=7).keeps(&e));
/// assert!(Filter::arg(1, 15..=25).keeps(&e));
/// assert!(!Filter::handler(|e| e.args[0] > 10).keeps(&e));
/// ```
#[derive(Clone)]
pub struct Filter(Kind);

#[derive(Clone)]
enum Kind {
    Sources(RangeInclusive<u32>),
    Arg(usize, RangeInclusive<u64>),
    Handler(Arc<Handler>),
}

impl Filter {
    /// Keeps events from one source (thread or CPU number, the records'
    /// `source`).
    pub fn source(source: u32) -> Self {
        Filter(Kind::Sources(source..=source))
    }

    /// Keeps events whose source is in `sources`.
    pub fn sources(sources: RangeInclusive<u32>) -> Self {
        Filter(Kind::Sources(sources))
    }

    /// Keeps events whose argument `index` (0 or 1) is in `values`.
    /// [`Tracer::filter_event`](crate::Tracer::filter_event) refuses another
    /// index with [`ConfigError::InvalidParameter`].
    pub fn arg(index: usize, values: RangeInclusive<u64>) -> Self {
        Filter(Kind::Arg(index, values))
    }

    /// Keeps events for which `handler` returns `true`. It runs on the
    /// logging thread, for every event routed through the filter: it must
    /// be quick and must not log into the same tracer (that event would be
    /// filtered again, recursively). A panic in it rejects the event (see
    /// the [module documentation](crate::filters)).
    pub fn handler(handler: impl Fn(&Event) -> bool + Send + Sync + 'static) -> Self {
        Filter(Kind::Handler(Arc::new(handler)))
    }

    /// Whether the filter keeps `event` (a panicking handler's panic goes
    /// through here; the filter queue catches it).
    pub fn keeps(&self, event: &Event) -> bool {
        match &self.0 {
            Kind::Sources(r) => r.contains(&event.source),
            Kind::Arg(i, r) => event.args.get(*i).is_some_and(|a| r.contains(a)),
            Kind::Handler(h) => h(event),
        }
    }

    /// Checks the filter's parameters.
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        match &self.0 {
            Kind::Arg(i, _) if *i > 1 => Err(ConfigError::InvalidParameter {
                queue_type: FilterQueue::NAME,
                reason: format!(
                    "Filter::arg index {i}: events have two arguments, use index 0 or 1"
                ),
            }),
            _ => Ok(()),
        }
    }
}

impl fmt::Debug for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Kind::Sources(r) => f.debug_tuple("Filter::sources").field(r).finish(),
            Kind::Arg(i, r) => f.debug_tuple("Filter::arg").field(i).field(r).finish(),
            Kind::Handler(_) => f.write_str("Filter::handler(..)"),
        }
    }
}

/// A queue that runs a [`Filter`] on each event and forwards the ones it
/// keeps to its target queue (see the [module documentation](crate::filters)). Made
/// by [`Tracer::filter_event`](crate::Tracer::filter_event); reach it with
/// `tracer.queue(handle)?.as_custom::<FilterQueue>()`.
///
/// ```
/// use qtrace::classes::user;
/// use qtrace::filters::{Filter, FilterQueue};
/// use qtrace::queues::Dummy;
///
/// let tracer = qtrace::Tracer::new();
/// let q = tracer.create_queue::<Dummy>(())?;
/// tracer.assign_event(user::USER0, q)?;
/// let f = tracer.filter_event(user::USER0, Filter::arg(0, 10..=20))?;
/// for a in [5, 15, 25] {
///     tracer.log_event(user::USER0, [a, 0]);
/// }
/// let filter = tracer.queue(f)?.as_custom::<FilterQueue>().unwrap();
/// assert_eq!((filter.passed(), filter.rejected()), (1, 2));
/// # Ok::<(), qtrace::Error>(())
/// ```
pub struct FilterQueue {
    filter: Filter,
    /// The target queue, in the tracer's queue table (a gate in front of
    /// the event's queue once a start/stop trigger gates it: see
    /// [`FilterQueue::retarget`]).
    target: AtomicPtr<AnyQueue>,
    passed: AtomicU64,
    rejected: AtomicU64,
    panicked: AtomicU64,
    last_panic: Mutex<Option<String>>,
}

impl FilterQueue {
    /// The type name in reports.
    pub const NAME: &'static str = "filter";

    /// A filter forwarding to `target`.
    ///
    /// # Safety
    ///
    /// `target` must stay valid, at the same address, for as long as this
    /// queue is used: the tracer's queue table, whose slots are set once and
    /// never moved or cleared, and which holds this queue too.
    pub(crate) unsafe fn new(filter: Filter, target: &AnyQueue) -> Self {
        FilterQueue {
            filter,
            target: AtomicPtr::new(target as *const AnyQueue as *mut AnyQueue),
            passed: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            panicked: AtomicU64::new(0),
            last_panic: Mutex::new(None),
        }
    }

    fn target(&self) -> &AnyQueue {
        // SAFETY: the contract of `FilterQueue::new` and
        // `FilterQueue::retarget`: a pointer into the tracer's queue table.
        unsafe { &*self.target.load(Ordering::Acquire) }
    }

    /// Forwards to `target` from now on (the tracer puts a gate in front of
    /// the filter's queue this way).
    ///
    /// # Safety
    ///
    /// As for [`FilterQueue::new`].
    pub(crate) unsafe fn retarget(&self, target: &AnyQueue) {
        self.target.store(
            target as *const AnyQueue as *mut AnyQueue,
            Ordering::Release,
        );
    }

    /// The filter.
    pub fn filter(&self) -> &Filter {
        &self.filter
    }

    /// Events (records of a combine run included) the filter passed on.
    pub fn passed(&self) -> u64 {
        self.passed.load(Ordering::Relaxed)
    }

    /// Events the filter rejected (panics included).
    pub fn rejected(&self) -> u64 {
        self.rejected.load(Ordering::Relaxed)
    }

    /// Events rejected because the handler panicked.
    pub fn panicked(&self) -> u64 {
        self.panicked.load(Ordering::Relaxed)
    }

    /// Runs the filter; a panic rejects.
    fn keeps(&self, event: &Event) -> bool {
        match catch_unwind(AssertUnwindSafe(|| self.filter.keeps(event))) {
            Ok(keep) => keep,
            Err(panic) => {
                self.panicked.fetch_add(1, Ordering::Relaxed);
                let message = if let Some(s) = panic.downcast_ref::<&str>() {
                    (*s).to_string()
                } else if let Some(s) = panic.downcast_ref::<String>() {
                    s.clone()
                } else {
                    "a non-string payload".to_string()
                };
                *self.last_panic.lock() = Some(message);
                false
            }
        }
    }
}

impl fmt::Debug for FilterQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FilterQueue")
            .field("filter", &self.filter)
            .field("passed", &self.passed())
            .field("rejected", &self.rejected())
            .finish_non_exhaustive()
    }
}

impl Queue for FilterQueue {
    /// Always room: the target is asked in `post`, once the event passed.
    fn get(&self) -> Option<Reservation> {
        Some(Reservation::new(0))
    }

    fn post(&self, _reservation: Reservation, event: &Event) {
        if self.keeps(event) {
            self.passed.fetch_add(1, Ordering::Relaxed);
            let target = self.target();
            if let Some(r) = target.get() {
                target.post(r, event);
            }
        } else {
            self.rejected.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The filter runs on the event the run was logged as
    /// ([`Run::logged_event`]: its argument is argument 0, argument 1 is
    /// 0); the whole run passes or is rejected.
    fn post_run(&self, run: &Run<'_>) -> usize {
        let n = run.len() as u64;
        if self.keeps(&run.logged_event()) {
            self.passed.fetch_add(n, Ordering::Relaxed);
            self.target().post_run(run);
        } else {
            self.rejected.fetch_add(n, Ordering::Relaxed);
        }
        run.len()
    }

    /// `accepted = delivered = passed + rejected`; nothing lost here.
    fn counters(&self) -> QueueCounters {
        QueueCounters::all_delivered(self.passed() + self.rejected())
    }

    /// A handler's panic, if any.
    fn status(&self) -> QueueStatus {
        QueueStatus {
            last_error: self.last_panic.lock().as_ref().map(|m| {
                format!(
                    "the filter's handler panicked on {} events (rejected), last: {m}",
                    self.panicked()
                )
            }),
            ..QueueStatus::default()
        }
    }
}
