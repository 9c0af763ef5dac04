//! Drawing a [`Snapshot`]: on a terminal with ratatui ([`draw`]), or as
//! plain text for a standard output that is not a terminal ([`plain`]).

use std::fmt::Write as _;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table};
use ratatui::Frame;

use qtrace::receiver::RejectionCounts;

use super::fit::{self, Cell, Column};
use super::model::{CounterRow, Health, RejectedRow, SenderRow, Snapshot, TaskRow};
use qtrace::macros::CounterKind;

/// What the header line says besides the snapshot.
#[derive(Clone, Debug, Default)]
pub struct Status {
    /// Where the events come from: `listening on ADDR`, `following FILE`.
    pub source: String,
    /// The window, in seconds.
    pub window_s: f64,
    /// The task order's name.
    pub sort: &'static str,
    /// The task filter.
    pub task: Option<u64>,
    /// Whether the view is paused.
    pub paused: bool,
    /// Whether the input ended (the file closed, the receiver stopped):
    /// the figures are final.
    pub ended: bool,
}

/// A duration in ns, short: `950ns`, `12.5us`, `3.20ms`, `1.50s` (at most
/// 8 characters below 10 000 s).
pub fn dur(ns: u64) -> String {
    match ns {
        0..=999 => format!("{ns}ns"),
        1_000..=999_999 => format!("{:.1}us", ns as f64 / 1e3),
        1_000_000..=999_999_999 => format!("{:.2}ms", ns as f64 / 1e6),
        _ => format!("{:.2}s", ns as f64 / 1e9),
    }
}

/// Thousandths as a percentage: `45.2%`.
fn pct(permille: u64) -> String {
    format!("{}.{}%", permille / 10, permille % 10)
}

/// The narrowest terminal the view draws on; below it (or below
/// [`MIN_HEIGHT`]) it says how large the terminal must be instead.
pub const MIN_WIDTH: u16 = 60;

/// See [`MIN_WIDTH`].
pub const MIN_HEIGHT: u16 = 12;

/// The header line's parts: (when dropped, 0 never; text).
fn head_parts(s: &Snapshot, st: &Status, width: Option<usize>) -> Vec<(u8, String)> {
    let n = |v: u64| match width {
        None => v.to_string(),
        Some(_) => fit::short(v, 5).unwrap_or_else(|| "…".into()),
    };
    let mut parts = vec![
        (2, st.source.clone()),
        (
            1,
            format!("window {:.1}s ({} of trace)", st.window_s, dur(s.span_ns)),
        ),
    ];
    let mut events = format!("{} events", n(s.events));
    if s.lost > 0 {
        let _ = write!(events, ", {} lost", n(s.lost));
    }
    parts.push((0, events));
    if s.skipped > 0 {
        parts.push((0, format!("(view skipped {} events)", n(s.skipped))));
    }
    if st.paused {
        parts.push((0, "PAUSED".into()));
    }
    if st.ended {
        parts.push((0, "ENDED".into()));
    }
    parts
}

/// The header line's text, whole.
fn head(s: &Snapshot, st: &Status) -> String {
    join_parts(&head_parts(s, st, None))
}

fn join_parts(parts: &[(u8, String)]) -> String {
    parts
        .iter()
        .map(|(_, t)| t.as_str())
        .collect::<Vec<_>>()
        .join("  ")
}

/// The header line in `width` characters: whole; else its parts dropped
/// (the window, then the source); else its counts shortened.
fn head_fitted(s: &Snapshot, st: &Status, width: usize) -> String {
    for shorten in [None, Some(width)] {
        let mut parts = head_parts(s, st, shorten);
        for drop in [0, 1, 2] {
            parts.retain(|(d, _)| *d == 0 || *d > drop);
            let line = join_parts(&parts);
            if line.chars().count() <= width {
                return line;
            }
        }
    }
    fit::cut_words(&join_parts(&head_parts(s, st, Some(width))), width)
}

/// The task table's columns, in the order they are dropped when the
/// terminal is narrow: p50, p99, blocked, preempt, act, max (task and cpu
/// stay).
const TASK_COLUMNS: [Column; 8] = [
    column("task", 0, None),
    column("cpu", 0, None),
    column("act", 5, Some(5)),
    column("resp p50", 1, None),
    column("resp p99", 2, None),
    column("resp max", 6, None),
    column("preempt", 4, Some(5)),
    column("blocked", 3, None),
];

const fn column(header: &'static str, drop: u8, narrowest: Option<usize>) -> Column {
    Column {
        header,
        drop,
        narrowest,
    }
}

fn task_cells(t: &TaskRow) -> Vec<Cell> {
    let resp = |ns: u64| {
        Cell::Text(if t.jobs == 0 {
            "-".to_string()
        } else {
            dur(ns)
        })
    };
    vec![
        Cell::Text(t.task.to_string()),
        Cell::Text(pct(t.cpu_permille)),
        Cell::Count(t.activations),
        resp(t.p50),
        resp(t.p99),
        resp(t.max),
        Cell::Count(t.preemptions),
        Cell::Text(dur(t.blocked_ns)),
    ]
}

/// The senders table's columns: none is dropped; counts are shortened and
/// the sender's name cut (with `…`) when narrow.
const SENDER_COLUMNS: [Column; 5] = [
    column("sender", 0, Some(16)),
    column("events", 0, Some(5)),
    column("rate", 0, Some(7)),
    column("lost", 0, Some(5)),
    column("stream", 0, None),
];

fn sender_cells(r: &SenderRow) -> Vec<Cell> {
    vec![
        Cell::Name(r.name.clone()),
        Cell::Count(r.events),
        Cell::Rate(r.rate),
        Cell::Count(r.lost),
        Cell::Text(r.health.word().to_string()),
    ]
}

/// A counter's value as text: an integer whole, an `f64` with at most
/// three decimals (trailing zeros dropped: `1.5`, `2`, `NaN`).
pub fn counter_value(kind: CounterKind, raw: u64) -> String {
    match kind {
        CounterKind::U64 => raw.to_string(),
        CounterKind::I64 => (raw as i64).to_string(),
        CounterKind::F64 => {
            let v = f64::from_bits(raw);
            if !v.is_finite() {
                return v.to_string();
            }
            let s = format!("{v:.3}");
            let s = s.trim_end_matches('0').trim_end_matches('.');
            if s == "-0" {
                "0".to_string()
            } else {
                s.to_string()
            }
        }
    }
}

/// The levels of a sparkline, lowest first.
const LEVELS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// `values` (raw, of `kind`) as a sparkline, one character each, scaled
/// from their smallest (`▁`) to their largest (`█`); all equal: all `▁`;
/// a value that is not a finite number (NaN, ±inf): a space.
pub fn sparkline(kind: CounterKind, values: &[u64]) -> String {
    let nums: Vec<f64> = values.iter().map(|&v| kind.value(v)).collect();
    let finite = nums.iter().copied().filter(|v| v.is_finite());
    let lo = finite.clone().fold(f64::INFINITY, f64::min);
    let hi = finite.fold(f64::NEG_INFINITY, f64::max);
    nums.iter()
        .map(|&v| {
            if !v.is_finite() {
                ' '
            } else if hi > lo {
                LEVELS[(((v - lo) / (hi - lo)) * 7.0).round() as usize]
            } else {
                LEVELS[0]
            }
        })
        .collect()
}

/// The smallest and largest of `values` (raw, of `kind`; NaN skipped), as
/// text; `-` when there is none.
fn counter_range(kind: CounterKind, values: &[u64]) -> (String, String) {
    let nan = |v: u64| kind == CounterKind::F64 && f64::from_bits(v).is_nan();
    let mut kept = values.iter().filter(|&&v| !nan(v));
    let Some(first) = kept.next() else {
        return ("-".into(), "-".into());
    };
    let less = |a: u64, b: u64| match kind {
        CounterKind::U64 => a < b,
        CounterKind::I64 => (a as i64) < (b as i64),
        CounterKind::F64 => f64::from_bits(a) < f64::from_bits(b),
    };
    let (mut lo, mut hi) = (*first, *first);
    for &v in kept {
        if less(v, lo) {
            lo = v;
        }
        if less(hi, v) {
            hi = v;
        }
    }
    (counter_value(kind, lo), counter_value(kind, hi))
}

/// The counters table's columns, in the order they are dropped: min, max,
/// unit, the sparkline (counter, source and value stay).
const COUNTER_COLUMNS: [Column; 7] = [
    column("counter", 0, Some(12)),
    column("src", 0, Some(3)),
    column("value", 0, None),
    column("unit", 3, None),
    column("recent", 4, None),
    column("min", 1, None),
    column("max", 2, None),
];

fn counter_cells(c: &CounterRow) -> Vec<Cell> {
    let value = c
        .values
        .last()
        .map_or("-".to_string(), |&v| counter_value(c.kind, v));
    let (lo, hi) = counter_range(c.kind, &c.values);
    vec![
        Cell::Name(c.name.clone()),
        Cell::Count(u64::from(c.source)),
        Cell::Text(value),
        Cell::Text(c.unit.clone()),
        Cell::Text(sparkline(c.kind, &c.values)),
        Cell::Text(lo),
        Cell::Text(hi),
    ]
}

/// Why datagrams from one source were rejected: `N reason` per reason.
pub fn reasons(c: &RejectionCounts, keyed: bool) -> String {
    let unknown_key = if keyed {
        "keyed with a key this receiver does not hold"
    } else {
        "keyed, but this receiver has no key (--key-file)"
    };
    [
        (
            c.unkeyed,
            "unkeyed (this receiver accepts only keyed datagrams)",
        ),
        (c.unknown_key, unknown_key),
        (c.bad_tag, "bad tag (forged or altered, or a wrong key)"),
        (
            c.replayed,
            "replayed (already seen, or of a stream that ended or was replaced)",
        ),
        (c.outside_window, "outside the sequence window"),
        (c.counters_backwards, "counters going backwards"),
        (c.after_close, "after its sender's close"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, why)| format!("{n} {why}"))
    .collect::<Vec<_>>()
    .join(", ")
}

/// A line of stream health for datagrams rejected from one source.
fn rejected_line(r: &RejectedRow, keyed: bool) -> String {
    format!("rejected from {}: {}", r.addr, reasons(&r.counts, keyed))
}

/// The CPUs' figures, `cpu N  busy`, in columns of equal width packed
/// into lines of `width`.
fn cpu_lines(s: &Snapshot, width: usize) -> Vec<String> {
    let items: Vec<String> = s
        .cpus
        .iter()
        .map(|c| format!("cpu {}  {}", c.source, pct(c.busy_permille)))
        .collect();
    let widest = items.iter().map(String::len).max().unwrap_or(0);
    let per_line = ((width + 4) / (widest + 4)).max(1);
    items
        .chunks(per_line)
        .map(|line| {
            line.iter()
                .map(|i| format!("{i:<widest$}"))
                .collect::<Vec<_>>()
                .join("    ")
                .trim_end()
                .to_string()
        })
        .collect()
}

/// How the frame's height is shared: rows of each box (borders and
/// header rows included), 0 for a box not drawn.
#[derive(Debug, PartialEq, Eq)]
struct Heights {
    tasks: u16,
    cpus: u16,
    senders: u16,
    counters: u16,
    recent: u16,
}

/// Shares `height` lines (the header and keys lines taken) between the
/// boxes: the tasks (at least one row), the senders (all their rows if
/// they fit, else as many as fit, at least one), the CPUs (as many lines
/// as fit beside those; dropped when not one does), the counters (all
/// their rows if they fit, else as many as fit; dropped when not one
/// does), more task rows, then the recent events with what is left
/// (dropped below three lines; else to the tasks).
fn heights(height: u16, tasks: usize, cpus: usize, senders: usize, counters: usize) -> Heights {
    let room = height.saturating_sub(2);
    let tasks_want = 3 + tasks.max(1) as u16;
    let cpus_want = if cpus == 0 { 0 } else { 2 + cpus as u16 };
    let mut h = Heights {
        tasks: 4,
        cpus: cpus_want,
        senders: 3 + senders.max(1) as u16,
        counters: 0,
        recent: 0,
    };
    let used = |h: &Heights| h.tasks + h.cpus + h.senders + h.counters + h.recent;
    if used(&h) > room {
        // As many lines of CPUs as fit beside one task row and the
        // senders (at least one line: else none).
        let fits = room.saturating_sub(h.tasks + h.senders);
        h.cpus = if fits >= 3 { fits.min(h.cpus) } else { 0 };
    }
    while used(&h) > room && h.senders > 4 {
        h.senders -= 1;
    }
    if counters > 0 {
        let spare = room.saturating_sub(used(&h));
        h.counters = if spare >= 4 {
            spare.min(3 + counters as u16)
        } else {
            0
        };
    }
    let spare = room.saturating_sub(used(&h));
    let more = spare.min(tasks_want - h.tasks);
    h.tasks += more;
    let spare = spare - more;
    if spare >= 3 {
        h.recent = spare;
    }
    h.tasks += room.saturating_sub(used(&h));
    h
}

/// Draws `s` on `frame`, laid out for its size: every figure is shown
/// whole or visibly shortened (`14.9k`) or its column dropped; below
/// [`MIN_WIDTH`] × [`MIN_HEIGHT`] a message says so.
pub fn draw(frame: &mut Frame, s: &Snapshot, st: &Status) {
    let area = frame.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let w = area.width as usize;
        let text = [
            "qtrace live: the terminal is too small".to_string(),
            format!(
                "{}x{}; it needs {MIN_WIDTH}x{MIN_HEIGHT}",
                area.width, area.height
            ),
            "q quits".to_string(),
        ];
        let lines: Vec<Line> = text
            .iter()
            .map(|t| Line::from(fit::cut_words(t, w)))
            .collect();
        frame.render_widget(Paragraph::new(lines), area);
        return;
    }
    let width = area.width as usize;
    let inner = width - 2;
    let cpu_lines = cpu_lines(s, inner);
    let extra = s.rejected.len();
    let h = heights(
        area.height,
        s.tasks.len(),
        cpu_lines.len(),
        s.senders.len() + extra,
        s.counters.len(),
    );
    let [top, tasks, cpus, senders, counters, recent, keys] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(h.tasks),
        Constraint::Length(h.cpus),
        Constraint::Length(h.senders),
        Constraint::Length(h.counters),
        Constraint::Length(h.recent),
        Constraint::Length(1),
    ])
    .areas(area);
    frame.render_widget(Paragraph::new(head_fitted(s, st, width)), top);
    draw_tasks(frame, s, tasks);
    if h.cpus > 0 {
        let room = usize::from(h.cpus - 2);
        let shown: usize = cpu_lines[..room.min(cpu_lines.len())]
            .iter()
            .map(|l| l.matches("cpu ").count())
            .sum();
        let lines: Vec<Line> = cpu_lines.into_iter().take(room).map(Line::from).collect();
        let name = title("CPU busy", shown, s.cpus.len());
        frame.render_widget(
            Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(name)),
            cpus,
        );
    }
    draw_senders(frame, s, senders);
    if h.counters > 0 {
        draw_counters(frame, s, counters);
    }
    if h.recent > 0 {
        draw_recent(frame, s, recent);
    }
    frame.render_widget(
        Paragraph::new(fit::cut_words(&keys_line(s, st), width)),
        keys,
    );
}

/// The keys and the choices they change.
fn keys_line(s: &Snapshot, st: &Status) -> String {
    let task = st.task.map_or("all".to_string(), |t| t.to_string());
    format!(
        "q quit  p pause  s sort: {}  c class: {}  t task: {task}",
        st.sort, s.class
    )
}

/// A fitted table as rows of cells; `style` picks a cell's style from
/// (column index, row index).
fn table<'a>(
    f: &'a fit::Fitted,
    title: String,
    style: impl Fn(usize, usize) -> Style,
) -> Table<'a> {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let rows = f.rows.iter().enumerate().map(|(i, r)| {
        Row::new(
            r.iter()
                .zip(&f.kept)
                .map(|(c, &col)| Line::from(Span::styled(c.clone(), style(col, i))))
                .collect::<Vec<_>>(),
        )
    });
    Table::new(rows, f.widths.iter().map(|&w| Constraint::Length(w)))
        .header(Row::new(f.header.clone()).style(bold))
        .block(Block::default().borders(Borders::ALL).title(title))
}

/// `Name (shown of all)` when not every row fits.
fn title(name: &str, shown: usize, all: usize) -> String {
    if shown < all {
        format!("{name} ({shown} of {all} shown)")
    } else {
        name.to_string()
    }
}

fn draw_tasks(frame: &mut Frame, s: &Snapshot, area: Rect) {
    let room = area.height.saturating_sub(3) as usize;
    let shown = &s.tasks[..s.tasks.len().min(room)];
    let rows: Vec<Vec<Cell>> = shown.iter().map(task_cells).collect();
    let inner = area.width.saturating_sub(2) as usize;
    // The width is at least MIN_WIDTH: task and cpu always fit.
    if let Some(f) = fit::fit_columns(&TASK_COLUMNS, &rows, inner) {
        let t = table(&f, title("Tasks", shown.len(), s.tasks.len()), |_, _| {
            Style::default()
        });
        frame.render_widget(t, area);
    }
}

fn draw_counters(frame: &mut Frame, s: &Snapshot, area: Rect) {
    let room = area.height.saturating_sub(3) as usize;
    let shown = &s.counters[..s.counters.len().min(room)];
    let rows: Vec<Vec<Cell>> = shown.iter().map(counter_cells).collect();
    let inner = area.width.saturating_sub(2) as usize;
    if let Some(f) = fit::fit_columns(&COUNTER_COLUMNS, &rows, inner) {
        let t = table(
            &f,
            title("Counters", shown.len(), s.counters.len()),
            |_, _| Style::default(),
        );
        frame.render_widget(t, area);
    }
}

fn draw_senders(frame: &mut Frame, s: &Snapshot, area: Rect) {
    let alarm = Style::default()
        .fg(ratatui::style::Color::Red)
        .add_modifier(Modifier::BOLD | Modifier::REVERSED);
    let inner = area.width.saturating_sub(2) as usize;
    let room = area.height.saturating_sub(3) as usize;
    let all = s.senders.len() + s.rejected.len();
    let senders = &s.senders[..s.senders.len().min(room)];
    let rejected = &s.rejected[..s.rejected.len().min(room - senders.len())];
    let rows: Vec<Vec<Cell>> = senders.iter().map(sender_cells).collect();
    let Some(f) = fit::fit_columns(&SENDER_COLUMNS, &rows, inner) else {
        return;
    };
    let style = |col: usize, i: usize| {
        let r = &senders[i];
        let bad = match col {
            3 => r.lost > 0,
            4 => matches!(r.health, Health::Unclosed | Health::Refused),
            _ => false,
        };
        if bad {
            alarm
        } else {
            Style::default()
        }
    };
    let shown = senders.len() + rejected.len();
    let t = table(&f, title("Senders", shown, all), style);
    frame.render_widget(t, area);
    // The stream health of rejected datagrams, under the senders' rows.
    for (i, r) in rejected.iter().enumerate() {
        let y = area.y + 2 + senders.len() as u16 + i as u16;
        let line = Line::from(Span::styled(
            fit::cut_words(&rejected_line(r, s.keyed), inner),
            alarm,
        ));
        frame.render_widget(
            Paragraph::new(line),
            Rect::new(area.x + 1, y, area.width - 2, 1),
        );
    }
}

fn draw_recent(frame: &mut Frame, s: &Snapshot, area: Rect) {
    let room = area.height.saturating_sub(2) as usize;
    let inner = area.width.saturating_sub(2) as usize;
    let lines: Vec<Line> = s.recent[s.recent.len().saturating_sub(room)..]
        .iter()
        .map(|l| Line::from(fit::cut_words(l, inner)))
        .collect();
    let title = format!("Recent {} events", s.class);
    frame.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)),
        area,
    );
}

/// `s` as plain text (a standard output that is not a terminal): the
/// header line, then tasks, CPUs, senders, rejected datagrams and
/// counters, each a line, and a blank line. No recent events: a pipe gets `qtrace dump
/// --follow` for those.
pub fn plain(s: &Snapshot, st: &Status) -> String {
    let mut out = head(s, st);
    out.push('\n');
    for t in &s.tasks {
        let c: Vec<String> = task_cells(t).iter().map(|c| c.whole()).collect();
        let _ = writeln!(
            out,
            "task {}  cpu {}  act {}  resp p50 {} p99 {} max {}  preempt {}  blocked {}",
            c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]
        );
    }
    for c in &s.cpus {
        let _ = writeln!(out, "cpu {}  busy {}", c.source, pct(c.busy_permille));
    }
    for r in &s.senders {
        let _ = writeln!(
            out,
            "sender {}  events {}  rate {}  lost {}  stream {}",
            r.name,
            r.events,
            Cell::Rate(r.rate).whole(),
            r.lost,
            r.health.word()
        );
    }
    for r in &s.rejected {
        let _ = writeln!(out, "{}", rejected_line(r, s.keyed));
    }
    for c in &s.counters {
        let cells: Vec<String> = counter_cells(c).iter().map(|c| c.whole()).collect();
        let unit = if c.unit.is_empty() {
            String::new()
        } else {
            format!(" {}", c.unit)
        };
        let _ = writeln!(
            out,
            "counter {}  source {}  value {}{unit}  recent {}  min {} max {}",
            cells[0], cells[1], cells[2], cells[4], cells[5], cells[6]
        );
    }
    out.push('\n');
    out
}
