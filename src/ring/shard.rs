//! The single-producer ring of a circular queue's shard: one thread writes
//! it with plain loads and stores (no atomic read-modify-write), readers
//! copy from it concurrently and never see a torn record.
//!
//! Records are 32 bytes (four `AtomicU64` words), two to a cache line, as
//! in a plain array: half the memory traffic of the multi-producer ring's
//! one-line slots. There is no sequence word per slot; the ring-wide
//! indices do the seqlock's work:
//!
//! - the producer stores `claimed = t + 1` *before* writing ticket `t`'s
//!   words (a release fence between), and `committed = t + 1` (release)
//!   after;
//! - a reader loads `committed` (acquire), copies the records it wants,
//!   then (acquire fence) loads `claimed`: a copy of ticket `k` is valid
//!   only if `k + capacity >= claimed`, i.e. the producer had not yet
//!   started overwriting that slot when the copy ended (had the reader seen
//!   any word of the overwrite, the fences make it see that `claimed`).
//!
//! Delivered records are tracked by a watermark (`consumed`): a consume
//! takes every valid record below `committed` and moves the watermark there.

use super::{Padded, Ticketed};
use crate::classes::tracer::HOOPS;
use crate::model::event::Event;
use crate::ring::backing::Region;
use crate::sync::{fence, AtomicU64, Ordering};
use crate::wire::record::{emit, RECORD_LEN};

/// Copies a reader takes again when its producer overwrote every record it
/// copied meanwhile (a flat-out producer laps a small shard during the copy),
/// before it gives up and counts the shard's events as lost.
const LAPPED_RETRIES: usize = 3;

/// What [`ShardRing::read_encoded`] copied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct EncodedRead {
    /// The first valid record's index in the copy (those before it may have
    /// been overwritten while they were copied).
    pub(crate) start: usize,
    /// Its ticket (the next ones follow one by one).
    pub(crate) first: u64,
    /// Whether the valid records' times never go back.
    pub(crate) in_order: bool,
    /// Whether a valid record is a hoops record (its loss counts in a file's
    /// close run).
    pub(crate) hoops: bool,
    /// Whether records were copied but the producer overwrote them all
    /// meanwhile (then the tickets below `first` are lost to the reader; an
    /// empty copy of a ring with nothing left to read is not lapped).
    pub(crate) lapped: bool,
}

/// One record's four words, never straddling a cache line.
#[derive(Debug)]
#[repr(align(32))]
pub(crate) struct Record([AtomicU64; 4]);

impl Record {
    pub(crate) fn new() -> Self {
        Record([
            AtomicU64::new(0),
            AtomicU64::new(0),
            AtomicU64::new(0),
            AtomicU64::new(0),
        ])
    }
}

/// The producer's indices, together in one line (only the producer writes
/// them).
#[derive(Debug)]
#[repr(C)]
struct Indices {
    /// Tickets the producer has started writing (every attempt).
    claimed: AtomicU64,
    /// Tickets fully written.
    committed: AtomicU64,
}

/// A single-producer overwrite ring (see the module docs). `repr(C)`: a
/// circular queue places it in its region (a ring file, FORMAT.md section
/// 6), the indices first.
#[derive(Debug)]
#[repr(C)]
pub(crate) struct ShardRing {
    idx: Padded<Indices>,
    /// Tickets below this were consumed (saved) or given up.
    consumed: AtomicU64,
    mask: u64,
    /// Placed in the queue's region, which the queue keeps alive.
    records: Region<Record>,
}

#[cfg(not(loom))]
const _: () = {
    assert!(std::mem::size_of::<Record>() == super::layout::RECORD_BYTES);
    assert!(std::mem::offset_of!(ShardRing, idx) == 0);
    assert!(std::mem::offset_of!(Indices, committed) == 8);
};

impl ShardRing {
    /// A ring over `records` (placed, zeroed; a power of two of them).
    pub(crate) fn with_records(records: Region<Record>) -> Self {
        debug_assert!(records.len().is_power_of_two());
        ShardRing {
            idx: Padded(Indices {
                claimed: AtomicU64::new(0),
                committed: AtomicU64::new(0),
            }),
            consumed: AtomicU64::new(0),
            mask: records.len() as u64 - 1,
            records,
        }
    }

    /// A ring of `n` records on the heap, and the region holding them
    /// (which must outlive the ring).
    #[cfg(test)]
    pub(crate) fn on_heap(n: usize) -> (ShardRing, crate::ring::backing::Backing) {
        let mut b = crate::ring::backing::Backing::heap(n * 64).expect("test memory");
        let records = b.place_slice(0, n, |_| Record::new());
        (ShardRing::with_records(records), b)
    }

    /// Touches every page of the records (phase 2; see
    /// [`Region::fault_in`]).
    pub(crate) fn fault_in(&self) {
        self.records.fault_in(|r| {
            r.0[0].fetch_add(0, Ordering::Relaxed);
        });
    }

    #[inline(always)]
    pub(crate) fn record(&self, ticket: u64) -> &Record {
        let index = (ticket & self.mask) as usize;
        debug_assert!(index < self.records.len());
        // SAFETY: `records.len() == mask + 1` (both set in `new`, never
        // changed), so `ticket & mask < records.len()`: no bounds check on
        // the hot path.
        unsafe { self.records.get_unchecked(index) }
    }

    /// Takes the next ticket, **only from the ring's single producer**.
    /// Returns the record to write and its ticket for
    /// [`ShardRing::commit`].
    #[inline(always)]
    pub(crate) fn claim(&self) -> (&Record, u64) {
        let ticket = self.idx.claimed.load(Ordering::Relaxed);
        self.idx.claimed.store(ticket + 1, Ordering::Relaxed);
        // Seqlock writer: the claim is visible before any word of the
        // overwrite (see the module docs).
        fence(Ordering::Release);
        (self.record(ticket), ticket)
    }

    /// Writes `event` into `record` (from [`ShardRing::claim`]) and
    /// publishes it.
    #[inline(always)]
    pub(crate) fn commit(&self, record: &Record, ticket: u64, event: &Event) {
        self.commit_words(record, ticket, event.to_words());
    }

    /// [`ShardRing::commit`] of an event already in its four words
    /// ([`Event::to_words`]).
    #[inline(always)]
    pub(crate) fn commit_words(&self, record: &Record, ticket: u64, w: [u64; 4]) {
        record.0[0].store(w[0], Ordering::Relaxed);
        record.0[1].store(w[1], Ordering::Relaxed);
        record.0[2].store(w[2], Ordering::Relaxed);
        record.0[3].store(w[3], Ordering::Relaxed);
        self.idx.committed.store(ticket + 1, Ordering::Release);
    }

    /// Claims the next ticket, then writes `make()` there and publishes it,
    /// **only from the ring's single producer**. `make` runs after the claim,
    /// so an event's clock is read as late as possible.
    #[inline(always)]
    pub(crate) fn push_with(&self, make: impl FnOnce() -> Event) {
        self.push_words(|| make().to_words());
    }

    /// [`ShardRing::push_with`] of an event made in its four words
    /// ([`Event::to_words`]).
    #[inline(always)]
    pub(crate) fn push_words(&self, make: impl FnOnce() -> [u64; 4]) {
        let (record, ticket) = self.claim();
        self.commit_words(record, ticket, make());
    }

    /// Every attempt so far.
    pub(crate) fn attempts(&self) -> u64 {
        self.idx.claimed.load(Ordering::Relaxed)
    }

    /// Records held and not consumed (including one being written).
    pub(crate) fn queued(&self) -> u64 {
        let consumed = self.consumed.load(Ordering::Relaxed);
        let claimed = self.attempts();
        claimed
            .saturating_sub(consumed)
            .min(self.records.len() as u64)
    }

    /// The valid records from `from` up to `committed`, oldest first, and
    /// the `committed` they were read at.
    fn copy(&self, from: u64) -> (Vec<Ticketed>, u64) {
        let mut out = Vec::new();
        let committed = self.copy_into(from, &mut out);
        (out, committed)
    }

    /// The record at `ticket`, read word by word (a reader's copy: a torn
    /// one is caught by the seqlock check after the copies).
    #[inline]
    fn load(&self, ticket: u64) -> Event {
        let r = self.record(ticket);
        Event::from_words([
            r.0[0].load(Ordering::Relaxed),
            r.0[1].load(Ordering::Relaxed),
            r.0[2].load(Ordering::Relaxed),
            r.0[3].load(Ordering::Relaxed),
        ])
    }

    /// [`ShardRing::copy`] into `out` (emptied first; its room reused).
    fn copy_into(&self, from: u64, out: &mut Vec<Ticketed>) -> u64 {
        out.clear();
        let committed = self.idx.committed.load(Ordering::Acquire);
        let cap = self.records.len() as u64;
        let lo = committed.saturating_sub(cap).max(from);
        out.extend((lo..committed.max(lo)).map(|ticket| {
            let event = self.load(ticket);
            Ticketed { ticket, event }
        }));
        // Seqlock reader: the copies above happen before this load.
        fence(Ordering::Acquire);
        let claimed = self.idx.claimed.load(Ordering::Relaxed);
        // Tickets below `claimed - cap` may have been overwritten meanwhile.
        let oldest_valid = claimed.saturating_sub(cap);
        // The tickets rise from `lo`: the overwritten ones are a prefix
        // (none when the producer did not wrap meanwhile, so no pass).
        let stale = oldest_valid.saturating_sub(lo).min(out.len() as u64) as usize;
        if stale > 0 {
            out.drain(..stale);
        }
        committed
    }

    /// [`ShardRing::read_into`] in the trace file's encoding (32 big-endian
    /// bytes a record, FORMAT.md 1.3) into `out` (emptied first; its room
    /// reused): the records valid are `out[read.start..]`, on consecutive
    /// tickets from `read.first`. One pass over the ring, which also tells
    /// whether their times go back and whether one is a hoops record (a
    /// snapshot then takes the general merge). The stale prefix is left in
    /// `out` rather than moved out (a memmove of up to the whole copy).
    pub(crate) fn read_encoded(&self, out: &mut Vec<[u8; RECORD_LEN]>) -> EncodedRead {
        let mut read = self.read_encoded_once(out);
        for _ in 0..LAPPED_RETRIES {
            if !read.lapped {
                break;
            }
            read = self.read_encoded_once(out);
        }
        read
    }

    /// One attempt of [`ShardRing::read_encoded`].
    fn read_encoded_once(&self, out: &mut Vec<[u8; RECORD_LEN]>) -> EncodedRead {
        out.clear();
        let from = self.consumed.load(Ordering::Acquire);
        let committed = self.idx.committed.load(Ordering::Acquire);
        let cap = self.records.len() as u64;
        let lo = committed.saturating_sub(cap).max(from);
        // The last index whose time is below its predecessor's, and the
        // last index holding a hoops record (`usize::MAX`: none).
        let (mut prev, mut back, mut hoops) = (0u64, usize::MAX, usize::MAX);
        let mut i = 0usize;
        out.extend((lo..committed.max(lo)).map(|ticket| {
            let event = self.load(ticket);
            if event.time < prev {
                back = i;
            }
            if event.id == HOOPS {
                hoops = i;
            }
            prev = event.time;
            i += 1;
            let mut bytes = [0u8; RECORD_LEN];
            emit(&event, &mut bytes);
            bytes
        }));
        // Seqlock reader, as in `copy_into`: the copies happen before this
        // load; tickets below `claimed - cap` may have been overwritten.
        fence(Ordering::Acquire);
        let claimed = self.idx.claimed.load(Ordering::Relaxed);
        let oldest_valid = claimed.saturating_sub(cap);
        let start = oldest_valid.saturating_sub(lo).min(out.len() as u64) as usize;
        EncodedRead {
            start,
            first: lo + start as u64,
            // A time going back at `start` compares with a stale record.
            in_order: back == usize::MAX || back <= start,
            hoops: hoops != usize::MAX && hoops >= start,
            lapped: !out.is_empty() && start == out.len(),
        }
    }

    /// The records not yet consumed, oldest first, while the producer keeps
    /// writing (one being written is left out).
    #[cfg_attr(not(test), allow(dead_code))] // the rings' tests use it
    pub(crate) fn read(&self) -> Vec<Ticketed> {
        let mut out = Vec::new();
        self.read_into(&mut out);
        out
    }

    /// [`ShardRing::read`] into `out` (emptied first; its room reused).
    /// Returns, when the producer overwrote every record copied meanwhile
    /// (after [`LAPPED_RETRIES`] more tries), the ticket after the newest of
    /// them: the tickets below it are the ring's events not in the copy (a
    /// reader must count them as lost); else `None`.
    pub(crate) fn read_into(&self, out: &mut Vec<Ticketed>) -> Option<u64> {
        let mut lapped = None;
        for _ in 0..=LAPPED_RETRIES {
            let from = self.consumed.load(Ordering::Acquire);
            let committed = self.copy_into(from, out);
            // Valid records copied, or nothing there to copy.
            if !out.is_empty() || committed <= from {
                return None;
            }
            lapped = Some(committed);
        }
        lapped
    }

    /// Like [`ShardRing::read`], and marks everything read (and everything
    /// older) consumed. Returns the records and the watermark move (before,
    /// after), for [`ShardRing::restore`].
    pub(crate) fn consume(&self) -> (Vec<Ticketed>, (u64, u64)) {
        loop {
            let from = self.consumed.load(Ordering::Acquire);
            let (records, upto) = self.copy(from);
            if upto <= from {
                return (Vec::new(), (from, from));
            }
            if self
                .consumed
                .compare_exchange(from, upto, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                return (records, (from, upto));
            }
        }
    }

    /// Undoes a [`ShardRing::consume`] that moved the watermark `moved`
    /// (when saving its records failed): records still in the ring become
    /// readable again. Does nothing if another consume came between.
    pub(crate) fn restore(&self, moved: (u64, u64)) {
        let (before, after) = moved;
        let _ = self
            .consumed
            .compare_exchange(after, before, Ordering::AcqRel, Ordering::Relaxed);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::EventId;

    fn ev(i: u64) -> Event {
        Event::new(i, EventId(0x0b), 7, [i, !i])
    }

    fn ring(n: usize) -> (ShardRing, crate::ring::backing::Backing) {
        ShardRing::on_heap(n)
    }

    fn push(ring: &ShardRing, e: &Event) {
        let (r, t) = ring.claim();
        ring.commit(r, t, e);
    }

    #[test]
    fn keeps_the_last_capacity_and_consumes_by_watermark() {
        let (ring, _mem) = ring(4);
        for i in 0..6 {
            push(&ring, &ev(i));
        }
        let got: Vec<u64> = ring.read().iter().map(|r| r.ticket).collect();
        assert_eq!(got, [2, 3, 4, 5]);
        assert!(ring.read().iter().all(|r| r.event == ev(r.ticket)));
        assert_eq!((ring.attempts(), ring.queued()), (6, 4));
        let (taken, before) = ring.consume();
        assert_eq!((taken.len(), before), (4, (0, 6)));
        assert_eq!(ring.queued(), 0);
        assert!(ring.consume().0.is_empty());
        ring.restore(before);
        assert_eq!(ring.read(), taken);
        let (_, moved) = ring.consume();
        push(&ring, &ev(6));
        assert_eq!(ring.queued(), 1);
        assert_eq!(ring.read()[0].ticket, 6);
        // A restore after a newer consume does nothing.
        let (newer, _) = ring.consume();
        assert_eq!(newer.len(), 1);
        ring.restore(moved);
        assert!(ring.read().is_empty());
    }

    /// The encoded copy holds what `read` gives, encoded, after a stale
    /// prefix; a time going back or a hoops record counts only where valid.
    #[test]
    fn an_encoded_read_is_the_read_encoded() {
        let encoded = |ring: &ShardRing| {
            let mut out = Vec::new();
            let read = ring.read_encoded(&mut out);
            let want: Vec<[u8; RECORD_LEN]> = ring
                .read()
                .iter()
                .map(|r| {
                    let mut b = [0u8; RECORD_LEN];
                    emit(&r.event, &mut b);
                    b
                })
                .collect();
            assert_eq!(out[read.start..], want[..]);
            assert_eq!(Some(read.first), ring.read().first().map(|r| r.ticket));
            read
        };
        let (ring, _mem) = ring(4);
        for i in 0..6 {
            push(&ring, &ev(i));
        }
        let read = encoded(&ring);
        assert_eq!((read.start, read.first), (0, 2));
        assert!(read.in_order && !read.hoops);
        // Two claims past the committed ones: tickets 2 and 3 may be being
        // overwritten (copied, but not valid).
        let (r6, t6) = ring.claim();
        let (r7, t7) = ring.claim();
        let read = encoded(&ring);
        assert_eq!((read.start, read.first), (2, 4));
        ring.commit(r6, t6, &Event::new(1, HOOPS, 0, [1, 0])); // time back
        ring.commit(r7, t7, &ev(7));
        // Slots of 6 and 7 now valid: the time going back and the hoops
        // record count.
        let read = encoded(&ring);
        assert_eq!((read.start, read.first), (0, 4));
        assert!(!read.in_order && read.hoops);
        // Both in the stale prefix: not counted.
        let (r, t) = ring.claim();
        ring.commit(r, t, &ev(8));
        let _ = ring.claim();
        let _ = ring.claim();
        let read = encoded(&ring);
        assert_eq!((read.start, read.first), (2, 7));
        assert!(read.in_order && !read.hoops);
    }

    #[test]
    fn a_record_being_written_is_left_out_and_its_slot_too() {
        let (ring, _mem) = ring(2);
        push(&ring, &ev(0));
        push(&ring, &ev(1));
        let (r, t) = ring.claim(); // ticket 2 overwrites slot 0
        assert_eq!(
            ring.read().iter().map(|r| r.ticket).collect::<Vec<_>>(),
            [1]
        );
        ring.commit(r, t, &ev(2));
        assert_eq!(
            ring.read().iter().map(|r| r.ticket).collect::<Vec<_>>(),
            [1, 2]
        );
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    //! `RUSTFLAGS="--cfg loom" cargo test --release --lib loom`.
    use super::*;
    use crate::EventId;
    use loom::sync::Arc;
    use loom::thread;

    fn ev(seq: u64) -> Event {
        Event::new(seq, EventId(0x0b), 1, [seq, seq ^ 0x5555])
    }

    fn check(r: &Ticketed) {
        assert_eq!(r.event.time, r.ticket);
        assert_eq!(r.event.args, [r.ticket, r.ticket ^ 0x5555]);
    }

    /// One shard: its producer writes with plain stores while a reader
    /// snapshots and consumes; no torn record, nothing returned twice.
    #[test]
    fn loom_shard_producer_with_snapshot_and_consume() {
        loom::model(|| {
            let (ring, _mem) = ShardRing::on_heap(2);
            let ring = Arc::new(ring);
            let producer = {
                let ring = Arc::clone(&ring);
                thread::spawn(move || {
                    for s in 0..3 {
                        let (r, t) = ring.claim();
                        assert_eq!(t, s);
                        ring.commit(r, t, &ev(s));
                    }
                })
            };
            for r in ring.read() {
                check(&r);
            }
            let (early, _) = ring.consume();
            for r in &early {
                check(r);
            }
            producer.join().unwrap();
            let (late, _) = ring.consume();
            for r in &late {
                check(r);
            }
            let mut all: Vec<u64> = early.iter().chain(&late).map(|r| r.ticket).collect();
            let n = all.len();
            all.sort_unstable();
            all.dedup();
            assert_eq!(all.len(), n);
            assert!(all.contains(&2));
            assert_eq!(ring.attempts(), 3);
            assert_eq!(ring.queued(), 0);
        });
    }
}
