//! Reading trace files (S.Ha.R.K.'s `read_trace`, `event_class`,
//! `event_name`), with the bytes treated as untrusted.
//!
//! [`TraceReader`] checks the header, then yields events one by one. A
//! damaged file yields every event before the damage and then one
//! [`ReadError`] naming the byte offset; a reader never panics on bad bytes
//! and never holds more than the header (at most
//! [`MAX_HEADER_LEN`](crate::wire::header::MAX_HEADER_LEN) bytes) and one
//! record in memory.
//!
//! ```
//! use std::ops::ControlFlow;
//! use qtrace::classes::{system, Catalog};
//! use qtrace::clock::{Clock, ManualClock};
//! use qtrace::reader::{read_trace, TraceReader};
//! use qtrace::wire::{create_trace_file, TraceHeader};
//! use qtrace::Event;
//!
//! let path = std::env::temp_dir().join(format!("qtrace-reader-doc-{}.qtr", std::process::id()));
//! let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)));
//! let mut w = create_trace_file(&path, &header)?;
//! for t in 0..10 {
//!     w.write_event(&Event::new(t, system::SCHEDULE, 0, [t, 0]))?;
//! }
//! w.finish()?;
//!
//! let reader = TraceReader::open(&path)?;
//! assert_eq!(reader.event_name(system::SCHEDULE), Some("schedule"));
//! assert_eq!(reader.count(), 10);
//!
//! // Stop after the first three events.
//! let mut seen = Vec::new();
//! read_trace(&path, |e| {
//!     seen.push(e.time);
//!     if seen.len() == 3 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
//! })?;
//! assert_eq!(seen, [0, 1, 2]);
//! # std::fs::remove_file(&path)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use crate::classes::{Catalog, ClassInfo};
use crate::wire::header::{self, FIXED_LEN};
use crate::wire::record::{self, RECORD_LEN};
use crate::wire::{TraceHeader, WireError};
use crate::{Event, EventId};

pub use crate::wire::header::SUPPORTED_VERSIONS;

/// Why a trace could not be read (completely).
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

    fn with_path(self, p: &Option<PathBuf>) -> Self {
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

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReadError::Io { source, .. } | ReadError::Open { source, .. } => Some(source),
            ReadError::Format { error, .. } => Some(error),
        }
    }
}

impl From<WireError> for ReadError {
    fn from(error: WireError) -> Self {
        ReadError::Format { path: None, error }
    }
}

/// Reads into `buf` until it is full or the input ends; returns the bytes read.
fn read_full<R: Read>(r: &mut R, buf: &mut [u8], offset: u64) -> Result<usize, ReadError> {
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

/// A trace file being read: its header, then its events as an iterator.
///
/// # Items
///
/// `TraceReader` is an [`Iterator`] of **`Result<Event, ReadError>`**, one
/// item per record in file order (hoops records, which say how many events
/// were lost at that point, included: id [`tracer::HOOPS`](crate::classes::tracer::HOOPS)). After the last
/// record it yields `None`. A damaged or cut-short file yields every event
/// before the damage, then one `Err` naming the byte offset, then `None`
/// (the iterator is fused). So `for e in reader { let e = e?; … }` reads a
/// whole file, and `reader.collect::<Result<Vec<Event>, _>>()` gets every
/// event or the first error.
///
/// ```
/// use qtrace::classes::{system, Catalog};
/// use qtrace::clock::{Clock, ManualClock};
/// use qtrace::reader::{ReadError, TraceReader};
/// use qtrace::wire::{create_trace_file, TraceHeader};
/// use qtrace::Event;
///
/// let path = std::env::temp_dir().join(format!("qtrace-items-doc-{}.qtr", std::process::id()));
/// let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)));
/// let mut w = create_trace_file(&path, &header)?;
/// w.write_event(&Event::new(5, system::SCHEDULE, 0, [3, 0]))?;
/// w.finish()?;
///
/// let reader = TraceReader::open(&path)?;
/// let events: Vec<Event> = reader.collect::<Result<_, ReadError>>()?;
/// assert_eq!(events, [Event::new(5, system::SCHEDULE, 0, [3, 0])]);
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct TraceReader<R = BufReader<File>> {
    source: R,
    header: TraceHeader,
    header_len: u64,
    offset: u64,
    done: bool,
    path: Option<PathBuf>,
}

impl TraceReader<BufReader<File>> {
    /// Opens the trace file at `path` and checks its header.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, ReadError> {
        let path = path.as_ref();
        let p = Some(path.to_path_buf());
        let file = File::open(path).map_err(|source| ReadError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        let mut reader = TraceReader::new(BufReader::with_capacity(64 * 1024, file))
            .map_err(|e| e.with_path(&p))?;
        reader.path = p;
        Ok(reader)
    }
}

impl<R: Read> TraceReader<R> {
    /// Reads and checks the header from `source` (a file, a slice, a socket).
    pub fn new(mut source: R) -> Result<Self, ReadError> {
        let mut fixed = [0u8; FIXED_LEN];
        let n = read_full(&mut source, &mut fixed, 0)?;
        let header_len = header::check_fixed(&fixed[..n])?;
        // Grow only as bytes arrive: a short file claiming a large header
        // costs what it holds, and the claim itself is capped.
        let mut bytes = Vec::with_capacity(header_len.min(64 * 1024));
        bytes.extend_from_slice(&fixed);
        let want = (header_len - FIXED_LEN) as u64;
        (&mut source)
            .take(want)
            .read_to_end(&mut bytes)
            .map_err(|source| ReadError::Io {
                path: None,
                offset: FIXED_LEN as u64,
                source,
            })?;
        let (header, len) = TraceHeader::decode(&bytes)?;
        Ok(TraceReader {
            source,
            header,
            header_len: len as u64,
            offset: len as u64,
            done: false,
            path: None,
        })
    }

    /// The file's header.
    pub fn header(&self) -> &TraceHeader {
        &self.header
    }

    /// The file's class and event table.
    pub fn catalog(&self) -> &Catalog {
        self.header.catalog()
    }

    /// The class of any event id in the file's table (built-in or
    /// user-defined), as S.Ha.R.K.'s `event_class`.
    pub fn event_class(&self, id: EventId) -> Option<&ClassInfo> {
        let catalog = self.catalog();
        catalog.class_of(id).and_then(|c| catalog.class(c))
    }

    /// The name of any event id in the file's table, as S.Ha.R.K.'s
    /// `event_name`.
    pub fn event_name(&self, id: EventId) -> Option<&str> {
        self.catalog().event_name(id)
    }

    /// Where the records start.
    pub fn header_len(&self) -> u64 {
        self.header_len
    }

    /// The byte offset of the next record.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The file's path, when opened from one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    fn next_event(&mut self) -> Result<Option<Event>, ReadError> {
        let mut buf = [0u8; RECORD_LEN];
        let n = read_full(&mut self.source, &mut buf, self.offset)?;
        if n == 0 {
            return Ok(None);
        }
        if n < RECORD_LEN {
            return Err(WireError::Truncated {
                offset: self.offset,
                needed: RECORD_LEN as u64,
                available: n as u64,
                what: "record",
            }
            .into());
        }
        self.offset += RECORD_LEN as u64;
        Ok(Some(record::parse(&buf)))
    }
}

impl<R: Read> Iterator for TraceReader<R> {
    type Item = Result<Event, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.next_event() {
            Ok(Some(e)) => Some(Ok(e)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e.with_path(&self.path)))
            }
        }
    }
}

impl<R: Read> std::iter::FusedIterator for TraceReader<R> {}

/// Calls `f` with every event of the trace file at `path`, in file order,
/// until it returns [`ControlFlow::Break`]; returns how many events `f` saw.
///
/// A damaged file: `f` sees every event before the damage, then the error is
/// returned.
pub fn read_trace<F>(path: impl AsRef<Path>, mut f: F) -> Result<u64, ReadError>
where
    F: FnMut(&Event) -> ControlFlow<()>,
{
    let mut seen = 0;
    for e in TraceReader::open(path)? {
        let e = e?;
        seen += 1;
        if f(&e).is_break() {
            break;
        }
    }
    Ok(seen)
}

/// The class of `id` in `catalog` (a file's table): S.Ha.R.K.'s `event_class`.
pub fn event_class(catalog: &Catalog, id: EventId) -> Option<&ClassInfo> {
    catalog.class_of(id).and_then(|c| catalog.class(c))
}

/// The name of `id` in `catalog` (a file's table): S.Ha.R.K.'s `event_name`.
pub fn event_name(catalog: &Catalog, id: EventId) -> Option<&str> {
    catalog.event_name(id)
}
