//! The class table (FORMAT.md 1.3), encoded from any [`CatalogSource`]: the
//! std crate's `qtrace::classes::Catalog` and a firmware's
//! [`StaticCatalog`] go through the same encoder.
//!
//! ```text
//! u16 class_count
//! class_count times: str name, str description, u16 event_count,
//!     event_count times: str name, str description, u8 arg_count,
//!         arg_count times: str name
//! ```
//!
//! ```
//! use qtrace_core::encode::catalog::{buffer_len, emit};
//! use qtrace_core::StaticCatalog;
//!
//! let mut bytes = [0u8; 2048];
//! let mut n = 0;
//! emit(&StaticCatalog::BUILTIN, &mut |piece: &[u8]| {
//!     bytes[n..n + piece.len()].copy_from_slice(piece);
//!     n += piece.len();
//! });
//! assert_eq!(n, buffer_len(&StaticCatalog::BUILTIN));
//! assert_eq!(&bytes[..2], &[0, 5]); // five classes
//! assert_eq!(&bytes[2..10], b"\0\x06tracer");
//! ```

use crate::classes::{BuiltinClass, MAX_ARGS, MAX_DESCRIPTION_LEN, MAX_NAME_LEN};

/// One class as the table carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClassEntry<'a> {
    /// The name.
    pub name: &'a str,
    /// One line.
    pub description: &'a str,
    /// How many events the class has.
    pub event_count: u16,
}

/// One event as the table carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventEntry<'a> {
    /// The name.
    pub name: &'a str,
    /// One line.
    pub description: &'a str,
    /// The argument names; the first `arg_count` are used.
    pub args: [&'a str; MAX_ARGS],
    /// How many arguments (at most [`MAX_ARGS`]).
    pub arg_count: usize,
}

/// A table of classes and events the encoder can walk without allocating.
/// Classes are numbered 0, 1, 2, … and events consecutively across them.
pub trait CatalogSource {
    /// The number of classes.
    fn class_count(&self) -> usize;
    /// Class `index` (`index < class_count()`).
    fn class(&self, index: usize) -> ClassEntry<'_>;
    /// Event `n` of class `index` (`n < event_count`); `None` leaves the
    /// event out of the encoding (only an inconsistent table has holes).
    fn event(&self, class: usize, n: usize) -> Option<EventEntry<'_>>;
}

/// `s` cut to at most `max` bytes, on a character boundary.
pub fn truncate_str(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The encoded size of a `str` field cut at `max` bytes.
pub fn str_len(s: &str, max: usize) -> usize {
    2 + truncate_str(s, max.min(u16::MAX as usize)).len()
}

/// Feeds a `str` field (cut at `max` bytes) to `out`.
pub fn put_str(out: &mut impl FnMut(&[u8]), s: &str, max: usize) {
    let s = truncate_str(s, max.min(u16::MAX as usize));
    out(&(s.len() as u16).to_be_bytes());
    out(s.as_bytes());
}

/// The number of bytes [`emit`] writes for `catalog`.
pub fn buffer_len<C: CatalogSource + ?Sized>(catalog: &C) -> usize {
    let mut n = 0;
    emit(catalog, &mut |piece: &[u8]| n += piece.len());
    n
}

/// Feeds the encoding of `catalog` to `out`, piece by piece. Strings longer
/// than the format allows are cut at the limit.
pub fn emit<C: CatalogSource + ?Sized>(catalog: &C, out: &mut impl FnMut(&[u8])) {
    out(&(catalog.class_count() as u16).to_be_bytes());
    for c in 0..catalog.class_count() {
        let class = catalog.class(c);
        put_str(out, class.name, MAX_NAME_LEN);
        put_str(out, class.description, MAX_DESCRIPTION_LEN);
        out(&class.event_count.to_be_bytes());
        for n in 0..class.event_count as usize {
            if let Some(e) = catalog.event(c, n) {
                put_str(out, e.name, MAX_NAME_LEN);
                put_str(out, e.description, MAX_DESCRIPTION_LEN);
                let argc = e.arg_count.min(MAX_ARGS);
                out(&[argc as u8]);
                for a in &e.args[..argc] {
                    put_str(out, a, MAX_NAME_LEN);
                }
            }
        }
    }
}

/// A catalog in static memory: the five built-in classes, then a firmware's
/// own classes (`user`), checked at compile time when built in a `const`.
///
/// ```
/// use qtrace_core::classes::{BuiltinClass, BuiltinEvent, ClassId};
/// use qtrace_core::{EventId, StaticCatalog};
///
/// const MOTOR: EventId = EventId::FIRST_USER_DEFINED;
/// static CLASSES: [BuiltinClass; 1] = [BuiltinClass {
///     id: ClassId::FIRST_USER_DEFINED,
///     name: "motor",
///     description: "the motor controller",
///     events: &[BuiltinEvent::new(MOTOR, "step", "one step", &["position"])],
/// }];
/// static CATALOG: StaticCatalog = StaticCatalog::new(&CLASSES);
/// assert_eq!(CATALOG.event_count(), 24);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StaticCatalog {
    user: &'static [BuiltinClass],
}

/// Whether `name` is a name: 1–64 bytes of `[A-Za-z0-9_.-]`.
pub const fn is_name(name: &str) -> bool {
    let b = name.as_bytes();
    if b.is_empty() || b.len() > MAX_NAME_LEN {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if !(c.is_ascii_alphanumeric() || c == b'_' || c == b'.' || c == b'-') {
            return false;
        }
        i += 1;
    }
    true
}

/// Whether `text` is a description: at most 256 bytes, no CR, no LF.
pub const fn is_description(text: &str) -> bool {
    let b = text.as_bytes();
    if b.len() > MAX_DESCRIPTION_LEN {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\r' || b[i] == b'\n' {
            return false;
        }
        i += 1;
    }
    true
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

impl StaticCatalog {
    /// The built-in classes only.
    pub const BUILTIN: StaticCatalog = StaticCatalog { user: &[] };

    /// The built-in classes followed by `user`.
    ///
    /// # Panics
    /// (At compile time in a `const` or `static`.) If `user`'s classes are
    /// not numbered from [`ClassId::FIRST_USER_DEFINED`](crate::ClassId::FIRST_USER_DEFINED)
    /// on, their events not consecutively from
    /// [`EventId::FIRST_USER_DEFINED`](crate::EventId::FIRST_USER_DEFINED)
    /// on, a class has no event, an event has more than two arguments, a name is not
    /// 1–64 bytes of `[A-Za-z0-9_.-]`, a description is not one line of at
    /// most 256 bytes, or a class name (built-in ones included), an event
    /// name within its class or an argument name within its event repeats:
    /// everything FORMAT.md 1.3 requires of a class table, so the file a dump
    /// writes always reads back.
    pub const fn new(user: &'static [BuiltinClass]) -> Self {
        let builtin = &crate::classes::BUILTIN;
        let mut next_event = crate::EventId::FIRST_USER_DEFINED.0;
        let mut c = 0;
        while c < user.len() {
            let class = &user[c];
            assert!(
                class.id.0 as usize == crate::ClassId::FIRST_USER_DEFINED.0 as usize + c,
                "user classes are numbered 5, 6, 7, ..."
            );
            assert!(
                is_name(class.name),
                "a class name is 1-64 bytes of [A-Za-z0-9_.-]"
            );
            assert!(
                is_description(class.description),
                "a description is one line (no CR, no LF) of at most 256 bytes"
            );
            let mut k = 0;
            while k < builtin.len() + c {
                let other = if k < builtin.len() {
                    builtin[k].name
                } else {
                    user[k - builtin.len()].name
                };
                assert!(!str_eq(other, class.name), "class names are unique");
                k += 1;
            }
            assert!(!class.events.is_empty(), "a class has at least one event");
            let mut e = 0;
            while e < class.events.len() {
                let ev = &class.events[e];
                assert!(
                    ev.id.0 == next_event,
                    "events are numbered consecutively from 0x17"
                );
                assert!(
                    is_name(ev.name),
                    "an event name is 1-64 bytes of [A-Za-z0-9_.-]"
                );
                assert!(
                    is_description(ev.description),
                    "a description is one line (no CR, no LF) of at most 256 bytes"
                );
                let mut k = 0;
                while k < e {
                    assert!(
                        !str_eq(class.events[k].name, ev.name),
                        "event names are unique within their class"
                    );
                    k += 1;
                }
                assert!(
                    ev.args.len() <= MAX_ARGS,
                    "an event has at most two arguments"
                );
                let mut a = 0;
                while a < ev.args.len() {
                    assert!(
                        is_name(ev.args[a]),
                        "an argument name is 1-64 bytes of [A-Za-z0-9_.-]"
                    );
                    let mut k = 0;
                    while k < a {
                        assert!(
                            !str_eq(ev.args[k], ev.args[a]),
                            "argument names are unique within their event"
                        );
                        k += 1;
                    }
                    a += 1;
                }
                next_event += 1;
                e += 1;
            }
            c += 1;
        }
        assert!(
            next_event as usize <= crate::EventId::MAX_EVENTS,
            "at most 4096 events"
        );
        assert!(
            builtin.len() + user.len() <= crate::ClassId::MAX_CLASSES,
            "at most 256 classes"
        );
        StaticCatalog { user }
    }

    /// The firmware's own classes (after the five built-in ones).
    pub const fn user_classes(&self) -> &'static [BuiltinClass] {
        self.user
    }

    fn get(&self, index: usize) -> &BuiltinClass {
        let builtin = &crate::classes::BUILTIN;
        if index < builtin.len() {
            &builtin[index]
        } else {
            &self.user[index - builtin.len()]
        }
    }

    /// The number of events, built-in ones included.
    pub const fn event_count(&self) -> usize {
        let mut n = crate::classes::BUILTIN_EVENTS;
        let mut c = 0;
        while c < self.user.len() {
            n += self.user[c].events.len();
            c += 1;
        }
        n
    }
}

impl CatalogSource for StaticCatalog {
    fn class_count(&self) -> usize {
        crate::classes::BUILTIN.len() + self.user.len()
    }

    fn class(&self, index: usize) -> ClassEntry<'_> {
        let c = self.get(index);
        ClassEntry {
            name: c.name,
            description: c.description,
            event_count: c.events.len() as u16,
        }
    }

    fn event(&self, class: usize, n: usize) -> Option<EventEntry<'_>> {
        let e = self.get(class).events.get(n)?;
        let mut args = [""; MAX_ARGS];
        let argc = e.args.len().min(MAX_ARGS);
        args[..argc].copy_from_slice(&e.args[..argc]);
        Some(EventEntry {
            name: e.name,
            description: e.description,
            args,
            arg_count: argc,
        })
    }
}
