//! The registry: which queue types exist, where each event goes, and which
//! events and classes are switched on. It lives behind the tracer's
//! configuration lock; the hot path only ever reads the one word per event
//! that [`Registry::route_word`] computes from it.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

use crate::classes::Catalog;
use crate::model::handle::{QueueHandle, DRAINED, LIVE, QUEUE_MASK};
use crate::queue::config_error::ConfigError;
use crate::queues::QueueType;
use crate::ClassId;
use crate::EventId;

/// The tracer's lifecycle.
///
/// ```
/// use qtrace::{Phase, Tracer};
///
/// let tracer = Tracer::new();
/// assert_eq!(tracer.phase(), Phase::Configuring);
/// tracer.activate()?;
/// assert_eq!(tracer.phase(), Phase::Active);
/// tracer.shutdown()?;
/// assert_eq!(tracer.phase(), Phase::ShutDown);
/// # Ok::<(), qtrace::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Phase 1: register types, create queues, define classes, assign, enable.
    /// Events routed to a queue are already recorded into it.
    Configuring,
    /// Phase 2 has run: queues are active (tasks started, files open).
    Active,
    /// Shut down: every queue terminated; logging is a no-op.
    ShutDown,
}

/// The configuration state behind the lock.
pub(crate) struct Registry {
    pub(crate) phase: Phase,
    pub(crate) suspended: bool,
    pub(crate) catalog: Arc<Catalog>,
    types: HashMap<TypeId, (&'static str, Arc<dyn Any + Send + Sync>)>,
    pub(crate) queue_types: Vec<&'static str>,
    /// By queue index: whether its route words carry [`DRAINED`] (an online
    /// or UDP queue).
    drained: Vec<bool>,
    pub(crate) activated: Vec<bool>,
    event_queue: Vec<Option<QueueHandle>>,
    /// The filter queue an event is routed through, if any (it forwards to
    /// `event_queue`).
    event_filter: Vec<Option<QueueHandle>>,
    event_on: Vec<bool>,
    class_on: Vec<bool>,
    /// The trigger queue an event is routed through first, if any
    /// (`queues::trigger`).
    event_trigger: Vec<Option<QueueHandle>>,
    /// The gate queue in front of each queue, if any (`queues::gate`),
    /// by queue index.
    queue_gate: Vec<Option<QueueHandle>>,
    /// Whether global start/stop triggers gate every recording queue.
    pub(crate) global_gated: bool,
    /// The global recording flag every gate also reads.
    pub(crate) global_gate: Arc<std::sync::atomic::AtomicBool>,
    /// The names recorded at run time, for the files queues save
    /// ([`QueueContext::names`](crate::queue::QueueContext::names)).
    pub(crate) names: Arc<crate::model::combine::RecordedNames>,
    /// The process that created the tracer (see `router::fork`).
    pub(crate) owner_pid: u32,
    /// The tracer's entry in the list the fork handler unroutes.
    pub(crate) fork_node: &'static crate::router::fork::Node,
    /// [`Config::control`](crate::Config::control) and
    /// [`Config::control_group`](crate::Config::control_group): the
    /// endpoint [`global::install`](crate::global::install) opens.
    #[cfg(all(feature = "control", target_os = "linux"))]
    pub(crate) control: Option<(String, Option<u32>)>,
}

impl Registry {
    pub(crate) fn new(catalog: Catalog, fork_node: &'static crate::router::fork::Node) -> Self {
        let mut r = Registry {
            phase: Phase::Configuring,
            suspended: false,
            catalog: Arc::new(Catalog::builtin()),
            types: HashMap::new(),
            queue_types: Vec::new(),
            drained: Vec::new(),
            activated: Vec::new(),
            event_queue: Vec::new(),
            event_filter: Vec::new(),
            event_on: Vec::new(),
            class_on: Vec::new(),
            event_trigger: Vec::new(),
            queue_gate: Vec::new(),
            global_gated: false,
            global_gate: Arc::new(std::sync::atomic::AtomicBool::new(true)),
            names: Arc::default(),
            owner_pid: std::process::id(),
            fork_node,
            #[cfg(all(feature = "control", target_os = "linux"))]
            control: None,
        };
        r.set_catalog(catalog);
        r
    }

    pub(crate) fn set_catalog(&mut self, catalog: Catalog) {
        self.event_queue.resize(catalog.event_count(), None);
        self.event_filter.resize(catalog.event_count(), None);
        self.event_trigger.resize(catalog.event_count(), None);
        self.event_on.resize(catalog.event_count(), true);
        self.class_on.resize(catalog.classes().len(), true);
        self.catalog = Arc::new(catalog);
    }

    /// Whether this process created the tracer (false in a forked child).
    pub(crate) fn is_owner(&self) -> bool {
        self.owner_pid == std::process::id()
    }

    /// Fails in a forked child: the tracer is the parent's.
    pub(crate) fn require_owner(&self, operation: &'static str) -> Result<(), ConfigError> {
        let pid = std::process::id();
        if pid == self.owner_pid {
            Ok(())
        } else {
            Err(ConfigError::InheritedAcrossFork {
                operation,
                owner: self.owner_pid,
                pid,
            })
        }
    }

    /// Fails unless the tracer is still in phase 1 (and in the process that
    /// created it).
    pub(crate) fn require_phase1(&self, operation: &'static str) -> Result<(), ConfigError> {
        self.require_owner(operation)?;
        match self.phase {
            Phase::Configuring => Ok(()),
            Phase::Active => Err(ConfigError::AfterPhase2 { operation }),
            Phase::ShutDown => Err(ConfigError::AfterShutdown { operation }),
        }
    }

    /// Fails once the tracer is shut down (or in a forked child).
    pub(crate) fn require_running(&self, operation: &'static str) -> Result<(), ConfigError> {
        self.require_owner(operation)?;
        match self.phase {
            Phase::ShutDown => Err(ConfigError::AfterShutdown { operation }),
            _ => Ok(()),
        }
    }

    pub(crate) fn register_type<T: QueueType>(&mut self, queue_type: T) -> Result<(), ConfigError> {
        self.require_phase1("register a queue type")?;
        let key = TypeId::of::<T>();
        if self.types.contains_key(&key) {
            return Err(ConfigError::QueueTypeAlreadyRegistered { name: T::NAME });
        }
        self.types.insert(key, (T::NAME, Arc::new(queue_type)));
        Ok(())
    }

    pub(crate) fn queue_type<T: QueueType>(&self) -> Result<Arc<T>, ConfigError> {
        let (_, any) = self
            .types
            .get(&TypeId::of::<T>())
            .ok_or(ConfigError::UnknownQueueType {
                name: T::NAME,
                rust_type: std::any::type_name::<T>(),
            })?;
        Ok(Arc::clone(any).downcast::<T>().expect("keyed by TypeId"))
    }

    /// Names of the registered queue types.
    pub(crate) fn type_names(&self) -> Vec<&'static str> {
        let mut v: Vec<_> = self.types.values().map(|(n, _)| *n).collect();
        v.sort_unstable();
        v
    }

    pub(crate) fn check_queue(&self, handle: QueueHandle) -> Result<(), ConfigError> {
        if handle.index() < self.queue_types.len() {
            Ok(())
        } else {
            Err(ConfigError::BadQueueHandle {
                handle,
                queues: self.queue_types.len(),
            })
        }
    }

    pub(crate) fn check_event(&self, id: EventId) -> Result<(), ConfigError> {
        if (id.0 as usize) < self.catalog.event_count() {
            Ok(())
        } else {
            Err(ConfigError::EventOutOfRange {
                id,
                defined: self.catalog.event_count(),
            })
        }
    }

    pub(crate) fn class_events(&self, class: ClassId) -> Result<std::ops::Range<u16>, ConfigError> {
        let c = self
            .catalog
            .class(class)
            .ok_or(ConfigError::ClassOutOfRange {
                id: class,
                defined: self.catalog.classes().len(),
            })?;
        Ok(c.first_event.0..c.first_event.0 + c.event_count)
    }

    /// Routes `id` to `queue`, removing its filter.
    pub(crate) fn assign(&mut self, id: EventId, queue: QueueHandle) {
        self.event_queue[id.0 as usize] = Some(queue);
        self.event_filter[id.0 as usize] = None;
    }

    /// Routes `id` through the filter queue `filter` (or not, with `None`).
    pub(crate) fn set_filter(&mut self, id: EventId, filter: Option<QueueHandle>) {
        self.event_filter[id.0 as usize] = filter;
    }

    /// The filter queue an event is routed through.
    pub(crate) fn filter_of(&self, id: EventId) -> Option<QueueHandle> {
        self.event_filter.get(id.0 as usize).copied().flatten()
    }

    /// Routes `id` through the trigger queue `trigger` first (or not).
    pub(crate) fn set_trigger(&mut self, id: EventId, trigger: Option<QueueHandle>) {
        self.event_trigger[id.0 as usize] = trigger;
    }

    /// The trigger queue an event is routed through first.
    pub(crate) fn trigger_of(&self, id: EventId) -> Option<QueueHandle> {
        self.event_trigger.get(id.0 as usize).copied().flatten()
    }

    /// Puts the gate queue `gate` in front of `queue`.
    pub(crate) fn set_gate(&mut self, queue: QueueHandle, gate: QueueHandle) {
        if self.queue_gate.len() <= queue.index() {
            self.queue_gate.resize(queue.index() + 1, None);
        }
        self.queue_gate[queue.index()] = Some(gate);
    }

    /// The gate queue in front of `queue`.
    pub(crate) fn gate_of(&self, queue: QueueHandle) -> Option<QueueHandle> {
        self.queue_gate.get(queue.index()).copied().flatten()
    }

    /// Where an event's filter (or, without one, its trigger) forwards
    /// to: its queue's gate, or its queue.
    pub(crate) fn gated_queue_of(&self, id: EventId) -> Option<QueueHandle> {
        self.queue_of(id).map(|q| self.gate_of(q).unwrap_or(q))
    }

    pub(crate) fn set_event_on(&mut self, id: EventId, on: bool) {
        self.event_on[id.0 as usize] = on;
    }

    pub(crate) fn set_class_on(&mut self, class: ClassId, on: bool) {
        self.class_on[class.0 as usize] = on;
    }

    /// The queue an event is assigned to.
    pub(crate) fn queue_of(&self, id: EventId) -> Option<QueueHandle> {
        self.event_queue.get(id.0 as usize).copied().flatten()
    }

    /// Whether the event and its class are switched on (ignoring routing).
    pub(crate) fn is_on(&self, id: EventId) -> bool {
        let i = id.0 as usize;
        let class = self.catalog.events()[i].class.0 as usize;
        self.event_on[i] && self.class_on[class]
    }

    /// Notes the queue about to be stored at index `queue_types.len()`: its
    /// type's name, whether its route words carry [`DRAINED`] (an online or
    /// UDP queue), and whether it counts as activated.
    pub(crate) fn add_queue(&mut self, name: &'static str, drained: bool, activated: bool) {
        self.queue_types.push(name);
        self.drained.push(drained);
        self.activated.push(activated);
    }

    /// The word the hot path reads for `id`: `LIVE | queue` (with `DRAINED`
    /// for an online or UDP queue; its trigger
    /// queue if it has one, else its filter queue, else its queue's gate,
    /// else its queue) when the event is assigned, switched on, its class switched on, and the tracer is neither
    /// suspended nor shut down; 0 otherwise.
    pub(crate) fn route_word(&self, id: EventId) -> u32 {
        if self.suspended || self.phase == Phase::ShutDown {
            return 0;
        }
        let first = self
            .trigger_of(id)
            .or(self.filter_of(id))
            .or_else(|| self.gated_queue_of(id));
        match first {
            Some(q) if self.is_on(id) => {
                let drained = if self.drained[q.index()] { DRAINED } else { 0 };
                LIVE | drained | (q.0 as u32 & QUEUE_MASK)
            }
            _ => 0,
        }
    }
}
