//! The crate-level error: one type that composes every layer's error with
//! `From`, so `?` works in code that calls several layers.
//!
//! Each layer has its own error, next to the code that returns it, and no
//! layer imports this module (it sits on top):
//!
//! | layer | error | returned by |
//! |---|---|---|
//! | model | [`CatalogError`] | class and catalog builders |
//! | model | [`ClockUnavailable`] | [`Clock::tsc`](crate::model::clock::Clock::tsc), [`Clock::of_kind`](crate::model::clock::Clock::of_kind) |
//! | core | [`ConfigError`] | [`Tracer`](crate::Tracer), [`init`](crate::setup::init), [`global`](crate::setup::global), queue types |
//! | wire | [`WireError`] | parsing headers, records, datagrams |
//! | readers | [`ReadError`](crate::reader::ReadError), [`IoError`] | [`reader`](crate::reader), [`receiver`](crate::receiver) |
//! | export | [`ExportError`] | the converters of [`export`](crate::export) |
//!
//! An I/O failure is [`Error::Io`] whichever layer it came from; a wrapped
//! layer error keeps its `Display` text and its `source()` chain
//! (transparent wrapping).
//!
//! ```
//! use qtrace::classes::ClassSpec;
//! use qtrace::queues::Dummy;
//! use qtrace::{ConfigError, Error, Tracer};
//!
//! fn setup(tracer: &Tracer) -> Result<(), Error> {
//!     let q = tracer.create_queue::<Dummy>(())?; // ConfigError -> Error
//!     let c = tracer.define_class(ClassSpec::new("net", "").event("rx", "", &[]))?;
//!     tracer.assign_class(c.id, q)?;
//!     Ok(())
//! }
//! let tracer = Tracer::new();
//! setup(&tracer)?;
//! tracer.activate()?;
//! match setup(&tracer) {
//!     Err(Error::Config(ConfigError::AfterPhase2 { .. })) => {}
//!     other => panic!("{other:?}"),
//! }
//! # Ok::<(), Error>(())
//! ```

use std::fmt;
use std::io;
use std::path::PathBuf;

pub use crate::export::ExportError;
pub use crate::model::classes::CatalogError;
pub use crate::model::clock::ClockUnavailable;
pub use crate::model::io_error::IoError;
pub use crate::queue::config_error::ConfigError;
pub use crate::wire::{HeaderFieldError, WireError};

use crate::model::io_error::write_io;

/// Any qtrace error: the error of the layer that failed (the `Display` text
/// says what went wrong and what to do about it).
///
/// ```
/// use qtrace::{ConfigError, Error};
///
/// let tracer = qtrace::Tracer::new();
/// let e: Error = tracer.assign_event(qtrace::EventId(60_000), qtrace::QueueHandle(0)).unwrap_err().into();
/// assert!(matches!(e, Error::Config(ConfigError::EventOutOfRange { .. })));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// Configuring or running the tracer failed: queue types, handles,
    /// routing, phases, queue parameters, the clock, queue hooks.
    Config(ConfigError),
    /// A class, event or class/event table is invalid.
    Catalog(CatalogError),
    /// A trace converter failed.
    Export(ExportError),
    /// Bytes that are not a valid trace file or datagram.
    Wire(WireError),
    /// A trace-header field holds a value the file format cannot carry.
    InvalidHeader {
        /// Which field.
        field: &'static str,
        /// What is wrong and what is allowed.
        reason: String,
    },
    /// A file could not be created, written or read.
    Io {
        /// The file involved, if any.
        path: Option<PathBuf>,
        /// What qtrace was doing.
        action: &'static str,
        /// The operating system's error.
        source: io::Error,
    },
}

impl Error {
    /// An I/O error on `path` while doing `action`.
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Error::Io {
            path: Some(path.into()),
            action,
            source,
        }
    }
}

impl From<ConfigError> for Error {
    fn from(e: ConfigError) -> Self {
        match e {
            ConfigError::Catalog(c) => Error::Catalog(c),
            ConfigError::Io {
                path,
                action,
                source,
            } => Error::Io {
                path,
                action,
                source,
            },
            other => Error::Config(other),
        }
    }
}

impl From<CatalogError> for Error {
    fn from(e: CatalogError) -> Self {
        Error::Catalog(e)
    }
}

impl From<ClockUnavailable> for Error {
    fn from(e: ClockUnavailable) -> Self {
        Error::Config(ConfigError::ClockUnavailable(e))
    }
}

impl From<ExportError> for Error {
    fn from(e: ExportError) -> Self {
        match e {
            ExportError::Io {
                path,
                action,
                source,
            } => Error::Io {
                path,
                action,
                source,
            },
            // A crate-level error that went through a converter comes back
            // as itself.
            ExportError::Caller(caller) => match caller.downcast::<Error>() {
                Ok(e) => *e,
                Err(other) => Error::Export(ExportError::Caller(other)),
            },
            other => Error::Export(other),
        }
    }
}

/// For code that runs inside a converter (the sink factory of
/// [`SplitByTime`](crate::export::split::SplitByTime)) and uses `?` on
/// crate-level errors: an export or I/O error stays itself, any other is
/// kept whole in [`ExportError::Caller`].
impl From<Error> for ExportError {
    fn from(e: Error) -> Self {
        match e {
            Error::Export(e) => e,
            Error::Io {
                path,
                action,
                source,
            } => ExportError::Io {
                path,
                action,
                source,
            },
            other => ExportError::Caller(Box::new(other)),
        }
    }
}

impl From<WireError> for Error {
    fn from(e: WireError) -> Self {
        Error::Wire(e)
    }
}

impl From<HeaderFieldError> for Error {
    fn from(e: HeaderFieldError) -> Self {
        Error::InvalidHeader {
            field: e.field,
            reason: e.reason,
        }
    }
}

impl From<IoError> for Error {
    fn from(e: IoError) -> Self {
        Error::Io {
            path: e.path,
            action: e.action,
            source: e.source,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config(e) => write!(f, "{e}"),
            Error::Catalog(e) => write!(f, "{e}"),
            Error::Export(e) => write!(f, "{e}"),
            Error::Wire(e) => write!(f, "{e}"),
            Error::InvalidHeader { field, reason } => {
                write!(f, "invalid trace-header {field}: {reason}")
            }
            Error::Io {
                path,
                action,
                source,
            } => write_io(f, path.as_deref(), action, source),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        // Layer errors are wrapped transparently: the text above is theirs,
        // so the chain goes on with their own source.
        match self {
            Error::Config(e) => e.source(),
            Error::Catalog(e) => e.source(),
            Error::Export(e) => e.source(),
            Error::Wire(e) => e.source(),
            Error::InvalidHeader { .. } => None,
            Error::Io { source, .. } => Some(source),
        }
    }
}
