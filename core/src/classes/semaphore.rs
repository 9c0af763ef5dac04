//! The semaphore class (`0x14`–`0x16`). Payload: `args[0]` = the task id,
//! `args[1]` = the semaphore id (both u16 in S.Ha.R.K.).

use super::{BuiltinEvent, ClassId};
use crate::EventId;

/// The class id.
pub const CLASS: ClassId = ClassId::SEMAPHORE;
/// A task waited on a semaphore (blocking wait).
pub const WAIT: EventId = EventId(0x14);
/// A task tried a semaphore without blocking.
pub const WAITNB: EventId = EventId(0x15);
/// A task signalled a semaphore.
pub const SIGNAL: EventId = EventId(0x16);

const ARGS: &[&str] = &["task", "sem"];

/// The class's events, in id order.
pub const EVENTS: &[BuiltinEvent] = &[
    BuiltinEvent::new(WAIT, "wait", "a task waited on a semaphore", ARGS),
    BuiltinEvent::new(
        WAITNB,
        "waitnb",
        "a task tried a semaphore without blocking",
        ARGS,
    ),
    BuiltinEvent::new(SIGNAL, "signal", "a task signalled a semaphore", ARGS),
];
