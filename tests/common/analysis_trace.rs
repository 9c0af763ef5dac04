//! The small hand-built trace of the library's `tests/export/analysis.rs`, whose
//! every figure is worked out by hand in the comments below (the library's
//! `tests/export/analysis.rs` and the command's `cli/tests/export/analysis.rs` use this
//! file as `common::…`).

use qtrace::classes::{lowlevel, semaphore, system, tracer};
use qtrace::Event;

/// The trace, event for event.
pub fn trace() -> Vec<Event> {
    let e = Event::new;
    vec![
        e(0, system::ACTIVATE, 0, [1, 0]),
        e(100, system::SCHEDULE, 0, [1, 0]), // cpu 0 idle 0..100
        e(200, system::SCHEDULE, 1, [3, 0]), // cpu 1 idle 0..200
        e(260, system::SLEEP, 1, [3, 0]),    // task 3 ran 60 ns
        e(300, system::ACTIVATE, 0, [2, 0]),
        e(350, system::SCHEDULE, 0, [2, 0]), // task 1 preempted after 250 ns
        e(400, lowlevel::INTERRUPT, 0, [5, 0]), // handled until 450
        e(450, system::ENDCYCLE, 0, [2, 0]), // task 2: 100 ns, response 150
        e(500, system::SCHEDULE, 0, [1, 0]), // cpu 0 idle 450..500
        e(550, semaphore::WAIT, 0, [1, 3]),
        e(580, system::ACTIVATE, 0, [2, 0]),
        e(600, system::SCHEDULE, 0, [2, 0]), // task 1 blocked (not preempted) after 100 ns
        e(700, semaphore::SIGNAL, 0, [2, 3]),
        e(750, system::ENDCYCLE, 0, [2, 0]), // task 2: 150 ns, response 170
        e(800, system::SCHEDULE, 0, [1, 0]), // task 1 blocked 550..800; cpu 0 idle 750..800
        e(900, tracer::HOOPS, u32::MAX, [4, 0]), // 4 events lost here
        e(1_000, system::ENDCYCLE, 0, [1, 0]), // task 1's job and span 800..1000 saw the loss
    ]
}
