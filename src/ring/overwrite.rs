//! [`OverwriteRing`]: keeps the last `capacity` events, overwriting the
//! oldest (the circular queue's storage).

use super::{check_capacity, Padded, RingCounters, RingError, Slot};
use crate::model::event::Event;
use crate::ring::backing::{Backing, Region};
use crate::sync::{fence, AtomicU64, Ordering};

// Sequence word of an OverwriteRing slot: 0 = never written; otherwise
// `(ticket + 1) << 2 | state`.
const STATE_MASK: u64 = 0b11;
const COMMITTED: u64 = 0;
const BUSY: u64 = 1;
const CONSUMED: u64 = 2;

#[inline(always)]
const fn seq_of(ticket: u64, state: u64) -> u64 {
    ((ticket + 1) << 2) | state
}

/// `ticket + 1` of a sequence word (0 for a never-written slot).
#[inline(always)]
const fn ticket_plus_one(seq: u64) -> u64 {
    seq >> 2
}

/// One record read from an [`OverwriteRing`], with the ticket it was written
/// under (tickets count every attempt from 0, so gaps between the tickets of
/// consecutive records are events lost there).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticketed {
    /// The attempt number the record was written under.
    pub ticket: u64,
    /// The record.
    pub event: Event,
}

/// A multi-producer ring that keeps the last `capacity` events, overwriting
/// the oldest (the circular queue's storage).
///
/// Hot path: [`OverwriteRing::claim`] (one `fetch_add` for the ticket, one
/// compare-and-swap on the slot's sequence word) then
/// [`OverwriteRing::commit`] (four relaxed stores and one release store).
/// Readers: [`OverwriteRing::read`] copies the valid records without
/// disturbing producers; [`OverwriteRing::consume`] copies and marks them
/// delivered.
///
/// (An example: the test `overwrite_ring_keeps_the_last_and_counts` in `tests.rs`.)
///
/// Its layout is fixed (`repr(C)`: the ticket counter at byte 0, the drop
/// counter at byte 128), because a circular queue may place it in a ring
/// file (FORMAT.md section 6) together with its slots.
#[derive(Debug)]
#[repr(C)]
pub struct OverwriteRing {
    /// Tickets handed out: every attempt.
    pub(super) tail: Padded<AtomicU64>,
    /// Attempts refused (slot busy or already lapped).
    dropped: Padded<AtomicU64>,
    /// Records marked delivered by `consume`.
    delivered: AtomicU64,
    mask: u64,
    slots: Region<Slot>,
    /// The memory of `slots` when the ring owns it ([`OverwriteRing::new`]);
    /// `None` when it was placed in a queue's region, which owns it.
    own: Option<Backing>,
}

impl Drop for OverwriteRing {
    fn drop(&mut self) {
        if self.own.is_some() {
            // SAFETY: the slots live in `own`, which is dropped right after
            // this; they are not used again.
            unsafe { self.slots.drop_in_place() };
        }
    }
}

#[cfg(not(loom))]
const _: () = {
    assert!(std::mem::offset_of!(OverwriteRing, tail) == super::layout::TAIL_AT);
    assert!(std::mem::offset_of!(OverwriteRing, dropped) == super::layout::DROPPED_AT);
    assert!(std::mem::size_of::<OverwriteRing>() <= super::layout::CTL_BYTES);
    assert!(std::mem::size_of::<Slot>() == super::layout::SLOT_BYTES);
    assert!(std::mem::offset_of!(Slot, seq) == 0);
    assert!(std::mem::offset_of!(Slot, words) == 8);
};

impl OverwriteRing {
    /// A ring of `capacity` slots (a power of two).
    #[cfg_attr(not(test), allow(dead_code))] // the rings' tests and loom models use it
    pub fn new(capacity: usize) -> Result<Self, RingError> {
        check_capacity(capacity)?;
        let bytes = capacity.saturating_mul(std::mem::size_of::<Slot>());
        let mut own = Backing::heap(bytes).ok_or(RingError::OutOfMemory { capacity, bytes })?;
        let slots = own.place_slice(0, capacity, |_| Slot::new(0));
        Ok(OverwriteRing::with_slots(slots, Some(own)))
    }

    /// A ring over `slots` (placed, all with sequence word 0), owning their
    /// memory if `own` is given.
    pub(crate) fn with_slots(slots: Region<Slot>, own: Option<Backing>) -> Self {
        debug_assert!(slots.len().is_power_of_two());
        OverwriteRing {
            tail: Padded(AtomicU64::new(0)),
            dropped: Padded(AtomicU64::new(0)),
            delivered: AtomicU64::new(0),
            mask: slots.len() as u64 - 1,
            slots,
            own,
        }
    }

    /// Touches every page of the slots (phase 2; see
    /// [`Region::fault_in`]).
    pub(crate) fn fault_in(&self) {
        self.slots.fault_in(|s| {
            s.seq.fetch_add(0, Ordering::Relaxed);
        });
    }

    #[inline(always)]
    fn slot(&self, ticket: u64) -> &Slot {
        let index = (ticket & self.mask) as usize;
        debug_assert!(index < self.slots.len());
        // SAFETY: `slots.len() == mask + 1` (both set in `new` and never
        // changed), so `ticket & mask < slots.len()`. Unchecked indexing
        // saves a load, a compare and a branch on each of claim and commit.
        unsafe { self.slots.get_unchecked(index) }
    }

    /// Takes a ticket and claims its slot. Returns `None` (and counts a drop)
    /// when the slot is still being written by a producer a lap behind, or a
    /// producer a lap ahead has already claimed it. Never waits: the only loop
    /// retries a compare-and-swap that failed because another producer changed
    /// the slot, and each retry ends in a claim or a drop.
    #[inline(always)]
    pub fn claim(&self) -> Option<u64> {
        let ticket = self.tail.fetch_add(1, Ordering::Relaxed);
        self.claim_ticket(ticket)
    }

    /// The second half of [`OverwriteRing::claim`], for a ticket already taken.
    #[inline(always)]
    pub(super) fn claim_ticket(&self, ticket: u64) -> Option<u64> {
        let slot = self.slot(ticket);
        let mut cur = slot.seq.load(Ordering::Relaxed);
        loop {
            if cur & BUSY != 0 || ticket_plus_one(cur) > ticket {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                return None;
            }
            // Acquire: the previous record's stores (released by its commit,
            // or by the reader that consumed it) happen before ours, so they
            // can never land after them.
            match slot.seq.compare_exchange_weak(
                cur,
                seq_of(ticket, BUSY),
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(now) => cur = now,
            }
        }
        // Orders the BUSY mark before the record's stores (seqlock writer):
        // a reader that sees any of the new words sees BUSY or later.
        fence(Ordering::Release);
        Some(ticket)
    }

    /// Writes `event` into the slot `ticket` (from [`OverwriteRing::claim`])
    /// and publishes it.
    #[inline(always)]
    pub fn commit(&self, ticket: u64, event: &Event) {
        let slot = self.slot(ticket);
        slot.write(event);
        slot.seq.store(seq_of(ticket, COMMITTED), Ordering::Release);
    }

    /// Claims and commits: returns whether the event was stored.
    #[cfg_attr(not(test), allow(dead_code))] // the rings' tests and loom models use it
    #[inline]
    pub fn push(&self, event: &Event) -> bool {
        match self.claim() {
            Some(t) => {
                self.commit(t, event);
                true
            }
            None => false,
        }
    }

    /// Tickets handed out so far (every attempt).
    #[inline]
    pub fn attempts(&self) -> u64 {
        self.tail.load(Ordering::Relaxed)
    }

    /// Attempts refused so far.
    #[inline]
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Reads slot `i`: the record if it is committed (and not yet consumed)
    /// and did not change while it was copied.
    fn read_slot(&self, slot: &Slot, consume: bool) -> Option<Ticketed> {
        let s1 = slot.seq.load(Ordering::Acquire);
        if s1 == 0 || s1 & STATE_MASK != COMMITTED {
            return None;
        }
        let event = slot.read();
        // Seqlock reader: the copies above happen before the re-check below.
        fence(Ordering::Acquire);
        let unchanged = if consume {
            slot.seq
                // Release: our copies happen before the next writer's stores.
                .compare_exchange(s1, s1 | CONSUMED, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        } else {
            slot.seq.load(Ordering::Relaxed) == s1
        };
        unchanged.then(|| Ticketed {
            ticket: ticket_plus_one(s1) - 1,
            event,
        })
    }

    fn collect(&self, consume: bool) -> Vec<Ticketed> {
        let mut out = Vec::new();
        self.collect_into(consume, &mut out);
        out
    }

    /// [`OverwriteRing::collect`] into `out` (emptied first; its room reused).
    fn collect_into(&self, consume: bool, out: &mut Vec<Ticketed>) {
        out.clear();
        out.extend(self.slots.iter().filter_map(|s| self.read_slot(s, consume)));
        out.sort_unstable_by_key(|r| r.ticket);
        if consume {
            self.delivered
                .fetch_add(out.len() as u64, Ordering::Relaxed);
        }
    }

    /// [`OverwriteRing::read`] into `out` (emptied first; its room reused).
    pub(crate) fn read_into(&self, out: &mut Vec<Ticketed>) {
        self.collect_into(false, out);
    }

    /// The records in the ring, oldest (lowest ticket) first, while producers
    /// keep writing. A record being written, or overwritten while it was
    /// copied, is left out (its ticket is missing from the result).
    #[cfg_attr(not(test), allow(dead_code))] // the rings' tests use it
    pub fn read(&self) -> Vec<Ticketed> {
        self.collect(false)
    }

    /// Like [`OverwriteRing::read`], and marks each record returned as
    /// delivered, so a later `consume` does not return it again and a later
    /// overwrite of it is not counted as a loss.
    pub fn consume(&self) -> Vec<Ticketed> {
        self.collect(true)
    }

    /// Undoes [`OverwriteRing::consume`] for `records` (when saving them
    /// failed): each one still in the ring becomes readable again and stops
    /// counting as delivered. Returns how many were restored.
    pub fn restore(&self, records: &[Ticketed]) -> u64 {
        let mut n = 0;
        for r in records {
            let consumed = seq_of(r.ticket, CONSUMED);
            let ok = self
                .slot(r.ticket)
                .seq
                .compare_exchange(
                    consumed,
                    seq_of(r.ticket, COMMITTED),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok();
            n += ok as u64;
        }
        self.delivered.fetch_sub(n, Ordering::Relaxed);
        n
    }

    /// Records held and not consumed (committed or being written), counted
    /// by scanning the slots: O(capacity).
    pub(crate) fn queued(&self) -> u64 {
        self.slots
            .iter()
            .filter(|s| {
                let seq = s.seq.load(Ordering::Relaxed);
                seq != 0 && seq & STATE_MASK != CONSUMED
            })
            .count() as u64
    }

    /// The counters. `overwritten` is derived (`accepted - delivered -
    /// queued`, with `queued` counted by scanning the slots: O(capacity)), so
    /// it is exact whenever no producer is between claim and commit.
    #[cfg_attr(not(test), allow(dead_code))] // the rings' tests and loom models use it
    pub fn counters(&self) -> RingCounters {
        let dropped = self.dropped();
        let attempts = self.attempts();
        let accepted = attempts.saturating_sub(dropped);
        let queued = self.queued();
        let delivered = self.delivered.load(Ordering::Relaxed);
        RingCounters {
            accepted,
            dropped,
            overwritten: accepted.saturating_sub(delivered + queued),
            delivered,
            queued,
        }
    }
}

// ----- combine runs (`crate::model::combine`): several records reserved together --

impl OverwriteRing {
    /// Records the `n` records `record(0..n)` as one run: one `fetch_add`
    /// takes `n` consecutive tickets, then each slot is claimed as by
    /// [`OverwriteRing::claim`]; a slot that cannot be claimed drops (and
    /// counts) that record only, which leaves a gap readers mark. Returns
    /// the records stored.
    pub(crate) fn push_run(&self, n: usize, record: impl Fn(usize) -> Event) -> usize {
        let first = self.tail.fetch_add(n as u64, Ordering::Relaxed);
        let mut stored = 0;
        for i in 0..n {
            if let Some(ticket) = self.claim_ticket(first + i as u64) {
                self.commit(ticket, &record(i));
                stored += 1;
            }
        }
        stored
    }
}
