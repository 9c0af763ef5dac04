//! The online file's compact body (FORMAT.md 1.11, trace-file version 2):
//! the drainer drains the ring into records (`pending`, as for a version 1
//! file: combine runs are held back on their flags, hoops records go last),
//! and encodes them straight into compact chunks of at most 2,048 records
//! only when it writes them (never through the 32-byte form). The producers
//! and their slots never see the compact form.
//!
//! A chunk's records count as written once the whole chunk is: the torn-write
//! logic of the drainer cuts a file back to the last whole chunk, where a
//! version 1 file is cut back to the last whole record.

use crate::model::event::Event;
use crate::wire::CHUNK_RECORDS;
use qtrace_core::compact::{ChunkEncoder, ChunkHeader, HEADER_LEN, MAX_RECORD_LEN};

/// The largest chunk this module writes.
const CHUNK_BUF: usize = HEADER_LEN + MAX_RECORD_LEN * CHUNK_RECORDS;

/// One chunk of `out`.
#[derive(Clone, Copy, Debug)]
struct Encoded {
    /// Its end in `out`.
    end: usize,
    /// The records of `pending` up to its end.
    records: usize,
    /// Its header (sequence and first event), to continue from it when the
    /// file is cut back before it.
    header: ChunkHeader,
}

/// The chunks of `pending` being written, and the numbering of the file's
/// chunks.
#[derive(Debug)]
pub(super) struct CompactOut {
    /// Encoded chunks not yet (completely) written.
    pub(super) out: Vec<u8>,
    /// Records of `pending` already encoded into `out`.
    encoded: usize,
    /// The chunks of `out`, in order.
    chunks: Vec<Encoded>,
    /// The header of the next chunk the file gets.
    pub(super) next: ChunkHeader,
    /// Where a chunk is encoded before it is appended to `out` (room for
    /// its largest size, filled once: not zeroed for every chunk).
    scratch: Vec<u8>,
}

impl CompactOut {
    pub(super) fn new() -> Box<Self> {
        Box::new(CompactOut {
            out: Vec::with_capacity(CHUNK_BUF),
            encoded: 0,
            chunks: Vec::new(),
            next: ChunkHeader::default(),
            scratch: vec![0u8; CHUNK_BUF],
        })
    }

    /// Encodes the records of `pending` not encoded yet, as chunks appended
    /// to `out`.
    pub(super) fn encode(&mut self, pending: &[Event]) {
        let recs = pending.len();
        while self.encoded < recs {
            let n = (recs - self.encoded).min(CHUNK_RECORDS);
            let from = self.encoded;
            let header = self.next;
            let len = encode_chunk(&mut self.scratch, header, &pending[from..from + n]);
            self.out.extend_from_slice(&self.scratch[..len]);
            self.encoded += n;
            self.next = header.following(n as u16, 0);
            self.chunks.push(Encoded {
                end: self.out.len(),
                records: self.encoded,
                header,
            });
        }
    }

    /// The last whole chunk within the first `written` bytes of `out`: its
    /// end and the records up to it.
    fn whole(&self, written: usize) -> (usize, usize) {
        self.chunks
            .iter()
            .take_while(|c| c.end <= written)
            .last()
            .map_or((0, 0), |c| (c.end, c.records))
    }

    /// Records of `pending` in the chunks completely written.
    pub(super) fn records_written(&self, written: usize) -> usize {
        self.whole(written).1
    }

    /// Bytes written past the last whole chunk.
    pub(super) fn torn(&self, written: usize) -> usize {
        written - self.whole(written).0
    }

    /// The header of the chunk that follows the whole chunks within the
    /// first `written` bytes of `out` (the close run's, at shutdown: it
    /// takes the place of the first chunk not completely written, which a
    /// file is cut back before).
    pub(super) fn next_at(&self, written: usize) -> ChunkHeader {
        self.chunks
            .iter()
            .find(|c| c.end > written)
            .map_or(self.next, |c| c.header)
    }

    /// Everything encoded was written.
    pub(super) fn clear(&mut self) {
        self.out.clear();
        self.chunks.clear();
        self.encoded = 0;
    }

    /// `events` as chunks numbered from `next` (updated), appended to `dst`:
    /// a new file's names prologue, a re-created file's hoops record, a
    /// close run.
    pub(super) fn encode_events(next: &mut ChunkHeader, events: &[Event], dst: &mut Vec<u8>) {
        if events.is_empty() {
            return;
        }
        let mut buf = vec![0u8; HEADER_LEN + MAX_RECORD_LEN * events.len().min(CHUNK_RECORDS)];
        for part in events.chunks(CHUNK_RECORDS) {
            let len = encode_chunk(&mut buf, *next, part);
            dst.extend_from_slice(&buf[..len]);
            *next = next.following(part.len() as u16, 0);
        }
    }
}

/// Encodes `events` (at most [`CHUNK_RECORDS`]) as one chunk into `buf`
/// (room for as many records of the largest size); returns its length.
fn encode_chunk(buf: &mut [u8], header: ChunkHeader, events: &[Event]) -> usize {
    let mut enc = ChunkEncoder::new(buf, header).expect("the buffer holds a chunk header");
    // The buffer has room for every record at the largest size.
    let n = enc.push_all(events);
    assert_eq!(n, events.len(), "room for every record");
    enc.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::event::EventId;

    fn records(n: u64) -> Vec<Event> {
        (0..n)
            .map(|i| Event::new(100 + i, EventId(9), 1, [i, 0]))
            .collect()
    }

    #[test]
    fn chunks_of_2048_numbered_on_and_the_next_after_the_last_whole_one() {
        let mut c = CompactOut::new();
        let pending = records(5000);
        c.encode(&pending[..3000]);
        c.encode(&pending);
        // 2048 + 952, then 2000 more.
        let counts: Vec<usize> = c.chunks.iter().map(|e| e.records).collect();
        assert_eq!(counts, [2048, 3000, 5000]);
        let firsts: Vec<(u64, u64)> = c
            .chunks
            .iter()
            .map(|e| (e.header.sequence, e.header.first_event))
            .collect();
        assert_eq!(firsts, [(0, 0), (1, 2048), (2, 3000)]);
        assert_eq!((c.next.sequence, c.next.first_event), (3, 5000));
        let first_end = c.chunks[0].end;
        assert_eq!(c.records_written(first_end - 1), 0);
        assert_eq!(c.torn(first_end - 1), first_end - 1);
        assert_eq!(c.records_written(first_end + 7), 2048);
        assert_eq!(c.torn(first_end + 7), 7);
        assert_eq!(c.records_written(c.out.len()), 5000);
        assert_eq!(c.torn(c.out.len()), 0);
        let at = |w| {
            let h = c.next_at(w);
            (h.sequence, h.first_event)
        };
        assert_eq!(at(first_end - 1), (0, 0));
        assert_eq!(at(first_end + 7), (1, 2048));
        assert_eq!(at(c.out.len()), (3, 5000));
        c.clear();
        assert!(c.out.is_empty() && c.chunks.is_empty());
    }
}
