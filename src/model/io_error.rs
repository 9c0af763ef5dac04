//! An I/O failure with what qtrace was doing and on which file: the one I/O
//! error every layer carries ([`ConfigError::Io`](crate::ConfigError::Io),
//! `ExportError::Io` (feature `export`), the receiver) and
//! that the crate-level [`Error`](crate::Error) flattens into
//! [`Error::Io`](crate::Error::Io).
//!
//! It imports nothing from the crate: every layer may use it.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// A file or socket could not be created, written or read.
///
/// The `Display` text says what qtrace was doing and on which file:
/// `cannot create trace file /tmp/q0.qtr: Permission denied (os error 13)`.
///
/// ```
/// use qtrace::IoError;
/// use std::io;
/// let e = IoError::new("create trace file", "/nonexistent/q0.qtr", io::ErrorKind::NotFound.into());
/// assert_eq!(e.to_string(), "cannot create trace file /nonexistent/q0.qtr: entity not found");
/// // `?` turns it into the crate-level error, as `Error::Io`:
/// let top: qtrace::Error = e.into();
/// assert!(matches!(top, qtrace::Error::Io { .. }));
/// ```
#[derive(Debug)]
pub struct IoError {
    /// The file involved, if any.
    pub path: Option<PathBuf>,
    /// What qtrace was doing ("create trace file").
    pub action: &'static str,
    /// The operating system's error.
    pub source: io::Error,
}

impl IoError {
    /// An I/O error on `path` while doing `action`.
    ///
    /// ```
    /// let e = qtrace::IoError::new("open trace", "/no/such/file", std::io::ErrorKind::NotFound.into());
    /// assert!(e.to_string().contains("/no/such/file"));
    /// ```
    pub fn new(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        IoError {
            path: Some(path.into()),
            action,
            source,
        }
    }

    /// An I/O error that concerns no file (a socket, a pipe) while doing
    /// `action`.
    pub fn without_path(action: &'static str, source: io::Error) -> Self {
        IoError {
            path: None,
            action,
            source,
        }
    }
}

impl fmt::Display for IoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_io(f, self.path.as_deref(), self.action, &self.source)
    }
}

/// The text of an I/O error, shared with [`Error::Io`](crate::Error::Io).
pub(crate) fn write_io(
    f: &mut fmt::Formatter<'_>,
    path: Option<&std::path::Path>,
    action: &str,
    source: &io::Error,
) -> fmt::Result {
    match path {
        Some(p) => write!(f, "cannot {action} {}: {source}", p.display()),
        None => write!(f, "cannot {action}: {source}"),
    }
}

/// The cause is held once: its text ends the message, so `source()` is
/// `None` (a printer of the chain would say it twice). The operating
/// system's error itself is the [`source`](IoError::source) field.
impl std::error::Error for IoError {}
