//! The user class (`0x0b`–`0x12`): eight events for the application's own use.
//! Payload: `args[0]` = a 64-bit value (a `long` in S.Ha.R.K.), `args[1]` = a
//! second free argument.

use super::{BuiltinEvent, ClassId};
use crate::EventId;

/// The class id.
pub const CLASS: ClassId = ClassId::USER;
/// User event 0.
pub const USER0: EventId = EventId(0x0b);
/// User event 1.
pub const USER1: EventId = EventId(0x0c);
/// User event 2.
pub const USER2: EventId = EventId(0x0d);
/// User event 3.
pub const USER3: EventId = EventId(0x0e);
/// User event 4.
pub const USER4: EventId = EventId(0x0f);
/// User event 5.
pub const USER5: EventId = EventId(0x10);
/// User event 6.
pub const USER6: EventId = EventId(0x11);
/// User event 7.
pub const USER7: EventId = EventId(0x12);

/// User event `n` (0–7).
///
/// # Panics
/// If `n > 7`; this is a programming error, checked at compile time when used in
/// a `const`.
pub const fn user(n: u16) -> EventId {
    assert!(n < 8, "there are eight user events, user0..user7");
    EventId(USER0.0 + n)
}

const ARGS: &[&str] = &["value", "arg1"];

/// The class's events, in id order.
pub const EVENTS: &[BuiltinEvent] = &[
    BuiltinEvent::new(USER0, "user0", "application event 0", ARGS),
    BuiltinEvent::new(USER1, "user1", "application event 1", ARGS),
    BuiltinEvent::new(USER2, "user2", "application event 2", ARGS),
    BuiltinEvent::new(USER3, "user3", "application event 3", ARGS),
    BuiltinEvent::new(USER4, "user4", "application event 4", ARGS),
    BuiltinEvent::new(USER5, "user5", "application event 5", ARGS),
    BuiltinEvent::new(USER6, "user6", "application event 6", ARGS),
    BuiltinEvent::new(USER7, "user7", "application event 7", ARGS),
];
