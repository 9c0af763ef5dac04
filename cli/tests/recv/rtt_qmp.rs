//! `qtrace recv --rtt-qmp SOCKET --elf FIRMWARE | --addr ADDR`: the RTT ring
//! (FORMAT.md 10.7) read through a QMP socket. Here the socket is a small
//! QMP server on a Unix socket in a temporary folder, serving `pmemsave`
//! from a real `RttRing` that a drain writes into between reads (the
//! firmware), so the schedule of writes and reads is exact; under QEMU,
//! `scripts/qemu.sh` runs the same against the firmware example.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::thread::JoinHandle;

use qtrace::reader::TraceReader;
use qtrace_core::classes::system;
use qtrace_core::encode::header::HeaderSpec;
use qtrace_core::ring::{CircularRing, Ring};
use qtrace_core::stream::{Drain, DrainStats, RttRing, Status, RTT_HEADER_LEN};
use qtrace_core::StaticCatalog;

/// The control block's address the test server answers at (`--addr`).
const BASE: u32 = 0x2000_0000;
/// Events the writer logs.
const N: u64 = 20_000;
/// The ring's data bytes.
const SIZE: usize = 8192;

/// A symbol `--elf` finds in this very test executable.
#[no_mangle]
#[used]
static _SEGGER_RTT: RttRing<64> = RttRing::new();

fn event(i: u64) -> qtrace_core::Event {
    qtrace_core::Event::new(1_000 + 10 * i, system::SCHEDULE, 0, [i, 0])
}

/// Serves QMP on `socket` for one client: the greeting, `qmp_capabilities`,
/// and `pmemsave` of `memory(addr, len)` (`None`: a QMP error), calling
/// `step()` before each read of the control block, and hanging up (QEMU
/// killed) once `gone()`. Returns the state once the client leaves.
fn serve<S: Send + 'static>(
    socket: &Path,
    mut state: S,
    step: fn(&mut S),
    memory: fn(&S, u32, usize) -> Option<Vec<u8>>,
    gone: fn(&S) -> bool,
) -> JoinHandle<S> {
    let listener = UnixListener::bind(socket).unwrap();
    std::thread::spawn(move || {
        let (conn, _) = listener.accept().unwrap();
        let mut w = conn.try_clone().unwrap();
        let mut r = BufReader::new(conn);
        w.write_all(b"{\"QMP\": {\"version\": {}, \"capabilities\": []}}\r\n")
            .unwrap();
        let mut line = String::new();
        loop {
            line.clear();
            if r.read_line(&mut line).unwrap_or(0) == 0 {
                return state;
            }
            let cmd: serde_json::Value = serde_json::from_str(&line).unwrap();
            let reply = match cmd["execute"].as_str() {
                Some("qmp_capabilities") => "{\"return\": {}}".to_string(),
                Some("pmemsave") => {
                    let a = &cmd["arguments"];
                    let addr = a["val"].as_u64().unwrap() as u32;
                    let len = a["size"].as_u64().unwrap() as usize;
                    if addr == BASE {
                        step(&mut state);
                    }
                    if gone(&state) {
                        return state;
                    }
                    match memory(&state, addr, len) {
                        Some(bytes) => {
                            std::fs::write(a["filename"].as_str().unwrap(), bytes).unwrap();
                            // An asynchronous event the client must skip.
                            "{\"event\": \"RTC_CHANGE\", \"data\": {}}\r\n{\"return\": {}}"
                                .to_string()
                        }
                        None => "{\"error\": {\"class\": \"GenericError\", \"desc\": \"Invalid parameter 'val'\"}}".to_string(),
                    }
                }
                _ => "{\"error\": {\"class\": \"CommandNotFound\", \"desc\": \"no such command\"}}"
                    .to_string(),
            };
            if w.write_all(reply.as_bytes()).is_err() || w.write_all(b"\r\n").is_err() {
                return state;
            }
        }
    })
}

/// The firmware: a tracer's ring drained into an `RttRing` of `SIZE` bytes,
/// `per_step` events logged (20 at a time, a poll after each 20) before
/// each read of the control block; then the close and the end frame.
struct Firmware {
    ring: &'static CircularRing<64>,
    rtt: &'static RttRing<SIZE>,
    drain: Drain<'static, StaticCatalog>,
    logged: u64,
    per_step: u64,
    done: bool,
}

impl Firmware {
    fn new(per_step: u64) -> Self {
        let ring: &'static CircularRing<64> = Box::leak(Box::new(CircularRing::new()));
        let rtt: &'static RttRing<SIZE> = Box::leak(Box::new(RttRing::new()));
        rtt.init();
        let buf: &'static mut [u8] = Box::leak(vec![0u8; 1024].into_boxed_slice());
        let spec = HeaderSpec {
            ticks_per_second: 1_000_000_000,
            clock_kind: "tick",
            host: "board",
            ..HeaderSpec::default()
        };
        let drain = Drain::new(ring, &StaticCatalog::BUILTIN, spec, 9, buf)
            .unwrap()
            .catalog_every(64);
        Firmware {
            ring,
            rtt,
            drain,
            logged: 0,
            per_step,
            done: false,
        }
    }

    fn step(&mut self) {
        let rtt = self.rtt;
        let mut sink = |b: &[u8]| rtt.write(b);
        let until = (self.logged + self.per_step).min(N);
        while self.logged < until {
            assert!(self.ring.push(&event(self.logged)));
            self.logged += 1;
            if self.logged.is_multiple_of(20) {
                self.drain.poll(&mut sink);
            }
        }
        if self.logged == N && !self.done {
            self.drain.close();
            while self.drain.poll(&mut sink) != Status::Closed {}
            self.done = true;
        }
    }

    fn memory(&self, addr: u32, len: usize) -> Option<Vec<u8>> {
        let mut image = vec![0u8; RTT_HEADER_LEN + SIZE];
        self.rtt.read_at(0, &mut image);
        let buffer = u32::from_le_bytes(image[28..32].try_into().unwrap());
        let at = match addr {
            BASE => 0,
            a if a.wrapping_sub(buffer) < SIZE as u32 => RTT_HEADER_LEN + (a - buffer) as usize,
            _ => return None,
        };
        image.get(at..at + len).map(<[u8]>::to_vec)
    }

    fn stats(&self) -> DrainStats {
        self.drain.stats()
    }
}

fn qtrace(args: &[&str], out: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .arg("recv")
        .args(args)
        .args(["--json", "--duration", "60", "--out"])
        .arg(out)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Runs the receiver (`--poll-ms poll_ms`) against a firmware logging
/// `per_step` events before each read of the control block;
/// returns its JSON summary, the received events, the file's losses and
/// the firmware's stats.
fn run(per_step: u64, poll_ms: &str) -> (serde_json::Value, Vec<qtrace::Event>, u64, DrainStats) {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("qmp.sock");
    let server = serve(
        &socket,
        Firmware::new(per_step),
        Firmware::step,
        Firmware::memory,
        |_| false,
    );
    let out = dir.path().join("got.qtr");
    let output = qtrace(
        &[
            "--rtt-qmp",
            socket.to_str().unwrap(),
            "--addr",
            &format!("{BASE:#x}"),
            "--poll-ms",
            poll_ms,
        ],
        &out,
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let firmware = server.join().unwrap();
    assert!(firmware.done);
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let mut events = Vec::new();
    let mut lost = 0;
    for e in TraceReader::open(&out).unwrap() {
        let e = e.unwrap();
        if e.id == system::SCHEDULE {
            events.push(e);
        } else if let Some(n) = qtrace_core::encode::close::hoops_lost(&e) {
            lost += n;
        }
    }
    (json, events, lost, firmware.stats())
}

/// 20 events between two reads: nothing is overwritten, every event
/// arrives, equal to the one logged.
#[test]
fn a_host_that_keeps_up_through_qmp_receives_every_event() {
    let (json, events, lost, stats) = run(20, "0");
    assert_eq!((stats.sent, stats.dropped), (N, 0));
    assert_eq!(json["events"], N);
    assert_eq!(json["lost_events"], 0);
    assert_eq!(json["stream_overwritten_bytes"], 0);
    assert_eq!(json["stream_bad_frames"], 0);
    assert_eq!(json["stream_frames"], stats.frames);
    assert_eq!(json["unclosed_senders"], 0);
    assert_eq!(lost, 0);
    let want: Vec<_> = (0..N).map(event).collect();
    assert_eq!(events.len(), want.len());
    for (e, w) in events.iter().zip(&want) {
        assert_eq!((e.time, e.id, e.args), (w.time, w.id, w.args));
    }
    // Two reads a poll without pause, one more to attach.
    assert!(json["stream_reads"].as_u64().unwrap() >= 2 * N / 20);
}

/// 600 events (about 3.5 KiB of stream) before each of the two reads of the
/// control block a poll makes (`--poll-ms 1`: block, data, block), in an
/// 8 KiB ring: each poll takes the part of the newest bytes the writer
/// cannot have overwritten and misses the rest; overwritten bytes are
/// counted, their events counted lost exactly
/// (received + lost = logged), no bad frame, and every event received is
/// the one logged with that number.
#[test]
fn a_host_too_slow_through_qmp_counts_overwritten_events_exactly() {
    let (json, events, lost, stats) = run(600, "1");
    assert_eq!((stats.sent, stats.dropped), (N, 0));
    let received = json["events"].as_u64().unwrap();
    let lost_events = json["lost_events"].as_u64().unwrap();
    assert!(received > 0 && lost_events > 0, "{json}");
    assert_eq!(received + lost_events, N);
    assert!(json["stream_overwritten_bytes"].as_u64().unwrap() > 0);
    // More than the first take's ring full: later polls took bytes too.
    assert!(
        json["stream_bytes"].as_u64().unwrap() > 2 * SIZE as u64,
        "{json}"
    );
    assert_eq!(json["stream_bad_frames"], 0);
    assert_eq!(json["stream_corrupt_chunks"], 0);
    assert_eq!(json["unclosed_senders"], 0);
    assert_eq!(events.len() as u64, received);
    assert_eq!(lost, lost_events);
    let mut last = None;
    for e in &events {
        let i = e.args[0];
        let w = event(i);
        assert_eq!((e.time, e.id, e.args), (w.time, w.id, w.args));
        assert!(last < Some(i));
        last = Some(i);
    }
}

fn fails(args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let output = qtrace(args, &dir.path().join("got.qtr"));
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    String::from_utf8(output.stderr).unwrap()
}

#[test]
fn no_socket_is_an_error_naming_qemus_flag() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("none.sock");
    let s = socket.to_str().unwrap();
    let err = fails(&["--rtt-qmp", s, "--addr", "0x20000000"]);
    assert!(
        err.starts_with(&format!("qtrace: --rtt-qmp {s}: cannot connect (")),
        "{err}"
    );
    assert!(
        err.contains(&format!("start QEMU with -qmp unix:{s},server,nowait")),
        "{err}"
    );
}

#[test]
fn the_ring_is_found_by_its_elf_symbol_or_the_error_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("none.sock");
    let s = socket.to_str().unwrap();
    // This test's executable has the symbol: the receiver gets as far as
    // the socket.
    let me = std::env::current_exe().unwrap();
    let me = me.to_str().unwrap();
    let err = fails(&["--rtt-qmp", s, "--elf", me]);
    assert!(err.contains("cannot connect"), "{err}");
    // The command itself has none.
    let cmd = env!("CARGO_BIN_EXE_qtrace");
    let err = fails(&["--rtt-qmp", s, "--elf", cmd]);
    assert_eq!(
        err,
        format!("qtrace: --elf {cmd}: no symbol _SEGGER_RTT: declare the ring `#[no_mangle] static _SEGGER_RTT: qtrace_core::stream::RttRing<N>`, or give its address with --addr\n")
    );
    // Not an ELF file.
    let text: PathBuf = dir.path().join("notes.txt");
    std::fs::write(&text, "not a firmware").unwrap();
    let t = text.to_str().unwrap();
    let err = fails(&["--rtt-qmp", s, "--elf", t]);
    assert!(
        err.starts_with(&format!("qtrace: --elf {t}: not an ELF file")),
        "{err}"
    );
    assert!(err.ends_with("give the firmware's ELF file (the one QEMU runs with -kernel), or the ring's address with --addr\n"), "{err}");
    // Neither, or a bad address.
    let err = fails(&["--rtt-qmp", s]);
    assert!(
        err.contains("--elf FIRMWARE") && err.contains("--addr ADDR"),
        "{err}"
    );
    let err = fails(&["--rtt-qmp", s, "--addr", "0x1_0000_0000"]);
    assert!(
        err.starts_with("qtrace: --addr 0x1_0000_0000: give the control block's address"),
        "{err}"
    );
}

/// Memory that holds an RTT control block of another writer (three up
/// buffers, no QTRR): refused, naming the address and where it came from.
#[test]
fn a_control_block_of_another_writer_is_refused() {
    fn other(_: &(), addr: u32, len: usize) -> Option<Vec<u8>> {
        let mut b = vec![0u8; len];
        b[..10].copy_from_slice(b"SEGGER RTT");
        b[16] = 3;
        (addr == BASE).then_some(b)
    }
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("qmp.sock");
    let server = serve(&socket, (), |_| {}, other, |_| false);
    let err = fails(&[
        "--rtt-qmp",
        socket.to_str().unwrap(),
        "--addr",
        "0x20000000",
    ]);
    assert_eq!(
        err,
        "qtrace: the RTT control block at 0x20000000 (--addr): an RTT control block without qtrace's QTRR extension (one up-buffer, no down-buffer): not a qtrace_core::stream::RttRing\n"
    );
    server.join().unwrap();
}

/// A socket that answers `pmemsave` with an error: its description is
/// shown.
#[test]
fn a_qmp_error_is_shown() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("qmp.sock");
    let server = serve(&socket, (), |_| {}, |_, _, _| None, |_| false);
    let s = socket.to_str().unwrap();
    let err = fails(&["--rtt-qmp", s, "--addr", "0x20000000"]);
    assert_eq!(
        err,
        format!("qtrace: --rtt-qmp {s}: pmemsave failed: QEMU answered: Invalid parameter 'val'\n")
    );
    server.join().unwrap();
}

/// QEMU killed mid-run (the socket hangs up): the receiver ends as at the
/// end of a file, writes what it received, and marks the stream unclosed.
#[test]
fn qemu_gone_mid_run_ends_the_stream_unclosed() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("qmp.sock");
    let server = serve(
        &socket,
        Firmware::new(20),
        Firmware::step,
        Firmware::memory,
        |f| f.logged >= 5_000,
    );
    let out = dir.path().join("got.qtr");
    let output = qtrace(
        &[
            "--rtt-qmp",
            socket.to_str().unwrap(),
            "--addr",
            "536870912",
            "--poll-ms",
            "0",
        ],
        &out,
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let firmware = server.join().unwrap();
    assert!(!firmware.done);
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["unclosed_senders"], 1);
    assert_eq!(json["lost_events"], 0);
    assert_eq!(json["stream_overwritten_bytes"], 0);
    // What the drain had sent by the last read the host made.
    let events = json["events"].as_u64().unwrap();
    assert!(events > 4_000 && events < 5_000, "{json}");
    let got = TraceReader::open(&out)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.id == system::SCHEDULE)
        .count();
    assert_eq!(got as u64, events);
}

/// A host attaching mid-run, after the first catalog is overwritten: it
/// starts at the oldest bytes the ring holds, skips to the next delimiter,
/// names the events from the next catalog, and counts the events before
/// its first chunk lost: received + lost = logged. Bytes are overwritten
/// only at the first poll, which copies a full ring: those the writer wrote
/// (20 events, maybe a catalog) between its reads of the control block.
#[test]
fn a_host_attaching_mid_run_decodes_from_the_next_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("qmp.sock");
    let mut firmware = Firmware::new(5_000);
    firmware.step();
    firmware.per_step = 20;
    let server = serve(&socket, firmware, Firmware::step, Firmware::memory, |_| {
        false
    });
    let out = dir.path().join("got.qtr");
    let output = qtrace(
        &[
            "--rtt-qmp",
            socket.to_str().unwrap(),
            "--addr",
            "0x20000000",
            "--poll-ms",
            "0",
        ],
        &out,
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(server.join().unwrap().done);
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let received = json["events"].as_u64().unwrap();
    let lost = json["lost_events"].as_u64().unwrap();
    assert_eq!(received + lost, N, "{json}");
    assert!(lost > 3_000 && lost < 5_000, "{json}");
    assert!(json["stream_skipped_bytes"].as_u64().unwrap() > 0, "{json}");
    let overwritten = json["stream_overwritten_bytes"].as_u64().unwrap();
    assert!(overwritten > 0 && overwritten < 2_048, "{json}");
    assert_eq!(json["stream_bad_frames"], 0);
    assert_eq!(json["unclosed_senders"], 0);
    let dump = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .arg("dump")
        .arg(&out)
        .output()
        .unwrap();
    assert!(dump.status.success());
    let dump = String::from_utf8(dump.stdout).unwrap();
    let mut lines = dump.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .contains(&format!("[LOST {lost} EVENTS]")),
        "{dump:.300}"
    );
    // Every event is named from the catalog, and the last is event N - 1.
    let events: Vec<&str> = lines.filter(|l| !l.contains('[')).collect();
    assert_eq!(events.len() as u64, received);
    assert!(
        events
            .iter()
            .all(|l| l.contains(" system ") && l.contains(" schedule ")),
        "{dump:.300}"
    );
    assert!(
        events.last().unwrap().ends_with(&format!("{}", N - 1)),
        "{}",
        events.last().unwrap()
    );
}

/// A qtrace control block whose ring is larger than 16 MiB: refused before
/// anything is allocated for it.
#[test]
fn a_ring_beyond_16_mib_is_refused() {
    fn huge(_: &(), addr: u32, len: usize) -> Option<Vec<u8>> {
        let mut b = vec![0u8; len];
        b[..10].copy_from_slice(b"SEGGER RTT");
        b[16] = 1;
        b[32..36].copy_from_slice(&(1u32 << 25).to_le_bytes());
        b[48..52].copy_from_slice(b"QTRR");
        (addr == BASE).then_some(b)
    }
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("qmp.sock");
    let server = serve(&socket, (), |_| {}, huge, |_| false);
    let err = fails(&[
        "--rtt-qmp",
        socket.to_str().unwrap(),
        "--addr",
        "0x20000000",
    ]);
    assert_eq!(
        err,
        "qtrace: the RTT control block at 0x20000000 says its ring holds 33554432 bytes; --rtt-qmp reads rings of at most 16777216 bytes (16 MiB): use a smaller RttRing<N>\n"
    );
    server.join().unwrap();
}

/// The firmware's memory, with the control block's counters set back to 0
/// once 2,000 events are logged (the firmware restarted and initialised
/// its ring again).
fn restarted(f: &Firmware, addr: u32, len: usize) -> Option<Vec<u8>> {
    use qtrace_core::stream::rtt_offset::{COMMITTED, RESERVED};
    let mut bytes = f.memory(addr, len)?;
    if addr == BASE && f.logged >= 2_000 {
        bytes[RESERVED..RESERVED + 4].copy_from_slice(&0u32.to_le_bytes());
        bytes[COMMITTED..COMMITTED + 4].copy_from_slice(&0u32.to_le_bytes());
    }
    Some(bytes)
}

/// A control block whose counters go back mid-run (`committed` and
/// `reserved` set to 0: the firmware restarted): the run ends with the
/// error, saying which counter went back from what to what, why, and what
/// to do, never a panic; the trace received so far is written and reads
/// back with what the summary counted.
#[test]
fn counters_that_go_back_mid_run_end_it_with_the_error() {
    use qtrace_core::stream::rtt_offset::COMMITTED;
    // The firmware is stepped (20 events) before each read of the control
    // block, and `--poll-ms 0` reads it once a poll: the block read before
    // the first one set back is the firmware's after 1,980 events.
    let mut before = Firmware::new(20);
    for _ in 0..99 {
        before.step();
    }
    assert_eq!(before.logged, 1_980);
    let block = before.memory(BASE, RTT_HEADER_LEN).unwrap();
    let seen = u32::from_le_bytes(block[COMMITTED..COMMITTED + 4].try_into().unwrap());
    assert!(seen > 0);
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("qmp.sock");
    let server = serve(&socket, Firmware::new(20), Firmware::step, restarted, |f| {
        f.logged >= 10_000
    });
    let out = dir.path().join("got.qtr");
    let output = qtrace(
        &[
            "--rtt-qmp",
            socket.to_str().unwrap(),
            "--addr",
            "536870912",
            "--poll-ms",
            "0",
        ],
        &out,
    );
    let firmware = server.join().unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{err}");
    let message = format!(
        "qtrace: cannot read the byte stream: the RTT control block at 0x20000000: its count of \
         bytes written (committed) went back from {seen} to 0 during the run, which a running \
         firmware never does: the firmware restarted (a reset initialises the ring again), or \
         its RAM was overwritten. The trace received so far is written; to receive the new \
         run, start qtrace recv again (an existing --out file is moved aside to \
         <stem>-previous.qtr) or give it a new --out\n"
    );
    assert!(
        err.lines().any(|l| format!("{l}\n") == message),
        "want the line {message:?} in:\n{err}"
    );
    assert_eq!(
        firmware.logged, 2_000,
        "the host stopped reading at the error"
    );
    let got = TraceReader::open(&out)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.id == system::SCHEDULE)
        .count() as u64;
    assert!(got > 1_000 && got < 2_000, "{got}");
}
