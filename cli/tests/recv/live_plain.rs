//! `qtrace live FILE` with a standard output that is not a terminal: the
//! figures as plain text every `--every` seconds, following an online
//! queue's file as it is written, until the file's close.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

use qtrace::classes::system;
use qtrace::queues::OnlineParams;

use crate::common::online_writer::online_tracer;
use crate::common::temp_dirs::created_dir;
use crate::live_stream::log_cycles;

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
    let (tracer, clock) = online_tracer(
        OnlineParams::default()
            .with_file(&file)
            .with_period(Duration::from_millis(10)),
        system::CLASS,
    );
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
    let _ = std::fs::remove_dir_all(&dir);
}

/// The rate word of a summary's sender line (wall-clock: not exact).
fn rate_of(block: &str) -> String {
    block
        .split_whitespace()
        .find(|w| w.ends_with("/s"))
        .unwrap()
        .to_string()
}

/// `qtrace recv --live` with a pipe: the receiver writes every event to its
/// file while the view prints its figures (from the file as written and
/// the receiver's account), then the receiver's own summary.
#[test]
fn recv_live_writes_every_event_while_the_view_prints() {
    let dir = created_dir("live", "recv");
    let file = dir.join("received.qtr");
    let (listen, recv) = crate::common::recv::recv_listening(
        &file,
        &[
            "--live",
            "--count",
            &crate::live_stream::RECORDS.to_string(),
            "--duration",
            "60",
        ],
    );
    let report = crate::live_stream::stream(listen, Duration::from_millis(5));
    let c = report.queues[0].counters;
    assert_eq!(c.accepted + c.dropped, crate::live_stream::RECORDS);
    let out = recv.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{:?}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    // The view's last figures: the sender closed, every event accounted.
    let view_end = stdout.find("received ").unwrap_or(stdout.len());
    let blocks: Vec<&str> = stdout[..view_end]
        .split("\n\n")
        .filter(|b| b.starts_with("receiving into"))
        .collect();
    let last = blocks.last().expect("the view's summaries");
    assert!(
        last.starts_with(&format!(
            "receiving into {}  window 2.0s (100.60ms of trace)  {} events, {} lost",
            file.display(),
            c.delivered,
            c.dropped
        )),
        "{last}"
    );
    let sender = last.lines().find(|l| l.starts_with("sender ")).unwrap();
    let words: Vec<&str> = sender.split_whitespace().collect();
    assert_eq!(
        [words[3], words[4], words[7], words[8], words[9], words[10]],
        [
            "events",
            c.delivered.to_string().as_str(),
            "lost",
            c.dropped.to_string().as_str(),
            "stream",
            "closed"
        ],
        "{sender}"
    );
    // The file holds every event the sender delivered (the view took none).
    let events = qtrace::reader::TraceReader::open(&file)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.id != qtrace::classes::tracer::HOOPS)
        })
        .count() as u64;
    assert_eq!(events, c.delivered);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_file_that_is_not_a_trace_ends_the_view_with_status_2() {
    // Was exit 0 after the note: a view that stopped on an error now says
    // so in its status, as `dump` does.
    let dir = created_dir("live", "not-a-trace");
    let file = dir.join("garbage.qtr");
    std::fs::write(&file, vec![0x5a; 4096]).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(["live", "--every", "0.1", "--duration", "30"])
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.starts_with("qtrace: "), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
