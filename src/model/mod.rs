//! The model: what an event is (`event.rs`), its ids and the queue handle
//! (`handle.rs`), clocks
//! (`clock.rs`, `clock/`), strings and bytes carried as runs of records
//! (`combine.rs`), the source an event comes from (`source.rs`), and the I/O
//! error every layer above reports (`io_error.rs`). It knows nothing of
//! queues, routing or formats. The classes and their catalog, also of the
//! model layer, are the crate's `classes/` folder.

pub mod clock;
pub mod combine;
pub mod event;
pub(crate) mod handle;
pub(crate) mod io_error;
pub mod macros;
pub mod source;
