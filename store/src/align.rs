//! A sender's clock against the receiver's (issue #22 item 6): the offset
//! θ(t) such that an event the sender stamped `u` (its Unix-time reading:
//! clock origin + time) happened at `u + θ(u)` on the receiver's clock.
//!
//! Each datagram gives one observation: its arrival on the receiver's clock
//! minus the sender's stamp of its newest event, `θ + d`, where `d ≥ 0` is
//! how long that event waited (in the sender's queue until the datagram
//! left, then in the network and the receiver's socket). The smallest `d`s
//! are the most truthful (a **minimum-delay filter**): per window of
//! [`WINDOW_NS`] of sender time the smallest observation is kept, and a
//! line under the kept minima of the last [`WINDOWS`] windows gives the
//! offset and the drift, re-estimated at every window. The line is the
//! edge of the minima's **lower convex hull** above their mean time (the
//! line under every minimum that is closest to them on the whole, as the
//! linear-programming estimators of network clock synchronisation take
//! it): a window whose datagrams were all late (a receiver not scheduled
//! for a while) lies above the hull and moves nothing, where a
//! least-squares line would tilt towards it. Its slope is held within
//! ±[`MAX_DRIFT_PPM`], so that while few windows are kept one late window
//! cannot pass for a drift. The estimate is late by the smallest delay the
//! windows saw (it cannot be seen from one side: at best the time a
//! datagram takes through the loopback, tens of µs; at worst, with a sender
//! that queues its events for its whole period, that period). The `bound`
//! reported is the **median distance of the kept minima above the line**:
//! how far the quickest datagram of a typical window lies from it, the
//! noise the line is fitted through (a line under minima that scatter by
//! that much is within about that much of their floor); null while fewer
//! than two windows are kept. It is not a guarantee: the minimum one-way
//! delay itself cannot be seen from one side. (It was the largest distance
//! until this release: one late window, or a receiver behind its socket
//! buffer, made it seconds.) Arrival times are the kernel's
//! (`StreamSink::arrival`), so a receiver slow to read its socket adds
//! nothing.

use std::collections::VecDeque;

/// Sender time per window of the minimum-delay filter: 100 ms.
pub const WINDOW_NS: i64 = 100_000_000;

/// Windows the line is fitted over: the last 64 (6.4 s of sender time), so
/// a drift shows within seconds and old windows do not pin the line.
pub const WINDOWS: usize = 64;

/// The largest drift the line may show, in ppm either way: 1000 (1 ms a
/// second). Quartz clocks stay within ±100 ppm; a steeper line through
/// few windows is a late window, not a clock.
pub const MAX_DRIFT_PPM: f64 = 1000.0;

/// The estimate for one sender stream.
#[derive(Clone, Debug, Default)]
pub struct Align {
    /// Kept minima: (sender stamp, arrival − stamp), one per window.
    minima: VecDeque<(i64, i64)>,
    /// The window being filled: its index and its minimum so far.
    current: Option<(i64, (i64, i64))>,
    /// The fitted line: offset at `t0`, and slope (ns per ns).
    fit: Option<(i64, f64, f64)>,
    bound: Option<i64>,
}

impl Align {
    /// One datagram: its newest event's stamp (sender Unix ns) and its
    /// arrival (receiver Unix ns).
    pub fn observe(&mut self, stamp: i64, arrival: i64) {
        let delta = arrival.saturating_sub(stamp);
        let w = stamp.div_euclid(WINDOW_NS);
        match &mut self.current {
            Some((cw, min)) if *cw == w => {
                if delta < min.1 {
                    *min = (stamp, delta);
                }
                if self.fit.is_none() {
                    self.refit();
                }
            }
            _ => {
                if let Some((_, min)) = self.current.take() {
                    self.minima.push_back(min);
                    if self.minima.len() > WINDOWS {
                        self.minima.pop_front();
                    }
                }
                self.current = Some((w, (stamp, delta)));
                self.refit();
            }
        }
    }

    /// Fits the line under the kept minima and the current window's.
    fn refit(&mut self) {
        let points: Vec<(i64, i64)> = self
            .minima
            .iter()
            .copied()
            .chain(self.current.map(|(_, m)| m))
            .collect();
        let Some(&(t0, _)) = points.first() else {
            return;
        };
        // Times relative to the first minimum (sender time only grows from
        // window to window: the points are in order).
        let xy: Vec<(f64, f64)> = points
            .iter()
            .map(|&(t, d)| ((t - t0) as f64, d as f64))
            .collect();
        let max_slope = MAX_DRIFT_PPM * 1e-6;
        let slope = hull_slope(&xy).clamp(-max_slope, max_slope);
        // The line with that slope through the lowest minimum: under all.
        let a = xy
            .iter()
            .map(|&(x, y)| y - slope * x)
            .fold(f64::INFINITY, f64::min);
        let mut above: Vec<i64> = xy
            .iter()
            .map(|&(x, y)| (y - (a + slope * x)).round() as i64)
            .collect();
        above.sort_unstable();
        self.bound = (above.len() >= 2).then(|| median(&above));
        self.fit = Some((t0, a, slope));
    }

    /// The offset at sender stamp `stamp`, once a datagram was seen.
    pub fn offset_at(&self, stamp: i64) -> Option<i64> {
        let (t0, a, slope) = self.fit?;
        Some((a + slope * (stamp - t0) as f64).round() as i64)
    }

    /// The drift in ppm (parts per million of sender time), once fitted.
    pub fn drift_ppm(&self) -> Option<f64> {
        self.fit.map(|(_, _, s)| s * 1e6)
    }

    /// The median distance of the kept minima above the fitted line (ns),
    /// once two windows are kept.
    pub fn bound_ns(&self) -> Option<i64> {
        self.fit.and(self.bound)
    }
}

/// The median of sorted `v` (the mean of the middle two, rounded down,
/// for an even length); 0 for none.
fn median(v: &[i64]) -> i64 {
    match v.len() {
        0 => 0,
        n if n % 2 == 1 => v[n / 2],
        n => v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1]) / 2,
    }
}

/// The slope of the lower convex hull's edge above the points' mean time
/// (0 for fewer than two points). `xy` is in increasing `x`.
fn hull_slope(xy: &[(f64, f64)]) -> f64 {
    // Andrew's monotone chain, lower half: drop the middle point of every
    // turn that is not counter-clockwise.
    let mut hull: Vec<(f64, f64)> = Vec::with_capacity(xy.len());
    for &p in xy {
        while let [.., o, a] = hull[..] {
            if (a.0 - o.0) * (p.1 - o.1) - (a.1 - o.1) * (p.0 - o.0) <= 0.0 {
                hull.pop();
            } else {
                break;
            }
        }
        hull.push(p);
    }
    let mean = xy.iter().map(|p| p.0).sum::<f64>() / xy.len().max(1) as f64;
    hull.windows(2)
        .find(|e| e[1].0 >= mean && e[1].0 > e[0].0)
        .or_else(|| hull.windows(2).rev().find(|e| e[1].0 > e[0].0))
        .map_or(0.0, |e| (e[1].1 - e[0].1) / (e[1].0 - e[0].0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shifted_drifting_clock_is_found_under_noisy_delays() {
        let shift = -3_000_000_000i64; // the sender's clock is 3 s ahead
        let ppm = 50.0;
        let mut a = Align::default();
        // 5 s of datagrams every 1 ms; delays 40 µs + up to 2 ms of
        // queueing, a pseudo-random spread.
        let mut x = 12345u64;
        for i in 0..5000i64 {
            let real = 1_700_000_000_000_000_000 + i * 1_000_000;
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let delay = 40_000 + (x >> 33) as i64 % 2_000_000;
            let elapsed = (i * 1_000_000) as f64;
            let stamp = real - shift + (elapsed * ppm * 1e-6) as i64;
            a.observe(stamp, real + delay);
        }
        let stamp =
            1_700_000_000_000_000_000 + 4_999_000_000 - shift + (4_999_000_000f64 * 50e-6) as i64;
        let truth = 1_700_000_000_000_000_000 + 4_999_000_000 - stamp;
        let est = a.offset_at(stamp).unwrap();
        assert!((est - truth - 40_000).abs() < 100_000, "{est} vs {truth}");
        let drift = a.drift_ppm().unwrap();
        assert!((drift + 50.0).abs() < 20.0, "{drift}");
    }

    /// One datagram a millisecond from a sender whose clock is `shift` ns
    /// behind and runs `ppm` fast, each waiting 40 µs, except those of
    /// the windows in `late`, which wait 70 ms more (a receiver that was
    /// not scheduled); returns the estimator and the error of the offset it
    /// gives for each datagram as it comes (estimate − truth − 40 µs).
    fn stream(ms: i64, ppm: f64, late: &[i64]) -> (Align, Vec<i64>) {
        let shift = 2_000_000_000i64;
        let mut a = Align::default();
        let mut errors = Vec::new();
        for i in 0..ms {
            let real = 1_700_000_000_000_000_000 + i * 1_000_000;
            let stamp = real - shift + ((i * 1_000_000) as f64 * ppm * 1e-6) as i64;
            let wait = if late.contains(&(i / 100)) {
                70_040_000
            } else {
                40_000
            };
            a.observe(stamp, real + wait);
            errors.push(a.offset_at(stamp).unwrap() - (real - stamp) - 40_000);
        }
        (a, errors)
    }

    #[test]
    fn a_window_of_late_datagrams_does_not_tilt_the_line() {
        // Window 3 of 10 (300-399 ms) all 70 ms late: the datagrams of that
        // window are aligned with what came before them (their own window's
        // minimum is late), every later one as if it had not happened.
        let (a, errors) = stream(1000, 0.0, &[3]);
        for (i, e) in errors.iter().enumerate() {
            let allowed = if (300..400).contains(&i) {
                70_000_000
            } else {
                1_000
            };
            assert!(e.abs() <= allowed, "datagram {i}: error {e} ns");
        }
        assert!(a.drift_ppm().unwrap().abs() < 1.0, "{:?}", a.drift_ppm());
        // One late window of ten does not move the median either.
        assert!(a.bound_ns().unwrap() <= 1_000, "{:?}", a.bound_ns());
    }

    #[test]
    fn while_few_windows_are_kept_a_late_one_is_not_taken_for_drift() {
        // The second window late: two windows only, whose line would be
        // 700 ppm steep... held within MAX_DRIFT_PPM, and the third
        // window's datagrams aligned within 0.2 ms.
        let (a, errors) = stream(300, 50.0, &[1]);
        for (i, e) in errors.iter().enumerate().skip(200) {
            assert!(e.abs() <= 200_000, "datagram {i}: error {e} ns");
        }
        assert!(a.drift_ppm().unwrap().abs() <= MAX_DRIFT_PPM);
    }

    /// A pseudo-random generator (an LCG's high bits): `next() % n`.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> i64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) as i64
        }
    }

    const T0: i64 = 1_700_000_000_000_000_000;

    #[test]
    fn a_receiver_that_is_sometimes_late_leaves_offset_drift_and_bound_small() {
        // One clock (θ = 0), 10 s of a datagram every 2 ms: each waits
        // 20 µs + up to 150 µs; in a third of the 100 ms windows (chosen at
        // random) the receiver was not scheduled, and every datagram of the
        // window waited 5–80 ms more.
        let mut r = Lcg(7);
        let mut a = Align::default();
        let mut late = false;
        for i in 0..5000i64 {
            let stamp = T0 + i * 2_000_000;
            if i % 50 == 0 {
                late = r.next() % 3 == 0;
            }
            let mut wait = 20_000 + r.next() % 150_000;
            if late {
                wait += 5_000_000 + r.next() % 75_000_000;
            }
            a.observe(stamp, stamp + wait);
        }
        let err = a.offset_at(T0 + 9_998_000_000).unwrap();
        assert!((0..=170_000).contains(&err), "offset error {err} ns");
        let drift = a.drift_ppm().unwrap();
        assert!(drift.abs() < 2.0, "drift {drift} ppm");
        let bound = a.bound_ns().unwrap();
        eprintln!("late receiver: error {err} ns, drift {drift:.2} ppm, bound {bound} ns");
        assert!((0..=170_000).contains(&bound), "bound {bound} ns");
    }

    #[test]
    fn a_sender_that_batches_for_its_period_is_aligned_by_its_last_datagrams() {
        // One clock; an event logged every 1 ms, sent every 250 ms (the
        // UDP queue's default period; the task wakes 0–3 ms late) in
        // datagrams of 40 events, oldest first: a datagram's newest event
        // waited up to the whole period, only each round's last one is
        // fresh (≤ 1 ms). 20 µs through the loopback.
        let mut r = Lcg(11);
        let mut a = Align::default();
        let mut next_event = T0;
        for round in 1..=40i64 {
            let send = T0 + round * 250_000_000 + r.next() % 3_000_000;
            let mut queued = Vec::new();
            while next_event <= send {
                queued.push(next_event);
                next_event += 1_000_000;
            }
            for chunk in queued.chunks(40) {
                let newest = *chunk.last().unwrap();
                a.observe(newest, send + 20_000);
            }
        }
        let last = next_event - 1_000_000;
        let err = a.offset_at(last).unwrap();
        // Late by at most the last event's wait (1 ms) and the loopback.
        assert!((0..=1_100_000).contains(&err), "offset error {err} ns");
        let drift = a.drift_ppm().unwrap();
        assert!(drift.abs() < 20.0, "drift {drift} ppm");
        // Most windows hold no round's last datagram: their quickest waited
        // ms (here 10.5), and the median says so.
        let bound = a.bound_ns().unwrap();
        eprintln!("batching sender: error {err} ns, drift {drift:.2} ppm, bound {bound} ns");
        assert!(bound > 1_000_000, "bound {bound} ns");
    }

    #[test]
    fn the_bound_is_the_median_distance_above_the_line_and_needs_two_windows() {
        let mut a = Align::default();
        // Windows of 100 ms, minima 0, 30, 0, 10 µs above θ = 5 ms.
        a.observe(T0, T0 + 5_000_000);
        assert_eq!(a.bound_ns(), None);
        a.observe(T0 + 100_000_000, T0 + 100_000_000 + 5_030_000);
        a.observe(T0 + 200_000_000, T0 + 200_000_000 + 5_000_000);
        a.observe(T0 + 300_000_000, T0 + 300_000_000 + 5_010_000);
        // The line through the two at 0; above it 0, 0, 10, 30: median 5.
        assert_eq!(a.drift_ppm(), Some(0.0));
        assert_eq!(a.bound_ns(), Some(5_000));
        assert_eq!(a.offset_at(T0 + 300_000_000), Some(5_000_000));
        assert_eq!(median(&[1, 2, 9]), 2);
        assert_eq!(median(&[]), 0);
    }

    #[test]
    fn the_hull_edge_above_the_mean_time_gives_the_slope() {
        // Under (0,0) (1,5) (2,1) (3,2): the hull is (0,0)-(2,1)-(3,2); the
        // mean time 1.5 lies under the edge (0,0)-(2,1).
        let pts = [(0.0, 0.0), (1.0, 5.0), (2.0, 1.0), (3.0, 2.0)];
        assert_eq!(hull_slope(&pts), 0.5);
        assert_eq!(hull_slope(&pts[..1]), 0.0);
        assert_eq!(hull_slope(&[]), 0.0);
    }
}
