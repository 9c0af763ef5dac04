//! Loopback networking for tests (each uses this file as `common::…`):
//! an address on 127.0.0.1 whose port the system chooses, a free port, and a
//! bounded wait.

use std::net::{Ipv4Addr, SocketAddr};
use std::thread;
use std::time::{Duration, Instant};

/// 127.0.0.1 with port 0: the system chooses the port.
pub fn loopback() -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, 0))
}

/// Polls `f` every millisecond until it holds; fails the test naming `what`
/// when `limit` passes first.
pub fn wait_until(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < limit, "timed out waiting until {what}");
        thread::sleep(Duration::from_millis(1));
    }
}

/// A UDP port on 127.0.0.1 that was free a moment ago (bound, read, let go).
pub fn free_port() -> u16 {
    std::net::UdpSocket::bind(loopback())
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
