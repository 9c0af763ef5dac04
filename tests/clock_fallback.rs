//! With `QTRACE_NO_TSC` set, `Clock::fast()` falls back to the monotonic
//! clock, and that clock is correct. (Its own test binary: the variable is
//! process-wide.)

use std::time::Duration;

use qtrace::clock::{Clock, ClockKind};

/// The tests set `QTRACE_NO_TSC`: one at a time.
static ENV: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn no_tsc_falls_back_to_a_correct_monotonic_clock() {
    let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
    std::env::set_var("QTRACE_NO_TSC", "1");
    let clock = Clock::fast();
    assert_eq!(clock.kind(), ClockKind::Monotonic);
    assert_eq!(clock.tsc_ticks_per_second(), None);
    let a = clock.now();
    std::thread::sleep(Duration::from_millis(20));
    let b = clock.now();
    assert!(
        (20_000_000..500_000_000).contains(&(b - a)),
        "{} ns for a 20 ms sleep",
        b - a
    );
    let mut last = b;
    for _ in 0..10_000 {
        let t = clock.now();
        assert!(t >= last, "went back from {last} to {t}");
        last = t;
    }
}

/// `QTRACE_NO_TSC`'s exact semantics (docs/queues.md, "Clocks"): read by every
/// `Clock::fast()` call; "", `0`, `false`, `no`, `off` do not force the
/// monotonic clock, other values do; explicit kinds ignore it.
#[test]
fn no_tsc_values_and_explicit_kinds() {
    let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
    let tsc_usable = Clock::tsc().is_ok();
    let expected_default = if tsc_usable {
        ClockKind::Tsc
    } else {
        ClockKind::Monotonic
    };
    for value in ["", "0", "false", "NO", " off "] {
        std::env::set_var("QTRACE_NO_TSC", value);
        assert_eq!(
            Clock::fast().kind(),
            expected_default,
            "QTRACE_NO_TSC={value:?}"
        );
    }
    for value in ["1", "true", "yes", "anything"] {
        std::env::set_var("QTRACE_NO_TSC", value);
        assert_eq!(
            Clock::fast().kind(),
            ClockKind::Monotonic,
            "QTRACE_NO_TSC={value:?}"
        );
        // An explicit request is not steered by the variable.
        assert_eq!(Clock::tsc().is_ok(), tsc_usable);
        let config = qtrace::Config::default()
            .with_clock_kind(ClockKind::Monotonic)
            .unwrap();
        assert_eq!(config.clock().kind(), ClockKind::Monotonic);
    }
    std::env::remove_var("QTRACE_NO_TSC");
    assert_eq!(Clock::fast().kind(), expected_default);
    let err = qtrace::Config::default()
        .with_clock_kind(ClockKind::Manual)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "a `manual` clock is not available: a manual clock moves only through its \
         ManualClock: build it with Clock::manual(&manual) and pass it to Config::with_clock"
    );
}
