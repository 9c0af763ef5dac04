//! The queue-type trait: a name, typed parameters and the `create` hook
//! that builds an [`AnyQueue`]. It lives with the queues because `create`
//! returns the enum of built-in queues; the core's side of a queue (the
//! [`Queue`](crate::queue::queue_trait::Queue) trait, counters, context) knows no queue.

use super::AnyQueue;
use crate::queue::config_error::ConfigError;
use crate::queue::queue_trait::QueueContext;

/// A queue type (S.Ha.R.K.'s `trc_register_queue_type`): a name, typed
/// parameters and the `create` hook. The `activate` and `terminate` hooks are
/// methods of the queue it creates.
///
/// A value of the type is registered with
/// [`Tracer::register_queue_type`](crate::Tracer::register_queue_type), so a
/// type may carry state its queues share (a channel, a directory).
///
/// ```
/// use qtrace::queue::QueueContext;
/// use qtrace::queues::{AnyQueue, DummyQueue, QueueType};
/// use qtrace::ConfigError;
///
/// /// A queue type whose queues discard everything (a built-in queue inside).
/// struct Discard;
/// impl QueueType for Discard {
///     type Params = ();
///     const NAME: &'static str = "discard";
///     fn create(&self, _: (), _: &QueueContext) -> Result<AnyQueue, ConfigError> {
///         Ok(AnyQueue::from(DummyQueue::default()))
///     }
/// }
///
/// let tracer = qtrace::Tracer::new();
/// tracer.register_queue_type(Discard)?;
/// let q = tracer.create_queue::<Discard>(())?;
/// assert_eq!(tracer.queue_type_names().iter().filter(|n| **n == "discard").count(), 1);
/// # let _ = q;
/// # Ok::<(), ConfigError>(())
/// ```
pub trait QueueType: Send + Sync + 'static {
    /// Parameters of one queue; `Default` gives the documented defaults.
    type Params;
    /// The type's name, for reports and errors.
    const NAME: &'static str;
    /// The create hook: build a queue from parameters. Allocation happens here,
    /// never on the hot path.
    ///
    /// # Errors
    ///
    /// [`ConfigError::InvalidParameter`] for parameters out of range (the message
    /// says what is allowed), [`ConfigError::Io`] for a file it cannot create.
    /// [`Tracer::create_queue`](crate::Tracer::create_queue) returns it.
    fn create(&self, params: Self::Params, ctx: &QueueContext) -> Result<AnyQueue, ConfigError>;
}
