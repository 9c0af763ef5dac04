//! The gate in front of a queue that start/stop triggers switch
//! ([`crate::filters::trigger`]): recording on or off for that queue, or for
//! every queue, without touching the hot path of ungated queues.
//!
//! A [`GateQueue`] is a queue of its own that
//! [`Tracer::add_trigger`](crate::Tracer::add_trigger) creates in the next
//! free queue slot, in front of the queue a start or stop trigger's
//! [`Scope`](crate::filters::Scope) names (or in front of every recording
//! queue, for [`Scope::Global`](crate::filters::Scope::Global)); events routed
//! to that queue are routed to the gate instead (their filters and triggers
//! forward to it). Its `post` reads two flags — the queue's own and the
//! tracer's global one — and forwards the event to the queue when both are
//! on; otherwise it *masks* the event.
//!
//! Masked events are not lost: recording was switched off on purpose, as
//! for an event switched off with
//! [`Tracer::notrace_event`](crate::Tracer::notrace_event). A gate *accepts*
//! every event routed to it and *delivers* every one of them (passed on or
//! masked): `accepted = delivered = passed + masked`, and no hoops record is
//! written for masked events. [`GateQueue::masked`] counts them.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use crate::model::combine::Run;
use crate::model::event::Event;
use crate::queue::{Queue, QueueCounters, Reservation};
use crate::queues::AnyQueue;

/// The gated queue, in the tracer's queue table.
struct Target(*const AnyQueue);

// SAFETY: the pointer is only read as a `&AnyQueue`, and `AnyQueue` is
// `Sync` (every `Queue` is `Send + Sync`), so sharing or sending the
// pointer is sharing a `&AnyQueue`.
unsafe impl Send for Target {}
// SAFETY: as above.
unsafe impl Sync for Target {}

/// A queue that forwards events to the queue behind it while recording is
/// on (see the [module documentation](crate::filters)). Reach it with
/// `tracer.queue(handle)?.as_custom::<GateQueue>()`; the shutdown report
/// lists it as a `"gate"` queue.
///
/// ```
/// use qtrace::classes::user;
/// use qtrace::filters::{GateQueue, Scope, Trigger};
/// use qtrace::queues::Dummy;
/// use qtrace::QueueHandle;
///
/// let tracer = qtrace::Tracer::new();
/// let q = tracer.create_queue::<Dummy>(())?;
/// tracer.assign_event(user::USER0, q)?;
/// // A stop trigger scoped to queue q puts a gate in front of it.
/// tracer.add_trigger(user::USER7, Trigger::stop(Scope::Queue(q)))?;
/// tracer.log_event(user::USER0, [1, 0]);
/// tracer.log_event(user::USER7, [0, 0]); // closes the gate
/// tracer.log_event(user::USER0, [2, 0]);
/// let gate = (0..tracer.queue_count() as u16)
///     .find_map(|h| tracer.queue(QueueHandle(h)).ok()?.as_custom::<GateQueue>())
///     .unwrap();
/// assert!(!gate.is_open());
/// assert_eq!((gate.passed(), gate.masked()), (1, 1));
/// # Ok::<(), qtrace::Error>(())
/// ```
pub struct GateQueue {
    target: Target,
    /// Recording on for this queue.
    open: Arc<AtomicBool>,
    /// Recording on for the whole tracer (shared by every gate).
    global: Arc<AtomicBool>,
    passed: AtomicU64,
    masked: AtomicU64,
}

impl GateQueue {
    /// The type name in reports.
    pub const NAME: &'static str = "gate";

    /// A gate in front of `target`, open while both `open` and `global` are.
    ///
    /// # Safety
    ///
    /// `target` must stay valid, at the same address, for as long as this
    /// queue is used: the tracer's queue table, whose slots are set once and
    /// never moved or cleared, and which holds this queue too.
    pub(crate) unsafe fn new(
        target: &AnyQueue,
        open: Arc<AtomicBool>,
        global: Arc<AtomicBool>,
    ) -> Self {
        GateQueue {
            target: Target(target),
            open,
            global,
            passed: AtomicU64::new(0),
            masked: AtomicU64::new(0),
        }
    }

    fn target(&self) -> &AnyQueue {
        // SAFETY: the contract of `GateQueue::new`.
        unsafe { &*self.target.0 }
    }

    /// The flag of this queue's recording (start/stop triggers of
    /// [`Scope::Queue`](crate::filters::Scope::Queue) set it).
    pub(crate) fn flag(&self) -> &Arc<AtomicBool> {
        &self.open
    }

    /// Whether events pass now: this queue's recording and the tracer's
    /// global recording are both on.
    #[inline]
    pub fn is_open(&self) -> bool {
        self.open.load(Ordering::Relaxed) && self.global.load(Ordering::Relaxed)
    }

    /// Events (records of a combine run included) passed on to the queue.
    pub fn passed(&self) -> u64 {
        self.passed.load(Ordering::Relaxed)
    }

    /// Events masked while recording was off (not a loss).
    pub fn masked(&self) -> u64 {
        self.masked.load(Ordering::Relaxed)
    }
}

impl fmt::Debug for GateQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GateQueue")
            .field("open", &self.is_open())
            .field("passed", &self.passed())
            .field("masked", &self.masked())
            .finish_non_exhaustive()
    }
}

impl Queue for GateQueue {
    /// Always room: the queue behind is asked in `post`.
    fn get(&self) -> Option<Reservation> {
        Some(Reservation::new(0))
    }

    fn post(&self, _reservation: Reservation, event: &Event) {
        if self.is_open() {
            self.passed.fetch_add(1, Ordering::Relaxed);
            let target = self.target();
            if let Some(r) = target.get() {
                target.post(r, event);
            }
        } else {
            self.masked.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A run passes or is masked whole.
    fn post_run(&self, run: &Run<'_>) -> usize {
        let n = run.len() as u64;
        if self.is_open() {
            self.passed.fetch_add(n, Ordering::Relaxed);
            self.target().post_run(run);
        } else {
            self.masked.fetch_add(n, Ordering::Relaxed);
        }
        run.len()
    }

    /// `accepted = delivered = passed + masked`; nothing lost here.
    fn counters(&self) -> QueueCounters {
        QueueCounters::all_delivered(self.passed() + self.masked())
    }
}
