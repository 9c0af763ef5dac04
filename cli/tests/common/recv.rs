//! Running `qtrace recv` in the command's tests (`cli/tests/recv/recv_cli.rs` and
//! `cli/tests/recv/stream_end.rs` use this file as `common::…`, next to
//! `tests/common/loopback.rs` included as `loopback`).

use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::Duration;

use qtrace::classes::user;
use qtrace::queues::{DatagramsPerPeriod, Udp, UdpParams};
use qtrace::{ShutdownReport, Tracer};

use super::loopback::{free_port, loopback, wait_until};

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

/// `qtrace recv --listen 127.0.0.1:PORT --out OUT ARGS…` started on a free
/// port and listening: (its address, the child).
pub fn recv_listening(out: &Path, args: &[&str]) -> (SocketAddr, Child) {
    let listen = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let child = spawn_recv(listen, out, args);
    wait_listening(listen);
    (listen, child)
}

/// An active tracer whose user class goes to a UDP queue streaming to
/// `listen` every 2 ms, all it holds each round.
pub fn user_sender(listen: SocketAddr) -> Tracer {
    let tracer = Tracer::new();
    let q = tracer
        .create_queue::<Udp>(
            UdpParams::to(listen)
                .with_period(Duration::from_millis(2))
                .with_datagrams_per_period(DatagramsPerPeriod::All),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer.activate().unwrap();
    tracer
}

/// Streams `n` events `user3 [i, 7]` (i = 0..n) to `listen`, then shuts the
/// tracer down (the close datagram follows): its report.
pub fn send_user3(listen: SocketAddr, n: u64) -> ShutdownReport {
    let tracer = user_sender(listen);
    for i in 0..n {
        tracer.log_event(user::USER3, [i, 7]);
    }
    tracer.shutdown().unwrap()
}
