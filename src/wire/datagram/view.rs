//! A checked view of one datagram ([`DatagramView`]): magic, version, kind
//! and every length validated once, then accessors that cannot panic; and
//! the close datagram's counts ([`CloseCounts`]).

#![forbid(unsafe_code)]

use super::*;

/// A checked view of one datagram. [`DatagramView::new_checked`] validates
/// the magic, version, kind and every length once; then no accessor can
/// panic.
#[derive(Clone, Copy, Debug)]
pub struct DatagramView<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> DatagramView<T> {
    /// Checks `buffer` (exactly one datagram: trailing bytes are an error).
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        Self::check(buffer, None)
    }

    /// Checks `buffer` as [`DatagramView::new_checked`] does and, in the
    /// same pass, decodes a compact events datagram's records into `records`
    /// as 32-byte records (FORMAT.md 1.4): the receiver decodes each compact
    /// datagram once. `records` is cleared first and stays empty for every
    /// other datagram (a version 1 datagram's records are its own bytes
    /// after the header); after an error it holds nothing to use.
    pub(crate) fn new_checked_into(buffer: T, records: &mut Vec<u8>) -> Result<Self, WireError> {
        records.clear();
        Self::check(buffer, Some(records))
    }

    fn check(buffer: T, records: Option<&mut Vec<u8>>) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        let len = b.len();
        if len < MAGIC.len() || b[..4] != MAGIC {
            if len < MAGIC.len() && MAGIC.starts_with(b) {
                return Err(truncated(0, HEADER_LEN, len, "datagram header"));
            }
            return Err(WireError::BadMagic { what: "datagram" });
        }
        // The version as soon as its two bytes are there: a later version
        // may have another header (FORMAT.md 4.3).
        if len < field::VERSION + 2 {
            return Err(truncated(0, HEADER_LEN, len, "datagram header"));
        }
        let version = be16(b, field::VERSION);
        if !SUPPORTED_DATAGRAM_VERSIONS.contains(&version) {
            return Err(WireError::UnsupportedVersion {
                offset: field::VERSION as u64,
                version,
                supported: SUPPORTED_DATAGRAM_VERSIONS,
            });
        }
        if keyed::is_keyed(version) {
            // Its tag is checked with its key first (the receiver does), and
            // the datagram it carries is viewed (FORMAT.md 2.6).
            return Err(WireError::Invalid {
                offset: field::VERSION as u64,
                what: "datagram version",
                reason: format!(
                    "{version} is a keyed datagram: check its tag with its key, then view the version {} datagram it carries (FORMAT.md 2.6)",
                    keyed::unkeyed_version(version)
                ),
            });
        }
        if len < HEADER_LEN {
            return Err(truncated(0, HEADER_LEN, len, "datagram header"));
        }
        if len > MAX_DATAGRAM_LEN {
            return Err(WireError::TooLarge {
                offset: 0,
                what: "datagram",
                len: len as u64,
                max: MAX_DATAGRAM_LEN as u64,
            });
        }
        let count = be16(b, field::COUNT) as usize;
        let expected = match DatagramKind::from_u8(b[field::KIND]) {
            None => {
                return Err(WireError::Invalid {
                    offset: field::KIND as u64,
                    what: "datagram kind",
                    reason: format!(
                        "{} is not 1 (events), 2 (catalog) or 3 (close)",
                        b[field::KIND]
                    ),
                })
            }
            Some(DatagramKind::Events) if version == COMPACT_VERSION => {
                HEADER_LEN + check_chunk(b, count, records)?
            }
            Some(DatagramKind::Events) => HEADER_LEN + count * RECORD_LEN,
            Some(DatagramKind::Catalog) => {
                if len < HEADER_LEN + FRAGMENT_PREFIX_LEN {
                    return Err(truncated(
                        HEADER_LEN,
                        FRAGMENT_PREFIX_LEN,
                        len - HEADER_LEN,
                        "catalog fragment",
                    ));
                }
                let total = be32(b, field::FRAGMENT_TOTAL) as usize;
                let offset = be32(b, field::FRAGMENT_OFFSET) as usize;
                if total > MAX_HEADER_LEN {
                    return Err(WireError::TooLarge {
                        offset: field::FRAGMENT_TOTAL as u64,
                        what: "catalog",
                        len: total as u64,
                        max: MAX_HEADER_LEN as u64,
                    });
                }
                if offset + count > total || count == 0 {
                    return Err(WireError::Invalid {
                        offset: field::FRAGMENT_OFFSET as u64,
                        what: "catalog fragment",
                        reason: if count == 0 {
                            "the fragment is empty".to_string()
                        } else {
                            format!(
                                "bytes {offset} to {} do not lie within the {total}-byte catalog",
                                offset + count - 1
                            )
                        },
                    });
                }
                HEADER_LEN + FRAGMENT_PREFIX_LEN + count
            }
            Some(DatagramKind::Close) => {
                if count != 0 {
                    return Err(WireError::Invalid {
                        offset: field::COUNT as u64,
                        what: "close datagram count",
                        reason: format!("{count}: a close datagram has count 0"),
                    });
                }
                HEADER_LEN + CLOSE_PAYLOAD_LEN
            }
        };
        if len < expected {
            return Err(truncated(
                0,
                expected,
                len,
                "datagram (its count claims more than arrived)",
            ));
        }
        if len > expected
            && version == COMPACT_VERSION
            && b[field::KIND] == DatagramKind::Events as u8
        {
            // Padding after the chunk (FORMAT.md 2.7): zero bytes that make
            // the datagrams of a segmentation-offload batch equally long.
            if let Some(i) = b[expected..].iter().position(|&x| x != 0) {
                return Err(WireError::Invalid {
                    offset: (expected + i) as u64,
                    what: "compact datagram padding",
                    reason: format!(
                        "not zero: the bytes after the chunk's {expected} are zero padding (FORMAT.md 2.7)"
                    ),
                });
            }
        } else if len > expected {
            return Err(WireError::Invalid {
                offset: expected as u64,
                what: "datagram length",
                reason: format!(
                    "{} bytes past the {expected} its count gives",
                    len - expected
                ),
            });
        }
        Ok(DatagramView { buffer })
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// The format version.
    pub fn version(&self) -> u16 {
        be16(self.b(), field::VERSION)
    }

    /// What the datagram carries.
    pub fn kind(&self) -> DatagramKind {
        // new_checked accepted only known kinds.
        DatagramKind::from_u8(self.b()[field::KIND]).unwrap_or(DatagramKind::Events)
    }

    /// Flags (0 in version 1; unknown bits are ignored).
    pub fn flags(&self) -> u8 {
        self.b()[field::FLAGS]
    }

    /// The count field: records (events) or fragment bytes (catalog).
    pub fn count(&self) -> u16 {
        be16(self.b(), field::COUNT)
    }

    /// The header fields.
    pub fn header(&self) -> DatagramHeader {
        let b = self.b();
        DatagramHeader {
            kind: self.kind(),
            sender: be32(b, field::SENDER),
            sequence: be64(b, field::SEQUENCE),
            dropped: be64(b, field::DROPPED),
            first_event: be64(b, field::FIRST_EVENT),
        }
    }

    /// The number of event records (0 for a catalog datagram).
    pub fn record_count(&self) -> usize {
        match self.kind() {
            DatagramKind::Events => self.count() as usize,
            DatagramKind::Catalog | DatagramKind::Close => 0,
        }
    }

    /// Whether its events are a compact chunk (version 3, FORMAT.md 2.7).
    pub fn is_compact(&self) -> bool {
        self.version() == COMPACT_VERSION
    }

    /// The bytes after the header: a version 1 events datagram's records
    /// as they are (32 bytes each), a compact one's chunk, a catalog's
    /// fragment (prefix included), a close's counts.
    pub(crate) fn payload(&self) -> &[u8] {
        &self.b()[HEADER_LEN..]
    }

    /// The event records, in order (none for a catalog datagram).
    pub fn events(&self) -> impl Iterator<Item = Event> + '_ {
        let n = self.record_count();
        let payload = &self.b()[HEADER_LEN..];
        let compact = self.is_compact() && n > 0;
        let fixed = (!compact).then(|| {
            payload
                .chunks_exact(RECORD_LEN)
                .take(n)
                .filter_map(|c| RecordView::new_checked(c).ok().map(|v| v.to_event()))
        });
        let chunk = compact
            .then(|| qtrace_core::compact::Chunk::new_checked(payload).ok())
            .flatten()
            .map(|c| c.records().map_while(Result::ok));
        fixed
            .into_iter()
            .flatten()
            .chain(chunk.into_iter().flatten())
    }

    /// Appends the event records to `out` as 32-byte records (FORMAT.md
    /// 1.4), in order: a version 1 datagram's as they are, a compact one's
    /// decoded. Returns how many.
    pub fn records_into(&self, out: &mut Vec<u8>) -> usize {
        let n = self.record_count();
        if !self.is_compact() {
            let raw = &self.b()[HEADER_LEN..];
            out.extend_from_slice(&raw[..(n * RECORD_LEN).min(raw.len())]);
            return n;
        }
        let start = out.len();
        for e in self.events() {
            let mut slot = [0u8; RECORD_LEN];
            record::emit(&e, &mut slot);
            out.extend_from_slice(&slot);
        }
        (out.len() - start) / RECORD_LEN
    }

    /// The catalog fragment (none for an events datagram).
    pub fn fragment(&self) -> Option<CatalogFragment<'_>> {
        match self.kind() {
            DatagramKind::Events | DatagramKind::Close => None,
            DatagramKind::Catalog => {
                let b = self.b();
                Some(CatalogFragment {
                    total_len: be32(b, field::FRAGMENT_TOTAL),
                    offset: be32(b, field::FRAGMENT_OFFSET),
                    bytes: &b[HEADER_LEN + FRAGMENT_PREFIX_LEN..],
                })
            }
        }
    }
}

impl<T: AsRef<[u8]>> DatagramView<T> {
    /// The final counts of a close datagram (none for other kinds).
    pub fn close(&self) -> Option<CloseCounts> {
        match self.kind() {
            DatagramKind::Close => {
                let b = self.b();
                Some(CloseCounts {
                    logged: be64(b, field::CLOSE_LOGGED),
                    unsent: be64(b, field::CLOSE_UNSENT),
                })
            }
            _ => None,
        }
    }
}

/// Checks the compact chunk of the version 3 events datagram `b` whose
/// count is `count` (FORMAT.md 4.3 step 8 for version 3): returns the
/// chunk's length. Every record is decoded to check it; with `out`, each is
/// appended to it as a 32-byte record.
fn check_chunk(b: &[u8], count: usize, out: Option<&mut Vec<u8>>) -> Result<usize, WireError> {
    use qtrace_core::compact::{self, field as cf, Chunk, DecodeError};
    let at = |offset: usize, reason: &str| WireError::Invalid {
        offset: (HEADER_LEN + offset) as u64,
        what: "compact chunk",
        reason: reason.to_string(),
    };
    let chunk = Chunk::new_checked(&b[HEADER_LEN..]).map_err(|e| match e {
        DecodeError::Truncated { needed, .. } => truncated(
            0,
            HEADER_LEN + needed,
            b.len(),
            "datagram (its chunk claims more than arrived)",
        ),
        DecodeError::BadMagic => at(cf::MAGIC.start, "its magic is not QTRZ"),
        DecodeError::UnsupportedVersion { version } => WireError::UnsupportedVersion {
            offset: (HEADER_LEN + cf::VERSION) as u64,
            version,
            supported: &compact::SUPPORTED_VERSIONS,
        },
        DecodeError::Corrupt { offset, what } => at(offset, what),
        _ => at(0, "does not decode"),
    })?;
    if chunk.count() as usize != count {
        return Err(WireError::Invalid {
            offset: field::COUNT as u64,
            what: "datagram count",
            reason: format!("{count}, but its chunk holds {} records", chunk.count()),
        });
    }
    let h = chunk.header();
    let mismatch = [
        (
            cf::SENDER,
            h.sender as u64 == be32(b, field::SENDER) as u64,
            "sender id",
        ),
        (
            cf::SEQUENCE,
            h.sequence == be64(b, field::SEQUENCE),
            "sequence number",
        ),
        (
            cf::FIRST_EVENT,
            h.first_event == be64(b, field::FIRST_EVENT),
            "first event",
        ),
        (
            cf::DROPPED,
            h.dropped == be64(b, field::DROPPED),
            "dropped count",
        ),
    ]
    .into_iter()
    .find(|(_, same, _)| !same);
    if let Some((offset, _, name)) = mismatch {
        return Err(at(
            offset,
            &format!("its {name} differs from the datagram header's"),
        ));
    }
    let corrupt = |e: DecodeError| match e {
        DecodeError::Corrupt { offset, what } => at(offset, what),
        _ => at(0, "does not decode"),
    };
    match out {
        None => {
            for r in chunk.records() {
                r.map_err(corrupt)?;
            }
        }
        Some(out) => {
            // The records' room at once, then each appended: `emit` writes
            // all 32 bytes, so no zeroing first (a memset of the room was a
            // ninth of the receiving thread's instructions, measured).
            // Every item of the iterator, the one after the count's records
            // included: it says whether bytes are left over (FORMAT.md 8.5
            // step 7; a `zip` with the room's slots used to drop it).
            out.reserve(count * RECORD_LEN);
            for r in chunk.records() {
                let e = r.map_err(corrupt)?;
                let mut slot = [0u8; RECORD_LEN];
                record::emit(&e, &mut slot);
                out.extend_from_slice(&slot);
            }
        }
    }
    Ok(chunk.len())
}

/// What a close datagram says besides its header: the sender's final counts.
/// With the header's `first_event` (events put in datagrams, *sent*) and
/// `dropped` (events refused by a full queue), `logged = sent + dropped +
/// unsent` for a sender that is consistent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CloseCounts {
    /// Every event routed to the sending queue (accepted + dropped).
    pub logged: u64,
    /// Events the queue accepted but never put in a datagram (still queued
    /// when its shutdown gave up).
    pub unsent: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::datagram::{encode_events, CompactEventsEncoder};
    use crate::EventId;

    fn events() -> Vec<Event> {
        (0..50u64)
            .map(|i| {
                Event::new(
                    1_000 + i * 37,
                    EventId(0x04 + (i % 3) as u16),
                    0,
                    [i, u64::MAX - i],
                )
            })
            .collect()
    }

    /// The records `new_checked_into` decodes while checking are the ones
    /// `records_into` decodes from the checked view, byte for byte; a
    /// version 1 datagram leaves them empty (its records are its payload).
    #[test]
    fn checking_a_compact_datagram_decodes_its_records_once() {
        let mut buf = [0u8; 1472];
        let mut enc = CompactEventsEncoder::new(&mut buf, 7, 3, 1, 20).unwrap();
        for e in &events() {
            assert!(enc.push(e));
        }
        let len = enc.finish();
        let mut decoded = vec![0xAA; 5]; // cleared first
        let view = DatagramView::new_checked_into(&buf[..len], &mut decoded).unwrap();
        let mut again = Vec::new();
        assert_eq!(view.records_into(&mut again), 50);
        assert_eq!(decoded.len(), 50 * RECORD_LEN);
        assert_eq!(decoded, again);
        let back: Vec<Event> = decoded
            .chunks_exact(RECORD_LEN)
            .map(|c| record::parse(c.try_into().unwrap()))
            .collect();
        assert_eq!(back, events());

        let mut v1 = [0u8; 1472];
        let (n, sent) = encode_events(&mut v1, 7, 4, 1, 70, &events()[..10]).unwrap();
        assert_eq!(sent, 10);
        let view = DatagramView::new_checked_into(&v1[..n], &mut decoded).unwrap();
        assert!(decoded.is_empty());
        assert_eq!(view.payload(), &v1[HEADER_LEN..n]);
    }

    /// A compact datagram whose records do not decode is refused with the
    /// same error by both checks.
    #[test]
    fn a_corrupt_chunk_fails_both_checks_alike() {
        let mut buf = [0u8; 1472];
        let mut enc = CompactEventsEncoder::new(&mut buf, 7, 0, 0, 0).unwrap();
        for e in &events() {
            assert!(enc.push(e));
        }
        let len = enc.finish();
        let mut seen = 0;
        // Every byte of the records' payload set to 0xFF in turn: some
        // still decode (other values), the others fail alike.
        for at in HEADER_LEN + 48..len {
            let mut bad = buf[..len].to_vec();
            bad[at] = 0xFF;
            let mut decoded = Vec::new();
            let one = DatagramView::new_checked(&bad[..]).map(|_| ());
            let two = DatagramView::new_checked_into(&bad[..], &mut decoded).map(|_| ());
            assert_eq!(one, two, "byte {at}");
            seen += usize::from(one.is_err());
        }
        assert!(seen > 0);
    }

    /// A byte after the last record the count announces (the chunk's
    /// length grown by one to hold it) is refused by both checks, at that
    /// byte.
    #[test]
    fn a_byte_after_the_last_record_fails_both_checks() {
        use qtrace_core::compact::field as cf;
        let mut buf = [0u8; 1472];
        let mut enc = CompactEventsEncoder::new(&mut buf, 7, 0, 0, 0).unwrap();
        for e in &events() {
            assert!(enc.push(e));
        }
        let len = enc.finish();
        let mut bad = buf[..len].to_vec();
        bad.push(0x00);
        let at = HEADER_LEN + cf::LENGTH;
        let length = u32::from_be_bytes(bad[at..at + 4].try_into().unwrap());
        bad[at..at + 4].copy_from_slice(&(length + 1).to_be_bytes());
        let one = DatagramView::new_checked(&bad[..]).map(|_| ());
        let mut decoded = Vec::new();
        let two = DatagramView::new_checked_into(&bad[..], &mut decoded).map(|_| ());
        let Err(WireError::Invalid { reason, .. }) = &one else {
            panic!("accepted or refused otherwise: {one:?}");
        };
        assert!(reason.contains("after the last record"), "{reason}");
        assert_eq!(one, two);
    }
}
