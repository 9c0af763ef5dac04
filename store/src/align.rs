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
//! that queues its events for its whole period, that period); the `bound`
//! reported is how far the kept minima lie from the line (the envelope's
//! own scatter).

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
    bound: i64,
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
        self.bound = xy
            .iter()
            .map(|&(x, y)| (y - (a + slope * x)) as i64)
            .max()
            .unwrap_or(0);
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

    /// How far the kept minima lie above the fitted line, at most (ns).
    pub fn bound_ns(&self) -> Option<i64> {
        self.fit.map(|_| self.bound)
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
        assert!(a.bound_ns().unwrap() >= 70_000_000);
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
