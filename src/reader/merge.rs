//! The k-way time merge, once: the heap of the inputs' pending events that
//! [`MergedReader`](super::MergedReader) pulls through.

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EventId;

    fn ev(time: u64, source: u32) -> Event {
        Event::new(time, EventId(4), source, [0, 0])
    }

    /// Every item of `inputs` through one merge, in the order it yields them.
    fn merge<E>(inputs: Vec<Vec<Result<Event, E>>>) -> Vec<Result<Event, E>> {
        let mut inputs: Vec<_> = inputs.into_iter().map(|i| i.into_iter()).collect();
        let mut merge = TimeMerge::new(inputs.len());
        std::iter::from_fn(|| merge.next(|idx| inputs[idx].next()).map(|(_, item)| item)).collect()
    }

    fn ok(events: Vec<Event>) -> Vec<Result<Event, ()>> {
        events.into_iter().map(Ok).collect()
    }

    #[test]
    fn merge_interleaves_and_breaks_ties_by_input() {
        let a = vec![ev(1, 0), ev(3, 0), ev(3, 0), ev(9, 0)];
        let b = vec![ev(0, 1), ev(3, 1), ev(10, 1)];
        let got: Vec<(u64, u32)> = merge(vec![ok(a), ok(b), ok(vec![])])
            .into_iter()
            .map(|e| e.map(|e| (e.time, e.source)).unwrap())
            .collect();
        assert_eq!(
            got,
            [(0, 1), (1, 0), (3, 0), (3, 0), (3, 1), (9, 0), (10, 1)]
        );
    }

    #[test]
    fn merge_passes_errors_through_in_place() {
        let a: Vec<Result<Event, &str>> = vec![Ok(ev(1, 0)), Err("bad"), Ok(ev(4, 0))];
        let b: Vec<Result<Event, &str>> = vec![Ok(ev(2, 1))];
        let got: Vec<Result<u64, &str>> = merge(vec![a, b])
            .into_iter()
            .map(|r| r.map(|e| e.time))
            .collect();
        assert_eq!(got, [Ok(1), Err("bad"), Ok(2), Ok(4)]);
    }

    proptest::proptest! {
        #[test]
        fn merge_equals_stable_sort(inputs in proptest::collection::vec(
            proptest::collection::vec(0u64..50, 0..20), 0..5)
        ) {
            let streams: Vec<Vec<Event>> = inputs
                .iter()
                .enumerate()
                .map(|(i, times)| {
                    let mut t = times.clone();
                    t.sort();
                    t.into_iter().map(|x| ev(x, i as u32)).collect()
                })
                .collect();
            let mut expected: Vec<Event> = streams.iter().flatten().copied().collect();
            expected.sort_by_key(|e| (e.time, e.source));
            let got: Vec<Event> = merge(streams.into_iter().map(ok).collect())
                .into_iter()
                .map(Result::unwrap)
                .collect();
            proptest::prop_assert_eq!(got, expected);
        }
    }
}
