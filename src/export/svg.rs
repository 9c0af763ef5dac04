//! A self-contained SVG timeline of a trace, in the spirit of S.Ha.R.K.'s
//! JTracer: a row per source (CPU) and per task, what ran when, interrupts,
//! semaphore blocking, losses, and a time axis.
//!
//! # What is drawn
//!
//! - **Source rows** (`CPU N` for a source that schedules tasks, `irq L`
//!   with its interrupt lines for one that only takes interrupts, else
//!   `source N`; the source number is the label's tooltip): a bar per
//!   running span of a task (from its
//!   `system:schedule` to the next `schedule` on that source, or to the task's
//!   own `endcycle`/`delay`/`sleep`/`disable`/`destroy`), coloured by task and
//!   labelled `task N` where it is wide enough; interrupts as short red bars
//!   over the bottom third (from `lowlevel:interrupt` to the next event of the
//!   source, at most [`SvgOptions::interrupt_max_ns`], and at least one pixel
//!   wide so that each shows).
//! - **Task rows** (`task N`): its running spans (same colour), spans blocked
//!   on a semaphore (orange: from `semaphore:wait` until it is scheduled again,
//!   when it lost its source in between), and activations as small ticks.
//! - **Losses**: a red dashed line across every row at each hoops record,
//!   with the number of events lost (records within one pixel share a line
//!   and their sum; labels closer than 56 pixels share the first one's
//!   label, with their sum, so they never print over each other).
//! - **Counter lanes** (with [`SvgTimeline::with_counters`]): a lane per
//!   counter (FORMAT.md 1.3.2) and source that logged it, under the task
//!   rows, labelled with the counter's name (`class:S`; the source is the
//!   label's tooltip): its value as a step line (it holds until the next
//!   record, and from the range's start when one came before), scaled from
//!   the smallest value drawn (bottom) to the largest (top; a flat line
//!   mid-lane when they are equal), with `min A, max B (unit)` written in
//!   the lane. Records within one pixel share a vertical stroke through
//!   their smallest and largest values; NaN values are not drawn.
//! - **Legend**: the colours and marks, under the axis.
//! - **Axis**: ticks at 1, 2 or 5 × 10^k ns, labelled in ns, µs, ms or s since
//!   the trace's time zero.
//!
//! Each drawn element has a `class` (`run`, `irq`, `blocked`, `activate`,
//! `loss`, `loss-label`, `row`, `tick`, `legend`, `counter`, `step`,
//! `counter-range`) and a `<title>` (a tooltip in browsers) for the
//! spans, so that tests and tools can read the picture back.
//!
//! # Memory and size
//!
//! The timeline is [`SvgOptions::width_px`] pixels wide over a time range
//! given up front. Spans are merged per row when they fall in the same pixel
//! (a merged bar is grey, class `run mixed`), so a row holds at most about
//! two bars per pixel whatever the number of events; rows are bounded by
//! [`SvgOptions::max_rows`] (further sources and tasks are counted in
//! [`ConvertStats::unpaired`] and not drawn). The picture is written at
//! [`EventSink::finish`]. Its [`ConvertStats`] count what lies inside the
//! time range (events, losses, sources): events before it only set the
//! state the range starts with (which task runs where).
//!
//! ```
//! use qtrace::classes::{system, Catalog};
//! use qtrace::export::{self, svg::{SvgOptions, SvgTimeline}};
//! use qtrace::Event;
//!
//! let events = [
//!     Event::new(0, system::SCHEDULE, 0, [1, 0]),
//!     Event::new(600, system::SCHEDULE, 0, [2, 0]),
//!     Event::new(1_000, system::ENDCYCLE, 0, [2, 0]),
//! ];
//! let mut svg = Vec::new();
//! let timeline = SvgTimeline::new(&mut svg, (0, 1_000), SvgOptions::default());
//! let stats = export::convert(timeline, events)?;
//! let text = String::from_utf8(svg).unwrap();
//! assert!(text.starts_with("<svg") && text.contains("task 2"));
//! assert_eq!(stats.slices, 4); // two runs, drawn on the source row and on the task rows
//! # Ok::<(), qtrace::Error>(())
//! ```

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;

use super::{ConvertStats, EventSink};
use crate::classes::counters::CounterTable;
use crate::classes::{lowlevel, semaphore, system, tracer, Catalog};
use crate::export::ExportError;
use crate::model::event::TRACER_SOURCE;
use crate::model::io_error::IoError;
use crate::Event;
use qtrace_core::classes::counter::CounterKind;

/// The narrowest time area drawn, in pixels.
pub(crate) const MIN_WIDTH_PX: u32 = 100;
/// The widest time area drawn, in pixels (what bounds the picture's size).
pub(crate) const MAX_WIDTH_PX: u32 = 100_000;

/// Tuning of [`SvgTimeline`].
///
/// ```
/// use qtrace::export::svg::{SvgOptions, SvgTimeline};
///
/// let options = SvgOptions { width_px: 800, max_rows: 20, ..SvgOptions::default() };
/// assert_eq!(SvgOptions::default().width_px, 1600);
/// let _timeline = SvgTimeline::new(Vec::new(), (0, 1_000_000), options);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SvgOptions {
    /// Width of the time area, in pixels, kept within 100..=100 000.
    /// Default 1600.
    pub width_px: u32,
    /// Most rows (sources plus tasks). Default 200.
    pub max_rows: usize,
    /// Longest interrupt bar, in ns. Default 1 µs, as the exports.
    pub interrupt_max_ns: u64,
}

impl Default for SvgOptions {
    fn default() -> Self {
        SvgOptions {
            width_px: 1600,
            max_rows: 200,
            interrupt_max_ns: 1_000,
        }
    }
}

/// Row key: sources sort before tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum RowKey {
    Source(u32),
    Task(u64),
}

/// What a bar shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Run(u64),
    Blocked,
    Irq(u64),
    Mixed,
}

#[derive(Clone, Copy, Debug)]
struct Bar {
    x0: f64,
    x1: f64,
    kind: Kind,
    /// Spans merged into it.
    spans: u32,
    t0: u64,
    t1: u64,
}

#[derive(Debug, Default)]
struct Row {
    /// Finished bars (run and blocked: the row's main band).
    bars: Vec<Bar>,
    /// The bar being extended.
    pending: Option<Bar>,
    /// Interrupt bars (their own band).
    irqs: Vec<Bar>,
    irq_pending: Option<Bar>,
    /// Activation ticks (x), one per pixel at most.
    ticks: Vec<f64>,
}

#[derive(Debug, Default)]
struct SourceState {
    /// Running task and since when.
    running: Option<(u64, u64)>,
    /// Pending interrupt: (irq, start).
    irq: Option<(u64, u64)>,
    /// It scheduled a task: its row is a CPU's.
    scheduled: bool,
    /// The interrupt lines it logged (the first [`LINES_NAMED`], and one
    /// more to know there are more), for its row's name when it scheduled
    /// nothing.
    lines: Vec<u64>,
    /// It logged an event inside the range.
    drawn: bool,
}

/// Interrupt lines named in a row's label, at most.
const LINES_NAMED: usize = 3;

/// Nearest two loss labels may be, in pixels: a loss closer to the last
/// label adds its count to it (its line is still drawn).
const LOSS_LABEL_GAP: f64 = 56.0;

/// The records of one counter within one pixel: the first, smallest,
/// largest and last value.
#[derive(Clone, Copy, Debug)]
struct Column {
    x: f64,
    first: f64,
    lo: f64,
    hi: f64,
    last: f64,
}

/// One counter's lane (of one source).
#[derive(Debug, Default)]
struct Lane {
    /// The last value before the range (raw), where the line starts.
    before: Option<u64>,
    /// The records in the range, a column per pixel at most.
    columns: Vec<Column>,
    /// The smallest and largest raw value drawn.
    lo: Option<u64>,
    hi: Option<u64>,
    /// Records drawn.
    records: u64,
}

/// Whether raw value `a` is below `b`, read as `kind`.
fn below(kind: CounterKind, a: u64, b: u64) -> bool {
    match kind {
        CounterKind::U64 => a < b,
        CounterKind::I64 => (a as i64) < (b as i64),
        CounterKind::F64 => f64::from_bits(a) < f64::from_bits(b),
    }
}

/// A raw value as text: an integer whole, an `f64` as Rust prints it
/// (the shortest text that reads back the same).
fn value_text(kind: CounterKind, raw: u64) -> String {
    match kind {
        CounterKind::U64 => raw.to_string(),
        CounterKind::I64 => (raw as i64).to_string(),
        CounterKind::F64 => f64::from_bits(raw).to_string(),
    }
}

#[derive(Debug, Default)]
struct TaskState {
    on: Option<u32>,
    /// A semaphore wait: (since, lost its source since).
    waiting: Option<(u64, bool)>,
}

/// Draws an SVG timeline of events pushed in time order (see the [module
/// documentation](self)).
///
/// ```
/// use qtrace::classes::system;
/// use qtrace::export::svg::{SvgOptions, SvgTimeline};
/// use qtrace::export;
/// use qtrace::Event;
///
/// let mut svg = Vec::new();
/// let events = [
///     Event::new(0, system::SCHEDULE, 0, [1, 0]),
///     Event::new(600, system::SCHEDULE, 0, [2, 0]),
/// ];
/// let timeline = SvgTimeline::new(&mut svg, (0, 1_000), SvgOptions::default());
/// let stats = export::convert(timeline, events)?;
/// assert_eq!(stats.events, 2);
/// let text = String::from_utf8(svg).unwrap();
/// assert!(text.starts_with("<svg") || text.starts_with("<?xml"), "{text}");
/// # Ok::<(), qtrace::Error>(())
/// ```
#[derive(Debug)]
pub struct SvgTimeline<W: Write> {
    out: W,
    options: SvgOptions,
    range: (u64, u64),
    rows: BTreeMap<RowKey, Row>,
    sources: BTreeMap<u32, SourceState>,
    tasks: BTreeMap<u64, TaskState>,
    losses: Vec<(f64, u64, u64)>,
    /// The counters drawn (none without [`SvgTimeline::with_counters`]),
    /// and their lanes by (counter, source, queue: a queue counter's,
    /// FORMAT.md 1.3.4, has one per queue).
    counters: CounterTable,
    lanes: BTreeMap<(usize, u32, Option<u64>), Lane>,
    end: u64,
    stats: ConvertStats,
    finished: bool,
}

/// A colour per task: hues spread by the golden angle.
fn task_colour(task: u64) -> String {
    let hue = (task.wrapping_mul(137) % 360) as u32;
    format!("hsl({hue},55%,55%)")
}

fn time_label(ns: u64, step: u64) -> String {
    if step >= 1_000_000_000 {
        format!("{}s", ns as f64 / 1e9)
    } else if step >= 1_000_000 {
        format!("{}ms", ns as f64 / 1e6)
    } else if step >= 1_000 {
        format!("{}µs", ns as f64 / 1e3)
    } else {
        format!("{ns}ns")
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

impl<W: Write> SvgTimeline<W> {
    /// A timeline of the time range `[range.0, range.1]` (ns since the
    /// trace's time zero; events outside it are clipped), written to `out`
    /// when finished.
    ///
    /// ```
    /// use qtrace::classes::system;
    /// use qtrace::export::svg::{SvgOptions, SvgTimeline};
    /// use qtrace::export::EventSink;
    /// use qtrace::Event;
    ///
    /// let mut t = SvgTimeline::new(Vec::new(), (0, 10_000), SvgOptions::default());
    /// t.push(&Event::new(1_000, system::SCHEDULE, 0, [3, 0]))?;
    /// assert_eq!(t.finish()?.events, 1);
    /// # Ok::<(), qtrace::Error>(())
    /// ```
    pub fn new(out: W, range: (u64, u64), options: SvgOptions) -> Self {
        SvgTimeline {
            out,
            options: SvgOptions {
                width_px: options.width_px.clamp(MIN_WIDTH_PX, MAX_WIDTH_PX),
                ..options
            },
            range: (range.0, range.1.max(range.0.saturating_add(1))),
            rows: BTreeMap::new(),
            sources: BTreeMap::new(),
            tasks: BTreeMap::new(),
            losses: Vec::new(),
            counters: CounterTable::default(),
            lanes: BTreeMap::new(),
            end: 0,
            stats: ConvertStats::default(),
            finished: false,
        }
    }

    /// Draws a lane per counter of `catalog` (FORMAT.md 1.3.2) and source
    /// that logged it (see the [module documentation](self)); name the
    /// events with the catalog of the trace drawn.
    ///
    /// ```
    /// use qtrace::classes::{Catalog, ClassSpec};
    /// use qtrace::export::{self, svg::{SvgOptions, SvgTimeline}};
    /// use qtrace::macros::CounterKind;
    /// use qtrace::Event;
    ///
    /// let mut catalog = Catalog::builtin();
    /// let sched = catalog.define(
    ///     ClassSpec::new("sched", "the scheduler").counter("ready", "tasks ready", CounterKind::U64, "tasks"),
    /// )?;
    /// let ready = sched.event("ready.counter").unwrap();
    /// let mut svg = Vec::new();
    /// let timeline = SvgTimeline::new(&mut svg, (0, 1_000), SvgOptions::default()).with_counters(&catalog);
    /// export::convert(timeline, [Event::new(0, ready, 0, [2, 0]), Event::new(500, ready, 0, [5, 0])])?;
    /// let text = String::from_utf8(svg).unwrap();
    /// assert!(text.contains(">sched:ready<") && text.contains("min 2, max 5 (tasks)"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_counters(mut self, catalog: &Catalog) -> Self {
        self.counters = CounterTable::new(catalog);
        self
    }

    /// Adds counter `i`'s value `raw`, logged by `source` at `t` (into the
    /// series of `queue`, as [`CounterInfo::queue`] says).
    ///
    /// [`CounterInfo::queue`]: crate::classes::counters::CounterInfo::queue
    fn sample(&mut self, i: usize, source: u32, queue: Option<u64>, t: u64, raw: u64) {
        let Some(kind) = self.counters.get(i).map(|c| c.kind) else {
            return;
        };
        if t > self.range.1 || (kind == CounterKind::F64 && f64::from_bits(raw).is_nan()) {
            return;
        }
        let key = (i, source, queue);
        if !self.lanes.contains_key(&key) {
            if self.rows.len() + self.lanes.len() >= self.options.max_rows {
                self.stats.unpaired += 1;
                return;
            }
            self.lanes.insert(key, Lane::default());
        }
        let x = self.x(t);
        let Some(lane) = self.lanes.get_mut(&key) else {
            return;
        };
        if t < self.range.0 {
            lane.before = Some(raw);
            return;
        }
        lane.records += 1;
        if lane.lo.map_or(true, |lo| below(kind, raw, lo)) {
            lane.lo = Some(raw);
        }
        if lane.hi.map_or(true, |hi| below(kind, hi, raw)) {
            lane.hi = Some(raw);
        }
        let v = kind.value(raw);
        match lane.columns.last_mut() {
            Some(c) if x - c.x < 1.0 => {
                c.lo = c.lo.min(v);
                c.hi = c.hi.max(v);
                c.last = v;
            }
            _ => lane.columns.push(Column {
                x,
                first: v,
                lo: v,
                hi: v,
                last: v,
            }),
        }
    }

    fn x(&self, t: u64) -> f64 {
        let (a, b) = self.range;
        let t = t.clamp(a, b);
        (t - a) as f64 * f64::from(self.options.width_px) / (b - a) as f64
    }

    /// The row of `key`, made if there is room.
    fn row(&mut self, key: RowKey) -> Option<&mut Row> {
        if !self.rows.contains_key(&key) {
            if self.rows.len() + self.lanes.len() >= self.options.max_rows {
                self.stats.unpaired += 1;
                return None;
            }
            self.rows.insert(key, Row::default());
        }
        self.rows.get_mut(&key)
    }

    /// Adds a span to a row's main band (or its interrupt band).
    fn span(&mut self, key: RowKey, t0: u64, t1: u64, kind: Kind) {
        let (x0, mut x1) = (self.x(t0), self.x(t1));
        let irq = matches!(kind, Kind::Irq(_));
        if irq {
            x1 = x1.max(x0 + 1.0);
        }
        if t1 < self.range.0 || t0 > self.range.1 {
            return;
        }
        if !irq {
            self.stats.slices += 1;
        }
        let Some(row) = self.row(key) else {
            return;
        };
        let (done, pending) = if irq {
            (&mut row.irqs, &mut row.irq_pending)
        } else {
            (&mut row.bars, &mut row.pending)
        };
        let bar = Bar {
            x0,
            x1,
            kind,
            spans: 1,
            t0,
            t1,
        };
        match pending {
            Some(p) if p.kind == kind && x0 <= p.x1 + 0.5 => {
                p.x1 = p.x1.max(x1);
                p.t1 = t1;
                p.spans += 1;
            }
            Some(p) if x1 - p.x0 < 1.0 => {
                // Too small to tell apart: one grey bar.
                p.x1 = p.x1.max(x1);
                p.t1 = t1;
                p.spans += 1;
                p.kind = Kind::Mixed;
            }
            _ => {
                if let Some(p) = pending.replace(bar) {
                    done.push(p);
                }
            }
        }
    }

    /// Ends the running span of `source` at `t`.
    fn stop(&mut self, source: u32, t: u64) {
        let Some((task, since)) = self.sources.get_mut(&source).and_then(|s| s.running.take())
        else {
            return;
        };
        self.span(RowKey::Source(source), since, t, Kind::Run(task));
        self.span(RowKey::Task(task), since, t, Kind::Run(task));
        if let Some(ts) = self.tasks.get_mut(&task) {
            if ts.on == Some(source) {
                ts.on = None;
                if let Some((_, lost)) = &mut ts.waiting {
                    *lost = true;
                }
            }
        }
    }

    fn close_irq(&mut self, source: u32, t: u64) {
        let cap = self.options.interrupt_max_ns;
        if let Some((irq, start)) = self.sources.get_mut(&source).and_then(|s| s.irq.take()) {
            self.span(
                RowKey::Source(source),
                start,
                t.min(start.saturating_add(cap)),
                Kind::Irq(irq),
            );
        }
    }

    /// A row's name for `source`: `CPU N` when it scheduled tasks, `irq L`
    /// (its interrupt lines) when it only took interrupts, else `source N`.
    fn source_name(&self, source: u32) -> String {
        let Some(st) = self.sources.get(&source) else {
            return format!("source {source}");
        };
        if st.scheduled {
            return format!("CPU {source}");
        }
        if st.lines.is_empty() {
            return format!("source {source}");
        }
        let mut name = format!(
            "irq {}",
            st.lines
                .iter()
                .take(LINES_NAMED)
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(",")
        );
        if st.lines.len() > LINES_NAMED {
            name.push_str(",…");
        }
        name
    }

    /// The colour legend, one line at `y`.
    fn legend(&self, s: &mut String, y: f64) {
        let irq = format!("interrupt (up to {} ns)", self.options.interrupt_max_ns);
        let mut items: Vec<(&str, &str, &str)> = vec![
            (
                "run",
                "hsl(137,55%,55%)",
                "task running (a colour per task)",
            ),
            ("run mixed", "#999", "several spans in one pixel"),
            ("blocked", "orange", "blocked on a semaphore"),
            ("irq", "crimson", &irq),
            ("activate", "#333", "activation"),
            ("loss", "red", "events lost"),
        ];
        if !self.lanes.is_empty() {
            items.push(("counter", "steelblue", "a counter's value"));
        }
        let _ = write!(s, "<g class=\"legend\">");
        let mut x = 90.0;
        for (kind, fill, what) in items {
            let mark = match kind {
                "activate" => format!(
                    "<path d=\"M{:.1} {:.1} l-3 -5 h6 z\" fill=\"{fill}\"/>",
                    x + 5.0,
                    y + 1.0
                ),
                "loss" => format!(
                    "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"{fill}\" stroke-dasharray=\"4 2\"/>",
                    x + 5.0,
                    y - 9.0,
                    x + 5.0,
                    y + 2.0
                ),
                "counter" => format!(
                    "<path d=\"M{x:.1} {:.1} h4 v-6 h6\" fill=\"none\" stroke=\"{fill}\"/>",
                    y - 1.0
                ),
                _ => format!(
                    "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"10\" height=\"10\" fill=\"{fill}\"/>",
                    y - 9.0
                ),
            };
            let _ = write!(
                s,
                "<g class=\"key\" data-kind=\"{kind}\">{mark}<text x=\"{:.1}\" y=\"{y:.1}\">{}</text></g>",
                x + 14.0,
                esc(what)
            );
            // About 6 px a character at 11 px.
            x += 14.0 + 6.0 * what.chars().count() as f64 + 16.0;
        }
        let _ = writeln!(s, "</g>");
    }

    /// The counter lanes, from `top`, each `lane_h` high.
    fn render_lanes(&self, s: &mut String, top: f64, left: f64, lane_h: f64) {
        let width = f64::from(self.options.width_px);
        let end = self.x(self.end.min(self.range.1).max(self.range.0));
        for (n, (&(i, source, queue), lane)) in self.lanes.iter().enumerate() {
            let Some(info) = self.counters.get(i) else {
                continue;
            };
            let name = esc(&info.series_name(queue));
            let kind = info.kind;
            let y0 = top + lane_h * n as f64;
            // The values drawn: those in the range and the one it starts with.
            let mut lo = lane.lo;
            let mut hi = lane.hi;
            if let Some(b) = lane.before {
                if lo.map_or(true, |lo| below(kind, b, lo)) {
                    lo = Some(b);
                }
                if hi.map_or(true, |hi| below(kind, hi, b)) {
                    hi = Some(b);
                }
            }
            let (flo, fhi) = (
                lo.map_or(0.0, |v| kind.value(v)),
                hi.map_or(0.0, |v| kind.value(v)),
            );
            let y = |v: f64| {
                if fhi > flo {
                    y0 + 4.0 + (fhi - v) / (fhi - flo) * (lane_h - 12.0)
                } else {
                    y0 + (lane_h - 2.0) / 2.0
                }
            };
            let mut d = String::new();
            if let Some(b) = lane.before {
                let _ = write!(d, "M{left:.1} {:.1}", y(kind.value(b)));
            }
            for c in &lane.columns {
                let x = left + c.x;
                if d.is_empty() {
                    let _ = write!(d, "M{x:.1} {:.1}", y(c.first));
                } else {
                    let _ = write!(d, " H{x:.1} V{:.1}", y(c.first));
                }
                if c.hi > c.lo {
                    let _ = write!(d, " V{:.1} V{:.1} V{:.1}", y(c.lo), y(c.hi), y(c.last));
                }
            }
            if !d.is_empty() {
                let _ = write!(d, " H{:.1}", left + end);
            }
            let range = match (lo, hi) {
                (Some(lo), Some(hi)) => {
                    let unit = if info.unit.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", info.unit)
                    };
                    format!(
                        "min {}, max {}{unit}",
                        value_text(kind, lo),
                        value_text(kind, hi)
                    )
                }
                _ => String::new(),
            };
            let _ = writeln!(
                s,
                "<g class=\"counter\"><rect x=\"{left}\" y=\"{y0}\" width=\"{width}\" height=\"{}\" fill=\"#f6faf6\"/><text x=\"4\" y=\"{:.1}\">{}<title>source {source}</title></text>\n\
                 <path class=\"step\" d=\"{d}\" fill=\"none\" stroke=\"steelblue\"><title>{} on source {source}: {} record{}</title></path><text class=\"counter-range\" x=\"{:.1}\" y=\"{:.1}\" fill=\"#555\" font-size=\"9\" text-anchor=\"end\">{}</text></g>",
                lane_h - 2.0,
                y0 + lane_h * 0.55,
                name,
                name,
                lane.records,
                if lane.records == 1 { "" } else { "s" },
                left + width - 4.0,
                y0 + 10.0,
                esc(&range)
            );
        }
    }

    fn render(&mut self) -> std::io::Result<()> {
        const LEFT: f64 = 90.0;
        const ROW_H: f64 = 22.0;
        const TOP: f64 = 30.0;
        let width = f64::from(self.options.width_px);
        const LANE_H: f64 = 34.0;
        let rows: Vec<(RowKey, Row)> = std::mem::take(&mut self.rows).into_iter().collect();
        let lanes_top = TOP + ROW_H * rows.len() as f64;
        let axis_y = lanes_top + LANE_H * self.lanes.len() as f64;
        let height = axis_y + 60.0;
        let mut s = String::with_capacity(64 * 1024);
        let _ = write!(
            s,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{height}\" viewBox=\"0 0 {w} {height}\" font-family=\"sans-serif\" font-size=\"11\">\n\
             <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
            w = LEFT + width + 20.0
        );
        // Axis: a step of 1, 2 or 5 × 10^k ns giving about 10 ticks.
        let (a, b) = self.range;
        let raw = ((b - a) / 10).max(1);
        // (`step` stays at most `raw` × 10, so it cannot overflow.)
        let mut step = 1u64;
        while step.saturating_mul(10) <= raw {
            step *= 10;
        }
        for m in [1, 2, 5, 10] {
            if step * m >= raw {
                step *= m;
                break;
            }
        }
        let mut t = a.div_ceil(step).saturating_mul(step);
        while t <= b {
            let x = LEFT + self.x(t);
            let _ = writeln!(
                s,
                "<line class=\"tick\" x1=\"{x:.1}\" y1=\"{TOP}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#ddd\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                axis_y + 4.0,
                axis_y + 16.0,
                esc(&time_label(t, step))
            );
            t = match t.checked_add(step) {
                Some(n) => n,
                None => break,
            };
        }
        for (i, (key, row)) in rows.iter().enumerate() {
            let y = TOP + ROW_H * i as f64;
            let name = match key {
                RowKey::Source(TRACER_SOURCE) => "tracer".to_string(),
                RowKey::Source(n) => self.source_name(*n),
                RowKey::Task(n) => format!("task {n}"),
            };
            let shade = if matches!(key, RowKey::Source(_)) {
                "#f4f4f8"
            } else {
                "#fbfbfb"
            };
            let title = match key {
                RowKey::Source(n) if *n != TRACER_SOURCE => format!("<title>source {n}</title>"),
                _ => String::new(),
            };
            let _ = writeln!(
                s,
                "<g class=\"row\"><rect x=\"{LEFT}\" y=\"{y}\" width=\"{width}\" height=\"{}\" fill=\"{shade}\"/><text x=\"4\" y=\"{:.1}\">{}{title}</text>",
                ROW_H - 2.0,
                y + ROW_H * 0.65,
                esc(&name)
            );
            for bar in row.bars.iter().chain(&row.pending) {
                let (class, fill, title) = match bar.kind {
                    Kind::Run(task) => ("run", task_colour(task), format!("task {task}")),
                    Kind::Blocked => (
                        "blocked",
                        "orange".to_string(),
                        "blocked on a semaphore".to_string(),
                    ),
                    Kind::Mixed => (
                        "run mixed",
                        "#999".to_string(),
                        format!("{} spans", bar.spans),
                    ),
                    Kind::Irq(_) => continue,
                };
                let w = (bar.x1 - bar.x0).max(0.5);
                let _ = write!(
                    s,
                    "<rect class=\"{class}\" x=\"{:.2}\" y=\"{:.1}\" width=\"{w:.2}\" height=\"{:.1}\" fill=\"{fill}\"><title>{} {}..{} ns</title></rect>",
                    LEFT + bar.x0,
                    y + 2.0,
                    ROW_H - 6.0,
                    esc(&title),
                    bar.t0,
                    bar.t1
                );
                if let (Kind::Run(task), true) = (bar.kind, w > 44.0) {
                    let _ = write!(
                        s,
                        "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"black\">task {task}</text>",
                        LEFT + bar.x0 + 3.0,
                        y + ROW_H * 0.6
                    );
                }
                s.push('\n');
            }
            for bar in row.irqs.iter().chain(&row.irq_pending) {
                let title = match bar.kind {
                    Kind::Irq(n) => format!("irq {n}"),
                    _ => format!("{} interrupts", bar.spans),
                };
                let _ = writeln!(
                    s,
                    "<rect class=\"irq\" x=\"{:.2}\" y=\"{:.1}\" width=\"{:.2}\" height=\"{:.1}\" fill=\"crimson\"><title>{} {}..{} ns</title></rect>",
                    LEFT + bar.x0,
                    y + ROW_H * 0.55,
                    (bar.x1 - bar.x0).max(1.0),
                    ROW_H * 0.3,
                    esc(&title),
                    bar.t0,
                    bar.t1
                );
            }
            for x in &row.ticks {
                let _ = writeln!(
                    s,
                    "<path class=\"activate\" d=\"M{:.1} {:.1} l-3 -5 h6 z\" fill=\"#333\"/>",
                    LEFT + x,
                    y + 6.0
                );
            }
            s.push_str("</g>\n");
            self.out.write_all(s.as_bytes())?;
            s.clear();
        }
        self.render_lanes(&mut s, lanes_top, LEFT, LANE_H);
        // One label per group of losses closer than LOSS_LABEL_GAP pixels
        // (the sum of the group, at its first line): labels never overlap.
        let mut labels: Vec<(f64, u64)> = Vec::new();
        for &(x, _, lost) in &self.losses {
            match labels.last_mut() {
                Some((lx, n)) if x - *lx < LOSS_LABEL_GAP => *n = n.saturating_add(lost),
                _ => labels.push((x, lost)),
            }
        }
        for (x, t, lost) in &self.losses {
            let lx = LEFT + x;
            let _ = writeln!(
                s,
                "<g class=\"loss\"><line x1=\"{lx:.1}\" y1=\"{:.1}\" x2=\"{lx:.1}\" y2=\"{axis_y:.1}\" stroke=\"red\" stroke-dasharray=\"4 2\"/><title>{lost} events lost at {t} ns</title></g>",
                TOP - 4.0,
            );
        }
        for (x, lost) in &labels {
            let _ = writeln!(
                s,
                "<text class=\"loss-label\" x=\"{:.1}\" y=\"{:.1}\" fill=\"red\" text-anchor=\"middle\">{lost} lost</text>",
                LEFT + x,
                TOP - 8.0
            );
        }
        self.legend(&mut s, axis_y + 32.0);
        let _ = writeln!(
            s,
            "<text x=\"{LEFT}\" y=\"{:.1}\" fill=\"#555\">qtrace timeline: {}..{} ns since the trace's time zero</text>\n</svg>",
            axis_y + 52.0,
            a,
            b
        );
        self.out.write_all(s.as_bytes())?;
        self.out.flush()
    }
}

impl<W: Write> EventSink for SvgTimeline<W> {
    fn push(&mut self, e: &Event) -> Result<(), ExportError> {
        if self.finished {
            return Err(ExportError::ConverterFinished);
        }
        let t = e.time.max(self.end);
        self.end = t;
        // Events before the range still set the state (who runs); only
        // those inside it are counted.
        let inside = (self.range.0..=self.range.1).contains(&t);
        if e.id == tracer::HOOPS {
            if inside {
                self.stats.hoops += 1;
                self.stats.lost = self.stats.lost.saturating_add(e.args[0]);
            }
            if inside {
                let x = self.x(t);
                // Losses within one pixel share one marker (their sum).
                match self.losses.last_mut() {
                    Some((lx, _, n)) if x - *lx < 1.0 => *n = n.saturating_add(e.args[0]),
                    _ => self.losses.push((x, t, e.args[0])),
                }
            }
            return Ok(());
        }
        if let Some(i) = self.counters.lookup(e.id) {
            let queue = self.counters.get(i).and_then(|c| c.queue(e));
            self.sample(i, e.source, queue, t, e.args[0]);
        }
        let st = self.sources.entry(e.source).or_default();
        if inside {
            self.stats.events += 1;
            if !st.drawn {
                st.drawn = true;
                self.stats.sources += 1;
            }
        }
        match e.id {
            system::SCHEDULE => st.scheduled = true,
            lowlevel::INTERRUPT
                if st.lines.len() <= LINES_NAMED && !st.lines.contains(&e.args[0]) =>
            {
                st.lines.push(e.args[0]);
            }
            _ => {}
        }
        self.close_irq(e.source, t);
        let task = e.args[0];
        match e.id {
            system::SCHEDULE => {
                self.stop(e.source, t);
                if let Some(old) = self.tasks.get(&task).and_then(|s| s.on) {
                    self.stop(old, t);
                }
                let ts = self.tasks.entry(task).or_default();
                ts.on = Some(e.source);
                if let Some((since, true)) = ts.waiting.take() {
                    self.span(RowKey::Task(task), since, t, Kind::Blocked);
                }
                // Rows appear in first-use order within their kind.
                let _ = self.row(RowKey::Source(e.source));
                if let Some(s) = self.sources.get_mut(&e.source) {
                    s.running = Some((task, t));
                }
            }
            system::ENDCYCLE
            | system::DELAY
            | system::SLEEP
            | system::DISABLE
            | system::DESTROY => {
                if let Some(source) = self.tasks.get(&task).and_then(|s| s.on) {
                    let runs = self
                        .sources
                        .get(&source)
                        .and_then(|s| s.running)
                        .map(|r| r.0);
                    if runs == Some(task) {
                        self.stop(source, t);
                    }
                }
            }
            system::ACTIVATE => {
                let x = self.x(t);
                if (self.range.0..=self.range.1).contains(&t) {
                    if let Some(row) = self.row(RowKey::Task(task)) {
                        if row.ticks.last().map_or(true, |&l| x - l >= 1.0) {
                            row.ticks.push(x);
                        }
                    }
                }
            }
            semaphore::WAIT => {
                self.tasks.entry(task).or_default().waiting = Some((t, false));
            }
            semaphore::SIGNAL | semaphore::WAITNB => {
                let ts = self.tasks.entry(task).or_default();
                if matches!(ts.waiting, Some((_, false))) {
                    ts.waiting = None;
                }
            }
            lowlevel::INTERRUPT => {
                if let Some(s) = self.sources.get_mut(&e.source) {
                    s.irq = Some((task, t));
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<ConvertStats, ExportError> {
        if self.finished {
            return Ok(self.stats);
        }
        self.finished = true;
        let end = self.end.min(self.range.1).max(self.range.0);
        let sources: Vec<u32> = self.sources.keys().copied().collect();
        for s in sources {
            self.close_irq(s, end);
            self.stop(s, end);
        }
        self.render()
            .map_err(|e| ExportError::Io(IoError::without_path("write the SVG timeline", e)))?;
        Ok(self.stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classes::Catalog;

    #[test]
    fn sub_pixel_spans_merge_into_one_grey_bar() {
        let _ = Catalog::builtin();
        let mut out = Vec::new();
        let mut t = SvgTimeline::new(
            &mut out,
            (1, 1_000_000),
            SvgOptions {
                width_px: 100,
                ..SvgOptions::default()
            },
        );
        // A loss before the range is not drawn (nor moved into it).
        t.push(&Event::new(0, tracer::HOOPS, TRACER_SOURCE, [3, 0]))
            .unwrap();
        // 1000 context switches in the first 10 µs = the first pixel.
        for i in 0..1000u64 {
            t.push(&Event::new(i * 10, system::SCHEDULE, 0, [i % 2, 0]))
                .unwrap();
        }
        t.push(&Event::new(1_000_000, system::ENDCYCLE, 0, [1, 0]))
            .unwrap();
        let stats = t.finish().unwrap();
        // The loss and the first schedule, at 0, lie before the range: they
        // set the state, and are not counted.
        assert_eq!((stats.events, stats.lost), (1000, 0));
        let svg = String::from_utf8(out).unwrap();
        assert!(!svg.contains("class=\"loss\""));
        // On the source row: one grey bar for the first 999 spans, then task 1's
        // long run; the task rows likewise.
        let source_row = svg.split("<g class=\"row\">").nth(1).unwrap();
        assert_eq!(source_row.matches("class=\"run mixed\"").count(), 1);
        assert_eq!(source_row.matches("<rect class=").count(), 2);
    }

    #[test]
    fn extreme_ranges_and_widths_do_not_panic() {
        for (range, width) in [
            ((u64::MAX - 5, u64::MAX), 1),
            ((0, u64::MAX), u32::MAX),
            ((u64::MAX, u64::MAX), 1600),
            ((7, 3), 1600),
        ] {
            let mut out = Vec::new();
            let mut t = SvgTimeline::new(
                &mut out,
                range,
                SvgOptions {
                    width_px: width,
                    ..SvgOptions::default()
                },
            );
            for time in [0, 5, u64::MAX - 1, u64::MAX] {
                t.push(&Event::new(time, system::SCHEDULE, 0, [time, 0]))
                    .unwrap();
                t.push(&Event::new(time, lowlevel::INTERRUPT, 0, [1, 0]))
                    .unwrap();
                t.push(&Event::new(
                    time,
                    tracer::HOOPS,
                    TRACER_SOURCE,
                    [u64::MAX, 0],
                ))
                .unwrap();
            }
            t.finish().unwrap();
            let svg = String::from_utf8(out).unwrap();
            assert!(svg.trim_end().ends_with("</svg>"));
            // The width is clamped: at most MAX_WIDTH_PX plus the margins.
            let w: f64 = svg
                .split("width=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            assert!(w <= f64::from(MAX_WIDTH_PX) + 200.0, "{w}");
        }
    }

    #[test]
    fn counter_lanes_are_step_lines_with_name_unit_and_range() {
        use crate::classes::ClassSpec;
        let mut catalog = Catalog::builtin();
        let sched = catalog
            .define(ClassSpec::new("sched", "the scheduler").counter(
                "ready",
                "tasks ready",
                CounterKind::U64,
                "tasks",
            ))
            .unwrap();
        let cpu = catalog
            .define(ClassSpec::new("cpu", "the CPUs").counter("load", "load", CounterKind::F64, ""))
            .unwrap();
        let ready = sched.event("ready.counter").unwrap();
        let load = cpu.event("load.counter").unwrap();
        let f = |v: f64| v.to_bits();
        let mut out = Vec::new();
        // 100 px over 1000 ns: 10 ns a pixel; the lanes start at x = 90.
        let mut t = SvgTimeline::new(
            &mut out,
            (1_000, 2_000),
            SvgOptions {
                width_px: 100,
                ..SvgOptions::default()
            },
        )
        .with_counters(&catalog);
        for e in [
            Event::new(500, ready, 0, [3, 0]), // before: where the line starts
            Event::new(1_000, system::SCHEDULE, 0, [1, 0]),
            Event::new(1_100, load, 1, [f(1.5), 0]),
            Event::new(1_200, ready, 0, [5, 0]),
            Event::new(1_203, ready, 0, [1, 0]), // the same pixel
            Event::new(1_500, ready, 0, [4, 0]),
            Event::new(1_600, load, 1, [f(f64::NAN), 0]), // not drawn
            Event::new(1_700, load, 1, [f(-0.25), 0]),
            Event::new(1_800, ready, 1, [7, 0]),
            Event::new(2_500, ready, 0, [9, 0]), // after the range
        ] {
            t.push(&e).unwrap();
        }
        t.finish().unwrap();
        let svg = String::from_utf8(out).unwrap();
        let lanes: Vec<&str> = svg
            .split("<g class=\"counter\">")
            .skip(1)
            .map(|l| &l[..l.find("</g>").unwrap()])
            .collect();
        // Two rows (CPU 0, task 1) of 22 px from y = 30: lanes from 74, 34 px
        // each; values from 4 px under the lane's top to 8 px above its
        // bottom (22 px of scale); a flat line at 16 px.
        assert_eq!(
            lanes,
            [
                "<rect x=\"90\" y=\"74\" width=\"100\" height=\"32\" fill=\"#f6faf6\"/><text x=\"4\" y=\"92.7\">sched:ready<title>source 0</title></text>\n\
                 <path class=\"step\" d=\"M90.0 89.0 H110.0 V78.0 V100.0 V78.0 V100.0 H140.0 V83.5 H190.0\" fill=\"none\" stroke=\"steelblue\"><title>sched:ready on source 0: 3 records</title></path><text class=\"counter-range\" x=\"186.0\" y=\"84.0\" fill=\"#555\" font-size=\"9\" text-anchor=\"end\">min 1, max 5 (tasks)</text>",
                "<rect x=\"90\" y=\"108\" width=\"100\" height=\"32\" fill=\"#f6faf6\"/><text x=\"4\" y=\"126.7\">sched:ready<title>source 1</title></text>\n\
                 <path class=\"step\" d=\"M170.0 124.0 H190.0\" fill=\"none\" stroke=\"steelblue\"><title>sched:ready on source 1: 1 record</title></path><text class=\"counter-range\" x=\"186.0\" y=\"118.0\" fill=\"#555\" font-size=\"9\" text-anchor=\"end\">min 7, max 7 (tasks)</text>",
                "<rect x=\"90\" y=\"142\" width=\"100\" height=\"32\" fill=\"#f6faf6\"/><text x=\"4\" y=\"160.7\">cpu:load<title>source 1</title></text>\n\
                 <path class=\"step\" d=\"M100.0 146.0 H160.0 V168.0 H190.0\" fill=\"none\" stroke=\"steelblue\"><title>cpu:load on source 1: 2 records</title></path><text class=\"counter-range\" x=\"186.0\" y=\"152.0\" fill=\"#555\" font-size=\"9\" text-anchor=\"end\">min -0.25, max 1.5</text>",
            ]
        );
        // The axis under the lanes; the legend says what the line is.
        assert!(svg.contains("<line class=\"tick\" x1=\"90.0\" y1=\"30\" x2=\"90.0\" y2=\"180.0\""));
        assert!(svg.contains("data-kind=\"counter\""));
        // Without `with_counters`, counter records draw nothing.
        let mut out = Vec::new();
        let mut t = SvgTimeline::new(&mut out, (1_000, 2_000), SvgOptions::default());
        t.push(&Event::new(1_200, ready, 0, [5, 0])).unwrap();
        t.finish().unwrap();
        let svg = String::from_utf8(out).unwrap();
        assert!(!svg.contains("class=\"counter\"") && !svg.contains("data-kind=\"counter\""));
    }
}
