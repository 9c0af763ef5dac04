//! The five built-in S.Ha.R.K. classes as `const` tables: their numbering,
//! names, one-line descriptions and argument names. [`BUILTIN`] is what
//! every trace file's class table starts with; the std crate's
//! `qtrace::classes::Catalog::builtin` is built from it, and a firmware's
//! static catalog ([`StaticCatalog`](crate::StaticCatalog)) starts with it.
//!
//! ```
//! use qtrace_core::classes::{system, ClassId, BUILTIN};
//!
//! assert_eq!(BUILTIN[ClassId::SYSTEM.0 as usize].name, "system");
//! assert_eq!(BUILTIN[1].events[2].id, system::SCHEDULE);
//! assert_eq!(BUILTIN[1].events[2].name, "schedule");
//! ```

pub mod counter;
pub mod flow;
pub mod lowlevel;
pub mod semaphore;
pub mod system;
pub mod tracer;
pub mod user;

use core::fmt;

use crate::EventId;

/// The number of a class. Built-ins are 0–4; user-defined classes follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct ClassId(pub u16);

impl ClassId {
    /// The tracer's own events (reserved, hoops).
    pub const TRACER: ClassId = ClassId(0);
    /// Task events from the kernel or scheduler.
    pub const SYSTEM: ClassId = ClassId(1);
    /// The eight application events.
    pub const USER: ClassId = ClassId(2);
    /// Interrupts.
    pub const LOWLEVEL: ClassId = ClassId(3);
    /// Semaphore events.
    pub const SEMAPHORE: ClassId = ClassId(4);
    /// The first id handed to a user-defined class.
    pub const FIRST_USER_DEFINED: ClassId = ClassId(5);
    /// The largest number of classes a tracer knows.
    pub const MAX_CLASSES: usize = 256;
}

impl fmt::Display for ClassId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The largest number of arguments an event has (the record has two 64-bit slots).
pub const MAX_ARGS: usize = 2;
/// The longest class or event name, in bytes.
pub const MAX_NAME_LEN: usize = 64;
/// The longest description, in bytes.
pub const MAX_DESCRIPTION_LEN: usize = 256;

/// An event's static description: id, name, one-line description, argument
/// names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BuiltinEvent {
    /// The event number.
    pub id: EventId,
    /// The name (`[A-Za-z0-9_.-]`, 1–64 bytes).
    pub name: &'static str,
    /// One line, at most 256 bytes.
    pub description: &'static str,
    /// At most [`MAX_ARGS`] argument names.
    pub args: &'static [&'static str],
}

impl BuiltinEvent {
    /// A table entry.
    pub const fn new(
        id: EventId,
        name: &'static str,
        description: &'static str,
        args: &'static [&'static str],
    ) -> Self {
        BuiltinEvent {
            id,
            name,
            description,
            args,
        }
    }
}

/// A class's static description: its events are numbered consecutively
/// from `events[0].id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BuiltinClass {
    /// The class number.
    pub id: ClassId,
    /// The name.
    pub name: &'static str,
    /// One line.
    pub description: &'static str,
    /// The class's events, in id order.
    pub events: &'static [BuiltinEvent],
}

/// The five built-in classes, in class order, with their 23 events
/// numbered as in S.Ha.R.K.
pub const BUILTIN: [BuiltinClass; 5] = [
    BuiltinClass {
        id: ClassId::TRACER,
        name: "tracer",
        description: "events written by the tracer itself",
        events: tracer::EVENTS,
    },
    BuiltinClass {
        id: ClassId::SYSTEM,
        name: "system",
        description: "task events from the kernel or scheduler",
        events: system::EVENTS,
    },
    BuiltinClass {
        id: ClassId::USER,
        name: "user",
        description: "events for the application's own use",
        events: user::EVENTS,
    },
    BuiltinClass {
        id: ClassId::LOWLEVEL,
        name: "lowlevel",
        description: "interrupts",
        events: lowlevel::EVENTS,
    },
    BuiltinClass {
        id: ClassId::SEMAPHORE,
        name: "semaphore",
        description: "semaphore waits and signals",
        events: semaphore::EVENTS,
    },
];

/// The number of built-in events (`0x00`–`0x16`).
pub const BUILTIN_EVENTS: usize = EventId::FIRST_USER_DEFINED.0 as usize;

/// The class of a built-in event, without a catalog; `None` past the built-ins.
///
/// ```
/// use qtrace_core::classes::{builtin_class_of, semaphore, ClassId};
/// assert_eq!(builtin_class_of(semaphore::SIGNAL), Some(ClassId::SEMAPHORE));
/// ```
pub const fn builtin_class_of(id: EventId) -> Option<ClassId> {
    match id.0 {
        0x00..=0x01 => Some(ClassId::TRACER),
        0x02..=0x0a => Some(ClassId::SYSTEM),
        0x0b..=0x12 => Some(ClassId::USER),
        0x13 => Some(ClassId::LOWLEVEL),
        0x14..=0x16 => Some(ClassId::SEMAPHORE),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_numbering_is_consecutive() {
        let mut next = 0u16;
        for (i, class) in BUILTIN.iter().enumerate() {
            assert_eq!(class.id, ClassId(i as u16));
            for e in class.events {
                assert_eq!(e.id, EventId(next));
                assert_eq!(builtin_class_of(e.id), Some(class.id));
                next += 1;
            }
        }
        assert_eq!(next as usize, BUILTIN_EVENTS);
        assert_eq!(builtin_class_of(EventId(next)), None);
    }
}
