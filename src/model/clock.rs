//! Clock sources. Timestamps are 64-bit nanoseconds since the clock's origin:
//! they wrap after 584 years, not after S.Ha.R.K.'s 71 minutes.
//!
//! - [`Clock::fast`] (the default): [`Clock::tsc`] when the CPU's time-stamp
//!   counter is usable (invariant, and the kernel itself trusts it as its
//!   clock source) and `QTRACE_NO_TSC` does not forbid it; otherwise
//!   [`Clock::monotonic`]. Reading the TSC costs about 12 ns against 30 ns for
//!   `Instant::now()` on the machine qtrace is measured on (see
//!   BENCHMARKS.md).
//! - [`Clock::tsc`]: the TSC, scaled with a rate measured once per process
//!   against CLOCK_MONOTONIC to within 0.25 ppm (paired readings, see
//!   RELIABILITY.md, "Clocks"), so it holds 1 ppm of CLOCK_MONOTONIC over
//!   hours while CLOCK_MONOTONIC's own rate holds.
//! - [`Clock::monotonic`]: `std::time::Instant`, correct everywhere.
//! - [`Clock::manual`]: a clock that only moves when told, for deterministic
//!   tests.
//!
//! `QTRACE_NO_TSC` (read by [`Clock::fast`] each time it is called): unset,
//! empty, `0`, `false`, `no` or `off` (any case, surrounding blanks ignored)
//! leave the choice to the machine; any other value (`1`, `true`, `yes`, …)
//! forces the monotonic clock. It does not affect [`Clock::tsc`] or
//! [`Clock::of_kind`], which a program calls to ask for one kind explicitly.
//!
//! ```
//! use qtrace::clock::{Clock, ManualClock};
//! let manual = ManualClock::new(100);
//! let clock = Clock::manual(&manual);
//! assert_eq!(clock.now(), 100);
//! manual.advance(5);
//! assert_eq!(clock.now(), 105);
//! ```

use std::ffi::OsStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

mod tsc;

/// Which source a [`Clock`] reads.
///
/// ```
/// use qtrace::clock::{Clock, ClockKind};
/// assert_eq!(Clock::monotonic().kind(), ClockKind::Monotonic);
/// assert_eq!(ClockKind::Monotonic.name(), "monotonic");
/// ```
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
///
/// ```
/// use qtrace::clock::Clock;
/// let clock = Clock::monotonic();
/// let (a, b) = (clock.now(), clock.now());
/// assert!(a <= b);
/// ```
#[derive(Clone, Debug)]
pub struct Clock {
    source: Source,
    origin_unix_ns: u64,
}

#[derive(Clone, Debug)]
enum Source {
    Tsc(tsc::TscScale),
    Monotonic(Instant),
    Manual(Arc<AtomicU64>),
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

/// Whether a value of `QTRACE_NO_TSC` forces the monotonic clock: unset,
/// empty, `0`, `false`, `no` and `off` (any case, blanks around ignored) do
/// not; every other value does (test: `no_tsc_values`).
pub(crate) fn no_tsc_requested(value: Option<&OsStr>) -> bool {
    match value {
        None => false,
        Some(v) => {
            let v = v.to_string_lossy().trim().to_ascii_lowercase();
            !matches!(v.as_str(), "" | "0" | "false" | "no" | "off")
        }
    }
}

/// A clock of the requested kind cannot be built on this machine
/// ([`Clock::tsc`], [`Clock::of_kind`]). The clock's own error: `?` turns it
/// into [`ConfigError::ClockUnavailable`](crate::ConfigError::ClockUnavailable)
/// or the crate-level [`Error::Config`](crate::Error::Config).
///
/// ```
/// use qtrace::clock::{Clock, ClockKind};
/// let e = Clock::of_kind(ClockKind::Manual).unwrap_err();
/// assert_eq!(e.kind, "manual");
/// assert!(e.to_string().starts_with("a `manual` clock is not available: "));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClockUnavailable {
    /// The kind asked for (`ClockKind::name`).
    pub kind: &'static str,
    /// Why, and what to use instead.
    pub reason: String,
}

impl std::fmt::Display for ClockUnavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "a `{}` clock is not available: {}",
            self.kind, self.reason
        )
    }
}

impl std::error::Error for ClockUnavailable {}

impl Clock {
    /// The fastest correct clock on this machine: [`Clock::tsc`] when the TSC
    /// is usable and `QTRACE_NO_TSC` does not forbid it (see the module
    /// docs), otherwise [`Clock::monotonic`].
    pub fn fast() -> Clock {
        if no_tsc_requested(std::env::var_os("QTRACE_NO_TSC").as_deref()) {
            return Clock::monotonic();
        }
        Clock::tsc().unwrap_or_else(|_| Clock::monotonic())
    }

    /// The CPU's time-stamp counter, origin now. The first call in a process
    /// measures the counter's rate against CLOCK_MONOTONIC until the
    /// measurement's error bound is under 0.25 ppm (20–80 ms here, at most
    /// about 320 ms; the thread sleeps meanwhile); later calls reuse it.
    /// Ignores `QTRACE_NO_TSC`.
    ///
    /// # Errors
    ///
    /// [`ClockUnavailable`] when the counter must not be used for time:
    /// not x86_64, not invariant, or not the kernel's own clock source.
    ///
    /// ```
    /// use qtrace::clock::{Clock, ClockKind};
    /// match Clock::tsc() {
    ///     Ok(clock) => assert_eq!(clock.kind(), ClockKind::Tsc),
    ///     Err(e) => println!("{e}"), // e.g. not x86_64
    /// }
    /// ```
    pub fn tsc() -> Result<Clock, ClockUnavailable> {
        match tsc::calibration() {
            Ok(c) => Ok(Clock {
                source: Source::Tsc(tsc::TscScale::new(tsc::read(), c.ticks_per_second)),
                origin_unix_ns: unix_now_ns(),
            }),
            Err(reason) => Err(ClockUnavailable {
                kind: ClockKind::Tsc.name(),
                reason: reason.to_string(),
            }),
        }
    }

    /// The operating system's monotonic clock, origin now.
    pub fn monotonic() -> Clock {
        Clock {
            source: Source::Monotonic(Instant::now()),
            origin_unix_ns: unix_now_ns(),
        }
    }

    /// A clock of `kind`: [`Clock::tsc`] or [`Clock::monotonic`].
    ///
    /// # Errors
    ///
    /// [`ClockUnavailable`] for [`ClockKind::Manual`] (a manual clock
    /// needs the [`ManualClock`] that moves it: use [`Clock::manual`]) and
    /// for [`ClockKind::Tsc`] where [`Clock::tsc`] fails.
    ///
    /// ```
    /// use qtrace::clock::{Clock, ClockKind};
    /// let clock = Clock::of_kind(ClockKind::Monotonic).unwrap();
    /// assert_eq!(clock.kind(), ClockKind::Monotonic);
    /// assert!(Clock::of_kind(ClockKind::Manual).is_err());
    /// ```
    pub fn of_kind(kind: ClockKind) -> Result<Clock, ClockUnavailable> {
        match kind {
            ClockKind::Tsc => Clock::tsc(),
            ClockKind::Monotonic => Ok(Clock::monotonic()),
            ClockKind::Manual => Err(ClockUnavailable {
                kind: kind.name(),
                reason: "a manual clock moves only through its ManualClock: build it with \
                         Clock::manual(&manual) and pass it to Config::with_clock"
                    .to_string(),
            }),
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

    /// This clock with its origin moved by `shift_ns` (Unix ns; positive:
    /// later): what a machine whose wall clock is that far ahead writes in
    /// its header, its timestamps unchanged. A receiver's store aligns such
    /// a sender with the others (FORMAT.md 7.7); this is how to try it on
    /// one machine.
    ///
    /// ```
    /// use qtrace::clock::Clock;
    /// let clock = Clock::monotonic();
    /// let origin = clock.origin_unix_ns();
    /// let ahead = clock.shifted(3_000_000_000);
    /// assert_eq!(ahead.origin_unix_ns(), origin + 3_000_000_000);
    /// assert_eq!(ahead.clone().shifted(-3_000_000_000).origin_unix_ns(), origin);
    /// ```
    pub fn shifted(mut self, shift_ns: i64) -> Clock {
        self.origin_unix_ns = self.origin_unix_ns.saturating_add_signed(shift_ns);
        self
    }

    /// The measured TSC rate, when this clock reads the TSC.
    pub fn tsc_ticks_per_second(&self) -> Option<u64> {
        match self.source {
            Source::Tsc(s) => Some(s.ticks_per_second),
            _ => None,
        }
    }

    /// The error bound of the TSC rate's measurement, in parts per billion
    /// (at most 250 unless the machine was too busy to reach it in 320 ms),
    /// when this clock reads the TSC.
    pub fn tsc_rate_bound_ppb(&self) -> Option<u64> {
        match self.source {
            Source::Tsc(_) => tsc::calibration().ok().map(|c| c.bound_ppb),
            _ => None,
        }
    }
}

/// A clock that moves only when told to. Clones share the same time.
///
/// ```
/// use qtrace::clock::{Clock, ManualClock};
/// let time = ManualClock::new(10);
/// let clock = Clock::manual(&time);
/// time.advance(5);
/// assert_eq!(clock.now(), 15);
/// ```
#[derive(Clone, Debug, Default)]
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    /// A manual clock reading `start` nanoseconds.
    ///
    /// ```
    /// assert_eq!(qtrace::clock::ManualClock::new(7).now(), 7);
    /// ```
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

#[cfg(test)]
mod tests {
    use super::*;

    /// (Was the doc example of the then public `no_tsc_requested`.)
    #[test]
    fn no_tsc_values() {
        use std::ffi::OsStr;
        assert!(!no_tsc_requested(None));
        assert!(!no_tsc_requested(Some(OsStr::new("0"))));
        assert!(!no_tsc_requested(Some(OsStr::new(" Off "))));
        assert!(no_tsc_requested(Some(OsStr::new("1"))));
        assert!(no_tsc_requested(Some(OsStr::new("true"))));
    }
    use std::time::Duration;

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
    fn monotonic_never_goes_back() {
        let clock = Clock::monotonic();
        let mut last = 0;
        for _ in 0..if cfg!(miri) { 100 } else { 10_000 } {
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
