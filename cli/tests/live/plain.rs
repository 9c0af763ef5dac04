//! `qtrace live FILE` with a standard output that is not a terminal: the
//! figures as plain text every `--every` seconds, following an online
//! queue's file as it is written, until the file's close.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

use qtrace::classes::system;
use qtrace::clock::{Clock, ManualClock};
use qtrace::queues::{Online, OnlineParams};
use qtrace::{Config, Tracer};

use crate::common::temp_dirs::created_dir;
use crate::stream::log_cycles;

#[test]
fn a_pipe_gets_periodic_plain_summaries_of_a_growing_file() {
    let dir = created_dir("live", "plain");
    let file = dir.join("online.qtr");
    // Started before the file exists: it waits for it.
    let mut live = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(["live", "--every", "0.1", "--duration", "60"])
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let clock = ManualClock::new(0);
    let tracer = Tracer::with_config(Config::default().with_clock(Clock::manual(&clock)));
    let q = tracer
        .create_queue::<Online>(
            OnlineParams::default()
                .with_file(&file)
                .with_period(Duration::from_millis(10)),
        )
        .unwrap();
    tracer.assign_class(system::CLASS, q).unwrap();
    tracer.activate().unwrap();
    // About a second of cycles: several summaries while the file grows.
    log_cycles(&tracer, &clock, Duration::from_millis(10));
    let report = tracer.shutdown().unwrap();
    assert_eq!(report.queues[0].counters.delivered, 600);
    // The close run ends it.
    let status = live.wait().unwrap();
    let mut out = String::new();
    live.stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let mut err = String::new();
    live.stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success(), "{status:?} {err}");
    let blocks: Vec<&str> = out.split("\n\n").filter(|b| !b.is_empty()).collect();
    assert!(
        blocks.len() >= 3,
        "a summary every 0.1 s while the file grew:\n{out}"
    );
    // Summaries while it grew saw fewer events than the last.
    let events = |b: &str| -> u64 {
        b.lines()
            .next()
            .unwrap()
            .split("  ")
            .find_map(|w| w.strip_suffix(" events"))
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(events(blocks[0]) < 600, "{}", blocks[0]);
    let last = blocks[blocks.len() - 1];
    assert_eq!(
        last,
        format!(
            "following {}  window 2.0s (99.60ms of trace)  600 events\n\
             task 2  cpu 50.2%  act 100  resp p50 500.0us p99 500.0us max 500.0us  preempt 0  blocked 0ns\n\
             task 1  cpu 30.1%  act 100  resp p50 300.0us p99 300.0us max 300.0us  preempt 0  blocked 0ns\n\
             cpu 0  busy 30.1%\n\
             cpu 1  busy 50.2%\n\
             sender online.qtr  events 600  rate 0/s  lost 0  stream closed",
            file.display()
        )
        .as_str()
        .replace("rate 0/s", &format!("rate {}", rate_of(last))),
    );
}

/// The rate word of a summary's sender line (wall-clock: not exact).
fn rate_of(block: &str) -> String {
    block
        .split_whitespace()
        .find(|w| w.ends_with("/s"))
        .unwrap()
        .to_string()
}
