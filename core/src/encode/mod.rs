//! The encoders of the trace file and the datagram, writing at the offsets
//! of [`layout`](crate::layout), allocation-free: fixed arrays, or a sink
//! `FnMut(&[u8])` fed piece by piece.

pub mod catalog;
pub mod close;
pub mod datagram;
pub mod header;
pub mod record;
