//! What the scheduler did, computed from the model's own events: per task,
//! per CPU (source), per interrupt, and latencies between any two events.
//!
//! Feed an [`Analyzer`] the events of a run in time order (merged files: see
//! [`MergedReader`](crate::reader::MergedReader)) and [`Analyzer::finish`] it into a
//! [`Report`]. The analysis reads the built-in classes as S.Ha.R.K. defines
//! them:
//!
//! - a task **runs** on a source (CPU) from its `system:schedule` on that
//!   source until the next `system:schedule` on the same source, or until the
//!   task itself logs `endcycle`, `delay`, `sleep`, `disable` or `destroy`,
//!   whichever comes first; a source on which no task runs is **idle**;
//! - a task is **preempted** when another task is scheduled on its source
//!   while its current job (since `activate`) has not ended (`endcycle`);
//! - a job's **response time** runs from its `activate` to its `endcycle`
//!   (activations that arrive while jobs are pending queue, first in first
//!   out);
//! - a task is **blocked on a semaphore** from its `semaphore:wait` until it
//!   is scheduled again, if it lost its source in between (a wait that did
//!   not block costs nothing);
//! - an **interrupt** is handled from its `lowlevel:interrupt` until the next
//!   event of the same source, at most [`AnalysisOptions::interrupt_max_ns`]
//!   (as the exports draw it);
//! - a **scope** runs from an `S.begin` to the `S.end` that closes it on the
//!   same source (FORMAT.md 1.3.1, as the exports draw it): per scope
//!   (`class:S`), how many ended, their durations, how many ended with a
//!   non-zero code, and how many ended without their end event.
//!
//! # Losses
//!
//! A measured interval (a running span, a job, a blocked span, a latency)
//! during which the trace says events were lost (a hoops record with a time
//! inside it) may be wrong: it is *not* added to the figures; it is counted
//! apart (`lossy`) so that the report shows how many measures a loss spoiled,
//! never an average over them.
//!
//! ```
//! use qtrace::analysis::{AnalysisOptions, Analyzer};
//! use qtrace::classes::{system, Catalog};
//! use qtrace::Event;
//!
//! let catalog = Catalog::builtin();
//! let mut a = Analyzer::new(&catalog, AnalysisOptions::default());
//! for e in [
//!     Event::new(0, system::ACTIVATE, 0, [1, 0]),
//!     Event::new(100, system::SCHEDULE, 0, [1, 0]),
//!     Event::new(400, system::ENDCYCLE, 0, [1, 0]),
//! ] {
//!     a.push(&e);
//! }
//! let report = a.finish();
//! let task = &report.tasks[&1];
//! assert_eq!((task.activations, task.cpu_ns, task.response.summary().max), (1, 300, 400));
//! ```

mod summary;

use std::collections::{BTreeMap, HashMap, VecDeque};

pub use summary::{Samples, Summary};

use crate::model::classes::scopes::{ScopeTable, ScopeTracker, Step};
use crate::model::classes::{lowlevel, semaphore, system, tracer, Catalog};

/// Most scopes open at once on one source that the analysis follows.
const MAX_SCOPE_DEPTH: usize = 256;
use crate::{Event, EventId};

/// Maps keyed by task, source and interrupt numbers, looked up on every
/// event: FxHash (one multiplication) instead of SipHash's rounds. Keys come
/// from the trace, so a hostile trace could make a map slow, never wrong.
type BuildIdHasher = rustc_hash::FxBuildHasher;

/// Most sources with a pending interrupt that [`Analyzer`] lists apart from
/// its map of sources (see `Analyzer::irq_sources`).
const IRQ_LIST: usize = 8;

/// Most activations waiting for their `endcycle`, per task (past this the
/// oldest is dropped and counted in [`TaskReport::unmatched`]).
const MAX_PENDING: usize = 4096;

/// Which events a latency measures, and how a start finds its end.
///
/// ```
/// use qtrace::analysis::{AnalysisOptions, Analyzer, LatencySpec, MatchKey};
/// use qtrace::classes::{system, Catalog};
/// use qtrace::Event;
///
/// // From a task's activation to its dispatch, matched by task (argument 0).
/// let spec = LatencySpec { from: system::ACTIVATE, to: system::SCHEDULE, key: MatchKey::Arg(0) };
/// let options = AnalysisOptions { latency: Some(spec), ..AnalysisOptions::default() };
/// let mut a = Analyzer::new(&Catalog::builtin(), options);
/// for e in [
///     Event::new(0, system::ACTIVATE, 0, [1, 0]),
///     Event::new(50, system::ACTIVATE, 0, [2, 0]),
///     Event::new(250, system::SCHEDULE, 0, [2, 0]),
///     Event::new(400, system::SCHEDULE, 0, [1, 0]),
/// ] {
///     a.push(&e);
/// }
/// let latency = a.finish().latency.unwrap();
/// let s = latency.samples.summary();
/// assert_eq!((s.count, s.min, s.max), (2, 200, 400));
/// assert_eq!((latency.lossy, latency.unmatched_ends, latency.open_starts), (0, 0, 0));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LatencySpec {
    /// The event that starts an interval.
    pub from: EventId,
    /// The event that ends it.
    pub to: EventId,
    /// What a start and an end must share.
    pub key: MatchKey,
}

/// What a latency's start and end events must have in common.
///
/// ```
/// use qtrace::analysis::{AnalysisOptions, Analyzer, LatencySpec, MatchKey};
/// use qtrace::classes::{user, Catalog};
/// use qtrace::Event;
///
/// // A request (user0) and its reply (user1) on the same thread (source).
/// let spec = LatencySpec { from: user::USER0, to: user::USER1, key: MatchKey::Source };
/// let options = AnalysisOptions { latency: Some(spec), ..AnalysisOptions::default() };
/// let mut a = Analyzer::new(&Catalog::builtin(), options);
/// for e in [
///     Event::new(0, user::USER0, 7, [0, 0]),
///     Event::new(10, user::USER0, 8, [0, 0]),
///     Event::new(30, user::USER1, 8, [0, 0]), // thread 8: 20 ns
///     Event::new(100, user::USER1, 7, [0, 0]), // thread 7: 100 ns
/// ] {
///     a.push(&e);
/// }
/// let s = a.finish().latency.unwrap().samples.summary();
/// assert_eq!((s.count, s.min, s.max), (2, 20, 100));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchKey {
    /// The same source (CPU or thread).
    Source,
    /// The same value of argument slot 0 or 1 (e.g. the task of system events).
    Arg(usize),
    /// Nothing: each end closes the oldest open start.
    Any,
}

/// Tuning of the analysis.
///
/// ```
/// use qtrace::analysis::AnalysisOptions;
///
/// let options = AnalysisOptions { interrupt_max_ns: 5_000, ..AnalysisOptions::default() };
/// assert_eq!(options.latency, None);
/// assert_eq!(AnalysisOptions::default().interrupt_max_ns, 1_000);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnalysisOptions {
    /// Longest interrupt handler, in ns (it ends earlier at the next event of
    /// the same source). Default 1 µs, as the exports.
    pub interrupt_max_ns: u64,
    /// An optional latency between two events.
    pub latency: Option<LatencySpec>,
}

impl Default for AnalysisOptions {
    fn default() -> Self {
        AnalysisOptions {
            interrupt_max_ns: 1_000,
            latency: None,
        }
    }
}

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
}

impl Report {
    /// The traced span, in ns.
    pub fn span_ns(&self) -> u64 {
        self.last_ns.saturating_sub(self.first_ns)
    }
}

#[derive(Debug, Default)]
struct TaskState {
    report: TaskReport,
    /// Activation times of jobs not yet ended, oldest first, with the loss
    /// count at their start.
    pending: VecDeque<(u64, u64)>,
    /// The source it runs on.
    on: Option<u32>,
    /// A wait not yet resolved: (time, loss count then, lost its source since).
    waiting: Option<(u64, u64, bool)>,
}

#[derive(Debug, Default)]
struct CpuState {
    report: CpuReport,
    /// The task running and since when (with the loss count then); `None`:
    /// idle since `since`.
    running: Option<u64>,
    since: u64,
    losses_at: u64,
    /// The pending interrupt: (irq, start).
    irq: Option<(u64, u64)>,
}

/// Computes a [`Report`] from events pushed in time order (see the [module
/// documentation](self)). Memory: state per task, source and interrupt line,
/// plus one 8-byte sample per measured interval.
///
/// ```
/// use qtrace::analysis::{AnalysisOptions, Analyzer};
/// use qtrace::classes::{system, tracer, Catalog};
/// use qtrace::Event;
///
/// let mut a = Analyzer::new(&Catalog::builtin(), AnalysisOptions::default());
/// a.push(&Event::new(0, system::ACTIVATE, 0, [1, 0]));
/// a.push(&Event::new(100, system::SCHEDULE, 0, [1, 0]));
/// a.push(&Event::new(150, tracer::HOOPS, 0, [4, 0])); // 4 events lost here
/// a.push(&Event::new(400, system::ENDCYCLE, 0, [1, 0]));
/// let report = a.finish();
/// assert_eq!((report.events, report.hoops, report.lost), (3, 1, 4));
/// let task = &report.tasks[&1];
/// // The running span and the job touched by the loss are counted apart.
/// assert_eq!((task.cpu_ns, task.cpu_lossy, task.response_lossy), (0, 1, 1));
/// ```
#[derive(Debug)]
pub struct Analyzer {
    options: AnalysisOptions,
    report: Report,
    tasks: HashMap<u64, TaskState, BuildIdHasher>,
    cpus: HashMap<u32, CpuState, BuildIdHasher>,
    interrupts: HashMap<u64, IrqReport, BuildIdHasher>,
    /// Hoops records seen so far: an interval touched by a loss is one whose
    /// start saw fewer than its end.
    losses: u64,
    /// Sources with a pending interrupt.
    pending_irqs: usize,
    /// Some of those sources (`irq_sources[..irq_listed]`); all of them when
    /// `irq_listed == pending_irqs`, and then an event of a source not listed
    /// costs a scan of at most [`IRQ_LIST`] numbers instead of a map lookup.
    irq_sources: [u32; IRQ_LIST],
    irq_listed: usize,
    started: bool,
    /// Open latency starts per key: (time, loss count).
    open: HashMap<u64, VecDeque<(u64, u64)>>,
    /// Pairs scope events; `scope_range` bounds their ids (empty without
    /// scopes), so other events cost two compares.
    scopes: ScopeTracker,
    scope_range: (u16, u16),
    scope_steps: Vec<Step>,
    /// Per source, the loss count at each open scope's begin, innermost last.
    scope_losses: HashMap<u32, Vec<u64>, BuildIdHasher>,
}

impl Analyzer {
    /// A new analysis. The catalog is not needed by the built-in measures;
    /// it is taken so that later measures of user classes can name their
    /// arguments.
    ///
    /// ```
    /// use qtrace::analysis::{AnalysisOptions, Analyzer};
    /// use qtrace::classes::{system, Catalog};
    /// use qtrace::Event;
    ///
    /// let mut a = Analyzer::new(&Catalog::builtin(), AnalysisOptions::default());
    /// a.push(&Event::new(0, system::SCHEDULE, 0, [1, 0]));
    /// a.push(&Event::new(100, system::SCHEDULE, 0, [2, 0]));
    /// assert_eq!(a.finish().tasks[&1].cpu_ns, 100);
    /// ```
    pub fn new(catalog: &Catalog, options: AnalysisOptions) -> Self {
        let latency = options.latency.as_ref().map(|_| LatencyReport::default());
        let table = ScopeTable::new(catalog);
        let scope_range = (0..table.len())
            .filter_map(|i| table.events(i))
            .fold((u16::MAX, 0), |(lo, hi), (b, e)| {
                (lo.min(b.0).min(e.0), hi.max(b.0).max(e.0))
            });
        Analyzer {
            options,
            report: Report {
                latency,
                ..Report::default()
            },
            tasks: HashMap::default(),
            cpus: HashMap::default(),
            interrupts: HashMap::default(),
            losses: 0,
            pending_irqs: 0,
            irq_sources: [0; IRQ_LIST],
            irq_listed: 0,
            started: false,
            open: HashMap::new(),
            scopes: table.tracker(MAX_SCOPE_DEPTH),
            scope_range,
            scope_steps: Vec::new(),
            scope_losses: HashMap::default(),
        }
    }

    /// Counts the scope steps in `scope_steps`.
    #[inline(never)]
    fn scope_steps(&mut self) {
        for step in self.scope_steps.drain(..) {
            match step {
                Step::Begin { source, .. } => {
                    self.scope_losses
                        .entry(source)
                        .or_default()
                        .push(self.losses);
                }
                Step::End {
                    source,
                    scope,
                    begin,
                    t,
                    code,
                    ..
                } => {
                    let at = self
                        .scope_losses
                        .get_mut(&source)
                        .and_then(|v| v.pop())
                        .unwrap_or(0);
                    let name = self.scopes.table().name(scope).unwrap_or("scope");
                    let rep = match self.report.scopes.get_mut(name) {
                        Some(r) => r,
                        None => self.report.scopes.entry(name.to_string()).or_default(),
                    };
                    match code {
                        None => rep.unended += 1,
                        Some(c) => {
                            rep.count += 1;
                            rep.nonzero_codes += (c != 0) as u64;
                            if at == self.losses {
                                rep.durations.push(t - begin.min(t));
                            } else {
                                rep.lossy += 1;
                            }
                        }
                    }
                }
            }
        }
    }

    fn task(&mut self, id: u64) -> &mut TaskState {
        self.tasks.entry(id).or_default()
    }

    /// Ends the running span of `source` at `t` (busy or idle) and starts the
    /// next one, running `next` (or idle).
    fn switch(&mut self, source: u32, t: u64, next: Option<u64>) {
        let losses = self.losses;
        let first = self.report.first_ns;
        let cpu = self.cpus.entry(source).or_insert_with(|| CpuState {
            since: first,
            ..CpuState::default()
        });
        let (prev, since, clean) = (cpu.running, cpu.since, cpu.losses_at == losses);
        let span = t.saturating_sub(since);
        cpu.running = next;
        cpu.since = t.max(since);
        cpu.losses_at = losses;
        let rep = &mut cpu.report;
        match (clean, prev) {
            (false, _) => rep.lossy_ns += span,
            (true, Some(_)) => rep.busy_ns += span,
            (true, None) => rep.idle_ns += span,
        }
        if let Some(task) = prev {
            let st = self.task(task);
            if clean {
                st.report.cpu_ns += span;
            } else {
                st.report.cpu_lossy += 1;
            }
            if st.on == Some(source) && next != Some(task) {
                st.on = None;
                match &mut st.waiting {
                    // Taken off its source in a wait: blocked, not preempted.
                    Some((_, _, lost_cpu)) => *lost_cpu = true,
                    // Taken off its source for another task with its job
                    // unfinished: preempted.
                    None if next.is_some() && !st.pending.is_empty() => st.report.preemptions += 1,
                    None => {}
                }
            }
        }
    }

    /// Ends the pending interrupt of `source` at `t` at the latest.
    #[inline(never)]
    fn close_irq(&mut self, source: u32, t: u64) {
        let listed = &self.irq_sources[..self.irq_listed];
        let cap = self.options.interrupt_max_ns;
        if let Some(cpu) = self.cpus.get_mut(&source) {
            if let Some((irq, start)) = cpu.irq.take() {
                self.pending_irqs -= 1;
                if let Some(i) = listed.iter().position(|&s| s == source) {
                    self.irq_listed -= 1;
                    self.irq_sources[i] = self.irq_sources[self.irq_listed];
                }
                let end = t.min(start.saturating_add(cap));
                self.interrupts
                    .entry(irq)
                    .or_default()
                    .handler
                    .push(end.saturating_sub(start));
            }
        }
    }

    /// Analyses one event (events must come in time order; one earlier than
    /// the previous is taken at the previous one's time).
    #[inline]
    pub fn push(&mut self, e: &Event) {
        if !self.started {
            self.started = true;
            self.report.first_ns = e.time;
            self.report.last_ns = e.time;
        }
        let t = e.time.max(self.report.last_ns);
        self.report.last_ns = t;
        if e.id == tracer::HOOPS {
            self.report.hoops += 1;
            self.report.lost = self.report.lost.saturating_add(e.args[0]);
            self.losses += 1;
            return;
        }
        self.report.events += 1;
        // The common event (a user event, no interrupt pending on its source)
        // costs a few compares here; the work is out of line.
        if self.irq_listed != self.pending_irqs
            || self.irq_sources[..self.irq_listed].contains(&e.source)
        {
            self.close_irq(e.source, t);
        }
        if matches!(
            e.id,
            system::SCHEDULE
                | system::ACTIVATE
                | system::ENDCYCLE
                | system::DELAY
                | system::SLEEP
                | system::DISABLE
                | system::DESTROY
                | semaphore::WAIT
                | semaphore::SIGNAL
                | semaphore::WAITNB
                | lowlevel::INTERRUPT
        ) {
            self.measure(e, t);
        }
        if self.options.latency.is_some() {
            self.latency(e, t);
        }
        if e.id.0 >= self.scope_range.0 && e.id.0 <= self.scope_range.1 {
            self.scopes.push(e, &mut self.scope_steps);
            self.scope_steps();
        }
    }

    /// The measures of the system, semaphore and interrupt events.
    #[inline(never)]
    fn measure(&mut self, e: &Event, t: u64) {
        let task = e.args[0];
        match e.id {
            system::SCHEDULE => {
                self.switch(e.source, t, Some(task));
                if let Some(cpu) = self.cpus.get_mut(&e.source) {
                    cpu.report.dispatches += 1;
                }
                let losses = self.losses;
                let st = self.task(task);
                st.report.dispatches += 1;
                if let Some(old) = st.on.replace(e.source) {
                    // Still running elsewhere by the events: that span ends here.
                    if old != e.source {
                        self.switch(old, t, None);
                        self.tasks.entry(task).or_default().on = Some(e.source);
                    }
                }
                let st = self.task(task);
                if let Some((since, at, lost_cpu)) = st.waiting.take() {
                    if lost_cpu {
                        st.report.blocked_waits += 1;
                        if at == losses {
                            st.report.blocked_ns += t - since.min(t);
                        } else {
                            st.report.blocked_lossy += 1;
                        }
                    }
                }
            }
            system::ACTIVATE => {
                let losses = self.losses;
                let st = self.task(task);
                st.report.activations += 1;
                if st.pending.len() >= MAX_PENDING {
                    st.pending.pop_front();
                    st.report.unmatched += 1;
                }
                st.pending.push_back((t, losses));
            }
            system::ENDCYCLE
            | system::DELAY
            | system::SLEEP
            | system::DISABLE
            | system::DESTROY => {
                let losses = self.losses;
                if e.id == system::ENDCYCLE {
                    let st = self.task(task);
                    match st.pending.pop_front() {
                        Some((start, at)) if at == losses => {
                            st.report.response.push(t - start.min(t))
                        }
                        Some(_) => st.report.response_lossy += 1,
                        None => st.report.unmatched += 1,
                    }
                }
                // The task gives up its source: the source is idle from here.
                let on = self.tasks.get(&task).and_then(|s| s.on);
                if let Some(source) = on {
                    let cpu_runs_it = self.cpus.get(&source).and_then(|c| c.running) == Some(task);
                    if cpu_runs_it {
                        self.switch(source, t, None);
                    }
                    if let Some(st) = self.tasks.get_mut(&task) {
                        st.on = None;
                    }
                }
            }
            semaphore::WAIT => {
                let losses = self.losses;
                let st = self.task(task);
                st.waiting = Some((t, losses, false));
            }
            semaphore::SIGNAL | semaphore::WAITNB => {
                // The task runs (it logs): a wait it had did not block it.
                let st = self.task(task);
                if matches!(st.waiting, Some((_, _, false))) {
                    st.waiting = None;
                }
            }
            lowlevel::INTERRUPT => {
                let first = self.report.first_ns;
                let cpu = self.cpus.entry(e.source).or_insert_with(|| CpuState {
                    since: first,
                    ..CpuState::default()
                });
                if cpu.irq.replace((task, t)).is_none() {
                    if self.irq_listed == self.pending_irqs && self.irq_listed < IRQ_LIST {
                        self.irq_sources[self.irq_listed] = e.source;
                        self.irq_listed += 1;
                    }
                    self.pending_irqs += 1;
                }
                self.interrupts.entry(task).or_default().count += 1;
            }
            _ => {}
        }
    }

    fn latency(&mut self, e: &Event, t: u64) {
        let Some(spec) = &self.options.latency else {
            return;
        };
        let key = match spec.key {
            MatchKey::Source => u64::from(e.source),
            MatchKey::Arg(i) => e.args[i.min(1)],
            MatchKey::Any => 0,
        };
        let (from, to) = (spec.from, spec.to);
        let Some(rep) = self.report.latency.as_mut() else {
            return;
        };
        // An event that is both (from == to) ends the open interval, then starts one.
        if e.id == to {
            match self.open.get_mut(&key).and_then(|q| q.pop_front()) {
                Some((start, at)) if at == self.losses => rep.samples.push(t - start.min(t)),
                Some(_) => rep.lossy += 1,
                None => rep.unmatched_ends += 1,
            }
        }
        if e.id == from {
            let q = self.open.entry(key).or_default();
            if q.len() >= MAX_PENDING {
                q.pop_front();
                rep.open_starts += 1;
            }
            q.push_back((t, self.losses));
        }
    }

    /// Closes what is open at the last event's time and returns the report.
    ///
    /// ```
    /// use qtrace::analysis::{AnalysisOptions, Analyzer};
    /// use qtrace::classes::{system, Catalog};
    /// use qtrace::Event;
    ///
    /// let mut a = Analyzer::new(&Catalog::builtin(), AnalysisOptions::default());
    /// a.push(&Event::new(0, system::ACTIVATE, 0, [1, 0]));
    /// a.push(&Event::new(200, system::SCHEDULE, 0, [1, 0])); // still running at the end
    /// let report = a.finish();
    /// assert_eq!((report.events, report.span_ns()), (2, 200));
    /// assert_eq!(report.tasks[&1].dispatches, 1);
    /// ```
    pub fn finish(mut self) -> Report {
        let end = self.report.last_ns;
        let mut sources: Vec<u32> = self.cpus.keys().copied().collect();
        sources.sort_unstable();
        for s in sources {
            self.close_irq(s, end);
            self.switch(s, end, None);
        }
        // A source that never ran a task (interrupts only) is no CPU here.
        self.report.cpus = self
            .cpus
            .drain()
            .filter(|(_, c)| c.report.dispatches > 0)
            .map(|(id, c)| (id, c.report))
            .collect();
        self.report.tasks = self.tasks.drain().map(|(id, t)| (id, t.report)).collect();
        self.report.interrupts = self.interrupts.drain().collect();
        if let Some(rep) = self.report.latency.as_mut() {
            rep.open_starts += self.open.values().map(|q| q.len() as u64).sum::<u64>();
        }
        self.scopes.finish(end, &mut self.scope_steps);
        self.scope_steps();
        self.report.scope_unpaired = self.scopes.unpaired();
        self.report
    }
}
