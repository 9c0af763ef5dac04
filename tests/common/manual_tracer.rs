//! Tracers on a manual clock for tests (each uses this file as
//! `common::…`): the time of every event is the one the test sets.

use std::path::Path;

use qtrace::clock::{Clock, ManualClock};
use qtrace::{Config, Tracer};

/// A tracer saving to `d` whose clock is `clock`.
pub fn manual_tracer(d: &Path, clock: &ManualClock) -> Tracer {
    Tracer::with_config(
        Config::default()
            .with_output_dir(d)
            .with_clock(Clock::manual(clock)),
    )
}
