//! The k-way time merge, once: the heap of the inputs' pending events that
//! [`MergedReader`](super::MergedReader) (and, until it goes, the deprecated
//! `export::MergeByTime`) pull through.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::Event;

/// The pending head of each input and the order they come out in: the
/// smallest time first, ties to the lower input number (so the merge is a
/// stable sort of the inputs' concatenation). Memory: one pending event per
/// input.
#[derive(Debug)]
pub(crate) struct TimeMerge {
    /// The next event of each input, when pulled and not yet yielded.
    heads: Vec<Option<Event>>,
    /// (time, input) of every pending head: the smallest comes out first.
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    /// Inputs to pull from before the heap is consulted (the last first).
    refill: Vec<usize>,
}

impl TimeMerge {
    /// A merge of `n` inputs, none pulled yet.
    pub(crate) fn new(n: usize) -> Self {
        TimeMerge {
            heads: vec![None; n],
            heap: BinaryHeap::with_capacity(n),
            refill: (0..n).rev().collect(),
        }
    }

    /// The next event in time order and the input it came from, or an
    /// input's error at the point it occurred (that input is pulled again on
    /// the next call); `None` once every input has ended. `pull(i)` reads
    /// input `i`'s next item.
    #[inline]
    pub(crate) fn next<E>(
        &mut self,
        mut pull: impl FnMut(usize) -> Option<Result<Event, E>>,
    ) -> Option<(usize, Result<Event, E>)> {
        while let Some(idx) = self.refill.pop() {
            match pull(idx) {
                Some(Ok(e)) => {
                    self.heads[idx] = Some(e);
                    self.heap.push(Reverse((e.time, idx)));
                }
                Some(Err(err)) => {
                    // Pulled again on the next call.
                    self.refill.push(idx);
                    return Some((idx, Err(err)));
                }
                None => {}
            }
        }
        let Reverse((_, idx)) = self.heap.pop()?;
        self.refill.push(idx);
        self.heads[idx].take().map(|e| (idx, Ok(e)))
    }
}
