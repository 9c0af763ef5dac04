//! The receiver on a UDP socket: binds, receives, feeds the core.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, SockAddr, SockRef, Socket, Type};

use super::batch::Batch;
use super::config::ReceiverConfig;
use super::core::ReceiverCore;
use super::file::LiveFile;
use super::progress::Progress;
use super::run::{RunLimit, Stopper};
use super::sessions::SessionFile;
use super::sink::{EachEvent, Sink, StreamSink, Streams};
use super::spool::FileSink;
use super::summary::ReceiverSummary;
use crate::model::event::Event;
use crate::model::io_error::IoError;
use crate::wire::QueueTotals;

/// How long a receiver that reached its event count ([`RunLimit::events`])
/// still waits for the senders' close datagrams.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// A bound UDP socket and a [`ReceiverCore`].
///
/// ```
/// use std::net::UdpSocket;
/// use std::time::Duration;
/// use qtrace::classes::system;
/// use qtrace::receiver::{Receiver, RunLimit};
/// # use qtrace::Event;
/// # use qtrace_core::encode::datagram::{DatagramHeader, DatagramKind};
/// # /// An events datagram of sender 7 (FORMAT.md 3): the header, the records.
/// # fn datagram(sequence: u64, first_event: u64, events: &[Event]) -> Vec<u8> {
/// #     let header = DatagramHeader { kind: DatagramKind::Events, sender: 7, sequence, dropped: 0, first_event };
/// #     let mut head = [0u8; 40];
/// #     header.emit(events.len() as u16, &mut head);
/// #     let mut bytes = head.to_vec();
/// #     for e in events {
/// #         let mut record = [0u8; 32];
/// #         qtrace_core::encode::record::emit(e, &mut record);
/// #         bytes.extend_from_slice(&record);
/// #     }
/// #     bytes
/// # }
/// let mut receiver = Receiver::bind("127.0.0.1:0".parse()?)?;
/// let to = receiver.local_addr();
/// // A sender (here a plain socket; in a program, the UDP queue).
/// let socket = UdpSocket::bind("127.0.0.1:0")?;
/// let e = Event::new(1, system::SCHEDULE, 0, [1, 0]);
/// socket.send_to(&datagram(0, 0, &[e, e, e]), to)?;
///
/// let mut got = Vec::new();
/// let limit = RunLimit::events(3).or_after(Duration::from_secs(10));
/// let summary = receiver.run_with(limit, &mut |r| got.push(*r))?;
/// assert_eq!(summary.events(), 3);
/// assert_eq!(got.iter().filter(|r| r.id == system::SCHEDULE).count(), 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Receiver {
    source: Source,
    core: ReceiverCore,
    stop: Stopper,
    /// Where the keyed sessions are kept ([`Receiver::keep_sessions`]).
    sessions: Option<SessionFile>,
}

/// A feed of datagrams that come from elsewhere than a UDP socket (a
/// firmware's byte stream): it hands each to the callback it is given and
/// returns `Ok(true)` when it read anything, `Ok(false)` after waiting
/// about 20 ms for nothing, and an error of kind
/// [`UnexpectedEof`](io::ErrorKind::UnexpectedEof) when the stream ended.
type Feed = Box<dyn FnMut(&mut dyn FnMut(&[u8])) -> io::Result<bool> + Send>;

/// Where the datagrams come from.
enum Source {
    Udp(UdpSocket),
    Feed { addr: SocketAddr, feed: Feed },
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Udp(s) => f.debug_tuple("Udp").field(s).finish(),
            Source::Feed { addr, .. } => f.debug_struct("Feed").field("addr", addr).finish(),
        }
    }
}

impl Receiver {
    /// Binds to `addr` with the default limits. Port 0 lets the system choose
    /// (see [`Receiver::local_addr`]).
    ///
    /// ```
    /// use qtrace::receiver::Receiver;
    ///
    /// let receiver = Receiver::bind("127.0.0.1:0".parse()?)?;
    /// assert!(receiver.local_addr().ip().is_loopback());
    /// assert_ne!(receiver.local_addr().port(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`IoError`] when the socket cannot be opened, bound (the address is
    /// in use or not this machine's) or configured.
    pub fn bind(addr: SocketAddr) -> Result<Self, IoError> {
        Receiver::bind_with(addr, ReceiverConfig::default())
    }

    /// Binds to `addr` with `config`'s limits.
    ///
    /// # Errors
    ///
    /// As [`Receiver::bind`].
    pub fn bind_with(addr: SocketAddr, config: ReceiverConfig) -> Result<Self, IoError> {
        let io_err = |action: &'static str, e: io::Error| IoError {
            path: None,
            action,
            source: io::Error::new(e.kind(), format!("{addr}: {e}{}", bind_hint(&e))),
        };
        let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
            .map_err(|e| io_err("open a UDP socket to receive on", e))?;
        if addr.is_ipv6() {
            let _ = socket.set_only_v6(true);
        }
        let _ = socket.set_recv_buffer_size(config.recv_buffer);
        #[cfg(target_os = "linux")]
        if granted_buffer(SockRef::from(&socket)).is_some_and(|g| g < config.recv_buffer) {
            // Capped by net.core.rmem_max: beyond it with CAP_NET_ADMIN
            // (root) only. Best effort: without it the cap stays, and
            // `recv_buffer` says so.
            let _ = rustix::net::sockopt::set_socket_recv_buffer_size_force(
                &socket,
                config.recv_buffer,
            );
        }
        socket
            .bind(&SockAddr::from(addr))
            .map_err(|e| io_err("bind the receiver to", e))?;
        let socket: UdpSocket = socket.into();
        socket
            .set_read_timeout(Some(Duration::from_millis(20)))
            .map_err(|e| io_err("configure the receiver socket", e))?;
        #[cfg(all(target_os = "linux", not(miri)))]
        super::batch::stamp_arrivals(&socket);
        #[cfg(all(target_os = "linux", not(miri)))]
        super::batch::coalesce_arrivals(&socket);
        Ok(Receiver {
            source: Source::Udp(socket),
            core: ReceiverCore::new(config),
            stop: Stopper::default(),
            sessions: None,
        })
    }

    /// A receiver of datagrams that `feed` hands over, as if from `addr`,
    /// instead of a socket's: how `qtrace recv --serial` feeds the frames of
    /// a firmware's byte stream (FORMAT.md 10) to the same machinery. Each
    /// call of `feed` hands every datagram it has to its callback and
    /// returns `Ok(true)` when it read anything, `Ok(false)` after waiting
    /// about 20 ms for nothing (so the receiver can stop), and an error of
    /// kind [`UnexpectedEof`](io::ErrorKind::UnexpectedEof) when the stream
    /// is over: the run then ends as if stopped. Any other error fails the
    /// run.
    ///
    /// ```
    /// use std::io;
    /// use qtrace::receiver::{Receiver, ReceiverConfig, RunLimit};
    ///
    /// // Nothing but the end of the stream.
    /// let feed = |_: &mut dyn FnMut(&[u8])| Err(io::ErrorKind::UnexpectedEof.into());
    /// let mut receiver = Receiver::from_feed(ReceiverConfig::default(), "127.0.0.1:0".parse()?, Box::new(feed));
    /// let summary = receiver.run_with(RunLimit::default(), &mut |_| {})?;
    /// assert!(summary.senders.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    // Spelled out: a public alias would be one more public item.
    #[allow(clippy::type_complexity)]
    pub fn from_feed(
        config: ReceiverConfig,
        addr: SocketAddr,
        feed: Box<dyn FnMut(&mut dyn FnMut(&[u8])) -> io::Result<bool> + Send>,
    ) -> Self {
        Receiver {
            source: Source::Feed { addr, feed },
            core: ReceiverCore::new(config),
            stop: Stopper::default(),
            sessions: None,
        }
    }

    /// The address the receiver listens on (a feed's: the address it was
    /// given).
    pub fn local_addr(&self) -> SocketAddr {
        match &self.source {
            Source::Udp(socket) => socket.local_addr().expect("a bound socket has an address"),
            Source::Feed { addr, .. } => *addr,
        }
    }

    /// Keeps the keyed sessions in the session file `path` (FORMAT.md 3.7),
    /// so that a replayed keyed stream is rejected across restarts: loads
    /// it if it exists (returns the sender ids it lists), then rewrites it
    /// while the receiver runs (at most once a second, when something
    /// changed) and when it stops. `qtrace recv` keeps it beside its output
    /// when it holds keys. A write that fails is reported in
    /// [`ReceiverSummary::sessions_error`] and tried again.
    ///
    /// ```
    /// use qtrace::receiver::Receiver;
    ///
    /// let dir = std::env::temp_dir().join(format!("qtrace-sessions-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let mut receiver = Receiver::bind("127.0.0.1:0".parse()?)?;
    /// assert_eq!(receiver.keep_sessions(dir.join("sessions"))?, 0); // none yet
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`IoError`] when the file exists but cannot be read, or is not a
    /// session file (its error names the field at fault): move it away to
    /// start with no memory of earlier sessions.
    pub fn keep_sessions(&mut self, path: impl AsRef<Path>) -> Result<usize, IoError> {
        let file = SessionFile::new(path.as_ref());
        let loaded = match file.read()? {
            Some(bytes) => self.core.load_sessions(&bytes).map_err(|e| {
                IoError::new(
                    "load the session file (move it away to start without it)",
                    path.as_ref(),
                    io::Error::new(io::ErrorKind::InvalidData, e),
                )
            })?,
            None => 0,
        };
        self.sessions = Some(file);
        Ok(loaded)
    }

    /// Writes the session file if it is kept and due (`now`: whenever the
    /// sessions changed).
    fn save_sessions(&mut self, now: bool) {
        if let Some(file) = &mut self.sessions {
            let core = &mut self.core;
            file.save(core.sessions_changed(), now, || core.session_file());
        }
    }

    /// The socket's receive buffer as the kernel granted it, in bytes:
    /// datagrams that arrive while it is full are dropped by the kernel
    /// (counted lost in transit). [`ReceiverConfig::recv_buffer`] is asked
    /// for; on Linux `net.core.rmem_max` caps it unless the receiver has
    /// `CAP_NET_ADMIN` (root), then it is asked past the cap
    /// (`SO_RCVBUFFORCE`). On Linux this is half of what `SO_RCVBUF` reads
    /// back (the kernel doubles the size for its bookkeeping). `None` for a
    /// feed ([`Receiver::from_feed`]) or when the system does not say.
    ///
    /// ```
    /// use qtrace::receiver::{Receiver, ReceiverConfig};
    ///
    /// let config = ReceiverConfig { recv_buffer: 64 << 10, ..ReceiverConfig::default() };
    /// let receiver = Receiver::bind_with("127.0.0.1:0".parse()?, config)?;
    /// # #[cfg(target_os = "linux")]
    /// assert_eq!(receiver.recv_buffer(), Some(64 << 10)); // below any cap
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn recv_buffer(&self) -> Option<usize> {
        match &self.source {
            Source::Udp(socket) => granted_buffer(SockRef::from(socket)),
            Source::Feed { .. } => None,
        }
    }

    /// A handle that stops [`Receiver::run`] from another thread (see
    /// [`Stopper`]).
    pub fn stopper(&self) -> Stopper {
        self.stop.clone()
    }

    /// Live counters, readable while [`Receiver::run`] runs.
    pub fn progress(&self) -> Arc<Progress> {
        self.core.progress()
    }

    /// Receives until `limit` (or the [`Stopper`]) says stop, handing every
    /// record to `out`. Returns the account. (The example is
    /// [`Receiver`]'s.)
    ///
    /// # Errors
    ///
    /// [`IoError`] when receiving from the socket fails.
    pub fn run_with(
        &mut self,
        limit: RunLimit,
        out: &mut dyn FnMut(&Event),
    ) -> Result<ReceiverSummary, IoError> {
        self.run_into(limit, &mut EachEvent(out))
    }

    /// Receives until `limit` (or the [`Stopper`]) says stop, handing every
    /// record to `out` with the stream it comes from
    /// ([`StreamSink::stream`] before each batch). Returns the account. For
    /// writers that keep streams apart, such as the command's Parquet store
    /// (crate qtrace-store).
    ///
    /// # Errors
    ///
    /// [`IoError`] when receiving from the socket fails.
    pub fn run_streams<S: StreamSink + ?Sized>(
        &mut self,
        limit: RunLimit,
        out: &mut S,
    ) -> Result<ReceiverSummary, IoError> {
        self.run_into(limit, &mut Streams(out))
    }

    fn run_into(
        &mut self,
        limit: RunLimit,
        out: &mut dyn Sink,
    ) -> Result<ReceiverSummary, IoError> {
        let start = Instant::now();
        let mut batch = Batch::new();
        // When the event count is reached: until every sender's close
        // datagram is in, for at most CLOSE_GRACE (a sender closes right
        // after its last events; one that does not is marked unclosed).
        let mut counted_at: Option<Instant> = None;
        loop {
            if self.stop.0.load(Ordering::Acquire) {
                break;
            }
            if limit.duration.is_some_and(|d| start.elapsed() >= d) {
                break;
            }
            if limit
                .events
                .is_some_and(|n| self.core.progress.accounted() >= n)
            {
                let since = *counted_at.get_or_insert_with(Instant::now);
                if self.core.all_closed() || since.elapsed() >= CLOSE_GRACE {
                    break;
                }
            }
            let socket = match &mut self.source {
                Source::Udp(socket) => socket,
                Source::Feed { addr, feed } => {
                    let (core, addr) = (&mut self.core, *addr);
                    let mut more = true;
                    let got = feed(&mut |bytes: &[u8]| {
                        if more {
                            core.handle_into(addr, bytes, out);
                            more = out.tick(core.header_generation(), &|| core.trace_header());
                        }
                    });
                    let idle = match got {
                        Ok(got) => !got,
                        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
                        Err(e) => {
                            return Err(IoError {
                                path: None,
                                action: "read the byte stream",
                                source: e,
                            })
                        }
                    };
                    if idle {
                        more = out.tick(core.header_generation(), &|| core.trace_header());
                    }
                    if !more {
                        break;
                    }
                    if self.core.progress.summary_wanted() {
                        self.publish_summary(start);
                    }
                    self.save_sessions(false);
                    continue;
                }
            };
            let idle = match batch.recv(socket) {
                Ok(_) => false,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                            | io::ErrorKind::ConnectionRefused
                            | io::ErrorKind::ConnectionReset
                    ) =>
                {
                    true
                }
                Err(e) => {
                    return Err(IoError {
                        path: None,
                        action: "receive datagrams",
                        source: e,
                    })
                }
            };
            // A tick after every datagram and every idle wait. When the
            // sink cannot take more, the rest of the batch is not handled:
            // never counted, as datagrams left unread in the socket.
            let mut more = true;
            for (from, bytes, at) in batch.datagrams() {
                if let Some(at) = at {
                    out.arrival(at);
                }
                self.core.handle_into(from, bytes, out);
                more = out.tick(self.core.header_generation(), &|| self.core.trace_header());
                if !more {
                    break;
                }
            }
            if idle {
                more = out.tick(self.core.header_generation(), &|| self.core.trace_header());
            }
            if !more {
                break;
            }
            if self.core.progress.summary_wanted() {
                self.publish_summary(start);
            }
            self.save_sessions(false);
        }
        self.core.finish_into(out);
        out.tick(self.core.header_generation(), &|| self.core.trace_header());
        self.save_sessions(true);
        let mut summary = self.core.summary();
        summary.elapsed = start.elapsed();
        summary.sessions_error = self.sessions.as_ref().and_then(|f| f.error.clone());
        self.core.progress.publish(summary.clone());
        Ok(summary)
    }

    /// Publishes the account a watcher asked for ([`Progress::summary`]).
    #[cold]
    #[inline(never)]
    fn publish_summary(&self, start: Instant) {
        let mut summary = self.core.summary();
        summary.elapsed = start.elapsed();
        self.core.progress.publish(summary);
    }

    /// Receives until `limit` (or the [`Stopper`]) says stop, writing what
    /// arrives to the trace file `path` as it arrives, then returns the
    /// account.
    ///
    /// The file is a valid trace at every moment: it starts with a
    /// provisional header whose length reserves
    /// [`ReceiverConfig::header_room`] bytes; the sender's header (its pid,
    /// clock, host, queue and classes) replaces it in place, in one write,
    /// when its catalog arrives (or the file is rewritten to a copy renamed
    /// over it when the header does not fit). Records are written in whole
    /// records at least every 50 ms, so after a crash of the receiver (even
    /// SIGKILL) the file reads as a trace of every record written, cut
    /// short. On Linux 256 KiB stay allocated past the end of the file, so
    /// a full disk is seen before a write fails and the end still fits.
    ///
    /// A file already at `path` is never overwritten: it is moved aside to
    /// `<stem>-previous.<ext>` (or `-previous-2`, …), unless another process
    /// is writing it (it holds the file's lock: `flock`), and then this
    /// fails. If the file is deleted or replaced while written, it is
    /// re-created with a hoops record for the events that went with it
    /// ([`ReceiverSummary::files_replaced`]).
    ///
    /// A full disk or another write error stops the receiver early: the
    /// file keeps every whole record written, and the summary says why
    /// ([`ReceiverSummary::file_error`]); this is not an `Err`, so the
    /// account is never lost.
    ///
    /// ```
    /// use std::net::UdpSocket;
    /// use std::time::Duration;
    /// use qtrace::classes::system;
    /// use qtrace::reader::TraceReader;
    /// use qtrace::receiver::{Receiver, RunLimit};
    /// # use qtrace::Event;
    /// # use qtrace_core::encode::datagram::{DatagramHeader, DatagramKind};
    /// # /// An events datagram of sender 7 (FORMAT.md 3): the header, the records.
    /// # fn datagram(sequence: u64, first_event: u64, events: &[Event]) -> Vec<u8> {
    /// #     let header = DatagramHeader { kind: DatagramKind::Events, sender: 7, sequence, dropped: 0, first_event };
    /// #     let mut head = [0u8; 40];
    /// #     header.emit(events.len() as u16, &mut head);
    /// #     let mut bytes = head.to_vec();
    /// #     for e in events {
    /// #         let mut record = [0u8; 32];
    /// #         qtrace_core::encode::record::emit(e, &mut record);
    /// #         bytes.extend_from_slice(&record);
    /// #     }
    /// #     bytes
    /// # }
    /// let path = std::env::temp_dir().join(format!("qtrace-recv-doc-{}.qtr", std::process::id()));
    /// let receiver = Receiver::bind("127.0.0.1:0".parse()?)?;
    /// let socket = UdpSocket::bind("127.0.0.1:0")?;
    /// let e = Event::new(1, system::SCHEDULE, 0, [1, 0]);
    /// socket.send_to(&datagram(0, 0, &[e, e]), receiver.local_addr())?;
    ///
    /// let limit = RunLimit::events(2).or_after(Duration::from_secs(10));
    /// let summary = receiver.run(&path, limit)?;
    /// assert_eq!((summary.events(), summary.records_written), (2, 3)); // + the unclosed mark
    /// let events: Vec<Event> = TraceReader::open(&path)?.collect::<Result<_, _>>()?;
    /// assert_eq!(&events[..2], [e, e]);
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`IoError`] when the file cannot be created or the socket fails.
    pub fn run(
        mut self,
        path: impl AsRef<Path>,
        limit: RunLimit,
    ) -> Result<ReceiverSummary, IoError> {
        let path = path.as_ref();
        let header = self
            .core
            .trace_header()
            .with_compact(self.core.config.compact_file);
        let live = LiveFile::create(path, &header, self.core.config.header_room)?;
        let mut out = FileSink {
            file: live,
            header_gen: self.core.header_generation(),
        };
        let mut summary = self.run_into(limit, &mut out)?;
        let FileSink { file: mut live, .. } = out;
        let received = summary.events();
        live.settle();
        // Events written to a file deleted under the receiver went with it:
        // overwritten, not delivered (as the online queue counts them).
        let gone = live.events_lost_with_file().min(received);
        let totals = QueueTotals {
            accepted: received,
            dropped: live.lost(),
            overwritten: gone,
            delivered: received - gone,
        };
        live.finish(self.core.last_time(), totals);
        summary.records_written = live.records_written();
        summary.records_lost_with_file = live.records_lost_with_file();
        summary.files_replaced = live.files_replaced();
        summary.file_error = live.failure().map(str::to_string);
        summary.file = Some(path.to_path_buf());
        Ok(summary)
    }
}

/// The receive buffer the kernel granted `socket` (on Linux half of what
/// `SO_RCVBUF` reads back: the kernel doubles the size asked for).
fn granted_buffer(socket: SockRef<'_>) -> Option<usize> {
    let n = socket.recv_buffer_size().ok()?;
    Some(if cfg!(target_os = "linux") { n / 2 } else { n })
}

/// What to do about a failed bind, by error: placed after the address and
/// the system's message.
pub(super) fn bind_hint(e: &io::Error) -> &'static str {
    match e.kind() {
        io::ErrorKind::AddrInUse => {
            " (address in use: is another receiver running there? pick another port)"
        }
        io::ErrorKind::AddrNotAvailable => {
            " (address not available: that IP address is not one of this machine's; \
             listen on one of its addresses, 0.0.0.0 or [::])"
        }
        io::ErrorKind::PermissionDenied => {
            " (permission denied: ports below 1024 need privileges; pick a port of 1024 or more)"
        }
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    /// A watcher asking [`Progress::summary`] while the receiver runs gets
    /// the per-sender account of what arrived so far, and the final one at
    /// the end.
    #[test]
    fn a_watcher_gets_the_account_while_the_receiver_runs() {
        use crate::classes::system;
        use qtrace_core::encode::datagram::{DatagramHeader, DatagramKind};
        let mut receiver = Receiver::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let to = receiver.local_addr();
        let progress = receiver.progress();
        let stop = receiver.stopper();
        let e = Event::new(1, system::SCHEDULE, 0, [1, 0]);
        let header = DatagramHeader {
            kind: DatagramKind::Events,
            sender: 9,
            sequence: 0,
            dropped: 0,
            first_event: 0,
        };
        let mut bytes = [0u8; 40];
        header.emit(3, &mut bytes);
        let mut bytes = bytes.to_vec();
        for _ in 0..3 {
            let mut rec = [0u8; 32];
            qtrace_core::encode::record::emit(&e, &mut rec);
            bytes.extend_from_slice(&rec);
        }
        let watcher = std::thread::spawn(move || {
            assert_eq!(progress.summary(), None); // nothing published yet
            let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
            socket.send_to(&bytes, to).unwrap();
            let deadline = Instant::now() + Duration::from_secs(10);
            let seen = loop {
                if let Some(s) = progress.summary() {
                    if s.events() == 3 {
                        break s;
                    }
                }
                assert!(Instant::now() < deadline, "no account with 3 events");
                std::thread::sleep(Duration::from_millis(5));
            };
            stop.stop();
            seen
        });
        let summary = receiver
            .run_with(RunLimit::duration(Duration::from_secs(20)), &mut |_| {})
            .unwrap();
        let seen = watcher.join().unwrap();
        assert_eq!(seen.senders.len(), 1);
        let s = &seen.senders[0];
        assert_eq!((s.sender, s.events, s.closed), (9, 3, false));
        assert_eq!(summary.senders[0].events, 3);
        // The final account is published too.
        assert_eq!(receiver.progress().summary(), Some(summary));
    }

    #[test]
    fn each_bind_error_has_its_own_hint() {
        let hint = |kind| bind_hint(&io::Error::from(kind));
        assert_eq!(
            hint(io::ErrorKind::AddrInUse),
            " (address in use: is another receiver running there? pick another port)"
        );
        assert_eq!(
            hint(io::ErrorKind::AddrNotAvailable),
            " (address not available: that IP address is not one of this machine's; \
             listen on one of its addresses, 0.0.0.0 or [::])"
        );
        assert!(hint(io::ErrorKind::PermissionDenied).contains("ports below 1024"));
        assert_eq!(hint(io::ErrorKind::Other), "");
    }
}
