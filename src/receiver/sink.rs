//! Where the core's records go (a file, a closure, or a [`StreamSink`]).

use std::net::SocketAddr;

use super::progress::Progress;
use super::summary::SenderSummary;
use crate::model::event::Event;
use crate::wire::record::{self, RECORD_LEN};
use crate::wire::TraceHeader;

/// Where the core's records go: decoded events, or raw big-endian records
/// straight from a datagram (so a file writer copies them without decoding).
pub(super) trait Sink {
    /// The records that follow come from `stream` (whose header is
    /// `header`, once its catalog arrived). Called once per datagram
    /// released and before each mark, so a sink that does not care pays
    /// one empty call per datagram.
    fn stream(&mut self, _stream: &StreamId, _header: Option<&TraceHeader>) {}
    /// The datagram handled next arrived at `unix_ns` (the kernel's time).
    fn arrival(&mut self, _unix_ns: i64) {}
    fn event(&mut self, e: &Event);
    fn records(&mut self, raw: &[u8]);
    /// `stream` ended for good (after its last record): `account` is
    /// final.
    fn end(&mut self, _stream: &StreamId, _account: &SenderSummary) {}
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

/// A sender stream, as a [`StreamSink`] is told of it: one incarnation of
/// one sender (its address and sender id) on this receiver.
///
/// ```
/// use qtrace::receiver::StreamId;
/// let id = StreamId { addr: "127.0.0.1:40000".parse().unwrap(), sender: 7, ordinal: 1 };
/// assert_eq!(id.sender, 7);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StreamId {
    /// Where its datagrams come from.
    pub addr: SocketAddr,
    /// The sender id in its datagrams.
    pub sender: u32,
    /// Its order of first appearance on this receiver, from 1 (the order of
    /// [`ReceiverSummary::senders`](super::ReceiverSummary::senders)); 0
    /// for the hoops record of a source address refused for good (its
    /// sender never got a slot).
    pub ordinal: u64,
}

/// Where [`Receiver::run_streams`](super::Receiver::run_streams) hands the
/// records, told which stream each batch comes from: for writers that keep
/// streams apart (the command's Parquet store, crate qtrace-store). Records are
/// what the received trace file would hold, in the same order: events,
/// hoops records (losses, FORMAT.md 3.3) and unclosed-stream marks.
///
/// ```
/// use qtrace::receiver::{StreamId, StreamSink};
/// use qtrace::wire::TraceHeader;
/// use qtrace::Event;
///
/// #[derive(Default)]
/// struct Count { streams: Vec<StreamId>, records: u64 }
/// impl StreamSink for Count {
///     fn stream(&mut self, id: &StreamId, _header: Option<&TraceHeader>) {
///         if self.streams.last() != Some(id) {
///             self.streams.push(*id);
///         }
///     }
///     fn record(&mut self, _e: &Event) {
///         self.records += 1;
///     }
/// }
/// let mut count = Count::default();
/// count.record(&Event::new(1, qtrace::classes::user::USER0, 0, [0, 0]));
/// assert_eq!(count.records, 1);
/// assert!(count.tick());
/// ```
pub trait StreamSink {
    /// The records that follow come from `stream`; `header` is its
    /// sender's trace header (clock, host, queue, class table) once its
    /// catalog arrived.
    fn stream(&mut self, stream: &StreamId, header: Option<&TraceHeader>);
    /// The datagram the receiver handles next (and so the
    /// [`stream`](StreamSink::stream) calls it releases) arrived at
    /// `unix_ns`: the kernel's receive time in Unix ns (Linux
    /// `SO_TIMESTAMPNS`), however long it then waited in the socket for the
    /// receiver. Not called where the kernel gives no such time (other
    /// systems, [`Receiver::from_feed`](super::Receiver::from_feed)). A
    /// datagram held for reordering is released under the arrival of the
    /// one that fills its gap: later than its own, never earlier. By
    /// default nothing.
    fn arrival(&mut self, unix_ns: i64) {
        let _ = unix_ns;
    }
    /// One record, in the stream's order.
    fn record(&mut self, e: &Event);
    /// The records of one datagram, in the stream's order: whole records
    /// as the wire carries them ([`RECORD_LEN`](qtrace_core::encode::record::RECORD_LEN)
    /// bytes each, FORMAT.md 1.3; [`parse`](qtrace_core::encode::record::parse)
    /// reads one). By default each goes to [`StreamSink::record`]; a sink
    /// overrides this to do its per-datagram work once.
    fn records(&mut self, raw: &[u8]) {
        for c in raw.chunks_exact(RECORD_LEN) {
            if let Ok(rec) = <&[u8; RECORD_LEN]>::try_from(c) {
                self.record(&record::parse(rec));
            }
        }
    }
    /// `stream` ended for good, after its last record (its close, its
    /// unclosed mark, or the receiver stopping): `account` is its final
    /// account, the entry of
    /// [`ReceiverSummary::senders`](super::ReceiverSummary::senders) for it.
    /// Called once per stream that got a slot; a sink frees what it holds
    /// for the stream here. By default nothing.
    fn end(&mut self, stream: &StreamId, account: &SenderSummary) {
        let _ = (stream, account);
    }
    /// Called after every datagram and every idle wait (about 20 ms);
    /// `false` stops the receiver (the sink cannot take more).
    fn tick(&mut self) -> bool {
        true
    }
}

/// A [`Sink`] over a [`StreamSink`]: generic, so that the sink's methods
/// are called directly (inlinable), not by one virtual call per record.
pub(super) struct Streams<'a, S: StreamSink + ?Sized>(pub(super) &'a mut S);

impl<S: StreamSink + ?Sized> Sink for Streams<'_, S> {
    fn stream(&mut self, stream: &StreamId, header: Option<&TraceHeader>) {
        self.0.stream(stream, header)
    }
    fn arrival(&mut self, unix_ns: i64) {
        self.0.arrival(unix_ns)
    }
    fn event(&mut self, e: &Event) {
        self.0.record(e)
    }
    fn records(&mut self, raw: &[u8]) {
        self.0.records(raw)
    }
    fn end(&mut self, stream: &StreamId, account: &SenderSummary) {
        self.0.end(stream, account)
    }
    fn tick(&mut self, _header_gen: u64, _header: &dyn Fn() -> TraceHeader) -> bool {
        self.0.tick()
    }
}
