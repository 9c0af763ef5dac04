//! A process writing a trace file while a test's `qtrace` follows it: a
//! tracer on a manual clock with one online queue.

use qtrace::clock::{Clock, ManualClock};
use qtrace::queues::{Online, OnlineParams};
use qtrace::{ClassId, Config, Tracer};

/// A tracer on a manual clock (at 0) whose one online queue, made of
/// `params` (its file, period, rotation), takes `class`; activated. The
/// clock is returned to move the events' times.
pub fn online_tracer(params: OnlineParams, class: ClassId) -> (Tracer, ManualClock) {
    let clock = ManualClock::new(0);
    let tracer = Tracer::with_config(Config::default().with_clock(Clock::manual(&clock)));
    let q = tracer.create_queue::<Online>(params).unwrap();
    tracer.assign_class(class, q).unwrap();
    tracer.activate().unwrap();
    (tracer, clock)
}
