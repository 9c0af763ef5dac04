//! What can be wrong with a class, an event or a whole class/event table:
//! the model layer's error. It imports nothing from the crate.

use std::fmt;

use qtrace_core::classes::ClassId;

/// A class specification or a class/event table that cannot be used (the
/// `Display` text says what is wrong and what to do).
///
/// Returned inside [`ConfigError::Catalog`](crate::ConfigError::Catalog) by
/// [`Tracer::define_class`](crate::Tracer::define_class), directly by
/// [`Catalog`](super::Catalog)'s builders; `?` turns it into
/// [`Error::Catalog`](crate::Error::Catalog).
///
/// ```
/// use qtrace::classes::{CatalogError, ClassSpec};
/// use qtrace::{ConfigError, Tracer};
/// let tracer = Tracer::new();
/// match tracer.define_class(ClassSpec::new("bad name", "spaces are not allowed").event("e", "", &[])) {
///     Err(ConfigError::Catalog(CatalogError::InvalidName { what, name })) => {
///         assert_eq!((what, name.as_str()), ("class", "bad name"));
///     }
///     other => panic!("{other:?}"),
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CatalogError {
    /// A class, event or argument name is empty, too long or has characters
    /// outside `[A-Za-z0-9_.-]`.
    InvalidName {
        /// "class", "event" or "argument".
        what: &'static str,
        /// The name given.
        name: String,
    },
    /// A description is longer than 256 bytes or spans several lines.
    InvalidDescription {
        /// The name of what it describes.
        name: String,
    },
    /// Two classes, or two events of a class, share a name.
    DuplicateName {
        /// "class" or "event".
        what: &'static str,
        /// The name.
        name: String,
    },
    /// A class with no events.
    EmptyClass {
        /// The class name.
        name: String,
    },
    /// Too many classes.
    TooManyClasses {
        /// The limit.
        max: usize,
    },
    /// Too many events.
    TooManyEvents {
        /// The limit.
        max: usize,
    },
    /// An event with more named arguments than the record holds.
    TooManyArgs {
        /// The event name.
        event: String,
        /// The limit.
        max: usize,
    },
    /// A class declared with a fixed id (by `qtrace::classes!`) whose id
    /// is already another class, or the same class described differently.
    IdTaken {
        /// The declared class.
        name: String,
        /// Its fixed id.
        id: ClassId,
        /// The class that has that id.
        taken_by: String,
    },
    /// A class/event table (from a file) that contradicts itself.
    InconsistentCatalog {
        /// What is wrong.
        reason: String,
    },
}

impl fmt::Display for CatalogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use CatalogError::*;
        match self {
            InvalidName { what, name } => write!(
                f,
                "{what} name {name:?} is invalid: use 1 to 64 characters from A-Z a-z 0-9 _ . -"
            ),
            InvalidDescription { name } => write!(
                f,
                "the description of {name:?} is invalid: use one line of at most 256 bytes"
            ),
            DuplicateName { what, name } => write!(
                f,
                "{what} name {name:?} is already used: pick a name that is unique within its scope"
            ),
            EmptyClass { name } => write!(
                f,
                "class {name:?} has no events: add at least one with ClassSpec::event"
            ),
            TooManyClasses { max } => write!(f, "at most {max} classes can be defined"),
            TooManyEvents { max } => write!(
                f,
                "at most {max} events (built-in and user-defined) can be defined"
            ),
            TooManyArgs { event, max } => write!(
                f,
                "event {event:?} names more than {max} arguments: a record carries two 64-bit arguments"
            ),
            IdTaken { name, id, taken_by } if name == taken_by => write!(
                f,
                "class {name:?} (id {id}) is already defined differently: define one catalog, from one qtrace::classes! declaration"
            ),
            IdTaken { name, id, taken_by } => write!(
                f,
                "class {name:?} is declared with id {id}, which is already class {taken_by:?}: call define_classes before any run-time define_class, with one catalog declaring every class"
            ),
            InconsistentCatalog { reason } => {
                write!(f, "inconsistent class/event table: {reason}")
            }
        }
    }
}

impl std::error::Error for CatalogError {}
