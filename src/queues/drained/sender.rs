//! The UDP queue's socket: bound to a local address, connected to the
//! receiver, IPv4 or IPv6 (socket2).
//!
//! The socket is connected so that the kernel reports an ICMP "port
//! unreachable" from the receiver's host as `ECONNREFUSED` on a later send.
//! That only means nobody listens (yet): it is counted and the stream goes on.

use std::io;
use std::net::SocketAddr;

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use crate::queue::config_error::ConfigError;

/// What happened to one datagram.
#[derive(Debug)]
pub(crate) enum SendOutcome {
    /// Handed to the network.
    Sent,
    /// Handed to the network after the kernel reported that an earlier
    /// datagram was refused (nobody listening at the remote address).
    SentAfterRefusal,
    /// Refused twice in a row (a second refusal arrived meanwhile): the
    /// datagram was not sent.
    Refused,
    /// The kernel could not take it now (buffer full, interface down):
    /// keep it and try again later.
    Failed(io::Error),
}

/// A connected UDP socket.
#[derive(Debug)]
pub(crate) struct UdpSender {
    socket: Socket,
    local: SocketAddr,
    remote: SocketAddr,
}

impl UdpSender {
    /// Binds to `local` and connects to `remote`. Both must be of the same
    /// family; port 0 in `local` lets the system choose.
    pub(crate) fn open(local: SocketAddr, remote: SocketAddr) -> Result<Self, ConfigError> {
        if local.is_ipv4() != remote.is_ipv4() {
            return Err(ConfigError::InvalidParameter {
                queue_type: "udp",
                reason: format!(
                    "local address {local} and remote address {remote} are of different IP versions: use two IPv4 or two IPv6 addresses"
                ),
            });
        }
        if remote.port() == 0 {
            return Err(ConfigError::InvalidParameter {
                queue_type: "udp",
                reason: format!("remote address {remote} has port 0: give the receiver's port"),
            });
        }
        let io_err = |action: &'static str, addr: SocketAddr, e: io::Error| {
            let source = io::Error::new(e.kind(), format!("{addr}: {e}"));
            ConfigError::Io(crate::model::io_error::IoError::without_path(
                action, source,
            ))
        };
        let domain = Domain::for_address(remote);
        let socket = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))
            .map_err(|e| io_err("open a UDP socket for", remote, e))?;
        if remote.is_ipv6() {
            // Only IPv6: an IPv6 socket never silently speaks IPv4-mapped.
            let _ = socket.set_only_v6(true);
        }
        // A larger send buffer absorbs a burst of datagrams; the kernel caps it.
        let _ = socket.set_send_buffer_size(4 << 20);
        socket
            .bind(&SockAddr::from(local))
            .map_err(|e| io_err("bind the UDP sender to", local, e))?;
        socket
            .connect(&SockAddr::from(remote))
            .map_err(|e| io_err("connect the UDP sender to", remote, e))?;
        // Sends never wait: a full send buffer is reported, not waited for.
        socket
            .set_nonblocking(true)
            .map_err(|e| io_err("configure the UDP sender for", remote, e))?;
        let local = socket
            .local_addr()
            .ok()
            .and_then(|a| a.as_socket())
            .unwrap_or(local);
        Ok(UdpSender {
            socket,
            local,
            remote,
        })
    }

    /// The address the socket is bound to (with the port the system chose).
    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The receiver's address.
    pub(crate) fn remote_addr(&self) -> SocketAddr {
        self.remote
    }

    /// Sends one datagram. Never blocks for long: a full send buffer is a
    /// [`SendOutcome::Failed`] with `WouldBlock`, not a wait.
    pub(crate) fn send(&self, datagram: &[u8]) -> SendOutcome {
        match self.send_once(datagram) {
            Ok(()) => SendOutcome::Sent,
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                // The refusal was about an earlier datagram; reading it
                // cleared it, so this one can go now.
                match self.send_once(datagram) {
                    Ok(()) => SendOutcome::SentAfterRefusal,
                    Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => SendOutcome::Refused,
                    Err(e) => SendOutcome::Failed(e),
                }
            }
            Err(e) => SendOutcome::Failed(e),
        }
    }

    /// Asks the kernel to split every send longer than `size` bytes into
    /// datagrams of `size` bytes (the last may be shorter): Linux UDP
    /// segmentation offload, one system call for a batch of datagrams.
    /// `size` 0 switches it off. Returns whether the kernel accepted.
    #[cfg(target_os = "linux")]
    pub(crate) fn set_segment_size(&self, size: usize) -> bool {
        use std::os::fd::AsRawFd;
        /// `UDP_SEGMENT` from `linux/udp.h` (not in the libc crate).
        const UDP_SEGMENT: libc::c_int = 103;
        let Ok(value) = libc::c_int::try_from(size) else {
            return false;
        };
        // SAFETY: the descriptor is this open socket's for the whole call;
        // the option value points to a live `c_int` and its size is given.
        let r = unsafe {
            libc::setsockopt(
                self.socket.as_raw_fd(),
                libc::SOL_UDP,
                UDP_SEGMENT,
                (&value as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        r == 0
    }

    /// Segmentation offload is a Linux feature: never on elsewhere.
    #[cfg(not(target_os = "linux"))]
    pub(crate) fn set_segment_size(&self, _size: usize) -> bool {
        false
    }

    fn send_once(&self, datagram: &[u8]) -> io::Result<()> {
        loop {
            match self.socket.send(datagram) {
                Ok(n) if n == datagram.len() => return Ok(()),
                Ok(n) => {
                    return Err(io::Error::new(
                        io::ErrorKind::WriteZero,
                        format!("sent {n} of {} bytes", datagram.len()),
                    ))
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr, UdpSocket};
    use std::time::Duration;

    fn v4(port: u16) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, port))
    }

    #[test]
    fn sends_to_a_listening_ipv4_socket() {
        let rx = UdpSocket::bind(v4(0)).unwrap();
        rx.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let s = UdpSender::open(v4(0), rx.local_addr().unwrap()).unwrap();
        assert_ne!(s.local_addr().port(), 0);
        assert_eq!(s.remote_addr(), rx.local_addr().unwrap());
        assert!(matches!(s.send(b"hello"), SendOutcome::Sent));
        let mut buf = [0u8; 64];
        let (n, from) = rx.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"hello");
        assert_eq!(from, s.local_addr());
    }

    #[test]
    fn sends_over_ipv6_when_available() {
        let Ok(rx) = UdpSocket::bind(SocketAddr::from((Ipv6Addr::LOCALHOST, 0))) else {
            return; // no IPv6 loopback on this machine
        };
        rx.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let local = SocketAddr::from((Ipv6Addr::LOCALHOST, 0));
        let s = UdpSender::open(local, rx.local_addr().unwrap()).unwrap();
        assert!(matches!(s.send(b"six"), SendOutcome::Sent));
        let mut buf = [0u8; 64];
        let n = rx.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"six");
    }

    #[test]
    fn absent_receiver_is_counted_not_fatal() {
        // Bind a socket to get a free port, then close it: nobody listens.
        let port = UdpSocket::bind(v4(0)).unwrap().local_addr().unwrap().port();
        let s = UdpSender::open(v4(0), v4(port)).unwrap();
        let mut refusals = 0;
        for _ in 0..20 {
            match s.send(&[0u8; 100]) {
                SendOutcome::Sent => {}
                SendOutcome::SentAfterRefusal | SendOutcome::Refused => refusals += 1,
                SendOutcome::Failed(e) => panic!("unexpected failure {e}"),
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        // Linux reports the ICMP port-unreachable on the next send.
        #[cfg(target_os = "linux")]
        assert!(refusals > 0);
        let _ = refusals;
    }

    #[test]
    fn mixed_families_are_a_typed_error() {
        let e = UdpSender::open(SocketAddr::from((Ipv6Addr::LOCALHOST, 0)), v4(9)).unwrap_err();
        assert!(matches!(e, ConfigError::InvalidParameter { .. }), "{e}");
        assert!(e.to_string().contains("different IP versions"));
        let e = UdpSender::open(v4(0), v4(0)).unwrap_err();
        assert!(e.to_string().contains("port 0"));
    }
}
