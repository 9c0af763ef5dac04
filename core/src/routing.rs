//! The routing table: which queue each event goes to, and the per-event and
//! per-class on/off masks, in fixed-size arrays of atomics (loads and stores
//! only: no compare-and-swap needed).

use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use crate::classes::ClassId;
use crate::encode::catalog::StaticCatalog;
use crate::EventId;

/// The gate value of an event that goes nowhere (off, or not routed).
pub(crate) const OFF: u8 = u8::MAX;
/// The most queues a routing table addresses (handles 0–254).
pub const MAX_QUEUES: usize = OFF as usize;
/// The most classes a firmware routing table holds.
pub const MAX_CLASSES: usize = 32;

/// A configuration call the routing table refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RouteError {
    /// The event number is past the catalog (or past the table's `E`).
    EventOutOfRange {
        /// The event asked for.
        id: EventId,
        /// How many events the tracer routes.
        events: usize,
    },
    /// The class number is past the catalog.
    ClassOutOfRange {
        /// The class asked for.
        class: ClassId,
        /// How many classes the catalog has.
        classes: usize,
    },
    /// No queue has that handle.
    NoSuchQueue {
        /// The handle asked for.
        queue: u16,
        /// How many queues the tracer has (handles `0..queues`).
        queues: usize,
    },
}

impl fmt::Display for RouteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            RouteError::EventOutOfRange { id, events } => write!(
                f,
                "event {id} is out of range: this tracer routes events 0x0000 to {:#06x} \
                 (add the class to its StaticCatalog and raise the Tracer's E)",
                events.saturating_sub(1)
            ),
            RouteError::ClassOutOfRange { class, classes } => write!(
                f,
                "class {class} is out of range: the catalog has classes 0 to {}",
                classes.saturating_sub(1)
            ),
            RouteError::NoSuchQueue { queue, queues } => write!(
                f,
                "no queue has handle {queue}: Tracer::new was given {queues} queues (handles 0 to {})",
                queues.saturating_sub(1)
            ),
        }
    }
}

/// Routes for `E` events: `gate[e]` is the queue of event `e` when the
/// event and its class are both traced, [`OFF`] otherwise, so logging reads
/// one byte.
pub(crate) struct Routes<const E: usize> {
    gate: [AtomicU8; E],
    queue: [AtomicU8; E],
    event_on: [AtomicBool; E],
    class_on: [AtomicBool; MAX_CLASSES],
    class_of: [u8; E],
    events: usize,
    classes: usize,
}

impl<const E: usize> Routes<E> {
    /// Every event unrouted, every event and class traced.
    pub(crate) const fn new(catalog: &StaticCatalog) -> Self {
        let events = catalog.event_count();
        assert!(
            events <= E,
            "the catalog has more events than the Tracer's E"
        );
        let classes = catalog.class_count_const();
        assert!(
            classes <= MAX_CLASSES,
            "at most 32 classes in a firmware tracer"
        );
        let mut class_of = [0u8; E];
        let mut e = 0;
        while e < events {
            class_of[e] = catalog.class_of_const(e) as u8;
            e += 1;
        }
        Routes {
            gate: [const { AtomicU8::new(OFF) }; E],
            queue: [const { AtomicU8::new(OFF) }; E],
            event_on: [const { AtomicBool::new(true) }; E],
            class_on: [const { AtomicBool::new(true) }; MAX_CLASSES],
            class_of,
            events,
            classes,
        }
    }

    /// The queue event `id` goes to now, if any: one relaxed byte load.
    #[inline(always)]
    pub(crate) fn gate(&self, id: EventId) -> Option<usize> {
        match self.gate.get(id.0 as usize) {
            Some(g) => {
                let g = g.load(Ordering::Relaxed);
                (g != OFF).then_some(g as usize)
            }
            None => None,
        }
    }

    fn check_event(&self, id: EventId) -> Result<usize, RouteError> {
        let i = id.0 as usize;
        if i < self.events {
            Ok(i)
        } else {
            Err(RouteError::EventOutOfRange {
                id,
                events: self.events,
            })
        }
    }

    fn check_class(&self, class: ClassId) -> Result<usize, RouteError> {
        let c = class.0 as usize;
        if c < self.classes {
            Ok(c)
        } else {
            Err(RouteError::ClassOutOfRange {
                class,
                classes: self.classes,
            })
        }
    }

    fn refresh(&self, i: usize) {
        let on = self.event_on[i].load(Ordering::Relaxed)
            && self.class_on[self.class_of[i] as usize].load(Ordering::Relaxed);
        let q = self.queue[i].load(Ordering::Relaxed);
        self.gate[i].store(if on { q } else { OFF }, Ordering::Relaxed);
    }

    fn events_of(&self, c: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.events).filter(move |&i| self.class_of[i] as usize == c)
    }

    pub(crate) fn assign_event(&self, id: EventId, queue: u8) -> Result<(), RouteError> {
        let i = self.check_event(id)?;
        self.queue[i].store(queue, Ordering::Relaxed);
        self.refresh(i);
        Ok(())
    }

    pub(crate) fn assign_class(&self, class: ClassId, queue: u8) -> Result<(), RouteError> {
        let c = self.check_class(class)?;
        for i in self.events_of(c) {
            self.queue[i].store(queue, Ordering::Relaxed);
            self.refresh(i);
        }
        Ok(())
    }

    pub(crate) fn set_event(&self, id: EventId, on: bool) -> Result<(), RouteError> {
        let i = self.check_event(id)?;
        self.event_on[i].store(on, Ordering::Relaxed);
        self.refresh(i);
        Ok(())
    }

    pub(crate) fn set_class(&self, class: ClassId, on: bool) -> Result<(), RouteError> {
        let c = self.check_class(class)?;
        self.class_on[c].store(on, Ordering::Relaxed);
        for i in self.events_of(c) {
            self.refresh(i);
        }
        Ok(())
    }
}

impl StaticCatalog {
    pub(crate) const fn class_count_const(&self) -> usize {
        crate::classes::BUILTIN.len() + self.user_classes().len()
    }

    /// The class number of event `e` (`e < event_count()`).
    pub(crate) const fn class_of_const(&self, e: usize) -> usize {
        let mut c = 0;
        let mut first = 0;
        while c < self.class_count_const() {
            let n = if c < crate::classes::BUILTIN.len() {
                crate::classes::BUILTIN[c].events.len()
            } else {
                self.user_classes()[c - crate::classes::BUILTIN.len()]
                    .events
                    .len()
            };
            if e < first + n {
                return c;
            }
            first += n;
            c += 1;
        }
        panic!("event past the catalog")
    }
}
