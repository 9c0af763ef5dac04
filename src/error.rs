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
//! | core | [`ConfigError`] | [`Tracer`](crate::Tracer), [`init`](crate::init), [`global`](crate::global), queue types |
//! | wire | [`WireError`] | parsing headers, records, datagrams |
//! | queues | [`RecoverError`], [`RingFileError`] | [`recover_file`](crate::storage::recover::recover_file), [`RingImage::parse`](crate::storage::ring_file::RingImage::parse) |
//! | readers | [`ReadError`], [`IoError`] | [`reader`](crate::reader), [`receiver`](crate::receiver) |
//! | export | `ExportError` (feature `export`) | the converters of `export` |
//!
//! An I/O failure that a layer reports as an [`IoError`] (what qtrace was
//! doing, on which file) is [`Error::Io`] whichever layer it came from; a
//! wrapped layer error keeps its `Display` text and its `source()`
//! (transparent wrapping). A reader's error stays [`Error::Read`] (it knows
//! the byte offset), a ring file's [`Error::Recover`].
//!
//! Every error holds its cause once: where the cause's text is part of the
//! message (the operating system's error at the end of an [`IoError`]'s),
//! `source()` is `None` and the cause is a field ([`IoError::source`]), so a
//! printer of the chain never says it twice.
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

pub use crate::classes::CatalogError;
#[cfg(feature = "export")]
pub use crate::export::ExportError;
pub use crate::model::clock::ClockUnavailable;
pub use crate::model::io_error::IoError;
pub use crate::queue::config_error::ConfigError;
pub use crate::reader::ReadError;
pub use crate::storage::recover::RecoverError;
pub use crate::storage::ring_file::RingFileError;
pub use crate::wire::{HeaderFieldError, WireError};

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
    /// A trace converter failed (feature `export`).
    #[cfg(feature = "export")]
    Export(ExportError),
    /// Bytes that are not a valid trace file or datagram.
    Wire(WireError),
    /// A trace file could not be read (completely): it could not be opened
    /// or read, or its bytes are not a trace.
    Read(ReadError),
    /// A ring file (a fixed or circular queue's file) could not be
    /// recovered: it could not be read, or it is not a ring file.
    Recover(RecoverError),
    /// A trace-header field holds a value the file format cannot carry.
    InvalidHeader {
        /// Which field.
        field: &'static str,
        /// What is wrong and what is allowed.
        reason: String,
    },
    /// A file could not be created, written or read: what qtrace was doing,
    /// on which file, and the operating system's error.
    Io(IoError),
}

impl Error {
    /// An I/O error on `path` while doing `action`.
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Error::Io(IoError::new(action, path, source))
    }
}

impl From<ConfigError> for Error {
    fn from(e: ConfigError) -> Self {
        match e {
            ConfigError::Catalog(c) => Error::Catalog(c),
            ConfigError::Io(e) => Error::Io(e),
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

#[cfg(feature = "export")]
impl From<ExportError> for Error {
    fn from(e: ExportError) -> Self {
        match e {
            ExportError::Io(e) => Error::Io(e),
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

#[cfg(feature = "export")]
/// For code that runs inside a converter (the sink factory of
/// [`SplitByTime`](crate::export::split::SplitByTime)) and uses `?` on
/// crate-level errors: an export or I/O error stays itself, any other is
/// kept whole in [`ExportError::Caller`].
impl From<Error> for ExportError {
    fn from(e: Error) -> Self {
        match e {
            Error::Export(e) => e,
            Error::Io(e) => ExportError::Io(e),
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
        Error::Io(e)
    }
}

impl From<ReadError> for Error {
    fn from(e: ReadError) -> Self {
        Error::Read(e)
    }
}

impl From<RecoverError> for Error {
    fn from(e: RecoverError) -> Self {
        Error::Recover(e)
    }
}

/// A ring file that does not parse is [`Error::Recover`] with
/// [`RecoverError::Format`], as [`recover_file`](crate::storage::recover::recover_file)
/// reports it.
impl From<RingFileError> for Error {
    fn from(e: RingFileError) -> Self {
        Error::Recover(RecoverError::Format(e))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config(e) => write!(f, "{e}"),
            Error::Catalog(e) => write!(f, "{e}"),
            #[cfg(feature = "export")]
            Error::Export(e) => write!(f, "{e}"),
            Error::Wire(e) => write!(f, "{e}"),
            Error::Read(e) => write!(f, "{e}"),
            Error::Recover(e) => write!(f, "{e}"),
            Error::InvalidHeader { field, reason } => {
                write!(f, "invalid trace-header {field}: {reason}")
            }
            Error::Io(e) => write!(f, "{e}"),
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
            #[cfg(feature = "export")]
            Error::Export(e) => e.source(),
            Error::Wire(e) => e.source(),
            Error::Read(e) => e.source(),
            Error::Recover(e) => e.source(),
            Error::InvalidHeader { .. } => None,
            Error::Io(e) => e.source(),
        }
    }
}
