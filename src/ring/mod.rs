//! The lock-free rings every in-memory, online and UDP queue is built on.
//!
//! Each slot holds one [`Event`](crate::model::event::Event) as four `AtomicU64` words (see
//! [`Event::to_words`](crate::model::event::Event::to_words)) plus a sequence word, so every write and read is a
//! plain atomic operation: no `unsafe`, and the same code is model-checked by
//! loom (through the crate's `sync` module). Capacities are powers of two; a
//! slot index is `ticket & mask`, never a division. The producer index lives in its own
//! cache line, and so does every slot (64-byte aligned), so two producers never
//! write the same line.
//!
//! (The circular queue's per-thread shards use a single-producer ring of
//! their own, without per-slot sequence words: `shard.rs`.)
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
//! read) and a *commit* (`post`), matching [`crate::queue::queue_trait::Queue`].
//!
//! Counters are exact: for [`OverwriteRing`], `attempts = accepted + dropped`
//! always holds, and `accepted = delivered + overwritten + queued` holds
//! whenever no producer is between its claim and its commit (overwrites are
//! derived by scanning the slots, so the hot path pays no extra atomic add for
//! them). For [`DropRing`], `accepted = popped + len` likewise.
//!
//! (An example: `tests.rs`, `drop_ring_drops_and_counts_when_full`.)
//!
//! One concept per file: slot storage (`slot.rs`), capacities
//! and build errors (`capacity.rs`), the counters both rings report
//! (`counters.rs`), [`OverwriteRing`] (`overwrite.rs`) and [`DropRing`]
//! (`drop_ring.rs`), each with its combine-run method, and their unit and
//! loom tests (`tests.rs`, `loom_tests.rs`, `loom_runs.rs`). Beside them the
//! rest of the mechanism the policies in `queues/` are built from: the memory
//! a ring lives in (`backing.rs`: heap or a mapped ring file), the circular
//! queue's per-thread single-producer shards (`shard.rs`), the per-thread shard
//! cache and thread tokens (`producer_cache.rs`, `thread_token.rs`).

pub(crate) mod backing;
mod capacity;
mod counters;
mod drop_ring;
pub(crate) mod layout;
#[cfg(all(test, loom))]
mod loom_runs;
mod overwrite;
pub(crate) mod producer_cache;
pub(crate) mod shard;
mod slot;
pub(crate) mod thread_token;

pub(crate) use capacity::{check_capacity, check_capacity_from, RingError, MAX_CAPACITY};
pub(crate) use counters::RingCounters;
pub(crate) use drop_ring::DropRing;
pub(crate) use overwrite::{OverwriteRing, Ticketed};
pub(crate) use slot::{slots, Padded, Slot};

#[cfg(all(test, not(loom)))]
mod tests;
#[cfg(all(test, not(loom)))]
mod thread_tests;

#[cfg(all(test, loom))]
mod loom_api_tests;
#[cfg(all(test, loom))]
mod loom_tests;
