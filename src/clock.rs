//! Clock sources. Timestamps are 64-bit nanoseconds since the clock's origin:
//! they wrap after 584 years, not after S.Ha.R.K.'s 71 minutes.
//!
//! - [`Clock::fast`] (the default): the CPU's time-stamp counter scaled to
//!   nanoseconds when the TSC is invariant and the kernel itself trusts it as its
//!   clock source; otherwise [`Clock::monotonic`]. Reading the TSC costs
//!   about 12 ns against 30 ns for `Instant::now()` on the machine qtrace is
//!   measured on (see BENCHMARKS.md). `QTRACE_NO_TSC=1` forces the fallback.
//! - [`Clock::monotonic`]: `std::time::Instant`, correct everywhere.
//! - [`Clock::manual`]: a clock that only moves when told, for deterministic
//!   tests.
//!
//! ```
//! use qtrace::clock::{Clock, ManualClock};
//! let manual = ManualClock::new(100);
//! let clock = Clock::manual(&manual);
//! assert_eq!(clock.now(), 100);
//! manual.advance(5);
//! assert_eq!(clock.now(), 105);
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Which source a [`Clock`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockKind {
    /// The CPU's time-stamp counter, scaled to nanoseconds.
    Tsc,
    /// The operating system's monotonic clock (`Instant`).
    Monotonic,
    /// A manual clock.
    Manual,
}

impl ClockKind {
    /// A short name for headers and reports.
    pub fn name(self) -> &'static str {
        match self {
            ClockKind::Tsc => "tsc",
            ClockKind::Monotonic => "monotonic",
            ClockKind::Manual => "manual",
        }
    }
}

/// A clock that the tracer reads once per recorded event.
#[derive(Clone, Debug)]
pub struct Clock {
    source: Source,
    origin_unix_ns: u64,
}

#[derive(Clone, Debug)]
enum Source {
    Tsc(TscScale),
    Monotonic(Instant),
    Manual(Arc<AtomicU64>),
}

/// Fixed-point conversion from TSC ticks to nanoseconds:
/// `ns = (ticks - origin) * mult >> 32`.
#[derive(Clone, Copy, Debug)]
struct TscScale {
    origin: u64,
    mult: u64,
    ticks_per_second: u64,
}

impl TscScale {
    /// Counter value `origin` is time 0; the counter runs at
    /// `ticks_per_second` (at least 1).
    fn new(origin: u64, ticks_per_second: u64) -> Self {
        let tps = ticks_per_second.max(1);
        TscScale {
            origin,
            mult: ((1_000_000_000u128 << 32) / tps as u128) as u64,
            ticks_per_second: tps,
        }
    }

    /// Nanoseconds since the origin at counter value `tsc`.
    #[inline(always)]
    fn ns(&self, tsc: u64) -> u64 {
        // Saturating: a CPU whose counter reads a little behind the one the
        // origin was taken on gives 0, never a time 584 years ahead.
        let ticks = tsc.saturating_sub(self.origin);
        ((ticks as u128 * self.mult as u128) >> 32) as u64
    }

    #[inline(always)]
    fn now(&self) -> u64 {
        self.ns(tsc::read())
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::fast()
    }
}

fn unix_now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

impl Clock {
    /// The fastest correct clock on this machine: the TSC when it is usable
    /// (invariant, and the kernel's own clock source), otherwise `Instant`.
    pub fn fast() -> Clock {
        match tsc::ticks_per_second() {
            Some(tps) => Clock {
                source: Source::Tsc(TscScale::new(tsc::read(), tps)),
                origin_unix_ns: unix_now_ns(),
            },
            None => Clock::monotonic(),
        }
    }

    /// The operating system's monotonic clock, origin now.
    pub fn monotonic() -> Clock {
        Clock {
            source: Source::Monotonic(Instant::now()),
            origin_unix_ns: unix_now_ns(),
        }
    }

    /// A clock that reads `manual`; its origin is the Unix epoch.
    pub fn manual(manual: &ManualClock) -> Clock {
        Clock {
            source: Source::Manual(manual.0.clone()),
            origin_unix_ns: 0,
        }
    }

    /// Nanoseconds since the origin.
    ///
    /// The TSC case is inline (one compare of the source, `rdtsc`, a
    /// subtraction that saturates at 0 and a 64x64-bit multiply); the other
    /// sources are a call.
    #[inline(always)]
    pub fn now(&self) -> u64 {
        if let Source::Tsc(s) = &self.source {
            s.now()
        } else {
            self.now_slow()
        }
    }

    #[inline(never)]
    fn now_slow(&self) -> u64 {
        match &self.source {
            Source::Tsc(s) => s.now(),
            Source::Monotonic(origin) => origin.elapsed().as_nanos() as u64,
            Source::Manual(t) => t.load(Ordering::Relaxed),
        }
    }

    /// Which source this clock reads.
    pub fn kind(&self) -> ClockKind {
        match self.source {
            Source::Tsc(_) => ClockKind::Tsc,
            Source::Monotonic(_) => ClockKind::Monotonic,
            Source::Manual(_) => ClockKind::Manual,
        }
    }

    /// Wall-clock time of timestamp 0, in nanoseconds since the Unix epoch
    /// (what a trace file's header records as the clock origin).
    pub fn origin_unix_ns(&self) -> u64 {
        self.origin_unix_ns
    }

    /// The measured TSC rate, when this clock reads the TSC.
    pub fn tsc_ticks_per_second(&self) -> Option<u64> {
        match self.source {
            Source::Tsc(s) => Some(s.ticks_per_second),
            _ => None,
        }
    }
}

/// A clock that moves only when told to. Clones share the same time.
#[derive(Clone, Debug, Default)]
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    /// A manual clock reading `start` nanoseconds.
    pub fn new(start: u64) -> Self {
        ManualClock(Arc::new(AtomicU64::new(start)))
    }

    /// Sets the time (it may go backwards: tests of clock faults use this).
    pub fn set(&self, ns: u64) {
        self.0.store(ns, Ordering::Relaxed);
    }

    /// Moves the time forward by `ns`.
    pub fn advance(&self, ns: u64) {
        self.0.fetch_add(ns, Ordering::Relaxed);
    }

    /// The current time.
    pub fn now(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

mod tsc {
    use super::*;

    /// Reads the time-stamp counter (0 where there is none; never called then).
    #[inline(always)]
    pub(super) fn read() -> u64 {
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

    /// The TSC's rate in ticks per second, measured once per process; `None`
    /// when the TSC must not be used for time.
    pub(super) fn ticks_per_second() -> Option<u64> {
        static RATE: OnceLock<Option<u64>> = OnceLock::new();
        *RATE.get_or_init(|| if usable() { Some(calibrate()) } else { None })
    }

    /// Invariant TSC (CPUID 0x8000_0007 EDX bit 8) and the kernel's clock
    /// source is `tsc` (so the kernel found it synchronised across CPUs).
    fn usable() -> bool {
        if std::env::var_os("QTRACE_NO_TSC").is_some() {
            return false;
        }
        #[cfg(target_arch = "x86_64")]
        {
            let max_ext = core::arch::x86_64::__cpuid(0x8000_0000).eax;
            if max_ext < 0x8000_0007 {
                return false;
            }
            let invariant = core::arch::x86_64::__cpuid(0x8000_0007).edx & (1 << 8) != 0;
            let kernel_uses_tsc = std::fs::read_to_string(
                "/sys/devices/system/clocksource/clocksource0/current_clocksource",
            )
            .map(|s| s.trim() == "tsc")
            .unwrap_or(false);
            invariant && kernel_uses_tsc
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }

    /// Measures ticks per second against `Instant` over 20 ms.
    fn calibrate() -> u64 {
        let t0 = Instant::now();
        let c0 = read();
        let span = Duration::from_millis(20);
        while t0.elapsed() < span {
            std::hint::spin_loop();
        }
        let c1 = read();
        let ns = t0.elapsed().as_nanos() as u64;
        ((c1.wrapping_sub(c0) as u128 * 1_000_000_000) / ns.max(1) as u128).max(1) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_clock_tracks_wall_time() {
        let clock = Clock::fast();
        let a = clock.now();
        std::thread::sleep(Duration::from_millis(30));
        let b = clock.now();
        let elapsed = b - a;
        assert!(
            (25_000_000..200_000_000).contains(&elapsed),
            "{:?} clock measured {elapsed} ns for a 30 ms sleep",
            clock.kind()
        );
    }

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
    fn monotonic_never_goes_back() {
        let clock = Clock::monotonic();
        let mut last = 0;
        for _ in 0..10_000 {
            let t = clock.now();
            assert!(t >= last);
            last = t;
        }
    }

    #[test]
    fn manual_clock_is_shared_and_may_go_back() {
        let m = ManualClock::new(10);
        let c = Clock::manual(&m);
        m.advance(5);
        assert_eq!(c.now(), 15);
        m.set(3);
        assert_eq!(c.now(), 3);
        assert_eq!(c.kind(), ClockKind::Manual);
    }
}
