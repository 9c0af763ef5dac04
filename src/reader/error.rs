//! Why a trace could not be read ([`ReadError`]).

use super::*;

/// Why a trace could not be read (completely).
///
/// ```
/// use qtrace::reader::{ReadError, TraceReader};
///
/// let err = TraceReader::new(&b"not a trace file"[..]).unwrap_err();
/// assert!(matches!(err, ReadError::Format { .. }));
/// assert_eq!(err.offset(), 0);
/// assert!(err.to_string().contains("not a qtrace trace file"), "{err}");
/// let missing = TraceReader::open("/nonexistent/run.qtr").unwrap_err();
/// assert!(matches!(missing, ReadError::Open { .. }));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum ReadError {
    /// The file could not be opened.
    Open {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// The operating system failed to read the file.
    Io {
        /// The file, when the reader was opened from a path.
        path: Option<PathBuf>,
        /// The byte offset being read.
        offset: u64,
        /// The operating system's error.
        source: io::Error,
    },
    /// The bytes are not a valid trace (the offset is inside the error).
    Format {
        /// The file, when the reader was opened from a path.
        path: Option<PathBuf>,
        /// What is wrong, and at which byte offset.
        error: WireError,
    },
}

impl ReadError {
    /// The byte offset of the problem, from the start of the file.
    pub fn offset(&self) -> u64 {
        match self {
            ReadError::Open { .. } => 0,
            ReadError::Io { offset, .. } => *offset,
            ReadError::Format { error, .. } => error.offset(),
        }
    }

    /// The format error, if it is one.
    pub fn wire_error(&self) -> Option<&WireError> {
        match self {
            ReadError::Format { error, .. } => Some(error),
            ReadError::Io { .. } | ReadError::Open { .. } => None,
        }
    }

    pub(super) fn with_path(self, p: &Option<PathBuf>) -> Self {
        match self {
            ReadError::Io { offset, source, .. } => ReadError::Io {
                path: p.clone(),
                offset,
                source,
            },
            ReadError::Format { error, .. } => ReadError::Format {
                path: p.clone(),
                error,
            },
            open @ ReadError::Open { .. } => open,
        }
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = match self {
            ReadError::Open { path, source } => {
                return write!(f, "{}: cannot open: {source}", path.display())
            }
            ReadError::Io { path, .. } | ReadError::Format { path, .. } => path,
        };
        if let Some(p) = path {
            write!(f, "{}: ", p.display())?;
        }
        match self {
            ReadError::Io { offset, source, .. } => {
                write!(f, "cannot read at byte {offset}: {source}")
            }
            ReadError::Format { error, .. } => write!(f, "{error}"),
            ReadError::Open { .. } => Ok(()),
        }
    }
}

/// The cause is held once: its text is part of the message, so `source()`
/// is `None`; the cause itself is the variant's `source` or `error` field.
impl std::error::Error for ReadError {}

impl From<WireError> for ReadError {
    fn from(error: WireError) -> Self {
        ReadError::Format { path: None, error }
    }
}

/// Reads into `buf` until it is full or the input ends; returns the bytes read.
pub(super) fn read_full<R: Read>(
    r: &mut R,
    buf: &mut [u8],
    offset: u64,
) -> Result<usize, ReadError> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(source) => {
                return Err(ReadError::Io {
                    path: None,
                    offset: offset + n as u64,
                    source,
                })
            }
        }
    }
    Ok(n)
}
