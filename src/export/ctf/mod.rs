//! CTF 1.8 output: a directory with a TSDL `metadata` file and one binary
//! stream file per source, readable by babeltrace2 and Trace Compass.
//!
//! # Layout
//!
//! - `metadata`: plain-text TSDL (`/* CTF 1.8 */`), big-endian like every
//!   qtrace format. One clock `qtrace` counting nanoseconds, whose offset is
//!   the trace's clock origin (so tools print wall-clock times). One stream
//!   class. One event class per catalog event, named `class:event`
//!   (`system:schedule`), whose payload has one `uint64` field per named
//!   argument (`task`), plus an `unknown` class (id = the catalog's event
//!   count) for records whose number the catalog lacks, which keeps the raw
//!   number and both arguments. An event that declares fewer than two
//!   arguments also has *variant* classes of the same name (ids after
//!   `unknown`: `count + 1 + 3 × id + mask − 1`) that add the undeclared
//!   slots, `arg0`/`arg1`; a record whose undeclared slot is non-zero uses
//!   one, so every argument `qtrace dump` shows is in the trace
//!   (`system:schedule: { task = 0, arg1 = 2 }`).
//! - `stream-<source>` (`stream-tracer` for the tracer's own source
//!   `u32::MAX`): a sequence of packets. Each packet is a header (`magic`,
//!   `stream_id` = 0, `stream_instance_id` = the source) and a context
//!   (`timestamp_begin`, `timestamp_end`, `content_size`, `packet_size`,
//!   `packet_seq_num`, `events_discarded`, `source`), then events, each a header
//!   (`id: uint16`, `timestamp: uint64`) and its payload.
//!
//! # Losses
//!
//! CTF's own way to say "events were lost here" is the packet context's
//! `events_discarded`: the stream's cumulative count of lost events at the end
//! of the packet. A hoops record (`tracer:hoops`, source `u32::MAX`) becomes an
//! *empty packet* of the tracer stream (`stream-tracer`) at the record's time,
//! whose count has grown by the record's `lost` argument; babeltrace2 compares
//! consecutive packets and prints `Tracer discarded N events between [t0] and
//! [t1]` there. The tracer stream starts with an empty packet whose count is
//! zero, so that the first loss has an exact count too (babeltrace2 says only
//! "may have discarded" when a stream's first packet has a non-zero count).
//! So babeltrace2 counts exactly the qtrace events as events (hoops records are
//! not events, as in `qtrace stats`) and the lost ones as discarded.
//!
//! # Memory
//!
//! Each stream buffers at most one packet ([`CtfOptions::packet_bytes`]); its
//! buffer grows with what it holds. When the buffers' allocated bytes together
//! exceed [`CtfOptions::buffer_budget`], every stream is flushed and its
//! buffer released. (Besides the buffers, the writer keeps a few dozen bytes
//! of state per source.) Stream files are opened only while a
//! packet is appended, so the number of sources is not limited by open files.
//!
//! ```
//! use qtrace::classes::{system, tracer, Catalog};
//! use qtrace::export::{self, ctf::CtfWriter};
//! use qtrace::Event;
//!
//! let dir = std::env::temp_dir().join(format!("qtrace-ctf-doc-{}", std::process::id()));
//! # let _ = std::fs::remove_dir_all(&dir);
//! let catalog = Catalog::builtin();
//! let events = [
//!     Event::new(1_000, system::SCHEDULE, 0, [3, 0]),
//!     Event::new(2_000, tracer::HOOPS, u32::MAX, [7, 0]), // 7 events lost here
//!     Event::new(3_000, system::SCHEDULE, 1, [4, 0]),
//! ];
//! let stats = export::convert(CtfWriter::create(&dir, &catalog, 0)?, events)?;
//! assert_eq!((stats.events, stats.lost, stats.sources), (2, 7, 3));
//! assert!(dir.join("metadata").exists() && dir.join("stream-tracer").exists());
//! # std::fs::remove_dir_all(&dir).unwrap();
//! # Ok::<(), qtrace::Error>(())
//! ```

mod metadata;
mod writer;

pub use writer::{CtfOptions, CtfWriter};
