//! Datagrams written into a caller's buffer with no allocation: events
//! ([`EventsEncoder`], [`encode_events`]), catalog fragments
//! ([`encode_catalog_fragment`]) and the close datagram ([`encode_close`]).

#![forbid(unsafe_code)]

use super::*;

/// Writes `header` (the core's encoder) into the first 40 bytes of `buf`
/// (the callers checked its length).
fn emit_into(header: &DatagramHeader, count: u16, buf: &mut [u8]) {
    let out: &mut [u8; HEADER_LEN] = (&mut buf[..HEADER_LEN])
        .try_into()
        .expect("a 40-byte slice is a 40-byte array");
    header.emit(count, out);
}

/// Encodes a close datagram in `buf` (at least 56 bytes); returns its length
/// (56). `sequence` is the number after the sender's last datagram (every
/// copy carries the same one); `dropped` and `first_event` are the sender's
/// final totals.
///
/// ```
/// use qtrace::wire::datagram::{encode_close, CloseCounts, DatagramKind, DatagramView};
///
/// let mut buf = [0u8; 56];
/// let counts = CloseCounts { logged: 1000, unsent: 2 };
/// let len = encode_close(&mut buf, 7, 30, 10, 988, counts).unwrap();
/// let v = DatagramView::new_checked(&buf[..len]).unwrap();
/// assert_eq!(v.kind(), DatagramKind::Close);
/// assert_eq!(v.close(), Some(counts));
/// assert_eq!((v.header().sequence, v.header().first_event), (30, 988));
/// # Ok::<(), qtrace::wire::WireError>(())
/// ```
///
/// # Errors
/// [`WireError::Truncated`] when `buf` is shorter than 56 bytes.
pub fn encode_close(
    buf: &mut [u8],
    sender: u32,
    sequence: u64,
    dropped: u64,
    first_event: u64,
    counts: CloseCounts,
) -> Result<usize, WireError> {
    let len = HEADER_LEN + CLOSE_PAYLOAD_LEN;
    if buf.len() < len {
        return Err(truncated(0, len, buf.len(), "datagram buffer"));
    }
    emit_into(
        &DatagramHeader {
            kind: DatagramKind::Close,
            sender,
            sequence,
            dropped,
            first_event,
        },
        0,
        buf,
    );
    buf[field::CLOSE_LOGGED..field::CLOSE_UNSENT].copy_from_slice(&counts.logged.to_be_bytes());
    buf[field::CLOSE_UNSENT..len].copy_from_slice(&counts.unsent.to_be_bytes());
    Ok(len)
}

/// Part of a sender's encoded trace header, carried by a catalog datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CatalogFragment<'a> {
    /// The length of the whole encoded header.
    pub total_len: u32,
    /// Where these bytes go in it.
    pub offset: u32,
    /// The bytes.
    pub bytes: &'a [u8],
}

/// Fills one events datagram in a caller's buffer, with no allocation.
#[derive(Debug)]
pub struct EventsEncoder<'a> {
    buf: &'a mut [u8],
    header: DatagramHeader,
    capacity: usize,
    count: usize,
}

impl<'a> EventsEncoder<'a> {
    /// Starts a datagram in `buf`; its length (capped at
    /// [`MAX_DATAGRAM_LEN`]) is the datagram's maximum size; `first_event` is
    /// the number of events the sender sent before this datagram. Fails when
    /// `buf` cannot hold one record.
    pub fn new(
        buf: &'a mut [u8],
        sender: u32,
        sequence: u64,
        dropped: u64,
        first_event: u64,
    ) -> Result<Self, WireError> {
        if buf.len() < MIN_DATAGRAM_LEN {
            return Err(truncated(0, MIN_DATAGRAM_LEN, buf.len(), "datagram buffer"));
        }
        let capacity = records_per_datagram(buf.len());
        Ok(EventsEncoder {
            buf,
            header: DatagramHeader {
                kind: DatagramKind::Events,
                sender,
                sequence,
                dropped,
                first_event,
            },
            capacity,
            count: 0,
        })
    }

    /// Adds a record; `false` (and nothing written) when the datagram is full.
    #[inline]
    pub fn push(&mut self, event: &Event) -> bool {
        if self.count == self.capacity {
            return false;
        }
        let at = HEADER_LEN + self.count * RECORD_LEN;
        if let Some(slot) = self
            .buf
            .get_mut(at..at + RECORD_LEN)
            .and_then(|s| <&mut [u8; RECORD_LEN]>::try_from(s).ok())
        {
            record::emit(event, slot);
            self.count += 1;
            true
        } else {
            false
        }
    }

    /// Records added so far.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether no record was added.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// How many records fit.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Whether another record fits.
    pub fn is_full(&self) -> bool {
        self.count == self.capacity
    }

    /// Writes the header; returns the datagram's length (send `buf[..len]`).
    pub fn finish(self) -> usize {
        emit_into(&self.header, self.count as u16, self.buf);
        HEADER_LEN + self.count * RECORD_LEN
    }
}

/// Encodes as many of `events` as fit into one datagram in `buf`; returns
/// `(datagram length, events encoded)`. `first_event` is the number of events
/// the sender sent before this datagram.
pub fn encode_events(
    buf: &mut [u8],
    sender: u32,
    sequence: u64,
    dropped: u64,
    first_event: u64,
    events: &[Event],
) -> Result<(usize, usize), WireError> {
    let mut enc = EventsEncoder::new(buf, sender, sequence, dropped, first_event)?;
    let mut n = 0;
    for e in events {
        if !enc.push(e) {
            break;
        }
        n += 1;
    }
    Ok((enc.finish(), n))
}

/// Encodes a catalog datagram carrying as much of `header_bytes[offset..]`
/// (an encoded [`TraceHeader`]) as fits in `buf`; returns
/// `(datagram length, header bytes carried)`. `first_event` is the number of
/// events the sender sent before this datagram.
pub fn encode_catalog_fragment(
    buf: &mut [u8],
    sender: u32,
    sequence: u64,
    dropped: u64,
    first_event: u64,
    header_bytes: &[u8],
    offset: usize,
) -> Result<(usize, usize), WireError> {
    if buf.len() < MIN_DATAGRAM_LEN {
        return Err(truncated(0, MIN_DATAGRAM_LEN, buf.len(), "datagram buffer"));
    }
    if header_bytes.len() > MAX_HEADER_LEN || offset >= header_bytes.len() {
        return Err(WireError::Invalid {
            offset: 0,
            what: "catalog fragment",
            reason: format!(
                "offset {offset} is outside the {}-byte header (at most {MAX_HEADER_LEN})",
                header_bytes.len()
            ),
        });
    }
    let room = fragment_bytes_per_datagram(buf.len());
    let n = room.min(header_bytes.len() - offset);
    emit_into(
        &DatagramHeader {
            kind: DatagramKind::Catalog,
            sender,
            sequence,
            dropped,
            first_event,
        },
        n as u16,
        buf,
    );
    let payload = HEADER_LEN + FRAGMENT_PREFIX_LEN;
    buf[field::FRAGMENT_TOTAL..field::FRAGMENT_OFFSET]
        .copy_from_slice(&(header_bytes.len() as u32).to_be_bytes());
    buf[field::FRAGMENT_OFFSET..payload].copy_from_slice(&(offset as u32).to_be_bytes());
    buf[payload..payload + n].copy_from_slice(&header_bytes[offset..offset + n]);
    Ok((HEADER_LEN + FRAGMENT_PREFIX_LEN + n, n))
}

/// Sets the version field of the datagram in `buf` (its header was
/// written): [`COMPACT_VERSION`] turns a version 1 catalog or close datagram
/// into the same datagram of a compact stream (FORMAT.md 2.7).
pub fn set_version(buf: &mut [u8], version: u16) {
    if let Some(v) = buf.get_mut(field::VERSION..field::VERSION + 2) {
        v.copy_from_slice(&version.to_be_bytes());
    }
}

/// Fills one compact events datagram (version 3, FORMAT.md 2.7) in a
/// caller's buffer, with no allocation: the 40-byte header, then one
/// compact chunk ([`qtrace_core::compact`]) holding the records.
///
/// ```
/// use qtrace::wire::datagram::{CompactEventsEncoder, DatagramView, COMPACT_VERSION};
/// use qtrace::{Event, EventId};
///
/// let mut buf = [0u8; 1472];
/// let mut enc = CompactEventsEncoder::new(&mut buf, 7, 0, 0, 0).unwrap();
/// assert!(enc.push(&Event::new(1_000, EventId(0x04), 0, [3, 0])));
/// assert!(enc.push(&Event::new(1_250, EventId(0x04), 0, [4, 0])));
/// let len = enc.finish();
/// assert_eq!(len, 40 + 48 + 5 + 4); // a literal record, then an interned one
///
/// let view = DatagramView::new_checked(&buf[..len]).unwrap();
/// assert_eq!(view.version(), COMPACT_VERSION);
/// assert_eq!(view.events().count(), 2);
/// ```
#[derive(Debug)]
pub struct CompactEventsEncoder<'a> {
    head: &'a mut [u8],
    chunk: qtrace_core::compact::ChunkEncoder<'a>,
    room: usize,
    header: DatagramHeader,
}

impl<'a> CompactEventsEncoder<'a> {
    /// Starts a datagram in `buf` (its length, capped at
    /// [`MAX_DATAGRAM_LEN`], is the datagram's maximum size); the arguments
    /// are the header's fields, as for [`EventsEncoder::new`].
    ///
    /// # Errors
    /// [`WireError::Truncated`] when `buf` cannot hold one record of the
    /// largest size ([`MIN_COMPACT_DATAGRAM_LEN`] bytes).
    pub fn new(
        buf: &'a mut [u8],
        sender: u32,
        sequence: u64,
        dropped: u64,
        first_event: u64,
    ) -> Result<Self, WireError> {
        if buf.len() < MIN_COMPACT_DATAGRAM_LEN {
            return Err(truncated(
                0,
                MIN_COMPACT_DATAGRAM_LEN,
                buf.len(),
                "datagram buffer",
            ));
        }
        let len = buf.len().min(MAX_DATAGRAM_LEN);
        let (head, rest) = buf[..len].split_at_mut(HEADER_LEN);
        let room = rest.len();
        let chunk = qtrace_core::compact::ChunkEncoder::new(
            rest,
            qtrace_core::compact::ChunkHeader {
                sender,
                sequence,
                first_event,
                dropped,
                base_time: 0,
            },
        )
        .map_err(|_| truncated(0, MIN_COMPACT_DATAGRAM_LEN, len, "datagram buffer"))?;
        Ok(CompactEventsEncoder {
            head,
            chunk,
            room,
            header: DatagramHeader {
                kind: DatagramKind::Events,
                sender,
                sequence,
                dropped,
                first_event,
            },
        })
    }

    /// Adds a record; `false` (and nothing written) when it does not fit.
    #[inline]
    pub fn push(&mut self, event: &Event) -> bool {
        self.chunk.push(event).is_ok()
    }

    /// How many more records fit whatever they are (each at most
    /// `qtrace_core::compact::MAX_RECORD_LEN` bytes): a sender can take that
    /// many from its queue and push them all.
    pub fn room_for(&self) -> usize {
        if self.chunk.count() == u16::MAX {
            return 0;
        }
        ((self.room - self.chunk.len()) / qtrace_core::compact::MAX_RECORD_LEN)
            .min((u16::MAX - self.chunk.count()) as usize)
    }

    /// Records added so far.
    pub fn len(&self) -> usize {
        self.chunk.count() as usize
    }

    /// Whether no record was added.
    pub fn is_empty(&self) -> bool {
        self.chunk.is_empty()
    }

    /// Sets the dropped count the datagram (and its chunk) carry.
    pub fn set_dropped(&mut self, dropped: u64) {
        self.header.dropped = dropped;
        self.chunk.set_dropped(dropped);
    }

    /// Writes the headers; returns the datagram's length (send `buf[..len]`).
    pub fn finish(self) -> usize {
        let count = self.chunk.count();
        let chunk_len = self.chunk.finish();
        emit_into(&self.header, count, self.head);
        set_version(self.head, COMPACT_VERSION);
        HEADER_LEN + chunk_len
    }
}
