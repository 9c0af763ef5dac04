//! Samples of a duration and their summary: count, min, mean, median, p99, max, and a
//! power-of-two histogram.

/// Durations (nanoseconds) collected for one measure.
///
/// ```
/// use qtrace::analysis::Samples;
///
/// let mut s = Samples::default();
/// for ns in [300, 100, 200] {
///     s.push(ns);
/// }
/// assert_eq!(s.len(), 3);
/// assert_eq!(s.summary().mean, 200);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Samples {
    values: Vec<u64>,
}

/// What a set of samples says.
///
/// ```
/// use qtrace::analysis::{Samples, Summary};
///
/// let mut s = Samples::default();
/// s.push(10);
/// s.push(30);
/// let sum: Summary = s.summary();
/// assert_eq!((sum.count, sum.min, sum.mean, sum.p50, sum.p99, sum.max, sum.total), (2, 10, 20, 10, 30, 30, 40));
/// assert_eq!(Samples::default().summary(), Summary::default());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// How many samples.
    pub count: u64,
    /// The smallest, in ns (0 when there is none).
    pub min: u64,
    /// The mean, in ns, rounded down.
    pub mean: u64,
    /// The median, in ns (nearest rank: the smallest value that at least
    /// half of the samples do not exceed).
    pub p50: u64,
    /// The 99th percentile, in ns (nearest rank: the smallest value that at
    /// least 99% of the samples do not exceed).
    pub p99: u64,
    /// The largest, in ns.
    pub max: u64,
    /// Their sum, in ns.
    pub total: u128,
}

impl Samples {
    /// Adds one sample.
    pub fn push(&mut self, ns: u64) {
        self.values.push(ns);
    }

    /// How many samples.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Count, min, mean, median, p99 and max.
    ///
    /// ```
    /// use qtrace::analysis::Samples;
    ///
    /// let mut s = Samples::default();
    /// for v in 1..=100 {
    ///     s.push(v);
    /// }
    /// let sum = s.summary();
    /// assert_eq!((sum.count, sum.min, sum.mean, sum.p50, sum.p99, sum.max), (100, 1, 50, 50, 99, 100));
    /// ```
    pub fn summary(&self) -> Summary {
        if self.values.is_empty() {
            return Summary::default();
        }
        // Two selections, not a sort: O(n) (a report summarises every
        // measure, some of them with one sample per event).
        let mut v = self.values.clone();
        let n = v.len();
        let (mut min, mut max, mut total) = (u64::MAX, 0, 0u128);
        for &x in &v {
            min = min.min(x);
            max = max.max(x);
            total += u128::from(x);
        }
        // Nearest rank: ceil(0.99 n), 1-based.
        let rank = (n * 99).div_ceil(100).max(1);
        let median = n.div_ceil(2).max(1);
        let (below, &mut p99, _) = v.select_nth_unstable(rank - 1);
        // What precedes rank is not above it, so the median (never past
        // rank) is among them, or is p99 itself.
        let p50 = if median < rank {
            *below.select_nth_unstable(median - 1).1
        } else {
            p99
        };
        Summary {
            count: n as u64,
            min,
            mean: (total / n as u128) as u64,
            p50,
            p99,
            max,
            total,
        }
    }

    /// Counts per power-of-two bucket: `(upper bound in ns, count)`, bucket
    /// `b` holding the samples in `[2^(b-1), 2^b)` (bucket 0: the zeros), from
    /// the first non-empty bucket to the last.
    ///
    /// ```
    /// use qtrace::analysis::Samples;
    ///
    /// let mut s = Samples::default();
    /// for v in [0, 1, 5, 6, 7] {
    ///     s.push(v);
    /// }
    /// assert_eq!(s.histogram(), [(1, 1), (2, 1), (4, 0), (8, 3)]);
    /// ```
    pub fn histogram(&self) -> Vec<(u64, u64)> {
        let mut counts = [0u64; 65];
        for &v in &self.values {
            let b = if v == 0 {
                0
            } else {
                64 - v.leading_zeros() as usize
            };
            counts[b] += 1;
        }
        let Some(first) = counts.iter().position(|&c| c > 0) else {
            return Vec::new();
        };
        let last = counts.iter().rposition(|&c| c > 0).unwrap_or(first);
        (first..=last)
            .map(|b| {
                let upper = if b >= 64 { u64::MAX } else { 1u64 << b };
                (upper, counts[b])
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The selections give the nearest ranks of the sorted samples, for
    /// every count from 1 to 300 (duplicates included).
    #[test]
    fn summary_ranks_match_the_sorted_samples() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for n in 1..=300usize {
            let mut s = Samples::default();
            let mut all = Vec::new();
            for _ in 0..n {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let v = x % 97;
                s.push(v);
                all.push(v);
            }
            all.sort_unstable();
            let sum = s.summary();
            let total: u128 = all.iter().map(|&v| u128::from(v)).sum();
            assert_eq!(sum.count, n as u64);
            assert_eq!((sum.min, sum.max, sum.total), (all[0], all[n - 1], total));
            assert_eq!(sum.p50, all[n.div_ceil(2) - 1], "n = {n}");
            assert_eq!(sum.p99, all[(n * 99).div_ceil(100) - 1], "n = {n}");
        }
    }
}
