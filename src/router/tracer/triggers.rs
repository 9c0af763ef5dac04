//! The tracer's side of triggers ([`crate::filters::trigger`]): attaching
//! them to events, and the gates start/stop triggers switch.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::{run_hook, Tracer};
use crate::filters::trigger::forwards;
use crate::filters::FilterQueue;
use crate::filters::{Action, GateQueue, Scope, Trigger, TriggerQueue};
use crate::model::event::EventId;
use crate::model::handle::QueueHandle;
use crate::queue::config_error::ConfigError;
use crate::queue::Queue;
use crate::queues::AnyQueue;
use crate::router::registry::{Phase, Registry};

impl Tracer {
    /// Attaches `trigger` to event `id`: from then on each `id` event is
    /// counted and, from the trigger's [`Trigger::after`]-th on, fires it
    /// (start or stop recording, or a snapshot of a circular queue: see
    /// [`crate::filters`]), then goes where it went before. Returns
    /// the trigger's queue handle (a [`TriggerQueue`]: its counters, and
    /// for a snapshot trigger its files and suppressed snapshots). A
    /// trigger takes a queue slot of its own for good, and a start or stop
    /// trigger one more for each queue it gates the first time (the tracer
    /// holds at most [`QueueHandle::MAX_QUEUES`] queues). Events without a
    /// trigger pay nothing for triggers; the event need not be assigned to
    /// a queue (it then only fires). A switched-off event
    /// ([`Tracer::notrace_event`], [`Tracer::suspend`]) fires nothing. Any time before shutdown; a snapshot
    /// trigger's task starts at phase 2 (at once after it).
    ///
    /// ```
    /// # let _cwd = tempfile::tempdir().unwrap(); std::env::set_current_dir(_cwd.path()).unwrap(); // own directory: doc tests run in parallel
    /// use qtrace::classes::user;
    /// use qtrace::queues::{Fixed, FixedParams};
    /// use qtrace::filters::{Scope, Trigger};
    /// use qtrace::Tracer;
    ///
    /// let tracer = Tracer::new();
    /// let q = tracer.create_queue::<Fixed>(FixedParams::default().with_capacity(16))?;
    /// tracer.assign_class(user::CLASS, q)?;
    /// // Stop recording everything at the first USER7 with argument 0 above 100.
    /// let stop = Trigger::stop(Scope::Global)
    ///     .when(qtrace::filters::Filter::arg(0, 101..=u64::MAX));
    /// tracer.add_trigger(user::USER7, stop)?;
    /// for a in [1, 500, 2] {
    ///     tracer.log_event(user::USER0, [a, 0]);
    ///     tracer.log_event(user::USER7, [a, 0]);
    /// }
    /// let kept: Vec<u64> = tracer.queue(q)?.as_fixed().unwrap()
    ///     .snapshot_events().iter().map(|e| e.args[0]).collect();
    /// assert_eq!(kept, [1, 1, 500, 500]); // the stop trigger itself is recorded
    /// assert!(!tracer.is_recording(Scope::Global)?);
    /// # Ok::<(), qtrace::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ConfigError::EventOutOfRange`]; [`ConfigError::TriggerExists`] when `id`
    /// already has a trigger ([`Tracer::remove_trigger`] first);
    /// [`ConfigError::InvalidParameter`] for [`Trigger::after`]`(0)` or a
    /// [`Filter::arg`](crate::filters::Filter::arg) condition with an index
    /// other than 0 or 1; [`ConfigError::BadQueueHandle`] for a scope or snapshot
    /// queue that does not exist; [`ConfigError::TriggerScopeNotRecording`] for a
    /// scope naming a filter, gate or trigger queue;
    /// [`ConfigError::SnapshotNeedsCircular`] for a snapshot of a queue that is
    /// not circular; [`ConfigError::SnapshotSize`] for a snapshot of 0 events or
    /// more than the queue's capacity; [`ConfigError::TooManyQueues`];
    /// [`ConfigError::Io`] when the snapshot task cannot start;
    /// [`ConfigError::AfterShutdown`].
    pub fn add_trigger(&self, id: EventId, trigger: Trigger) -> Result<QueueHandle, ConfigError> {
        let mut r = self.registry.lock();
        r.require_running("add a trigger")?;
        r.check_event(id)?;
        if let Some(existing) = r.trigger_of(id) {
            return Err(ConfigError::TriggerExists {
                id,
                trigger: existing,
            });
        }
        trigger.validate()?;
        // Every slot this needs, before anything changes: a trigger that
        // cannot be added must not leave recording switched.
        let gates = match trigger.action() {
            Action::Start(scope) | Action::Stop(scope) => self.gates_needed(&r, *scope)?,
            Action::Snapshot(_) => 0,
        };
        if r.queue_types.len() + gates + 1 > QueueHandle::MAX_QUEUES {
            return Err(ConfigError::TooManyQueues {
                max: QueueHandle::MAX_QUEUES,
            });
        }
        let mut circular = None;
        let flag = match trigger.action() {
            Action::Start(scope) => Some(self.gate_scope(&mut r, *scope, true)?),
            Action::Stop(scope) => Some(self.gate_scope(&mut r, *scope, false)?),
            Action::Snapshot(s) => {
                r.check_queue(s.queue)?;
                let queue = self.queues[s.queue.index()].get().expect("created");
                let q = queue
                    .as_circular()
                    .ok_or(ConfigError::SnapshotNeedsCircular {
                        queue: s.queue,
                        type_name: r.queue_types[s.queue.index()],
                    })?;
                if s.last == 0 || s.last > q.capacity() {
                    return Err(ConfigError::SnapshotSize {
                        last: s.last,
                        capacity: q.capacity(),
                    });
                }
                let ctx = self.context(&r, s.queue, r.queue_types[s.queue.index()]);
                circular = Some((q, ctx));
                None
            }
        };
        let index = self.next_slot(&r)?;
        let handle = QueueHandle(index as u16);
        // SAFETY: the circular queue is in `self.queues` (a box never moved
        // whose slots are set once and never cleared), and the trigger's
        // task is stopped by `shutdown`, which runs before the table is
        // dropped (`Drop for Tracer`); `rewire` retargets it only to queues
        // of the same table.
        let queue = unsafe { TriggerQueue::new(trigger, flag, circular) };
        self.store(&mut r, index, AnyQueue::custom(queue), TriggerQueue::NAME);
        if r.phase == Phase::Active {
            let ctx = self.context(&r, handle, TriggerQueue::NAME);
            let q = self.queues[index].get().expect("just set");
            run_hook(handle, "activate", || q.activate(&ctx))?;
            r.activated[index] = true;
        }
        r.set_trigger(id, Some(handle));
        self.publish(&r, id);
        Ok(handle)
    }

    /// Detaches `id`'s trigger: its events go where they went before it
    /// was added. Removing no trigger is harmless. The trigger queue stays
    /// (with its counters, files and task, which writes a pending snapshot)
    /// and is reported at shutdown; recording stays as the trigger left it.
    ///
    /// # Errors
    ///
    /// [`ConfigError::EventOutOfRange`]; [`ConfigError::AfterShutdown`].
    pub fn remove_trigger(&self, id: EventId) -> Result<(), ConfigError> {
        let mut r = self.registry.lock();
        r.require_running("remove a trigger")?;
        r.check_event(id)?;
        r.set_trigger(id, None);
        self.publish(&r, id);
        Ok(())
    }

    /// The trigger queue attached to `id`, if any.
    ///
    /// # Errors
    ///
    /// [`ConfigError::EventOutOfRange`].
    pub fn trigger_of(&self, id: EventId) -> Result<Option<QueueHandle>, ConfigError> {
        let r = self.registry.lock();
        r.check_event(id)?;
        Ok(r.trigger_of(id))
    }

    /// Whether start/stop triggers leave recording on in `scope`: for
    /// [`Scope::Global`], the tracer-wide switch; for a queue, its own
    /// switch and the global one (`true` for a queue no trigger gates).
    ///
    /// # Errors
    ///
    /// [`ConfigError::BadQueueHandle`].
    pub fn is_recording(&self, scope: Scope) -> Result<bool, ConfigError> {
        let r = self.registry.lock();
        let global = r.global_gate.load(Ordering::Relaxed);
        match scope {
            Scope::Global => Ok(global),
            Scope::Queue(q) => {
                r.check_queue(q)?;
                Ok(match r.gate_of(q) {
                    Some(g) => self.gate(g).is_open(),
                    None => global || !r.global_gated,
                })
            }
        }
    }

    /// How many gates a start/stop trigger for `scope` adds.
    fn gates_needed(&self, r: &Registry, scope: Scope) -> Result<usize, ConfigError> {
        let ungated = |i: usize| {
            r.gate_of(QueueHandle(i as u16)).is_none()
                && !forwards(self.queues[i].get().expect("created"))
        };
        match scope {
            Scope::Queue(q) => {
                r.check_queue(q)?;
                Ok(usize::from(ungated(q.index())))
            }
            Scope::Global if r.global_gated => Ok(0),
            Scope::Global => Ok((0..r.queue_types.len()).filter(|&i| ungated(i)).count()),
        }
    }

    fn gate(&self, handle: QueueHandle) -> &GateQueue {
        self.queues[handle.index()]
            .get()
            .and_then(|q| q.as_custom::<GateQueue>())
            .expect("gate handles name gate queues")
    }

    /// The recording flag of `scope`, gating its queues on first use
    /// (recording off there when the first trigger is a start trigger).
    fn gate_scope(
        &self,
        r: &mut Registry,
        scope: Scope,
        start: bool,
    ) -> Result<Arc<AtomicBool>, ConfigError> {
        match scope {
            Scope::Queue(q) => {
                r.check_queue(q)?;
                let queue = self.queues[q.index()].get().expect("created");
                if forwards(queue) {
                    return Err(ConfigError::TriggerScopeNotRecording {
                        queue: q,
                        type_name: r.queue_types[q.index()],
                    });
                }
                let gate = match r.gate_of(q) {
                    Some(g) => g,
                    None => self.create_gate(r, q, !start)?,
                };
                Ok(Arc::clone(self.gate(gate).flag()))
            }
            Scope::Global => {
                if !r.global_gated {
                    // Gate every recording queue first: a failure (no free
                    // slot) leaves recording as it was.
                    for i in 0..r.queue_types.len() {
                        self.gate_if_ungated(r, QueueHandle(i as u16))?;
                    }
                    r.global_gated = true;
                    r.global_gate.store(!start, Ordering::Relaxed);
                }
                Ok(Arc::clone(&r.global_gate))
            }
        }
    }

    /// Gates a new queue when global triggers exist.
    pub(super) fn gate_if_global(
        &self,
        r: &mut Registry,
        q: QueueHandle,
    ) -> Result<(), ConfigError> {
        if r.global_gated {
            self.gate_if_ungated(r, q)?;
        }
        Ok(())
    }

    fn gate_if_ungated(&self, r: &mut Registry, q: QueueHandle) -> Result<(), ConfigError> {
        let queue = self.queues[q.index()].get().expect("created");
        if r.gate_of(q).is_none() && !forwards(queue) {
            self.create_gate(r, q, true)?;
        }
        Ok(())
    }

    /// Stores a gate in front of `q` (open or not) and routes `q`'s events
    /// through it.
    fn create_gate(
        &self,
        r: &mut Registry,
        q: QueueHandle,
        open: bool,
    ) -> Result<QueueHandle, ConfigError> {
        let index = self.next_slot(r)?;
        let target = self.queues[q.index()].get().expect("created");
        // SAFETY: `target` is in `self.queues`, a box never moved whose
        // slots are set once and never cleared; the gate goes into the same
        // table, so it never outlives its target.
        let gate = unsafe {
            GateQueue::new(
                target,
                Arc::new(AtomicBool::new(open)),
                Arc::clone(&r.global_gate),
            )
        };
        self.store(r, index, AnyQueue::custom(gate), GateQueue::NAME);
        let handle = QueueHandle(index as u16);
        r.set_gate(q, handle);
        self.publish_all(r);
        Ok(handle)
    }

    /// The next free queue slot.
    fn next_slot(&self, r: &Registry) -> Result<usize, ConfigError> {
        let index = r.queue_types.len();
        if index >= QueueHandle::MAX_QUEUES {
            return Err(ConfigError::TooManyQueues {
                max: QueueHandle::MAX_QUEUES,
            });
        }
        Ok(index)
    }

    /// Puts a forwarding queue (no activate hook of its own to run now)
    /// into slot `index`.
    fn store(&self, r: &mut Registry, index: usize, queue: AnyQueue, name: &'static str) {
        if self.queues[index].set(queue).is_err() {
            unreachable!("queue slots are filled in order under the lock");
        }
        // A gate has no activate hook; a trigger's runs in `add_trigger`
        // or phase 2.
        let activated = r.phase != Phase::Configuring && name == GateQueue::NAME;
        r.add_queue(name, false, activated);
    }
}

/// Points `id`'s trigger and filter queues at what follows them now (its
/// filter, its queue's gate, its queue). Called whenever `id`'s route is
/// published.
pub(crate) fn rewire(r: &Registry, queues: &[std::sync::OnceLock<AnyQueue>], id: EventId) {
    let get = |h: QueueHandle| queues[h.index()].get();
    let down = r.gated_queue_of(id).and_then(get);
    let filter = r.filter_of(id).and_then(get);
    if let (Some(f), Some(down)) = (filter.and_then(|f| f.as_custom::<FilterQueue>()), down) {
        // SAFETY: `down` is in the tracer's queue table.
        unsafe { f.retarget(down) };
    }
    if let Some(t) = r
        .trigger_of(id)
        .and_then(get)
        .and_then(|t| t.as_custom::<TriggerQueue>())
    {
        // SAFETY: `filter` and `down` are in the tracer's queue table.
        unsafe { t.retarget(filter.or(down)) };
    }
}

// ----- what the control endpoint (`crate::control`) reaches ---------------

#[cfg(feature = "control")]
impl Tracer {
    /// Switches recording on or off in `scope` at once, through the gates
    /// start/stop triggers use (gating the scope's queues on first use, as
    /// a trigger's first firing would).
    pub(crate) fn set_recording(&self, scope: Scope, on: bool) -> Result<(), ConfigError> {
        let mut r = self.registry.lock();
        r.require_running(if on {
            "start recording"
        } else {
            "stop recording"
        })?;
        let gates = self.gates_needed(&r, scope)?;
        if r.queue_types.len() + gates > QueueHandle::MAX_QUEUES {
            return Err(ConfigError::TooManyQueues {
                max: QueueHandle::MAX_QUEUES,
            });
        }
        let flag = self.gate_scope(&mut r, scope, on)?;
        flag.store(on, Ordering::Relaxed);
        Ok(())
    }

    /// The type name of queue `handle` (`"circular"`, `"gate"`, …).
    pub(crate) fn queue_type_of(&self, handle: QueueHandle) -> Option<&'static str> {
        self.registry
            .lock()
            .queue_types
            .get(handle.index())
            .copied()
    }
}
