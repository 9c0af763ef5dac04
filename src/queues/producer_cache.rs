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
//! The cache is direct-mapped with [`WAYS`] entries, indexed by the low
//! bits of the queue's handle, so a thread logging into up to [`WAYS`]
//! circular queues with consecutive handles never misses.
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

struct Cache {
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

/// The entry for a key: the low bits of its queue handle, the low bits of
/// its route word.
#[inline(always)]
fn way(word: u32) -> usize {
    word as usize & (WAYS - 1)
}

/// The key of the queue `route_word` names in the tracer whose serial is
/// `key_base >> 32`.
#[inline(always)]
pub(crate) fn key(key_base: u64, route_word: u32) -> u64 {
    key_base | route_word as u64
}

/// The shard ring this thread owns in the queue `key` (made by [`key`])
/// names, if the cache holds it.
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
        let w = way(key as u32);
        if c.keys[w].get() == key {
            // SAFETY: an entry's pointer was made from a `&ShardRing` of
            // the queue `key` names (in `fill`), and that queue lives as
            // long as its tracer, which the caller holds for `'a`.
            Some(unsafe { c.rings[w].get().as_ref() })
        } else {
            None
        }
    })
}

/// Remembers that this thread owns `ring` in the queue `key` names.
/// Keys below `1 << 32` (a tracer without a serial) or without the live
/// bit are ignored (see the module docs).
pub(crate) fn fill(key: u64, ring: &ShardRing) {
    if key >> 32 == 0 || key as u32 & LIVE == 0 {
        return;
    }
    // `try_with`: a thread that logs from a thread-local destructor after
    // the cache is gone just does not cache.
    let _ = CACHE.try_with(|c| {
        let w = way(key as u32);
        c.keys[w].set(key);
        c.rings[w].set(NonNull::from(ring));
    });
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
        unsafe { lookup(key) }.map(|r| r as *const ShardRing)
    }

    #[test]
    fn hits_only_the_key_it_was_filled_with() {
        let a = ShardRing::new(4).unwrap();
        let b = ShardRing::new(4).unwrap();
        let ka = 7 << 32 | 0x8000_0001;
        let kb = 7 << 32 | 0x8000_0002;
        assert!(hit(ka).is_none());
        fill(ka, &a);
        fill(kb, &b);
        assert!(hit(ka) == Some(&a as *const _));
        assert!(hit(kb) == Some(&b as *const _));
        // Another tracer's serial, the same route word: a miss.
        assert!(hit(8 << 32 | 0x8000_0001).is_none());
        // Same way (queue 1 + WAYS): replaces the entry for `ka`.
        let kc = 7 << 32 | (0x8000_0001 + WAYS as u64);
        fill(kc, &b);
        assert!(hit(ka).is_none());
        assert!(hit(kc) == Some(&b as *const _));
        clear();
        assert!(hit(kb).is_none());
        assert!(hit(kc).is_none());
    }

    #[test]
    fn keys_without_a_serial_are_never_stored() {
        let a = ShardRing::new(4).unwrap();
        let stored = || CACHE.with(|c| c.keys.each_ref().map(Cell::get));
        fill(0x8000_0001, &a);
        assert_eq!(stored(), [0; WAYS]);
        // Nor keys without the live bit (so never the empty key 0).
        fill(5 << 32 | 0x0000_0001, &a);
        assert_eq!(stored(), [0; WAYS]);
        fill(5 << 32 | 0x8000_0001, &a);
        assert_eq!(stored(), [0, 5 << 32 | 0x8000_0001, 0, 0]);
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
