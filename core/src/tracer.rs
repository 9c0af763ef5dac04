//! The firmware tracer: a static catalog, static rings, a routing table and
//! a clock, with a `log_event` that never blocks.

use crate::classes::ClassId;
use crate::dump::{dump_ring, DumpSummary};
use crate::encode::catalog::StaticCatalog;
use crate::encode::header::HeaderSpec;
use crate::ring::Ring;
use crate::routing::{RouteError, Routes, MAX_QUEUES};
use crate::{Event, EventId, QueueCounters};

/// A tracer for firmware and kernels: `Q` queues (static rings, handles
/// `0..Q` in the order given), routes for `E` events, timestamps from
/// `clock` (ticks at a rate the dump's [`HeaderSpec::ticks_per_second`]
/// states). Every event and class starts traced and unrouted: route events
/// with [`Tracer::assign_event`] / [`Tracer::assign_class`].
///
/// Build it in a `static` (every constructor is `const`); configure it from
/// one context at a time (routing calls store atomics without a lock), log
/// from any context, interrupts included.
///
/// ```
/// use qtrace_core::classes::{system, ClassId};
/// use qtrace_core::ring::{CircularRing, Ring};
/// use qtrace_core::{StaticCatalog, Tracer};
///
/// fn ticks() -> u64 { 7 }
/// static RING: CircularRing<64> = CircularRing::new();
/// static TRACER: Tracer<1> = Tracer::new(&StaticCatalog::BUILTIN, [&RING], ticks);
///
/// TRACER.assign_class(ClassId::SYSTEM, 0).unwrap();
/// TRACER.log_event(system::SCHEDULE, 0, [3, 0]);
/// TRACER.notrace_event(system::SCHEDULE).unwrap();
/// TRACER.log_event(system::SCHEDULE, 0, [4, 0]); // masked out
/// assert_eq!(RING.counters().accepted, 1);
/// ```
pub struct Tracer<'a, const Q: usize, const E: usize = 64> {
    catalog: &'a StaticCatalog,
    queues: [&'a dyn Ring; Q],
    routes: Routes<E>,
    clock: fn() -> u64,
}

/// Each queue's type and counters (the routes and the clock are left out).
impl<const Q: usize, const E: usize> core::fmt::Debug for Tracer<'_, Q, E> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        struct Queues<'q, 'a, const Q: usize>(&'q [&'a dyn Ring; Q]);
        impl<const Q: usize> core::fmt::Debug for Queues<'_, '_, Q> {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.debug_list()
                    .entries(self.0.iter().map(|q| (q.type_name(), q.counters())))
                    .finish()
            }
        }
        f.debug_struct("Tracer")
            .field("queues", &Queues(&self.queues))
            .finish_non_exhaustive()
    }
}

impl<'a, const Q: usize, const E: usize> Tracer<'a, Q, E> {
    /// A tracer over `queues` naming its events from `catalog`.
    ///
    /// # Panics
    /// (At compile time in a `static`.) If `Q` is above 255, or the catalog
    /// has more than `E` events or more than 32 classes.
    pub const fn new(
        catalog: &'a StaticCatalog,
        queues: [&'a dyn Ring; Q],
        clock: fn() -> u64,
    ) -> Self {
        assert!(Q <= MAX_QUEUES, "at most 255 queues");
        Tracer {
            catalog,
            queues,
            routes: Routes::new(catalog),
            clock,
        }
    }

    /// Logs event `id` from `source` with `args`: reads the clock, reserves
    /// a slot in the event's queue and fills it. A masked-out or unrouted
    /// event costs one byte load and a branch. Never blocks (a ring's
    /// critical section is a few dozen instructions); a full fixed ring
    /// counts the event dropped.
    #[inline]
    pub fn log_event(&self, id: EventId, source: u32, args: [u64; 2]) {
        if let Some(q) = self.routes.gate(id) {
            if let Some(queue) = self.queues.get(q) {
                if let Some(r) = queue.get() {
                    queue.post(r, &Event::new((self.clock)(), id, source, args));
                }
            }
        }
    }

    /// The clock's current time, in its ticks.
    pub fn now(&self) -> u64 {
        (self.clock)()
    }

    fn queue_index(&self, queue: u16) -> Result<u8, RouteError> {
        if (queue as usize) < Q {
            Ok(queue as u8)
        } else {
            Err(RouteError::NoSuchQueue { queue, queues: Q })
        }
    }

    /// Routes event `id` to queue `queue`.
    ///
    /// # Errors
    /// [`RouteError::EventOutOfRange`] past the catalog,
    /// [`RouteError::NoSuchQueue`] for a handle not below `Q`.
    pub fn assign_event(&self, id: EventId, queue: u16) -> Result<(), RouteError> {
        let q = self.queue_index(queue)?;
        self.routes.assign_event(id, q)
    }

    /// Routes every event of `class` to queue `queue`.
    ///
    /// # Errors
    /// [`RouteError::ClassOutOfRange`] past the catalog,
    /// [`RouteError::NoSuchQueue`] for a handle not below `Q`.
    pub fn assign_class(&self, class: ClassId, queue: u16) -> Result<(), RouteError> {
        let q = self.queue_index(queue)?;
        self.routes.assign_class(class, q)
    }

    /// Traces event `id` again (its class must be traced too).
    ///
    /// # Errors
    /// [`RouteError::EventOutOfRange`] past the catalog.
    pub fn trace_event(&self, id: EventId) -> Result<(), RouteError> {
        self.routes.set_event(id, true)
    }

    /// Stops tracing event `id`.
    ///
    /// # Errors
    /// [`RouteError::EventOutOfRange`] past the catalog.
    pub fn notrace_event(&self, id: EventId) -> Result<(), RouteError> {
        self.routes.set_event(id, false)
    }

    /// Traces `class` again (its events that are traced themselves).
    ///
    /// # Errors
    /// [`RouteError::ClassOutOfRange`] past the catalog.
    pub fn trace_class(&self, class: ClassId) -> Result<(), RouteError> {
        self.routes.set_class(class, true)
    }

    /// Stops tracing every event of `class`.
    ///
    /// # Errors
    /// [`RouteError::ClassOutOfRange`] past the catalog.
    pub fn notrace_class(&self, class: ClassId) -> Result<(), RouteError> {
        self.routes.set_class(class, false)
    }

    /// Queue `queue`'s counters.
    ///
    /// # Errors
    /// [`RouteError::NoSuchQueue`] for a handle not below `Q`.
    pub fn counters(&self, queue: u16) -> Result<QueueCounters, RouteError> {
        let q = self.queue_index(queue)?;
        Ok(self.queues[q as usize].counters())
    }

    /// Writes queue `queue` as a complete standard trace file into `sink`
    /// (see [`dump_ring`]): the header from `spec` (its queue set to this
    /// queue) with this tracer's catalog, the queue's events with hoops
    /// records for its losses, and a close run stamped with the clock's
    /// time. The queue's events are taken out (counted delivered).
    ///
    /// # Errors
    /// [`RouteError::NoSuchQueue`] for a handle not below `Q`.
    pub fn dump(
        &self,
        queue: u16,
        spec: &HeaderSpec<'_>,
        sink: &mut impl FnMut(&[u8]),
    ) -> Result<DumpSummary, RouteError> {
        let q = self.queue_index(queue)?;
        let ring = self.queues[q as usize];
        Ok(dump_ring(ring, queue, self.catalog, spec, self.clock, sink))
    }
}
