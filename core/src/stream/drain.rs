//! The firmware's side: events from a ring, frames into a byte sink.

use byteorder::{BigEndian, ByteOrder};

use super::cobs::{self, Encoder};
use super::crc::Crc32;
use super::{FrameKind, CRC_LEN};
use crate::compact::{field as chunk_field, ChunkEncoder, ChunkHeader, HEADER_LEN};
use crate::encode::catalog::CatalogSource;
use crate::encode::datagram::{DatagramHeader, DatagramKind};
use crate::encode::header::HeaderSpec;
use crate::layout::datagram as dg;
use crate::ring::Ring;
use crate::Event;

/// The smallest buffer [`Drain::new`] takes.
pub const MIN_BUFFER_LEN: usize = 256;
/// The most events a [`Drain`] puts in one chunk, whatever its buffer: the
/// records of the largest version 1 events datagram (65,507 bytes, FORMAT.md
/// 2), which a receiver turns each chunk into (10.3). A fuller chunk is
/// framed (or dropped whole, when the link is busy) as a full one.
pub const MAX_CHUNK_EVENTS: usize = 2045;
/// Events moved from the ring per `take` (on the drain's stack).
const BATCH: usize = 8;
/// A catalog fragment's datagram header and its `total`, `offset` fields.
const FRAGMENT_HEAD: usize = dg::HEADER_LEN + 8;

/// The buffer given to [`Drain::new`] is shorter than [`MIN_BUFFER_LEN`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferTooSmall;

impl core::fmt::Display for BufferTooSmall {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "the drain's buffer is shorter than {MIN_BUFFER_LEN} bytes"
        )
    }
}

/// What [`Drain::poll`] left behind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// The ring is empty and every frame is sent: nothing to do until more
    /// events come.
    Idle,
    /// The sink took less than it was offered: bytes of a frame wait for
    /// the next poll.
    Busy,
    /// [`Drain::close`] was called and the end frame is sent: the stream
    /// is over.
    Closed,
}

/// A drain's account (every counter since it started).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DrainStats {
    /// Frames sent whole (every kind).
    pub frames: u64,
    /// Chunk frames sent whole.
    pub chunks: u64,
    /// Events in the chunks framed so far (the next chunk's first event).
    pub sent: u64,
    /// Events lost before a chunk was framed (the chunks' `dropped`): whole
    /// chunks dropped while the sink was busy, and what the ring overwrote
    /// or dropped before the drain took it.
    pub dropped: u64,
    /// Of those, chunks dropped whole.
    pub chunks_dropped: u64,
    /// Bytes the sink took.
    pub bytes: u64,
}

/// Takes events from a ring and writes them as frames (FORMAT.md 10) into
/// any byte sink, `FnMut(&[u8]) -> usize` (bytes taken, from the front):
/// a UART's data register, a USB endpoint, a socket. The firmware calls
/// [`poll`](Drain::poll) from its idle loop or a timer; the producers
/// ([`Tracer::log_event`](crate::Tracer::log_event), from anywhere) never
/// wait for it.
///
/// The catalog (the trace header of [`HeaderSpec`] with its class table)
/// goes first, in fragments, and again after every
/// [`catalog_every`](Drain::catalog_every) chunks, so a host that attaches
/// late can name the events. Then chunks (FORMAT.md 8) of as many events
/// as fit in the buffer. When the sink is still busy with the previous
/// frame as a chunk fills up, the chunk is dropped whole, and the next
/// chunk sent counts its events in `dropped`: the receiver knows exactly
/// how many events it lost, and where. [`close`](Drain::close) sends the
/// end frame.
///
/// ```
/// use qtrace_core::classes::{system, ClassId};
/// use qtrace_core::encode::header::HeaderSpec;
/// use qtrace_core::ring::CircularRing;
/// use qtrace_core::stream::{Drain, Status};
/// use qtrace_core::{StaticCatalog, Tracer};
///
/// static RING: CircularRing<64> = CircularRing::new();
/// static TRACER: Tracer<1> = Tracer::new(&StaticCatalog::BUILTIN, [&RING], || 7);
/// TRACER.assign_class(ClassId::SYSTEM, 0).unwrap();
///
/// let mut buf = [0u8; 512];
/// let spec = HeaderSpec { ticks_per_second: 1_000_000, clock_kind: "tick", ..HeaderSpec::default() };
/// let mut drain = Drain::new(&RING, &StaticCatalog::BUILTIN, spec, 42, &mut buf).unwrap();
/// let mut wire = Vec::new();
/// // A sink that takes everything (a UART would take what its FIFO holds).
/// let mut sink = |b: &[u8]| { wire.extend_from_slice(b); b.len() };
///
/// TRACER.log_event(system::SCHEDULE, 0, [3, 0]);
/// assert_eq!(drain.poll(&mut sink), Status::Idle);
/// drain.close();
/// assert_eq!(drain.poll(&mut sink), Status::Closed);
/// let stats = drain.stats();
/// assert_eq!((stats.sent, stats.dropped, stats.chunks), (1, 0, 1));
/// ```
pub struct Drain<'a, C: CatalogSource + ?Sized> {
    ring: &'a dyn Ring,
    catalog: &'a C,
    spec: HeaderSpec<'a>,
    sender: u32,
    catalog_every: u32,
    /// The chunk being filled (`None` only while it is replaced).
    enc: Option<ChunkEncoder<'a>>,
    /// The frame being sent, COBS-encoded with its delimiter.
    wire: &'a mut [u8],
    wire_len: usize,
    wire_sent: usize,
    /// Frames numbered so far (the next frame's sequence number).
    sequence: u64,
    /// The catalog's length, and the offset of its next fragment
    /// (`None`: no catalog due).
    catalog_len: u32,
    catalog_next: Option<u32>,
    chunks_since_catalog: u32,
    closing: bool,
    closed: bool,
    /// The first frame is preceded by a delimiter.
    first: bool,
    stats: DrainStats,
}

impl<C: CatalogSource + ?Sized> core::fmt::Debug for Drain<'_, C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Drain")
            .field("sender", &self.sender)
            .field("sequence", &self.sequence)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// The chunk area of a buffer of `total` bytes: the largest `c` whose frame
/// (kind, chunk, CRC), COBS-encoded with a delimiter before and after,
/// fits in what is left.
const fn chunk_len(total: usize) -> usize {
    let mut c = total / 2;
    while c + cobs::max_encoded_len(c + 1 + CRC_LEN) + 2 > total {
        c -= 1;
    }
    c
}

impl<'a, C: CatalogSource + ?Sized> Drain<'a, C> {
    /// A drain of `ring` (the ring a [`Tracer`](crate::Tracer) logs into),
    /// naming events from `catalog` with `spec`'s header, as sender
    /// `sender`, in `buf`: about half of it holds the chunk being filled,
    /// the rest the frame being sent. A chunk holds about
    /// `(buf.len() / 2 − 48) / 5` events, at most [`MAX_CHUNK_EVENTS`].
    ///
    /// # Errors
    ///
    /// [`BufferTooSmall`] for a buffer shorter than [`MIN_BUFFER_LEN`].
    pub fn new(
        ring: &'a dyn Ring,
        catalog: &'a C,
        spec: HeaderSpec<'a>,
        sender: u32,
        buf: &'a mut [u8],
    ) -> Result<Self, BufferTooSmall> {
        if buf.len() < MIN_BUFFER_LEN {
            return Err(BufferTooSmall);
        }
        let c = chunk_len(buf.len());
        let (chunk, wire) = buf.split_at_mut(c);
        let enc = ChunkEncoder::new(chunk, ChunkHeader::default()).map_err(|_| BufferTooSmall)?;
        Ok(Drain {
            ring,
            catalog,
            spec,
            sender,
            catalog_every: 256,
            enc: Some(enc),
            wire,
            wire_len: 0,
            wire_sent: 0,
            sequence: 0,
            catalog_len: spec.buffer_len(catalog) as u32,
            catalog_next: Some(0),
            chunks_since_catalog: 0,
            closing: false,
            closed: false,
            first: true,
            stats: DrainStats::default(),
        })
    }

    /// Sends the catalog again after every `chunks` chunk frames (256 by
    /// default; 0 sends it only first).
    pub fn catalog_every(mut self, chunks: u32) -> Self {
        self.catalog_every = chunks;
        self
    }

    /// The account so far.
    pub fn stats(&self) -> DrainStats {
        self.stats
    }

    /// The largest catalog fragment a frame carries.
    fn fragment_room(&self) -> usize {
        let chunk_room = self.wire.len() - 2; // the two delimiters, at most
                                              // The largest frame whose COBS form fits, less kind, CRC and head.
        let mut frame = chunk_room - chunk_room / 254 - 1;
        while cobs::max_encoded_len(frame) > chunk_room {
            frame -= 1;
        }
        (frame - 1 - CRC_LEN - FRAGMENT_HEAD).min(u16::MAX as usize)
    }

    /// Ends the stream: the events still in the ring and the chunk go out,
    /// then the end frame (a close datagram: every event logged, sent or
    /// dropped); [`poll`](Drain::poll) returns [`Status::Closed`] once it is
    /// sent. Reserved slots of the ring never posted count as dropped.
    pub fn close(&mut self) {
        self.closing = true;
    }

    /// Sends what the sink takes and moves events from the ring into
    /// chunks; never waits. Returns [`Status::Busy`] when the sink left
    /// bytes for later, [`Status::Idle`] when everything is sent,
    /// [`Status::Closed`] after the end frame.
    pub fn poll(&mut self, sink: &mut impl FnMut(&[u8]) -> usize) -> Status {
        loop {
            if !self.transmit(sink) {
                // The sink is busy: keep the ring from filling up; a chunk
                // that fills meanwhile is dropped whole.
                self.fill(false);
                return Status::Busy;
            }
            if self.closed {
                return Status::Closed;
            }
            if let Some(offset) = self.catalog_next {
                self.frame_catalog(offset);
                continue;
            }
            if self.fill(true) {
                continue; // a full chunk was framed
            }
            // The ring is empty.
            if !self.chunk().is_empty() {
                self.frame_chunk();
                continue;
            }
            if self.closing {
                if self.ring.abandon_reserved() > 0 {
                    continue;
                }
                self.frame_end();
                continue;
            }
            return Status::Idle;
        }
    }

    fn chunk(&self) -> &ChunkEncoder<'a> {
        self.enc
            .as_ref()
            .expect("the encoder is only out while replaced")
    }

    /// Offers the rest of the frame to the sink; whether it is all sent.
    fn transmit(&mut self, sink: &mut impl FnMut(&[u8]) -> usize) -> bool {
        while self.wire_sent < self.wire_len {
            let rest = &self.wire[self.wire_sent..self.wire_len];
            let n = sink(rest).min(rest.len());
            if n == 0 {
                return false;
            }
            self.wire_sent += n;
            self.stats.bytes += n as u64;
            if self.wire_sent == self.wire_len {
                self.stats.frames += 1;
            }
        }
        true
    }

    fn wire_free(&self) -> bool {
        self.wire_sent == self.wire_len
    }

    /// Moves events from the ring into the chunk until the ring is empty.
    /// A chunk that fills is framed when `frame` is true and the wire is
    /// free (then this returns true at once), else dropped whole.
    fn fill(&mut self, frame: bool) -> bool {
        let mut batch = [Event::new(0, crate::EventId(0), 0, [0, 0]); BATCH];
        loop {
            let taken = self.ring.take(&mut batch);
            self.stats.dropped += taken.overwritten + taken.dropped;
            if taken.events == 0 {
                return false;
            }
            let mut i = 0;
            let mut framed = false;
            while i < taken.events {
                let enc = self
                    .enc
                    .as_mut()
                    .expect("the encoder is only out while replaced");
                let room = MAX_CHUNK_EVENTS.saturating_sub(usize::from(enc.count()));
                i += enc.push_all(&batch[i..taken.events.min(i + room)]);
                if i == taken.events {
                    break;
                }
                // The chunk is full (bytes or MAX_CHUNK_EVENTS).
                if frame && self.wire_free() && !framed {
                    self.frame_chunk();
                    framed = true;
                } else {
                    self.drop_chunk();
                }
            }
            if framed {
                return true;
            }
        }
    }

    /// Starts a new chunk in the encoder's buffer; returns the old one's
    /// length and the buffer.
    fn take_chunk(&mut self) -> (usize, &'a mut [u8]) {
        let enc = self
            .enc
            .take()
            .expect("the encoder is only out while replaced");
        enc.finish_into_buffer()
    }

    fn restart(&mut self, buf: &'a mut [u8]) {
        self.enc = ChunkEncoder::new(buf, ChunkHeader::default()).ok();
    }

    fn drop_chunk(&mut self) {
        let n = self.chunk().count() as u64;
        let (_, buf) = self.take_chunk();
        self.stats.dropped += n;
        self.stats.chunks_dropped += 1;
        self.restart(buf);
    }

    /// Frames the chunk into the (free) wire and starts the next.
    fn frame_chunk(&mut self) {
        let count = self.chunk().count() as u64;
        let (n, buf) = self.take_chunk();
        let chunk = &mut buf[..n];
        BigEndian::write_u32(&mut chunk[chunk_field::SENDER..], self.sender);
        BigEndian::write_u64(&mut chunk[chunk_field::SEQUENCE..], self.sequence);
        BigEndian::write_u64(&mut chunk[chunk_field::FIRST_EVENT..], self.stats.sent);
        BigEndian::write_u64(&mut chunk[chunk_field::DROPPED..], self.stats.dropped);
        let mut crc = Crc32::new();
        let mut out = start_frame(self.wire, &mut self.first, FrameKind::Chunk, &mut crc);
        crc.update(chunk);
        out.push(chunk);
        let len = end_frame(out, crc);
        self.framed(len);
        self.stats.sent += count;
        self.stats.chunks += 1;
        self.chunks_since_catalog += 1;
        if self.catalog_every != 0 && self.chunks_since_catalog >= self.catalog_every {
            self.catalog_next = Some(0);
        }
        debug_assert!(n >= HEADER_LEN);
        self.restart(buf);
    }

    fn header(&self, kind: DatagramKind) -> DatagramHeader {
        DatagramHeader {
            kind,
            sender: self.sender,
            sequence: self.sequence,
            dropped: self.stats.dropped,
            first_event: self.stats.sent,
        }
    }

    /// Frames the catalog fragment at `offset`.
    fn frame_catalog(&mut self, offset: u32) {
        let total = self.catalog_len;
        let len = (self.fragment_room() as u32).min(total - offset);
        let mut head = [0u8; dg::HEADER_LEN];
        self.header(DatagramKind::Catalog)
            .emit(len as u16, &mut head);
        let mut tail = [0u8; 8];
        BigEndian::write_u32(&mut tail[..4], total);
        BigEndian::write_u32(&mut tail[4..], offset);
        let (catalog, spec) = (self.catalog, self.spec);
        let mut crc = Crc32::new();
        let mut out = start_frame(self.wire, &mut self.first, FrameKind::Catalog, &mut crc);
        crc.update(&head);
        out.push(&head);
        crc.update(&tail);
        out.push(&tail);
        // The header's bytes offset .. offset + len, from the encoder's
        // pieces.
        let (from, to) = (offset as usize, (offset + len) as usize);
        let mut at = 0usize;
        spec.emit(catalog, &mut |piece: &[u8]| {
            let (start, end) = (at, at + piece.len());
            at = end;
            let lo = from.max(start);
            let hi = to.min(end);
            if lo < hi {
                let part = &piece[lo - start..hi - start];
                crc.update(part);
                out.push(part);
            }
        });
        let n = end_frame(out, crc);
        self.framed(n);
        let next = offset + len;
        self.catalog_next = (next < total).then_some(next);
        if next >= total {
            self.chunks_since_catalog = 0;
        }
    }

    /// Frames the end: a close datagram.
    fn frame_end(&mut self) {
        let mut body = [0u8; dg::HEADER_LEN + dg::CLOSE_PAYLOAD_LEN];
        let (head, payload) = body.split_at_mut(dg::HEADER_LEN);
        if let Ok(head) = <&mut [u8; dg::HEADER_LEN]>::try_from(head) {
            self.header(DatagramKind::Close).emit(0, head);
        }
        BigEndian::write_u64(&mut payload[..8], self.stats.sent + self.stats.dropped);
        BigEndian::write_u64(&mut payload[8..], 0);
        let mut crc = Crc32::new();
        let mut out = start_frame(self.wire, &mut self.first, FrameKind::End, &mut crc);
        crc.update(&body);
        out.push(&body);
        let n = end_frame(out, crc);
        self.framed(n);
        self.closed = true;
    }

    /// A frame of `n` bytes is in the wire, to send.
    fn framed(&mut self, n: usize) {
        self.wire_len = n;
        self.wire_sent = 0;
        self.sequence += 1;
    }
}

/// Starts a frame of `kind` in `wire` (a delimiter first if it is the
/// stream's first frame).
fn start_frame<'w>(
    wire: &'w mut [u8],
    first: &mut bool,
    kind: FrameKind,
    crc: &mut Crc32,
) -> Encoder<'w> {
    let start = if *first {
        wire[0] = 0;
        *first = false;
        1
    } else {
        0
    };
    let mut out = Encoder::new(wire, start);
    let k = [kind as u8];
    crc.update(&k);
    out.push(&k);
    out
}

/// Ends the frame with its CRC and delimiter; returns its length.
fn end_frame(mut out: Encoder<'_>, crc: Crc32) -> usize {
    out.push(&crc.value().to_be_bytes());
    out.finish()
}
