//! `qtrace recv` end to end: a UDP queue streams to the command, which
//! writes a trace file and prints its summary.

use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use qtrace::classes::user;
use qtrace::reader::TraceReader;
use qtrace::wire::unclosed_stream;
use qtrace::Event;

use crate::common::loopback;
use crate::common::recv;
use crate::common::temp_dirs;
use loopback::free_port;
use recv::{recv_listening, send_user3, spawn_recv, user_sender, wait_listening};

/// Waits for `child` to end, which must succeed (the test fails showing its
/// stdout and stderr); returns its stdout.
fn wait_success(child: Child) -> String {
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[test]
fn recv_writes_the_stream_and_prints_a_summary() {
    let dir = temp_dirs::fresh_dir("recv", "cli");
    let out = dir.join("sub/received.qtr");
    let (listen, child) = recv_listening(&out, &["--count", "500"]);
    // The sender closes only after the receiver stopped (at the count, then
    // 1 s of waiting for a close that does not come): an unclosed stream.
    let tracer = user_sender(listen);
    for i in 0..500 {
        tracer.log_event(user::USER3, [i, 7]);
    }
    let stdout = wait_success(child);
    tracer.shutdown().unwrap();
    assert!(
        stdout.contains("received 500 events from 1 sender(s)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("0 lost in transit (0 datagrams)"),
        "{stdout}"
    );
    assert!(stdout.contains("not qtrace"), "{stdout}");
    // Records were written: the hint says how to read them, last.
    assert!(
        stdout.ends_with(&format!("\nread it with: qtrace dump {}\n", out.display())),
        "{stdout}"
    );
    let reader = TraceReader::open(&out).unwrap();
    let records: Vec<Event> = reader.map(|e| e.unwrap()).collect();
    let values: Vec<u64> = records[..500].iter().map(|e| e.args[0]).collect();
    assert_eq!(values, (0..500).collect::<Vec<_>>());
    // It stopped before the sender's close: the stream ends with its
    // unclosed-stream mark (FORMAT.md 1.5), the file's last record.
    assert_eq!(records.len(), 501);
    let (sender, n) = unclosed_stream(&records[500]).expect("an unclosed-stream mark");
    assert_eq!(n, 500);
    assert_eq!(records[500].time, records[499].time);
    // `dump` and `stats` say so, in words and JSON, and exit 3.
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_qtrace"))
            .args(args)
            .arg(&out)
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let words = format!(
        "[STREAM OF SENDER {sender} ENDED WITHOUT A CLOSE after 500 events: events after its last datagram lost without a count]"
    );
    let (code, stdout, stderr) = run(&["dump"]);
    assert_eq!(code, Some(3), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 502, "500 events, the mark, the END line");
    assert!(lines[500].ends_with(&words), "{}", lines[500]);
    assert!(lines[501].contains("[END: complete"), "{}", lines[501]);
    assert!(
        stderr.contains("1 sender stream ended without a close"),
        "{stderr}"
    );
    let (code, stdout, _) = run(&["dump", "--json"]);
    assert_eq!(code, Some(3));
    let mark_line = stdout.lines().nth(500).unwrap();
    assert!(
        mark_line.contains(&format!(
            "\"unclosed_stream\":{{\"sender\":{sender},\"events\":500}}"
        )),
        "{mark_line}"
    );
    let (code, stdout, stderr) = run(&["stats"]);
    assert_eq!(code, Some(3), "{stderr}");
    assert!(stdout.contains("  events: 500\n"), "{stdout}");
    assert!(
        stdout.contains(
            "  unclosed streams: 1 sender stream ended without a close (events after the last datagram of each lost without a count)"
        ),
        "{stdout}"
    );
    let (code, stdout, _) = run(&["stats", "--json"]);
    assert_eq!(code, Some(3));
    assert!(
        stdout.contains(
            "\"events\":500,\"lost\":0,\"hoops\":0,\"unclosed_streams\":1,\"complete\":true"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("\"unclosed_streams\":1,\"complete\":1,"),
        "{stdout}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn recv_reports_a_busy_address_and_bad_arguments() {
    let taken = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let o = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args([
            "recv",
            "--listen",
            &addr,
            "--out",
            "x.qtr",
            "--duration",
            "1",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    // The hint for this error, after the address and the system's message.
    assert!(
        err.starts_with(&format!("qtrace: cannot bind the receiver to: {addr}: ")),
        "{err}"
    );
    assert!(
        err.trim_end()
            .ends_with("(address in use: is another receiver running there? pick another port)"),
        "{err}"
    );
    // A listen address that is not IP:PORT says what to write.
    for (bad, says) in [
        ("localhost", "give a port too, as IP:PORT"),
        (
            "no-such-host.invalid:5510",
            "write IP:PORT (127.0.0.1:5510)",
        ),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_qtrace"))
            .args(["recv", "--listen", bad, "--out", "x.qtr", "--duration", "1"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{bad}: {err}");
    }
    let o = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args([
            "recv",
            "--listen",
            "127.0.0.1:0",
            "--out",
            "x.qtr",
            "--duration",
            "-1",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

/// Runs `qtrace recv` with `args` (plus `--out`), returns (status, stdout,
/// stderr, elapsed).
fn recv(args: &[&str], out: &Path) -> (Option<i32>, String, String, Duration) {
    let t = Instant::now();
    let o = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .arg("recv")
        .args(args)
        .arg("--out")
        .arg(out)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        t.elapsed(),
    )
}

#[test]
fn count_and_duration_stop_at_whichever_comes_first_and_host_names_resolve() {
    let dir = temp_dirs::fresh_dir("recv", "limits");
    let out = dir.join("a.qtr");
    // Nothing arrives: the duration ends it (the count never could).
    let port = free_port().to_string();
    let listen = format!("localhost:{port}");
    let (code, stdout, stderr, took) = recv(
        &["--listen", &listen, "--count", "1000", "--duration", "0.5"],
        &out,
    );
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(took < Duration::from_secs(20), "{took:?}");
    assert!(
        stderr.contains("until 1000 events or for 0.5 s, whichever comes first"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("listening on 127.0.0.1:{port}")),
        "{stderr}"
    );
    assert!(stdout.contains("received 0 events"), "{stdout}");
    // The count comes first: 300 events, a 60 s duration.
    let port = free_port();
    let listen = SocketAddr::from(([127, 0, 0, 1], port));
    let child = spawn_recv(listen, &out, &["--count", "300", "--duration", "60"]);
    let t = Instant::now();
    wait_listening(listen);
    send_user3(listen, 300);
    let o = child.wait_with_output().unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(30),
        "the count did not stop it"
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("received 300 events from 1 sender(s)"),
        "{stdout}"
    );
    // 300 events and no unclosed-stream mark: with the count reached the
    // receiver waited (up to 1 s) for the sender's close.
    let records: Vec<Event> = TraceReader::open(&out)
        .unwrap()
        .map(|e| e.unwrap())
        .collect();
    assert_eq!(records.len(), 300);
    assert!(records.iter().all(|r| unclosed_stream(r).is_none()));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(target_os = "linux")]
#[test]
fn ctrl_c_stops_cleanly_and_writes_the_file() {
    let dir = temp_dirs::fresh_dir("recv", "int");
    let out = dir.join("r.qtr");
    let (_, child) = recv_listening(&out, &[]);
    // Give the handler a moment to be installed after the socket is bound.
    std::thread::sleep(Duration::from_millis(100));
    // SAFETY: sending SIGINT to our own child process.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) },
        0
    );
    let stdout = wait_success(child);
    assert!(stdout.contains("received 0 events"), "{stdout}");
    assert!(stdout.contains("not qtrace"), "{stdout}");
    // A valid, empty trace.
    assert_eq!(TraceReader::open(&out).unwrap().count(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_duration_too_large_for_a_duration_is_refused_not_a_panic() {
    for bad in ["1e30", "-1", "nan", "inf", "0"] {
        let out = Command::new(env!("CARGO_BIN_EXE_qtrace"))
            .args([
                "recv",
                "--listen",
                "127.0.0.1:0",
                "--out",
                "/nonexistent/x.qtr",
            ])
            .arg(format!("--duration={bad}"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--duration {bad}: {stderr}");
        assert_eq!(
            stderr, "qtrace: --duration must be a positive number of seconds, at most 1e18\n",
            "--duration {bad}"
        );
    }
}

#[test]
fn count_waits_a_moment_for_the_close_so_a_lossless_run_ends_closed() {
    // The sender's close comes 300 ms after its last events: `--count`
    // is reached first, and the receiver waits (up to 1 s) for the close
    // instead of marking the stream unclosed and exiting with status 3.
    let dir = temp_dirs::fresh_dir("recv", "count-close");
    let out = dir.join("received.qtr");
    let (listen, child) = recv_listening(&out, &["--count", "100", "--duration", "30"]);
    let tracer = user_sender(listen);
    for i in 0..100 {
        tracer.log_event(user::USER3, [i, 7]);
    }
    std::thread::sleep(Duration::from_millis(300));
    tracer.shutdown().unwrap();
    let stdout = wait_success(child);
    assert!(
        stdout.contains("received 100 events from 1 sender(s)"),
        "{stdout}"
    );
    assert!(!stdout.contains("unclosed"), "{stdout}");
    let mut reader = TraceReader::open(&out).unwrap();
    let events = reader
        .by_ref()
        .filter_map(Result::ok)
        .filter(|e| e.id == user::USER3)
        .count();
    assert_eq!(events, 100);
    let completeness = reader.completeness().expect("read to the end");
    assert_eq!(completeness.is_complete(), Some(true), "{completeness:?}");
}

#[test]
fn json_summary_is_one_object_with_the_receivers_account() {
    let dir = temp_dirs::fresh_dir("recv", "json");
    let out = dir.join("received.qtr");
    let (listen, child) = recv_listening(&out, &["--count", "100", "--duration", "30", "--json"]);
    let tracer = user_sender(listen);
    for i in 0..100 {
        tracer.log_event(user::USER3, [i, 7]);
    }
    std::thread::sleep(Duration::from_millis(300));
    tracer.shutdown().unwrap();
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stdout}{stderr}");
    // The text summary went to stderr; stdout is one line of JSON.
    assert!(
        stderr.contains("received 100 events from 1 sender(s)"),
        "{stderr}"
    );
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let o = v.as_object().unwrap();
    let keys: Vec<&str> = o.keys().map(String::as_str).collect();
    let mut expected = vec![
        "output",
        "path",
        "exit_status",
        "error",
        "senders",
        "unclosed_senders",
        "events",
        "lost_events",
        "lost_datagrams",
        "sender_dropped",
        "unsent",
        "invalid_datagrams",
        "rejected_datagrams",
        "sessions_error",
        "elapsed_s",
        "records_written",
        "records_lost_with_file",
        "files_replaced",
        "file_error",
    ];
    let mut got = keys.clone();
    got.sort_unstable();
    expected.sort_unstable();
    assert_eq!(got, expected);
    assert_eq!(v["output"], "file");
    assert_eq!(v["path"], out.display().to_string());
    assert_eq!(v["exit_status"], 0);
    assert!(v["error"].is_null());
    assert!(v["sessions_error"].is_null());
    assert_eq!(v["senders"], 1);
    assert_eq!(v["unclosed_senders"], 0);
    assert_eq!(v["events"], 100);
    for k in [
        "lost_events",
        "lost_datagrams",
        "sender_dropped",
        "unsent",
        "rejected_datagrams",
    ] {
        assert_eq!(v[k], 0, "{k}");
    }
    // The probes that found the port listening are not qtrace datagrams.
    assert!(v["invalid_datagrams"].as_u64().unwrap() >= 1, "{stdout}");
    assert!(v["elapsed_s"].as_f64().unwrap() > 0.0);
    let records = TraceReader::open(&out).unwrap().count() as u64;
    assert_eq!(v["records_written"], records, "{stdout}");
    assert_eq!(v["records_lost_with_file"], 0);
    assert_eq!(v["files_replaced"], 0);
    assert!(v["file_error"].is_null());
    assert!(!stdout.contains("read it with"));
}

#[test]
fn read_it_with_is_suggested_only_when_records_were_written() {
    let dir = temp_dirs::fresh_dir("recv", "nothing");
    let out = dir.join("received.qtr");
    let listen = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let child = spawn_recv(listen, &out, &["--duration", "0.2"]);
    let stdout = wait_success(child);
    assert!(
        stdout.starts_with("received 0 events from 0 sender(s)"),
        "{stdout}"
    );
    assert!(!stdout.contains("read it with"), "{stdout}");
}

/// `--max-catalog-bytes`: a sender header up to the cap is taken (the
/// received file carries it: the sender's process id), a larger one is
/// refused (the file keeps the receiver's provisional header) while the
/// sender's events are all received; a bad value is a usage error (exit 2)
/// that says what to give.
#[test]
fn recv_takes_sender_headers_up_to_max_catalog_bytes() {
    let dir = temp_dirs::fresh_dir("recv-catalog-cap", "cli");
    std::fs::create_dir_all(&dir).unwrap();
    // The built-in classes' header alone is above 1 KiB.
    for (cap, taken) in [("64KiB", true), ("1024", false)] {
        let out = dir.join(format!("cap-{cap}.qtr"));
        let args = [
            "--count",
            "100",
            "--duration",
            "20",
            "--max-catalog-bytes",
            cap,
        ];
        let (listen, child) = recv_listening(&out, &args);
        send_user3(listen, 100);
        let output = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(output.status.code(), Some(0), "{cap}: {stdout}");
        assert!(
            stdout.starts_with("received 100 events from 1 sender(s)"),
            "{cap}: {stdout}"
        );
        let reader = TraceReader::open(&out).unwrap();
        let pid = reader.header().process_id();
        assert_eq!(pid == std::process::id(), taken, "{cap}: pid {pid}");
        let events = reader
            .map(Result::unwrap)
            .filter(|e| e.id == user::USER3)
            .count();
        assert_eq!(events, 100, "{cap}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
    for (bad, says) in [
        ("0", "0 bytes: give at least 1 and at most 4194304"),
        ("5MiB", "5242880 bytes: give at least 1 and at most 4194304"),
        (
            "1GB",
            "is not a size: give bytes (65536) or a whole number of KiB or MiB",
        ),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_qtrace"))
            .args(["recv", "--out", "x.qtr", "--duration", "1"])
            .args(["--max-catalog-bytes", bad])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(&format!(
                "invalid value '{bad}' for '--max-catalog-bytes <BYTES>'"
            )),
            "{bad}: {err}"
        );
        assert!(err.contains(says), "{bad}: {err}");
    }
}
