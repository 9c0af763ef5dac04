//! What an analysis found ([`Report`]): per task, per CPU or source, per
//! interrupt, per latency and per scope.

use super::*;

/// What one task did.
///
/// ```
/// use qtrace::analysis::{AnalysisOptions, Analyzer};
/// use qtrace::classes::{system, Catalog};
/// use qtrace::Event;
///
/// let mut a = Analyzer::new(&Catalog::builtin(), AnalysisOptions::default());
/// for e in [
///     Event::new(0, system::ACTIVATE, 0, [1, 0]),
///     Event::new(100, system::SCHEDULE, 0, [1, 0]), // task 1 runs on CPU 0
///     Event::new(300, system::SCHEDULE, 0, [2, 0]), // preempted by task 2
///     Event::new(500, system::SCHEDULE, 0, [1, 0]),
///     Event::new(600, system::ENDCYCLE, 0, [1, 0]), // its job ends
/// ] {
///     a.push(&e);
/// }
/// let report = a.finish();
/// let task = &report.tasks[&1];
/// assert_eq!((task.activations, task.dispatches, task.preemptions), (1, 2, 1));
/// assert_eq!(task.cpu_ns, 300); // 100..300 and 500..600
/// assert_eq!(task.response.summary().max, 600); // activate at 0, endcycle at 600
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskReport {
    /// `system:activate` events.
    pub activations: u64,
    /// `system:schedule` events (times it was given a source).
    pub dispatches: u64,
    /// Nanoseconds it ran, over running spans that no loss touched.
    pub cpu_ns: u64,
    /// Running spans left out of `cpu_ns` because events were lost during them.
    pub cpu_lossy: u64,
    /// Response times of its jobs (activation to end of cycle) that no loss touched.
    pub response: Samples,
    /// Jobs left out of `response` because events were lost during them.
    pub response_lossy: u64,
    /// `endcycle` events with no activation to match (or activations dropped
    /// past the bound of pending jobs).
    pub unmatched: u64,
    /// Times another task took its source while its job was not finished.
    pub preemptions: u64,
    /// Waits on a semaphore during which it lost its source.
    pub blocked_waits: u64,
    /// Nanoseconds blocked on semaphores, over waits that no loss touched.
    pub blocked_ns: u64,
    /// Blocked waits left out of `blocked_ns` because events were lost during them.
    pub blocked_lossy: u64,
    /// Times a `semaphore:signal` released it (a derived wake-up flow, see
    /// the [module documentation](crate::analysis)).
    pub woken_by_signal: u64,
    /// Times an interrupt's handler activated it (a derived wake-up flow).
    pub woken_by_irq: u64,
    /// Wake-up latencies (wake to its next `system:schedule`), over wakes
    /// that no loss touched.
    pub wakeups: Samples,
    /// Wakes left out of `wakeups` because events were lost during them.
    pub wakeups_lossy: u64,
    /// Wakes never followed by a schedule of the task (the trace ended).
    pub wakeups_unscheduled: u64,
}

/// What one source (CPU) did.
///
/// ```
/// use qtrace::analysis::{AnalysisOptions, Analyzer};
/// use qtrace::classes::{system, Catalog};
/// use qtrace::Event;
///
/// let mut a = Analyzer::new(&Catalog::builtin(), AnalysisOptions::default());
/// for e in [
///     Event::new(0, system::ACTIVATE, 0, [1, 0]),
///     Event::new(100, system::SCHEDULE, 0, [1, 0]), // task 1 runs on CPU 0
///     Event::new(300, system::SCHEDULE, 0, [2, 0]), // preempted by task 2
///     Event::new(500, system::SCHEDULE, 0, [1, 0]),
///     Event::new(600, system::ENDCYCLE, 0, [1, 0]), // its job ends
/// ] {
///     a.push(&e);
/// }
/// let report = a.finish();
/// let cpu = &report.cpus[&0];
/// // Idle from the trace's start (0) to the first dispatch (100), then busy.
/// assert_eq!((cpu.busy_ns, cpu.idle_ns, cpu.dispatches), (500, 100, 3));
/// assert!((cpu.utilisation() - 500.0 / 6.0).abs() < 1e-9); // percent
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuReport {
    /// Nanoseconds a task ran on it (spans no loss touched).
    pub busy_ns: u64,
    /// Nanoseconds no task ran on it (spans no loss touched), from the first
    /// event of the trace to the last.
    pub idle_ns: u64,
    /// Nanoseconds in spans (busy or idle) that a loss touched, counted in
    /// neither.
    pub lossy_ns: u64,
    /// `system:schedule` events on it.
    pub dispatches: u64,
}

impl CpuReport {
    /// Busy time over busy plus idle time (spans a loss touched left out), in
    /// percent; 0 when nothing was measured.
    pub fn utilisation(&self) -> f64 {
        let all = self.busy_ns + self.idle_ns;
        if all == 0 {
            0.0
        } else {
            100.0 * self.busy_ns as f64 / all as f64
        }
    }
}

/// What one interrupt line did.
///
/// ```
/// use qtrace::analysis::{AnalysisOptions, Analyzer};
/// use qtrace::classes::{lowlevel, system, Catalog};
/// use qtrace::Event;
///
/// let mut a = Analyzer::new(&Catalog::builtin(), AnalysisOptions::default());
/// for e in [
///     Event::new(0, lowlevel::INTERRUPT, 0, [15, 0]),
///     Event::new(300, system::SCHEDULE, 0, [1, 0]), // the handler ended
///     Event::new(1_000, lowlevel::INTERRUPT, 0, [15, 0]),
///     Event::new(9_000, system::SCHEDULE, 0, [1, 0]), // capped at 1 µs
/// ] {
///     a.push(&e);
/// }
/// let irq = &a.finish().interrupts[&15];
/// assert_eq!(irq.count, 2);
/// assert_eq!((irq.handler.summary().min, irq.handler.summary().max), (300, 1_000));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IrqReport {
    /// `lowlevel:interrupt` events.
    pub count: u64,
    /// Handler times (to the next event of the same source, capped).
    pub handler: Samples,
}

/// A latency between two events.
///
/// See [`LatencySpec`] for a whole example.
///
/// ```
/// use qtrace::analysis::LatencyReport;
///
/// let none = LatencyReport::default();
/// assert!(none.samples.is_empty());
/// assert_eq!((none.lossy, none.unmatched_ends, none.open_starts), (0, 0, 0));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LatencyReport {
    /// Intervals that no loss touched.
    pub samples: Samples,
    /// Intervals left out because events were lost during them.
    pub lossy: u64,
    /// Ends with no open start.
    pub unmatched_ends: u64,
    /// Starts never ended.
    pub open_starts: u64,
}

/// What one scope (`class:S`) did.
///
/// ```
/// use qtrace::analysis::{AnalysisOptions, Analyzer};
/// use qtrace::classes::Catalog;
/// use qtrace::Event;
///
/// qtrace::classes! {
///     /// The example's classes.
///     pub static CATALOG;
///     /// The disk.
///     pub mod disk: "block device" {
///         scope FLUSH = "flush": "a cache flush" ();
///     }
/// }
///
/// let mut catalog = Catalog::builtin();
/// catalog.define_static(&CATALOG)?;
/// let mut a = Analyzer::new(&catalog, AnalysisOptions::default());
/// a.push(&Event::new(10, disk::FLUSH.begin(), 1, [0, 0]));
/// a.push(&Event::new(30, disk::FLUSH.end(), 1, [0, 0]));
/// a.push(&Event::new(40, disk::FLUSH.begin(), 1, [0, 0]));
/// a.push(&Event::new(90, disk::FLUSH.end(), 1, [5, 0])); // ended with code 5
/// let report = a.finish();
/// let flush = &report.scopes["disk:flush"];
/// assert_eq!((flush.count, flush.nonzero_codes, flush.unended, flush.lossy), (2, 1, 0, 0));
/// assert_eq!(flush.durations.summary().max, 50);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScopeReport {
    /// Scopes closed by their end event.
    pub count: u64,
    /// Their durations (begin to end), over scopes that no loss touched.
    pub durations: Samples,
    /// Scopes left out of `durations` because events were lost during them.
    pub lossy: u64,
    /// Scopes whose end event carried a non-zero code.
    pub nonzero_codes: u64,
    /// Scopes that ended without their end event: with an outer scope, or
    /// open at the end of the trace.
    pub unended: u64,
}

/// Everything the analysis found.
///
/// ```
/// use qtrace::analysis::{AnalysisOptions, Analyzer};
/// use qtrace::classes::{system, Catalog};
/// use qtrace::Event;
///
/// let mut a = Analyzer::new(&Catalog::builtin(), AnalysisOptions::default());
/// for e in [
///     Event::new(0, system::ACTIVATE, 0, [1, 0]),
///     Event::new(100, system::SCHEDULE, 0, [1, 0]), // task 1 runs on CPU 0
///     Event::new(300, system::SCHEDULE, 0, [2, 0]), // preempted by task 2
///     Event::new(500, system::SCHEDULE, 0, [1, 0]),
///     Event::new(600, system::ENDCYCLE, 0, [1, 0]), // its job ends
/// ] {
///     a.push(&e);
/// }
/// let report = a.finish();
/// assert_eq!((report.events, report.hoops, report.lost), (5, 0, 0));
/// assert_eq!((report.first_ns, report.last_ns, report.span_ns()), (0, 600, 600));
/// assert_eq!(report.tasks.keys().copied().collect::<Vec<_>>(), [1, 2]);
/// assert!(report.latency.is_none() && report.interrupts.is_empty());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Records read, hoops records excepted.
    pub events: u64,
    /// Hoops records.
    pub hoops: u64,
    /// Events lost according to them.
    pub lost: u64,
    /// Time of the first and the last record, in ns.
    pub first_ns: u64,
    /// See `first_ns`.
    pub last_ns: u64,
    /// Per task id.
    pub tasks: BTreeMap<u64, TaskReport>,
    /// Per source that ran a task (`system:schedule`).
    pub cpus: BTreeMap<u32, CpuReport>,
    /// Per interrupt number.
    pub interrupts: BTreeMap<u64, IrqReport>,
    /// The latency asked for, if any.
    pub latency: Option<LatencyReport>,
    /// Per scope name (`class:S`), scopes seen in the trace.
    pub scopes: BTreeMap<String, ScopeReport>,
    /// Scope end events that closed no open begin of their source.
    pub scope_unpaired: u64,
    /// Per counter name (`class:S`, FORMAT.md 1.3.2), the values of the
    /// counters seen in the trace, every source together (the no_std core's
    /// [`CounterStats`](qtrace_core::classes::counter::CounterStats)); a
    /// queue counter (FORMAT.md 1.3.4) per queue, named `class:S (queue N)`.
    pub counters: BTreeMap<String, qtrace_core::classes::counter::CounterStats>,
    /// The wake-up flows derived (a signal or an interrupt to the schedule
    /// of the task it woke), in the order the schedules came, the first
    /// 2^20 of them (the no_std core's [`WakeFlow`](qtrace_core::classes::flow::WakeFlow)).
    pub wake_flows: Vec<qtrace_core::classes::flow::WakeFlow>,
    /// Wake-up flows past that bound, not listed (still in the tasks'
    /// figures).
    pub wake_flows_over: u64,
}

impl Report {
    /// The traced span, in ns.
    pub fn span_ns(&self) -> u64 {
        self.last_ns.saturating_sub(self.first_ns)
    }
}
