//! `qtrace live --ctl PID|NAME|PATH`: the status of a running tracer,
//! asked of its control endpoint (`qtrace::control::Endpoint`, FORMAT.md
//! §9) at every refresh and shown as `qtrace ctl status` shows it, with
//! each queue's events accepted and dropped per second since the previous
//! refresh. One connection per refresh, closed at once: the endpoint serves
//! one connection at a time, and `qtrace ctl` must not wait behind this
//! view.

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crossterm::event::{self, Event as TermEvent, KeyCode, KeyEventKind, KeyModifiers};
use crossterm::terminal::{enable_raw_mode, EnterAlternateScreen};
use crossterm::ExecutableCommand;
use qtrace::control::{Reply, Request};
use ratatui::backend::CrosstermBackend;
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Terminal;
use serde_json::Value;

use super::{Restore, Settings, TAKE_EVERY};
use crate::commands::ctl::{exchange, resolve, status_text, Rates};
use crate::spine::{interrupt, Exit};

/// The view's state: the endpoint and the previous status (for the rates).
struct Poller {
    path: PathBuf,
    previous: Option<Value>,
}

/// What one refresh got.
enum Frame {
    /// The status as text (a frame).
    Text(String),
    /// The endpoint answered with an error, or not at all: the view ends
    /// with this note.
    Gone(String),
}

impl Poller {
    /// Asks for the status and turns it into a frame's text.
    fn poll(&mut self) -> Frame {
        match exchange(&self.path, &Request::Status) {
            Ok(Reply::Status(json)) => match serde_json::from_str::<Value>(&json) {
                Ok(v) => {
                    let rates = match &self.previous {
                        Some(p) => Rates::Since(p),
                        None => Rates::First,
                    };
                    let text = status_text(&v, rates);
                    self.previous = Some(v);
                    Frame::Text(text)
                }
                Err(e) => Frame::Gone(format!("the status is not JSON ({e}): {json}")),
            },
            Ok(Reply::Error(code, m)) => Frame::Gone(format!("{code}: {m}")),
            Ok(other) => Frame::Gone(format!("unexpected reply {other:?}")),
            Err(e) => Frame::Gone(e),
        }
    }
}

/// Runs `qtrace live --ctl TARGET`.
pub(super) fn run(target: &str, settings: &Settings) -> Exit {
    let path = match resolve(target) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("qtrace: {e}");
            return Exit::BadInput;
        }
    };
    let mut poller = Poller {
        path,
        previous: None,
    };
    // The first status: an endpoint that does not answer is an error now,
    // not a view that ends at once.
    let first = match poller.poll() {
        Frame::Text(t) => t,
        Frame::Gone(note) => {
            eprintln!("qtrace: {}: {note}", poller.path.display());
            return Exit::Failed;
        }
    };
    interrupt::install();
    let gone = if io::stdout().is_terminal() {
        match tui(&mut poller, first, settings) {
            Ok(gone) => gone,
            Err(e) => {
                eprintln!("qtrace: the terminal failed: {e}");
                return Exit::Failed;
            }
        }
    } else {
        match plain(&mut poller, first, settings) {
            Some(gone) => gone,
            None => return Exit::Ok,
        }
    };
    if let Some(note) = gone {
        eprintln!(
            "qtrace: {}: the endpoint went away ({note}); the last status is above",
            poller.path.display()
        );
    }
    Exit::Ok
}

fn stop_now(start: Instant, settings: &Settings) -> bool {
    interrupt::happened() || settings.duration.is_some_and(|d| start.elapsed() >= d)
}

/// The plain-text form: a frame (the status, a blank line) every
/// `settings.every`, and once more at `--duration` or Ctrl-C, until then
/// or the endpoint's end. `None` when the reader of standard output went
/// away; else why the endpoint ended, if it did.
fn plain(poller: &mut Poller, first: String, settings: &Settings) -> Option<Option<String>> {
    let start = Instant::now();
    let stdout = io::stdout();
    let mut text = first;
    let mut next = start + settings.every;
    let mut last = false;
    loop {
        let mut out = stdout.lock();
        if writeln!(out, "{text}").and_then(|()| out.flush()).is_err() {
            return None;
        }
        drop(out);
        if last {
            return Some(None);
        }
        loop {
            if stop_now(start, settings) {
                last = true;
                break;
            }
            if Instant::now() >= next {
                break;
            }
            std::thread::sleep(TAKE_EVERY);
        }
        next = (next + settings.every).max(Instant::now() + settings.every / 2);
        text = match poller.poll() {
            Frame::Text(t) => t,
            Frame::Gone(note) => return Some(Some(note)),
        };
    }
}

/// The terminal form: the status in a box, refreshed every
/// `settings.refresh` (at least 100 ms: each refresh is a connection);
/// `q`, Esc or Ctrl-C quits, `p` or space pauses. Why the endpoint ended,
/// if it did (the view stays until a key).
fn tui(poller: &mut Poller, first: String, settings: &Settings) -> io::Result<Option<String>> {
    enable_raw_mode()?;
    let _restore = Restore;
    io::stdout().execute(EnterAlternateScreen)?;
    let mut terminal = Terminal::new(CrosstermBackend::new(io::stdout()))?;
    let refresh = settings.refresh.max(Duration::from_millis(100));
    let start = Instant::now();
    let mut text = first;
    let mut paused = false;
    let mut gone: Option<String> = None;
    let mut next = Instant::now();
    loop {
        if Instant::now() >= next {
            if !paused && gone.is_none() {
                match poller.poll() {
                    Frame::Text(t) => text = t,
                    Frame::Gone(note) => gone = Some(note),
                }
            }
            let title = title(&poller.path, paused, gone.as_deref());
            terminal.draw(|f| draw(f, &text, &title))?;
            next = Instant::now() + refresh;
        }
        if stop_now(start, settings) {
            return Ok(gone);
        }
        let wait = next.saturating_duration_since(Instant::now());
        if !event::poll(wait.min(TAKE_EVERY))? {
            continue;
        }
        if let TermEvent::Key(k) = event::read()? {
            if k.kind != KeyEventKind::Press {
                continue;
            }
            match k.code {
                KeyCode::Char('q') | KeyCode::Esc => return Ok(gone),
                KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                    return Ok(gone)
                }
                KeyCode::Char('p') | KeyCode::Char(' ') => {
                    paused = !paused;
                    next = Instant::now();
                }
                _ => {}
            }
        }
    }
}

/// The status text in a box titled `title`, over the whole frame.
fn draw(f: &mut ratatui::Frame, text: &str, title: &str) {
    let block = Block::default().borders(Borders::ALL).title(title);
    f.render_widget(Paragraph::new(text).block(block), f.area());
}

/// The box's title: the endpoint, the keys, and the state.
fn title(path: &Path, paused: bool, gone: Option<&str>) -> String {
    let state = match (gone, paused) {
        (Some(note), _) => format!(" — ended: {note}"),
        (None, true) => " — paused".into(),
        (None, false) => String::new(),
    };
    format!(" {} — q quits, p pauses{state} ", path.display())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn status(uptime_ns: u64, accepted: u64, dropped: u64) -> Value {
        json!({
            "protocol": 1, "pid": 7, "name": "app", "phase": "active",
            "suspended": false, "recording": true, "uptime_ns": uptime_ns,
            "endpoint": {"connections": 2, "refused": 0, "requests": 2, "errors": 0},
            "queues": [{"queue": 0, "type": "fixed", "recording": true,
                "accepted": accepted, "dropped": dropped, "overwritten": 0,
                "delivered": 0, "queued": accepted, "io_errors": 0,
                "last_error": null, "files": []}]
        })
    }

    #[test]
    fn rates_are_per_second_of_the_endpoints_clock() {
        let earlier = status(1_000_000_000, 100, 10);
        let later = status(3_000_000_000, 300, 11);
        let text = status_text(&later, Rates::Since(&earlier));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "app (pid 7): active, recording, not suspended, up 3.0 s"
        );
        assert_eq!(
            lines[2],
            "queue  type       recording      accepted       dropped   overwritten     delivered    queued  io errors    accepted/s     dropped/s"
        );
        assert_eq!(
            lines[3],
            "    0  fixed      yes                 300            11             0             0       300          0         100/s           0/s"
        );
        // 1 dropped over 2 s rounds to 0/s; 3 over 2 s is 2/s.
        let later = status(3_000_000_000, 300, 13);
        let text = status_text(&later, Rates::Since(&earlier));
        assert!(text
            .lines()
            .nth(3)
            .unwrap()
            .ends_with("100/s           2/s"));
        // No earlier status, or no time between: "-".
        let first = status_text(&later, Rates::First);
        assert!(first
            .lines()
            .nth(3)
            .unwrap()
            .ends_with("            -             -"));
        let same = status_text(&later, Rates::Since(&later));
        assert!(same
            .lines()
            .nth(3)
            .unwrap()
            .ends_with("            -             -"));
        // `qtrace ctl status` has no rate columns.
        let off = status_text(&later, Rates::Off);
        assert!(off.lines().nth(3).unwrap().ends_with("          0"));
    }

    #[test]
    fn the_terminal_draws_the_status_in_a_titled_box() {
        let text = status_text(&status(2_000_000_000, 5, 1), Rates::First);
        let mut t = Terminal::new(ratatui::backend::TestBackend::new(140, 7)).unwrap();
        let title = title(Path::new("/run/q/7.app.sock"), false, None);
        t.draw(|f| draw(f, &text, &title)).unwrap();
        let buf = t.backend().buffer();
        let rows: Vec<String> = (0..7)
            .map(|y| (0..140).map(|x| buf[(x, y)].symbol()).collect::<String>())
            .collect();
        assert!(
            rows[0].starts_with("┌ /run/q/7.app.sock — q quits, p pauses ─"),
            "{rows:#?}"
        );
        assert!(
            rows[1].starts_with("│app (pid 7): active, recording, not suspended, up 2.0 s "),
            "{rows:#?}"
        );
        assert!(
            rows[4].starts_with("│    0  fixed      yes                   5             1 "),
            "{rows:#?}"
        );
        let line = "    0  fixed      yes                   5             1             0             0         5          0             -             -";
        assert_eq!(rows[4], format!("│{line:<138}│"));
        assert_eq!(rows[5], format!("│{:<138}│", ""));
        assert!(rows[6].starts_with("└──"), "{rows:#?}");
    }

    #[test]
    fn the_title_says_the_state() {
        let p = Path::new("/run/q/1.app.sock");
        assert_eq!(
            title(p, false, None),
            " /run/q/1.app.sock — q quits, p pauses "
        );
        assert_eq!(
            title(p, true, None),
            " /run/q/1.app.sock — q quits, p pauses — paused "
        );
        assert_eq!(
            title(p, false, Some("cannot connect")),
            " /run/q/1.app.sock — q quits, p pauses — ended: cannot connect "
        );
    }
}
