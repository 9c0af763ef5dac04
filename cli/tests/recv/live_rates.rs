//! `qtrace live --listen` as plain text (a pipe): each frame's rate is the
//! sending rate while a stream runs and 0 after its close; a keyed stream
//! watched with `--key-file`, with an unkeyed sender to the same view shown
//! as rejected while it runs; without a key, why a keyed stream is empty.

use std::io::Read;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use qtrace::classes::user;
use qtrace::queues::{DatagramsPerPeriod, Udp, UdpParams};
use qtrace::wire::DatagramKey;
use qtrace::{ShutdownReport, Tracer};

use crate::common::loopback::free_port;
use crate::common::recv::{user_sender, wait_listening};
use crate::common::temp_dirs;

/// A frame of the plain text, and when the test read it.
struct Frame {
    at: Instant,
    text: String,
}

/// `qtrace live --listen ADDR ARGS…` with its stdout piped, and its frames
/// as they are printed (a thread reads them).
fn live(listen: SocketAddr, args: &[&str]) -> (Child, Receiver<Frame>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(["live", "--listen", &listen.to_string(), "--duration", "60"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let (tx, rx) = channel();
    thread::spawn(move || {
        let mut pending = String::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = out.read(&mut buf) {
            if n == 0 {
                return;
            }
            pending.push_str(&String::from_utf8_lossy(&buf[..n]));
            while let Some(end) = pending.find("\n\n") {
                let text = pending[..end].to_string();
                pending.drain(..end + 2);
                if tx
                    .send(Frame {
                        at: Instant::now(),
                        text,
                    })
                    .is_err()
                {
                    return;
                }
            }
        }
    });
    wait_listening(listen);
    (child, rx)
}

/// The next frame, waiting at most 30 s.
fn next(frames: &Receiver<Frame>) -> Frame {
    frames
        .recv_timeout(Duration::from_secs(30))
        .expect("a frame within 30 s")
}

/// The next frame that satisfies `f` (bounded: 30 s).
fn until(frames: &Receiver<Frame>, what: &str, f: impl Fn(&str) -> bool) -> Frame {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let frame = frames
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no frame with {what} within 30 s"));
        if f(&frame.text) {
            return frame;
        }
    }
}

/// The frame's `sender` line: (events, rate, lost, stream).
fn sender_line(frame: &str) -> Option<(u64, Option<u64>, u64, String)> {
    let line = frame.lines().find(|l| l.starts_with("sender "))?;
    let w: Vec<&str> = line.split_whitespace().collect();
    let after = |key: &str| w[w.iter().position(|x| *x == key).unwrap() + 1];
    let rate = after("rate");
    Some((
        after("events").parse().unwrap(),
        (rate != "-").then(|| rate.strip_suffix("/s").unwrap().parse().unwrap()),
        after("lost").parse().unwrap(),
        after("stream").to_string(),
    ))
}

/// Events a second the paced sender logs.
const RATE: u64 = 2000;

/// Logs `user0` events at [`RATE`] a second for `run` into a UDP queue to
/// `to` (`key`: keyed), paced by the clock (each 5 ms, what the time says
/// is due, so a late wake-up catches up), then shuts down (its close
/// follows): its report. `done` is set when the logging ended.
fn paced(
    to: SocketAddr,
    key: Option<DatagramKey>,
    run: Duration,
    done: &AtomicBool,
) -> ShutdownReport {
    let tracer = Tracer::new();
    let mut params = UdpParams::to(to)
        .with_capacity(16_384)
        .with_period(Duration::from_millis(2))
        .with_datagrams_per_period(DatagramsPerPeriod::All);
    if let Some(k) = key {
        params = params.with_key(k);
    }
    let q = tracer.create_queue::<Udp>(params).unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer.activate().unwrap();
    let start = Instant::now();
    let total = RATE * run.as_millis() as u64 / 1000;
    let mut logged = 0;
    while logged < total {
        let due = (RATE * start.elapsed().as_millis() as u64 / 1000).min(total);
        while logged < due {
            tracer.log_event(user::USER0, [logged, 0]);
            logged += 1;
        }
        thread::sleep(Duration::from_millis(5));
    }
    done.store(true, Ordering::SeqCst);
    tracer.shutdown().unwrap()
}

#[test]
fn each_frame_rate_is_the_sending_rate_while_it_runs_and_0_after_its_close() {
    let listen = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let (mut child, frames) = live(listen, &["--every", "1"]);
    let done = Arc::new(AtomicBool::new(false));
    let sending = thread::spawn({
        let done = done.clone();
        move || paced(listen, None, Duration::from_secs(6), &done)
    });
    // The first frame with the sender: its rate needs samples half a
    // second apart, so it may be `-`.
    let mut seen = until(&frames, "the sender", |f| sender_line(f).is_some());
    let mut rates = Vec::new();
    loop {
        let frame = next(&frames);
        // A frame read once the logging ended may count the end: it is
        // not judged (the next ones are, once the close arrived).
        if done.load(Ordering::SeqCst) {
            break;
        }
        let (events, rate, _, stream) = sender_line(&frame.text).unwrap();
        // The stream runs: a rate over (up to) the last second, of
        // events that were all sent at RATE.
        assert_eq!(stream, "open", "{}", frame.text);
        let rate = rate.unwrap_or_else(|| panic!("a rate a second on: {}", frame.text));
        assert!(
            rate.abs_diff(RATE) * 10 <= RATE,
            "rate {rate}/s, sent at {RATE}/s:\n{}",
            frame.text
        );
        assert!(events >= sender_line(&seen.text).unwrap().0);
        rates.push(rate);
        seen = frame;
    }
    // Six seconds of sending, a frame a second: at least three judged
    // (the first with the sender may have no rate yet, one may count the
    // end), however late the view printed.
    assert!(
        rates.len() >= 3,
        "frames while the stream ran: {rates:?}, the last read {:?} ago",
        seen.at.elapsed()
    );
    println!("rates while the stream ran: {rates:?}");
    let report = sending.join().unwrap();
    let c = report.queues[0].counters;
    assert_eq!((c.delivered, c.dropped), (RATE * 6, 0));
    // After its close: the rate is 0 at once, and every event is counted.
    let closed = until(&frames, "the closed stream", |f| {
        sender_line(f).is_some_and(|s| s.3 == "closed")
    });
    assert_eq!(
        sender_line(&closed.text),
        Some((c.delivered, Some(0), 0, "closed".to_string())),
        "{}",
        closed.text
    );
    let after = next(&frames);
    assert_eq!(
        sender_line(&after.text),
        Some((c.delivered, Some(0), 0, "closed".to_string())),
        "{}",
        after.text
    );
    assert!(
        after
            .text
            .starts_with(&format!("listening on {listen}  window 2.0s (")),
        "{}",
        after.text
    );
    child.kill().unwrap();
    child.wait().unwrap();
}

fn keygen(dir: &Path) -> (std::path::PathBuf, DatagramKey) {
    let path = dir.join("stream.key");
    let out = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .arg("keygen")
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let key = DatagramKey::from_file(&path).unwrap();
    (path, key)
}

#[test]
fn a_keyed_stream_is_watched_with_its_key_and_an_unkeyed_sender_shown_rejected() {
    let dir = temp_dirs::fresh_dir("live-keyed", "cli");
    std::fs::create_dir_all(&dir).unwrap();
    let (key_path, key) = keygen(&dir);
    let listen = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let (mut child, frames) = live(
        listen,
        &["--every", "0.2", "--key-file", key_path.to_str().unwrap()],
    );
    let keyed = thread::spawn({
        let key = key.clone();
        move || {
            paced(
                listen,
                Some(key),
                Duration::from_secs(3),
                &AtomicBool::new(false),
            )
        }
    });
    // An unkeyed sender to the same view, sending until the view has shown
    // it rejected (bounded: 30 s).
    let stop = Arc::new(AtomicBool::new(false));
    let unkeyed = thread::spawn({
        let stop = stop.clone();
        move || {
            let tracer = user_sender(listen);
            let deadline = Instant::now() + Duration::from_secs(30);
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                for _ in 0..10 {
                    tracer.log_event(user::USER3, [i, 7]);
                    i += 1;
                }
                thread::sleep(Duration::from_millis(10));
            }
            tracer.shutdown().unwrap();
        }
    });
    let rejected = "unkeyed (this receiver accepts only keyed datagrams)";
    let both = until(&frames, "the keyed stream and the rejected sender", |f| {
        sender_line(f).is_some_and(|s| s.3 == "open" && s.0 > 0)
            && f.lines()
                .any(|l| l.starts_with("rejected from 127.0.0.1:") && l.ends_with(rejected))
    });
    stop.store(true, Ordering::Relaxed);
    unkeyed.join().unwrap();
    // The unkeyed sender's events are in no sender row: one sender, the
    // keyed one; its datagrams counted on one line (one source address).
    assert_eq!(
        both.text
            .lines()
            .filter(|l| l.starts_with("sender "))
            .count(),
        1,
        "{}",
        both.text
    );
    let line = both
        .text
        .lines()
        .find(|l| l.starts_with("rejected from "))
        .unwrap();
    let n: u64 = line
        .split(": ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(n >= 1, "{line}");
    assert_eq!(
        both.text
            .lines()
            .filter(|l| l.starts_with("rejected from "))
            .count(),
        1,
        "{}",
        both.text
    );
    let report = keyed.join().unwrap();
    let c = report.queues[0].counters;
    assert_eq!(c.dropped, 0);
    let closed = until(&frames, "the keyed stream closed", |f| {
        sender_line(f).is_some_and(|s| s.3 == "closed")
    });
    assert_eq!(
        sender_line(&closed.text),
        Some((c.delivered, Some(0), 0, "closed".to_string())),
        "{}",
        closed.text
    );
    assert!(
        closed
            .text
            .starts_with(&format!("listening on {listen}  window 2.0s (")),
        "{}",
        closed.text
    );
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_the_key_the_view_says_why_a_keyed_stream_is_empty() {
    let dir = temp_dirs::fresh_dir("live-nokey", "cli");
    std::fs::create_dir_all(&dir).unwrap();
    let (_, key) = keygen(&dir);
    let listen = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let (mut child, frames) = live(listen, &["--every", "0.2"]);
    let keyed = thread::spawn(move || {
        paced(
            listen,
            Some(key),
            Duration::from_millis(1500),
            &AtomicBool::new(false),
        )
    });
    let frame = until(&frames, "the rejected keyed stream", |f| {
        f.contains("keyed, but this receiver has no key (--key-file)")
    });
    assert!(frame.text.contains("  0 events"), "{}", frame.text);
    assert!(!frame.text.contains("\nsender "), "{}", frame.text);
    let line = frame
        .text
        .lines()
        .find(|l| l.starts_with("rejected from 127.0.0.1:"))
        .unwrap();
    assert!(
        line.ends_with(" keyed, but this receiver has no key (--key-file)"),
        "{line}"
    );
    keyed.join().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_key_file_with_a_followed_file_is_refused_saying_where_keys_go() {
    let out = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(["live", "never-written.qtr", "--key-file", "k.key"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "qtrace: --key-file applies to --listen: a followed file holds what its receiver \
         accepted (give the key to `qtrace recv --key-file`)\n"
    );
}
