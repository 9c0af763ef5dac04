//! Merging a circular queue's rings into one trace: sorted by time, then
//! ticket, the newest `capacity` records kept, hoops records where tickets
//! are missing. Made on the fly (an iterator), so that a snapshot of a 1
//! M-event ring copies its events once, out of the rings, and writes them as
//! they are merged (issue 36).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::model::event::Event;
use crate::model::handle::QueueHandle;
use crate::ring::Ticketed;
use crate::storage::save::hoops;

/// Sort key of a merged record: time, ticket, ring, then 0 for a hoops
/// record (before the event it precedes) and 1 for an event.
pub(super) type Key = (u64, u64, usize, u8);

/// One ring's part of a merged trace, in key order: its records with a hoops
/// record before each gap in their tickets, and one after the last for the
/// tickets up to the ring's end (see [`merge`]).
enum Part {
    /// Made on the fly from the records (their times do not go back).
    Lazy {
        /// The ring's records (a buffer [`Merged::into_buffers`] hands back),
        /// those from `at` still to come.
        records: Vec<Ticketed>,
        at: usize,
        ring: usize,
        next: u64,
        /// The trailing hoops record, when the ring ends past its records.
        tail: Option<(Key, Event)>,
        /// The event a hoops record just went before.
        pending: Option<(Key, Event)>,
        queue: QueueHandle,
    },
    /// Made and sorted beforehand (a ring whose times go back somewhere).
    Sorted(std::vec::IntoIter<(Key, Event)>),
}

impl Iterator for Part {
    type Item = (Key, Event);

    fn next(&mut self) -> Option<(Key, Event)> {
        match self {
            Part::Sorted(it) => it.next(),
            Part::Lazy {
                records,
                at,
                ring,
                next,
                tail,
                pending,
                queue,
            } => {
                if let Some(p) = pending.take() {
                    return Some(p);
                }
                let Some(&r) = records.get(*at) else {
                    return tail.take();
                };
                *at += 1;
                let t = r.event.time;
                let event = ((t, r.ticket, *ring, 1), r.event);
                let gap = r.ticket.saturating_sub(*next);
                *next = r.ticket + 1;
                if gap > 0 {
                    *pending = Some(event);
                    return Some(((t, r.ticket, *ring, 0), hoops(t, gap, *queue)));
                }
                Some(event)
            }
        }
    }
}

/// The merged trace of [`merge`]: its records in order (an iterator, so
/// that a snapshot writes them without a second copy) and the number of
/// events kept.
pub(super) struct Merged {
    parts: Vec<Part>,
    /// The part whose head comes next, and that head's key.
    current: Option<(Key, usize)>,
    /// The heads of the other parts still going, smallest key on top.
    heads: BinaryHeap<Reverse<(Key, usize)>>,
    /// Each part's head record.
    events: Vec<Option<Event>>,
    /// Records still to come (events and hoops).
    len: usize,
    /// Records of the current part, after its head, known to come next
    /// (before every other part's head, with no hoops record between):
    /// taken straight from its records, without comparing keys.
    run: usize,
    /// Buffers of rings with no part, or sorted into a new one.
    spare: Vec<Vec<Ticketed>>,
    pub(super) kept: u64,
}

impl Iterator for Merged {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        let (_, p) = self.current.take()?;
        let event = self.events[p].take()?;
        self.len -= 1;
        if self.run > 0 {
            if let Part::Lazy {
                records,
                at,
                next,
                ring,
                ..
            } = &mut self.parts[p]
            {
                let r = records[*at];
                *at += 1;
                *next = r.ticket + 1;
                self.run -= 1;
                self.events[p] = Some(r.event);
                self.current = Some(((r.event.time, r.ticket, *ring, 1), p));
                return Some(event);
            }
        }
        self.current = match self.parts[p].next() {
            Some((key, e)) => {
                self.events[p] = Some(e);
                match self.heads.peek_mut() {
                    // Another part's head is older: it comes next, this one
                    // waits in its place (one sift, no push and pop).
                    Some(mut top) if top.0 < (key, p) => {
                        Some(std::mem::replace(&mut *top, Reverse((key, p))).0)
                    }
                    // A run of one part: the heap is not touched.
                    _ => Some((key, p)),
                }
            }
            None => self.heads.pop().map(|r| r.0),
        };
        self.run = self.run_after_head();
        Some(event)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.len, Some(self.len))
    }
}

impl ExactSizeIterator for Merged {}

impl Merged {
    /// Appends the next records to `out` until it holds `max` (or the trace
    /// ends): what [`Iterator::next`] gives, a run of one ring at a time
    /// copied in one go (no per-record branch; issue 36's snapshot).
    pub(super) fn fill(&mut self, out: &mut Vec<Event>, max: usize) {
        while out.len() < max {
            let room = max - out.len();
            let Some((_, p)) = self.current else {
                return;
            };
            let k = self.run.min(room - 1);
            if k == 0 || !matches!(self.parts[p], Part::Lazy { .. }) {
                // One record the general way.
                out.extend(self.next());
                continue;
            }
            let Part::Lazy {
                records,
                at,
                next,
                ring,
                ..
            } = &mut self.parts[p]
            else {
                unreachable!("matched above")
            };
            // The head, then the run's first `k - 1` records; its `k`th
            // becomes the head.
            out.push(self.events[p].take().expect("the current part has a head"));
            out.extend(records[*at..*at + k - 1].iter().map(|r| r.event));
            let r = records[*at + k - 1];
            *at += k;
            *next = r.ticket + 1;
            self.run -= k;
            self.len -= k;
            self.events[p] = Some(r.event);
            self.current = Some(((r.event.time, r.ticket, *ring, 1), p));
        }
    }

    /// The rings' buffers, for the next snapshot to copy into (a 1 M-event
    /// ring's copy is 40 MiB: allocated afresh, its page faults and unmap
    /// cost as much as the merge and the write together; issue 36).
    pub(super) fn into_buffers(self) -> Vec<Vec<Ticketed>> {
        let mut out = self.spare;
        out.extend(self.parts.into_iter().filter_map(|p| match p {
            Part::Lazy { records, .. } => Some(records),
            Part::Sorted(_) => None,
        }));
        out
    }

    /// How many of the current part's records after its head come next in
    /// a row (see `run`): those with no ticket gap before them and a key
    /// below every other part's head. Exponential then binary search, so a
    /// long run costs O(log run) comparisons once, a short one a few.
    fn run_after_head(&self) -> usize {
        let Some((_, p)) = self.current else {
            return 0;
        };
        let Part::Lazy {
            records,
            at,
            ring,
            next,
            pending: None,
            ..
        } = &self.parts[p]
        else {
            return 0;
        };
        let rest = &records[*at..];
        let bound = self.heads.peek().map(|r| r.0);
        // Holds for a prefix of `rest`: tickets rise by at least one per
        // record, so once one is past `next + i` all later ones are; keys
        // rise (the part is in order).
        let ok = |i: usize| {
            let r = &rest[i];
            r.ticket == *next + i as u64
                && bound.map_or(true, |b| ((r.event.time, r.ticket, *ring, 1), p) < b)
        };
        first_failing(0, rest.len(), ok)
    }
}

/// The first `j` in `from..len` where `holds(j)` fails (`len` if none),
/// `holds` true on a prefix: exponential then binary search, so a long run
/// costs O(log run) comparisons, a short one a few.
pub(super) fn first_failing(from: usize, len: usize, holds: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut step) = (from, 1usize);
    // `holds` is true below `lo`; find an index where it fails.
    let mut hi = loop {
        let j = lo + step - 1;
        if j >= len {
            break len;
        }
        if !holds(j) {
            break j;
        }
        lo = j + 1;
        step *= 2;
    };
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if holds(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Merges the rings' records (each sorted by ticket, with the ticket a
/// trailing hoops record runs to: `Some(attempts)` when saving, `None` for a
/// snapshot, which ends at each ring's newest record) into one trace sorted by
/// time then ticket. Keeps the newest `capacity` records overall; the rest
/// count as lost. Hoops records go before each ring's first kept record (for
/// its tickets before it), at each gap in its tickets, and after its last up
/// to its end. The trace comes out as an iterator: each ring's part is made
/// on the fly and the parts merged (a ring's records whose times go back are
/// sorted first), so a snapshot of a 1 M-event ring copies the events once.
pub(super) fn merge(
    mut rings: Vec<(Vec<Ticketed>, Option<u64>)>,
    capacity: usize,
    queue: QueueHandle,
    now: impl FnOnce() -> u64,
) -> Merged {
    let total: usize = rings.iter().map(|(r, _)| r.len()).sum();
    // For each ring: the end a trailing hoops record runs to, and the time
    // of its newest record (kept or not).
    let ends: Vec<(u64, Option<u64>)> = rings
        .iter()
        .map(|(r, end)| {
            let last = r.last();
            (
                end.unwrap_or_else(|| last.map_or(0, |l| l.ticket + 1)),
                last.map(|l| l.event.time),
            )
        })
        .collect();
    // Whether each ring's times never go back: its ticket order is then its
    // key order (the usual case: a shard has one producer).
    let in_order: Vec<bool> = rings
        .iter()
        .map(|(r, _)| r.windows(2).all(|w| w[0].event.time <= w[1].event.time))
        .collect();
    // Records each ring loses at its start to the cut.
    let mut skip = vec![0usize; rings.len()];
    if total > capacity {
        // The oldest `total - capacity` records (by time, ticket, ring) go.
        let cut = total - capacity;
        if in_order.iter().all(|&o| o) {
            skip = cut_sorted(&rings, cut);
        } else {
            let mut keys: Vec<Key> = rings
                .iter()
                .enumerate()
                .flat_map(|(i, (r, _))| r.iter().map(move |t| key_of(i, t)))
                .collect();
            let (_, &mut first_kept, _) = keys.select_nth_unstable(cut);
            for (i, (r, _)) in rings.iter_mut().enumerate() {
                r.retain(|t| key_of(i, t) >= first_kept);
            }
        }
    }
    let mut now = Some(now);
    let mut now_time = None;
    let mut parts = Vec::with_capacity(rings.len());
    let mut spare = Vec::new();
    let mut len = 0;
    for (i, (((records, _), (end, newest)), skip)) in
        rings.into_iter().zip(ends).zip(skip).enumerate()
    {
        // The gaps (a hoops record each) in what is kept.
        let (mut next, mut gaps) = (0u64, 0usize);
        let mut last_time: Option<u64> = None;
        let kept = &records[skip..];
        match (kept.first(), kept.last()) {
            // Consecutive tickets (a shard's are): no pass over the records,
            // only a gap before the first.
            (Some(f), Some(l)) if l.ticket - f.ticket == kept.len() as u64 - 1 => {
                gaps = usize::from(f.ticket > 0);
                next = l.ticket + 1;
                last_time = Some(l.event.time);
            }
            _ => {
                for r in kept {
                    gaps += usize::from(r.ticket > next);
                    next = r.ticket + 1;
                    last_time = Some(r.event.time);
                }
            }
        }
        let tail = (end > next).then(|| {
            let t = match last_time.or(newest) {
                Some(t) => t,
                None => *now_time.get_or_insert_with(|| (now.take().expect("called once"))()),
            };
            ((t, u64::MAX, i, 0), hoops(t, end - next, queue))
        });
        let n = records.len() - skip + gaps + usize::from(tail.is_some());
        if n == 0 {
            spare.push(records);
            continue;
        }
        len += n;
        let mut lazy = Part::Lazy {
            records,
            at: skip,
            ring: i,
            next: 0,
            tail,
            pending: None,
            queue,
        };
        parts.push(if in_order[i] {
            lazy
        } else {
            // Stable, as every key is distinct.
            let mut sorted: Vec<(Key, Event)> = lazy.by_ref().collect();
            sorted.sort_by_key(|(k, _)| *k);
            if let Part::Lazy { records, .. } = lazy {
                spare.push(records);
            }
            Part::Sorted(sorted.into_iter())
        });
    }
    let mut events = Vec::with_capacity(parts.len());
    let mut heads = BinaryHeap::with_capacity(parts.len());
    for (p, part) in parts.iter_mut().enumerate() {
        let head = part.next();
        events.push(head.map(|(_, e)| e));
        if let Some((key, _)) = head {
            heads.push(Reverse((key, p)));
        }
    }
    let mut merged = Merged {
        parts,
        current: heads.pop().map(|r| r.0),
        heads,
        events,
        len,
        run: 0,
        spare,
        kept: total.min(capacity) as u64,
    };
    merged.run = merged.run_after_head();
    merged
}

/// The sort key of record `t` of ring `i`.
fn key_of(i: usize, t: &Ticketed) -> Key {
    (t.event.time, t.ticket, i, 1)
}

/// For rings each in key order ([`key_of`]): how many records each loses at
/// its start when the `cut` oldest of all go. Binary searches, no copy: the
/// first record kept is the one with exactly `cut` records older than it.
fn cut_sorted(rings: &[(Vec<Ticketed>, Option<u64>)], cut: usize) -> Vec<usize> {
    let lens: Vec<usize> = rings.iter().map(|(r, _)| r.len()).collect();
    cut_by(&lens, |i, j| key_of(i, &rings[i].0[j]), cut)
}

/// [`cut_sorted`] of rings given by their lengths and the key of record `j`
/// of ring `i` (rising in `j`; keys of different rings never equal).
pub(super) fn cut_by(lens: &[usize], key: impl Fn(usize, usize) -> Key, cut: usize) -> Vec<usize> {
    let partition = |i: usize, below: &dyn Fn(usize) -> bool| {
        let (mut lo, mut hi) = (0, lens[i]);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if below(mid) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    };
    let older = |k: Key| -> Vec<usize> {
        (0..lens.len())
            .map(|i| partition(i, &|j| key(i, j) < k))
            .collect()
    };
    for (i, &len) in lens.iter().enumerate() {
        let rank = |j: usize| older(key(i, j)).iter().sum::<usize>();
        let j = partition(i, &|j| rank(j) < cut);
        if j < len && rank(j) == cut {
            return older(key(i, j));
        }
    }
    // `cut` is every record.
    lens.to_vec()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::EventId;

    /// What `merge` gave before it was an iterator: every record and hoops
    /// record keyed, one stable sort.
    fn reference(
        mut rings: Vec<(Vec<Ticketed>, Option<u64>)>,
        capacity: usize,
        queue: QueueHandle,
        now: u64,
    ) -> Vec<Event> {
        let total: usize = rings.iter().map(|(r, _)| r.len()).sum();
        let ends: Vec<(u64, Option<u64>)> = rings
            .iter()
            .map(|(r, end)| {
                let last = r.last();
                (
                    end.unwrap_or_else(|| last.map_or(0, |l| l.ticket + 1)),
                    last.map(|l| l.event.time),
                )
            })
            .collect();
        if total > capacity {
            let mut keys: Vec<Key> = rings
                .iter()
                .enumerate()
                .flat_map(|(i, (r, _))| r.iter().map(move |t| key_of(i, t)))
                .collect();
            let (_, &mut first_kept, _) = keys.select_nth_unstable(total - capacity);
            for (i, (r, _)) in rings.iter_mut().enumerate() {
                r.retain(|t| key_of(i, t) >= first_kept);
            }
        }
        let mut out: Vec<(Key, Event)> = Vec::new();
        for (i, ((records, _), (end, newest))) in rings.iter().zip(ends).enumerate() {
            let (mut next, mut last_time) = (0u64, None);
            for r in records {
                let t = r.event.time;
                if r.ticket > next {
                    out.push(((t, r.ticket, i, 0), hoops(t, r.ticket - next, queue)));
                }
                out.push(((t, r.ticket, i, 1), r.event));
                next = r.ticket + 1;
                last_time = Some(t);
            }
            if end > next {
                let t = last_time.or(newest).unwrap_or(now);
                out.push(((t, u64::MAX, i, 0), hoops(t, end - next, queue)));
            }
        }
        out.sort_by_key(|(k, _)| *k);
        out.into_iter().map(|(_, e)| e).collect()
    }

    /// A small deterministic generator (xorshift).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// Rings of tickets with gaps; times increase in most, go back in some
    /// (`back`), and repeat across rings (ties broken by ticket and ring).
    fn rings(rng: &mut Rng, back: bool) -> Vec<(Vec<Ticketed>, Option<u64>)> {
        (0..1 + rng.next(4))
            .map(|i| {
                let (mut ticket, mut time) = (rng.next(3), rng.next(5));
                let n = rng.next(40);
                let records: Vec<Ticketed> = (0..n)
                    .map(|_| {
                        let t = Ticketed {
                            ticket,
                            event: Event::new(time, EventId(0x0b), i as u32, [ticket, i]),
                        };
                        ticket += 1 + u64::from(rng.next(6) == 0) * rng.next(4);
                        time = if back && rng.next(5) == 0 {
                            time.saturating_sub(rng.next(4))
                        } else {
                            time + rng.next(3)
                        };
                        t
                    })
                    .collect();
                let end = (rng.next(2) == 0).then(|| ticket + rng.next(3));
                (records, end)
            })
            .collect()
    }

    #[test]
    fn merged_on_the_fly_is_the_full_sort() {
        let q = QueueHandle(2);
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut cuts = 0;
        for case in 0..2000 {
            let rs = rings(&mut rng, case % 3 == 0);
            let total: usize = rs.iter().map(|(r, _)| r.len()).sum();
            let capacity = 1 + rng.next(total as u64 + 8) as usize;
            cuts += usize::from(total > capacity);
            let want = reference(rs.clone(), capacity, q, 777);
            let merged = merge(rs.clone(), capacity, q, || 777);
            assert_eq!(merged.len(), want.len(), "case {case}");
            assert_eq!(merged.kept, total.min(capacity) as u64, "case {case}");
            assert_eq!(merged.collect::<Vec<_>>(), want, "case {case}");
            // In batches (runs copied whole), of sizes 1 to 8.
            let mut merged = merge(rs, capacity, q, || 777);
            let (mut got, mut batch) = (Vec::new(), Vec::new());
            loop {
                let max = 1 + rng.next(8) as usize;
                merged.fill(&mut batch, max);
                assert!(batch.len() <= max, "case {case}");
                if batch.is_empty() {
                    break;
                }
                got.append(&mut batch);
            }
            assert_eq!(got, want, "case {case}");
            assert_eq!(merged.len(), 0, "case {case}");
        }
        // The cut (binary searches, or the sort when times go back) ran.
        assert!(cuts > 500, "{cuts} cases cut");
    }
}
