//! [`IdMap`]: the analysis's state per task, source and interrupt line,
//! looked up on every measured event.

use std::collections::HashMap;
use std::hash::Hash;

/// Keys below this index a vector (an index and a compare, instead of a
/// hash and a probe); larger ones go to a map. Task, source and interrupt
/// numbers are mostly small; a slot costs one `Option<(K, T)>`, and the
/// vector only grows to the largest small key seen.
const DENSE: u64 = 4096;

/// A map from small numbers to `T`: a vector for keys below [`DENSE`], a
/// hash map past it. Iteration order is unspecified (as a hash map's).
#[derive(Debug)]
pub(super) struct IdMap<K, T> {
    dense: Vec<Option<(K, T)>>,
    sparse: HashMap<K, T, super::BuildIdHasher>,
}

impl<K, T> Default for IdMap<K, T> {
    fn default() -> Self {
        IdMap {
            dense: Vec::new(),
            sparse: HashMap::default(),
        }
    }
}

impl<K: Copy + Eq + Hash + Into<u64>, T> IdMap<K, T> {
    /// The value of `k`, inserted by `f` if absent. The lookup of a small
    /// key present is inlined into the caller; inserting, and large keys,
    /// go out of line (a call per lookup, with the insertion inlined into
    /// it, was 24 instructions of the analysis's every measured event:
    /// docs/benchmarks-history.md, "The analysis's lookups inline").
    #[inline(always)]
    pub(super) fn get_or_insert_with(&mut self, k: K, f: impl FnOnce() -> T) -> &mut T {
        let i = k.into();
        if i < DENSE && matches!(self.dense.get(i as usize), Some(Some(_))) {
            // Returned from this branch alone: the borrow checker refuses
            // a borrow returned in one arm of an `if let` and `self` used
            // after it.
            return match self.dense.get_mut(i as usize) {
                Some(Some((_, v))) => v,
                _ => unreachable!("the entry was checked present"),
            };
        }
        self.insert_with(k, f)
    }

    /// [`IdMap::get_or_insert_with`] past its inlined lookup: a small key
    /// seen for the first time, or a large key.
    #[inline(never)]
    fn insert_with(&mut self, k: K, f: impl FnOnce() -> T) -> &mut T {
        let i = k.into();
        if i < DENSE {
            let i = i as usize;
            if i >= self.dense.len() {
                self.dense.resize_with(i + 1, || None);
            }
            &mut self.dense[i].get_or_insert_with(|| (k, f())).1
        } else {
            self.sparse.entry(k).or_insert_with(f)
        }
    }

    /// The value of `k`, a default one inserted if absent.
    #[inline]
    pub(super) fn get_or_default(&mut self, k: K) -> &mut T
    where
        T: Default,
    {
        self.get_or_insert_with(k, T::default)
    }

    /// The value of `k`.
    #[inline]
    pub(super) fn get(&self, k: &K) -> Option<&T> {
        let i = (*k).into();
        if i < DENSE {
            self.dense.get(i as usize)?.as_ref().map(|(_, v)| v)
        } else {
            self.sparse.get(k)
        }
    }

    /// The value of `k`, mutable.
    #[inline]
    pub(super) fn get_mut(&mut self, k: &K) -> Option<&mut T> {
        let i = (*k).into();
        if i < DENSE {
            self.dense.get_mut(i as usize)?.as_mut().map(|(_, v)| v)
        } else {
            self.sparse.get_mut(k)
        }
    }

    /// The keys present.
    pub(super) fn keys(&self) -> impl Iterator<Item = K> + '_ {
        let dense = self.dense.iter().flatten().map(|(k, _)| *k);
        dense.chain(self.sparse.keys().copied())
    }

    /// Takes every entry out.
    pub(super) fn drain(&mut self) -> impl Iterator<Item = (K, T)> + '_ {
        let dense = self.dense.drain(..).flatten();
        dense.chain(self.sparse.drain())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_large_keys_live_apart_and_drain_whole() {
        let mut m: IdMap<u64, u32> = IdMap::default();
        *m.get_or_default(3) += 1;
        *m.get_or_default(3) += 1;
        *m.get_or_insert_with(DENSE, || 7) += 1;
        *m.get_or_default(u64::MAX) += 5;
        assert_eq!(m.get(&3), Some(&2));
        assert_eq!(m.get(&2), None);
        assert_eq!(m.get(&(DENSE + 1)), None);
        assert_eq!(m.get(&DENSE), Some(&8));
        if let Some(v) = m.get_mut(&u64::MAX) {
            *v += 1;
        }
        assert_eq!(m.get_mut(&5000), None);
        let mut keys: Vec<u64> = m.keys().collect();
        keys.sort_unstable();
        assert_eq!(keys, [3, DENSE, u64::MAX]);
        let mut all: Vec<(u64, u32)> = m.drain().collect();
        all.sort_unstable();
        assert_eq!(all, [(3, 2), (DENSE, 8), (u64::MAX, 6)]);
        assert_eq!(m.keys().count(), 0);
    }
}
