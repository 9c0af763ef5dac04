//! Where the core's records go (a file, or a closure).

use super::progress::Progress;
use crate::model::event::Event;
use crate::wire::record::{self, RECORD_LEN};
use crate::wire::TraceHeader;

/// Where the core's records go: decoded events, or raw big-endian records
/// straight from a datagram (so a file writer copies them without decoding).
pub(super) trait Sink {
    fn event(&mut self, e: &Event);
    fn records(&mut self, raw: &[u8]);
    /// Called after every datagram and every idle wait (about 20 ms) with
    /// the core's header generation ([`ReceiverCore::header_generation`])
    /// and a way to build its trace header
    /// ([`ReceiverCore::trace_header`]) when that changed; `false` stops
    /// the receiver (the sink cannot take more).
    ///
    /// [`ReceiverCore::header_generation`]: super::ReceiverCore::header_generation
    /// [`ReceiverCore::trace_header`]: super::ReceiverCore::trace_header
    fn tick(&mut self, _header_gen: u64, _header: &dyn Fn() -> TraceHeader) -> bool {
        true
    }
}

/// What releasing a sender's datagram needs besides the sender.
pub(super) struct Context<'a> {
    pub(super) out: &'a mut dyn Sink,
    pub(super) progress: &'a Progress,
    pub(super) first_header: &'a mut Option<TraceHeader>,
    pub(super) header_gen: &'a mut u64,
    pub(super) max_catalog: usize,
}

/// A sink that hands every record to a closure as an [`Event`].
pub(super) struct EachEvent<'a>(pub(super) &'a mut dyn FnMut(&Event));

impl Sink for EachEvent<'_> {
    fn event(&mut self, e: &Event) {
        (self.0)(e)
    }
    fn records(&mut self, raw: &[u8]) {
        for c in raw.chunks_exact(RECORD_LEN) {
            if let Ok(rec) = <&[u8; RECORD_LEN]>::try_from(c) {
                (self.0)(&record::parse(rec));
            }
        }
    }
}
