//! A map keyed by source number, looked up several times an event by the
//! exporters: indexed for small source numbers (CPUs, threads), ordered
//! for the others (the tracer's `u32::MAX`, large ids), so that a lookup is
//! an array index where a `BTreeMap` walked its nodes.

use std::collections::BTreeMap;

/// Sources below this are indexed.
const DENSE: usize = 1024;

/// Values by source number; [`keys`](BySource::keys) in ascending order, as a
/// `BTreeMap`'s.
#[derive(Debug)]
pub(crate) struct BySource<V> {
    dense: Vec<Option<V>>,
    sparse: BTreeMap<u32, V>,
    len: usize,
}

impl<V> Default for BySource<V> {
    fn default() -> Self {
        BySource {
            dense: Vec::new(),
            sparse: BTreeMap::new(),
            len: 0,
        }
    }
}

impl<V> BySource<V> {
    #[inline]
    pub(crate) fn get(&self, source: u32) -> Option<&V> {
        match self.dense.get(source as usize) {
            Some(v) => v.as_ref(),
            None if (source as usize) < DENSE => None,
            None => self.sparse.get(&source),
        }
    }

    #[inline]
    pub(crate) fn get_mut(&mut self, source: u32) -> Option<&mut V> {
        match self.dense.get_mut(source as usize) {
            Some(v) => v.as_mut(),
            None if (source as usize) < DENSE => None,
            None => self.sparse.get_mut(&source),
        }
    }

    #[inline]
    pub(crate) fn contains_key(&self, source: u32) -> bool {
        self.get(source).is_some()
    }

    /// Inserts or replaces the value of `source`.
    pub(crate) fn insert(&mut self, source: u32, value: V) {
        let i = source as usize;
        let old = if i < DENSE {
            if self.dense.len() <= i {
                self.dense.resize_with(i + 1, || None);
            }
            self.dense[i].replace(value)
        } else {
            self.sparse.insert(source, value)
        };
        self.len += usize::from(old.is_none());
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The sources, ascending.
    pub(crate) fn keys(&self) -> impl Iterator<Item = u32> + '_ {
        let dense = self.dense.iter().enumerate();
        dense
            .filter_map(|(i, v)| v.as_ref().map(|_| i as u32))
            .chain(self.sparse.keys().copied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_as_an_ordered_map_on_both_sides_of_the_index() {
        let mut m = BySource::default();
        let mut want = BTreeMap::new();
        for (k, v) in [
            (5u32, 1),
            (u32::MAX, 2),
            (0, 3),
            (1023, 4),
            (1024, 5),
            (5, 6),
            (70_000, 7),
        ] {
            m.insert(k, v);
            want.insert(k, v);
        }
        assert_eq!(m.len(), want.len());
        assert_eq!(
            m.keys().collect::<Vec<_>>(),
            want.keys().copied().collect::<Vec<_>>()
        );
        for k in [0, 1, 5, 6, 1023, 1024, 1025, 70_000, u32::MAX] {
            assert_eq!(m.get(k), want.get(&k), "{k}");
            assert_eq!(m.contains_key(k), want.contains_key(&k));
        }
        *m.get_mut(1024).unwrap() += 10;
        *m.get_mut(5).unwrap() += 10;
        assert!(m.get_mut(6).is_none());
        assert_eq!((m.get(1024), m.get(5)), (Some(&15), Some(&16)));
    }
}
