//! With `QTRACE_NO_TSC` set, `Clock::fast()` falls back to the monotonic
//! clock, and that clock is correct. (Its own test binary: the TSC decision is
//! made once per process, the first time a fast clock is built.)

use std::time::Duration;

use qtrace::clock::{Clock, ClockKind};

#[test]
fn no_tsc_falls_back_to_a_correct_monotonic_clock() {
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
