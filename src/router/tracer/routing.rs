//! Phase 1 and routing: queue types, queues, classes, assignments, filters and
//! the per-event and per-class masks (which may change until shutdown).

use std::panic::{catch_unwind, AssertUnwindSafe};

use super::{panic_message, Tracer};
use crate::classes::{ClassSpec, DefinedClass};
use crate::filters::{Filter, FilterQueue};
use crate::model::event::EventId;
use crate::model::handle::QueueHandle;
use crate::queue::config_error::ConfigError;
use crate::queues::{AnyQueue, QueueType};
use crate::ring::producer_cache;
use crate::router::registry::{Phase, Registry};
use crate::ClassId;
use std::sync::atomic::Ordering;

impl Tracer {
    // ----- phase 1 ------------------------------------------------------------

    /// Registers a queue type (S.Ha.R.K. `trc_register_queue_type`). The
    /// built-in types are registered by [`Tracer::new`].
    ///
    /// Hooks (create, activate, terminate) run with the tracer's configuration
    /// lock held: they must not call back into the tracer.
    ///
    /// # Errors
    ///
    /// [`ConfigError::QueueTypeAlreadyRegistered`] if a type of that name is
    /// registered already (the built-in ones are); [`ConfigError::AfterPhase2`]
    /// after [`Tracer::activate`], [`ConfigError::AfterShutdown`] after shutdown.
    pub fn register_queue_type<T: QueueType>(&self, queue_type: T) -> Result<(), ConfigError> {
        self.registry.lock().register_type(queue_type)
    }

    /// Names of the registered queue types, sorted.
    pub fn queue_type_names(&self) -> Vec<&'static str> {
        self.registry.lock().type_names()
    }

    /// Creates a queue of the registered type `T` (S.Ha.R.K.
    /// `trc_create_queue`). Handles are 0, 1, 2, … in creation order.
    ///
    /// # Errors
    ///
    /// [`ConfigError::UnknownQueueType`] if `T` was not registered
    /// ([`Tracer::register_queue_type`]); [`ConfigError::TooManyQueues`];
    /// [`ConfigError::InvalidParameter`] for parameters out of range (the message
    /// says what is allowed); [`ConfigError::Io`] if the queue's ring file cannot
    /// be created; [`ConfigError::AfterPhase2`] after [`Tracer::activate`],
    /// [`ConfigError::AfterShutdown`] after shutdown.
    ///
    /// ```
    /// # let _cwd = tempfile::tempdir().unwrap(); std::env::set_current_dir(_cwd.path()).unwrap(); // the queue's file at shutdown: not into the checkout
    /// use qtrace::queues::{Circular, CircularParams, Dummy};
    /// use qtrace::{QueueHandle, Tracer};
    /// use qtrace::storage::RingStorage;
    ///
    /// let tracer = Tracer::new();
    /// let q0 = tracer.create_queue::<Dummy>(())?;
    /// let q1 = tracer.create_queue::<Circular>(CircularParams::default()
    ///     .with_capacity(1024)
    ///     .with_ring(RingStorage::Memory))?;
    /// assert_eq!((q0, q1), (QueueHandle(0), QueueHandle(1)));
    /// // A capacity that is not a power of two is a typed error.
    /// let bad = CircularParams::default().with_capacity(1000);
    /// assert!(tracer.create_queue::<Circular>(bad).is_err());
    /// # Ok::<(), qtrace::Error>(())
    /// ```
    pub fn create_queue<T: QueueType>(
        &self,
        params: T::Params,
    ) -> Result<QueueHandle, ConfigError> {
        let mut r = self.registry.lock();
        r.require_phase1("create a queue")?;
        let queue_type = r.queue_type::<T>()?;
        let index = r.queue_types.len();
        if index >= QueueHandle::MAX_QUEUES {
            return Err(ConfigError::TooManyQueues {
                max: QueueHandle::MAX_QUEUES,
            });
        }
        let handle = QueueHandle(index as u16);
        let ctx = self.context(&r, handle, T::NAME);
        let queue = catch_unwind(AssertUnwindSafe(|| queue_type.create(params, &ctx))).map_err(
            |panic| ConfigError::Hook {
                queue: handle,
                hook: "create",
                message: panic_message(&panic),
            },
        )??;
        let drained = matches!(queue, AnyQueue::OnlineQueue(_) | AnyQueue::UdpQueue(_));
        if self.queues[index].set(queue).is_err() {
            unreachable!("queue slots are filled in order under the lock");
        }
        r.add_queue(T::NAME, drained, false);
        self.gate_if_global(&mut r, handle)?;
        Ok(handle)
    }

    /// Defines a user class; its events are numbered after every event known
    /// so far. Phase 1 only, so every file a queue writes lists it.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Catalog`] if the class does not fit the catalog (an invalid
    /// or duplicate name, too many events or arguments: the inner
    /// [`CatalogError`](crate::classes::CatalogError) says which);
    /// [`ConfigError::AfterPhase2`] after [`Tracer::activate`],
    /// [`ConfigError::AfterShutdown`] after shutdown.
    ///
    /// ```
    /// # let _cwd = tempfile::tempdir().unwrap(); std::env::set_current_dir(_cwd.path()).unwrap(); // the queue's file at shutdown: not into the checkout
    /// use qtrace::classes::ClassSpec;
    ///
    /// let tracer = qtrace::Tracer::new();
    /// let net = tracer.define_class(
    ///     ClassSpec::new("net", "network stack").event("rx", "a packet arrived", &["len", "port"]),
    /// )?;
    /// let rx = net.event("rx").unwrap();
    /// assert_eq!(tracer.catalog().event_name(rx), Some("rx"));
    /// # Ok::<(), qtrace::Error>(())
    /// ```
    pub fn define_class(&self, spec: ClassSpec) -> Result<DefinedClass, ConfigError> {
        let mut r = self.registry.lock();
        r.require_phase1("define a class")?;
        let mut catalog = (*r.catalog).clone();
        let defined = catalog.define(spec)?;
        r.set_catalog(catalog);
        Ok(defined)
    }

    /// Defines the classes a [`classes!`](crate::classes!) declaration
    /// made, with the ids fixed at compile time (call it before any
    /// [`define_class`](Tracer::define_class)). Defining the same catalog
    /// again does nothing. Phase 1 only.
    ///
    /// ```
    /// # let _cwd = tempfile::tempdir().unwrap(); std::env::set_current_dir(_cwd.path()).unwrap(); // the queue's file at shutdown: not into the checkout
    /// qtrace::classes! {
    ///     pub static CATALOG;
    ///     pub mod net: "network stack" {
    ///         event RX = "rx": "a packet was received" (len, port);
    ///     }
    /// }
    /// let tracer = qtrace::Tracer::new();
    /// tracer.define_classes(&CATALOG)?;
    /// assert_eq!(tracer.catalog().class(net::CLASS).unwrap().name, "net");
    /// # Ok::<(), qtrace::ConfigError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ConfigError::AfterPhase2`] or [`ConfigError::AfterShutdown`] after phase 1;
    /// [`ConfigError::Catalog`] with
    /// [`CatalogError::IdTaken`](crate::classes::CatalogError::IdTaken) when
    /// a class's id is already another class (a run-time class defined
    /// first) or the same class described differently.
    pub fn define_classes(&self, catalog: &qtrace_core::StaticCatalog) -> Result<(), ConfigError> {
        let mut r = self.registry.lock();
        r.require_phase1("define classes")?;
        let mut next = (*r.catalog).clone();
        next.define_static(catalog)?;
        if next != *r.catalog {
            r.set_catalog(next);
        }
        Ok(())
    }

    // ----- routing and masks (any time before shutdown) -------------------------

    /// Routes one event to a queue (S.Ha.R.K. `trc_assign_event_to_queue`).
    ///
    /// # Errors
    ///
    /// [`ConfigError::EventOutOfRange`] if the catalog does not define `id`;
    /// [`ConfigError::BadQueueHandle`] if `queue` is not a handle of this tracer;
    /// [`ConfigError::AfterShutdown`] after shutdown.
    ///
    /// ```
    /// use qtrace::classes::user;
    /// use qtrace::queues::Dummy;
    ///
    /// let tracer = qtrace::Tracer::new();
    /// let q = tracer.create_queue::<Dummy>(())?;
    /// tracer.assign_event(user::USER3, q)?;
    /// assert_eq!(tracer.route_of(user::USER3)?, Some(q));
    /// assert_eq!(tracer.route_of(user::USER4)?, None);
    /// # Ok::<(), qtrace::Error>(())
    /// ```
    pub fn assign_event(&self, id: EventId, queue: QueueHandle) -> Result<(), ConfigError> {
        let mut r = self.registry.lock();
        r.require_running("assign an event")?;
        r.check_event(id)?;
        r.check_queue(queue)?;
        r.assign(id, queue);
        self.publish(&r, id);
        Ok(())
    }

    /// Routes every event of a class to a queue (S.Ha.R.K.
    /// `trc_assign_class_to_queue`); the same as assigning each of its events.
    ///
    /// # Errors
    ///
    /// [`ConfigError::ClassOutOfRange`] if the catalog does not define `class`;
    /// [`ConfigError::BadQueueHandle`] if `queue` is not a handle of this tracer;
    /// [`ConfigError::AfterShutdown`] after shutdown.
    ///
    /// ```
    /// use qtrace::classes::system;
    /// use qtrace::queues::Dummy;
    ///
    /// let tracer = qtrace::Tracer::new();
    /// let q = tracer.create_queue::<Dummy>(())?;
    /// tracer.assign_class(system::CLASS, q)?;
    /// assert_eq!(tracer.route_of(system::SCHEDULE)?, Some(q));
    /// # Ok::<(), qtrace::Error>(())
    /// ```
    pub fn assign_class(&self, class: ClassId, queue: QueueHandle) -> Result<(), ConfigError> {
        let mut r = self.registry.lock();
        r.require_running("assign a class")?;
        let events = r.class_events(class)?;
        r.check_queue(queue)?;
        for id in events {
            r.assign(EventId(id), queue);
            self.publish(&r, EventId(id));
        }
        Ok(())
    }

    /// Routes `id` through a [`Filter`] that decides, per event, whether it
    /// is recorded into the queue `id` is assigned to; returns the filter's
    /// queue handle (a [`FilterQueue`], see [`crate::filters`] for its
    /// counters and what a panicking handler does). A filter takes a queue
    /// slot of its own, for good (the tracer holds at most
    /// [`QueueHandle::MAX_QUEUES`] queues). Events without a filter pay
    /// nothing for filters. A second filter replaces the first;
    /// [`Tracer::assign_event`] or [`Tracer::assign_class`] re-routes the
    /// event and removes its filter; [`Tracer::unfilter_event`] removes it.
    /// Any time before shutdown.
    ///
    /// ```
    /// # let _cwd = tempfile::tempdir().unwrap(); std::env::set_current_dir(_cwd.path()).unwrap(); // own directory: doc tests run in parallel
    /// use qtrace::classes::user;
    /// use qtrace::filters::Filter;
    /// use qtrace::queues::{Fixed, FixedParams};
    /// use qtrace::Tracer;
    ///
    /// let tracer = Tracer::new();
    /// let q = tracer.create_queue::<Fixed>(FixedParams::default().with_capacity(16))?;
    /// tracer.assign_event(user::USER0, q)?;
    /// tracer.filter_event(user::USER0, Filter::arg(0, 10..=19))?;
    /// for a in [5, 12, 30, 19] {
    ///     tracer.log_event(user::USER0, [a, 0]);
    /// }
    /// let kept: Vec<u64> = tracer.queue(q)?.as_fixed().unwrap()
    ///     .snapshot_events().iter().map(|e| e.args[0]).collect();
    /// assert_eq!(kept, [12, 19]);
    /// # Ok::<(), qtrace::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ConfigError::EventOutOfRange`]; [`ConfigError::FilterWithoutRoute`] when `id`
    /// is assigned to no queue; [`ConfigError::InvalidParameter`] for
    /// [`Filter::arg`] with an index other than 0 or 1;
    /// [`ConfigError::TooManyQueues`]; [`ConfigError::AfterShutdown`].
    pub fn filter_event(&self, id: EventId, filter: Filter) -> Result<QueueHandle, ConfigError> {
        let mut r = self.registry.lock();
        r.require_running("filter an event")?;
        r.check_event(id)?;
        filter.validate()?;
        let target = r
            .queue_of(id)
            .ok_or(ConfigError::FilterWithoutRoute { id })?;
        let handle = self.create_filter(&mut r, filter, target)?;
        r.set_filter(id, Some(handle));
        self.publish(&r, id);
        Ok(handle)
    }

    /// Routes every event of `class` that is assigned to a queue through
    /// `filter` ([`Tracer::filter_event`] for each, sharing one filter queue
    /// per queue the class's events go to); returns the filter queues'
    /// handles, in the order of the events' queues' first appearance.
    ///
    /// # Errors
    ///
    /// As [`Tracer::filter_event`], with [`ConfigError::ClassOutOfRange`], and
    /// [`ConfigError::FilterWithoutRoute`] (naming the class's first event) when
    /// none of its events is assigned.
    pub fn filter_class(
        &self,
        class: ClassId,
        filter: Filter,
    ) -> Result<Vec<QueueHandle>, ConfigError> {
        let mut r = self.registry.lock();
        r.require_running("filter a class")?;
        let events = r.class_events(class)?;
        filter.validate()?;
        let mut made: Vec<(QueueHandle, QueueHandle)> = Vec::new();
        for id in events.clone().map(EventId) {
            let Some(target) = r.queue_of(id) else {
                continue;
            };
            let handle = match made.iter().find(|(t, _)| *t == target) {
                Some(&(_, h)) => h,
                None => {
                    let h = self.create_filter(&mut r, filter.clone(), target)?;
                    made.push((target, h));
                    h
                }
            };
            r.set_filter(id, Some(handle));
            self.publish(&r, id);
        }
        if made.is_empty() {
            return Err(ConfigError::FilterWithoutRoute {
                id: EventId(events.start),
            });
        }
        Ok(made.into_iter().map(|(_, h)| h).collect())
    }

    /// Removes `id`'s filter: its events go straight to its queue again.
    /// Removing no filter is harmless. The filter queue stays (with its
    /// counters) and is reported at shutdown.
    ///
    /// # Errors
    ///
    /// [`ConfigError::EventOutOfRange`]; [`ConfigError::AfterShutdown`].
    pub fn unfilter_event(&self, id: EventId) -> Result<(), ConfigError> {
        let mut r = self.registry.lock();
        r.require_running("unfilter an event")?;
        r.check_event(id)?;
        r.set_filter(id, None);
        self.publish(&r, id);
        Ok(())
    }

    /// Removes the filter of every event of `class`.
    ///
    /// # Errors
    ///
    /// [`ConfigError::ClassOutOfRange`]; [`ConfigError::AfterShutdown`].
    pub fn unfilter_class(&self, class: ClassId) -> Result<(), ConfigError> {
        let mut r = self.registry.lock();
        r.require_running("unfilter a class")?;
        for id in r.class_events(class)? {
            r.set_filter(EventId(id), None);
            self.publish(&r, EventId(id));
        }
        Ok(())
    }

    /// The filter queue an event is routed through, if any.
    ///
    /// # Errors
    ///
    /// [`ConfigError::EventOutOfRange`].
    pub fn filter_of(&self, id: EventId) -> Result<Option<QueueHandle>, ConfigError> {
        let r = self.registry.lock();
        r.check_event(id)?;
        Ok(r.filter_of(id))
    }

    /// Stores a new filter queue forwarding to `target`.
    pub(super) fn create_filter(
        &self,
        r: &mut Registry,
        filter: Filter,
        target: QueueHandle,
    ) -> Result<QueueHandle, ConfigError> {
        let index = r.queue_types.len();
        if index >= QueueHandle::MAX_QUEUES {
            return Err(ConfigError::TooManyQueues {
                max: QueueHandle::MAX_QUEUES,
            });
        }
        // Filters forward to a real queue, never to another filter.
        let target = self.queues[target.index()]
            .get()
            .expect("created queues are set");
        // SAFETY: `target` is in `self.queues`, a box never moved whose
        // slots are set once and never cleared; the filter queue goes into
        // the same table, so it never outlives its target.
        let queue = unsafe { FilterQueue::new(filter, target) };
        if self.queues[index].set(AnyQueue::custom(queue)).is_err() {
            unreachable!("queue slots are filled in order under the lock");
        }
        // A filter has no activate hook.
        let activated = r.phase != Phase::Configuring;
        r.add_queue(FilterQueue::NAME, false, activated);
        Ok(QueueHandle(index as u16))
    }

    /// Switches one event on (S.Ha.R.K. `trc_trace_event`).
    ///
    /// # Errors
    ///
    /// [`ConfigError::EventOutOfRange`] if the catalog does not define `id`;
    /// [`ConfigError::AfterShutdown`] after shutdown.
    pub fn trace_event(&self, id: EventId) -> Result<(), ConfigError> {
        self.set_event(id, true)
    }

    /// Switches one event off (S.Ha.R.K. `trc_notrace_event`).
    ///
    /// # Errors
    ///
    /// [`ConfigError::EventOutOfRange`] if the catalog does not define `id`;
    /// [`ConfigError::AfterShutdown`] after shutdown.
    pub fn notrace_event(&self, id: EventId) -> Result<(), ConfigError> {
        self.set_event(id, false)
    }

    /// Switches a class on (S.Ha.R.K. `trc_trace_class`). Events switched off
    /// one by one stay off.
    ///
    /// # Errors
    ///
    /// [`ConfigError::ClassOutOfRange`] if the catalog does not define `class`;
    /// [`ConfigError::AfterShutdown`] after shutdown.
    pub fn trace_class(&self, class: ClassId) -> Result<(), ConfigError> {
        self.set_class(class, true)
    }

    /// Switches a whole class off (S.Ha.R.K. `trc_notrace_class`).
    ///
    /// # Errors
    ///
    /// [`ConfigError::ClassOutOfRange`] if the catalog does not define `class`;
    /// [`ConfigError::AfterShutdown`] after shutdown.
    pub fn notrace_class(&self, class: ClassId) -> Result<(), ConfigError> {
        self.set_class(class, false)
    }

    pub(super) fn set_event(&self, id: EventId, on: bool) -> Result<(), ConfigError> {
        let mut r = self.registry.lock();
        r.require_running(if on {
            "enable an event"
        } else {
            "disable an event"
        })?;
        r.check_event(id)?;
        r.set_event_on(id, on);
        self.publish(&r, id);
        Ok(())
    }

    pub(super) fn set_class(&self, class: ClassId, on: bool) -> Result<(), ConfigError> {
        let mut r = self.registry.lock();
        r.require_running(if on {
            "enable a class"
        } else {
            "disable a class"
        })?;
        let events = r.class_events(class)?;
        r.set_class_on(class, on);
        for id in events {
            self.publish(&r, EventId(id));
        }
        Ok(())
    }

    /// Stops recording everything (S.Ha.R.K. `trc_suspend`); routing and masks
    /// are kept. Suspending twice is harmless.
    ///
    /// # Errors
    ///
    /// [`ConfigError::AfterShutdown`] after shutdown.
    pub fn suspend(&self) -> Result<(), ConfigError> {
        let mut r = self.registry.lock();
        r.require_running("suspend the tracer")?;
        r.suspended = true;
        self.publish_all(&r);
        Ok(())
    }

    /// Records again after [`Tracer::suspend`] (S.Ha.R.K. `trc_resume`).
    ///
    /// # Errors
    ///
    /// [`ConfigError::AfterShutdown`] after shutdown.
    pub fn resume(&self) -> Result<(), ConfigError> {
        let mut r = self.registry.lock();
        r.require_running("resume the tracer")?;
        r.suspended = false;
        self.publish_all(&r);
        Ok(())
    }

    /// The route stored for a route word: the word with this tracer's
    /// `key_base` above it (the key the producer cache knows the queue by,
    /// `producer_cache::key`), or 0 for an event not logged.
    fn route(&self, word: u32) -> u64 {
        if word == 0 {
            0
        } else {
            producer_cache::key(self.key_base, word)
        }
    }

    pub(super) fn publish(&self, r: &Registry, id: EventId) {
        self.publish_one(r, id, r.is_owner());
    }

    /// Publishes `id`'s route; `owned` false (a forked child's inherited
    /// tracer) unroutes it whatever the registry says.
    fn publish_one(&self, r: &Registry, id: EventId, owned: bool) {
        // Forwarding queues first, so the route never leads to a stale one.
        super::triggers::rewire(r, &self.queues[..], id);
        let word = if owned { r.route_word(id) } else { 0 };
        self.routes[id.0 as usize].store(self.route(word), Ordering::Relaxed);
    }

    pub(super) fn publish_all(&self, r: &Registry) {
        let owned = r.is_owner();
        for i in 0..r.catalog.event_count() {
            self.publish_one(r, EventId(i as u16), owned);
        }
    }
}
