//! `qtrace live --listen` at 60×15, 80×24 and 200×50 (tmux), resized while
//! the stream runs: every figure on each screen is compared with the
//! sender's counters and the workload's known figures — whole, or
//! shortened (`14.9k`) and reading back within its rounding; never cut.

use std::net::SocketAddr;
use std::time::Duration;

use crate::common::loopback::free_port;
use crate::common::recv::wait_listening;
use crate::live_stream::{self, CPU_ROWS, TASK_ROWS};
use crate::live_terminal::{row_of, tmux_or_skip, Session};

/// A figure as the view shows it, read back: its value and how far it may
/// be from the figure it stands for (`14.9k`: 14 900 ± 50; `856`: exact).
fn read_back(s: &str) -> Option<(u64, u64)> {
    let units = [('k', 1_000u64), ('M', 1_000_000), ('G', 1_000_000_000)];
    let Some((_, unit)) = units.iter().find(|(p, _)| s.ends_with(*p)) else {
        return s.parse().ok().map(|n| (n, 0));
    };
    let digits = &s[..s.len() - 1];
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let step = unit / 10u64.pow(frac.len() as u32);
    let q: u64 = format!("{int}{frac}").parse().ok()?;
    Some((q * step, step / 2))
}

/// Whether `shown` stands for `truth`.
fn stands_for(shown: &str, truth: u64) -> bool {
    read_back(shown).is_some_and(|(v, within)| v.abs_diff(truth) <= within)
}

/// What one screen says about the stream.
#[derive(Debug)]
struct Screen {
    /// The header's event count and loss.
    events: String,
    lost: Option<String>,
    /// The sender row: events, rate, lost, stream.
    sender: [String; 4],
    /// Task rows by column header (`task`, `cpu`, `act`, `resp p50`, …).
    tasks: Vec<Vec<(String, String)>>,
    text: String,
}

/// Reads a screen of the view (`None`: the sender row is not drawn yet).
fn read(text: &str) -> Option<Screen> {
    let head = text.lines().next()?;
    let words: Vec<&str> = head.split_whitespace().collect();
    let at = words
        .iter()
        .position(|w| *w == "events" || *w == "events,")?;
    let events = words[at - 1].to_string();
    let lost = (words.get(at + 2) == Some(&"lost")).then(|| words[at + 1].to_string());
    let line = text
        .lines()
        .find(|l| l.contains("│127.0.0.1:") && l.contains(" #"))?;
    let w = row_of(line);
    let sender = [w[2].clone(), w[3].clone(), w[4].clone(), w[5].clone()];
    // The task table: headers (`resp p50` is one), then rows of as many
    // cells.
    let header = text
        .lines()
        .find(|l| l.starts_with("│task "))
        .map(row_of)
        .unwrap_or_default();
    let mut names: Vec<String> = Vec::new();
    let mut it = header.into_iter();
    while let Some(h) = it.next() {
        names.push(if h == "resp" {
            format!("resp {}", it.next().unwrap())
        } else {
            h
        });
    }
    let tasks = text
        .lines()
        .filter(|l| l.starts_with("│1 ") || l.starts_with("│2 "))
        .map(|l| names.iter().cloned().zip(row_of(l)).collect())
        .collect();
    Some(Screen {
        events,
        lost,
        sender,
        tasks,
        text: text.to_string(),
    })
}

/// While the stream runs: no count on screen exceeds what was logged, the
/// header's events are the sender's, every figure reads as a number.
fn check_running(s: &Screen) {
    let t = &s.text;
    for (what, shown) in [
        ("events", &s.events),
        ("sender events", &s.sender[0]),
        ("sender lost", &s.sender[2]),
    ] {
        let (v, _) = read_back(shown).unwrap_or_else(|| panic!("{what} {shown:?}:\n{t}"));
        assert!(v <= live_stream::RECORDS, "{what} {shown}:\n{t}");
    }
    let rate = &s.sender[1];
    assert!(
        rate == "-" || rate.strip_suffix("/s").and_then(read_back).is_some(),
        "rate {rate}:\n{t}"
    );
    assert!(
        ["open", "closed"].contains(&s.sender[3].as_str()),
        "{:?}:\n{t}",
        s.sender
    );
}

/// After the close: every figure on screen is the truth (whole, or
/// shortened within its rounding); the task columns shown are the
/// workload's figures; the CPUs' when their box is drawn.
fn check_closed(s: &Screen, delivered: u64, dropped: u64) {
    let t = &s.text;
    assert!(stands_for(&s.events, delivered), "events:\n{t}");
    assert!(
        s.lost.as_deref().is_some_and(|l| stands_for(l, dropped)),
        "lost:\n{t}"
    );
    assert!(stands_for(&s.sender[0], delivered), "{:?}:\n{t}", s.sender);
    assert_eq!(s.sender[1], "0/s", "{t}");
    assert!(stands_for(&s.sender[2], dropped), "{:?}:\n{t}", s.sender);
    assert_eq!(s.sender[3], "closed", "{t}");
    assert_eq!(s.tasks.len(), 2, "both task rows:\n{t}");
    let headers = [
        "task", "cpu", "act", "resp p50", "resp p99", "resp max", "preempt", "blocked",
    ];
    for (row, want) in s.tasks.iter().zip(TASK_ROWS) {
        assert!(row.len() >= 2, "task and cpu always shown:\n{t}");
        for (h, v) in row {
            let i = headers.iter().position(|x| x == h).unwrap();
            assert_eq!(v, want[i], "task {} {h}:\n{t}", want[0]);
        }
    }
    if t.contains("┌CPU busy") {
        for (cpu, busy) in CPU_ROWS {
            assert!(t.contains(&format!("cpu {cpu}  {busy}")), "cpu {cpu}:\n{t}");
        }
    }
}

/// Resizes the session's window and waits for the view to redraw at that
/// size (a screen of `h` lines whose frame is `w` wide).
fn resize(session: &Session, w: u16, h: u16) {
    session.tmux(&[
        "resize-window",
        "-t",
        &session.0,
        "-x",
        &w.to_string(),
        "-y",
        &h.to_string(),
    ]);
}

/// The screen has `h` lines and the view's boxes are `w` wide.
fn sized(screen: &str, w: usize, h: usize) -> bool {
    screen.lines().count() == h
        && screen
            .lines()
            .any(|l| l.starts_with("┌Senders") && l.chars().count() == w)
}

#[test]
fn at_every_size_each_figure_is_the_truth_or_visibly_shortened() {
    if !tmux_or_skip() {
        return;
    }
    let listen = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let name = format!("qtrace-live-sizes-{}", std::process::id());
    let command = format!(
        "{} live --listen {listen} --window 60; echo qtrace-exited-$?; sleep 60",
        env!("CARGO_BIN_EXE_qtrace")
    );
    let session = Session(name.clone());
    session.tmux(&[
        "new-session",
        "-d",
        "-s",
        &name,
        "-x",
        "60",
        "-y",
        "15",
        &command,
    ]);
    wait_listening(listen);
    // About 6 events per 40 ms for 4 s: the view redraws many times while
    // they arrive, at both sizes.
    let sending =
        std::thread::spawn(move || live_stream::stream(listen, Duration::from_millis(40)));
    let small = session.wait("the sender at 60x15", |s| {
        sized(s, 60, 15) && read(s).is_some()
    });
    check_running(&read(&small).unwrap());
    assert!(
        !sending.is_finished(),
        "the stream still runs at the resize"
    );
    resize(&session, 80, 24);
    let mid = session.wait("the view redrawn at 80x24", |s| {
        sized(s, 80, 24) && read(s).is_some()
    });
    check_running(&read(&mid).unwrap());
    let report = sending.join().unwrap();
    let c = report.queues[0].counters;
    assert!(c.dropped >= live_stream::UNFIT, "{c:?}");
    assert_eq!(c.accepted + c.dropped, live_stream::RECORDS);
    for (w, h) in [(80, 24), (200, 50), (60, 15)] {
        resize(&session, w, h);
        let screen = session.wait(&format!("the closed stream at {w}x{h}"), |s| {
            sized(s, w as usize, h as usize)
                && read(s).is_some_and(|r| r.sender[3] == "closed" && r.sender[1] == "0/s")
        });
        println!("{w}x{h}:\n{screen}");
        check_closed(&read(&screen).unwrap(), c.delivered, c.dropped);
        // At 15 lines, too small for the recent events beside two tasks,
        // two CPUs and a sender: that box goes first.
        assert_eq!(screen.contains("┌Recent"), h >= 20, "{screen}");
    }
    // Below the minimum: it says so, and draws no figure.
    resize(&session, 50, 10);
    let tiny = session.wait("the too-small message", |s| {
        s.contains("qtrace live: the terminal is too small")
    });
    assert!(tiny.contains("50x10; it needs 60x12"), "{tiny}");
    assert!(!tiny.contains(&c.delivered.to_string()), "{tiny}");
    session.tmux(&["send-keys", "-t", &name, "q"]);
    let end = session.wait("qtrace live exits", |s| s.contains("qtrace-exited-"));
    assert!(end.contains("qtrace-exited-0"), "{end}");
}
