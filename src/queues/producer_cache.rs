//! Each thread's memory of the circular-queue shards it owns, so that an
//! enabled event into a circular queue finds its ring with one compare
//! against a thread-local word.
//!
//! Without it, every event would look up the queue (a `OnceLock` check and
//! a match on the queue's kind), this thread's token (a thread-local read),
//! its shard (a mask and an index) and the shard's owner (a load and a
//! compare): about 20 instructions, a third of the whole event. With it, a
//! hit costs an `or`, a compare and a load; everything else happens once,
//! on the first event a thread logs into a queue (see
//! [`crate::Tracer::log_event`]).
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
//! routing changes: a rerouted event simply has another key. Keys below
//! `1 << 32` are never stored (a tracer whose serial does not fit in 32
//! bits does not use the cache). A live route word has its top bit set,
//! so no key is 0, which marks an empty entry.
//!
//! # Why the stored pointer stays valid
//!
//! An entry holds a pointer to a shard ring this thread owns in the queue
//! its key names. The ring lives as long as the queue, and the queue as
//! long as its tracer: a caller that holds the tracer (so `&Tracer`) and
//! looks up a key made from that tracer's serial can use the ring for as
//! long as it holds the tracer. Ownership lasts as long as the thread's
//! token; the token is given back when the thread exits, and [`clear`] is
//! called then (see `crate::source`), so a thread that logs from a late
//! thread-local destructor no longer writes to a shard that a new thread
//! may own.

use std::cell::Cell;
use std::ptr::NonNull;

use super::shard::ShardRing;
use crate::registry::LIVE;

/// Entries per thread.
pub(crate) const WAYS: usize = 4;

/// The queues this thread logged into most recently, newest first: entry 0
/// is the only one the common path (a thread logging into one circular
/// queue) looks at.
struct Cache {
    /// 0 for an empty entry.
    keys: [Cell<u64>; WAYS],
    /// Non-null (dangling while the key is 0), so that a hit needs no
    /// null check.
    rings: [Cell<NonNull<ShardRing>>; WAYS],
}

thread_local! {
    // No destructor and a constant initialiser: every access is a plain
    // load from the thread's TLS block, with no "initialised yet?" check.
    static CACHE: Cache = const {
        Cache {
            keys: [const { Cell::new(0) }; WAYS],
            rings: [const { Cell::new(NonNull::dangling()) }; WAYS],
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

/// The shard ring this thread owns in the queue `key` (made by [`key`])
/// names, if it is the newest entry: the hot path. See [`lookup_older`]
/// for the others.
///
/// # Safety
///
/// The caller must hold (for `'a`) the tracer whose serial is in `key`'s
/// high bits: the ring belongs to one of its queues (see the module docs).
#[inline(always)]
pub(crate) unsafe fn lookup<'a>(key: u64) -> Option<&'a ShardRing> {
    debug_assert!(
        key as u32 & LIVE != 0,
        "keys are made from live route words"
    );
    CACHE.with(|c| {
        if c.keys[0].get() == key {
            // SAFETY: an entry's pointer was made from a `&ShardRing` of
            // the queue `key` names (in `fill`), and that queue lives as
            // long as its tracer, which the caller holds for `'a`.
            Some(unsafe { c.rings[0].get().as_ref() })
        } else {
            None
        }
    })
}

/// [`lookup`] in the entries after the newest (out of line, so the hot
/// path holds no call): a hit moves to the front.
///
/// # Safety
///
/// As [`lookup`].
pub(crate) unsafe fn lookup_older<'a>(key: u64) -> Option<&'a ShardRing> {
    CACHE
        .try_with(|c| {
            let i = (1..WAYS).find(|&i| c.keys[i].get() == key)?;
            let ring = c.rings[i].get();
            move_to_front(c, i, key, ring);
            // SAFETY: as in `lookup`.
            Some(unsafe { ring.as_ref() })
        })
        .ok()
        .flatten()
}

/// Shifts entries `0..i` one place back (over entry `i`) and puts `key`
/// first.
fn move_to_front(c: &Cache, i: usize, key: u64, ring: NonNull<ShardRing>) {
    for j in (1..=i).rev() {
        c.keys[j].set(c.keys[j - 1].get());
        c.rings[j].set(c.rings[j - 1].get());
    }
    c.keys[0].set(key);
    c.rings[0].set(ring);
}

/// Remembers that this thread owns `ring` in the queue `key` names, as the
/// newest entry (the oldest is forgotten). Keys below `1 << 32` (a tracer
/// without a serial) or without the live bit are ignored (see the module
/// docs).
pub(crate) fn fill(key: u64, ring: &ShardRing) {
    if key >> 32 == 0 || key as u32 & LIVE == 0 {
        return;
    }
    // `try_with`: a thread that logs from a thread-local destructor after
    // the cache is gone just does not cache.
    let _ = CACHE.try_with(|c| move_to_front(c, WAYS - 1, key, NonNull::from(ring)));
}

/// Forgets every entry (this thread's token is being given back).
pub(crate) fn clear() {
    let _ = CACHE.try_with(|c| {
        for k in &c.keys {
            k.set(0);
        }
    });
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// The ring cached for `key`, as a pointer (so no lifetime is claimed).
    fn hit(key: u64) -> Option<*const ShardRing> {
        // SAFETY: the reference is turned into a pointer at once and never
        // dereferenced.
        unsafe { lookup(key).or_else(|| lookup_older(key)) }.map(|r| r as *const ShardRing)
    }

    fn stored() -> [u64; WAYS] {
        CACHE.with(|c| c.keys.each_ref().map(Cell::get))
    }

    #[test]
    fn hits_only_the_key_it_was_filled_with_newest_first() {
        let rings: Vec<ShardRing> = (0..6).map(|_| ShardRing::new(4).unwrap()).collect();
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
    fn keys_without_a_serial_are_never_stored() {
        let a = ShardRing::new(4).unwrap();
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
    fn entries_are_per_thread() {
        let a = ShardRing::new(4).unwrap();
        let k = 9 << 32 | 0x8000_0003;
        fill(k, &a);
        std::thread::scope(|s| {
            s.spawn(|| assert!(hit(k).is_none()));
        });
        assert!(hit(k).is_some());
        clear();
    }
}
