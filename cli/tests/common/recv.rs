//! Running `qtrace recv` in the command's tests (`cli/tests/recv/recv_cli.rs` and
//! `cli/tests/recv/stream_end.rs` use this file as `common::…`, next to
//! `tests/common/loopback.rs` included as `loopback`).

use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::Duration;

use super::loopback::{loopback, wait_until};

/// Starts `qtrace recv --listen LISTEN --out OUT ARGS…` with its output
/// piped; see [`wait_listening`].
pub fn spawn_recv(listen: SocketAddr, out: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(["recv", "--listen", &listen.to_string(), "--out"])
        .arg(out)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until `qtrace recv` listens on `listen`: probes with an invalid
/// datagram until the port stops refusing. Bounded (30 s).
pub fn wait_listening(listen: SocketAddr) {
    let probe = UdpSocket::bind(loopback()).unwrap();
    probe.connect(listen).unwrap();
    wait_until("qtrace recv listens", Duration::from_secs(30), || {
        let _ = probe.send(b"probe");
        thread::sleep(Duration::from_millis(20));
        probe.send(b"probe").is_ok() && probe.send(b"probe").is_ok()
    });
}
