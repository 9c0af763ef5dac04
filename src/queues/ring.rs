//! The lock-free rings every in-memory, online and UDP queue is built on.
//!
//! Each slot holds one [`Event`] as four `AtomicU64` words (see
//! [`Event::to_words`]) plus a sequence word, so every write and read is a
//! plain atomic operation: no `unsafe`, and the same code is model-checked by
//! loom (through the crate's `sync` module). Capacities are powers of two; a
//! slot index is `ticket & mask`, never a division. The producer index lives in its own
//! cache line, and so does every slot (64-byte aligned), so two producers never
//! write the same line.
//!
//! (The circular queue's per-thread shards use a single-producer ring of
//! their own, without per-slot sequence words: `queues/shard.rs`.)
//!
//! Two rings, one per loss policy:
//!
//! - [`OverwriteRing`] keeps the last `capacity` events (the circular queue).
//!   A producer takes a ticket with one `fetch_add`, then claims the slot with a
//!   compare-and-swap on its sequence word. If the slot is still being written
//!   by a producer that was preempted a whole lap ago (or a newer producer has
//!   already claimed it) the event is **dropped and counted**, so a record is
//!   never written by two producers at once. Readers (snapshot, save) validate
//!   the sequence word before and after copying the words (a seqlock) and skip
//!   a record that changed under them: no reader ever sees a torn record.
//! - [`DropRing`] is a bounded multi-producer queue drained by a consumer (the
//!   online and UDP queues): producers drop and count while it is full; the
//!   consumer pops events in the order their slots were claimed.
//!
//! Both split an insertion into a *claim* (`get`, before the timestamp is
//! read) and a *commit* (`post`), matching [`crate::queue_trait::Queue`].
//!
//! Counters are exact: for [`OverwriteRing`], `attempts = accepted + dropped`
//! always holds, and `accepted = delivered + overwritten + queued` holds
//! whenever no producer is between its claim and its commit (overwrites are
//! derived by scanning the slots, so the hot path pays no extra atomic add for
//! them). For [`DropRing`], `accepted = popped + len` likewise.
//!
//! ```
//! use qtrace::queues::ring::DropRing;
//! use qtrace::{Event, EventId};
//!
//! let ring = DropRing::new(4).unwrap();
//! for i in 0..6 {
//!     ring.push(&Event::new(i, EventId(0x0b), 0, [i, 0]));
//! }
//! assert_eq!(ring.accepted(), 4);
//! assert_eq!(ring.dropped(), 2); // the drainer writes a hoops record for these
//! let mut out = Vec::new();
//! assert_eq!(ring.pop_batch(&mut out, 16), 4);
//! assert_eq!(out.iter().map(|e| e.time).collect::<Vec<_>>(), [0, 1, 2, 3]);
//! assert_eq!(ring.popped(), 4);
//! assert!(ring.is_empty());
//! ```

use super::backing::{Backing, Region};
use crate::event::Event;
use crate::sync::{fence, AtomicU64, Ordering};

/// A value alone in its cache line pair (x86 prefetches lines in pairs, so
/// 128 bytes as crossbeam's `CachePadded`).
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct Padded<T>(pub(crate) T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        &self.0
    }
}

/// One record's storage: a sequence word and the record as four words, in one
/// 64-byte cache line.
/// `repr(C)`: the layout is part of the ring file format (FORMAT.md
/// section 6: the sequence word first, then the record's words).
#[derive(Debug)]
#[repr(C, align(64))]
pub(crate) struct Slot {
    pub(crate) seq: AtomicU64,
    pub(crate) words: [AtomicU64; 4],
}

impl Slot {
    pub(crate) fn new(seq: u64) -> Self {
        Slot {
            seq: AtomicU64::new(seq),
            words: [
                AtomicU64::new(0),
                AtomicU64::new(0),
                AtomicU64::new(0),
                AtomicU64::new(0),
            ],
        }
    }

    /// Stores the record's words (relaxed; the caller publishes them with a
    /// release store of `seq`).
    #[inline(always)]
    pub(crate) fn write(&self, event: &Event) {
        let w = event.to_words();
        self.words[0].store(w[0], Ordering::Relaxed);
        self.words[1].store(w[1], Ordering::Relaxed);
        self.words[2].store(w[2], Ordering::Relaxed);
        self.words[3].store(w[3], Ordering::Relaxed);
    }

    /// Loads the record's words (relaxed; the caller validates them).
    #[inline(always)]
    pub(crate) fn read(&self) -> Event {
        Event::from_words([
            self.words[0].load(Ordering::Relaxed),
            self.words[1].load(Ordering::Relaxed),
            self.words[2].load(Ordering::Relaxed),
            self.words[3].load(Ordering::Relaxed),
        ])
    }
}

/// Allocates `n` slots with sequence words `seq(i)`; an allocation the
/// system refuses is an error, not an abort.
pub(crate) fn slots(n: usize, seq: impl Fn(usize) -> u64) -> Result<Box<[Slot]>, RingError> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| RingError::OutOfMemory {
        capacity: n,
        bytes: n.saturating_mul(std::mem::size_of::<Slot>()),
    })?;
    v.extend((0..n).map(|i| Slot::new(seq(i))));
    Ok(v.into_boxed_slice())
}

/// Why a ring could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingError {
    /// The capacity is not one the ring accepts.
    Capacity(BadCapacity),
    /// The system refused the memory.
    OutOfMemory {
        /// The capacity asked for, in events.
        capacity: usize,
        /// The bytes that were needed (64 per event).
        bytes: usize,
    },
}

impl From<BadCapacity> for RingError {
    fn from(e: BadCapacity) -> Self {
        RingError::Capacity(e)
    }
}

impl std::fmt::Display for RingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RingError::Capacity(e) => e.fmt(f),
            RingError::OutOfMemory { capacity, bytes } => write!(
                f,
                "cannot allocate {capacity} events ({bytes} bytes): choose a smaller capacity"
            ),
        }
    }
}

impl std::error::Error for RingError {}

/// A capacity that is not a power of two in the allowed range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadCapacity {
    /// The capacity asked for.
    pub requested: usize,
    /// The nearest valid capacity at or below it (0 if none).
    pub below: usize,
    /// The nearest valid capacity above it (0 if none).
    pub above: usize,
    /// The smallest valid capacity.
    pub min: usize,
}

impl std::fmt::Display for BadCapacity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "capacity {} is not a power of two between {} and 2^32",
            self.requested, self.min
        )?;
        match (self.below, self.above) {
            (0, 0) => Ok(()),
            (0, a) => write!(f, "; use {a}"),
            (b, 0) => write!(f, "; use {b}"),
            (b, a) => write!(f, "; use {b} or {a}"),
        }
    }
}

/// The largest ring capacity (2^32 slots, 256 GiB: far beyond any real use).
pub const MAX_CAPACITY: usize = 1 << 32;

/// Checks that `capacity` is a power of two in `1..=MAX_CAPACITY` (the
/// capacities of an [`OverwriteRing`]).
pub fn check_capacity(capacity: usize) -> Result<(), BadCapacity> {
    check_capacity_from(capacity, 1)
}

/// Checks that `capacity` is a power of two in `min..=MAX_CAPACITY`.
pub fn check_capacity_from(capacity: usize, min: usize) -> Result<(), BadCapacity> {
    debug_assert!(min.is_power_of_two());
    if capacity.is_power_of_two() && (min..=MAX_CAPACITY).contains(&capacity) {
        return Ok(());
    }
    let below = if capacity < min {
        0
    } else if capacity > MAX_CAPACITY {
        MAX_CAPACITY
    } else {
        1 << (usize::BITS - 1 - capacity.leading_zeros())
    };
    let above = if capacity < min {
        min
    } else if capacity >= MAX_CAPACITY {
        0
    } else {
        below << 1
    };
    Err(BadCapacity {
        requested: capacity,
        below,
        above,
        min,
    })
}

// ----- overwrite mode -----------------------------------------------------------

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
/// ```
/// use qtrace::queues::ring::OverwriteRing;
/// use qtrace::{Event, EventId};
///
/// let ring = OverwriteRing::new(4).unwrap();
/// for i in 0..6u64 {
///     if let Some(t) = ring.claim() {
///         ring.commit(t, &Event::new(i, EventId(0x0b), 0, [i, 0]));
///     }
/// }
/// let kept: Vec<u64> = ring.read().iter().map(|r| r.ticket).collect();
/// assert_eq!(kept, [2, 3, 4, 5]);
/// let c = ring.counters();
/// assert_eq!((c.accepted, c.dropped, c.overwritten, c.queued), (6, 0, 2, 4));
/// ```
///
/// Its layout is fixed (`repr(C)`: the ticket counter at byte 0, the drop
/// counter at byte 128), because a circular queue may place it in a ring
/// file (FORMAT.md section 6) together with its slots.
#[derive(Debug)]
#[repr(C)]
pub struct OverwriteRing {
    /// Tickets handed out: every attempt.
    tail: Padded<AtomicU64>,
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
    assert!(std::mem::offset_of!(OverwriteRing, tail) == crate::queues::ring_file::TAIL_AT);
    assert!(std::mem::offset_of!(OverwriteRing, dropped) == crate::queues::ring_file::DROPPED_AT);
    assert!(std::mem::size_of::<OverwriteRing>() <= crate::queues::ring_file::CTL_BYTES);
    assert!(std::mem::size_of::<Slot>() == crate::queues::ring_file::SLOT_BYTES);
    assert!(std::mem::offset_of!(Slot, seq) == 0);
    assert!(std::mem::offset_of!(Slot, words) == 8);
};

/// An [`OverwriteRing`]'s or [`DropRing`]'s counters (see
/// [`crate::queue_trait::QueueCounters`] for the invariants).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RingCounters {
    /// Claims that succeeded.
    pub accepted: u64,
    /// Claims refused.
    pub dropped: u64,
    /// Accepted records later evicted by newer ones (always 0 for a
    /// [`DropRing`]).
    pub overwritten: u64,
    /// Records taken out by a reader ([`OverwriteRing::consume`],
    /// [`DropRing::pop`]).
    pub delivered: u64,
    /// Accepted records still in the ring (including ones being written).
    pub queued: u64,
}

impl OverwriteRing {
    /// A ring of `capacity` slots (a power of two).
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

    /// The number of slots.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.slots.len()
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
    fn claim_ticket(&self, ticket: u64) -> Option<u64> {
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
        let mut out: Vec<Ticketed> = self
            .slots
            .iter()
            .filter_map(|s| self.read_slot(s, consume))
            .collect();
        out.sort_unstable_by_key(|r| r.ticket);
        if consume {
            self.delivered
                .fetch_add(out.len() as u64, Ordering::Relaxed);
        }
        out
    }

    /// The records in the ring, oldest (lowest ticket) first, while producers
    /// keep writing. A record being written, or overwritten while it was
    /// copied, is left out (its ticket is missing from the result).
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

// ----- drop-when-full mode ------------------------------------------------------

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
    /// ```
    /// use qtrace::queues::ring::DropRing;
    /// use qtrace::{Event, EventId};
    ///
    /// let ring = DropRing::new_latching(2).unwrap();
    /// let ev = |t| Event::new(t, EventId(0x0b), 0, [t, 0]);
    /// assert!(ring.push(&ev(0)) && ring.push(&ev(1)));
    /// assert!(!ring.push(&ev(2))); // full: latched
    /// assert_eq!(ring.pop().unwrap().time, 0);
    /// assert!(!ring.push(&ev(3))); // still latched, though there is room
    /// assert_eq!(ring.pop().unwrap().time, 1);
    /// assert_eq!(ring.reopen(), Some(2)); // empty: 2 drops, mark them here
    /// assert!(ring.push(&ev(4)));
    /// assert_eq!(ring.reopen(), None); // not latched
    /// ```
    pub fn new_latching(capacity: usize) -> Result<Self, RingError> {
        let mut ring = DropRing::new(capacity)?;
        ring.latching = true;
        Ok(ring)
    }

    /// Whether this ring latches when full ([`DropRing::new_latching`]).
    pub fn is_latching(&self) -> bool {
        self.latching
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
        &self.slots[(pos & self.mask) as usize]
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
    pub fn pop_batch(&self, out: &mut Vec<Event>, max: usize) -> usize {
        self.drain(max, |e| out.push(*e))
    }

    /// Pops up to `max` records, handing each to `f` in order; returns how
    /// many. Stops early when the ring is empty or the oldest record is still
    /// being written.
    pub fn drain(&self, max: usize, mut f: impl FnMut(&Event)) -> usize {
        let mut n = 0;
        while n < max {
            match self.pop() {
                Some(e) => {
                    f(&e);
                    n += 1;
                }
                None => break,
            }
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

// ----- combine runs (`crate::combine`): several records reserved together --

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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::EventId;

    fn ev(i: u64) -> Event {
        Event::new(i, EventId(0x0b), 7, [i, !i])
    }

    #[test]
    fn capacity_must_be_power_of_two() {
        assert!(check_capacity(1).is_ok());
        assert!(check_capacity(8192).is_ok());
        assert_eq!(
            check_capacity(1000),
            Err(BadCapacity {
                requested: 1000,
                below: 512,
                above: 1024,
                min: 1
            })
        );
        assert_eq!(
            DropRing::new(1).unwrap_err().to_string(),
            "capacity 1 is not a power of two between 2 and 2^32; use 2"
        );
        assert!(DropRing::new(2).is_ok());
        assert!(matches!(OverwriteRing::new(3), Err(RingError::Capacity(_))));
        assert_eq!(check_capacity(0).unwrap_err().above, 1);
        assert_eq!(
            check_capacity(1000).unwrap_err().to_string(),
            "capacity 1000 is not a power of two between 1 and 2^32; use 512 or 1024"
        );
    }

    #[test]
    fn refused_allocation_is_an_error() {
        // More bytes than an allocation may span: refused without allocating.
        let n = usize::MAX / 32;
        let e = slots(n, |_| 0).unwrap_err();
        assert_eq!(
            e,
            RingError::OutOfMemory {
                capacity: n,
                bytes: usize::MAX
            }
        );
        assert!(e.to_string().ends_with("choose a smaller capacity"));
    }

    #[test]
    fn overwrite_keeps_last_n_in_order() {
        let ring = OverwriteRing::new(8).unwrap();
        for i in 0..21 {
            assert!(ring.push(&ev(i)));
        }
        let got: Vec<Ticketed> = ring.read();
        assert_eq!(
            got.iter().map(|r| r.ticket).collect::<Vec<_>>(),
            (13..21).collect::<Vec<_>>()
        );
        assert!(got.iter().all(|r| r.event == ev(r.ticket)));
        assert_eq!(
            ring.counters(),
            RingCounters {
                accepted: 21,
                dropped: 0,
                overwritten: 13,
                delivered: 0,
                queued: 8
            }
        );
    }

    #[test]
    fn consume_marks_delivered_and_later_overwrites_are_not_losses() {
        let ring = OverwriteRing::new(4).unwrap();
        for i in 0..6 {
            ring.push(&ev(i));
        }
        assert_eq!(ring.consume().len(), 4);
        assert!(ring.consume().is_empty());
        let again = ring.consume();
        assert_eq!(ring.restore(&again), 0);
        for i in 6..9 {
            ring.push(&ev(i));
        }
        assert_eq!(
            ring.counters(),
            RingCounters {
                accepted: 9,
                dropped: 0,
                overwritten: 2,
                delivered: 4,
                queued: 3
            }
        );
    }

    #[test]
    fn restore_undoes_consume() {
        let ring = OverwriteRing::new(4).unwrap();
        for i in 0..3 {
            ring.push(&ev(i));
        }
        let taken = ring.consume();
        assert_eq!(ring.counters().delivered, 3);
        assert_eq!(ring.restore(&taken), 3);
        assert_eq!(ring.counters().delivered, 0);
        assert_eq!(ring.counters().queued, 3);
        assert_eq!(ring.read(), taken);
    }

    #[test]
    fn busy_slot_drops_lapping_producer() {
        let ring = OverwriteRing::new(2).unwrap();
        let stalled = ring.claim().unwrap(); // ticket 0, slot 0 busy
        assert!(ring.push(&ev(1))); // slot 1
        assert!(!ring.push(&ev(2))); // slot 0 busy: dropped
        assert!(ring.push(&ev(3))); // slot 1 overwritten
        ring.commit(stalled, &ev(0));
        let got: Vec<u64> = ring.read().iter().map(|r| r.ticket).collect();
        assert_eq!(got, [0, 3]);
        assert_eq!(
            ring.counters(),
            RingCounters {
                accepted: 3,
                dropped: 1,
                overwritten: 1,
                delivered: 0,
                queued: 2
            }
        );
    }

    #[test]
    fn lapped_producer_drops_instead_of_overwriting_newer() {
        let ring = OverwriteRing::new(1).unwrap();
        // Simulate a producer that took ticket 0 and stalled before its CAS:
        // take the ticket by hand.
        let t0 = ring.tail.fetch_add(1, Ordering::Relaxed);
        assert!(ring.push(&ev(1)));
        // The stalled producer now resumes its claim of ticket 0: refused.
        assert_eq!(ring.claim_ticket(t0), None);
        assert_eq!(ring.read()[0].ticket, 1);
        assert_eq!(ring.read()[0].event, ev(1));
        let c = ring.counters();
        assert_eq!((c.accepted, c.dropped, c.queued), (1, 1, 1));
    }

    #[test]
    fn read_skips_a_record_being_written() {
        let ring = OverwriteRing::new(4).unwrap();
        ring.push(&ev(0));
        let t = ring.claim().unwrap();
        assert_eq!(ring.read().len(), 1);
        ring.commit(t, &ev(1));
        assert_eq!(ring.read().len(), 2);
    }

    #[test]
    fn runs_claim_consecutive_slots_or_none() {
        let ring = DropRing::new(8).unwrap();
        assert_eq!(ring.claim_run(5), Some(0));
        for p in 0..5 {
            ring.commit(p, &ev(p));
        }
        assert_eq!(ring.claim_run(4), None); // 3 free
        assert_eq!(ring.dropped(), 4);
        assert_eq!(ring.claim_run(9), None); // more than the capacity
        assert_eq!(ring.dropped(), 13);
        assert_eq!(ring.pop().unwrap().time, 0);
        assert_eq!(ring.claim_run(4), Some(5));
        assert_eq!(ring.accepted(), 9);
        let latched = DropRing::new_latching(4).unwrap();
        assert_eq!(latched.claim_run(5), None);
        assert_eq!(latched.claim_run(1), None); // latched shut
        assert_eq!(latched.dropped(), 6);

        let ring = OverwriteRing::new(4).unwrap();
        assert_eq!(ring.push_run(3, ev_at), 3);
        assert_eq!(ring.push_run(3, |i| ev_at(10 + i)), 3);
        let kept: Vec<u64> = ring.read().iter().map(|r| r.event.time).collect();
        assert_eq!(kept, [2, 10, 11, 12]);
    }

    fn ev_at(i: usize) -> Event {
        ev(i as u64)
    }

    #[test]
    fn drop_ring_fifo_drop_and_refill() {
        let ring = DropRing::new(4).unwrap();
        for i in 0..6 {
            ring.push(&ev(i));
        }
        assert_eq!((ring.accepted(), ring.dropped(), ring.len()), (4, 2, 4));
        assert_eq!(ring.pop(), Some(ev(0)));
        assert!(ring.push(&ev(6)));
        let mut out = vec![];
        assert_eq!(ring.pop_batch(&mut out, 2), 2);
        assert_eq!(out, [ev(1), ev(2)]);
        let mut rest = vec![];
        assert_eq!(ring.drain(usize::MAX, |e| rest.push(e.time)), 2);
        assert_eq!(rest, [3, 6]);
        assert_eq!(ring.pop(), None);
        assert_eq!(
            ring.counters(),
            RingCounters {
                accepted: 5,
                dropped: 2,
                overwritten: 0,
                delivered: 5,
                queued: 0
            }
        );
    }

    #[test]
    fn drop_ring_stops_at_uncommitted_record() {
        let ring = DropRing::new(4).unwrap();
        let p = ring.claim().unwrap();
        ring.push(&ev(1));
        assert_eq!(ring.pop(), None);
        assert_eq!(ring.len(), 2);
        ring.commit(p, &ev(0));
        assert_eq!(ring.pop(), Some(ev(0)));
        assert_eq!(ring.pop(), Some(ev(1)));
    }

    #[test]
    fn drop_ring_many_laps() {
        let ring = DropRing::new(2).unwrap();
        for i in 0..1000 {
            assert!(ring.push(&ev(i)));
            assert_eq!(ring.pop(), Some(ev(i)));
        }
        assert_eq!(ring.counters().delivered, 1000);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    //! Model checks: `RUSTFLAGS="--cfg loom" cargo test --release --lib loom`.
    use super::*;
    use crate::EventId;
    use loom::sync::Arc;
    use loom::thread;

    fn ev(thread: u64, seq: u64) -> Event {
        Event::new(seq, EventId(0x0b), thread as u32, [thread, seq])
    }

    /// A record read back is one that was written (its four words belong
    /// together).
    fn check(e: &Event) {
        assert_eq!(e.source as u64, e.args[0]);
        assert_eq!(e.time, e.args[1]);
    }

    #[test]
    fn loom_drop_ring_two_producers_and_drain() {
        loom::model(|| {
            let ring = Arc::new(DropRing::new(2).unwrap());
            let producers: Vec<_> = (0..2u64)
                .map(|t| {
                    let ring = Arc::clone(&ring);
                    thread::spawn(move || {
                        let mut ok = 0u64;
                        for s in 0..2 {
                            ok += ring.push(&ev(t, s)) as u64;
                        }
                        ok
                    })
                })
                .collect();
            let mut seen: Vec<Event> = Vec::new();
            ring.pop_batch(&mut seen, 4);
            let accepted: u64 = producers.into_iter().map(|h| h.join().unwrap()).sum();
            ring.pop_batch(&mut seen, 4);
            for e in &seen {
                check(e);
            }
            // Per-producer order is kept.
            for t in 0..2 {
                let mine: Vec<u64> = seen
                    .iter()
                    .filter(|e| e.args[0] == t)
                    .map(|e| e.time)
                    .collect();
                assert!(mine.windows(2).all(|w| w[0] < w[1]));
            }
            let c = ring.counters();
            assert_eq!(c.accepted, accepted);
            assert_eq!(c.accepted + c.dropped, 4);
            assert_eq!(c.delivered, seen.len() as u64);
            assert_eq!(c.queued, 0);
        });
    }

    #[test]
    fn loom_drop_ring_wraps() {
        loom::model(|| {
            let ring = Arc::new(DropRing::new(2).unwrap());
            let p = {
                let ring = Arc::clone(&ring);
                thread::spawn(move || (0..3).filter(|&s| ring.push(&ev(1, s))).count() as u64)
            };
            let mut seen = Vec::new();
            for _ in 0..3 {
                if let Some(e) = ring.pop() {
                    seen.push(e);
                }
            }
            let accepted = p.join().unwrap();
            while let Some(e) = ring.pop() {
                seen.push(e);
            }
            for e in &seen {
                check(e);
            }
            assert!(seen.windows(2).all(|w| w[0].time < w[1].time));
            assert_eq!(seen.len() as u64, accepted);
            assert_eq!(ring.accepted() + ring.dropped(), 3);
        });
    }

    #[test]
    fn loom_overwrite_two_producers_wrap_and_snapshot() {
        overwrite_model(2);
    }

    #[test]
    fn loom_overwrite_single_slot() {
        overwrite_model(1);
    }

    fn overwrite_model(capacity: usize) {
        loom::model(move || {
            let ring = Arc::new(OverwriteRing::new(capacity).unwrap());
            let producers: Vec<_> = (0..2u64)
                .map(|t| {
                    let ring = Arc::clone(&ring);
                    thread::spawn(move || {
                        for s in 0..2 {
                            ring.push(&ev(t, s));
                        }
                    })
                })
                .collect();
            // A concurrent snapshot never sees a torn record.
            for r in ring.read() {
                check(&r.event);
            }
            for h in producers {
                h.join().unwrap();
            }
            let got = ring.consume();
            for r in &got {
                check(&r.event);
            }
            assert!(got.windows(2).all(|w| w[0].ticket < w[1].ticket));
            for t in 0..2 {
                let mine: Vec<u64> = got
                    .iter()
                    .filter(|r| r.event.args[0] == t)
                    .map(|r| r.event.time)
                    .collect();
                assert!(mine.windows(2).all(|w| w[0] < w[1]));
            }
            let c = ring.counters();
            assert_eq!(c.accepted + c.dropped, 4);
            assert_eq!(c.delivered, got.len() as u64);
            assert_eq!(c.accepted, c.delivered + c.overwritten + c.queued);
            assert_eq!(c.queued, 0);
            assert!(got.len() <= capacity);
        });
    }
}
