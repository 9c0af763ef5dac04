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
//! line through the kept minima (least squares over the last [`WINDOWS`]
//! windows) gives the offset and the drift, re-estimated at every window.
//! The estimate is late by the smallest delay the windows saw (it cannot
//! be seen from one side: at best the time a datagram takes through the
//! loopback, tens of µs; at worst, with a sender that queues its events
//! for its whole period, that period); the `bound` reported is how far the
//! kept minima lie from the line (the envelope's own scatter).

use std::collections::VecDeque;

/// Sender time per window of the minimum-delay filter: 100 ms.
pub const WINDOW_NS: i64 = 100_000_000;

/// Windows the line is fitted over: the last 64 (6.4 s of sender time), so
/// a drift shows within seconds and old windows do not pin the line.
pub const WINDOWS: usize = 64;

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

    /// Fits the line through the kept minima and the current window's.
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
        if points.len() < 3 {
            let min = points.iter().map(|p| p.1).min().unwrap_or(0);
            self.fit = Some((t0, min as f64, 0.0));
            self.bound = points.iter().map(|p| p.1 - min).max().unwrap_or(0);
            return;
        }
        let n = points.len() as f64;
        let xs: Vec<f64> = points.iter().map(|p| (p.0 - t0) as f64).collect();
        let ys: Vec<f64> = points.iter().map(|p| p.1 as f64).collect();
        let mx = xs.iter().sum::<f64>() / n;
        let my = ys.iter().sum::<f64>() / n;
        let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
        let sxy: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
        let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
        let mut a = my - slope * mx;
        // The line under every kept minimum (the lower envelope): lowered
        // by the largest amount a minimum lies below it.
        let below = xs
            .iter()
            .zip(&ys)
            .map(|(x, y)| a + slope * x - y)
            .fold(0.0f64, f64::max);
        a -= below;
        self.bound = xs
            .iter()
            .zip(&ys)
            .map(|(x, y)| (y - (a + slope * x)) as i64)
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
}
