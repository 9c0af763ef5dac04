//! The tracer class (`0x00`–`0x01`): events the tracer itself writes.

use super::{BuiltinEvent, ClassId};
use crate::EventId;

/// The class id.
pub const CLASS: ClassId = ClassId::TRACER;
/// Reserved (S.Ha.R.K. `TRC_NOTHING`); never logged.
pub const RESERVED: EventId = EventId(0x00);
/// "Hoops": events were lost here. `args[0]` = how many, `args[1]` = the queue
/// handle that lost them.
pub const HOOPS: EventId = EventId(0x01);

/// The class's events, in id order.
pub const EVENTS: &[BuiltinEvent] = &[
    BuiltinEvent::new(
        RESERVED,
        "reserved",
        "reserved by the tracer; never logged",
        &[],
    ),
    BuiltinEvent::new(
        HOOPS,
        "hoops",
        "events were lost at this point (count, queue)",
        &["lost", "queue"],
    ),
];
