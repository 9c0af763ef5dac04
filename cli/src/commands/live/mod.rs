//! `qtrace live`: a terminal view of a running system — per task its CPU
//! share, activations, response times, preemptions and time blocked; per
//! CPU its busy time; per sender its rate, losses and stream health, and
//! the datagrams rejected per source and reason; the recent events of a
//! chosen class — refreshed several times a second over
//! a sliding window. Its events come from a receiver of its own (`--listen
//! ADDR`), a trace file followed as it grows (`FILE`: an online queue's),
//! or `qtrace recv --live` (the file that receiver writes, and its
//! account). With `--ctl PID|NAME`, it shows instead a running tracer's
//! status through its control endpoint (`ctl.rs`).
//!
//! In this folder: the input (`source.rs`), the model that turns events
//! into figures with the library's analysis (`model.rs`, no terminal), the
//! drawing (`view.rs`), laid out for the terminal's size with figures
//! shortened visibly and columns dropped in order (`fit.rs`). A standard output that is not a terminal gets
//! the same figures as plain text every `--every` seconds.

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;
use crossterm::event::{self, Event as TermEvent, KeyCode, KeyEventKind, KeyModifiers};
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use crossterm::ExecutableCommand;
use qtrace::classes::Catalog;
use qtrace::receiver::{default_listen_addr, Progress, ReceiverConfig, ReceiverSummary};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

use crate::spine::watch::Watch;
use crate::spine::{interrupt, Exit};
use model::{Model, Snapshot};
use source::Source;
use view::Status;

pub mod ctl;
pub mod fit;
pub mod model;
pub mod source;
pub mod view;

#[cfg(test)]
mod tests;

/// Arguments of `qtrace live`.
#[derive(Args, Debug)]
pub struct LiveArgs {
    /// A trace file to follow as it grows.
    ///
    /// A trace file to follow as it grows (an online queue's, or one that
    /// `qtrace recv` writes); waits for it to appear; a chunk of a rotating
    /// online queue is followed into the next chunks. Give FILE or --listen.
    #[arg(
        value_name = "FILE",
        conflicts_with_all = ["listen", "ctl"],
        required_unless_present_any = ["listen", "ctl"]
    )]
    pub file: Option<PathBuf>,
    /// Receive UDP datagrams on this address.
    ///
    /// Receive UDP queue datagrams on this address, IP:PORT (as `qtrace
    /// recv --listen`; nothing is written to disk: use `qtrace recv --live`
    /// to keep the trace).
    #[arg(long, value_name = "ADDR", conflicts_with = "ctl")]
    pub listen: Option<String>,
    /// Show a running tracer's status through its control endpoint.
    ///
    /// Show the status of a running tracer through its control endpoint
    /// (PID, NAME or socket path, as `qtrace ctl`; the program serves one
    /// with `Config::with_control` or `control::Endpoint::bind`): phase,
    /// uptime, the endpoint's counters and per queue its counters, losses
    /// and events accepted and dropped per second, asked for at every
    /// refresh (--refresh on a terminal, --every otherwise). No events are
    /// read: --window and --max-events do not apply.
    #[arg(long, value_name = "PID|NAME|PATH")]
    pub ctl: Option<String>,
    /// --listen: accept only datagrams keyed with a key in FILE.
    ///
    /// With --listen: accept only datagrams keyed with the key in FILE (as
    /// `qtrace recv --key-file`; repeat for several keys). Datagrams
    /// rejected (unkeyed, another key, forged, replayed) are counted per
    /// source and reason in the Senders box, while they arrive.
    #[arg(long = "key-file", value_name = "FILE")]
    pub key_file: Vec<PathBuf>,
    /// Show figures over the last S seconds of trace time.
    #[arg(long, value_name = "S", default_value_t = 2.0)]
    pub window: f64,
    /// At most this many events in the window.
    ///
    /// At most this many events in the window (past it, the window is the
    /// newest N events; the header line shows the span it covers).
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    pub max_events: usize,
    /// Redraw every MS milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 250)]
    pub refresh: u64,
    /// Plain text every S seconds when not on a terminal.
    ///
    /// When standard output is not a terminal: print the figures as plain
    /// text every S seconds.
    #[arg(long, value_name = "S", default_value_t = 1.0)]
    pub every: f64,
    /// Stop after S seconds (else: `q`, Ctrl-C, or the followed file's
    /// close).
    #[arg(long, value_name = "S")]
    pub duration: Option<f64>,
}

/// The view's settings, from `qtrace live` or `qtrace recv --live`.
struct Settings {
    /// Whether the receiver holds keys (how its rejections are worded).
    keyed: bool,
    window: Duration,
    max_events: usize,
    refresh: Duration,
    every: Duration,
    duration: Option<Duration>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            keyed: false,
            window: Duration::from_secs(2),
            max_events: 1_000_000,
            refresh: Duration::from_millis(250),
            every: Duration::from_secs(1),
            duration: None,
        }
    }
}

/// Seconds from a flag: positive and finite, at most a year.
fn seconds(flag: &str, s: f64) -> Result<Duration, String> {
    if s.is_finite() && s > 0.0 && s <= 3.2e7 {
        Ok(Duration::from_secs_f64(s))
    } else {
        Err(format!(
            "{flag} must be a positive number of seconds, at most 3.2e7 (a year)"
        ))
    }
}

/// Runs `qtrace live`.
pub fn run(args: LiveArgs) -> Exit {
    let settings = match (|| {
        Ok::<_, String>(Settings {
            keyed: !args.key_file.is_empty(),
            window: seconds("--window", args.window)?,
            max_events: args.max_events.max(1),
            refresh: Duration::from_millis(args.refresh.clamp(20, 10_000)),
            every: seconds("--every", args.every)?,
            duration: args
                .duration
                .map(|d| seconds("--duration", d))
                .transpose()?,
        })
    })() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("qtrace: {e}");
            return Exit::BadInput;
        }
    };
    if !args.key_file.is_empty() && args.listen.is_none() {
        eprintln!(
            "qtrace: --key-file applies to --listen: a followed file holds what its receiver accepted (give the key to `qtrace recv --key-file`)"
        );
        return Exit::BadInput;
    }
    if let Some(target) = &args.ctl {
        return ctl::run(target, &settings);
    }
    let cap = settings.max_events;
    let source = match (&args.file, &args.listen) {
        (Some(file), _) => Source::follow(file, cap),
        (None, Some(listen)) => {
            let addr = match crate::spine::listen::listen_addr(listen) {
                Ok(a) => a,
                Err(e) => {
                    eprintln!("qtrace: {e}");
                    return Exit::BadInput;
                }
            };
            let keys = match crate::commands::recv::keys::load(&args.key_file) {
                Ok(k) => k,
                Err(e) => {
                    eprintln!("qtrace: {e}");
                    return Exit::BadInput;
                }
            };
            crate::commands::recv::keys::warn_if_exposed(addr, !keys.is_empty());
            let config = ReceiverConfig {
                keys,
                ..ReceiverConfig::default()
            };
            match Source::listen(addr, config, cap) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("qtrace: {e}");
                    return Exit::BadInput;
                }
            }
        }
        (None, None) => {
            eprintln!(
                "qtrace: give a FILE to follow, --listen ADDR (e.g. --listen {}) or --ctl PID|NAME",
                default_listen_addr()
            );
            return Exit::BadInput;
        }
    };
    let (status, summary) = show(source, &settings);
    if let Some(summary) = summary {
        println!("{summary}");
    }
    status
}

/// `qtrace recv --live`: the view of the file the receiver writes, with its
/// account; quitting the view stops the receiver.
pub fn watch(w: Watch) -> Exit {
    // The receiver's thread is running: this one (and the follower it
    // starts, which inherits it) yields the CPU to it under contention.
    crate::spine::priority::lower_this_thread();
    let settings = Settings {
        keyed: w.keyed,
        ..Settings::default()
    };
    let source = Source::receiver_file(&w.file, w.progress, w.stop, settings.max_events);
    show(source, &settings).0
}

/// Shows `source` until quit: on the terminal, or as plain text.
fn show(source: Source, settings: &Settings) -> (Exit, Option<qtrace::receiver::ReceiverSummary>) {
    interrupt::install();
    let mut model = Model::new(Catalog::builtin(), settings.window, settings.max_events);
    model.keyed = settings.keyed;
    let status = if io::stdout().is_terminal() {
        match tui(&source, &mut model, settings) {
            Ok(()) => Exit::Ok,
            Err(e) => {
                eprintln!("qtrace: the terminal failed: {e}");
                Exit::Failed
            }
        }
    } else {
        plain(&source, &mut model, settings)
    };
    let note = source.feed.note();
    // An input that stopped on an error sets the status, as in `dump`.
    let status = status.and(source.feed.failure());
    let summary = source.finish();
    if let Some(n) = note {
        eprintln!("qtrace: {n}");
    }
    (status, summary)
}

/// Takes the events the input has for the model (often: the feed holds at
/// most `max_events` between two calls).
fn take(source: &Source, model: &mut Model) {
    if let Some(c) = source.feed.catalog() {
        model.set_catalog(c);
    }
    let (events, gaps) = source.feed.take();
    let mut gaps = gaps.into_iter().peekable();
    for (i, e) in events.iter().enumerate() {
        while gaps.next_if(|&g| g == i).is_some() {
            model.gap();
        }
        model.push(e);
    }
    if gaps.next().is_some() {
        model.gap();
    }
    model.skipped = source.feed.skipped();
}

/// Before a refresh at `now` since the start: the senders' account (the
/// receiver's, fresh: see [`fresh_account`]), then the events, so that the
/// window holds every event the account counts and the whole frame ends
/// at the same moment (within a datagram; with `recv --live`, the account
/// that matches the file read so far: [`Model::settle`]); or the followed
/// file's account.
fn feed(source: &Source, model: &mut Model, now: Duration) {
    if let Some(p) = &source.progress {
        if let Some(s) = fresh_account(p) {
            model.account(s);
        }
    }
    take(source, model);
    if source.feed.ended.load(std::sync::atomic::Ordering::Relaxed) {
        model.input_ended();
    }
    model.settle(source.by_file);
    if let Some(name) = &source.file {
        let closed = source
            .feed
            .closed
            .load(std::sync::atomic::Ordering::Relaxed);
        model.file_tick(name, now, closed);
    }
}

/// The longest a refresh waits for the receiver's account.
const ACCOUNT_WAIT: Duration = Duration::from_millis(200);

/// The receiver's account as it is now: [`Progress::summary`] hands over
/// the account asked for at the previous call (a refresh ago), so that one
/// is set aside and a new one waited for (the receiver builds it after its
/// next datagram or idle wait, about 20 ms; at most [`ACCOUNT_WAIT`]).
/// When none comes (a receiver that stopped: the one set aside is its
/// final account), the one set aside; `None` when there is neither.
fn fresh_account(p: &Progress) -> Option<ReceiverSummary> {
    let older = p.summary();
    let deadline = Instant::now() + ACCOUNT_WAIT;
    loop {
        std::thread::sleep(Duration::from_millis(2));
        if let Some(s) = p.summary() {
            return Some(s);
        }
        if Instant::now() >= deadline {
            return older;
        }
    }
}

/// How often the events are taken from the input between refreshes.
const TAKE_EVERY: Duration = Duration::from_millis(20);

fn status(source: &Source, model: &Model, settings: &Settings, paused: bool) -> Status {
    Status {
        source: source.what.clone(),
        window_s: settings.window.as_secs_f64(),
        sort: model.sort.name(),
        task: model.task,
        paused,
        ended: false,
    }
}

fn ended(source: &Source, start: Instant, settings: &Settings) -> bool {
    interrupt::happened()
        || settings.duration.is_some_and(|d| start.elapsed() >= d)
        || source.feed.ended.load(std::sync::atomic::Ordering::Relaxed)
}

/// The plain-text form: the figures every `settings.every`, and once more
/// at the end.
fn plain(source: &Source, model: &mut Model, settings: &Settings) -> Exit {
    let start = Instant::now();
    let mut next = start + settings.every;
    let stdout = io::stdout();
    loop {
        let done = ended(source, start, settings);
        if done || Instant::now() >= next {
            feed(source, model, start.elapsed());
            let text = view::plain(&model.snapshot(), &status(source, model, settings, false));
            let mut out = stdout.lock();
            if out
                .write_all(text.as_bytes())
                .and_then(|()| out.flush())
                .is_err()
            {
                // A reader that went away: stop quietly.
                return Exit::Ok;
            }
            // A frame printed late does not make the next one early.
            next = (next + settings.every).max(Instant::now() + settings.every / 2);
        }
        if done {
            return Exit::Ok;
        }
        std::thread::sleep(TAKE_EVERY);
        take(source, model);
    }
}

/// Restores the terminal however the view ends.
struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = disable_raw_mode();
        let _ = io::stdout().execute(LeaveAlternateScreen);
    }
}

/// The terminal form, until `q`.
fn tui(source: &Source, model: &mut Model, settings: &Settings) -> io::Result<()> {
    enable_raw_mode()?;
    let _restore = Restore;
    io::stdout().execute(EnterAlternateScreen)?;
    let mut terminal = Terminal::new(CrosstermBackend::new(io::stdout()))?;
    let start = Instant::now();
    let mut paused = false;
    let mut shown = Snapshot::default();
    let mut next = Instant::now();
    loop {
        if Instant::now() >= next {
            feed(source, model, start.elapsed());
            if !paused {
                shown = model.snapshot();
            }
            let mut st = status(source, model, settings, paused);
            st.ended = source.feed.ended.load(std::sync::atomic::Ordering::Relaxed);
            terminal.draw(|f| view::draw(f, &shown, &st))?;
            next = Instant::now() + settings.refresh;
        }
        if interrupt::happened() || settings.duration.is_some_and(|d| start.elapsed() >= d) {
            return Ok(());
        }
        let wait = next.saturating_duration_since(Instant::now());
        if !event::poll(wait.min(TAKE_EVERY))? {
            take(source, model);
            continue;
        }
        if let TermEvent::Key(k) = event::read()? {
            if k.kind != KeyEventKind::Press {
                continue;
            }
            match k.code {
                KeyCode::Char('q') | KeyCode::Esc => return Ok(()),
                KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => return Ok(()),
                KeyCode::Char('p') | KeyCode::Char(' ') => paused = !paused,
                KeyCode::Char('s') => model.sort = model.sort.next(),
                KeyCode::Char('c') => model.next_class(),
                KeyCode::Char('t') => {
                    let tasks: Vec<u64> = model.snapshot_tasks();
                    model.next_task(&tasks);
                }
                _ => continue,
            }
            // Redraw at once with the new choice.
            if !paused {
                shown = model.snapshot();
            }
            next = Instant::now();
        }
    }
}
