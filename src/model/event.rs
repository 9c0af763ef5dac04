//! The event record: a fixed 32-byte value that every queue stores and every
//! format carries.
//!
//! Defined in the `no_std` core, [`qtrace_core`], and re-exported here: one
//! definition serves firmware and programs with `std`. See [`Event`] for the
//! layout and [`EventId`] for the numbering.
//!
//! ```
//! use qtrace::{Event, EventId, TRACER_SOURCE};
//!
//! assert_eq!(std::mem::size_of::<Event>(), 32);
//! let hoops = Event::new(5, EventId(0x01), TRACER_SOURCE, [3, 0]);
//! assert_eq!(hoops.source, u32::MAX);
//! ```

pub use qtrace_core::{Event, EventId, TRACER_SOURCE};
