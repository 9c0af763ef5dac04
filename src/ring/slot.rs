//! A ring's storage: one record per 64-byte slot (a sequence word and the
//! record's four words), and the 128-byte padding that keeps a hot counter
//! alone in its cache lines.

use super::RingError;
use crate::model::event::Event;
use crate::sync::{AtomicU64, Ordering};

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
