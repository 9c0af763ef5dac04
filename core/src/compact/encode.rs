//! The chunk encoder: records into a caller's buffer, whole or not at all.

use core::fmt;

use byteorder::{BigEndian, ByteOrder};

use super::{
    field, varint, ChunkHeader, ARG0_PRESENT, ARG1_PRESENT, EXTENDED, EXT_ARG0_RAW, EXT_ARG1_RAW,
    EXT_BACKWARDS, EXT_FLAGS, HEADER_LEN, LITERAL, MAGIC, MAX_RECORD_LEN, TABLE_LEN, VERSION,
};
use crate::Event;

/// The chunk has no room for the record (or run), or already holds 65,535
/// records: nothing was written. Finish the chunk and push the record into
/// the next one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Full;

impl fmt::Display for Full {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the compact chunk is full: finish it and start the next")
    }
}

/// An empty slot of the interning table (no `(id, source)` key has bits
/// above 48).
const EMPTY: u64 = u64::MAX;

/// Slots of the encoder's table: [`TABLE_LEN`] in use and one more, always
/// [`EMPTY`], so that a slot number masked with `SLOTS - 1` indexes it
/// without a bounds check (and never matches a key).
const SLOTS: usize = 32;
const _: () = assert!(SLOTS.is_power_of_two() && SLOTS > TABLE_LEN);

/// Buckets of the encoder's index of its table (a power of two, 1 byte
/// each); the bytes written do not depend on it. On a host, eight times
/// the slots, so that few of the keys in use share one: the reference
/// corpus's records encoded in 11.8 ns each with 256 buckets, 13.8 with
/// 128, 16.4 with no index (AMD EPYC family 26 model 2; before the
/// [`SHARED`] flag). On a 32-bit MCU, twice the slots: each chunk clears
/// the index, and with 256 buckets the firmware's streaming drain took 7.6
/// more instructions an event than with none, with 64 buckets 1.5 more
/// (scripts/firmware-cost.sh).
const INDEX_LEN: usize = if cfg!(target_pointer_width = "64") {
    256
} else {
    64
};
const _: () = assert!(INDEX_LEN.is_power_of_two() && INDEX_LEN >= 2 * TABLE_LEN);

/// The flag of an index bucket that a second key took in this chunk: only
/// then can its owner's eviction leave another key of the bucket in the
/// table, and only then is the table scanned for it (a scan computing the
/// bucket of every slot at each literal was most of a literal's cost).
const SHARED: u8 = 0x80;
const _: () = assert!(TABLE_LEN < SHARED as usize);

/// The index bucket of a key: a multiplicative hash of its 48 bits folded
/// to 32 (one 32-bit multiply, cheap on a 32-bit MCU too).
#[inline(always)]
const fn bucket(k: u64) -> usize {
    let x = (k ^ (k >> 32)) as u32;
    (x.wrapping_mul(0x9E37_79B1) >> (32 - INDEX_LEN.trailing_zeros())) as usize
}

/// The longest record [`encode_short`] writes: a header byte and three
/// 32-bit varints of at most 5 bytes.
const SHORT_LEN: usize = 16;

/// The interning key of a record.
#[inline(always)]
const fn key(e: &Event) -> u64 {
    e.id.0 as u64 | (e.source as u64) << 16
}

/// What a chunk's records depend on: the decoder rebuilds the same.
#[derive(Clone, Copy, Debug)]
struct State {
    /// Bytes written, header included.
    pos: usize,
    /// Records so far (at most 65,535). A `u32`, not a `u16`: its update
    /// and the next record's read are then one width, so the load is
    /// forwarded from the store (a wider load over a narrow store stalls
    /// each record on x86: measured, a third of the sender's encoding).
    count: u32,
    prev_time: u64,
    base_time: u64,
    /// `(id, source)` keys by table slot (the last slot stays [`EMPTY`]).
    table: [u64; SLOTS],
    /// Slots in use (at most [`TABLE_LEN`]).
    table_len: u8,
    /// The slot the next literal takes.
    next_slot: u8,
    /// The slot of the last hit (checked first).
    last: u8,
    /// Per [`bucket`], 0 or 1 + the slot of a key in the table with that
    /// bucket, [`SHARED`] set once a second key took the bucket; every key
    /// in the table has a bucket that is not 0. A key whose bucket is 0 is
    /// not in the table (a literal, found without a scan); one whose bucket
    /// names the slot of another key (two keys in one bucket) is looked for
    /// by a scan. A scan of the table for every record past the last hit's
    /// slot and the next was a third of the encoding of the reference
    /// corpus (docs/benchmarks-history.md, "The encoder's table index").
    index: [u8; INDEX_LEN],
}

/// Writes one chunk into a caller's buffer (FORMAT.md 8): the header, then
/// records one [`push`](ChunkEncoder::push) at a time until the buffer is
/// [`Full`], then [`finish`](ChunkEncoder::finish).
///
/// No allocation, no panic: a record that does not fit leaves the chunk as
/// it was. A buffer of `HEADER_LEN + n × MAX_RECORD_LEN` bytes always holds
/// `n` records.
///
/// ```
/// use qtrace_core::compact::{ChunkEncoder, ChunkHeader, HEADER_LEN};
/// use qtrace_core::{Event, EventId};
///
/// let mut buf = [0u8; HEADER_LEN + 8];
/// let mut enc = ChunkEncoder::new(&mut buf, ChunkHeader::default()).unwrap();
/// assert_eq!(enc.push(&Event::new(5, EventId(2), 0, [7, 0])), Ok(5));
/// assert!(enc.push(&Event::new(6, EventId(2), 0, [u64::MAX, 0])).is_err());
/// assert_eq!(enc.count(), 1);
/// assert_eq!(enc.finish(), HEADER_LEN + 5);
/// ```
#[derive(Debug)]
pub struct ChunkEncoder<'a> {
    buf: &'a mut [u8],
    header: ChunkHeader,
    s: State,
}

impl<'a> ChunkEncoder<'a> {
    /// Starts a chunk with `header`'s sender, sequence, first event and
    /// dropped count in `buf`.
    ///
    /// # Errors
    ///
    /// [`Full`] when `buf` is shorter than the header ([`HEADER_LEN`]).
    pub fn new(buf: &'a mut [u8], header: ChunkHeader) -> Result<Self, Full> {
        if buf.len() < HEADER_LEN {
            return Err(Full);
        }
        Ok(ChunkEncoder {
            buf,
            header,
            s: State {
                pos: HEADER_LEN,
                count: 0,
                prev_time: header.base_time,
                base_time: header.base_time,
                table: [EMPTY; SLOTS],
                table_len: 0,
                next_slot: 0,
                last: 0,
                index: [0; INDEX_LEN],
            },
        })
    }

    /// Records in the chunk so far.
    pub fn count(&self) -> u16 {
        self.s.count as u16
    }

    /// Bytes of the chunk so far, header included: what
    /// [`finish`](ChunkEncoder::finish) returns now.
    pub fn len(&self) -> usize {
        self.s.pos
    }

    /// Whether the chunk holds no record yet.
    pub fn is_empty(&self) -> bool {
        self.s.count == 0
    }

    /// Appends `event`, returning the bytes it took (2 to
    /// [`MAX_RECORD_LEN`]).
    ///
    /// # Errors
    ///
    /// [`Full`] when the record does not fit in the buffer, or the chunk
    /// holds 65,535 records; the chunk is unchanged.
    #[inline]
    pub fn push(&mut self, event: &Event) -> Result<usize, Full> {
        match encode_short(&mut self.s, self.buf, event) {
            Some(n) => Ok(n),
            None => encode(&mut self.s, self.buf, event),
        }
    }

    /// Appends records from the front of `events` while they fit; returns
    /// how many went in (all of them, or fewer when the chunk is
    /// [`Full`]). The same bytes as one [`push`](ChunkEncoder::push) each,
    /// in one loop (a sender moving batches from a ring).
    pub fn push_all(&mut self, events: &[Event]) -> usize {
        let mut n = 0;
        for e in events {
            if encode_short(&mut self.s, self.buf, e).is_none()
                && encode(&mut self.s, self.buf, e).is_err()
            {
                break;
            }
            n += 1;
        }
        n
    }

    /// Appends every record of `events` (a combine run, FORMAT.md 1.8, or
    /// any batch that must not be split), returning the bytes they took.
    ///
    /// # Errors
    ///
    /// [`Full`] when they do not all fit; the chunk is unchanged (none of
    /// them was written).
    pub fn push_run(&mut self, events: &[Event]) -> Result<usize, Full> {
        let saved = self.s;
        for e in events {
            if encode_short(&mut self.s, self.buf, e).is_some() {
                continue;
            }
            if let Err(full) = encode(&mut self.s, self.buf, e) {
                self.s = saved;
                return Err(full);
            }
        }
        Ok(self.s.pos - saved.pos)
    }

    /// Sets the header's dropped count (written by
    /// [`finish`](ChunkEncoder::finish)): a sender that learns which drops
    /// the chunk reports only once its records are in.
    pub fn set_dropped(&mut self, dropped: u64) {
        self.header.dropped = dropped;
    }

    /// Writes the header (count, length, base time) and returns the chunk's
    /// length in bytes: the chunk is `buf[..n]`.
    pub fn finish(self) -> usize {
        self.finish_into_buffer().0
    }

    /// As [`finish`](ChunkEncoder::finish), and hands back the whole buffer
    /// (the chunk is its first `n` bytes), so that a caller that keeps the
    /// encoder in a struct (the byte-stream drain, [`crate::stream`]) can
    /// start the next chunk in the same memory.
    pub fn finish_into_buffer(self) -> (usize, &'a mut [u8]) {
        let out = &mut self.buf[..HEADER_LEN];
        out[field::MAGIC].copy_from_slice(&MAGIC);
        BigEndian::write_u16(&mut out[field::VERSION..], VERSION);
        BigEndian::write_u16(&mut out[field::COUNT..], self.s.count as u16);
        BigEndian::write_u32(&mut out[field::SENDER..], self.header.sender);
        BigEndian::write_u32(&mut out[field::LENGTH..], (self.s.pos - HEADER_LEN) as u32);
        BigEndian::write_u64(&mut out[field::SEQUENCE..], self.header.sequence);
        BigEndian::write_u64(&mut out[field::FIRST_EVENT..], self.header.first_event);
        BigEndian::write_u64(&mut out[field::DROPPED..], self.header.dropped);
        BigEndian::write_u64(&mut out[field::BASE_TIME..], self.s.base_time);
        (self.s.pos, self.buf)
    }
}

/// The common record, written straight in 32-bit arithmetic (a register
/// a value on a 32-bit MCU, not two): not the chunk's first, a table hit,
/// no extension byte (time forward by less than 2^32, flags 0, arguments
/// below 2^32), and [`SHORT_LEN`] bytes left in `buf`. Returns its length
/// after advancing `s`, or `None` with nothing changed: then [`encode`]
/// writes it (any record, the same bytes for this one).
#[inline(always)]
fn encode_short(s: &mut State, buf: &mut [u8], e: &Event) -> Option<usize> {
    // Count 0 (the first record sets the base time) or 65,535 (full).
    if s.count.wrapping_sub(1) >= u32::from(u16::MAX - 1) || e.flags != 0 {
        return None;
    }
    // Forward by less than 2^32: no borrow, no high half (one subtraction).
    let (d, back) = e.time.overflowing_sub(s.prev_time);
    if back || d >> 32 != 0 {
        return None;
    }
    let [a0, a1] = e.args;
    // Both arguments below 2^32: one test of their high halves.
    if (a0 | a1) >> 32 != 0 {
        return None;
    }
    let k = key(e);
    // Most records hit the last slot or the one after it; a pattern of
    // three or more events (a, b, a, c) hits elsewhere in the table: a
    // scan of the slots in use here is cheaper than [`encode`]'s general
    // path (measured: half the records of `examples/udp_rate`'s workload).
    let code = match hit(s, k) {
        Some(code) => code,
        None => find(s, k)?,
    };
    let out = buf.get_mut(s.pos..)?.first_chunk_mut::<SHORT_LEN>()?;
    let n = write_short(out, code, d as u32, a0 as u32, a1 as u32)?;
    s.last = code;
    s.pos += n;
    s.count += 1;
    s.prev_time = e.time;
    Some(n)
}

/// The slot holding `k` if it is the last hit's or the one after it (a
/// repeating pattern of events hits them); else `None`, and [`lookup`]
/// searches the whole table. Which slot is found first changes no byte:
/// every key is in one slot at most.
#[inline(always)]
fn hit(s: &State, k: u64) -> Option<u8> {
    let last = s.last as usize & (SLOTS - 1);
    let next = if last + 1 < s.table_len as usize {
        last + 1
    } else {
        0
    };
    if s.table[next & (SLOTS - 1)] == k {
        return Some(next as u8);
    }
    if s.table[last] == k {
        return Some(last as u8);
    }
    None
}

/// The slot holding `k`, by its [`bucket`]: `None` when `k` is in none (a
/// literal: [`encode`] writes it); a scan of the table when the bucket
/// names another key's slot.
#[inline(always)]
fn find(s: &State, k: u64) -> Option<u8> {
    let i = s.index[bucket(k)];
    if i == 0 {
        return None;
    }
    let slot = (i - 1) & (SLOTS as u8 - 1);
    if s.table[slot as usize] == k {
        return Some(slot);
    }
    scan(s, k)
}

/// The slot holding `k`, searched over the slots in use; `None` when `k`
/// is in none.
#[inline(always)]
fn scan(s: &State, k: u64) -> Option<u8> {
    let len = (s.table_len as usize).min(TABLE_LEN);
    s.table[..len].iter().position(|&t| t == k).map(|i| i as u8)
}

/// Encodes `e` at `s.pos` of `buf` and advances `s`; on [`Full`], `s` is
/// unchanged (the bytes of `buf` past `s.pos` may not be). The record is
/// written in place when [`MAX_RECORD_LEN`] bytes are left, else into a
/// scratch copied in if it fits; the table changes only once it is in.
// Not inlined: the loops around [`encode_short`] keep their registers for
// it (inlined, this path's spills cost the common record ~15 instructions
// on thumbv7m).
#[inline(never)]
fn encode(s: &mut State, buf: &mut [u8], e: &Event) -> Result<usize, Full> {
    if s.count >= u32::from(u16::MAX) {
        return Err(Full);
    }
    // The first record's delta counts from itself: the base time.
    let prev = if s.count == 0 { e.time } else { s.prev_time };
    let start = s.pos;
    let k = key(e);
    let code = lookup(s, k);
    let n = match buf
        .get_mut(start..)
        .and_then(<[u8]>::first_chunk_mut::<MAX_RECORD_LEN>)
    {
        Some(out) => write_record(out, e, prev, code),
        None => {
            let mut scratch = [0u8; MAX_RECORD_LEN];
            let n = write_record(&mut scratch, e, prev, code);
            let out = buf.get_mut(start..start + n).ok_or(Full)?;
            out.copy_from_slice(&scratch[..n]);
            n
        }
    };
    if code == LITERAL {
        let slot = s.next_slot;
        let old = core::mem::replace(&mut s.table[slot as usize % TABLE_LEN], k);
        reindex(s, old, k, slot);
        s.last = slot;
        s.next_slot = if slot as usize + 1 == TABLE_LEN {
            0
        } else {
            slot + 1
        };
        if (s.table_len as usize) < TABLE_LEN {
            s.table_len += 1;
        }
    } else {
        s.last = code;
    }
    if s.count == 0 {
        s.base_time = e.time;
    }
    s.pos = start + n;
    s.count += 1;
    s.prev_time = e.time;
    Ok(n)
}

/// Keeps [`State::index`] true after `slot`'s key went from `old` to `new`
/// (the table's length not yet updated): `old`'s bucket, if it named
/// `slot`, names another key of that bucket still in the table (`new`
/// among them) or none; `new`'s bucket names `slot` if it named none, and
/// is flagged [`SHARED`] if it named a key already.
fn reindex(s: &mut State, old: u64, new: u64, slot: u8) {
    if old != EMPTY {
        let b = bucket(old);
        let i = s.index[b];
        if i & !SHARED == slot + 1 {
            s.index[b] = if i & SHARED == 0 {
                // No other key ever took this bucket in this chunk.
                0
            } else {
                let len = (s.table_len as usize + 1).min(TABLE_LEN);
                s.table[..len]
                    .iter()
                    .position(|&t| t != EMPTY && bucket(t) == b)
                    .map_or(0, |j| (j as u8 + 1) | SHARED)
            };
        }
    }
    let b = bucket(new);
    s.index[b] = match s.index[b] {
        0 => slot + 1,
        i => i | SHARED,
    };
}

/// The table slot holding `k`, or [`LITERAL`]. The slot of the last hit
/// and the one after it are tried first (a repeating pattern of events
/// hits them), then the index; every key is in one slot at most, so the
/// order of the search changes no byte.
#[inline(always)]
fn lookup(s: &State, k: u64) -> u8 {
    let last = s.last as usize;
    if s.table[last] == k {
        return last as u8;
    }
    let len = (s.table_len as usize).min(TABLE_LEN);
    let next = if last + 1 < len { last + 1 } else { 0 };
    if s.table[next] == k {
        return next as u8;
    }
    find(s, k).unwrap_or(LITERAL)
}

/// Writes the record of `e`, table code `code` (a slot or [`LITERAL`]),
/// time delta from `prev`, into `out`; returns its length.
#[inline(always)]
fn write_record(out: &mut [u8; MAX_RECORD_LEN], e: &Event, prev: u64, code: u8) -> usize {
    let [a0, a1] = e.args;
    if code != LITERAL && e.flags == 0 && e.time >= prev {
        if let (Ok(d), Ok(x0), Ok(x1)) = (
            u32::try_from(e.time - prev),
            u32::try_from(a0),
            u32::try_from(a1),
        ) {
            if let Some(n) = out
                .first_chunk_mut::<SHORT_LEN>()
                .and_then(|out| write_short(out, code, d, x0, x1))
            {
                return n;
            }
        }
    }
    write_any(out, e, prev, code)
}

/// The common record in 32-bit arithmetic (two registers fewer a value
/// on a 32-bit MCU): a table hit, no extension byte (time forward, flags
/// 0, small arguments), every field below 2^32. The same bytes as
/// [`write_any`]; `None` never happens (each field's 5-byte window is in
/// the 16 bytes), it only spares a panic path.
#[inline(always)]
fn write_short(out: &mut [u8; SHORT_LEN], code: u8, d: u32, a0: u32, a1: u32) -> Option<usize> {
    let mut h = code << 3;
    if a0 != 0 {
        h |= ARG0_PRESENT;
    }
    if a1 != 0 {
        h |= ARG1_PRESENT;
    }
    out[0] = h;
    let mut pos = 1 + varint::put_u32(window(out, 1)?, d);
    if a0 != 0 {
        pos += varint::put_u32(window(out, pos)?, a0);
    }
    if a1 != 0 {
        pos += varint::put_u32(window(out, pos)?, a1);
    }
    Some(pos)
}

/// The 5 bytes of `out` from `at` (a 32-bit varint's room).
#[inline(always)]
fn window(out: &mut [u8; SHORT_LEN], at: usize) -> Option<&mut [u8; 5]> {
    out.get_mut(at..)?.first_chunk_mut::<5>()
}

/// Any record (the table's literal, an extension byte, 64-bit fields).
#[inline]
fn write_any(out: &mut [u8; MAX_RECORD_LEN], e: &Event, prev: u64, code: u8) -> usize {
    let (delta, backwards) = if e.time >= prev {
        (e.time - prev, false)
    } else {
        (prev - e.time, true)
    };
    let [a0, a1] = e.args;
    let mut h = code << 3;
    if a0 != 0 {
        h |= ARG0_PRESENT;
    }
    if a1 != 0 {
        h |= ARG1_PRESENT;
    }
    let raw0 = a0 >= 1 << 56;
    let raw1 = a1 >= 1 << 56;
    let mut pos = 1;
    // The common record has no extension byte: one test for it.
    if backwards || e.flags != 0 || (a0 | a1) >= 1 << 56 {
        let mut ext = 0u8;
        if backwards {
            ext |= EXT_BACKWARDS;
        }
        if e.flags != 0 {
            ext |= EXT_FLAGS;
        }
        if raw0 {
            ext |= EXT_ARG0_RAW;
        }
        if raw1 {
            ext |= EXT_ARG1_RAW;
        }
        h |= EXTENDED;
        out[1] = ext;
        pos = 2;
    }
    out[0] = h;
    if code == LITERAL {
        varint::write(out, &mut pos, e.id.0 as u64);
        varint::write(out, &mut pos, e.source as u64);
    }
    varint::write(out, &mut pos, delta);
    if e.flags != 0 {
        varint::write(out, &mut pos, e.flags as u64);
    }
    if a0 != 0 {
        if raw0 {
            out[pos..pos + 8].copy_from_slice(&a0.to_be_bytes());
            pos += 8;
        } else {
            varint::write(out, &mut pos, a0);
        }
    }
    if a1 != 0 {
        if raw1 {
            out[pos..pos + 8].copy_from_slice(&a1.to_be_bytes());
            pos += 8;
        } else {
            varint::write(out, &mut pos, a1);
        }
    }
    pos
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::vec::Vec;

    use proptest::prelude::*;

    use super::*;
    use crate::EventId;

    /// The encoder as FORMAT.md 8 states it, slowly: every record by
    /// [`write_any`], the table a list searched in full, the oldest entry
    /// replaced after 31. Returns the chunks' bytes and each push's length.
    fn reference(events: &[Event], buf_len: usize) -> (Vec<Vec<u8>>, Vec<usize>) {
        let (mut chunks, mut lens) = (Vec::new(), Vec::new());
        let mut buf = std::vec![0u8; buf_len];
        let (mut table, mut next, mut pos, mut count) = (Vec::<u64>::new(), 0, HEADER_LEN, 0u16);
        let (mut prev, mut base) = (0u64, 0u64);
        let mut i = 0;
        while i < events.len() {
            let e = &events[i];
            let k = key(e);
            let code = table
                .iter()
                .position(|&t| t == k)
                .map_or(LITERAL, |c| c as u8);
            let p = if count == 0 { e.time } else { prev };
            let mut rec = [0u8; MAX_RECORD_LEN];
            let n = write_any(&mut rec, e, p, code);
            if pos + n > buf_len {
                // Full: the chunk's header, then a new chunk.
                assert!(count > 0, "a record that fits no chunk");
                let mut enc = ChunkEncoder::new(&mut buf, ChunkHeader::default()).unwrap();
                enc.s.pos = pos;
                enc.s.count = count.into();
                enc.s.base_time = base;
                let len = enc.finish();
                chunks.push(buf[..len].to_vec());
                (table, next, pos, count) = (Vec::new(), 0, HEADER_LEN, 0);
                continue;
            }
            buf[pos..pos + n].copy_from_slice(&rec[..n]);
            if code == LITERAL {
                if table.len() < TABLE_LEN {
                    table.push(k);
                } else {
                    table[next] = k;
                }
                next = (next + 1) % TABLE_LEN;
            }
            if count == 0 {
                base = e.time;
            }
            (pos, count, prev) = (pos + n, count + 1, e.time);
            lens.push(n);
            i += 1;
        }
        let mut enc = ChunkEncoder::new(&mut buf, ChunkHeader::default()).unwrap();
        (enc.s.pos, enc.s.count, enc.s.base_time) = (pos, count.into(), base);
        let len = enc.finish();
        chunks.push(buf[..len].to_vec());
        (chunks, lens)
    }

    /// The encoder under test, by `push` (or `push_all` in batches of
    /// `batch`), finishing a chunk when it is full.
    fn encoded(events: &[Event], buf_len: usize, batch: usize) -> (Vec<Vec<u8>>, Vec<usize>) {
        let (mut chunks, mut lens) = (Vec::new(), Vec::new());
        let mut buf = std::vec![0u8; buf_len];
        let mut enc = ChunkEncoder::new(&mut buf, ChunkHeader::default()).unwrap();
        let mut i = 0;
        while i < events.len() {
            let before = enc.len();
            let took = if batch == 1 {
                usize::from(enc.push(&events[i]).is_ok())
            } else {
                enc.push_all(&events[i..events.len().min(i + batch)])
            };
            if took == 1 {
                lens.push(enc.len() - before);
            } else if took > 1 {
                // Lengths of a batch: not seen one by one; compared as bytes.
                lens.extend(core::iter::repeat_n(0, took));
            }
            i += took;
            if took < batch.min(events.len() - (i - took)) {
                let (len, b) = enc.finish_into_buffer();
                chunks.push(b[..len].to_vec());
                enc = ChunkEncoder::new(b, ChunkHeader::default()).unwrap();
            }
        }
        let len = enc.finish();
        chunks.push(buf[..len].to_vec());
        (chunks, lens)
    }

    /// Events mostly of the short path's shape (small steps, hits, small
    /// arguments) and every other: big and backward steps, flags, raw and
    /// 2^32-crossing arguments, more keys than the table holds.
    fn any_events() -> impl Strategy<Value = Vec<Event>> {
        let arg = prop_oneof![
            4 => 0u64..128,
            2 => 0u64..1 << 21,
            1 => (1u64 << 28)..(1 << 33),
            1 => any::<u64>(),
        ];
        let step = prop_oneof![
            6 => 0i64..20_000,
            1 => (1i64 << 31)..(1 << 33),
            1 => -5_000i64..0,
        ];
        let ev = (
            step,
            prop_oneof![6 => 2u16..8, 1 => any::<u16>()],
            prop_oneof![6 => Just(0u32), 1 => any::<u32>()],
            prop_oneof![8 => Just(0u16), 1 => any::<u16>()],
            arg.clone(),
            arg,
        );
        prop::collection::vec(ev, 1..300).prop_map(|v| {
            let mut t = 1u64 << 40;
            v.into_iter()
                .map(|(step, id, source, flags, a0, a1)| {
                    t = t.wrapping_add_signed(step);
                    let mut e = Event::new(t, EventId(id), source, [a0, a1]);
                    e.flags = flags;
                    e
                })
                .collect()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 256 }))]

        /// The short path and the general one write the reference's bytes,
        /// chunk for chunk (small buffers: every chunk end is met), by
        /// `push` and by `push_all`.
        #[test]
        fn writes_the_reference_bytes(events in any_events(), room in 0usize..400, batch in 1usize..12) {
            let buf_len = HEADER_LEN + MAX_RECORD_LEN + room;
            let (want, want_lens) = reference(&events, buf_len);
            let (got, got_lens) = encoded(&events, buf_len, 1);
            prop_assert_eq!(&got, &want);
            prop_assert_eq!(got_lens, want_lens);
            let (got, _) = encoded(&events, buf_len, batch);
            prop_assert_eq!(got, want);
        }

        /// The same over a pool of 48 keys, more than the table holds, in
        /// which many share an index bucket (checked below): keys evicted,
        /// buckets handed from one key to another, keys found by the scan
        /// behind another key's bucket, and literals of keys whose bucket
        /// names a slot.
        #[test]
        fn writes_the_reference_bytes_as_keys_churn_through_shared_buckets(
            picks in prop::collection::vec((0usize..48, 0u64..4_000, 0u64..64), 1..600),
            batch in 1usize..40,
        ) {
            let pool = churn_pool();
            let mut t = 1u64 << 20;
            let events: Vec<Event> = picks
                .into_iter()
                .map(|(k, step, a)| {
                    t += step;
                    let (id, source) = pool[k];
                    Event::new(t, EventId(id), source, [a, 0])
                })
                .collect();
            let buf_len = HEADER_LEN + 4096;
            let (want, _) = reference(&events, buf_len);
            prop_assert_eq!(encoded(&events, buf_len, 1).0, &want[..]);
            prop_assert_eq!(encoded(&events, buf_len, batch).0, want);
        }
    }

    /// The interning key of `(id, source)`.
    fn pool_key((id, source): (u16, u32)) -> u64 {
        key(&Event::new(0, EventId(id), source, [0, 0]))
    }

    /// 48 keys, each sharing its index bucket with at least one other: 16
    /// buckets of three keys.
    fn churn_pool() -> Vec<(u16, u32)> {
        let mut by_bucket: std::collections::BTreeMap<usize, Vec<(u16, u32)>> = Default::default();
        for source in 0..4u32 {
            for id in 0..512u16 {
                by_bucket
                    .entry(bucket(pool_key((id, source))))
                    .or_default()
                    .push((id, source));
            }
        }
        by_bucket
            .into_values()
            .filter(|keys| keys.len() >= 3)
            .take(16)
            .flat_map(|keys| keys.into_iter().take(3))
            .collect()
    }

    #[test]
    fn the_churn_pool_shares_buckets() {
        let pool = churn_pool();
        assert_eq!(pool.len(), 48);
        let mut buckets: Vec<usize> = pool.iter().map(|&k| bucket(pool_key(k))).collect();
        buckets.sort_unstable();
        buckets.dedup();
        assert_eq!(buckets.len(), 16);
    }
}
