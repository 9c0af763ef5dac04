//! `qtrace recv --serial`: a firmware's byte stream (FORMAT.md 10), made by
//! the core's drain here, read from a file, a TCP socket, a Unix socket and
//! a pipe: a slow sink's whole dropped chunks counted exactly, and a host
//! attaching late.

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use qtrace::reader::TraceReader;
use qtrace::Event;
use qtrace_core::classes::system;
use qtrace_core::encode::header::HeaderSpec;
use qtrace_core::ring::{CircularRing, Ring};
use qtrace_core::stream::{Drain, DrainStats, FrameDecoder, FrameKind, Status};
use qtrace_core::StaticCatalog;

const N: u64 = 4000;

fn event(i: u64) -> qtrace_core::Event {
    qtrace_core::Event::new(1_000 + 10 * i, system::SCHEDULE, 0, [i, 0])
}

/// The bytes of a stream of `N` events, logged 20 at a time, the drain
/// polled after each 20 with a sink that takes `per_poll` bytes once.
pub(crate) fn stream(per_poll: usize, catalog_every: u32) -> (Vec<u8>, DrainStats) {
    let ring: CircularRing<64> = CircularRing::new();
    let mut buf = [0u8; 1024];
    let spec = HeaderSpec {
        ticks_per_second: 1_000_000_000,
        clock_kind: "tick",
        host: "board",
        ..HeaderSpec::default()
    };
    let mut drain = Drain::new(&ring, &StaticCatalog::BUILTIN, spec, 7, &mut buf)
        .unwrap()
        .catalog_every(catalog_every);
    let mut wire = Vec::new();
    for i in 0..N {
        assert!(ring.push(&event(i)));
        if i % 20 == 19 {
            let mut once = true;
            drain.poll(&mut |b: &[u8]| {
                if !std::mem::take(&mut once) {
                    return 0;
                }
                let n = b.len().min(per_poll);
                wire.extend_from_slice(&b[..n]);
                n
            });
        }
    }
    drain.close();
    let mut all = |b: &[u8]| {
        wire.extend_from_slice(b);
        b.len()
    };
    assert_eq!(drain.poll(&mut all), Status::Closed);
    (wire, drain.stats())
}

/// `qtrace recv --serial SPEC --out OUT --json`: its JSON summary.
fn recv(spec: &str, out: &Path) -> serde_json::Value {
    let output = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args([
            "recv",
            "--serial",
            spec,
            "--json",
            "--duration",
            "60",
            "--out",
        ])
        .arg(out)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    summary(&output)
}

/// The JSON summary of a `qtrace recv --json` that exited 0 (else its
/// standard error, as the failure).
fn summary(output: &std::process::Output) -> serde_json::Value {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Waits for `qtrace recv --serial SPEC`, started at `started`, to end by
/// itself; kills it and fails past 60 s.
pub(crate) fn wait_bounded(
    child: &mut std::process::Child,
    started: std::time::Instant,
    spec: &str,
) {
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > std::time::Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("qtrace recv --serial {spec} did not end in 60 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The events of the received file, and its hoops records' losses.
fn read(out: &Path) -> (Vec<Event>, u64) {
    let mut events = Vec::new();
    let mut lost = 0;
    for e in TraceReader::open(out).unwrap() {
        let e = e.unwrap();
        if e.id == system::SCHEDULE {
            events.push(e);
        } else if let Some(n) = qtrace_core::encode::close::hoops_lost(&e) {
            lost += n;
        }
    }
    (events, lost)
}

/// A sink that takes 8 bytes a poll (about 40 events' worth arrive): whole
/// chunks dropped, and the received file says exactly how many.
#[test]
fn a_slow_sink_loses_whole_chunks_counted_exactly() {
    let (wire, stats) = stream(8, 16);
    assert!(stats.chunks_dropped > 0 && stats.dropped > 0);
    assert_eq!(stats.sent + stats.dropped, N);
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("stream.bin");
    std::fs::write(&input, &wire).unwrap();
    let out = dir.path().join("got.qtr");
    let json = recv(input.to_str().unwrap(), &out);
    assert_eq!(json["events"], stats.sent);
    assert_eq!(json["sender_dropped"], stats.dropped);
    assert_eq!(json["lost_events"], 0);
    assert_eq!(json["unclosed_senders"], 0);
    assert_eq!(json["stream_bad_frames"], 0);
    assert_eq!(json["stream_frames"], stats.frames);
    let (events, lost) = read(&out);
    assert_eq!(events.len() as u64, stats.sent);
    assert_eq!(lost, stats.dropped);
    // Received in order, each one logged.
    let mut it = (0..N).map(event);
    for e in &events {
        let want = it.find(|w| w.args == e.args).unwrap();
        assert_eq!((e.time, e.id, e.args), (want.time, want.id, want.args));
    }
}

/// A host attaching in the middle of a frame, past the first catalog:
/// it skips to the next delimiter, decodes from there, names the events
/// from the next catalog, and counts the events before it lost.
#[test]
fn a_stream_attached_late_decodes_from_the_next_frame() {
    let (wire, stats) = stream(usize::MAX, 8);
    assert_eq!((stats.sent, stats.dropped), (N, 0));
    // Cut in the middle of the stream, then find what the host will see.
    let cut = wire.len() / 2 + 3;
    let mut buf = vec![0u8; 70_000];
    let mut d = FrameDecoder::new(&mut buf);
    let (mut first, mut seen) = (None, 0u64);
    d.feed(&wire[cut..], |f| {
        let f = f.unwrap();
        if f.kind == FrameKind::Chunk {
            let c = qtrace_core::compact::Chunk::new_checked(f.body).unwrap();
            first.get_or_insert(c.header().first_event);
            seen += c.count() as u64;
        }
    });
    let first = first.unwrap();
    assert!(first > 0 && d.counts().skipped > 0);
    assert_eq!(first + seen, N);

    // Over TCP, from a listener that writes the rest and closes.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let rest = wire[cut..].to_vec();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.write_all(&rest).unwrap();
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("late.qtr");
    let json = recv(&format!("tcp:{addr}"), &out);
    server.join().unwrap();
    assert_eq!(json["events"], seen);
    assert_eq!(
        json["lost_events"], first,
        "the events before the attach are lost, exactly"
    );
    assert_eq!(json["stream_skipped_bytes"], d.counts().skipped);
    assert_eq!(json["stream_bad_frames"], 0);
    let (events, lost) = read(&out);
    assert_eq!((events.len() as u64, lost), (seen, first));
    assert_eq!(events[0].args[0], first);
    // The catalog arrived after the attach: the file names the events.
    let dump = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .arg("dump")
        .arg(&out)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&dump.stdout);
    assert!(
        text.contains("schedule"),
        "{}",
        &text[..text.len().min(400)]
    );
    let reader = TraceReader::open(&out).unwrap();
    assert_eq!(
        reader.header().host(),
        "board",
        "the header is the firmware's"
    );
}

/// The stream piped into stdin, `--serial /dev/stdin`, without `--count`
/// or `--duration`: every byte reaches the decoder (no thread waiting for
/// Enter takes them: stdin is not a terminal), all `N` events received.
#[cfg(unix)]
#[test]
fn a_stream_piped_into_stdin_arrives_whole() {
    let (wire, stats) = stream(usize::MAX, 8);
    assert_eq!((stats.sent, stats.dropped), (N, 0));
    assert!(
        wire.len() > 8192,
        "more than one stdin buffer: {}",
        wire.len()
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("stdin.qtr");
    let mut child = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(["recv", "--serial", "/dev/stdin", "--json", "--out"])
        .arg(&out)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&wire).unwrap();
    drop(stdin);
    // Bounded: the end frame (or the end of the pipe) ends it.
    let started = std::time::Instant::now();
    wait_bounded(&mut child, started, "/dev/stdin");
    let json = summary(&child.wait_with_output().unwrap());
    assert_eq!(json["events"], N);
    assert_eq!(json["lost_events"], 0);
    assert_eq!(json["stream_bad_frames"], 0);
    assert_eq!(json["stream_bytes"], wire.len() as u64);
    assert_eq!(json["unclosed_senders"], 0);
    let (events, lost) = read(&out);
    assert_eq!((events.len() as u64, lost), (N, 0));
    assert!(events
        .iter()
        .enumerate()
        .all(|(i, e)| e.args[0] == i as u64));
}

/// `--serial /dev/pts/N` (QEMU's `-serial pty`, or a USB serial adapter's
/// tty): the receiver puts the terminal in raw mode before it reads (a
/// pty's line discipline starts cooked: it would translate CR, edit lines
/// and echo the bytes back), then every event arrives, none lost.
#[cfg(target_os = "linux")]
#[test]
fn a_stream_through_a_pty_arrives_whole() {
    use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};
    use rustix::termios::{tcgetattr, LocalModes};
    use std::os::unix::fs::OpenOptionsExt;
    let (wire, stats) = stream(usize::MAX, 8);
    assert_eq!((stats.sent, stats.dropped), (N, 0));
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).unwrap();
    grantpt(&master).unwrap();
    unlockpt(&master).unwrap();
    let name = ptsname(&master, Vec::new()).unwrap();
    let name = name.to_str().unwrap().to_string();
    // The test's own end of the terminal, to see its modes (and so that
    // the terminal is not hung up between the receiver's open and ours).
    let slave = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY)
        .open(&name)
        .unwrap();
    assert!(tcgetattr(&slave)
        .unwrap()
        .local_modes
        .contains(LocalModes::ICANON));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("pty.qtr");
    let mut child = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args([
            "recv",
            "--serial",
            &name,
            "--json",
            "--duration",
            "60",
            "--out",
        ])
        .arg(&out)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let deadline = std::time::Duration::from_secs(30);
    while tcgetattr(&slave)
        .unwrap()
        .local_modes
        .contains(LocalModes::ICANON)
    {
        if started.elapsed() > deadline || child.try_wait().unwrap().is_some() {
            child.kill().ok();
            let output = child.wait_with_output().unwrap();
            panic!(
                "qtrace recv --serial {name} left the terminal cooked: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let mut to_receiver = std::fs::File::from(master);
    let writer = std::thread::spawn(move || to_receiver.write_all(&wire).map(|()| wire.len()));
    wait_bounded(&mut child, started, &name);
    // Checked before the writer is joined: a receiver gone early would
    // leave it blocked on a full terminal.
    let json = summary(&child.wait_with_output().unwrap());
    assert_eq!(json["events"], N, "{json}");
    let written = writer.join().unwrap().unwrap();
    assert_eq!(json["lost_events"], 0);
    assert_eq!(json["stream_bad_frames"], 0);
    assert_eq!(json["stream_bytes"], written as u64);
    let (events, lost) = read(&out);
    assert_eq!((events.len() as u64, lost), (N, 0));
    assert!(events
        .iter()
        .enumerate()
        .all(|(i, e)| e.args[0] == i as u64 && e.time == 1_000 + 10 * i as u64));
    drop(slave);
}

/// `--serial unix:PATH` (QEMU's `-serial unix:PATH,server`): a listener on a
/// Unix socket in a temporary folder writes the whole stream and closes;
/// every event arrives, equal to the one logged, none lost, the stream
/// closed by its end frame.
/// A board on a Unix socket in `dir` (`uart.sock`): the first connection
/// gets `bytes` in `pieces` writes, `pause` after each. Returns the
/// socket's path and the board's thread.
#[cfg(unix)]
pub(crate) fn serve_unix(
    dir: &Path,
    bytes: Vec<u8>,
    pieces: usize,
    pause: Duration,
) -> (PathBuf, std::thread::JoinHandle<()>) {
    let socket = dir.join("uart.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let board = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        for piece in bytes.chunks(bytes.len().div_ceil(pieces).max(1)) {
            s.write_all(piece).unwrap();
            std::thread::sleep(pause);
        }
    });
    (socket, board)
}

#[cfg(unix)]
#[test]
fn a_stream_over_a_unix_socket_arrives_whole() {
    let (wire, stats) = stream(usize::MAX, 8);
    assert_eq!((stats.sent, stats.dropped), (N, 0));
    let dir = tempfile::tempdir().unwrap();
    let (socket, server) = serve_unix(dir.path(), wire.clone(), 1, Duration::ZERO);
    let out = dir.path().join("unix.qtr");
    let json = recv(&format!("unix:{}", socket.display()), &out);
    server.join().unwrap();
    assert_eq!(json["events"], N);
    assert_eq!(
        (&json["lost_events"], &json["sender_dropped"]),
        (&0.into(), &0.into())
    );
    assert_eq!(json["stream_bytes"], wire.len() as u64);
    assert_eq!(json["stream_frames"], stats.frames);
    assert_eq!(
        (&json["stream_bad_frames"], &json["unclosed_senders"]),
        (&0.into(), &0.into())
    );
    let (events, lost) = read(&out);
    assert_eq!(lost, 0);
    let want: Vec<_> = (0..N).map(event).map(|e| (e.time, e.id, e.args)).collect();
    let got: Vec<_> = events.iter().map(|e| (e.time, e.id, e.args)).collect();
    assert_eq!(got, want);
}

/// `--serial` into a store (`--store DIR`), as docs/firmware.md says a
/// stream works "as for UDP": the slow sink's stream gives exactly one
/// `events` row per event received, in order, and `losses` rows of kind
/// `hoops` adding up to the chunks the drain dropped.
#[test]
fn a_stream_into_a_store_has_the_same_account() {
    use crate::common::parquet_rows::table_rows;
    let (wire, stats) = stream(8, 16);
    assert!(stats.dropped > 0);
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("stream.bin");
    std::fs::write(&input, &wire).unwrap();
    let store = dir.path().join("store");
    let output = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(["recv", "--serial"])
        .arg(&input)
        .args(["--json", "--duration", "60", "--store"])
        .arg(&store)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // The summary says what the header said: it arrived, naming no queue.
    let summary = String::from_utf8_lossy(&output.stderr);
    assert!(
        summary.contains("  sender 0x00000007 at 0.0.0.0:0, no queue in its header: "),
        "{summary}"
    );
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        (
            &json["events"],
            &json["sender_dropped"],
            &json["lost_events"]
        ),
        (&stats.sent.into(), &stats.dropped.into(), &0.into())
    );
    let mut events = table_rows(&store, "events");
    events.sort_by_key(|r| r["seq"].as_u64().unwrap());
    let got: Vec<u64> = events.iter().map(|r| r["arg0"].as_u64().unwrap()).collect();
    // The events received: those of the chunks the drain sent, in order.
    let (sent, _) = {
        let out = dir.path().join("same.qtr");
        let _ = recv(input.to_str().unwrap(), &out);
        read(&out)
    };
    assert_eq!(got, sent.iter().map(|e| e.args[0]).collect::<Vec<_>>());
    assert_eq!(got.len() as u64, stats.sent);
    let hoops: u64 = table_rows(&store, "losses")
        .iter()
        .filter(|r| r["kind"] == "hoops")
        .map(|r| r["count"].as_u64().unwrap())
        .sum();
    assert_eq!(hoops, stats.dropped);
}
