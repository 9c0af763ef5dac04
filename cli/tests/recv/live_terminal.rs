//! `qtrace live --listen` in a real terminal: a detached tmux session of a
//! fixed size runs it, a UDP queue streams the known workload to it
//! (`live_stream.rs`), `tmux capture-pane` reads the screen. Skipped with
//! a message when tmux is missing, unless `QTRACE_REQUIRE_TMUX` is set (CI
//! sets it; scripts/test.sh installs tmux).

use std::net::SocketAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::loopback::free_port;
use crate::common::recv::wait_listening;
use crate::live_stream::{self, CPU_ROWS, TASK_ROWS};

/// A tmux session, killed when dropped.
pub struct Session(pub String);

impl Session {
    pub fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux").args(args).output().unwrap();
        assert!(out.status.success(), "tmux {args:?}: {:?}", out);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
    pub fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", &self.0])
    }
    /// Waits (bounded) until the screen satisfies `f`; the last screen.
    pub fn wait(&self, what: &str, f: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let s = self.screen();
            if f(&s) {
                return s;
            }
            assert!(Instant::now() < deadline, "{what}; the screen:\n{s}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.0])
            .output();
    }
}

/// Whether tmux is here; without it, says the test is skipped (or fails
/// it when `QTRACE_REQUIRE_TMUX` is set).
pub fn tmux_or_skip() -> bool {
    if have_tmux() {
        return true;
    }
    let msg = "tmux is not on PATH; install it (Debian: apt-get install tmux) to run this test";
    if std::env::var_os("QTRACE_REQUIRE_TMUX").is_some() {
        panic!("{msg} (QTRACE_REQUIRE_TMUX is set)");
    }
    eprintln!("SKIPPED: {msg}");
    false
}

fn have_tmux() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The words of the screen line that starts (after the border) with
/// `first` followed by a space.
fn row(screen: &str, first: &str) -> Vec<String> {
    screen
        .lines()
        .find(|l| l.trim_start_matches('│').starts_with(&format!("{first} ")))
        .unwrap_or_else(|| panic!("no line starting with {first:?}:\n{screen}"))
        .split(|c: char| c.is_whitespace() || c == '│')
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn the_view_shows_tasks_rates_and_losses_of_a_stream_and_quits_on_q() {
    if !tmux_or_skip() {
        return;
    }
    let listen = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let name = format!("qtrace-live-test-{}", std::process::id());
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
        "100",
        "-y",
        "24",
        &command,
    ]);
    wait_listening(listen);
    // The cycles paced at about 200 events a second (6 events per 30 ms):
    // the view refreshes while they arrive.
    let sending =
        std::thread::spawn(move || live_stream::stream(listen, Duration::from_millis(30)));
    // A sender row: `127.0.0.1:PORT #ID …` (the header line names the
    // listening address too).
    let is_sender = |l: &str| l.contains("127.0.0.1:") && l.contains(" #");
    let during = session.wait("a sender row with a rate while streaming", |s| {
        s.lines().any(|l| {
            is_sender(l) && {
                let w = row_of(l);
                w.iter().any(|x| x.ends_with("/s") && x != "0/s")
            }
        })
    });
    let report = sending.join().unwrap();
    let c = report.queues[0].counters;
    assert!(
        c.dropped >= live_stream::UNFIT,
        "the payload longer than the queue is dropped: {c:?}"
    );
    assert_eq!(c.accepted + c.dropped, live_stream::RECORDS);
    // The rate while streaming: events per second, at most what was sent.
    let line = during.lines().find(|l| is_sender(l)).unwrap();
    let rate: u64 = row_of(line)
        .iter()
        .find_map(|w| w.strip_suffix("/s"))
        .unwrap()
        .parse()
        .unwrap();
    assert!(rate > 0 && rate <= c.delivered, "rate {rate}/s in {line}");
    // After the close (and a second without events: the rate is 0): every
    // figure exact.
    let events = c.delivered.to_string();
    let lost = c.dropped.to_string();
    let screen = session.wait("the closed stream's account", |s| {
        s.lines()
            .any(|l| is_sender(l) && l.contains("closed") && l.contains(" 0/s "))
            && s.contains(&format!(" {events} events, {lost} lost"))
    });
    println!("{screen}");
    let first = screen.lines().next().unwrap();
    assert!(
        first.starts_with(&format!(
            "listening on {listen}  window 60.0s (100.60ms of trace)  {events} events, {lost} lost"
        )),
        "{first}"
    );
    assert_eq!(
        row(&screen, "task"),
        ["task", "cpu", "act", "resp", "p50", "resp", "p99", "resp", "max", "preempt", "blocked"]
    );
    for want in TASK_ROWS {
        assert_eq!(row(&screen, want[0]), want, "task {}:\n{screen}", want[0]);
    }
    let sorted: Vec<&str> = screen
        .lines()
        .filter_map(|l| {
            let w = l.trim_start_matches('│');
            (w.starts_with("1 ") || w.starts_with("2 ")).then(|| &w[..1])
        })
        .collect();
    assert_eq!(sorted, ["2", "1"], "sorted by CPU share");
    for (cpu, busy) in CPU_ROWS {
        assert!(
            screen.contains(&format!("cpu {cpu}  {busy}")),
            "cpu {cpu} busy {busy}:\n{screen}"
        );
    }
    let line = screen.lines().find(|l| is_sender(l)).unwrap();
    let words = row_of(line);
    let at = words
        .iter()
        .position(|w| w.starts_with("127.0.0.1:"))
        .unwrap();
    assert_eq!(
        words[at + 2..],
        [events.as_str(), "0/s", lost.as_str(), "closed"],
        "{line}"
    );
    // The recent system events: the last cycle's.
    assert!(
        screen.contains("0.100600     1  endcycle task=2"),
        "{screen}"
    );
    // `s` sorts by task number.
    session.tmux(&["send-keys", "-t", &name, "s"]);
    session.wait("sort: task", |s| {
        s.contains("s sort: task") && {
            let order: Vec<char> = s
                .lines()
                .filter_map(|l| {
                    let w = l.trim_start_matches('│');
                    (w.starts_with("1 ") || w.starts_with("2 ")).then(|| w.chars().next().unwrap())
                })
                .collect();
            order == ['1', '2']
        }
    });
    // `c` shows the recent events of the next class: the burst's user events.
    session.tmux(&["send-keys", "-t", &name, "c"]);
    session.wait("recent user events", |s| {
        s.contains("┌Recent user events")
            && s.contains("c class: user")
            && s.contains(" user0 value=")
    });
    // `t` keeps one task's row; `p` pauses.
    session.tmux(&["send-keys", "-t", &name, "t", "p"]);
    let one = session.wait("task 1 only, paused", |s| {
        s.contains("t task: 1") && s.contains("PAUSED")
    });
    assert!(!one.lines().any(|l| l.starts_with("│2 ")), "{one}");
    row(&one, "1");
    // `q` quits: the process ends with status 0 and prints the receiver's
    // account.
    session.tmux(&["send-keys", "-t", &name, "q"]);
    let end = session.wait("qtrace live exits", |s| s.contains("qtrace-exited-"));
    assert!(end.contains("qtrace-exited-0"), "{end}");
}

/// The words of a line, borders dropped.
pub fn row_of(line: &str) -> Vec<String> {
    line.split(|c: char| c.is_whitespace() || c == '│')
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}
