//! Each thread's memory of the circular-queue shards it owns, so that an
//! enabled event into a circular queue finds its ring by comparing one key
//! with a thread-local word (read twice: see `Cache`); and of the online
//! and UDP queues it logs into, whose events find the queue's feed (its
//! ring and wake-up) the same way, under the queue's [`feed_key`].
//!
//! Without it, every event would look up the queue (a `OnceLock` check and
//! a match on the queue's kind), this thread's token (a thread-local read),
//! its shard (a mask and an index) and the shard's owner (a load and a
//! compare): about 20 instructions, a third of the whole event. With it, a
//! hit costs three thread-local loads (the key, the ring, the key again:
//! see `Cache` for why twice) and two compares; everything else happens
//! once, on the first event a thread logs into a queue (see
//! [`crate::Tracer::log_event`]). For an online or UDP queue the lookup and
//! the match cost about 8 of its 64 instructions (`scripts/instructions.sh`,
//! case `online`), which its cached feed saves.
//!
//! The cache holds the [`WAYS`] queues this thread logged into most
//! recently, newest first. The hot path compares only the newest entry's
//! key; the others are searched (and the one found moved to the front) on
//! the tracer's out-of-line path for circular queues, so a thread logging
//! into up to [`WAYS`] circular queues in turn never looks for its shard
//! again, and one logging into a single queue never leaves the fast path.
//!
//! # Keys
//!
//! A key is `tracer serial << 32 | route word`: the tracer's serial number
//! is unique in the process and never reused (see `Tracer`), and a route
//! word names one queue of that tracer for the tracer's whole life. So a
//! key names one queue forever, and an entry never needs invalidating when
//! routing changes: a rerouted event simply has another key. The tracer
//! stores each event's route as this key ([`key`]), so the hot path reads
//! it in the load that tells whether the event is logged. Keys below
//! `1 << 32` are never stored (a tracer whose serial does not fit in 32
//! bits does not use the cache). A live route word has its top bit set,
//! so no key is 0, which marks an empty entry. A feed is kept under
//! [`feed_key`], the key with a bit no route word has: a key never finds a
//! feed where the circular path looks for a shard ring, nor the reverse.
//!
//! # Why the stored pointer stays valid
//!
//! An entry holds a pointer to a shard ring this thread owns in the queue
//! its key names (or to that queue's feed, which any thread may use). The
//! ring (or feed) lives as long as the queue, and the queue as
//! long as its tracer: a caller that holds the tracer (so `&Tracer`) and
//! looks up a key made from that tracer's serial can use the ring for as
//! long as it holds the tracer. Ownership lasts as long as the thread's
//! token; the token is given back when the thread exits, and [`clear`] is
//! called then (see `crate::model::source`), so a thread that logs from a late
//! thread-local destructor no longer writes to a shard that a new thread
//! may own. A signal handler that logs never leaves an entry pairing one
//! key with another key's ring (see `Cache`).

use std::ptr::NonNull;
use std::sync::atomic::{compiler_fence, AtomicBool, AtomicPtr, AtomicU64, Ordering};

use crate::model::handle::{FEED_KEY, LIVE};
use crate::ring::shard::ShardRing;

/// Entries per thread.
pub(crate) const WAYS: usize = 4;

/// The queues this thread logged into most recently, newest first: entry 0
/// is the only one the common path (a thread logging into one circular
/// queue) looks at.
///
/// # Signal handlers
///
/// A signal handler may log (into another queue, see `CircularQueue`) at
/// any instruction of this thread, itself looking up and filling the cache.
/// So the words are atomics (relaxed: only this thread and its handlers
/// touch them; an atomic costs a plain load or store, and the compiler
/// fences below keep their order), and:
/// - every rewrite ([`fill`], [`lookup_older`], [`clear`]) happens under
///   `busy`; a handler that finds `busy` set leaves the cache alone (it
///   takes no ring from the older entries, and does not cache), so it never
///   uses entries halfway shifted, and never shifts them under its
///   interrupted rewrite ([`clear`], at thread exit, clears every key
///   whatever it interrupted);
/// - entry 0, which [`newest`] reads without looking at `busy`, is only
///   written as "key 0, then the ring, then the key", so it never pairs a
///   key with another entry's ring;
/// - [`newest`] reads the key, the ring, then the key again: a handler that
///   rewrites entry 0 between the first two reads is caught by the third.
struct Cache {
    /// 0 for an empty entry.
    keys: [AtomicU64; WAYS],
    /// Dangling while the key is 0.
    rings: [AtomicPtr<()>; WAYS],
    /// Set while this thread rewrites the entries.
    busy: AtomicBool,
}

thread_local! {
    // No destructor and a constant initialiser: every access is a plain
    // load from the thread's TLS block, with no "initialised yet?" check.
    static CACHE: Cache = const {
        Cache {
            keys: [const { AtomicU64::new(0) }; WAYS],
            rings: [const { AtomicPtr::new(NonNull::<()>::dangling().as_ptr()) }; WAYS],
            busy: AtomicBool::new(false),
        }
    };
}

/// The key of the queue `route_word` names in the tracer whose serial is
/// `key_base >> 32`.
#[inline(always)]
pub(crate) fn key(key_base: u64, route_word: u32) -> u64 {
    // `+` rather than `|` (the same here: the low half of `key_base` is 0),
    // so that x86 can do it in one `lea`.
    key_base + route_word as u64
}

/// The key under which the feed of the queue [`key`] `key` names is kept:
/// `key` with [`FEED_KEY`], a bit no route word has, so that no [`key`] is
/// ever a feed's.
#[inline(always)]
pub(crate) fn feed_key(key: u64) -> u64 {
    key | FEED_KEY as u64
}

/// The newest entry, if its key is `key`: `(true, ring)`, where `ring` is
/// the shard ring this thread owns in the queue `key` (made by [`key`])
/// names; else `(false, _)`. The hot path; see [`lookup_older`] for the
/// other entries. (A flag and a raw pointer rather than an
/// `Option<&ShardRing>`: the caller then branches on the key compares
/// themselves, not on a pointer the optimiser cannot prove non-null.)
///
/// Dereferencing `ring` after a hit is sound for as long as the caller
/// holds the tracer whose serial is in `key`'s high bits: the ring belongs
/// to one of its queues (see the module docs).
#[inline(always)]
pub(crate) fn newest(key: u64) -> (bool, *const ShardRing) {
    debug_assert!(key as u32 & FEED_KEY == 0, "a feed's key");
    let (hit, ring) = newest_entry(key);
    (hit, ring.cast())
}

/// [`newest`] for a [`feed_key`]: the pointer [`fill_feed`] stored, the
/// queue's feed. (The ring layer does not know the feed's type; the tracer
/// does.)
#[inline(always)]
pub(crate) fn newest_feed(key: u64) -> (bool, *const ()) {
    debug_assert!(key as u32 & FEED_KEY != 0, "a shard's key");
    newest_entry(key)
}

/// Entry 0, if its key is `key`: the pointer as stored.
#[inline(always)]
fn newest_entry(key: u64) -> (bool, *const ()) {
    debug_assert!(
        key as u32 & LIVE != 0,
        "keys are made from live route words"
    );
    CACHE.with(|c| {
        let first = c.keys[0].load(Ordering::Relaxed);
        compiler_fence(Ordering::Acquire);
        let ring = c.rings[0].load(Ordering::Relaxed);
        compiler_fence(Ordering::Acquire);
        // Again: a signal handler may have rewritten entry 0 since the first
        // read (see `Cache`); then `ring` may be the ring of another key.
        let again = c.keys[0].load(Ordering::Relaxed);
        // A hit means `ring` was stored with `key` (in `move_to_front`, from
        // a `&ShardRing` of the queue `key` names, which this thread owns),
        // and no rewrite of entry 0 came between the two reads of the key
        // (see `Cache`). This thread owns the shard until it gives its token
        // back, and [`clear`] runs then.
        (first == key && again == key, ring.cast_const())
    })
}

/// [`newest`] in the entries after the newest (out of line, so the hot
/// path holds no call): a hit moves to the front.
///
/// # Safety
///
/// The caller must hold (for `'a`) the tracer whose serial is in `key`'s
/// high bits: the ring belongs to one of its queues (see the module docs).
pub(crate) unsafe fn lookup_older<'a>(key: u64) -> Option<&'a ShardRing> {
    debug_assert!(key as u32 & FEED_KEY == 0, "a feed's key");
    // SAFETY: as this function's (an entry under a key without `FEED_KEY`
    // holds a shard ring).
    lookup_older_entry(key).map(|ring| unsafe { &*ring.cast::<ShardRing>() })
}

/// [`lookup_older`] for a [`feed_key`]: the pointer [`fill_feed`] stored.
pub(crate) fn lookup_older_feed(key: u64) -> Option<*const ()> {
    debug_assert!(key as u32 & FEED_KEY != 0, "a shard's key");
    lookup_older_entry(key)
}

/// The entries after the newest, searched for `key`: the pointer as stored.
fn lookup_older_entry(key: u64) -> Option<*const ()> {
    CACHE
        .try_with(|c| {
            // A miss (every event of a thread without a shard) writes
            // nothing; a hit is searched again under `busy`.
            if !c.keys[1..].iter().any(|k| k.load(Ordering::Relaxed) == key) {
                return None;
            }
            rewrite(c, |c| {
                let i = (1..WAYS).find(|&i| c.keys[i].load(Ordering::Relaxed) == key)?;
                let ring = c.rings[i].load(Ordering::Relaxed);
                move_to_front(c, i, key, ring);
                // Entries after the first are only read and written under
                // `busy`, so no handler came between the read of the key
                // and of the ring.
                Some(ring.cast_const())
            })
        })
        .ok()
        .flatten()
        .flatten()
}

/// Runs `f` with `busy` set, unless it already is (then this is a signal
/// handler that interrupted a rewrite: `None`).
fn rewrite<T>(c: &Cache, f: impl FnOnce(&Cache) -> T) -> Option<T> {
    if c.busy.load(Ordering::Relaxed) {
        return None;
    }
    c.busy.store(true, Ordering::Relaxed);
    compiler_fence(Ordering::SeqCst);
    let result = f(c);
    compiler_fence(Ordering::SeqCst);
    c.busy.store(false, Ordering::Relaxed);
    Some(result)
}

/// Shifts entries `0..i` one place back (over entry `i`) and puts `key`
/// first. Only under `busy` (see [`rewrite`]).
fn move_to_front(c: &Cache, i: usize, key: u64, ring: *mut ()) {
    for j in (1..=i).rev() {
        c.keys[j].store(c.keys[j - 1].load(Ordering::Relaxed), Ordering::Relaxed);
        c.rings[j].store(c.rings[j - 1].load(Ordering::Relaxed), Ordering::Relaxed);
    }
    // Entry 0 is read by handlers even under `busy`: never a key with
    // another key's ring.
    c.keys[0].store(0, Ordering::Relaxed);
    compiler_fence(Ordering::Release);
    c.rings[0].store(ring, Ordering::Relaxed);
    compiler_fence(Ordering::Release);
    c.keys[0].store(key, Ordering::Relaxed);
}

/// Remembers that this thread owns `ring` in the queue `key` names, as the
/// newest entry (the oldest is forgotten). Keys below `1 << 32` (a tracer
/// without a serial) or without the live bit are ignored (see the module
/// docs), and so is a fill from a signal handler that interrupted a
/// rewrite.
pub(crate) fn fill(key: u64, ring: &ShardRing) {
    debug_assert!(key as u32 & FEED_KEY == 0, "a feed's key");
    fill_entry(key, (ring as *const ShardRing).cast());
}

/// [`fill`] for a [`feed_key`] and the feed of the queue it names, `feed`,
/// stored as it is: the caller
/// keeps it valid as `fill`'s callers keep a ring (it lives as long as its
/// queue, and the queue as long as its tracer).
pub(crate) fn fill_feed(key: u64, feed: *const ()) {
    debug_assert!(key as u32 & FEED_KEY != 0, "a shard's key");
    fill_entry(key, feed);
}

/// Stores `ptr` under `key` as the newest entry (see [`fill`]).
fn fill_entry(key: u64, ptr: *const ()) {
    if key >> 32 == 0 || key as u32 & LIVE == 0 {
        return;
    }
    let ring = ptr.cast_mut();
    // `try_with`: a thread that logs from a thread-local destructor after
    // the cache is gone just does not cache.
    let _ = CACHE.try_with(|c| rewrite(c, |c| move_to_front(c, WAYS - 1, key, ring)));
}

/// Forgets every entry (this thread's token is being given back).
pub(crate) fn clear() {
    let _ = CACHE.try_with(|c| {
        // Not `rewrite`: whatever a handler interrupted, every key goes.
        // `busy` keeps handlers from moving a key not yet cleared into a
        // place already cleared.
        let was_busy = c.busy.load(Ordering::Relaxed);
        c.busy.store(true, Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        for k in &c.keys {
            k.store(0, Ordering::Relaxed);
        }
        compiler_fence(Ordering::SeqCst);
        c.busy.store(was_busy, Ordering::Relaxed);
    });
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// The ring cached for `key`, as a pointer (so no lifetime is claimed).
    fn hit(key: u64) -> Option<*const ShardRing> {
        match newest(key) {
            (true, ring) => Some(ring),
            // SAFETY: the reference is turned into a pointer at once and
            // never dereferenced.
            _ => unsafe { lookup_older(key) }.map(|r| r as *const ShardRing),
        }
    }

    fn stored() -> [u64; WAYS] {
        CACHE.with(|c| c.keys.each_ref().map(|k| k.load(Ordering::Relaxed)))
    }

    #[test]
    fn hits_only_the_key_it_was_filled_with_newest_first() {
        let (rings, _mem): (Vec<ShardRing>, Vec<_>) = (0..6).map(|_| ShardRing::on_heap(4)).unzip();
        let k = |q: u64| 7 << 32 | 0x8000_0000 | q;
        assert!(hit(k(0)).is_none());
        for q in 0..4 {
            fill(k(q), &rings[q as usize]);
        }
        assert_eq!(stored(), [k(3), k(2), k(1), k(0)]);
        // Another tracer's serial, the same route word: a miss.
        assert!(hit(8 << 32 | 0x8000_0000).is_none());
        // A hit past the newest entry moves that entry to the front.
        assert_eq!(hit(k(1)), Some(&rings[1] as *const _));
        assert_eq!(stored(), [k(1), k(3), k(2), k(0)]);
        assert_eq!(hit(k(1)), Some(&rings[1] as *const _));
        assert_eq!(hit(k(0)), Some(&rings[0] as *const _));
        assert_eq!(stored(), [k(0), k(1), k(3), k(2)]);
        // A fifth queue pushes out the least recently used one.
        fill(k(4), &rings[4]);
        assert_eq!(stored(), [k(4), k(0), k(1), k(3)]);
        assert!(hit(k(2)).is_none());
        for q in [4, 0, 1, 3] {
            assert_eq!(hit(k(q)), Some(&rings[q as usize] as *const _));
        }
        clear();
        assert_eq!(stored(), [0; WAYS]);
        assert!(hit(k(3)).is_none());
    }

    #[test]
    fn a_feed_is_never_found_as_a_shard_nor_a_shard_as_a_feed() {
        let (ring, _mem) = ShardRing::on_heap(4);
        let stand_in = 0u8; // any address: a feed's pointer is only stored
        let feed = (&stand_in as *const u8).cast::<()>();
        let k = 13 << 32 | 0x8000_0002;
        fill(k, &ring);
        fill_feed(feed_key(k), feed);
        // Newest first: the feed.
        assert_eq!(newest_feed(feed_key(k)), (true, feed));
        assert!(!newest(k).0);
        // The shard, found in the older entries, moves to the front.
        // SAFETY: the ring outlives the reference, turned into a pointer.
        let older = unsafe { lookup_older(k) }.map(|r| r as *const ShardRing);
        assert_eq!(older, Some(&ring as *const ShardRing));
        assert!(newest(k).0);
        assert!(!newest_feed(feed_key(k)).0);
        assert_eq!(lookup_older_feed(feed_key(k)), Some(feed));
        assert_eq!(stored(), [feed_key(k), k, 0, 0]);
        clear();
        assert!(lookup_older_feed(feed_key(k)).is_none());
    }

    #[test]
    fn keys_without_a_serial_are_never_stored() {
        let (a, _mem) = ShardRing::on_heap(4);
        fill(0x8000_0001, &a);
        assert_eq!(stored(), [0; WAYS]);
        // Nor keys without the live bit (so never the empty key 0).
        fill(5 << 32 | 0x0000_0001, &a);
        assert_eq!(stored(), [0; WAYS]);
        fill(5 << 32 | 0x8000_0001, &a);
        assert_eq!(stored(), [5 << 32 | 0x8000_0001, 0, 0, 0]);
        clear();
    }

    #[test]
    fn a_handler_that_interrupted_a_rewrite_leaves_the_cache_alone() {
        let (rings, _mem): (Vec<ShardRing>, Vec<_>) = (0..2).map(|_| ShardRing::on_heap(4)).unzip();
        let k = |q: u64| 11 << 32 | 0x8000_0000 | q;
        fill(k(0), &rings[0]);
        fill(k(1), &rings[1]);
        // What a signal handler sees when it interrupts `rewrite`.
        CACHE.with(|c| c.busy.store(true, Ordering::Relaxed));
        // Entry 0 is still read (it is never half written)...
        assert_eq!(hit(k(1)), Some(&rings[1] as *const _));
        // ...but the older entries are neither searched nor moved, and
        // nothing is filled.
        assert!(hit(k(0)).is_none());
        fill(k(2), &rings[0]);
        assert_eq!(stored(), [k(1), k(0), 0, 0]);
        CACHE.with(|c| c.busy.store(false, Ordering::Relaxed));
        assert_eq!(hit(k(0)), Some(&rings[0] as *const _));
        assert_eq!(stored(), [k(0), k(1), 0, 0]);
        clear();
        CACHE.with(|c| assert!(!c.busy.load(Ordering::Relaxed)));
    }

    #[test]
    fn entries_are_per_thread() {
        let (a, _mem) = ShardRing::on_heap(4);
        let k = 9 << 32 | 0x8000_0003;
        fill(k, &a);
        std::thread::scope(|s| {
            s.spawn(|| assert!(hit(k).is_none()));
        });
        assert!(hit(k).is_some());
        clear();
    }
}
