//! Storage: what a queue keeps on disk and how it is read back after a crash.
//!
//! - `ring_file.rs`: the ring file (a ring's memory kept in a file shared
//!   with the kernel's page cache, so it outlives the process) — its layout,
//!   creation and the image a reader parses;
//! - `recover.rs`: a dead process's ring file turned into an ordinary trace;
//! - `save.rs`: a fixed or circular queue's contents saved as a trace file
//!   (header, records, hoops for what was lost, close run);
//! - `trace_header.rs`: the header a queue writes, from its context;
//! - `reserve.rs`: disk space reserved ahead of the online queue's writes.

pub(crate) mod recover;
pub(crate) mod reserve;
pub(crate) mod ring_file;

pub use recover::{
    recover_bytes, recover_file, write_trace, writer_alive, RecoverError, Recovered,
    RecoveryCounts, DAMAGED, UNREADABLE,
};
pub use ring_file::{Damage, DamageKind, RingContents, RingFileError, RingImage, RingStorage};
pub(crate) mod save;
pub(crate) mod trace_header;
