//! The export layer's error: what a converter can fail with. It imports
//! nothing from the crate but the shared [`IoError`].

use std::fmt;
use std::io;
use std::path::PathBuf;

use crate::model::io_error::IoError;

/// A trace converter could not go on (the `Display` text says what is wrong
/// and what to do). `?` turns it into the crate-level
/// [`Error`](crate::Error): [`ExportError::Io`] becomes
/// [`Error::Io`](crate::Error::Io), the others
/// [`Error::Export`](crate::Error::Export).
///
/// ```
/// use qtrace::classes::Catalog;
/// use qtrace::export::{chrome::ChromeWriter, EventSink, ExportError};
/// let mut out = Vec::new();
/// let mut writer = ChromeWriter::new(&Catalog::builtin(), 0, &mut out)?;
/// writer.finish()?;
/// let event = qtrace::Event::new(1, qtrace::classes::user::USER0, 0, [0, 0]);
/// let err = writer.push(&event).unwrap_err();
/// assert!(matches!(err, ExportError::ConverterFinished));
/// assert!(err.to_string().contains("create a new writer"));
/// # Ok::<(), qtrace::Error>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum ExportError {
    /// An event was pushed into a trace converter after `finish`.
    ConverterFinished,
    /// A trace converter's option is out of range.
    InvalidExportOption {
        /// The option, as `CtfOptions::packet_bytes`.
        option: &'static str,
        /// What is wrong and what is allowed.
        reason: String,
    },
    /// The caller's code that a converter runs (the sink factory of
    /// [`SplitByTime`](super::split::SplitByTime)) failed with an error of
    /// another layer, kept whole (for `qtrace::Error`, the crate-level error
    /// itself; see `From<Error> for ExportError`).
    Caller(Box<dyn std::error::Error + Send + Sync + 'static>),
    /// A file could not be created, written or read: what the converter was
    /// doing, on which file.
    Io(IoError),
}

impl ExportError {
    /// An I/O error on `path` while doing `action`.
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        ExportError::Io(IoError::new(action, path, source))
    }
}

impl From<IoError> for ExportError {
    fn from(e: IoError) -> Self {
        ExportError::Io(e)
    }
}

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExportError::ConverterFinished => write!(
                f,
                "this converter has already been finished: create a new writer for another trace"
            ),
            ExportError::InvalidExportOption { option, reason } => {
                write!(f, "invalid converter option {option}: {reason}")
            }
            ExportError::Caller(e) => write!(f, "{e}"),
            ExportError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ExportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            // Transparent: the chain goes on with the OS error.
            ExportError::Io(e) => e.source(),
            // Transparent: the text is the caller's error's.
            ExportError::Caller(e) => e.source(),
            _ => None,
        }
    }
}
