//! [`DropRing`]: a bounded multi-producer queue that drops (and counts)
//! while full, drained by a consumer (the online and UDP queues' storage).

use super::{check_capacity_from, slots, Padded, RingCounters, RingError, Slot};
use crate::model::event::Event;
use crate::sync::{AtomicU64, Ordering};

/// A bounded multi-producer queue that drops (and counts) while full, drained
/// by a consumer: the storage of the online and UDP queues.
///
/// Algorithm: D. Vyukov's bounded queue. Slot `i`'s sequence word starts at
/// `i`; a producer at position `p` may claim when it reads `p` (compare-and-swap
/// of the tail from `p` to `p + 1`), publishes with `p + 1`; the consumer at
/// `p` takes a record when it reads `p + 1` and frees the slot for the next lap
/// with `p + capacity`. A producer that finds its slot not yet freed drops.
///
/// Consumer API ([`DropRing::pop`], [`DropRing::pop_batch`],
/// [`DropRing::drain`]): events come out in claim order; a record whose
/// producer has claimed but not yet committed stops the drain there (it is
/// returned by a later call). Several consumers are safe (the head advances
/// by compare-and-swap) but one is the intended use.
///
/// For the drainer: [`DropRing::dropped`] is the running total of drops, so
/// a drainer that remembers the last value it saw writes a hoops record with
/// the difference at the point of loss; [`DropRing::len`] is the fill level
/// for a high-water wake-up.
#[derive(Debug)]
pub struct DropRing {
    /// Next position to claim (= accepted).
    tail: Padded<AtomicU64>,
    /// Next position to pop (= popped).
    head: Padded<AtomicU64>,
    /// Claims refused: the count, plus [`LATCHED`] in the top bit while a
    /// latching ring refuses everything until it has been emptied.
    dropped: Padded<AtomicU64>,
    /// Whether a full ring latches (see [`DropRing::new_latching`]).
    latching: bool,
    mask: u64,
    slots: Box<[Slot]>,
}

/// Top bit of [`DropRing`]'s drop word: the ring is latched shut.
const LATCHED: u64 = 1 << 63;

impl DropRing {
    /// A ring of `capacity` slots: a power of two, at least 2 (with one slot
    /// a published record and a freed slot would look the same).
    pub fn new(capacity: usize) -> Result<Self, RingError> {
        check_capacity_from(capacity, 2)?;
        Ok(DropRing {
            tail: Padded(AtomicU64::new(0)),
            head: Padded(AtomicU64::new(0)),
            dropped: Padded(AtomicU64::new(0)),
            latching: false,
            mask: capacity as u64 - 1,
            slots: slots(capacity, |i| i as u64)?,
        })
    }

    /// A ring with S.Ha.R.K.'s online policy: once it is full it refuses
    /// (and counts) every event until the consumer has emptied it and called
    /// [`DropRing::reopen`]. Every drop then lies between the last event
    /// popped before `reopen` and the first event accepted after it, so the
    /// consumer can mark the loss at its exact place. (With several producers,
    /// one that passed the latch check just before the ring latched may still
    /// commit one event inside the latched period: a loss is then marked at
    /// most one event per producer late, never early.)
    ///
    /// (An example: the test `latching_drop_ring_refuses_until_reopened` in `tests.rs`.)
    pub fn new_latching(capacity: usize) -> Result<Self, RingError> {
        let mut ring = DropRing::new(capacity)?;
        ring.latching = true;
        Ok(ring)
    }

    /// For the consumer of a latching ring, once it has popped everything
    /// ([`DropRing::is_empty`]): opens the ring again and returns the running
    /// drop total at that instant — every drop it counts happened before any
    /// event accepted after this call. `None` when the ring was not latched.
    pub fn reopen(&self) -> Option<u64> {
        if self.dropped.load(Ordering::Relaxed) & LATCHED == 0 {
            return None;
        }
        let before = self.dropped.fetch_and(!LATCHED, Ordering::AcqRel);
        (before & LATCHED != 0).then_some(before & !LATCHED)
    }

    /// Latches a latching ring shut without counting a drop: every claim is
    /// then refused (and counted) until [`DropRing::reopen`]. For a queue
    /// that cannot deliver (its activation failed). Does nothing to a ring
    /// that does not latch.
    #[cold]
    pub fn latch(&self) {
        if self.latching {
            self.dropped.fetch_or(LATCHED, Ordering::AcqRel);
        }
    }

    /// Counts one refused claim, latching the ring if it latches.
    #[cold]
    #[inline(never)]
    fn refuse(&self) {
        if self.latching {
            // Set the latch and count in one step (a CAS loop: the drop path
            // is cold).
            let mut v = self.dropped.load(Ordering::Relaxed);
            while let Err(now) = self.dropped.compare_exchange_weak(
                v,
                (v | LATCHED) + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                v = now;
            }
        } else {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The number of slots.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    #[inline(always)]
    fn slot(&self, pos: u64) -> &Slot {
        let i = (pos & self.mask) as usize;
        debug_assert!(i < self.slots.len());
        // SAFETY: `slots.len() == mask + 1` (both set in `new`, never
        // changed), so `pos & mask` is in bounds. Unchecked because the
        // check cost the producer 6 of its 77 instructions an event (claim
        // and commit each index a slot; `scripts/instructions.sh`, case
        // `online`).
        unsafe { self.slots.get_unchecked(i) }
    }

    /// Claims the next position, or returns `None` (and counts a drop) when
    /// the ring is full. Lock-free: the loop retries only when another producer
    /// claimed the position first.
    #[inline(always)]
    pub fn claim(&self) -> Option<u64> {
        if self.latching && self.dropped.load(Ordering::Relaxed) & LATCHED != 0 {
            self.refuse();
            return None;
        }
        let mut pos = self.tail.load(Ordering::Relaxed);
        loop {
            let seq = self.slot(pos).seq.load(Ordering::Acquire);
            let diff = seq.wrapping_sub(pos) as i64;
            if diff == 0 {
                match self.tail.compare_exchange_weak(
                    pos,
                    pos + 1,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => return Some(pos),
                    Err(now) => pos = now,
                }
            } else if diff < 0 {
                self.refuse();
                return None;
            } else {
                pos = self.tail.load(Ordering::Relaxed);
            }
        }
    }

    /// Writes `event` at `pos` (from [`DropRing::claim`]) and publishes it to
    /// the consumer.
    #[inline]
    pub fn commit(&self, pos: u64, event: &Event) {
        let slot = self.slot(pos);
        slot.write(event);
        slot.seq.store(pos.wrapping_add(1), Ordering::Release);
    }

    /// Claims and commits: returns whether the event was stored.
    #[cfg_attr(not(test), allow(dead_code))] // the rings' tests and loom models use it
    #[inline]
    pub fn push(&self, event: &Event) -> bool {
        match self.claim() {
            Some(p) => {
                self.commit(p, event);
                true
            }
            None => false,
        }
    }

    /// Takes the oldest record, if it is committed.
    #[cfg_attr(not(test), allow(dead_code))] // the rings' tests and loom models use it
    pub fn pop(&self) -> Option<Event> {
        let mut pos = self.head.load(Ordering::Relaxed);
        loop {
            let slot = self.slot(pos);
            let seq = slot.seq.load(Ordering::Acquire);
            let diff = seq.wrapping_sub(pos.wrapping_add(1)) as i64;
            if diff == 0 {
                match self.head.compare_exchange_weak(
                    pos,
                    pos + 1,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        let event = slot.read();
                        slot.seq
                            .store(pos.wrapping_add(self.mask + 1), Ordering::Release);
                        return Some(event);
                    }
                    Err(now) => pos = now,
                }
            } else if diff < 0 {
                return None; // empty, or the oldest record is still being written
            } else {
                pos = self.head.load(Ordering::Relaxed);
            }
        }
    }

    /// Pops up to `max` records, appending them to `out`; returns how many.
    #[cfg_attr(not(test), allow(dead_code))] // the rings' tests and loom models use it
    pub fn pop_batch(&self, out: &mut Vec<Event>, max: usize) -> usize {
        self.drain(max, |e| out.push(*e))
    }

    /// Pops up to `max` records, handing each to `f` in order; returns how
    /// many. Stops early when the ring is empty or the oldest record is still
    /// being written.
    ///
    /// The committed records at the head are taken with one
    /// compare-and-swap of the head for all of them, not one each (a locked
    /// instruction per record was a fifth of the UDP task's drain): a
    /// consumer that moved the head from `p` to `p + k` owns slots `p` to
    /// `p + k − 1`, which no one else can take or refill until it frees
    /// them, one by one as before.
    pub fn drain(&self, max: usize, mut f: impl FnMut(&Event)) -> usize {
        let mut n = 0;
        let mut pos = self.head.load(Ordering::Relaxed);
        while n < max {
            // The committed records from `pos`, at most `max - n` of them.
            let mut k = 0u64;
            while n + (k as usize) < max {
                let p = pos.wrapping_add(k);
                if self.slot(p).seq.load(Ordering::Acquire) != p.wrapping_add(1) {
                    break;
                }
                k += 1;
            }
            if k == 0 {
                // Empty, or the oldest record is still being written; or
                // another consumer took it: the head moved on.
                let now = self.head.load(Ordering::Relaxed);
                if now == pos {
                    break;
                }
                pos = now;
                continue;
            }
            if let Err(now) =
                self.head
                    .compare_exchange(pos, pos + k, Ordering::Relaxed, Ordering::Relaxed)
            {
                pos = now;
                continue;
            }
            for i in 0..k {
                let p = pos + i;
                let slot = self.slot(p);
                let event = slot.read();
                slot.seq
                    .store(p.wrapping_add(self.mask + 1), Ordering::Release);
                f(&event);
            }
            n += k as usize;
            pos += k;
        }
        n
    }

    /// Records claimed so far (every accepted event).
    #[inline]
    pub fn accepted(&self) -> u64 {
        self.tail.load(Ordering::Relaxed)
    }

    /// Claims refused so far because the ring was full or latched (a running
    /// total).
    #[inline]
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed) & !LATCHED
    }

    /// Records popped so far.
    #[inline]
    pub fn popped(&self) -> u64 {
        self.head.load(Ordering::Relaxed)
    }

    /// Records in the ring (claimed, not yet popped): the fill level.
    #[inline]
    pub fn len(&self) -> usize {
        let head = self.head.load(Ordering::Relaxed);
        let tail = self.tail.load(Ordering::Relaxed);
        tail.saturating_sub(head) as usize
    }

    /// Whether [`DropRing::len`] is 0.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The counters (`overwritten` is always 0; `delivered` counts pops).
    #[cfg_attr(not(test), allow(dead_code))] // the rings' tests and loom models use it
    pub fn counters(&self) -> RingCounters {
        let dropped = self.dropped();
        let delivered = self.popped();
        let accepted = self.accepted().max(delivered);
        RingCounters {
            accepted,
            dropped,
            overwritten: 0,
            delivered,
            queued: accepted - delivered,
        }
    }
}

// ----- combine runs (`crate::model::combine`): several records reserved together --

impl DropRing {
    /// Claims `n` consecutive positions at once and returns the first, or
    /// returns `None` and counts `n` drops when they are not all free (the
    /// ring is too full, latched, or `n` exceeds its capacity).
    pub(crate) fn claim_run(&self, n: usize) -> Option<u64> {
        let n = n as u64;
        if n == 0 {
            return Some(self.tail.load(Ordering::Relaxed));
        }
        if n <= self.mask + 1
            && !(self.latching && self.dropped.load(Ordering::Relaxed) & LATCHED != 0)
        {
            let mut pos = self.tail.load(Ordering::Relaxed);
            loop {
                // Every slot of the run must be free for this lap (the
                // first that is not decides, as in `claim`).
                let diff = (pos..pos + n)
                    .map(|p| self.slot(p).seq.load(Ordering::Acquire).wrapping_sub(p) as i64)
                    .find(|d| *d != 0)
                    .unwrap_or(0);
                if diff == 0 {
                    match self.tail.compare_exchange_weak(
                        pos,
                        pos + n,
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    ) {
                        Ok(_) => return Some(pos),
                        Err(now) => pos = now,
                    }
                } else if diff < 0 {
                    break;
                } else {
                    pos = self.tail.load(Ordering::Relaxed);
                }
            }
        }
        for _ in 0..n {
            self.refuse();
        }
        None
    }
}
