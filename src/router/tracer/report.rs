//! What [`Tracer::shutdown`](super::Tracer::shutdown) reports: each queue's counters, status and
//! error ([`QueueReport`]), gathered in a [`ShutdownReport`].

use crate::model::handle::QueueHandle;
use crate::queue::queue_trait::{QueueCounters, QueueStatus};

/// One queue's account at shutdown.
///
/// ```
/// use qtrace::classes::user;
/// use qtrace::queues::Dummy;
/// use qtrace::{QueueReport, ShutdownReport};
///
/// let tracer = qtrace::Tracer::new();
/// let q = tracer.create_queue::<Dummy>(())?;
/// tracer.assign_class(user::CLASS, q)?;
/// tracer.activate()?;
/// tracer.log_event(user::USER0, [1, 0]);
/// let report: ShutdownReport = tracer.shutdown()?;
/// let queue: &QueueReport = &report.queues[0];
/// assert_eq!((queue.handle, queue.type_name), (q, "dummy"));
/// assert_eq!(queue.counters.accepted, 1);
/// assert_eq!(report.total_lost(), 0);
/// assert!(report.is_clean());
/// # Ok::<(), qtrace::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueReport {
    /// The queue's handle.
    pub handle: QueueHandle,
    /// Its type's name.
    pub type_name: &'static str,
    /// Its final counters.
    pub counters: QueueCounters,
    /// Its health and files.
    pub status: QueueStatus,
    /// What went wrong in its terminate hook, if anything.
    pub error: Option<String>,
}

/// What [`Tracer::shutdown`](super::Tracer::shutdown) reports: every queue's account, in handle order.
///
/// ```
/// use qtrace::classes::user;
/// use qtrace::queues::Dummy;
/// use qtrace::{QueueReport, ShutdownReport};
///
/// let tracer = qtrace::Tracer::new();
/// let q = tracer.create_queue::<Dummy>(())?;
/// tracer.assign_class(user::CLASS, q)?;
/// tracer.activate()?;
/// tracer.log_event(user::USER0, [1, 0]);
/// let report: ShutdownReport = tracer.shutdown()?;
/// let queue: &QueueReport = &report.queues[0];
/// assert_eq!((queue.handle, queue.type_name), (q, "dummy"));
/// assert_eq!(queue.counters.accepted, 1);
/// assert_eq!(report.total_lost(), 0);
/// assert!(report.is_clean());
/// # Ok::<(), qtrace::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShutdownReport {
    /// One entry per queue.
    pub queues: Vec<QueueReport>,
}

impl ShutdownReport {
    /// Events lost by every queue together (dropped + overwritten).
    pub fn total_lost(&self) -> u64 {
        self.queues.iter().map(|q| q.counters.lost()).sum()
    }

    /// Snapshots on trigger suppressed by their rate limits, over every
    /// trigger queue ([`QueueStatus::snapshots_suppressed`]).
    pub fn snapshots_suppressed(&self) -> u64 {
        self.queues
            .iter()
            .map(|q| q.status.snapshots_suppressed)
            .sum()
    }

    /// Events that may be lost to a panic in a user-defined queue, over
    /// every queue ([`QueueStatus::lost_to_panic`]).
    pub fn lost_to_panic(&self) -> u64 {
        self.queues.iter().map(|q| q.status.lost_to_panic).sum()
    }

    /// Whether every terminate hook succeeded, no queue saw an I/O error
    /// and no event may be lost to a panic (a user-defined queue whose
    /// `get`, `post` or `post_run` panicked: [`ShutdownReport::lost_to_panic`]).
    pub fn is_clean(&self) -> bool {
        self.queues
            .iter()
            .all(|q| q.error.is_none() && q.status.is_healthy())
    }
}
