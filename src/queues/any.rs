//! [`AnyQueue`]: every queue a tracer can hold, one enum so that the hot path
//! dispatches with one `match` and no virtual call.

use super::{CircularQueue, DummyQueue, FixedQueue, OnlineQueue, UdpQueue};
use crate::model::combine::Run;
use crate::model::event::Event;
use crate::queue::config_error::ConfigError;
use crate::queue::queue_trait::{
    DynQueue, Queue, QueueContext, QueueCounters, QueueStatus, Reservation,
};

/// Declares [`AnyQueue`] with one variant per queue kind (each holding the
/// type of its name), `From` for each, and `Queue` for the enum: one `match`
/// per call, every arm a direct, inlinable call. (A `macro_rules!` rather
/// than the `enum_dispatch` proc-macro crate: the same code, without
/// compiling `syn` for the library.)
macro_rules! any_queue {
    ($(#[$meta:meta])* pub enum AnyQueue { $($(#[$vmeta:meta])* $variant:ident,)* }) => {
        $(#[$meta])*
        pub enum AnyQueue {
            $($(#[$vmeta])* $variant($variant),)*
        }

        $(
            impl From<$variant> for AnyQueue {
                fn from(queue: $variant) -> Self {
                    AnyQueue::$variant(queue)
                }
            }
        )*

        impl Queue for AnyQueue {
            #[inline]
            fn get(&self) -> Option<Reservation> {
                match self { $(AnyQueue::$variant(q) => q.get(),)* }
            }
            #[inline]
            fn post(&self, reservation: Reservation, event: &Event) {
                match self { $(AnyQueue::$variant(q) => q.post(reservation, event),)* }
            }
            fn post_run(&self, run: &Run<'_>) -> usize {
                match self { $(AnyQueue::$variant(q) => q.post_run(run),)* }
            }
            fn activate(&self, ctx: &QueueContext) -> Result<(), ConfigError> {
                match self { $(AnyQueue::$variant(q) => q.activate(ctx),)* }
            }
            fn terminate(&self, ctx: &QueueContext) -> Result<(), ConfigError> {
                match self { $(AnyQueue::$variant(q) => q.terminate(ctx),)* }
            }
            fn counters(&self) -> QueueCounters {
                match self { $(AnyQueue::$variant(q) => q.counters(),)* }
            }
            fn status(&self) -> QueueStatus {
                match self { $(AnyQueue::$variant(q) => q.status(),)* }
            }
        }
    };
}

any_queue! {
    /// Every queue a tracer can hold: the built-ins by value, a user-defined
    /// queue boxed.
    ///
    /// ```
    /// use qtrace::queues::{AnyQueue, Dummy};
    ///
    /// let tracer = qtrace::Tracer::new();
    /// let q = tracer.create_queue::<Dummy>(())?;
    /// let queue: &AnyQueue = tracer.queue(q)?;
    /// assert!(queue.as_circular().is_none());
    /// assert!(matches!(queue, AnyQueue::DummyQueue(_)));
    /// # Ok::<(), qtrace::Error>(())
    /// ```
    // The built-ins are stored inline (no pointer to chase on the hot path); their
    // producer indexes are cache-line padded, hence the size differences.
    #[allow(clippy::large_enum_variant)]
    // 128-byte aligned, so that the tracer's table of queues has a stride of a
    // power of two (512 bytes with its `OnceLock`): one shift to index it on
    // the hot path, not a multiply by 5 and a shift (one instruction more per
    // event for every queue reached through the table).
    #[repr(u8, align(128))]
    pub enum AnyQueue {
        /// Discards and counts.
        DummyQueue,
        /// Keeps the first N events.
        FixedQueue,
        /// Keeps the last N events.
        CircularQueue,
        /// Drains to a file in the background.
        OnlineQueue,
        /// Streams to a receiver over UDP.
        UdpQueue,
        /// A user-defined queue type.
        DynQueue,
    }
}

impl AnyQueue {
    /// Wraps a user-defined queue.
    pub fn custom(queue: impl Queue + 'static) -> Self {
        AnyQueue::DynQueue(DynQueue::new(queue))
    }

    /// The circular queue inside, if it is one (for
    /// [`CircularQueue::snapshot`]).
    pub fn as_circular(&self) -> Option<&CircularQueue> {
        match self {
            AnyQueue::CircularQueue(q) => Some(q),
            _ => None,
        }
    }

    /// The circular-online queue inside, if it is one.
    pub fn as_online(&self) -> Option<&OnlineQueue> {
        match self {
            AnyQueue::OnlineQueue(q) => Some(q),
            _ => None,
        }
    }

    /// The UDP queue inside, if it is one (for [`UdpQueue::stats`]).
    pub fn as_udp(&self) -> Option<&UdpQueue> {
        match self {
            AnyQueue::UdpQueue(q) => Some(q),
            _ => None,
        }
    }

    /// The fixed queue inside, if it is one.
    pub fn as_fixed(&self) -> Option<&FixedQueue> {
        match self {
            AnyQueue::FixedQueue(q) => Some(q),
            _ => None,
        }
    }

    /// The user-defined queue inside, as its own type `T`, if it is one of
    /// type `T` (made by [`AnyQueue::custom`] from a `T`). With
    /// [`Tracer::queue`](crate::Tracer::queue) this reaches a custom queue's
    /// own methods while the tracer runs and after
    /// [`Tracer::shutdown`](crate::Tracer::shutdown), as `as_circular` and
    /// the others do for the built-in types.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use qtrace::queues::{AnyQueue, QueueType};
    /// use qtrace::queue::{Queue, QueueContext, QueueCounters, Reservation};
    /// use qtrace::{classes::user, ConfigError, Event, Tracer};
    ///
    /// /// Keeps the sum of every event's first argument.
    /// struct Summer;
    /// #[derive(Default)]
    /// struct SumQueue(AtomicU64);
    ///
    /// impl SumQueue {
    ///     fn sum(&self) -> u64 {
    ///         self.0.load(Ordering::Relaxed)
    ///     }
    /// }
    /// impl QueueType for Summer {
    ///     type Params = ();
    ///     const NAME: &'static str = "summer";
    ///     fn create(&self, _: (), _: &QueueContext) -> Result<AnyQueue, ConfigError> {
    ///         Ok(AnyQueue::custom(SumQueue::default()))
    ///     }
    /// }
    /// impl Queue for SumQueue {
    ///     fn get(&self) -> Option<Reservation> {
    ///         Some(Reservation::new(0))
    ///     }
    ///     fn post(&self, _: Reservation, event: &Event) {
    ///         self.0.fetch_add(event.args[0], Ordering::Relaxed);
    ///     }
    ///     fn counters(&self) -> QueueCounters {
    ///         QueueCounters::default()
    ///     }
    /// }
    ///
    /// let tracer = Tracer::new();
    /// tracer.register_queue_type(Summer)?;
    /// let q = tracer.create_queue::<Summer>(())?;
    /// tracer.assign_class(user::CLASS, q)?;
    /// tracer.activate()?;
    /// tracer.log_event(user::USER0, [40, 0]);
    /// tracer.log_event(user::USER1, [2, 0]);
    /// tracer.shutdown()?;
    /// // After shutdown the queue is still there, as its own type.
    /// let sum = tracer.queue(q)?.as_custom::<SumQueue>().unwrap().sum();
    /// assert_eq!(sum, 42);
    /// // Another type, or a built-in queue, gives None.
    /// assert!(tracer.queue(q)?.as_custom::<qtrace::queues::DummyQueue>().is_none());
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn as_custom<T: Queue + 'static>(&self) -> Option<&T> {
        match self {
            // `(**q)`: the trait object, not the box (which is a
            // `CustomQueue` too, and would downcast as itself).
            AnyQueue::DynQueue(q) => q.inner().as_any().downcast_ref::<T>(),
            _ => None,
        }
    }
}

impl std::fmt::Debug for AnyQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self {
            AnyQueue::DummyQueue(_) => "DummyQueue",
            AnyQueue::FixedQueue(_) => "FixedQueue",
            AnyQueue::CircularQueue(_) => "CircularQueue",
            AnyQueue::OnlineQueue(_) => "OnlineQueue",
            AnyQueue::UdpQueue(_) => "UdpQueue",
            AnyQueue::DynQueue(_) => "DynQueue",
        };
        f.debug_struct("AnyQueue")
            .field("kind", &name)
            .field("counters", &self.counters())
            .finish()
    }
}
