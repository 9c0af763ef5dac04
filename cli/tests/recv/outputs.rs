//! `qtrace recv` and the file at its `--out` (issue 23, item 2): an output
//! deleted under a running receiver is re-created with a mark of what went
//! with it; a restarted receiver moves the previous trace aside; a second
//! receiver on the same output is refused while the first writes it.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Output};
use std::time::Duration;

use qtrace::classes::{tracer, user};
use qtrace::reader::Completeness;

use crate::common::loopback::free_port;
use crate::common::read_all::read_all;
use crate::common::recv::{recv_listening as start, send_user3};
use crate::common::temp_dirs;

/// Streams `n` events `user3 [i, 7]` to `listen`, then closes the stream.
fn send(listen: SocketAddr, n: u64) {
    let report = send_user3(listen, n);
    assert_eq!(report.queues[0].counters.delivered, n, "{report:?}");
}

/// SIGINT to `child`, then its output.
fn interrupt(child: Child) -> Output {
    // SAFETY: sending SIGINT to our own child process.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) },
        0
    );
    child.wait_with_output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\n{}{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// User events in `path`.
fn user3s(path: &Path) -> usize {
    let (_, events, _) = read_all(path);
    events.iter().filter(|e| e.id == user::USER3).count()
}

#[cfg(target_os = "linux")]
#[test]
fn an_output_unlinked_under_a_running_receiver_is_recreated_with_a_hoops_mark() {
    let dir = temp_dirs::fresh_dir("recv-out", "unlink");
    let out = dir.join("r.qtr");
    let (listen, child) = start(&out, &[]);
    // Give the Ctrl-C handler a moment after the socket is bound.
    std::thread::sleep(Duration::from_millis(100));
    send(listen, 1000);
    // Past the 50 ms flush: the 1000 records are in the file.
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(user3s(&out), 1000);
    std::fs::remove_file(&out).unwrap();
    // The receiver notices within 100 ms (+ a flush) and re-creates it.
    crate::common::loopback::wait_until("the file is re-created", Duration::from_secs(10), || {
        out.exists()
    });
    send(listen, 500);
    std::thread::sleep(Duration::from_millis(300));
    let o = interrupt(child);
    let t = text(&o);
    // Not a clean exit: events went with the deleted file.
    assert_eq!(o.status.code(), Some(3), "{t}");
    assert!(t.contains("received 1500 events"), "{t}");
    assert!(
        t.contains(
            "deleted or replaced 1 times while written: 1000 records written before went with it"
        ),
        "{t}"
    );
    // "wrote N" counts the records on disk only: the hoops mark + 500.
    assert!(t.contains("wrote 501 records to"), "{t}");
    let (_, events, completeness) = read_all(&out);
    assert_eq!(events.len(), 501, "{events:?}");
    assert_eq!(events[0].id, tracer::HOOPS);
    assert_eq!(
        events[0].args[0], 1000,
        "the mark says what went with the old inode"
    );
    assert_eq!(user3s(&out), 500);
    // The close run agrees: 1500 accepted, 1000 of them overwritten (lost
    // with the file), 500 delivered; the file's hoops state 1000 lost.
    let Completeness::Complete(close) = completeness else {
        panic!("{completeness:?}")
    };
    assert_eq!(
        (
            close.totals.accepted,
            close.totals.overwritten,
            close.totals.delivered,
            close.lost
        ),
        (1500, 1000, 500, 1000)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_restarted_receiver_moves_the_previous_trace_aside() {
    let dir = temp_dirs::fresh_dir("recv-out", "restart");
    let out = dir.join("r.qtr");
    for (n, expect_aside) in [
        (300u64, None),
        (200, Some(("r-previous.qtr", 300))),
        (100, Some(("r-previous-2.qtr", 200))),
    ] {
        let (listen, child) = start(&out, &["--count", &n.to_string(), "--duration", "60"]);
        send(listen, n);
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        assert_eq!(user3s(&out), n as usize);
        if let Some((name, kept)) = expect_aside {
            assert_eq!(user3s(&dir.join(name)), kept, "{name}");
        }
    }
    assert_eq!(
        user3s(&dir.join("r-previous.qtr")),
        300,
        "never overwritten"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(target_os = "linux")]
#[test]
fn a_second_receiver_on_an_output_being_written_is_refused() {
    let dir = temp_dirs::fresh_dir("recv-out", "two");
    let out = dir.join("r.qtr");
    let (listen, first) = start(&out, &[]);
    std::thread::sleep(Duration::from_millis(100));
    send(listen, 400);
    // The second one, on another port: refused at once, exit status 1.
    let second = std::process::Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args([
            "recv",
            "--listen",
            &format!("127.0.0.1:{}", free_port()),
            "--duration",
            "5",
            "--out",
        ])
        .arg(&out)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let t = text(&second);
    assert_eq!(second.status.code(), Some(1), "{t}");
    assert!(
        t.contains("another process is writing a trace there"),
        "{t}"
    );
    assert!(t.contains("give this receiver another output path"), "{t}");
    assert!(
        !dir.join("r-previous.qtr").exists(),
        "the live file was not moved"
    );
    let o = interrupt(first);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(user3s(&out), 400);
    assert!(matches!(read_all(&out).2, Completeness::Complete(_)));
    std::fs::remove_dir_all(&dir).unwrap();
}
