//! The derived wake-up flows as the Perfetto and Chrome exports draw them:
//! the analysis's ([`crate::analysis`]: a `semaphore:signal` to the
//! schedule of the task it released, an interrupt to the schedule of the
//! task its handler activated), followed event by event.
//!
//! A flow begins at the event that woke the task (the signal; for an
//! interrupt, the `system:activate` its handler logged, which is when the
//! wake is known) and ends at the task's next `system:schedule`. Flow ids
//! are [`WAKE_FLOW_BASE`] + k, k = 1, 2, … in the order of the wakes: user
//! flow instances are numbered from 1 (FORMAT.md 1.3.3) and never reach
//! 2^52, so the two never meet; 2^52 + k is still an exact JavaScript
//! number (Chrome JSON).

use std::collections::HashMap;

use crate::analysis::{measured, Analyzer};
use crate::classes::tracer;
use crate::Event;

/// The first derived flow id is this plus 1 (2^52 + 1).
pub(crate) const WAKE_FLOW_BASE: u64 = 1 << 52;

/// Where an event stands in a derived wake-up flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WakeStep {
    /// The event woke a task: flow `id` begins here.
    Begin(u64),
    /// The event (a schedule) ends flow `id`.
    End(u64),
}

/// Follows the wakes of a trace (see the [module documentation](self)).
#[derive(Debug)]
pub(crate) struct Wakes {
    analyzer: Analyzer,
    /// Per task woken and not yet scheduled, its flow's id.
    open: HashMap<u64, u64, rustc_hash::FxBuildHasher>,
    next: u64,
}

impl Wakes {
    /// Wakes by an interrupt count up to `interrupt_max_ns` after it (the
    /// exports' interrupt slice limit, as `qtrace analyze` takes it).
    pub(crate) fn new(interrupt_max_ns: u64) -> Self {
        Wakes {
            analyzer: Analyzer::for_wakes(interrupt_max_ns),
            open: HashMap::default(),
            next: 0,
        }
    }

    /// The step of the wake-up flow `e` is, if any (events must come in
    /// time order, as the exports take them).
    #[inline]
    pub(crate) fn push(&mut self, e: &Event) -> Option<WakeStep> {
        // Only the measured events and hoops move the wake-up state.
        if !(measured(e.id) || e.id == tracer::HOOPS) {
            return None;
        }
        self.analyzer.push(e);
        if let Some(flow) = self.analyzer.take_flow() {
            return self.open.remove(&flow.task).map(WakeStep::End);
        }
        let task = self.analyzer.take_wake()?;
        self.next += 1;
        let id = WAKE_FLOW_BASE + self.next;
        self.open.insert(task, id);
        Some(WakeStep::Begin(id))
    }
}
