//! The queue trait (S.Ha.R.K.'s `trc_queue_t { get, post }`), queue types with
//! their create / activate / terminate hooks, and the counters every queue keeps.
//!
//! A queue decides the fate of the events routed to it. The tracer calls
//! [`Queue::get`] to reserve room for one event — the queue answers at once,
//! with a [`Reservation`] or with `None` ("no room", which the queue counts as a
//! drop) — then fills the record and calls [`Queue::post`] to publish it.
//! Both run on the hot path, from any thread, and must never block or allocate.
//!
//! Built-in queues are dispatched statically through the
//! [`AnyQueue`](crate::queues::AnyQueue) enum; a user-defined queue (safe
//! code is enough) is wrapped with
//! [`AnyQueue::custom`](crate::queues::AnyQueue::custom) and reached through
//! one virtual call.
//!
//! The trait, counters, context and reservations live in this core module,
//! which knows no queue; [`queues::QueueType`](crate::queues::QueueType) (whose
//! `create` returns [`AnyQueue`](crate::queues::AnyQueue)) and `AnyQueue`
//! live with the built-in queues in [`crate::queues`].
//!
//! In this folder: the trait, its context, counters and reservations
//! (`queue_trait.rs`), and [`ConfigError`](crate::ConfigError) (public at the
//! crate root), the error of
//! configuring a tracer and its queues (`config_error.rs`).
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

pub(crate) mod config_error;
pub(crate) mod queue_trait;

pub use queue_trait::*;
