//! The header of the trace file a queue writes: built here, in the queues
//! layer, from the queue's context, so that the wire layer knows no queue
//! (it takes the handle as a number and the type as a name).

use crate::classes::{validate_name, MAX_NAME_LEN};
use crate::queue::queue_trait::QueueContext;
use crate::wire::header::NO_QUEUE;
use crate::wire::TraceHeader;

impl TraceHeader {
    /// The header of the file a queue writes: the tracer's catalog and clock,
    /// the queue's handle and type name, and the "closes its files" flag. A
    /// type name that is not a name (cut to 64 bytes) writes "no queue"
    /// (FORMAT.md 1.2).
    pub fn for_queue(ctx: &QueueContext) -> Self {
        let h = TraceHeader::new((*ctx.catalog).clone(), &ctx.clock).with_close_run(true);
        let name = qtrace_core::encode::catalog::truncate_str(ctx.type_name, MAX_NAME_LEN);
        if validate_name("queue type", name).is_ok() && ctx.handle.0 != NO_QUEUE {
            if let Ok(with) = h.clone().with_queue(ctx.handle, name) {
                return with;
            }
        }
        h
    }
}
