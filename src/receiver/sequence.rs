//! Per-sender sequence tracking: lost datagrams (gaps), duplicates and
//! reordering within a bounded window. Pure logic, fixed memory.
//!
//! A sender numbers its datagrams 0, 1, 2, … The tracker remembers the
//! highest number seen and, for the [`WINDOW`] numbers below it, which ones
//! arrived. A datagram
//! - above everything seen so far is *in order*; the numbers it skips are
//!   *missing*;
//! - inside the window and missing is *reordered* (late but accepted);
//! - inside the window and already seen is a *duplicate* (discarded);
//! - below the window is *too late* (discarded: it was counted lost when it
//!   left the window, so the totals stay exact).
//!
//! A number that leaves the window without having arrived is *lost* for good.
//! At any time, `lost()` = lost for good + still missing inside the window:
//! every number below the highest seen is either accepted or lost, exactly.

/// How many numbers below the highest one seen are remembered.
pub const WINDOW: u64 = 1024;
const WORDS: usize = (WINDOW / 64) as usize;

/// The largest forward jump accepted from one datagram to the next. A bigger
/// jump is not a plausible gap (it would mean billions of lost datagrams): the
/// datagram is refused as invalid and the state is left alone.
pub const MAX_JUMP: u64 = 1 << 32;

/// What the tracker decided about one sequence number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Higher than every number seen; `skipped` numbers were jumped over
    /// (they are missing, and may still arrive reordered).
    InOrder {
        /// Numbers between the previous highest and this one.
        skipped: u64,
    },
    /// A missing number arrived late, within the window: accept it.
    Reordered,
    /// Already seen: discard.
    Duplicate,
    /// Too old to tell (below the window): discard. It was counted lost.
    TooLate,
    /// An implausible jump forward ([`MAX_JUMP`]): discard.
    Implausible,
}

impl Verdict {
    /// Whether the datagram's content should be used.
    pub fn accepted(self) -> bool {
        matches!(self, Verdict::InOrder { .. } | Verdict::Reordered)
    }
}

/// Counts kept by a [`SequenceTracker`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SequenceCounts {
    /// Datagrams accepted (in order or reordered).
    pub accepted: u64,
    /// Accepted datagrams that arrived after a higher number.
    pub reordered: u64,
    /// Datagrams seen twice (within the window).
    pub duplicates: u64,
    /// Datagrams too old to tell, discarded.
    pub too_late: u64,
    /// Datagrams with an implausible number, discarded.
    pub implausible: u64,
}

/// The sequence state of one sender. 144 bytes, whatever arrives.
#[derive(Clone, Debug)]
pub struct SequenceTracker {
    /// One past the highest number seen (0: none yet).
    next: u64,
    /// Bit `n % WINDOW` is set when number `n` (in `next - WINDOW .. next`) arrived.
    /// Numbers below 0 count as arrived.
    seen: [u64; WORDS],
    lost_for_good: u64,
    counts: SequenceCounts,
}

impl Default for SequenceTracker {
    fn default() -> Self {
        SequenceTracker::new()
    }
}

impl SequenceTracker {
    /// A tracker expecting number 0 first.
    pub fn new() -> Self {
        SequenceTracker {
            next: 0,
            seen: [u64::MAX; WORDS],
            lost_for_good: 0,
            counts: SequenceCounts::default(),
        }
    }

    fn bit(&self, n: u64) -> bool {
        let i = (n % WINDOW) as usize;
        self.seen[i / 64] >> (i % 64) & 1 == 1
    }

    fn set(&mut self, n: u64, on: bool) {
        let i = (n % WINDOW) as usize;
        let mask = 1u64 << (i % 64);
        if on {
            self.seen[i / 64] |= mask;
        } else {
            self.seen[i / 64] &= !mask;
        }
    }

    /// Classifies number `n` and updates the state.
    pub fn observe(&mut self, n: u64) -> Verdict {
        let verdict = if n >= self.next {
            let skipped = n - self.next;
            if skipped >= MAX_JUMP {
                Verdict::Implausible
            } else {
                self.advance_to(n);
                Verdict::InOrder { skipped }
            }
        } else if self.next - n > WINDOW {
            Verdict::TooLate
        } else if self.bit(n) {
            Verdict::Duplicate
        } else {
            self.set(n, true);
            Verdict::Reordered
        };
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
        verdict
    }

    /// Moves the window so that `n` is the highest number, marks the numbers
    /// in between missing and `n` arrived.
    fn advance_to(&mut self, n: u64) {
        let new_next = n + 1;
        if new_next - self.next >= WINDOW {
            // The whole window leaves: everything missing in it is lost.
            self.lost_for_good += self.missing_in_window();
            // Numbers that never even entered the window.
            self.lost_for_good += (new_next - self.next) - WINDOW;
            self.seen = [0; WORDS];
        } else {
            for m in self.next..new_next {
                // `m` enters the window and `m - WINDOW` (same bit) leaves it.
                if !self.bit(m) {
                    self.lost_for_good += 1;
                }
                self.set(m, false);
            }
        }
        self.set(n, true);
        self.next = new_next;
    }

    fn missing_in_window(&self) -> u64 {
        self.seen.iter().map(|w| w.count_zeros() as u64).sum()
    }

    /// Numbers below the highest seen that have not arrived: lost for good
    /// plus still missing inside the window.
    pub fn lost(&self) -> u64 {
        self.lost_for_good + self.missing_in_window()
    }

    /// Numbers that left the window without arriving (cannot arrive any more).
    pub fn lost_for_good(&self) -> u64 {
        self.lost_for_good
    }

    /// One past the highest number seen.
    pub fn next_expected(&self) -> u64 {
        self.next
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

    #[test]
    fn in_order_stream_loses_nothing() {
        let mut t = SequenceTracker::new();
        for n in 0..5000 {
            assert_eq!(t.observe(n), Verdict::InOrder { skipped: 0 });
        }
        assert_eq!(t.lost(), 0);
        assert_eq!(t.counts().accepted, 5000);
    }

    #[test]
    fn gap_duplicate_reorder_late() {
        let mut t = SequenceTracker::new();
        assert_eq!(t.observe(0), Verdict::InOrder { skipped: 0 });
        assert_eq!(t.observe(3), Verdict::InOrder { skipped: 2 });
        assert_eq!(t.lost(), 2);
        assert_eq!(t.observe(3), Verdict::Duplicate);
        assert_eq!(t.observe(1), Verdict::Reordered);
        assert_eq!(t.lost(), 1);
        assert_eq!(t.observe(1), Verdict::Duplicate);
        // Push 2 out of the window: lost for good.
        assert_eq!(
            t.observe(3 + WINDOW),
            Verdict::InOrder {
                skipped: WINDOW - 1
            }
        );
        assert_eq!(t.lost_for_good(), 1);
        assert_eq!(t.lost(), WINDOW);
        assert_eq!(t.observe(2), Verdict::TooLate);
        assert_eq!(t.lost(), WINDOW);
        let c = t.counts();
        assert_eq!(
            (c.accepted, c.reordered, c.duplicates, c.too_late),
            (4, 1, 2, 1)
        );
    }

    #[test]
    fn first_datagram_late_in_the_stream_counts_the_earlier_ones_missing() {
        let mut t = SequenceTracker::new();
        assert_eq!(t.observe(10), Verdict::InOrder { skipped: 10 });
        assert_eq!(t.lost(), 10);
        assert_eq!(t.observe(0), Verdict::Reordered);
        assert_eq!(t.lost(), 9);
    }

    #[test]
    fn huge_jumps_are_refused_and_change_nothing() {
        let mut t = SequenceTracker::new();
        t.observe(0);
        assert_eq!(t.observe(u64::MAX), Verdict::Implausible);
        assert_eq!(t.observe(MAX_JUMP + 1), Verdict::Implausible);
        assert_eq!(t.next_expected(), 1);
        assert_eq!(t.lost(), 0);
        assert_eq!(
            t.observe(MAX_JUMP),
            Verdict::InOrder {
                skipped: MAX_JUMP - 1
            }
        );
        assert_eq!(t.lost(), MAX_JUMP - 1);
    }

    /// The reference model: sets, no window tricks.
    #[derive(Default)]
    struct Model {
        next: u64,
        accepted: HashSet<u64>,
    }

    impl Model {
        fn observe(&mut self, n: u64) -> Verdict {
            if n >= self.next {
                let skipped = n - self.next;
                self.next = n + 1;
                self.accepted.insert(n);
                Verdict::InOrder { skipped }
            } else if self.next - n > WINDOW {
                Verdict::TooLate
            } else if self.accepted.contains(&n) {
                Verdict::Duplicate
            } else {
                self.accepted.insert(n);
                Verdict::Reordered
            }
        }
        fn lost(&self) -> u64 {
            self.next - self.accepted.len() as u64
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 256 }))]
        #[test]
        fn tracker_matches_the_set_model(
            ops in prop::collection::vec((0u64..3000, 0u8..4), 1..400)
        ) {
            let mut t = SequenceTracker::new();
            let mut m = Model::default();
            let mut cursor = 0u64;
            for (jump, kind) in ops {
                // Mostly forward with small gaps, sometimes back, sometimes repeats.
                let n = match kind {
                    0 => { cursor += jump % 4; cursor }
                    1 => cursor.saturating_sub(jump),
                    2 => { cursor += jump; cursor }
                    _ => cursor.saturating_sub(jump % 8),
                };
                prop_assert_eq!(t.observe(n), m.observe(n), "n = {}", n);
                prop_assert_eq!(t.lost(), m.lost());
                prop_assert_eq!(t.next_expected(), m.next);
            }
            prop_assert_eq!(t.counts().accepted, m.accepted.len() as u64);
        }
    }
}
