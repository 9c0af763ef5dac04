//! [`IdSet`]: the event ids some measure of the analysis takes, asked of
//! every event.

use std::fmt;

use crate::EventId;

/// Words of the set: a bit for each of the 65,536 event ids (8 KiB; the
/// words of the ids a trace uses stay in the cache).
const WORDS: usize = (u16::MAX as usize + 1) / 64;

/// A set of event ids, a bit each: a test is a load, a shift and a mask,
/// whichever ids (and however many) are in it.
pub(super) struct IdSet {
    bits: Box<[u64; WORDS]>,
}

impl IdSet {
    /// The empty set.
    pub(super) fn new() -> Self {
        IdSet {
            bits: Box::new([0; WORDS]),
        }
    }

    /// Adds `id`.
    pub(super) fn insert(&mut self, id: EventId) {
        let i = usize::from(id.0);
        self.bits[i / 64] |= 1 << (i % 64);
    }

    /// Adds the ids from `lo` to `hi`, both included (none when `lo > hi`).
    pub(super) fn insert_range(&mut self, lo: u16, hi: u16) {
        for id in lo..=hi {
            self.insert(EventId(id));
        }
    }

    /// Whether `id` is in the set.
    #[inline]
    pub(super) fn contains(&self, id: EventId) -> bool {
        let i = usize::from(id.0);
        self.bits[i / 64] & (1 << (i % 64)) != 0
    }
}

impl fmt::Debug for IdSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids = (0..=u16::MAX).map(EventId).filter(|&id| self.contains(id));
        f.debug_set().entries(ids.map(|id| id.0)).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_what_was_inserted_and_nothing_else() {
        let mut s = IdSet::new();
        s.insert(EventId(0));
        s.insert(EventId(63));
        s.insert(EventId(64));
        s.insert(EventId(u16::MAX));
        s.insert_range(1000, 1002);
        s.insert_range(5, 4);
        let ids: Vec<u16> = (0..=u16::MAX).filter(|&i| s.contains(EventId(i))).collect();
        assert_eq!(ids, [0, 63, 64, 1000, 1001, 1002, u16::MAX]);
        assert_eq!(format!("{s:?}"), "{0, 63, 64, 1000, 1001, 1002, 65535}");
    }
}
