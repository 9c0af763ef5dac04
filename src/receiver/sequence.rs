//! Per-sender sequence tracking: lost datagrams and the exact number of
//! events they held, duplicates and reordering. Pure logic, bounded memory.
//!
//! A sender numbers its datagrams 0, 1, 2, … and says in each how many
//! events it sent before it (its *first event*). The tracker hands the
//! datagrams on **in sequence order**: a datagram that arrives ahead of a
//! missing one is *held* until the missing one arrives or the tracker gives
//! up on it. Giving up on missing numbers produces a [`Gap`]: how many
//! datagrams were lost and — from the first-event fields on both sides —
//! exactly how many events they held. So every released datagram is
//! preceded by the exact loss before it, and a late datagram that fills a
//! gap in time is released in its place: nothing is counted twice.
//!
//! A datagram
//! - numbered `next` (the next one to release) is released at once;
//! - numbered above `next` is held (*reordered* if a higher number already
//!   arrived);
//! - already released or held is a *duplicate* (discarded), as far as
//!   [`WINDOW`] numbers below `next`;
//! - below `next` and given up on (or older than the window) is *too late*
//!   (discarded: its events were counted lost, so the totals stay exact);
//! - [`MAX_JUMP`] or more above `next` is *implausible* (discarded).
//!
//! The tracker gives up on the lowest missing number when more than
//! [`ReorderLimits::datagrams`] datagrams or [`ReorderLimits::bytes`] bytes are held, when
//! the highest number seen is more than [`WINDOW`] above it, or when the
//! stream ends ([`SequenceTracker::pop`] with `flush`).
//!
//! At any time, for a sender whose first-event fields are consistent:
//! events released + [`SequenceCounts::lost_events`] = the first event of
//! the next datagram to release.

use std::collections::BTreeMap;

/// How many numbers below the next one to release are remembered (to tell a
/// duplicate from a datagram given up on), and how far above it the highest
/// number seen may be before the tracker gives up on the missing ones.
pub const WINDOW: u64 = 1024;
const WORDS: usize = (WINDOW / 64) as usize;

/// The largest forward jump accepted. A bigger jump is not a plausible gap
/// (it would mean billions of lost datagrams): the datagram is refused as
/// invalid and the state is left alone.
pub const MAX_JUMP: u64 = 1 << 32;

/// How much the receiver holds per sender while it waits for a missing
/// datagram ([`ReceiverConfig::reorder`](super::ReceiverConfig::reorder));
/// beyond either limit the missing datagram is given up on (counted lost).
///
/// ```
/// use qtrace::receiver::ReorderLimits;
///
/// let limits = ReorderLimits::default();
/// assert_eq!((limits.datagrams, limits.bytes), (256, 512 << 10));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReorderLimits {
    /// Datagrams held at most (256).
    pub datagrams: usize,
    /// Bytes held at most (512 KiB; one datagram more may be held briefly).
    pub bytes: usize,
}

impl Default for ReorderLimits {
    fn default() -> Self {
        ReorderLimits {
            datagrams: 256,
            bytes: 512 << 10,
        }
    }
}

/// What the tracker decided about one datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Higher than every number seen; `skipped` numbers were jumped over
    /// (they are missing, and may still arrive reordered).
    InOrder {
        /// Numbers between the previous highest and this one.
        skipped: u64,
    },
    /// A missing number arrived after a higher one, in time: accepted.
    Reordered,
    /// Already seen: discard.
    Duplicate,
    /// Given up on, or too old to tell: discard. It was counted lost.
    TooLate,
    /// An implausible jump forward ([`MAX_JUMP`]): discard.
    Implausible,
}

impl Verdict {
    /// Whether the datagram's content will be used.
    pub fn accepted(self) -> bool {
        matches!(self, Verdict::InOrder { .. } | Verdict::Reordered)
    }
}

/// What a datagram says about its place in the sender's event stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    /// Events the sender sent before this datagram.
    pub first_event: u64,
    /// Events in this datagram (0 for a catalog datagram).
    pub events: u64,
    /// The datagram's size (counted against [`ReorderLimits::bytes`] while held).
    pub bytes: usize,
    /// Events the sender had dropped (cumulative, never decreasing).
    pub dropped: u64,
}

/// Loss just before a released datagram.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Gap {
    /// Datagrams given up on.
    pub datagrams: u64,
    /// Events they held, exactly: the released datagram's first event minus
    /// the end of the events released before it.
    pub events: u64,
}

/// Counts kept by a [`SequenceTracker`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SequenceCounts {
    /// Datagrams accepted (in order or reordered).
    pub accepted: u64,
    /// Accepted datagrams that arrived after a higher number.
    pub reordered: u64,
    /// Datagrams seen twice.
    pub duplicates: u64,
    /// Datagrams that arrived after they were given up on, or too old to
    /// tell, discarded.
    pub too_late: u64,
    /// Datagrams with an implausible number, discarded.
    pub implausible: u64,
    /// Datagrams given up on (lost).
    pub lost_datagrams: u64,
    /// Events in the datagrams given up on, exactly.
    pub lost_events: u64,
}

/// The sequence state of one sender: a fixed window of bits and at most
/// [`ReorderLimits`] held datagrams.
#[derive(Clone, Debug)]
pub struct SequenceTracker<T> {
    /// The next number to release.
    next: u64,
    /// One past the highest number accepted (0: none yet).
    top: u64,
    /// Events released or counted lost: the first event the next datagram
    /// should carry.
    end: u64,
    /// The largest drop count released.
    dropped_end: u64,
    /// Bit `n % WINDOW` is set when number `n` (in `next - WINDOW .. next`)
    /// arrived and was released (clear: given up on).
    released: [u64; WORDS],
    held: BTreeMap<u64, (Span, T)>,
    held_bytes: usize,
    limits: ReorderLimits,
    counts: SequenceCounts,
}

impl<T> Default for SequenceTracker<T> {
    fn default() -> Self {
        SequenceTracker::new(ReorderLimits::default())
    }
}

impl<T> SequenceTracker<T> {
    /// A tracker expecting number 0 (whose first event is 0) first.
    pub fn new(limits: ReorderLimits) -> Self {
        SequenceTracker {
            next: 0,
            top: 0,
            end: 0,
            dropped_end: 0,
            released: [0; WORDS],
            held: BTreeMap::new(),
            held_bytes: 0,
            limits,
            counts: SequenceCounts::default(),
        }
    }

    fn bit(&self, n: u64) -> bool {
        let i = (n % WINDOW) as usize;
        self.released[i / 64] >> (i % 64) & 1 == 1
    }

    fn set(&mut self, n: u64, on: bool) {
        let i = (n % WINDOW) as usize;
        let mask = 1u64 << (i % 64);
        if on {
            self.released[i / 64] |= mask;
        } else {
            self.released[i / 64] &= !mask;
        }
    }

    /// Classifies datagram `n`. If it is the next one to release, returns
    /// `Some(gap)`: use it now, after recording `gap` (then call
    /// [`SequenceTracker::pop`], which may release held ones after it).
    /// If it is accepted but must wait, `make` is called to keep it (and
    /// `None` returned); otherwise it is discarded (`None`).
    pub fn observe(
        &mut self,
        n: u64,
        span: Span,
        make: impl FnOnce() -> T,
    ) -> (Verdict, Option<Gap>) {
        let verdict = self.classify(n);
        match verdict {
            Verdict::InOrder { .. } => self.counts.accepted += 1,
            Verdict::Reordered => {
                self.counts.accepted += 1;
                self.counts.reordered += 1;
            }
            Verdict::Duplicate => self.counts.duplicates += 1,
            Verdict::TooLate => self.counts.too_late += 1,
            Verdict::Implausible => self.counts.implausible += 1,
        }
        if !verdict.accepted() {
            return (verdict, None);
        }
        self.top = self.top.max(n + 1);
        if n == self.next {
            return (verdict, Some(self.release(span)));
        }
        self.held_bytes += span.bytes;
        self.held.insert(n, (span, make()));
        (verdict, None)
    }

    /// What [`SequenceTracker::observe`] would decide about number `n`,
    /// changing nothing.
    pub fn classify(&self, n: u64) -> Verdict {
        if n < self.next {
            if self.next - n <= WINDOW && self.bit(n) {
                Verdict::Duplicate
            } else {
                Verdict::TooLate
            }
        } else if n - self.next >= MAX_JUMP {
            Verdict::Implausible
        } else if self.held.contains_key(&n) {
            Verdict::Duplicate
        } else if n < self.top {
            Verdict::Reordered
        } else {
            Verdict::InOrder {
                skipped: n - self.top,
            }
        }
    }

    /// Whether datagram `n` (one [`SequenceTracker::classify`] accepts)
    /// fits its neighbours: its first event and drop count are not below
    /// those of what was released or is held before it (`first + events`
    /// for the first event), nor above those of the held datagram after it.
    /// Counters that go backwards are a forgery or a broken sender: never
    /// believed (FORMAT.md 3.2).
    pub fn consistent(&self, n: u64, span: Span) -> bool {
        let end = span.first_event.saturating_add(span.events);
        if span.first_event < self.end || span.dropped < self.dropped_end {
            return false;
        }
        if let Some((_, (before, _))) = self.held.range(..n).next_back() {
            if span.first_event < before.first_event.saturating_add(before.events)
                || span.dropped < before.dropped
            {
                return false;
            }
        }
        if let Some((_, (after, _))) = self.held.range(n + 1..).next() {
            if end > after.first_event || span.dropped > after.dropped {
                return false;
            }
        }
        true
    }

    /// The highest number held, if any.
    pub fn highest_held(&self) -> Option<u64> {
        self.held.last_key_value().map(|(&n, _)| n)
    }

    /// Releases `next` (which arrived with `span`): the gap before it.
    fn release(&mut self, span: Span) -> Gap {
        let gap = Gap {
            datagrams: 0,
            events: span.first_event.saturating_sub(self.end),
        };
        self.counts.lost_events += gap.events;
        self.end = self.end.max(span.first_event.saturating_add(span.events));
        self.dropped_end = self.dropped_end.max(span.dropped);
        self.set(self.next, true);
        self.next += 1;
        gap
    }

    /// Whether the tracker must give up on the lowest missing number.
    fn over_limits(&self) -> bool {
        self.held.len() > self.limits.datagrams
            || self.held_bytes > self.limits.bytes
            || self.top - self.next > WINDOW
    }

    /// The next held datagram that can go, with the loss before it: the one
    /// numbered `next`, or — when the tracker is over its limits, or
    /// `flush` (the stream ends) — the lowest held one, giving up on the
    /// missing numbers below it. `None` when nothing can go yet.
    pub fn pop(&mut self, flush: bool) -> Option<(Gap, T)> {
        let (&n, _) = self.held.first_key_value()?;
        if n != self.next && !(flush || self.over_limits()) {
            return None;
        }
        let (span, item) = self.held.remove(&n)?;
        self.held_bytes -= span.bytes;
        let skipped = n - self.next;
        if skipped >= WINDOW {
            self.released = [0; WORDS];
        } else {
            for m in self.next..n {
                self.set(m, false);
            }
        }
        self.counts.lost_datagrams += skipped;
        self.next = n;
        let mut gap = self.release(span);
        gap.datagrams = skipped;
        Some((gap, item))
    }

    /// Numbers below the highest accepted that are neither released nor
    /// held: given up on, plus still missing.
    pub fn lost(&self) -> u64 {
        self.counts.lost_datagrams + (self.top - self.next) - self.held.len() as u64
    }

    /// The next number to release.
    pub fn next_expected(&self) -> u64 {
        self.next
    }

    /// The first event the next released datagram should carry: events
    /// released plus events counted lost.
    pub fn events_accounted(&self) -> u64 {
        self.end
    }

    /// Datagrams held, waiting for a missing one.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// The counts so far.
    pub fn counts(&self) -> SequenceCounts {
        self.counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    /// Datagram `n` of a sender whose datagram `i` holds `i % 3` events.
    fn span(n: u64) -> Span {
        // 0 + 1 + 2 per full cycle of three, then 0 or 0 + 1.
        let first = n / 3 * 3 + u64::from(n % 3 == 2);
        Span {
            first_event: first,
            events: n % 3,
            bytes: 40 + 32 * (n % 3) as usize,
            dropped: 0,
        }
    }

    /// Feeds `n`; returns the verdict and what was released, in order.
    fn feed(t: &mut SequenceTracker<u64>, n: u64) -> (Verdict, Vec<(Gap, u64)>) {
        let (v, now) = t.observe(n, span(n), || n);
        let mut out: Vec<(Gap, u64)> = now.map(|g| (g, n)).into_iter().collect();
        while let Some(r) = t.pop(false) {
            out.push(r);
        }
        (v, out)
    }

    fn g(datagrams: u64, events: u64) -> Gap {
        Gap { datagrams, events }
    }

    #[test]
    fn counters_are_judged_against_both_neighbours_without_changing_anything() {
        let sp = |first_event, events, dropped| Span {
            first_event,
            events,
            bytes: 40,
            dropped,
        };
        let mut t = SequenceTracker::default();
        assert!(t.consistent(0, sp(0, 2, 0)));
        t.observe(0, sp(0, 2, 1), || 0u64);
        // 1 is missing; 3 is held with first event 10, dropped 5.
        t.observe(3, sp(10, 2, 5), || 3);
        let (counts, held) = (t.counts(), t.held());
        // Behind what was released (2 events, 1 dropped).
        assert!(!t.consistent(1, sp(1, 1, 1)));
        assert!(!t.consistent(1, sp(2, 1, 0)));
        // Past what is held after it (first event 10, dropped 5).
        assert!(!t.consistent(2, sp(9, 2, 1)));
        assert!(!t.consistent(2, sp(4, 2, 6)));
        // Behind what is held before it.
        assert!(!t.consistent(4, sp(11, 0, 5)));
        assert!(!t.consistent(4, sp(12, 0, 4)));
        assert!(t.consistent(1, sp(2, 3, 1)));
        assert!(t.consistent(2, sp(5, 5, 5)));
        assert!(t.consistent(4, sp(12, 1, 5)));
        // Judging changed nothing; classify neither.
        assert_eq!(t.classify(0), Verdict::Duplicate);
        assert_eq!(t.classify(1), Verdict::Reordered);
        assert_eq!((t.counts(), t.held()), (counts, held));
        assert_eq!(t.highest_held(), Some(3));
    }

    #[test]
    fn in_order_stream_loses_nothing() {
        let mut t = SequenceTracker::default();
        for n in 0..5000 {
            assert_eq!(
                feed(&mut t, n),
                (Verdict::InOrder { skipped: 0 }, vec![(g(0, 0), n)])
            );
        }
        assert_eq!(t.lost(), 0);
        assert_eq!(t.counts().accepted, 5000);
        assert_eq!(t.events_accounted(), span(5000).first_event);
    }

    #[test]
    fn reordered_datagram_fills_its_gap_without_loss() {
        let mut t = SequenceTracker::default();
        assert_eq!(feed(&mut t, 0).1, [(g(0, 0), 0)]);
        assert_eq!(feed(&mut t, 2), (Verdict::InOrder { skipped: 1 }, vec![]));
        assert_eq!(feed(&mut t, 3), (Verdict::InOrder { skipped: 0 }, vec![]));
        assert_eq!(t.lost(), 1);
        assert_eq!(feed(&mut t, 3), (Verdict::Duplicate, vec![]));
        assert_eq!(
            feed(&mut t, 1),
            (
                Verdict::Reordered,
                vec![(g(0, 0), 1), (g(0, 0), 2), (g(0, 0), 3)]
            )
        );
        assert_eq!(feed(&mut t, 1), (Verdict::Duplicate, vec![]));
        assert_eq!(t.lost(), 0);
        assert_eq!(t.counts().lost_events, 0);
    }

    #[test]
    fn given_up_gap_counts_its_events_and_late_arrival_is_discarded() {
        let mut t = SequenceTracker::default();
        feed(&mut t, 0);
        feed(&mut t, 1);
        // 2, 3 and 4 (2 + 0 + 1 events) go missing.
        assert_eq!(feed(&mut t, 5).1, []);
        assert_eq!(t.pop(true), Some((g(3, 3), 5)));
        assert_eq!(t.pop(true), None);
        assert_eq!(feed(&mut t, 3), (Verdict::TooLate, vec![]));
        assert_eq!(feed(&mut t, 5), (Verdict::Duplicate, vec![]));
        let c = t.counts();
        assert_eq!((c.lost_datagrams, c.lost_events, c.too_late), (3, 3, 1));
        assert_eq!(t.events_accounted(), span(6).first_event);
    }

    #[test]
    fn held_limits_force_the_gap_closed() {
        let mut t = SequenceTracker::new(ReorderLimits {
            datagrams: 2,
            bytes: 1 << 20,
        });
        feed(&mut t, 0);
        // 1 is missing; 2 and 3 are held, 4 is one too many.
        assert_eq!(feed(&mut t, 2).1, []);
        assert_eq!(feed(&mut t, 3).1, []);
        assert_eq!(
            feed(&mut t, 4).1,
            [(g(1, 1), 2), (g(0, 0), 3), (g(0, 0), 4)]
        );
        assert_eq!(t.held(), 0);
        let mut t = SequenceTracker::new(ReorderLimits {
            datagrams: 100,
            bytes: 100,
        });
        feed(&mut t, 0);
        // 2 is 104 bytes, more than may be held: 1 is given up on at once.
        assert_eq!(feed(&mut t, 2).1, [(g(1, 1), 2)]);
        assert_eq!(t.held(), 0);
        assert_eq!(t.counts().lost_events, 1);
    }

    #[test]
    fn first_datagram_late_in_the_stream_waits_for_the_earlier_ones() {
        let mut t = SequenceTracker::default();
        assert_eq!(feed(&mut t, 10), (Verdict::InOrder { skipped: 10 }, vec![]));
        assert_eq!(t.lost(), 10);
        assert_eq!(feed(&mut t, 0), (Verdict::Reordered, vec![(g(0, 0), 0)]));
        assert_eq!(t.lost(), 9);
    }

    #[test]
    fn jumps_beyond_the_window_give_up_and_huge_ones_are_refused() {
        let mut t = SequenceTracker::default();
        feed(&mut t, 0);
        assert_eq!(feed(&mut t, u64::MAX).0, Verdict::Implausible);
        assert_eq!(feed(&mut t, MAX_JUMP + 1).0, Verdict::Implausible);
        assert_eq!(t.next_expected(), 1);
        assert_eq!(t.lost(), 0);
        let far = WINDOW + 5;
        assert_eq!(
            feed(&mut t, far),
            (
                Verdict::InOrder { skipped: far - 1 },
                vec![(g(far - 1, span(far).first_event), far)]
            )
        );
        assert_eq!(t.lost(), far - 1);
        assert_eq!(feed(&mut t, 3).0, Verdict::TooLate);
        assert_eq!(feed(&mut t, far).0, Verdict::Duplicate);
    }

    /// The reference model: sets, no window tricks. Datagrams are released
    /// in order; a gap is given up on only at the end (the test keeps the
    /// tracker within its limits).
    #[derive(Default)]
    struct Model {
        top: u64,
        arrived: HashSet<u64>,
    }

    impl Model {
        fn observe(&mut self, n: u64) -> Verdict {
            if self.arrived.contains(&n) {
                Verdict::Duplicate
            } else if n < self.top {
                self.arrived.insert(n);
                Verdict::Reordered
            } else {
                let skipped = n - self.top;
                self.top = n + 1;
                self.arrived.insert(n);
                Verdict::InOrder { skipped }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 256 }))]
        /// Within the window: every verdict as the model says; the released
        /// stream is the arrived numbers in order, each gap carrying exactly
        /// the events of the numbers missing before it.
        #[test]
        fn tracker_matches_the_set_model(
            ops in prop::collection::vec((0u64..40, 0u8..4), 1..300)
        ) {
            let mut t = SequenceTracker::new(ReorderLimits { datagrams: 10_000, bytes: usize::MAX });
            let mut m = Model::default();
            let mut cursor = 0u64;
            let mut released = Vec::new();
            for (jump, kind) in ops {
                let n = match kind {
                    0 => { cursor += jump % 4; cursor }
                    1 => cursor.saturating_sub(jump),
                    2 => { cursor += jump; cursor }
                    _ => cursor.saturating_sub(jump % 8),
                };
                let (v, out) = feed(&mut t, n);
                prop_assert_eq!(v, m.observe(n), "n = {}", n);
                released.extend(out);
                prop_assert_eq!(t.lost(), m.top - m.arrived.len() as u64);
            }
            while let Some(r) = t.pop(true) {
                released.push(r);
            }
            let mut arrived: Vec<u64> = m.arrived.iter().copied().collect();
            arrived.sort();
            prop_assert_eq!(released.iter().map(|r| r.1).collect::<Vec<_>>(), arrived.clone());
            let mut prev = None;
            for (gap, n) in &released {
                let from = prev.map_or(0, |p: u64| p + 1);
                prop_assert_eq!(gap.datagrams, n - from);
                let lost: u64 = (from..*n).map(|i| span(i).events).sum();
                prop_assert_eq!(gap.events, lost);
                prev = Some(*n);
            }
            let c = t.counts();
            prop_assert_eq!(c.accepted, arrived.len() as u64);
            prop_assert_eq!(c.lost_datagrams, m.top - arrived.len() as u64);
            let received: u64 = arrived.iter().map(|&n| span(n).events).sum();
            prop_assert_eq!(received + c.lost_events, span(m.top).first_event);
        }
    }
}
