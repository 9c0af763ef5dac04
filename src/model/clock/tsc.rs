//! The time-stamp counter: whether it may be used, its rate, and the
//! conversion of its ticks to nanoseconds.
//!
//! The rate is measured once per process, against `Instant`
//! (CLOCK_MONOTONIC on Linux), so that it is right the first time:
//! - every measurement **pairs** the counter with CLOCK_MONOTONIC: the counter
//!   is read just before and just after `Instant::now()`, the tightest of 9
//!   tries is kept and its midpoint taken, so a preemption during one try
//!   does not matter, and the pair's uncertainty is known (half the width);
//! - the measurement runs until its **error bound** — the two pairs'
//!   uncertainties over the span between them — is under
//!   [`TARGET_BOUND_PPB`] (0.25 ppm), waiting (asleep) 20 ms, then doubling
//!   up to [`MAX_SPAN`]. On the machine qtrace is measured on a pair is
//!   about 25 ns wide, so this takes 20–80 ms once per process.
//!
//! Until this release the rate came from two single, unpaired reads 20 ms
//! apart: a preemption at either end set the rate, and the clock ran 9.5 to
//! 91 ppm fast. See RELIABILITY.md, "Clocks", for why the rate is not
//! corrected later (the hot path could not afford it).

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The calibration's goal: its error bound, in parts per billion.
pub(crate) const TARGET_BOUND_PPB: u64 = 250;
/// The first span measured.
const FIRST_SPAN: Duration = Duration::from_millis(20);
/// The longest span measured (then the bound reached is accepted).
pub(crate) const MAX_SPAN: Duration = Duration::from_millis(320);

/// Fixed-point conversion from TSC ticks to nanoseconds:
/// `ns = (ticks - origin) * mult >> 32`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TscScale {
    origin: u64,
    mult: u64,
    pub(crate) ticks_per_second: u64,
}

impl TscScale {
    /// Counter value `origin` is time 0; the counter runs at
    /// `ticks_per_second` (at least 1).
    pub(crate) fn new(origin: u64, ticks_per_second: u64) -> Self {
        let tps = ticks_per_second.max(1);
        TscScale {
            origin,
            mult: ((1_000_000_000u128 << 32) / tps as u128) as u64,
            ticks_per_second: tps,
        }
    }

    /// Nanoseconds since the origin at counter value `tsc`.
    #[inline(always)]
    pub(crate) fn ns(&self, tsc: u64) -> u64 {
        // Saturating: a CPU whose counter reads a little behind the one the
        // origin was taken on gives 0, never a time 584 years ahead.
        let ticks = tsc.saturating_sub(self.origin);
        ((ticks as u128 * self.mult as u128) >> 32) as u64
    }

    #[inline(always)]
    pub(crate) fn now(&self) -> u64 {
        self.ns(read())
    }
}

/// The outcome of the process's calibration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Calibration {
    /// Counter ticks per second against CLOCK_MONOTONIC.
    pub(crate) ticks_per_second: u64,
    /// The span measured.
    pub(crate) span: Duration,
    /// The error bound reached, in parts per billion.
    pub(crate) bound_ppb: u64,
}

/// The TSC's calibration, measured once per process; `Err` (why) when the
/// TSC must not be used for time.
pub(crate) fn calibration() -> Result<Calibration, &'static str> {
    static CALIBRATION: OnceLock<Result<Calibration, &'static str>> = OnceLock::new();
    *CALIBRATION.get_or_init(|| usable().map(|()| calibrate()))
}

/// One paired reading: (counter at the midpoint, CLOCK_MONOTONIC, width in
/// ticks). The counter is read before and after `Instant::now()`; the
/// tightest of 9 tries is kept.
pub(crate) fn sample() -> (u64, Instant, u64) {
    let mut best = (u64::MAX, 0, Instant::now());
    for _ in 0..9 {
        let a = read();
        let m = Instant::now();
        let b = read();
        let width = b.wrapping_sub(a);
        if width < best.0 {
            best = (width, a + width / 2, m);
        }
    }
    (best.1, best.2, best.0)
}

/// The rate between two paired readings and its error bound in ppb: the
/// readings' half-widths (in ticks) over the ticks between them.
pub(crate) fn rate_and_bound(
    (t0, m0, w0): (u64, Instant, u64),
    (t1, m1, w1): (u64, Instant, u64),
) -> (u64, u64) {
    let ns = m1.saturating_duration_since(m0).as_nanos().max(1);
    let ticks = t1.wrapping_sub(t0).max(1) as u128;
    let tps = ((ticks * 1_000_000_000) / ns).max(1) as u64;
    let bound = ((w0 + w1) as u128 / 2 * 1_000_000_000 / ticks) as u64;
    (tps, bound)
}

fn calibrate() -> Calibration {
    let first = sample();
    let mut span = FIRST_SPAN;
    loop {
        let wait = (first.1 + span).saturating_duration_since(Instant::now());
        std::thread::sleep(wait);
        let last = sample();
        let (tps, bound) = rate_and_bound(first, last);
        if bound <= TARGET_BOUND_PPB || span >= MAX_SPAN {
            return Calibration {
                ticks_per_second: tps,
                span: last.1.saturating_duration_since(first.1),
                bound_ppb: bound,
            };
        }
        span *= 2;
    }
}

/// Reads the time-stamp counter (0 where there is none; never called then).
#[inline(always)]
pub(crate) fn read() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC has no preconditions on x86_64; it reads a counter
        // register and cannot fault in user mode on Linux (CR4.TSD is clear,
        // which `usable()` confirms before any clock uses this path).
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        0
    }
}

/// Invariant TSC (CPUID 0x8000_0007 EDX bit 8) and the kernel's clock
/// source is `tsc` (so the kernel found it synchronised across CPUs).
fn usable() -> Result<(), &'static str> {
    // Miri cannot execute CPUID or RDTSC: `Clock::fast` falls back to
    // `Instant` there, so the tracer's tests run under Miri unchanged.
    if cfg!(miri) {
        return Err("Miri cannot read the time-stamp counter; use ClockKind::Monotonic");
    }
    #[cfg(target_arch = "x86_64")]
    {
        // `__cpuid` is an unsafe function in Rust 1.80 (the MSRV, checked
        // by scripts/msrv.sh) and a safe one in recent Rust, which calls
        // this block unused.
        #[allow(unused_unsafe)]
        // SAFETY: CPUID exists on every x86_64 CPU, and leaves 0x8000_0000
        // (the highest extended leaf) and 0x8000_0007 (read only when
        // 0x8000_0000 says it exists) are defined by both vendors.
        let (max_ext, power) = unsafe {
            let max_ext = core::arch::x86_64::__cpuid(0x8000_0000).eax;
            let power = if max_ext >= 0x8000_0007 {
                core::arch::x86_64::__cpuid(0x8000_0007).edx
            } else {
                0
            };
            (max_ext, power)
        };
        if max_ext < 0x8000_0007 || power & (1 << 8) == 0 {
            return Err("the CPU's time-stamp counter is not invariant (CPUID 0x80000007 EDX bit 8); use ClockKind::Monotonic");
        }
        let kernel_uses_tsc = std::fs::read_to_string(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        )
        .map(|s| s.trim() == "tsc")
        .unwrap_or(false);
        if !kernel_uses_tsc {
            return Err("the kernel's clock source is not `tsc` (it did not find the counters synchronised); use ClockKind::Monotonic");
        }
        Ok(())
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Err("the time-stamp counter is read only on x86_64; use ClockKind::Monotonic")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsc_scale_converts_ticks_to_ns() {
        let s = TscScale::new(1_000, 2_500_000_000);
        assert_eq!(s.ns(1_000), 0);
        // One second of ticks is one second, to within the 32.32 fixed
        // point's rounding (a few ns per second).
        let second = s.ns(1_000 + 2_500_000_000);
        assert!((999_999_990..=1_000_000_000).contains(&second), "{second}");
        // 25 ticks are 10 ns; the multiplier is rounded down, and so is
        // the product: 9 (never more than the true time).
        assert_eq!(s.ns(1_000 + 25), 9);
        assert_eq!(s.ns(1_000 + 2_500), 999);
        // Ten years of ticks do not overflow.
        let years = s.ns(1_000 + 2_500_000_000 * 86_400 * 3_650);
        assert!(years > 315_000_000_000_000_000, "{years}");
    }

    #[test]
    fn tsc_scale_saturates_before_its_origin() {
        // A counter that reads behind the origin (another CPU's TSC a little
        // behind) gives 0, not a time centuries ahead.
        let s = TscScale::new(1_000, 3_000_000_000);
        assert_eq!(s.ns(999), 0);
        assert_eq!(s.ns(0), 0);
    }

    #[test]
    fn the_bound_is_the_half_widths_over_the_span() {
        let m0 = Instant::now();
        let m1 = m0 + Duration::from_millis(20);
        // 2.3 GHz, pairs 60 and 40 ticks wide, 20 ms apart (46e6 ticks):
        // (60 + 40) / 2 / 46e6 = 1.09 ppm.
        let (tps, bound) = rate_and_bound((1_000, m0, 60), (1_000 + 46_000_000, m1, 40));
        assert_eq!(tps, 2_300_000_000);
        assert_eq!(bound, 1_086);
        // Over 80 ms: a quarter of that.
        let m2 = m0 + Duration::from_millis(80);
        let (_, bound) = rate_and_bound((1_000, m0, 60), (1_000 + 184_000_000, m2, 40));
        assert_eq!(bound, 271);
    }

    #[test]
    fn calibration_reaches_its_bound_or_its_longest_span() {
        if let Ok(c) = calibration() {
            assert!(c.ticks_per_second > 0);
            assert!(
                c.bound_ppb <= TARGET_BOUND_PPB || c.span >= MAX_SPAN,
                "{c:?}"
            );
        }
    }
}
