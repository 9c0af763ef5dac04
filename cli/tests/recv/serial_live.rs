//! `qtrace recv --serial SPEC --live` with a standard output that is not a
//! terminal: the live view on a firmware's byte stream (the core's drain,
//! with a slow sink that drops whole chunks), its last figures equal to
//! the stream's own account, and the run ending by itself — at the end
//! frame, or at the end of an input cut before it.

use std::io::Write;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use qtrace_core::stream::{DrainStats, FrameDecoder, FrameKind};

use crate::serial::{serve_unix, stream, wait_bounded};

/// `qtrace recv --serial SPEC --live --json --out OUT`, started.
fn recv_live(spec: &str, out: &std::path::Path, stdin: Stdio) -> Child {
    Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(["recv", "--serial", spec, "--live", "--json", "--out"])
        .arg(out)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The view's last block (its lines up to the sender's), and the JSON
/// summary (the last line of the standard output), of a run that exited
/// 0.
fn last_block_and_json(output: &Output) -> (String, serde_json::Value) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{:?}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let (view, json) = stdout.trim_end().rsplit_once('\n').unwrap();
    let json: serde_json::Value = serde_json::from_str(json).unwrap();
    let last = view
        .split("\n\n")
        .filter(|b| b.starts_with("receiving into "))
        .last()
        .unwrap_or_else(|| panic!("no view block in:\n{stdout}"));
    (last.to_string(), json)
}

/// Asserts the view's last block: its header line's events and losses,
/// and the one sender's row (events, losses, stream health), equal to what
/// the drain sent and dropped.
fn assert_view(block: &str, out: &std::path::Path, stats: DrainStats, health: &str) {
    let head = block.lines().next().unwrap();
    assert!(
        head.starts_with(&format!("receiving into {}  window 2.0s (", out.display()))
            && head.ends_with(&format!(
                " of trace)  {} events, {} lost",
                stats.sent, stats.dropped
            )),
        "{block}"
    );
    let senders: Vec<&str> = block.lines().filter(|l| l.starts_with("sender ")).collect();
    assert_eq!(senders.len(), 1, "{block}");
    let words: Vec<&str> = senders[0].split_whitespace().collect();
    // sender ADDR #ID  events N  rate R  lost L  stream HEALTH
    assert_eq!(
        [words[2], words[3], words[4], words[7], words[8], words[9], words[10]],
        [
            "#7",
            "events",
            stats.sent.to_string().as_str(),
            "lost",
            stats.dropped.to_string().as_str(),
            "stream",
            health
        ],
        "{block}"
    );
}

/// The stream arrives in pieces over about 1.5 s through a Unix socket
/// (QEMU's `-serial unix:PATH,server`), as from a running board: the view
/// prints while it arrives, ends by itself at the end frame, and its last
/// figures are the stream's: the events the drain sent, the events it
/// dropped, the stream closed.
#[cfg(unix)]
#[test]
fn the_live_view_of_a_serial_stream_shows_its_events_and_losses() {
    let (wire, stats) = stream(8, 16);
    assert!(stats.dropped > 0 && stats.sent > 0);
    assert_eq!(stats.sent + stats.dropped, 4000);
    let dir = tempfile::tempdir().unwrap();
    let (socket, board) = serve_unix(dir.path(), wire.clone(), 15, Duration::from_millis(100));
    let out = dir.path().join("board.qtr");
    let spec = format!("unix:{}", socket.display());
    let mut child = recv_live(&spec, &out, Stdio::null());
    wait_bounded(&mut child, Instant::now(), &spec);
    let output = child.wait_with_output().unwrap();
    board.join().unwrap();
    let (block, json) = last_block_and_json(&output);
    assert_view(&block, &out, stats, "closed");
    // The receiver's own account says the same.
    assert_eq!(
        (
            &json["events"],
            &json["sender_dropped"],
            &json["lost_events"],
            &json["unclosed_senders"]
        ),
        (
            &stats.sent.into(),
            &stats.dropped.into(),
            &0.into(),
            &0.into()
        )
    );
    assert_eq!(json["stream_bytes"], wire.len() as u64);
    assert_eq!(json["stream_frames"], stats.frames);
}

/// The stream cut before its end frame (the board reset, the cable
/// pulled), piped into `--serial /dev/stdin`: the run ends by itself at
/// the end of the input; the view's last figures count the events sent
/// and dropped — the receiver's unclosed-stream mark is not an event — and
/// the stream is `unclosed` (no more of it can come), not `open`.
#[cfg(unix)]
#[test]
fn the_live_view_of_a_serial_stream_cut_before_its_end_says_unclosed() {
    let (wire, stats) = stream(8, 16);
    // The frames' ends, and which frame is last: the end frame.
    let mut buf = vec![0u8; 70_000];
    let mut d = FrameDecoder::new(&mut buf);
    let mut kinds = Vec::new();
    d.feed(&wire, |f| kinds.push(f.unwrap().kind));
    assert_eq!(kinds.last(), Some(&FrameKind::End));
    assert_eq!(wire.last(), Some(&0), "a frame ends at its delimiter");
    let cut = wire[..wire.len() - 1]
        .iter()
        .rposition(|&b| b == 0)
        .unwrap()
        + 1;
    let mut d = FrameDecoder::new(&mut buf);
    let mut cut_kinds = Vec::new();
    d.feed(&wire[..cut], |f| cut_kinds.push(f.unwrap().kind));
    assert_eq!(cut_kinds, kinds[..kinds.len() - 1], "all but the end frame");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cut.qtr");
    let mut child = recv_live("/dev/stdin", &out, Stdio::piped());
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&wire[..cut]).unwrap();
    drop(stdin);
    wait_bounded(&mut child, Instant::now(), "/dev/stdin");
    let (block, json) = last_block_and_json(&child.wait_with_output().unwrap());
    assert_view(&block, &out, stats, "unclosed");
    assert_eq!(
        (
            &json["events"],
            &json["sender_dropped"],
            &json["unclosed_senders"]
        ),
        (&stats.sent.into(), &stats.dropped.into(), &1.into())
    );
    assert_eq!(json["stream_bytes"], cut as u64);
}
