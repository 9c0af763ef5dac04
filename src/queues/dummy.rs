//! The dummy queue: discards every event and counts it (S.Ha.R.K.'s `qdummy`,
//! the template for new policies).

use super::{AnyQueue, QueueType};
use crate::model::combine::Run;
use crate::model::event::Event;
use crate::queue::config_error::ConfigError;
use crate::queue::queue_trait::{Queue, QueueContext, QueueCounters, Reservation};
use crate::sync::{AtomicU64, Ordering};

/// The dummy queue type. No parameters.
///
/// ```
/// use qtrace::classes::user;
/// use qtrace::queues::{Dummy, DummyQueue};
///
/// let tracer = qtrace::Tracer::new();
/// let q = tracer.create_queue::<Dummy>(())?;
/// tracer.assign_class(user::CLASS, q)?;
/// tracer.log_event(user::USER0, [1, 0]);
/// assert!(tracer.queue(q)?.as_custom::<DummyQueue>().is_none()); // a built-in, not a custom queue
/// assert_eq!(tracer.counters(q)?.accepted, 1);
/// # Ok::<(), qtrace::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Dummy;

impl QueueType for Dummy {
    type Params = ();
    const NAME: &'static str = "dummy";

    fn create(&self, _params: (), _ctx: &QueueContext) -> Result<AnyQueue, ConfigError> {
        Ok(AnyQueue::DummyQueue(DummyQueue::default()))
    }
}

/// A queue that accepts every event, then forgets it. Every event counts as
/// accepted and delivered (to nowhere, on purpose).
///
/// ```
/// use qtrace::classes::user;
/// use qtrace::queues::{Dummy, DummyQueue};
///
/// let tracer = qtrace::Tracer::new();
/// let q = tracer.create_queue::<Dummy>(())?;
/// tracer.assign_class(user::CLASS, q)?;
/// tracer.log_event(user::USER0, [1, 0]);
/// assert!(tracer.queue(q)?.as_custom::<DummyQueue>().is_none()); // a built-in, not a custom queue
/// assert_eq!(tracer.counters(q)?.accepted, 1);
/// # Ok::<(), qtrace::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct DummyQueue {
    accepted: AtomicU64,
}

impl Queue for DummyQueue {
    #[inline]
    fn get(&self) -> Option<Reservation> {
        Some(Reservation::new(0))
    }

    #[inline]
    fn post(&self, _reservation: Reservation, _event: &Event) {
        self.accepted.fetch_add(1, Ordering::Relaxed);
    }

    fn post_run(&self, run: &Run<'_>) -> usize {
        self.accepted.fetch_add(run.len() as u64, Ordering::Relaxed);
        run.len()
    }

    fn counters(&self) -> QueueCounters {
        let n = self.accepted.load(Ordering::Relaxed);
        QueueCounters::all_delivered(n)
    }
}
