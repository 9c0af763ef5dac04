//! The [`Analyzer`]: a state machine fed one event at a time, in time
//! order, in bounded memory.

use super::id_map::IdMap;
use super::id_set::IdSet;
use super::*;
use crate::classes::counters::CounterTable;
use qtrace_core::classes::counter::CounterStats;
use qtrace_core::classes::flow::{WakeCause, WakeFlow};

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
    /// A wake not yet followed by a schedule: (cause, time, source, loss
    /// count then).
    woken: Option<(WakeCause, u64, u32, u64)>,
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
    /// The last interrupt since the source's last schedule: (irq, start).
    last_irq: Option<(u64, u64)>,
}

/// Computes a [`Report`] from events pushed in time order (see the [module
/// documentation](crate::analysis)). Memory: state per task, source and interrupt line,
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
    tasks: IdMap<u64, TaskState>,
    cpus: IdMap<u32, CpuState>,
    interrupts: IdMap<u64, IrqReport>,
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
    /// The ids some measure takes (the measured kinds, hoops, the latency's
    /// two, the scopes' and counters' ranges): an event of any other id, of
    /// a source with no pending interrupt, is counted and left at once.
    taken: IdSet,
    scope_steps: Vec<Step>,
    /// Per source, the loss count at each open scope's begin, innermost last.
    scope_losses: HashMap<u32, Vec<u64>, BuildIdHasher>,
    /// The catalog's counters, their ids' bounds (as `scope_range`), and
    /// each one's values so far.
    counters: CounterTable,
    counter_range: (u16, u16),
    counter_stats: Vec<CounterStats>,
    /// The queue counters' (FORMAT.md 1.3.4) summaries, per (counter,
    /// queue): one per queue, apart from `counter_stats`.
    queue_counter_stats: BTreeMap<(usize, u64), CounterStats>,
    /// Per semaphore, the tasks that waited on it, oldest first: (task,
    /// time of its wait). Semaphore numbers are small: an [`IdMap`], not a
    /// hash. A `VecDeque`: a semaphore waited on and never signalled keeps
    /// [`MAX_PENDING`] waiters and drops its oldest at each new wait.
    sem_waiters: IdMap<u64, VecDeque<(u64, u64)>>,
    /// Whether samples and wake-up flows are kept (`false` for the
    /// exports, which only follow the wakes: bounded memory).
    keep: bool,
    /// The task the last event pushed woke, and the wake-up flow the last
    /// schedule closed, for [`Analyzer::take_wake`] and
    /// [`Analyzer::take_flow`].
    last_wake: Option<u64>,
    last_flow: Option<WakeFlow>,
}

/// Whether [`Analyzer::measure`] takes `id` (a `match`: a few compares,
/// where a scan of [`MEASURED`] was a loop; the exports' wake-up flows
/// take the same events).
pub(crate) const fn measured(id: EventId) -> bool {
    matches!(
        id,
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
    )
}

/// The ids [`measured`] takes, for the set of ids [`Analyzer::push`]
/// cannot leave at once.
const MEASURED: [EventId; 11] = [
    system::SCHEDULE,
    system::ACTIVATE,
    system::ENDCYCLE,
    system::DELAY,
    system::SLEEP,
    system::DISABLE,
    system::DESTROY,
    semaphore::WAIT,
    semaphore::SIGNAL,
    semaphore::WAITNB,
    lowlevel::INTERRUPT,
];

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
        let counters = CounterTable::new(catalog);
        let counter_range = catalog
            .events()
            .iter()
            .filter(|e| counters.lookup(e.id).is_some())
            .fold((u16::MAX, 0), |(lo, hi), e| {
                (lo.min(e.id.0), hi.max(e.id.0))
            });
        let mut taken = IdSet::new();
        for id in MEASURED.into_iter().chain([tracer::HOOPS]) {
            taken.insert(id);
        }
        if let Some(spec) = &options.latency {
            taken.insert(spec.from);
            taken.insert(spec.to);
        }
        taken.insert_range(scope_range.0, scope_range.1);
        taken.insert_range(counter_range.0, counter_range.1);
        Analyzer {
            options,
            report: Report {
                latency,
                ..Report::default()
            },
            tasks: IdMap::default(),
            cpus: IdMap::default(),
            interrupts: IdMap::default(),
            losses: 0,
            pending_irqs: 0,
            irq_sources: [0; IRQ_LIST],
            irq_listed: 0,
            started: false,
            open: HashMap::new(),
            scopes: table.tracker(MAX_SCOPE_DEPTH),
            scope_range,
            taken,
            scope_steps: Vec::new(),
            scope_losses: HashMap::default(),
            counter_range,
            counter_stats: vec![CounterStats::default(); counters.counters().len()],
            queue_counter_stats: BTreeMap::new(),
            counters,
            sem_waiters: IdMap::default(),
            keep: true,
            last_wake: None,
            last_flow: None,
        }
    }

    /// An analysis that only derives the wake-up flows as they happen
    /// ([`take_wake`](Self::take_wake), [`take_flow`](Self::take_flow)):
    /// it keeps no sample and no list of flows, so its memory is its state
    /// per task, source, semaphore and interrupt line (the exports draw the
    /// flows with it, `src/export/wakes.rs`).
    #[cfg_attr(not(feature = "export"), allow(dead_code))]
    pub(crate) fn for_wakes(interrupt_max_ns: u64) -> Self {
        let options = AnalysisOptions {
            interrupt_max_ns,
            ..AnalysisOptions::default()
        };
        Analyzer {
            keep: false,
            ..Analyzer::new(&Catalog::builtin(), options)
        }
    }

    /// The task that the last event pushed woke (a derived wake-up flow
    /// begins at it), once.
    #[cfg_attr(not(feature = "export"), allow(dead_code))]
    pub(crate) fn take_wake(&mut self) -> Option<u64> {
        self.last_wake.take()
    }

    /// The wake-up flow that the last `system:schedule` pushed ended, once.
    #[cfg_attr(not(feature = "export"), allow(dead_code))]
    pub(crate) fn take_flow(&mut self) -> Option<WakeFlow> {
        self.last_flow.take()
    }

    /// Records that `task` was woken by `cause` at `t` (logged by
    /// `source`), unless it runs or is already woken.
    fn wake(&mut self, task: u64, cause: WakeCause, t: u64, source: u32) {
        let losses = self.losses;
        let st = self.task(task);
        if st.on.is_some() || st.woken.is_some() {
            return;
        }
        st.woken = Some((cause, t, source, losses));
        match cause {
            WakeCause::Signal { .. } => st.report.woken_by_signal += 1,
            WakeCause::Interrupt { .. } => st.report.woken_by_irq += 1,
        }
        self.last_wake = Some(task);
    }

    /// The task a signal of `by` on `sem` releases: the oldest waiter still
    /// blocked there (waiters since scheduled, or waiting again, leave).
    fn signal_wakes(&mut self, by: u64, sem: u64, t: u64, source: u32) {
        let Some(list) = self.sem_waiters.get_mut(&sem) else {
            return;
        };
        let tasks = &self.tasks;
        // Whether (task, wait time) still waits there, and is blocked.
        let state = |&(task, since): &(u64, u64)| match tasks.get(&task).and_then(|s| s.waiting) {
            Some((w, _, lost)) if w == since && task != by => Some(lost),
            _ => None,
        };
        // One pass: the waiters no longer there leave, and so does the
        // oldest blocked one, which the signal wakes.
        let mut woken = None;
        list.retain(|w| match state(w) {
            Some(true) if woken.is_none() => {
                woken = Some(w.0);
                false
            }
            Some(_) => true,
            None => false,
        });
        if let Some(task) = woken {
            self.wake(task, WakeCause::Signal { sem, by }, t, source);
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
        self.tasks.get_or_default(id)
    }

    /// Ends the running span of `source` at `t` (busy or idle) and starts the
    /// next one, running `next` (or idle).
    #[inline(always)]
    fn switch(&mut self, source: u32, t: u64, next: Option<u64>) {
        let losses = self.losses;
        let first = self.report.first_ns;
        let cpu = self.cpus.get_or_insert_with(source, || CpuState {
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
        let (cap, keep) = (self.options.interrupt_max_ns, self.keep);
        if let Some(cpu) = self.cpus.get_mut(&source) {
            if let Some((irq, start)) = cpu.irq.take() {
                self.pending_irqs -= 1;
                if let Some(i) = listed.iter().position(|&s| s == source) {
                    self.irq_listed -= 1;
                    self.irq_sources[i] = self.irq_sources[self.irq_listed];
                }
                let end = t.min(start.saturating_add(cap));
                if keep {
                    self.interrupts
                        .get_or_default(irq)
                        .handler
                        .push(end.saturating_sub(start));
                }
            }
        }
    }

    /// Analyses one event (events must come in time order; one earlier than
    /// the previous is taken at the previous one's time).
    #[inline]
    pub fn push(&mut self, e: &Event) {
        // The common event (an id no measure takes, in time order, no
        // interrupt pending on its source) is counted here, inlined into
        // the caller's loop: a call per event cost a quarter of the
        // analysis of a user event (docs/benchmarks-history.md, "The
        // analysis's common event inline").
        if !self.taken.contains(e.id)
            && self.started
            && e.time >= self.report.last_ns
            && self.irq_listed == self.pending_irqs
            && !self.irq_sources[..self.irq_listed].contains(&e.source)
        {
            self.report.last_ns = e.time;
            self.report.events += 1;
            return;
        }
        self.push_taken(e);
    }

    /// [`Analyzer::push`] of an event a measure takes (or the first, or
    /// one out of order, or one of a source with an interrupt pending).
    #[inline(never)]
    fn push_taken(&mut self, e: &Event) {
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
        if measured(e.id) {
            self.measure(e, t);
        }
        if self.options.latency.is_some() {
            self.latency(e, t);
        }
        if e.id.0 >= self.scope_range.0 && e.id.0 <= self.scope_range.1 {
            self.scopes.push(e, &mut self.scope_steps);
            self.scope_steps();
        }
        if e.id.0 >= self.counter_range.0 && e.id.0 <= self.counter_range.1 {
            self.counter(e);
        }
    }

    /// Adds a counter record's value to its counter's summary.
    #[inline(never)]
    fn counter(&mut self, e: &Event) {
        let Some(i) = self.counters.lookup(e.id) else {
            return;
        };
        let Some(info) = self.counters.get(i) else {
            return;
        };
        let stats = match info.queue(e) {
            Some(q) => Some(self.queue_counter_stats.entry((i, q)).or_default()),
            None => self.counter_stats.get_mut(i),
        };
        if let Some(stats) = stats {
            stats.push(info.kind.value(e.args[0]));
        }
    }

    /// The measures of the system, semaphore and interrupt events. Inlined
    /// into [`Analyzer::push_taken`], as [`Analyzer::switch`] is into it: a
    /// call a level cost 15–20 instructions of a measured event (saving and
    /// restoring registers; docs/benchmarks-history.md, "The analysis's
    /// lookups inline").
    #[inline(always)]
    fn measure(&mut self, e: &Event, t: u64) {
        let task = e.args[0];
        match e.id {
            system::SCHEDULE => {
                let source = e.source;
                self.switch(source, t, Some(task));
                // One lookup each for the source and the task: a schedule
                // is the commonest measured event.
                if let Some(cpu) = self.cpus.get_mut(&source) {
                    cpu.report.dispatches += 1;
                    cpu.last_irq = None;
                }
                let (losses, keep) = (self.losses, self.keep);
                let st = self.tasks.get_or_default(task);
                st.report.dispatches += 1;
                let st = match st.on.replace(source) {
                    // Still running elsewhere by the events: that span ends here.
                    Some(old) if old != source => {
                        self.switch(old, t, None);
                        let st = self.tasks.get_or_default(task);
                        st.on = Some(source);
                        st
                    }
                    _ => st,
                };
                if let Some((cause, from, from_source, at)) = st.woken.take() {
                    let lossy = at != losses;
                    if lossy {
                        st.report.wakeups_lossy += 1;
                    } else if keep {
                        st.report.wakeups.push(t - from.min(t));
                    }
                    let flow = WakeFlow {
                        task,
                        cause,
                        from_ns: from,
                        from_source,
                        to_ns: t,
                        to_source: source,
                        lossy,
                    };
                    if !keep {
                        self.last_flow = Some(flow);
                    } else if self.report.wake_flows.len() < MAX_WAKE_FLOWS {
                        self.report.wake_flows.push(flow);
                    } else {
                        self.report.wake_flows_over += 1;
                    }
                }
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
                let cap = self.options.interrupt_max_ns;
                let irq = self.cpus.get(&e.source).and_then(|c| c.last_irq);
                if let Some((irq, start)) = irq.filter(|&(_, at)| t - at.min(t) <= cap) {
                    self.wake(task, WakeCause::Interrupt { irq }, start, e.source);
                }
            }
            system::ENDCYCLE
            | system::DELAY
            | system::SLEEP
            | system::DISABLE
            | system::DESTROY => {
                let losses = self.losses;
                if e.id == system::ENDCYCLE {
                    let keep = self.keep;
                    let st = self.task(task);
                    match st.pending.pop_front() {
                        Some((start, at)) if at == losses => {
                            if keep {
                                st.report.response.push(t - start.min(t))
                            }
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
                let q = self.sem_waiters.get_or_default(e.args[1]);
                if q.len() >= MAX_PENDING {
                    q.pop_front();
                }
                q.push_back((task, t));
            }
            semaphore::SIGNAL | semaphore::WAITNB => {
                // The task runs (it logs): a wait it had did not block it.
                let st = self.task(task);
                if matches!(st.waiting, Some((_, _, false))) {
                    st.waiting = None;
                }
                if e.id == semaphore::SIGNAL {
                    self.signal_wakes(task, e.args[1], t, e.source);
                }
            }
            lowlevel::INTERRUPT => {
                let first = self.report.first_ns;
                let cpu = self.cpus.get_or_insert_with(e.source, || CpuState {
                    since: first,
                    ..CpuState::default()
                });
                cpu.last_irq = Some((task, t));
                if cpu.irq.replace((task, t)).is_none() {
                    if self.irq_listed == self.pending_irqs && self.irq_listed < IRQ_LIST {
                        self.irq_sources[self.irq_listed] = e.source;
                        self.irq_listed += 1;
                    }
                    self.pending_irqs += 1;
                }
                self.interrupts.get_or_default(task).count += 1;
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
        let mut sources: Vec<u32> = self.cpus.keys().collect();
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
        self.report.tasks = self
            .tasks
            .drain()
            .map(|(id, mut t)| {
                t.report.wakeups_unscheduled += t.woken.is_some() as u64;
                (id, t.report)
            })
            .collect();
        self.report.interrupts = self.interrupts.drain().collect();
        if let Some(rep) = self.report.latency.as_mut() {
            rep.open_starts += self.open.values().map(|q| q.len() as u64).sum::<u64>();
        }
        self.scopes.finish(end, &mut self.scope_steps);
        self.scope_steps();
        self.report.scope_unpaired = self.scopes.unpaired();
        for (info, stats) in self.counters.counters().iter().zip(&self.counter_stats) {
            if stats.count + stats.nan > 0 {
                self.report.counters.insert(info.name.clone(), *stats);
            }
        }
        for (&(i, q), stats) in &self.queue_counter_stats {
            if let Some(info) = self.counters.get(i) {
                self.report
                    .counters
                    .insert(info.series_name(Some(q)), *stats);
            }
        }
        self.report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measured_takes_the_measured_list_and_nothing_else() {
        let ids: Vec<EventId> = (0..=u16::MAX)
            .map(EventId)
            .filter(|&id| measured(id))
            .collect();
        let mut list = MEASURED.to_vec();
        list.sort();
        assert_eq!(ids, list);
    }
}
