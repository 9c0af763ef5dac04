//! Reading trace files (S.Ha.R.K.'s `read_trace`, `event_class`,
//! `event_name`: [`TraceReader`], an iterator, and its
//! [`event_class`](TraceReader::event_class) and
//! [`event_name`](TraceReader::event_name)), with the bytes treated as
//! untrusted.
//!
//! [`TraceReader`] checks the header, then yields events one by one. A
//! damaged file yields every event before the damage and then one
//! [`ReadError`] naming the byte offset. At the end,
//! [`TraceReader::completeness`] says whether the file was complete (it ends
//! with its close run), cut short, or written before close runs existed; a reader never panics on bad bytes
//! and never holds more than the header (at most
//! 4 MiB) and one
//! 64 KiB read-ahead block in memory. Records are decoded from that block,
//! thousands from one `read` call; the reader still waits for no more than
//! one record, so a socket's events come out as they arrive, and an I/O
//! error is reported after every whole record read before it.
//!
//! [`MergedReader`] reads several files as one, merged in time order on a
//! common time line (nanoseconds since the earliest clock origin), streaming.
//!
//! ```
//! use qtrace::classes::{system, Catalog};
//! use qtrace::clock::{Clock, ManualClock};
//! use qtrace::reader::TraceReader;
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
//! let seen: Vec<u64> = TraceReader::open(&path)?
//!     .take(3)
//!     .map(|e| e.map(|e| e.time))
//!     .collect::<Result<_, _>>()?;
//! assert_eq!(seen, [0, 1, 2]);
//! # std::fs::remove_file(&path)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! In this folder: [`TraceReader`] (`trace_reader.rs`), its errors
//! (`error.rs`) and verdict (`completeness.rs`), and the merge of several
//! files in time order, [`MergedReader`] (`merged.rs`, on the heap-based
//! merge of `merge.rs`).
#![forbid(unsafe_code)]

use std::collections::VecDeque;
use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::classes::{Catalog, ClassInfo};
use crate::wire::close::{close_part, hoops_lost, CloseRecord, CLOSE_RUN_LEN};
use crate::wire::header::{self, FIXED_LEN};
use crate::wire::record::{self, RECORD_LEN};
use crate::wire::{TraceHeader, WireError};
use crate::{Event, EventId};

mod completeness;
mod error;
mod merge;
mod merged;
mod trace_reader;

pub use completeness::Completeness;
pub use error::ReadError;
pub use merged::MergedReader;
pub use trace_reader::TraceReader;
