//! Drawing a [`Snapshot`]: on a terminal with ratatui ([`draw`]), or as
//! plain text for a standard output that is not a terminal ([`plain`]).

use std::fmt::Write as _;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table};
use ratatui::Frame;

use super::model::{Health, Snapshot};

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

/// A duration in ns, short: `950ns`, `12.5us`, `3.20ms`, `1.50s`.
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

/// The header line's text.
fn head(s: &Snapshot, st: &Status) -> String {
    let mut h = format!(
        "{}  window {:.1}s ({} of trace)  {} events",
        st.source,
        st.window_s,
        dur(s.span_ns),
        s.events
    );
    if s.lost > 0 {
        let _ = write!(h, ", {} lost", s.lost);
    }
    if s.skipped > 0 {
        let _ = write!(h, "  (view skipped {} events)", s.skipped);
    }
    if st.paused {
        h.push_str("  PAUSED");
    }
    if st.ended {
        h.push_str("  ENDED");
    }
    h
}

const TASK_HEADER: [&str; 8] = [
    "task", "cpu", "act", "resp p50", "p99", "max", "preempt", "blocked",
];

fn task_cells(t: &super::model::TaskRow) -> [String; 8] {
    let resp = |ns: u64| {
        if t.jobs == 0 {
            "-".to_string()
        } else {
            dur(ns)
        }
    };
    [
        t.task.to_string(),
        pct(t.cpu_permille),
        t.activations.to_string(),
        resp(t.p50),
        resp(t.p99),
        resp(t.max),
        t.preemptions.to_string(),
        dur(t.blocked_ns),
    ]
}

/// Draws `s` on `frame`.
pub fn draw(frame: &mut Frame, s: &Snapshot, st: &Status) {
    let senders_h = (s.senders.len() as u16 + 3).clamp(4, 8);
    let cpus_h = (s.cpus.len() as u16 + 2).clamp(3, 8);
    let [top, tasks, mid, recent, keys] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(5),
        Constraint::Length(senders_h.max(cpus_h)),
        Constraint::Length(8),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    frame.render_widget(Paragraph::new(head(s, st)), top);
    draw_tasks(frame, s, tasks);
    let [cpus, senders] =
        Layout::horizontal([Constraint::Length(18), Constraint::Min(30)]).areas(mid);
    draw_cpus(frame, s, cpus);
    draw_senders(frame, s, senders);
    draw_recent(frame, s, recent);
    frame.render_widget(Paragraph::new(keys_line(s, st)), keys);
}

/// The keys and the choices they change.
fn keys_line(s: &Snapshot, st: &Status) -> String {
    let task = st.task.map_or("all".to_string(), |t| t.to_string());
    format!(
        "q quit  p pause  s sort: {}  c class: {}  t task: {task}",
        st.sort, s.class
    )
}

fn draw_tasks(frame: &mut Frame, s: &Snapshot, area: Rect) {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let rows = s.tasks.iter().map(|t| Row::new(task_cells(t)));
    let table = Table::new(
        rows,
        [
            Constraint::Length(8),
            Constraint::Length(7),
            Constraint::Length(6),
            Constraint::Length(9),
            Constraint::Length(9),
            Constraint::Length(9),
            Constraint::Length(8),
            Constraint::Length(9),
        ],
    )
    .header(Row::new(TASK_HEADER).style(bold))
    .block(Block::default().borders(Borders::ALL).title("Tasks"));
    frame.render_widget(table, area);
}

fn draw_cpus(frame: &mut Frame, s: &Snapshot, area: Rect) {
    let rows = s
        .cpus
        .iter()
        .map(|c| Row::new([format!("cpu {}", c.source), pct(c.busy_permille)]));
    let table = Table::new(rows, [Constraint::Length(7), Constraint::Length(7)])
        .block(Block::default().borders(Borders::ALL).title("CPU busy"));
    frame.render_widget(table, area);
}

fn draw_senders(frame: &mut Frame, s: &Snapshot, area: Rect) {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let alarm = Style::default()
        .fg(ratatui::style::Color::Red)
        .add_modifier(Modifier::BOLD | Modifier::REVERSED);
    let rows = s.senders.iter().map(|r| {
        let lost = Line::from(Span::styled(
            r.lost.to_string(),
            if r.lost > 0 { alarm } else { Style::default() },
        ));
        let health = Line::from(Span::styled(
            r.health.word(),
            if matches!(r.health, Health::Unclosed | Health::Rejected) {
                alarm
            } else {
                Style::default()
            },
        ));
        Row::new(vec![
            Line::from(r.name.clone()),
            Line::from(r.events.to_string()),
            Line::from(format!("{}/s", r.rate)),
            lost,
            health,
        ])
    });
    let table = Table::new(
        rows,
        [
            Constraint::Min(22),
            Constraint::Length(10),
            Constraint::Length(11),
            Constraint::Length(8),
            Constraint::Length(8),
        ],
    )
    .header(Row::new(["sender", "events", "rate", "lost", "stream"]).style(bold))
    .block(Block::default().borders(Borders::ALL).title("Senders"));
    frame.render_widget(table, area);
}

fn draw_recent(frame: &mut Frame, s: &Snapshot, area: Rect) {
    let room = area.height.saturating_sub(2) as usize;
    let lines: Vec<Line> = s.recent[s.recent.len().saturating_sub(room)..]
        .iter()
        .map(|l| Line::from(l.as_str()))
        .collect();
    let title = format!("Recent {} events", s.class);
    frame.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)),
        area,
    );
}

/// `s` as plain text (a standard output that is not a terminal): the
/// header line, then tasks, CPUs, senders, each a line, and a blank line.
/// No recent events: a pipe gets `qtrace dump --follow` for those.
pub fn plain(s: &Snapshot, st: &Status) -> String {
    let mut out = head(s, st);
    out.push('\n');
    for t in &s.tasks {
        let c = task_cells(t);
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
            "sender {}  events {}  rate {}/s  lost {}  stream {}",
            r.name,
            r.events,
            r.rate,
            r.lost,
            r.health.word()
        );
    }
    out.push('\n');
    out
}
