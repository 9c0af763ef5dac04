//! Receiving datagrams in batches: on Linux one `recvmmsg` call takes up to
//! [`BATCH`] datagrams that wait in the socket, instead of one `recvfrom`
//! each (the system call's fixed cost was a large share of the receiving
//! thread at 200 k datagrams/s), each with the kernel's time of its
//! arrival (`SO_TIMESTAMPNS`: the clock alignment of the store measures
//! delays from it, not from when the receiver got round to the datagram,
//! FORMAT.md 7.7). On Linux the socket also asks for receive offload
//! (`UDP_GRO`): a run of equally long datagrams of one source (a sender's
//! segmentation-offload batch, FORMAT.md 2.7) may arrive as one buffer and
//! the kernel's segment size, and is split back here into the datagrams
//! that were sent, byte for byte. Elsewhere, and under Miri (which cannot
//! call into the system), one `recv_from` a call, without that time.

use std::io;
use std::net::{SocketAddr, UdpSocket};

use crate::wire::datagram::MAX_DATAGRAM_LEN;

/// Datagrams taken per call at most.
pub(super) const BATCH: usize = 32;

/// A slot's size: more than the largest datagram, so that an oversized one
/// is seen as such (and refused), never cut to fit; and room for the
/// largest buffer receive offload gives (a UDP payload of at most 65,527
/// bytes: the 16-bit length less the 8-byte header).
const SLOT: usize = 65_536;
const _: () = assert!(SLOT > MAX_DATAGRAM_LEN);

/// Control-message room per datagram: one `SCM_TIMESTAMPNS` (a
/// `timespec`, 16 bytes, behind a 16-byte header) and one `UDP_GRO` (an
/// `int` behind its header, 24 bytes with padding).
#[cfg(all(target_os = "linux", not(miri)))]
const CONTROL: usize = 64;

/// `UDP_GRO` from `linux/udp.h` (not in the libc crate for glibc): the
/// socket option, and the control message that gives the segment size.
#[cfg(all(target_os = "linux", not(miri)))]
const UDP_GRO: libc::c_int = 104;

/// Buffers for up to [`BATCH`] datagrams and their source addresses.
pub(super) struct Batch {
    /// [`BATCH`] slots of [`SLOT`] bytes (allocated zeroed: only the pages
    /// datagrams were written to become resident).
    bufs: Vec<u8>,
    /// Each taken buffer's length, source, arrival (Unix ns, the kernel's
    /// receive time, when it gave one) and segment size: the length of
    /// each datagram it holds, all but the last exactly that long (its
    /// length when the kernel did not coalesce datagrams into it).
    got: Vec<(usize, SocketAddr, Option<i64>, usize)>,
    #[cfg(all(target_os = "linux", not(miri)))]
    addrs: Vec<libc::sockaddr_storage>,
    /// [`BATCH`] control buffers of [`CONTROL`] bytes (u64s: aligned for
    /// `cmsghdr`).
    #[cfg(all(target_os = "linux", not(miri)))]
    control: Vec<u64>,
}

impl std::fmt::Debug for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batch").field("got", &self.got).finish()
    }
}

impl Batch {
    pub(super) fn new() -> Self {
        Batch {
            bufs: vec![0u8; BATCH * SLOT],
            got: Vec::with_capacity(BATCH),
            #[cfg(all(target_os = "linux", not(miri)))]
            // SAFETY: sockaddr_storage is plain old data: all zeros is a
            // valid value (family AF_UNSPEC).
            addrs: vec![unsafe { std::mem::zeroed() }; BATCH],
            #[cfg(all(target_os = "linux", not(miri)))]
            control: vec![0u64; BATCH * CONTROL / 8],
        }
    }

    /// The datagrams taken by the last [`Batch::recv`], in arrival order,
    /// each with its arrival (Unix ns) when the kernel gave it; a buffer of
    /// coalesced datagrams split back into them (all of one arrival).
    pub(super) fn datagrams(&self) -> impl Iterator<Item = (SocketAddr, &[u8], Option<i64>)> + '_ {
        self.got
            .iter()
            .enumerate()
            .flat_map(move |(i, &(n, from, at, seg))| {
                let buf = &self.bufs[i * SLOT..i * SLOT + n];
                // `chunks` of an empty buffer yields nothing: an empty
                // datagram is still one (and refused as such).
                let empty = (n == 0).then_some(buf);
                empty
                    .into_iter()
                    .chain(buf.chunks(seg.max(1)))
                    .map(move |d| (from, d, at))
            })
    }

    /// Waits for a datagram (up to the socket's read timeout) and takes it
    /// with the others already waiting, up to [`BATCH`]. Returns how many.
    ///
    /// # Errors
    /// The socket's error (a timeout is `WouldBlock` or `TimedOut`).
    #[cfg(not(all(target_os = "linux", not(miri))))]
    pub(super) fn recv(&mut self, socket: &UdpSocket) -> io::Result<usize> {
        self.recv_one(socket)
    }

    /// Takes one datagram (up to the socket's read timeout): the path of
    /// other systems and of Miri, tested on Linux too.
    #[cfg_attr(all(target_os = "linux", not(miri), not(test)), allow(dead_code))]
    fn recv_one(&mut self, socket: &UdpSocket) -> io::Result<usize> {
        self.got.clear();
        let (n, from) = socket.recv_from(&mut self.bufs[..SLOT])?;
        self.got.push((n, from, None, n));
        Ok(1)
    }

    /// Waits for a datagram (up to the socket's read timeout) and takes it
    /// with the others already waiting, up to [`BATCH`]. Returns how many.
    ///
    /// # Errors
    /// The socket's error (a timeout is `WouldBlock` or `TimedOut`).
    #[cfg(all(target_os = "linux", not(miri)))]
    pub(super) fn recv(&mut self, socket: &UdpSocket) -> io::Result<usize> {
        use std::os::fd::AsRawFd;
        self.got.clear();
        // The headers point into `bufs` and `addrs`, which are not resized
        // while they live (built anew each call: nothing dangles).
        let mut iovecs: [libc::iovec; BATCH] = std::array::from_fn(|i| libc::iovec {
            iov_base: self.bufs[i * SLOT..].as_mut_ptr().cast(),
            iov_len: SLOT,
        });
        let addrs = self.addrs.as_mut_ptr();
        let control = self.control.as_mut_ptr();
        let mut msgs: [libc::mmsghdr; BATCH] = std::array::from_fn(|i| {
            // SAFETY: mmsghdr is plain old data (pointers, lengths, flags):
            // all zeros is valid; the fields used are set below.
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            // SAFETY: i < BATCH = addrs' length: in bounds.
            m.msg_hdr.msg_name = unsafe { addrs.add(i) }.cast();
            m.msg_hdr.msg_namelen =
                std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            m.msg_hdr.msg_iov = &mut iovecs[i];
            m.msg_hdr.msg_iovlen = 1;
            // SAFETY: i * CONTROL / 8 < control's length: in bounds.
            m.msg_hdr.msg_control = unsafe { control.add(i * CONTROL / 8) }.cast();
            m.msg_hdr.msg_controllen = CONTROL as _;
            m
        });
        // SAFETY: `msgs` holds BATCH valid headers, each naming one
        // writable iovec of SLOT bytes inside `bufs`, one sockaddr_storage
        // of `addrs` and CONTROL bytes of `control`; all outlive the call. MSG_WAITFORONE:
        // block (up to SO_RCVTIMEO) for the first datagram only.
        let n = unsafe {
            libc::recvmmsg(
                socket.as_raw_fd(),
                msgs.as_mut_ptr(),
                BATCH as libc::c_uint,
                libc::MSG_WAITFORONE,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = (n as usize).min(BATCH);
        for (m, addr) in msgs[..n].iter().zip(&self.addrs) {
            // A source that is neither IPv4 nor IPv6 cannot happen on a UDP
            // socket; such a datagram would be skipped.
            if let Some(from) = socket_addr(addr) {
                let n = m.msg_len as usize;
                let (at, seg) = control_messages(&m.msg_hdr);
                self.got.push((n, from, at, seg.unwrap_or(n)));
            }
        }
        Ok(self.got.len())
    }
}

/// Asks the kernel to stamp every datagram `socket` receives with its
/// arrival time (`SO_TIMESTAMPNS`, CLOCK_REALTIME), which [`Batch::recv`]
/// then gives. Best effort: without it, datagrams carry no arrival time.
#[cfg(all(target_os = "linux", not(miri)))]
pub(super) fn stamp_arrivals(socket: &UdpSocket) {
    switch_on(socket, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS);
}

/// Asks the kernel to coalesce runs of equally long datagrams of one
/// source into one buffer (`UDP_GRO`), which [`Batch::recv`] splits again.
/// Best effort: without it (an older kernel), one datagram a slot.
#[cfg(all(target_os = "linux", not(miri)))]
pub(super) fn coalesce_arrivals(socket: &UdpSocket) {
    switch_on(socket, libc::SOL_UDP, UDP_GRO);
}

/// Sets the int socket option `name` of `level` to 1; a refusal is ignored.
#[cfg(all(target_os = "linux", not(miri)))]
fn switch_on(socket: &UdpSocket, level: libc::c_int, name: libc::c_int) {
    use std::os::fd::AsRawFd;
    let on: libc::c_int = 1;
    // SAFETY: a valid socket, and an int option passed with its size.
    unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            level,
            name,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// The kernel's receive time (Unix ns) and the segment size of coalesced
/// datagrams in `h`'s control messages, each if given.
#[cfg(all(target_os = "linux", not(miri)))]
fn control_messages(h: &libc::msghdr) -> (Option<i64>, Option<usize>) {
    let (mut at, mut seg) = (None, None);
    // SAFETY: `h` is a header recvmmsg filled: its control pointer and
    // length describe the control messages the kernel wrote (length 0 or
    // a null first header when none), walked with the libc macros; each
    // message's data is read unaligned, as the type its level and type
    // name (a timespec; an int).
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(h);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::timespec>());
                at = Some((ts.tv_sec as i64) * 1_000_000_000 + ts.tv_nsec as i64);
            } else if (*c).cmsg_level == libc::SOL_UDP && (*c).cmsg_type == UDP_GRO {
                let size = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::c_int>());
                seg = usize::try_from(size).ok().filter(|&s| s > 0);
            }
            c = libc::CMSG_NXTHDR(h, c);
        }
    }
    (at, seg)
}

/// The IPv4 or IPv6 address in `a`.
#[cfg(all(target_os = "linux", not(miri)))]
fn socket_addr(a: &libc::sockaddr_storage) -> Option<SocketAddr> {
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV4, SocketAddrV6};
    match libc::c_int::from(a.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in (it
            // is larger and at least as aligned).
            let v4 = unsafe { &*(a as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            Some(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(u32::from_be(v4.sin_addr.s_addr)),
                u16::from_be(v4.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: as above, a sockaddr_in6.
            let v6 = unsafe { &*(a as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(v6.sin6_addr.s6_addr),
                u16::from_be(v6.sin6_port),
                v6.sin6_flowinfo,
                v6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Datagrams waiting in the socket are taken, each whole, in order,
    /// with its source address (IPv4 and IPv6), by the batched call and by
    /// the one-a-call path alike; the batched call with the kernel's
    /// arrival time.
    #[test]
    fn a_batch_takes_the_waiting_datagrams_whole_with_their_sources() {
        for (local, one) in [
            ("127.0.0.1:0", false),
            ("[::1]:0", false),
            ("127.0.0.1:0", true),
            ("[::1]:0", true),
        ] {
            let Ok(rx) = UdpSocket::bind(local) else {
                continue; // no IPv6 on this machine
            };
            rx.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            #[cfg(all(target_os = "linux", not(miri)))]
            stamp_arrivals(&rx);
            let sent = unix_ns();
            let tx = UdpSocket::bind(local).unwrap();
            let sizes = [1usize, 1472, 40, MAX_DATAGRAM_LEN];
            for (i, &n) in sizes.iter().enumerate() {
                tx.send_to(&vec![i as u8 + 1; n], rx.local_addr().unwrap())
                    .unwrap();
            }
            let mut batch = Batch::new();
            let mut seen = Vec::new();
            while seen.len() < sizes.len() {
                let n = if one {
                    batch.recv_one(&rx).unwrap()
                } else {
                    batch.recv(&rx).unwrap()
                };
                assert!(n >= 1);
                for (from, bytes, at) in batch.datagrams() {
                    assert_eq!(from, tx.local_addr().unwrap());
                    // The batched call gives the kernel's arrival time:
                    // before now, after the sending began.
                    if !one && cfg!(all(target_os = "linux", not(miri))) {
                        let at = at.expect("an arrival time");
                        assert!((sent..=unix_ns()).contains(&at), "{sent} {at}");
                    } else {
                        assert_eq!(at, None);
                    }
                    seen.push(bytes.to_vec());
                }
            }
            assert_eq!(seen.len(), sizes.len());
            for (i, (d, &n)) in seen.iter().zip(&sizes).enumerate() {
                assert_eq!(d.len(), n);
                assert!(d.iter().all(|&b| b == i as u8 + 1));
            }
        }
    }

    /// A sender's segmentation-offload batch (six datagrams of 100 bytes
    /// and one of 37, one `send` with `UDP_SEGMENT`) reaches a socket that
    /// asked for receive offload as one buffer and the segment size, and
    /// is split back into the seven datagrams, byte for byte and in order;
    /// a lone datagram after it is one datagram.
    #[cfg(all(target_os = "linux", not(miri)))]
    #[test]
    fn coalesced_datagrams_are_split_back_into_those_sent() {
        use std::os::fd::AsRawFd;
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        stamp_arrivals(&rx);
        coalesce_arrivals(&rx);
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        let seg: libc::c_int = 100;
        // SAFETY: a valid socket, and an int option passed with its size
        // (`UDP_SEGMENT`, 103, from linux/udp.h).
        let r = unsafe {
            libc::setsockopt(
                tx.as_raw_fd(),
                libc::SOL_UDP,
                103,
                (&seg as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r != 0 {
            eprintln!("no UDP segmentation offload in this kernel: skipped");
            return;
        }
        let mut sent: Vec<Vec<u8>> = (0..6u8).map(|k| vec![k + 1; 100]).collect();
        sent.push(vec![7; 37]);
        tx.send(&sent.concat()).unwrap();
        let lone = vec![9u8; 100];
        tx.send(&lone).unwrap();
        sent.push(lone);
        let mut batch = Batch::new();
        let mut seen = Vec::new();
        let mut coalesced = false;
        while seen.len() < sent.len() {
            batch.recv(&rx).unwrap();
            coalesced |= batch.got.iter().any(|g| g.0 > g.3);
            for (from, bytes, at) in batch.datagrams() {
                assert_eq!(from, tx.local_addr().unwrap());
                assert!(at.is_some());
                seen.push(bytes.to_vec());
            }
        }
        assert_eq!(seen, sent);
        assert!(coalesced, "the kernel gave the batch as one buffer");
    }

    fn unix_ns() -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as i64
    }

    /// With nothing waiting, the call returns the socket's timeout.
    #[test]
    fn an_empty_socket_times_out() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        let e = Batch::new().recv(&rx).unwrap_err();
        assert!(matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        ));
    }
}
