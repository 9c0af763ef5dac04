//! What `qtrace live` shows, without a terminal: events in, a [`Snapshot`]
//! out. Pure and deterministic (wall-clock times are passed in), so the
//! unit tests check exact figures.
//!
//! The per-task and per-CPU figures are the library's own analysis
//! ([`qtrace::analysis::Analyzer`], what `qtrace analyze` prints) run over
//! the events of a sliding window: the last `window` of trace time, at most
//! `max_events` events (past that the window is the newest `max_events`).
//! The window starts with the state the analysis would have had there —
//! which task runs on each source — replayed as `schedule` events at its
//! start, so a task running across the start keeps its CPU time; a job
//! activated before the window has no response time in it.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::Duration;

use qtrace::analysis::{AnalysisOptions, Analyzer};
use qtrace::classes::{system, tracer, Catalog};
use qtrace::macros::CounterKind;
use qtrace::receiver::{ReceiverSummary, RejectionCounts};
use qtrace::wire::{close_part, unclosed_stream};
use qtrace::{ClassId, Event};

/// Recent events kept per class.
pub const RECENT: usize = 64;

/// Values kept per counter and source: its sparkline's length.
pub const SPARK: usize = 16;

/// A sender stream not closed and silent this long is shown `unclosed`.
pub const SILENT: Duration = Duration::from_secs(2);

/// Receiver accounts kept at most, waiting for the file (see
/// [`Model::settle`]).
const PENDING: usize = 64;

/// A rate is events over the last second; it is shown once the samples
/// of a sender span at least this long (before: `-`, not a guess).
pub const RATE_SPAN: Duration = Duration::from_millis(500);

/// How a task row is ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortBy {
    /// CPU share, largest first.
    Cpu,
    /// Task number, smallest first.
    Task,
    /// Worst response time (max), largest first.
    Response,
    /// Preemptions, most first.
    Preemptions,
    /// Time blocked, longest first.
    Blocked,
}

impl SortBy {
    /// The next order (the `s` key).
    pub fn next(self) -> SortBy {
        match self {
            SortBy::Cpu => SortBy::Task,
            SortBy::Task => SortBy::Response,
            SortBy::Response => SortBy::Preemptions,
            SortBy::Preemptions => SortBy::Blocked,
            SortBy::Blocked => SortBy::Cpu,
        }
    }
    /// Its name in the view.
    pub fn name(self) -> &'static str {
        match self {
            SortBy::Cpu => "cpu",
            SortBy::Task => "task",
            SortBy::Response => "max response",
            SortBy::Preemptions => "preemptions",
            SortBy::Blocked => "blocked",
        }
    }
}

/// One task in the window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskRow {
    /// The task number (`args[0]` of its system events).
    pub task: u64,
    /// CPU time in the window, in thousandths of the window's span (one
    /// CPU's worth: 1000 is one CPU all the time).
    pub cpu_permille: u64,
    /// Activations.
    pub activations: u64,
    /// Response time (activation to end of cycle) median, 99th percentile
    /// and maximum, in ns, of the jobs that ended in the window.
    pub p50: u64,
    /// See `p50`.
    pub p99: u64,
    /// See `p50`.
    pub max: u64,
    /// Jobs ended in the window with a response time.
    pub jobs: u64,
    /// Preemptions.
    pub preemptions: u64,
    /// Time blocked on semaphores, in ns.
    pub blocked_ns: u64,
}

/// One source (CPU) in the window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuRow {
    /// The source number.
    pub source: u32,
    /// Busy time in thousandths of the measured time.
    pub busy_permille: u64,
}

/// Where a sender's stream stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Health {
    /// Its datagrams keep coming.
    Open,
    /// Its close datagram arrived: every event is accounted for.
    Closed,
    /// Silent for [`SILENT`] without a close: events after its last
    /// datagram may be lost without a count.
    Unclosed,
    /// The receiver refuses it (its sender table is full).
    Refused,
}

impl Health {
    /// Its word in the view.
    pub fn word(self) -> &'static str {
        match self {
            Health::Open => "open",
            Health::Closed => "closed",
            Health::Unclosed => "unclosed",
            Health::Refused => "refused",
        }
    }
}

/// One sender (or the followed file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SenderRow {
    /// Who: `ADDR #ID` for a sender, the file name for a followed file.
    pub name: String,
    /// Events received so far.
    pub events: u64,
    /// Events a second over the last second (the receiver's clock for a
    /// sender, the view's for a followed file); 0 once its stream closed;
    /// `None` until its samples span [`RATE_SPAN`].
    pub rate: Option<u64>,
    /// Events lost so far, all causes.
    pub lost: u64,
    /// Its stream's health.
    pub health: Health,
}

/// One counter (FORMAT.md 1.3.2) of one source: its recent values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterRow {
    /// The counter, `class:S`.
    pub name: String,
    /// Its unit (`""` for none).
    pub unit: String,
    /// The kind of its values.
    pub kind: CounterKind,
    /// The source that logged them.
    pub source: u32,
    /// The queue whose series it is, for a queue counter (FORMAT.md
    /// 1.3.4: the record's `arg1`), which `name` ends with (` (queue N)`).
    pub queue: Option<u64>,
    /// Its last [`SPARK`] values as logged (`arg0`), oldest first: the
    /// last is the current value.
    pub values: Vec<u64>,
}

/// Datagrams rejected from one source address, by reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RejectedRow {
    /// Where they came from.
    pub addr: SocketAddr,
    /// How many, of each reason.
    pub counts: RejectionCounts,
}

/// What the view draws at one refresh.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Trace time covered by the window, in ns.
    pub span_ns: u64,
    /// Events in the window (hoops records and unclosed-stream marks not
    /// counted).
    pub events: u64,
    /// Events the window's hoops records say were lost.
    pub lost: u64,
    /// Tasks, in the chosen order (one task when filtered).
    pub tasks: Vec<TaskRow>,
    /// Sources that ran tasks, by number.
    pub cpus: Vec<CpuRow>,
    /// Senders, in order of first appearance.
    pub senders: Vec<SenderRow>,
    /// Datagrams the receiver rejected (forged, keyed otherwise, replayed,
    /// ...), per source address: the stream health of what never became a
    /// sender's stream.
    pub rejected: Vec<RejectedRow>,
    /// Whether the receiver holds keys (`--key-file`): how a keyed
    /// datagram it rejected is described.
    pub keyed: bool,
    /// The chosen class's name, and its recent events as lines, newest last.
    pub class: String,
    /// See `class`.
    pub recent: Vec<String>,
    /// Counters, in event order, then by source.
    pub counters: Vec<CounterRow>,
    /// Events the view could not keep up with (never the receiver's: it
    /// writes every event).
    pub skipped: u64,
}

/// A sender's counts at earlier refreshes (for its rate) and when it last
/// grew.
#[derive(Debug, Default)]
struct SenderSeen {
    samples: VecDeque<(Duration, u64)>,
    grew_at: Duration,
    events: u64,
}

/// The live model: feed it events ([`Model::push`]) and receiver accounts
/// ([`Model::senders`]); ask it for a [`Snapshot`].
#[derive(Debug)]
pub struct Model {
    catalog: Catalog,
    window_ns: u64,
    max_events: usize,
    window: VecDeque<Event>,
    /// Which task runs on each source just before the window (from the
    /// events that left it), and the time of the last one that left.
    running: HashMap<u32, u64>,
    left_at: Option<u64>,
    recent: HashMap<u16, VecDeque<Event>>,
    /// Per event number: whether it is a counter (of `catalog`), and
    /// then whether a queue counter (a series per queue too).
    is_counter: Vec<Option<bool>>,
    /// Per counter event, source and queue: its last [`SPARK`] values.
    series: HashMap<SeriesKey, VecDeque<u64>>,
    /// The chosen class for recent events, and the task filter.
    pub class: ClassId,
    /// Only this task's row, when set.
    pub task: Option<u64>,
    /// The task order.
    pub sort: SortBy,
    senders: Vec<((SocketAddr, u32), SenderSeen)>,
    rows: Vec<SenderRow>,
    rejected: Vec<RejectedRow>,
    /// Whether the receiver holds keys (see [`Snapshot::keyed`]).
    pub keyed: bool,
    /// The followed file's row (file mode): name, wall samples.
    file: Option<(String, SenderSeen, Health)>,
    arrived: u64,
    /// Records that are a sender's events (not hoops, marks or the end).
    events_read: u64,
    /// Receiver accounts not shown yet (see [`Model::account`]).
    pending: VecDeque<ReceiverSummary>,
    lost_total: u64,
    /// Events the input dropped before the model (it could not keep up).
    pub skipped: u64,
    /// Whether the input ended (the receiver stopped): a stream not
    /// closed by then never will be.
    ended: bool,
}

impl Model {
    /// A model over `window` of trace time, at most `max_events` events,
    /// naming events with `catalog`.
    pub fn new(catalog: Catalog, window: Duration, max_events: usize) -> Model {
        Model {
            is_counter: counter_events(&catalog),
            series: HashMap::new(),
            catalog,
            window_ns: u64::try_from(window.as_nanos()).unwrap_or(u64::MAX),
            max_events: max_events.max(1),
            window: VecDeque::new(),
            running: HashMap::new(),
            left_at: None,
            recent: HashMap::new(),
            class: system::CLASS,
            task: None,
            sort: SortBy::Cpu,
            senders: Vec::new(),
            rows: Vec::new(),
            rejected: Vec::new(),
            keyed: false,
            file: None,
            arrived: 0,
            events_read: 0,
            pending: VecDeque::new(),
            lost_total: 0,
            skipped: 0,
            ended: false,
        }
    }

    /// Names events with `catalog` from now on (a file's own table).
    pub fn set_catalog(&mut self, catalog: Catalog) {
        self.is_counter = counter_events(&catalog);
        self.catalog = catalog;
    }

    /// Adds one event (in arrival order; times in ns).
    pub fn push(&mut self, e: &Event) {
        self.arrived += 1;
        if e.id == tracer::HOOPS {
            self.lost_total = self.lost_total.saturating_add(e.args[0]);
        }
        if unclosed_stream(e).is_none() && close_part(e).is_some() {
            return;
        }
        if e.id != tracer::HOOPS && unclosed_stream(e).is_none() {
            self.events_read += 1;
        }
        if let Some(c) = self.catalog.class_of(e.id) {
            let ring = self.recent.entry(c.0).or_default();
            if ring.len() == RECENT {
                ring.pop_front();
            }
            ring.push_back(*e);
        }
        if let Some(&Some(per_queue)) = self.is_counter.get(usize::from(e.id.0)) {
            let queue = per_queue.then_some(e.args[1]);
            let values = self.series.entry((e.id.0, e.source, queue)).or_default();
            if values.len() == SPARK {
                values.pop_front();
            }
            values.push_back(e.args[0]);
        }
        self.window.push_back(*e);
        let last = self.window.back().map_or(0, |e| e.time);
        while let Some(front) = self.window.front() {
            let old = last.saturating_sub(front.time) > self.window_ns;
            if !old && self.window.len() <= self.max_events {
                break;
            }
            if let Some(gone) = self.window.pop_front() {
                self.leave(&gone);
            }
        }
    }

    /// The input jumped ahead (it could not keep up): the window starts
    /// again from the next event, as nothing is known of the time between.
    pub fn gap(&mut self) {
        self.window.clear();
        self.running.clear();
        self.left_at = None;
    }

    /// Keeps the state at the window's start as the analysis reads it: a
    /// `schedule` puts its task on its source; the task's own end of
    /// running (`endcycle`, `delay`, `sleep`, `disable`, `destroy`) idles it.
    fn leave(&mut self, e: &Event) {
        self.left_at = Some(e.time);
        let task = e.args[0];
        match e.id {
            system::SCHEDULE => {
                self.running.retain(|_, t| *t != task);
                self.running.insert(e.source, task);
            }
            system::ENDCYCLE
            | system::DELAY
            | system::SLEEP
            | system::DISABLE
            | system::DESTROY => self.running.retain(|_, t| *t != task),
            _ => {}
        }
    }

    /// Keeps a receiver's account until [`Model::settle`] shows it.
    pub fn account(&mut self, summary: ReceiverSummary) {
        if self.pending.len() == PENDING {
            self.pending.pop_front();
        }
        self.pending.push_back(summary);
    }

    /// Shows the newest account kept. `by_file`: the events come from the
    /// file the receiver writes (`recv --live`), which lags its account by
    /// the writer's buffer: then the newest account that counts no more
    /// events than the file has given (read or skipped), so the senders'
    /// rows are of the same moment as the window; one that waited a second
    /// of the receiver's time is shown anyway (a file that never catches
    /// up: replaced, or failed).
    pub fn settle(&mut self, by_file: bool) {
        let pick = if by_file {
            let read = self.events_read.saturating_add(self.skipped);
            let newest = self.pending.back().map(|s| s.elapsed);
            self.pending.iter().rposition(|s| {
                s.events() <= read
                    || newest.is_some_and(|n| n.saturating_sub(s.elapsed) >= Duration::from_secs(1))
            })
        } else {
            self.pending.len().checked_sub(1)
        };
        if let Some(i) = pick {
            let shown = self.pending.drain(..=i).next_back();
            if let Some(s) = shown {
                self.senders(&s);
            }
        }
    }

    /// Takes a receiver's account (per sender), timed by the receiver's
    /// own clock ([`ReceiverSummary::elapsed`]: when it built the account),
    /// so a rate is what the receiver counted over that time however late
    /// the view takes it.
    pub fn senders(&mut self, summary: &ReceiverSummary) {
        let now = summary.elapsed;
        let mut rows = Vec::new();
        for s in &summary.senders {
            let key = (s.addr, s.sender);
            let i = match self.senders.iter().position(|(k, _)| *k == key) {
                Some(i) => i,
                None => {
                    self.senders.push((key, SenderSeen::default()));
                    self.senders.len() - 1
                }
            };
            let seen = &mut self.senders[i].1;
            let rate = seen.sample(now, s.events, s.closed);
            let health = if s.closed {
                Health::Closed
            } else if self.ended || now.saturating_sub(seen.grew_at) >= SILENT {
                Health::Unclosed
            } else {
                Health::Open
            };
            rows.push(SenderRow {
                name: format!("{} #{}", s.addr, s.sender),
                events: s.events,
                rate,
                lost: s.lost(),
                health,
            });
        }
        for r in &summary.refused {
            rows.push(SenderRow {
                name: format!("{} #{}", r.addr, r.sender),
                events: 0,
                rate: Some(0),
                lost: r.events,
                health: Health::Refused,
            });
        }
        self.rows = rows;
        self.rejected = summary
            .rejected
            .iter()
            .map(|r| RejectedRow {
                addr: r.addr,
                counts: r.counts,
            })
            .collect();
    }

    /// The input ended (the receiver stopped: its account is the last):
    /// a sender stream without its close is `unclosed` from now on, not
    /// `open` (no more of it can come).
    pub fn input_ended(&mut self) {
        self.ended = true;
        for r in &mut self.rows {
            if r.health == Health::Open {
                r.health = Health::Unclosed;
            }
        }
    }

    /// File mode: the followed file is the one "sender"; `closed` once it
    /// ended with its close run.
    pub fn file_tick(&mut self, name: &str, now: Duration, closed: bool) {
        let arrived = self.arrived;
        let (_, seen, health) = self
            .file
            .get_or_insert_with(|| (name.to_string(), SenderSeen::default(), Health::Open));
        let rate = seen.sample(now, arrived, closed);
        if closed {
            *health = Health::Closed;
        }
        self.rows = vec![SenderRow {
            name: name.to_string(),
            events: arrived,
            rate,
            lost: self.lost_total,
            health: *health,
        }];
    }

    /// The tasks in the window, whatever the filter.
    pub fn snapshot_tasks(&self) -> Vec<u64> {
        self.snapshot_with(None)
            .tasks
            .iter()
            .map(|t| t.task)
            .collect()
    }

    /// The window's figures, ordered and filtered as chosen.
    pub fn snapshot(&self) -> Snapshot {
        self.snapshot_with(self.task)
    }

    fn snapshot_with(&self, only: Option<u64>) -> Snapshot {
        let mut a = Analyzer::new(&self.catalog, AnalysisOptions::default());
        let last = self.window.back().map_or(0, |e| e.time);
        let start = match (self.left_at, self.window.front()) {
            (Some(left), _) => left.max(last.saturating_sub(self.window_ns)),
            (None, Some(front)) => front.time,
            (None, None) => 0,
        };
        let mut sources: Vec<(&u32, &u64)> = self.running.iter().collect();
        sources.sort();
        for (&source, &task) in sources {
            a.push(&Event::new(start, system::SCHEDULE, source, [task, 0]));
        }
        for e in &self.window {
            a.push(e);
        }
        let report = a.finish();
        let span = last.saturating_sub(start);
        let permille = |ns: u64| {
            if span == 0 {
                0
            } else {
                (u128::from(ns) * 1000 / u128::from(span)) as u64
            }
        };
        let mut tasks: Vec<TaskRow> = report
            .tasks
            .iter()
            .filter(|(id, _)| only.is_none_or(|t| t == **id))
            .map(|(&task, r)| {
                let s = r.response.summary();
                TaskRow {
                    task,
                    cpu_permille: permille(r.cpu_ns),
                    activations: r.activations,
                    p50: s.p50,
                    p99: s.p99,
                    max: s.max,
                    jobs: s.count,
                    preemptions: r.preemptions,
                    blocked_ns: r.blocked_ns,
                }
            })
            .collect();
        tasks.sort_by(|x, y| {
            let key = |r: &TaskRow| match self.sort {
                SortBy::Cpu => r.cpu_permille,
                SortBy::Task => 0,
                SortBy::Response => r.max,
                SortBy::Preemptions => r.preemptions,
                SortBy::Blocked => r.blocked_ns,
            };
            key(y).cmp(&key(x)).then(x.task.cmp(&y.task))
        });
        let mut cpus: Vec<CpuRow> = report
            .cpus
            .iter()
            .map(|(&source, c)| {
                let all = c.busy_ns + c.idle_ns;
                CpuRow {
                    source,
                    busy_permille: if all == 0 {
                        0
                    } else {
                        (u128::from(c.busy_ns) * 1000 / u128::from(all)) as u64
                    },
                }
            })
            .collect();
        cpus.sort_by_key(|c| c.source);
        let class = self
            .catalog
            .class(self.class)
            .map_or_else(|| format!("class {}", self.class.0), |c| c.name.clone());
        let recent = self
            .recent
            .get(&self.class.0)
            .map(|ring| ring.iter().map(|e| self.line(e)).collect())
            .unwrap_or_default();
        let mut series: Vec<(&SeriesKey, &VecDeque<u64>)> = self.series.iter().collect();
        series.sort_by_key(|(k, _)| **k);
        let counters = series
            .into_iter()
            .filter_map(|(&(id, source, queue), values)| {
                let id = qtrace::EventId(id);
                let (kind, unit) = self.catalog.counter_of(id)?;
                let event = self.catalog.event_name(id)?;
                let stem = event.strip_suffix(".counter")?;
                let class = self
                    .catalog
                    .class_of(id)
                    .and_then(|c| self.catalog.class(c));
                let mut name = format!("{}:{stem}", class.map_or("", |c| c.name.as_str()));
                if let Some(q) = queue {
                    name.push_str(&format!(" (queue {q})"));
                }
                Some(CounterRow {
                    name,
                    unit: unit.to_string(),
                    kind,
                    source,
                    queue,
                    values: values.iter().copied().collect(),
                })
            })
            .collect();
        Snapshot {
            counters,
            span_ns: span,
            // Without the replayed schedules and the unclosed-stream marks
            // (the receiver's, not a sender's events).
            events: report
                .events
                .saturating_sub(self.running.len() as u64)
                .saturating_sub(
                    self.window
                        .iter()
                        .filter(|e| unclosed_stream(e).is_some())
                        .count() as u64,
                ),
            lost: report.lost,
            tasks,
            cpus,
            senders: self.rows.clone(),
            rejected: self.rejected.clone(),
            keyed: self.keyed,
            class,
            recent,
            skipped: self.skipped,
        }
    }

    /// One recent event as a line: time, source, event, arguments.
    fn line(&self, e: &Event) -> String {
        use std::fmt::Write as _;
        let mut s = format!("{:>14.6}  {:>4}  ", e.time as f64 / 1e9, e.source);
        if let Some((sender, n)) = unclosed_stream(e) {
            let _ = write!(
                s,
                "[STREAM OF SENDER {sender} ENDED WITHOUT A CLOSE after {n} events]"
            );
            return s;
        }
        if e.id == tracer::HOOPS {
            let _ = write!(s, "[LOST {} EVENTS]", e.args[0]);
            return s;
        }
        match self.catalog.event_name(e.id) {
            Some(n) => s.push_str(n),
            None => {
                let _ = write!(s, "event {}", e.id.0);
            }
        }
        for (name, v) in qtrace::export::args::event_args(&self.catalog, e) {
            let _ = write!(s, " {name}={v}");
        }
        s
    }

    /// The next class that has recent events (the `c` key).
    pub fn next_class(&mut self) {
        let mut ids: Vec<u16> = self.recent.keys().copied().collect();
        ids.sort_unstable();
        self.class = ClassId(
            ids.iter()
                .copied()
                .find(|&c| c > self.class.0)
                .or(ids.first().copied())
                .unwrap_or(self.class.0),
        );
    }

    /// The task filter's next step (the `t` key): all tasks, then each task
    /// of `shown` in turn, then all again.
    pub fn next_task(&mut self, shown: &[u64]) {
        let mut ids = shown.to_vec();
        ids.sort_unstable();
        self.task = match self.task {
            None => ids.first().copied(),
            Some(t) => ids.iter().copied().find(|&x| x > t),
        };
    }
}

/// A counter's series: its event, source and queue (a queue counter's,
/// FORMAT.md 1.3.4; else `None`).
type SeriesKey = (u16, u32, Option<u64>);

/// The reserved class of the queue counters (FORMAT.md 1.3.4), whose
/// records' `arg1` is the sampling queue's handle.
const QUEUE_COUNTERS_CLASS: &str = "qtrace";

/// Per event number of `catalog`: whether it is a counter, and then
/// whether a queue counter.
fn counter_events(catalog: &Catalog) -> Vec<Option<bool>> {
    let mut is = vec![None; catalog.event_count()];
    for e in catalog.events() {
        if catalog.counter_of(e.id).is_some() {
            let per_queue = catalog
                .class(e.class)
                .is_some_and(|c| c.name == QUEUE_COUNTERS_CLASS);
            if let Some(b) = is.get_mut(usize::from(e.id.0)) {
                *b = Some(per_queue);
            }
        }
    }
    is
}

impl SenderSeen {
    /// Records `events` at `now`; the rate over the last second: from the
    /// newest sample at least a second old (the oldest before a second
    /// passed) to now. 0 once `closed` (nothing more comes); `None` while
    /// the samples span less than [`RATE_SPAN`].
    fn sample(&mut self, now: Duration, events: u64, closed: bool) -> Option<u64> {
        if events != self.events || self.samples.is_empty() {
            self.grew_at = now;
        }
        self.events = events;
        self.samples.push_back((now, events));
        while self.samples.len() > 2
            && now.saturating_sub(self.samples[1].0) >= Duration::from_secs(1)
        {
            self.samples.pop_front();
        }
        if closed {
            return Some(0);
        }
        let (t0, n0) = self.samples[0];
        let dt = now.saturating_sub(t0);
        if dt < RATE_SPAN {
            return None;
        }
        let per_s = u128::from(events.saturating_sub(n0)) * 1_000_000_000 / dt.as_nanos();
        Some(u64::try_from(per_s).unwrap_or(u64::MAX))
    }
}
