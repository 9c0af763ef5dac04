//! The system class (`0x02`–`0x0a`): what the kernel or scheduler does to tasks.
//! Payload: `args[0]` = the task id (a u16 in S.Ha.R.K.).

use super::{BuiltinEvent, ClassId};
use crate::EventId;

/// The class id.
pub const CLASS: ClassId = ClassId::SYSTEM;
/// A task was created.
pub const CREATE: EventId = EventId(0x02);
/// A task was activated (released).
pub const ACTIVATE: EventId = EventId(0x03);
/// A task was scheduled (given the CPU).
pub const SCHEDULE: EventId = EventId(0x04);
/// A task delayed itself.
pub const DELAY: EventId = EventId(0x05);
/// A task went to sleep.
pub const SLEEP: EventId = EventId(0x06);
/// A task ended its current job (instance).
pub const ENDCYCLE: EventId = EventId(0x07);
/// A task was destroyed.
pub const DESTROY: EventId = EventId(0x08);
/// An activation arrived while the task was still running its previous job.
pub const INTACTIVATION: EventId = EventId(0x09);
/// A task was disabled.
pub const DISABLE: EventId = EventId(0x0a);

const TASK: &[&str] = &["task"];

/// The class's events, in id order.
pub const EVENTS: &[BuiltinEvent] = &[
    BuiltinEvent::new(CREATE, "create", "a task was created", TASK),
    BuiltinEvent::new(ACTIVATE, "activate", "a task was activated", TASK),
    BuiltinEvent::new(SCHEDULE, "schedule", "a task was given the CPU", TASK),
    BuiltinEvent::new(DELAY, "delay", "a task delayed itself", TASK),
    BuiltinEvent::new(SLEEP, "sleep", "a task went to sleep", TASK),
    BuiltinEvent::new(ENDCYCLE, "endcycle", "a task ended its current job", TASK),
    BuiltinEvent::new(DESTROY, "destroy", "a task was destroyed", TASK),
    BuiltinEvent::new(
        INTACTIVATION,
        "intactivation",
        "an activation arrived while the previous job still ran",
        TASK,
    ),
    BuiltinEvent::new(DISABLE, "disable", "a task was disabled", TASK),
];
