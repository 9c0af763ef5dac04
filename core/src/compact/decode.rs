//! The checked view of a chunk and the iterator over its records.

use byteorder::{BigEndian, ByteOrder};

use super::{
    field, varint, ChunkHeader, DecodeError, ARG0_PRESENT, ARG1_PRESENT, EXTENDED, EXT_ARG0_RAW,
    EXT_ARG1_RAW, EXT_BACKWARDS, EXT_FLAGS, EXT_RESERVED, HEADER_LEN, LITERAL, MAGIC,
    MAX_RECORD_LEN, MIN_RECORD_LEN, SUPPORTED_VERSIONS, TABLE_LEN,
};
use crate::{Event, EventId};

/// A checked view of one chunk (FORMAT.md 8): [`Chunk::new_checked`]
/// validates the header and the length once; the accessors then cannot
/// fail, and [`Chunk::records`] decodes the records one by one.
///
/// ```
/// use qtrace_core::compact::{Chunk, DecodeError};
///
/// // A chunk of no record: sender 7, sequence 1, first event 44, 3 dropped, base time 9.
/// let mut bytes = [0u8; 48];
/// bytes[..6].copy_from_slice(b"QTRZ\0\x01");
/// bytes[11] = 7;
/// bytes[23] = 1;
/// bytes[31] = 44;
/// bytes[39] = 3;
/// bytes[47] = 9;
/// let chunk = Chunk::new_checked(&bytes).unwrap();
/// assert_eq!((chunk.count(), chunk.len()), (0, 48));
/// assert_eq!(chunk.header().first_event, 44);
/// assert_eq!(chunk.records().next(), None);
///
/// assert!(matches!(Chunk::new_checked(&bytes[..47]), Err(DecodeError::Truncated { needed: 48, .. })));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk<'a> {
    /// The whole chunk, header included (exactly its length).
    bytes: &'a [u8],
}

impl<'a> Chunk<'a> {
    /// Checks the chunk at the start of `bytes`: magic, version, then the
    /// record count against the payload length, then that the whole chunk
    /// is there. Bytes after it are not looked at (the next chunk of a
    /// stream starts at [`len`](Chunk::len)).
    ///
    /// # Errors
    ///
    /// In this order: [`DecodeError::BadMagic`] as soon as the bytes given
    /// differ from `QTRZ`; [`DecodeError::UnsupportedVersion`] as soon as the
    /// version's two bytes are there; [`DecodeError::Truncated`] for fewer
    /// than 48 bytes; [`DecodeError::Corrupt`] (offset 12) when the payload
    /// length is impossible for the count (below 2 or above 39 bytes a
    /// record); [`DecodeError::Truncated`] when the payload is not all
    /// there.
    pub fn new_checked(bytes: &'a [u8]) -> Result<Self, DecodeError> {
        let magic_len = bytes.len().min(MAGIC.len());
        if bytes[..magic_len] != MAGIC[..magic_len] {
            return Err(DecodeError::BadMagic);
        }
        if bytes.len() >= field::VERSION + 2 {
            let version = BigEndian::read_u16(&bytes[field::VERSION..]);
            if !SUPPORTED_VERSIONS.contains(&version) {
                return Err(DecodeError::UnsupportedVersion { version });
            }
        }
        if bytes.len() < HEADER_LEN {
            return Err(DecodeError::Truncated {
                needed: HEADER_LEN,
                available: bytes.len(),
            });
        }
        let count = BigEndian::read_u16(&bytes[field::COUNT..]) as usize;
        let length = BigEndian::read_u32(&bytes[field::LENGTH..]) as usize;
        if length < count * MIN_RECORD_LEN || length > count * MAX_RECORD_LEN {
            return Err(DecodeError::Corrupt {
                offset: field::LENGTH,
                what: "the payload length is impossible for the record count \
                       (2 to 39 bytes a record)",
            });
        }
        let total = HEADER_LEN + length;
        if bytes.len() < total {
            return Err(DecodeError::Truncated {
                needed: total,
                available: bytes.len(),
            });
        }
        Ok(Chunk {
            bytes: &bytes[..total],
        })
    }

    /// The header's values (its base time as written).
    pub fn header(&self) -> ChunkHeader {
        let b = self.bytes;
        ChunkHeader {
            sender: BigEndian::read_u32(&b[field::SENDER..]),
            sequence: BigEndian::read_u64(&b[field::SEQUENCE..]),
            first_event: BigEndian::read_u64(&b[field::FIRST_EVENT..]),
            dropped: BigEndian::read_u64(&b[field::DROPPED..]),
            base_time: BigEndian::read_u64(&b[field::BASE_TIME..]),
        }
    }

    /// Records in the chunk, as its header says.
    pub fn count(&self) -> u16 {
        BigEndian::read_u16(&self.bytes[field::COUNT..])
    }

    /// The chunk's length in bytes, header included.
    #[allow(clippy::len_without_is_empty)] // a chunk is never empty: it has a header
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// The chunk's bytes, header included.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The records, decoded one by one: each an [`Event`], or a
    /// [`DecodeError::Corrupt`] after which the iterator ends.
    pub fn records(&self) -> Records<'a> {
        Records {
            payload: &self.bytes[HEADER_LEN..],
            pos: 0,
            left: self.count().into(),
            prev_time: BigEndian::read_u64(&self.bytes[field::BASE_TIME..]),
            table: [0; TABLE_LEN],
            table_len: 0,
            next_slot: 0,
            ids: 0,
            done: false,
        }
    }
}

/// The records of a [`Chunk`]: yields `count` events, then `None`; an
/// impossible record yields one [`DecodeError::Corrupt`] naming its header
/// byte (counted from the chunk's first byte), after which the iterator
/// ends. Bytes left after the last record are corrupt too.
#[derive(Clone, Debug)]
pub struct Records<'a> {
    payload: &'a [u8],
    pos: usize,
    /// Records not yet decoded. A `u32`, not the count's `u16`: its update
    /// and the next record's read are one width, so the load is forwarded
    /// from the store (the encoder's `State::count` says why).
    left: u32,
    prev_time: u64,
    table: [u64; TABLE_LEN],
    table_len: u8,
    next_slot: u8,
    /// One bit for each id of the literals decoded ([`Records::may_hold`]).
    ids: u64,
    done: bool,
}

impl Records<'_> {
    /// Records not yet decoded.
    pub fn remaining(&self) -> u16 {
        self.left as u16
    }

    /// Whether a record decoded so far may have the event id `id`:
    /// `false` says that none has, `true` that one may have (a filter over
    /// the ids the chunk's literal records named: every record's id is a
    /// literal's or an interned copy of one; two ids may share a bit). A
    /// reader that gives a few ids care of their own learns from it that a
    /// chunk has none of them without looking at every record.
    ///
    /// ```
    /// use qtrace_core::compact::{Chunk, ChunkEncoder, ChunkHeader};
    /// use qtrace_core::{Event, EventId};
    ///
    /// let mut buf = [0u8; 48 + 4 * 39];
    /// let mut enc = ChunkEncoder::new(&mut buf, ChunkHeader::default()).unwrap();
    /// for (t, id) in [(1, 4), (2, 5), (3, 4), (4, 4)] {
    ///     enc.push(&Event::new(t, EventId(id), 1, [0, 0])).unwrap();
    /// }
    /// let n = enc.finish();
    /// let chunk = Chunk::new_checked(&buf[..n]).unwrap();
    /// let mut records = chunk.records();
    /// assert!(!records.may_hold(EventId(4)));
    /// assert_eq!(records.by_ref().count(), 4);
    /// assert!(records.may_hold(EventId(4)) && records.may_hold(EventId(5)));
    /// assert!(!records.may_hold(EventId(1)));
    /// ```
    pub fn may_hold(&self, id: EventId) -> bool {
        self.ids & id_bit(id.0) != 0
    }

    /// Decodes the next records into `out`, as many as it holds and the
    /// chunk has left, and returns how many it wrote: the records
    /// [`next`](Iterator::next) would yield, without a `Result` to build and
    /// match for each. Fewer than `out.len()` means the chunk's records
    /// ended or the next one is impossible; [`next`](Iterator::next) then
    /// says which (`None`, or the [`DecodeError::Corrupt`] it would have
    /// yielded, bytes left after the last record included).
    ///
    /// ```
    /// use qtrace_core::compact::{Chunk, ChunkEncoder, ChunkHeader};
    /// use qtrace_core::{Event, EventId};
    ///
    /// let mut buf = [0u8; 48 + 3 * 39];
    /// let mut enc = ChunkEncoder::new(&mut buf, ChunkHeader::default()).unwrap();
    /// let events: Vec<Event> =
    ///     (0..3).map(|i| Event::new(100 * i, EventId(4), 1, [i, 0])).collect();
    /// for e in &events {
    ///     enc.push(e).unwrap();
    /// }
    /// let n = enc.finish();
    ///
    /// let chunk = Chunk::new_checked(&buf[..n]).unwrap();
    /// let mut records = chunk.records();
    /// let mut out = [Event::default(); 8];
    /// assert_eq!(records.fill(&mut out), 3);
    /// assert_eq!(out[..3], events[..]);
    /// assert_eq!(records.next(), None); // the chunk ended, and well
    /// ```
    pub fn fill(&mut self, out: &mut [Event]) -> usize {
        if self.done {
            return 0;
        }
        let want = out.len().min(self.left as usize);
        let mut n = 0;
        for slot in &mut out[..want] {
            *slot = match self.record_fast() {
                Some(e) => e,
                None => match self.record() {
                    Ok(e) => e,
                    Err(_) => break,
                },
            };
            n += 1;
        }
        // `n <= left`: at most `want` records were written.
        self.left -= n as u32;
        n
    }

    /// The next record when it is the common kind and 64 bytes of the
    /// payload are there from it: no extension byte, an interned id, every
    /// varint within 8 bytes (values below 2⁵⁶), the time not past 64
    /// bits. Read from a 64-byte window with no bounds check; `None` (and
    /// nothing changed) for every other record, which
    /// [`record`](Records::record) then decodes or refuses.
    #[inline(always)]
    fn record_fast(&mut self) -> Option<Event> {
        let w = self.payload.get(self.pos..)?.first_chunk::<64>()?;
        let h = w[0];
        let code = h >> 3;
        if h & EXTENDED != 0 || code >= self.table_len {
            return None;
        }
        let key = *self.table.get(usize::from(code))?;
        let mut at = 1;
        let delta = varint::read_window(w, &mut at)?;
        let a0 = if h & ARG0_PRESENT != 0 {
            varint::read_window(w, &mut at)?
        } else {
            0
        };
        let a1 = if h & ARG1_PRESENT != 0 {
            varint::read_window(w, &mut at)?
        } else {
            0
        };
        let time = self.prev_time.checked_add(delta)?;
        self.pos += at;
        self.prev_time = time;
        Some(Event {
            time,
            id: EventId(key as u16),
            flags: 0,
            source: (key >> 16) as u32,
            args: [a0, a1],
        })
    }

    #[inline(always)]
    fn record(&mut self) -> Result<Event, &'static str> {
        let p = self.payload;
        let mut pos = self.pos;
        let h = *p.get(pos).ok_or(RUNS_PAST)?;
        pos += 1;
        let ext = if h & EXTENDED != 0 {
            let x = *p.get(pos).ok_or(RUNS_PAST)?;
            pos += 1;
            if x & EXT_RESERVED != 0 {
                return Err("reserved extension bits 4-7 are set");
            }
            if (x & EXT_ARG0_RAW != 0 && h & ARG0_PRESENT == 0)
                || (x & EXT_ARG1_RAW != 0 && h & ARG1_PRESENT == 0)
            {
                return Err("a raw argument is marked absent");
            }
            x
        } else {
            0
        };
        let code = h >> 3;
        let mut literal = false;
        let key = if code == LITERAL {
            let id = varint::read_fast(p, &mut pos).ok_or(BAD_VARINT)?;
            let source = varint::read_fast(p, &mut pos).ok_or(BAD_VARINT)?;
            if id > u16::MAX as u64 {
                return Err("the literal id does not fit 16 bits");
            }
            if source > u32::MAX as u64 {
                return Err("the literal source does not fit 32 bits");
            }
            literal = true;
            id | source << 16
        } else if code < self.table_len {
            self.table[code as usize]
        } else {
            return Err("the interned code names no entry of the chunk's table yet");
        };
        let delta = varint::read_fast(p, &mut pos).ok_or(BAD_VARINT)?;
        let time = if ext & EXT_BACKWARDS != 0 {
            self.prev_time.checked_sub(delta)
        } else {
            self.prev_time.checked_add(delta)
        }
        .ok_or("the time delta takes the time out of 64 bits")?;
        let flags = if ext & EXT_FLAGS != 0 {
            let f = varint::read_fast(p, &mut pos).ok_or(BAD_VARINT)?;
            if f > u16::MAX as u64 {
                return Err("the flags do not fit 16 bits");
            }
            f as u16
        } else {
            0
        };
        let a0 = arg(p, &mut pos, h & ARG0_PRESENT != 0, ext & EXT_ARG0_RAW != 0)?;
        let a1 = arg(p, &mut pos, h & ARG1_PRESENT != 0, ext & EXT_ARG1_RAW != 0)?;
        // State changes only once the record is whole: after an error the
        // same record decodes to the same error (`fill`, then `next`).
        if literal {
            self.ids |= id_bit(key as u16);
            let slot = self.next_slot as usize;
            self.table[slot] = key;
            self.next_slot = if slot + 1 == TABLE_LEN {
                0
            } else {
                slot as u8 + 1
            };
            if (self.table_len as usize) < TABLE_LEN {
                self.table_len += 1;
            }
        }
        self.pos = pos;
        self.prev_time = time;
        Ok(Event {
            time,
            id: EventId(key as u16),
            flags,
            source: (key >> 16) as u32,
            args: [a0, a1],
        })
    }
}

/// The bit of [`Records::ids`] for `id`: a multiplicative hash's top 6
/// bits, so that ids near each other take different bits.
#[inline(always)]
fn id_bit(id: u16) -> u64 {
    1 << (u32::from(id).wrapping_mul(0x9e37_79b9) >> 26)
}

const RUNS_PAST: &str = "the record runs past the chunk's payload";
const BAD_VARINT: &str = "a varint runs past the payload or does not fit 64 bits";

#[inline(always)]
fn arg(p: &[u8], pos: &mut usize, present: bool, raw: bool) -> Result<u64, &'static str> {
    if !present {
        return Ok(0);
    }
    if raw {
        let b = p.get(*pos..*pos + 8).ok_or(RUNS_PAST)?;
        *pos += 8;
        return Ok(BigEndian::read_u64(b));
    }
    varint::read_fast(p, pos).ok_or(BAD_VARINT)
}

impl Iterator for Records<'_> {
    type Item = Result<Event, DecodeError>;

    // Always: out of line, the decoder is too big for LLVM to inline by
    // itself, and the call with its `Option<Result<Event, _>>` through
    // memory costs a third of the iterator's speed (callgrind).
    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.left == 0 {
            self.done = true;
            if self.pos != self.payload.len() {
                return Some(Err(DecodeError::Corrupt {
                    offset: HEADER_LEN + self.pos,
                    what: "bytes after the last record the count announces",
                }));
            }
            return None;
        }
        if let Some(e) = self.record_fast() {
            self.left -= 1;
            return Some(Ok(e));
        }
        match self.record() {
            Ok(e) => {
                self.left -= 1;
                Some(Ok(e))
            }
            Err(what) => {
                self.done = true;
                Some(Err(DecodeError::Corrupt {
                    offset: HEADER_LEN + self.pos,
                    what,
                }))
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.done {
            (0, Some(0))
        } else {
            (0, Some(self.left as usize + 1))
        }
    }
}
