//! Tracers on a manual clock for tests (each includes this file with
//! `#[path]`): the time of every event is the one the test sets.

use std::path::Path;

use qtrace::classes::user;
use qtrace::clock::{Clock, ManualClock};
use qtrace::queues::{Circular, CircularParams, Fixed, FixedParams};
use qtrace::{Config, QueueHandle, Tracer};

/// A tracer saving to `d` whose clock is `clock`.
pub fn manual_tracer(d: &Path, clock: &ManualClock) -> Tracer {
    Tracer::with_config(
        Config::default()
            .with_output_dir(d)
            .with_clock(Clock::manual(clock)),
    )
}

/// A circular queue of `circular` records taking `user0` and a fixed queue
/// of `fixed` records taking `user1`, both saving to their default files;
/// not activated. Returns (circular, fixed).
pub fn circular_and_fixed(t: &Tracer, circular: usize, fixed: usize) -> (QueueHandle, QueueHandle) {
    let c = t
        .create_queue::<Circular>(CircularParams {
            capacity: circular,
            ..Default::default()
        })
        .unwrap();
    let f = t
        .create_queue::<Fixed>(FixedParams {
            capacity: fixed,
            ..Default::default()
        })
        .unwrap();
    t.assign_event(user::USER0, c).unwrap();
    t.assign_event(user::USER1, f).unwrap();
    (c, f)
}
