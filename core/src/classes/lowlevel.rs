//! The low-level class (`0x13`): interrupts. Payload: `args[0]` = the interrupt
//! number.

use super::{BuiltinEvent, ClassId};
use crate::EventId;

/// The class id.
pub const CLASS: ClassId = ClassId::LOWLEVEL;
/// An interrupt request was served.
pub const INTERRUPT: EventId = EventId(0x13);

/// The class's events, in id order.
pub const EVENTS: &[BuiltinEvent] = &[BuiltinEvent::new(
    INTERRUPT,
    "interrupt",
    "an interrupt request was served",
    &["irq"],
)];
