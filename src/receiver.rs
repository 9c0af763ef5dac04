//! The receiver (S.Ha.R.K.'s `udpdump`): takes the UDP queue's datagrams from
//! any number of senders and writes them to a trace file.
//!
//! - **Per sender** (a source address and the sender id in the datagram), it
//!   detects lost datagrams (sequence gaps), duplicates and reordering within
//!   a window of [`sequence::WINDOW`] datagrams ([`sequence`]), reassembles the
//!   sender's trace header from its catalog datagrams (so user-defined events
//!   keep their names) and turns the sender's cumulative drop count into
//!   hoops records.
//! - **Untrusted input**: datagrams that are not qtrace datagrams, are
//!   truncated, come from a newer format version or fail validation are
//!   counted and skipped; nothing panics.
//! - **Bounded memory**: at most [`ReceiverConfig::max_senders`] senders are
//!   tracked at once; a new sender takes the place of one that has been quiet
//!   for [`ReceiverConfig::idle_datagrams`] datagrams (its account is kept,
//!   up to [`MAX_RETIRED`] of them), otherwise its datagrams are counted and
//!   skipped. Each tracked sender has a
//!   fixed-size sequence window and a catalog of at most
//!   [`ReceiverConfig::max_catalog_len`] bytes; received records go straight
//!   to disk.
//!
//! # Hoops records in the received trace
//!
//! - *Sender drops*: when a datagram reports more drops than any before it
//!   from its sender, a hoops record with the difference (`args = [lost,
//!   queue]`, the sender's queue handle from its header, or `0xffff` if not yet
//!   known) follows that datagram's events: the UDP queue reports drops in
//!   the datagram that carries the last event queued before them, so the
//!   record is never placed before an event that preceded the loss.
//! - *Lost datagrams*: a datagram is lost for good when it has not arrived by
//!   the time the sender is [`sequence::WINDOW`] datagrams further (or when the
//!   receiver stops). The datagram header does not say how many events a
//!   datagram held, so the hoops record for lost datagrams carries an upper
//!   bound (`lost datagrams × the most records one of the sender's datagrams
//!   held`) and has flag bit [`HOOPS_FLAG_UPPER_BOUND`] set; the summary
//!   counts the lost datagrams exactly.
//!
//! ```no_run
//! use qtrace::receiver::{Receiver, RunLimit};
//! use std::time::Duration;
//!
//! let receiver = Receiver::bind("127.0.0.1:5510".parse().unwrap())?;
//! let summary = receiver.run("received.qtr", RunLimit::duration(Duration::from_secs(10)))?;
//! println!("{summary}");
//! # Ok::<(), qtrace::Error>(())
//! ```

pub mod sequence;

use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use crate::classes::{tracer::HOOPS, Catalog};
use crate::clock::Clock;
use crate::error::Error;
use crate::event::Event;
use crate::wire::datagram::{
    CatalogAssembler, DatagramKind, DatagramView, HEADER_LEN, MAX_DATAGRAM_LEN,
};
use crate::wire::header::NO_QUEUE;
use crate::wire::record::{self, RECORD_LEN};
use crate::wire::{TraceHeader, WireError};
use sequence::{SequenceTracker, Verdict};

/// The port `qtrace recv` listens on and the UDP queue sends to by default.
pub const DEFAULT_PORT: u16 = 5510;

/// The address `qtrace recv` listens on by default: loopback only.
pub fn default_listen_addr() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], DEFAULT_PORT))
}

/// Flag bit of a hoops record written for lost datagrams: its count is an
/// upper bound (the datagrams' record counts are unknown).
pub const HOOPS_FLAG_UPPER_BOUND: u16 = 0x0001;

/// Limits that bound the receiver's memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReceiverConfig {
    /// Senders tracked at once (16). Datagrams from further senders are
    /// counted in [`InvalidCounts::too_many_senders`] and skipped.
    pub max_senders: usize,
    /// The largest sender header (catalog) accepted, in bytes (1 MiB).
    pub max_catalog_len: usize,
    /// The socket receive buffer asked for (8 MiB; the kernel may cap it).
    pub recv_buffer: usize,
    /// When every sender slot is taken, a new sender replaces the one quiet
    /// longest, if it has sent nothing during this many datagrams (100,000).
    pub idle_datagrams: u64,
}

/// Accounts of replaced senders kept for the summary; beyond this many,
/// replaced senders are only counted ([`ReceiverSummary::retired_uncounted`]).
pub const MAX_RETIRED: usize = 1024;

impl Default for ReceiverConfig {
    fn default() -> Self {
        ReceiverConfig {
            max_senders: 16,
            max_catalog_len: 1 << 20,
            recv_buffer: 8 << 20,
            idle_datagrams: 100_000,
        }
    }
}

/// Datagrams that were skipped before they could be tied to a sender's
/// stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InvalidCounts {
    /// Not a qtrace datagram (wrong magic).
    pub not_qtrace: u64,
    /// Shorter than their header or count says.
    pub truncated: u64,
    /// From a format version this receiver does not read.
    pub unsupported_version: u64,
    /// Any other validation failure (bad kind, bad lengths, bad fragment).
    pub malformed: u64,
    /// From a sender beyond [`ReceiverConfig::max_senders`] while no tracked
    /// sender was idle long enough to be replaced.
    pub too_many_senders: u64,
}

impl InvalidCounts {
    /// All skipped datagrams.
    pub fn total(&self) -> u64 {
        self.not_qtrace
            + self.truncated
            + self.unsupported_version
            + self.malformed
            + self.too_many_senders
    }
}

/// What the receiver saw from one sender.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SenderSummary {
    /// Where its datagrams came from.
    pub addr: SocketAddr,
    /// The sender id in its datagrams.
    pub sender: u32,
    /// Its queue handle and type, from its header, once received.
    pub queue: Option<(u16, String)>,
    /// Datagrams accepted (events and catalog).
    pub datagrams: u64,
    /// Event records received and written.
    pub events: u64,
    /// Datagrams never received (sequence numbers skipped and not filled in).
    pub lost_datagrams: u64,
    /// Datagrams received twice (discarded).
    pub duplicates: u64,
    /// Datagrams that arrived after a later one (accepted).
    pub reordered: u64,
    /// Datagrams too old to place or with an impossible sequence number, and
    /// catalog datagrams that did not decode (discarded).
    pub invalid: u64,
    /// Events the sender reported it dropped (its queue was full).
    pub sender_dropped: u64,
    /// Whether its header (clock, host, class table) arrived.
    pub has_catalog: bool,
}

impl SenderSummary {
    /// Events lost on the sender's side, exactly (datagram losses are
    /// counted separately, in `lost_datagrams`).
    pub fn accounted(&self) -> u64 {
        // Drop counts come from the network: saturate rather than overflow.
        self.events.saturating_add(self.sender_dropped)
    }
}

/// The receiver's account.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReceiverSummary {
    /// One entry per sender: replaced senders first, then the tracked ones,
    /// each in order of first appearance.
    pub senders: Vec<SenderSummary>,
    /// Replaced senders whose accounts did not fit ([`MAX_RETIRED`]).
    pub retired_uncounted: u64,
    /// Datagrams skipped before reaching a sender's stream.
    pub invalid: InvalidCounts,
    /// Records written to the trace file (events and hoops).
    pub records_written: u64,
    /// The trace file, if one was written.
    pub file: Option<PathBuf>,
    /// How long the receiver ran.
    pub elapsed: Duration,
}

impl ReceiverSummary {
    /// Events received from every sender.
    pub fn events(&self) -> u64 {
        self.senders
            .iter()
            .fold(0u64, |n, s| n.saturating_add(s.events))
    }
    /// Events every sender reported dropped.
    pub fn sender_dropped(&self) -> u64 {
        self.senders
            .iter()
            .fold(0u64, |n, s| n.saturating_add(s.sender_dropped))
    }
    /// Datagrams lost on the way, all senders.
    pub fn lost_datagrams(&self) -> u64 {
        self.senders
            .iter()
            .fold(0u64, |n, s| n.saturating_add(s.lost_datagrams))
    }
}

impl fmt::Display for ReceiverSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.elapsed.as_secs_f64();
        writeln!(
            f,
            "received {} events from {} sender(s) in {:.3} s ({:.0} events/s)",
            self.events(),
            self.senders.len(),
            secs,
            if secs > 0.0 {
                self.events() as f64 / secs
            } else {
                0.0
            }
        )?;
        for s in &self.senders {
            let queue = match &s.queue {
                Some((h, t)) => format!("queue {h} ({t})"),
                None => "queue unknown (no header yet)".to_string(),
            };
            writeln!(
                f,
                "  sender {:#010x} at {}, {}: {} datagrams, {} events, {} dropped by the sender, \
                 {} datagrams lost, {} duplicates, {} reordered, {} invalid",
                s.sender,
                s.addr,
                queue,
                s.datagrams,
                s.events,
                s.sender_dropped,
                s.lost_datagrams,
                s.duplicates,
                s.reordered,
                s.invalid
            )?;
        }
        if self.retired_uncounted > 0 {
            writeln!(
                f,
                "  {} more replaced senders (accounts not kept)",
                self.retired_uncounted
            )?;
        }
        let i = &self.invalid;
        write!(
            f,
            "  skipped datagrams: {} not qtrace, {} truncated, {} unsupported version, {} malformed, {} from too many senders",
            i.not_qtrace, i.truncated, i.unsupported_version, i.malformed, i.too_many_senders
        )?;
        if let Some(p) = &self.file {
            write!(
                f,
                "\n  wrote {} records to {}",
                self.records_written,
                p.display()
            )?;
        }
        Ok(())
    }
}

/// One sender's state.
#[derive(Debug)]
struct SenderState {
    addr: SocketAddr,
    sender: u32,
    seq: SequenceTracker,
    assembler: CatalogAssembler,
    header: Option<TraceHeader>,
    datagrams: u64,
    events: u64,
    invalid: u64,
    dropped: u64,
    /// Lost-for-good datagrams already written as hoops.
    lost_written: u64,
    max_records: u64,
    last_time: u64,
    /// The core's datagram count at this sender's last datagram.
    last_seen: u64,
}

impl SenderState {
    fn queue_handle(&self) -> u64 {
        self.header
            .as_ref()
            .and_then(|h| h.queue())
            .map_or(NO_QUEUE as u64, |(q, _)| q.0 as u64)
    }

    fn hoops(&self, lost: u64, flags: u16) -> Event {
        let mut e = Event::new(self.last_time, HOOPS, u32::MAX, [lost, self.queue_handle()]);
        e.flags = flags;
        e
    }

    /// A hoops record for datagrams lost for good since the last one.
    fn lost_hoops(&mut self, all_missing: bool) -> Option<Event> {
        let lost = if all_missing {
            self.seq.lost()
        } else {
            self.seq.lost_for_good()
        };
        let new = lost.saturating_sub(self.lost_written);
        if new == 0 {
            return None;
        }
        self.lost_written = lost;
        let per = if self.max_records == 0 {
            crate::wire::datagram::records_per_datagram(
                crate::wire::datagram::DEFAULT_MAX_DATAGRAM_LEN,
            ) as u64
        } else {
            self.max_records
        };
        Some(self.hoops(new.saturating_mul(per), HOOPS_FLAG_UPPER_BOUND))
    }

    fn summary(&self) -> SenderSummary {
        let c = self.seq.counts();
        SenderSummary {
            addr: self.addr,
            sender: self.sender,
            queue: self
                .header
                .as_ref()
                .and_then(|h| h.queue())
                .map(|(q, t)| (q.0, t.to_string())),
            datagrams: self.datagrams,
            events: self.events,
            lost_datagrams: self.seq.lost(),
            duplicates: c.duplicates,
            reordered: c.reordered,
            invalid: self.invalid + c.too_late + c.implausible,
            sender_dropped: self.dropped,
            has_catalog: self.header.is_some(),
        }
    }
}

/// Live counters of a running receiver, readable from other threads (for
/// progress displays and flow control in tests).
#[derive(Debug, Default)]
pub struct Progress {
    datagrams: AtomicU64,
    events: AtomicU64,
    sender_dropped: AtomicU64,
    invalid: AtomicU64,
}

impl Progress {
    /// Datagrams accepted so far.
    pub fn datagrams(&self) -> u64 {
        self.datagrams.load(Ordering::Relaxed)
    }
    /// Events received so far.
    pub fn events(&self) -> u64 {
        self.events.load(Ordering::Relaxed)
    }
    /// Events the senders reported dropped so far.
    pub fn sender_dropped(&self) -> u64 {
        self.sender_dropped.load(Ordering::Relaxed)
    }
    /// Datagrams skipped so far (invalid, duplicate, too late, too many
    /// senders).
    pub fn invalid(&self) -> u64 {
        self.invalid.load(Ordering::Relaxed)
    }
}

/// Where the core's records go: decoded events, or raw big-endian records
/// straight from a datagram (so a file writer copies them without decoding).
trait Sink {
    fn event(&mut self, e: &Event);
    fn records(&mut self, raw: &[u8]);
}

/// A sink that hands every record to a closure as an [`Event`].
struct EachEvent<'a>(&'a mut dyn FnMut(&Event));

impl Sink for EachEvent<'_> {
    fn event(&mut self, e: &Event) {
        (self.0)(e)
    }
    fn records(&mut self, raw: &[u8]) {
        for c in raw.chunks_exact(RECORD_LEN) {
            if let Ok(rec) = <&[u8; RECORD_LEN]>::try_from(c) {
                (self.0)(&record::parse(rec));
            }
        }
    }
}

/// The receiver's logic without a socket: feed it datagrams with
/// [`ReceiverCore::handle`], collect the records it hands out.
#[derive(Debug)]
pub struct ReceiverCore {
    config: ReceiverConfig,
    senders: Vec<SenderState>,
    retired: Vec<SenderSummary>,
    retired_uncounted: u64,
    /// The first sender header that arrived, for the received file.
    first_header: Option<TraceHeader>,
    /// Senders seen so far (tracked, replaced and uncounted).
    senders_seen: u64,
    /// Datagrams handled (a logical clock for idleness).
    clock: u64,
    invalid: InvalidCounts,
    progress: Arc<Progress>,
}

impl ReceiverCore {
    /// A receiver core with `config`'s limits.
    pub fn new(config: ReceiverConfig) -> Self {
        ReceiverCore {
            config,
            senders: Vec::new(),
            retired: Vec::new(),
            retired_uncounted: 0,
            first_header: None,
            senders_seen: 0,
            clock: 0,
            invalid: InvalidCounts::default(),
            progress: Arc::default(),
        }
    }

    /// The live counters.
    pub fn progress(&self) -> Arc<Progress> {
        Arc::clone(&self.progress)
    }

    /// Handles one datagram from `from`; every record to write (events, and
    /// hoops records where losses are detected) goes to `out`, in order.
    pub fn handle(&mut self, from: SocketAddr, bytes: &[u8], out: &mut dyn FnMut(&Event)) {
        self.handle_into(from, bytes, &mut EachEvent(out))
    }

    fn handle_into(&mut self, from: SocketAddr, bytes: &[u8], out: &mut dyn Sink) {
        self.clock += 1;
        let view = match DatagramView::new_checked(bytes) {
            Ok(v) => v,
            Err(e) => {
                match e {
                    WireError::BadMagic { .. } => self.invalid.not_qtrace += 1,
                    WireError::Truncated { .. } => self.invalid.truncated += 1,
                    WireError::UnsupportedVersion { .. } => self.invalid.unsupported_version += 1,
                    _ => self.invalid.malformed += 1,
                }
                self.progress.invalid.fetch_add(1, Ordering::Relaxed);
                return;
            }
        };
        let header = view.header();
        let index = match self
            .senders
            .iter()
            .position(|s| s.sender == header.sender && s.addr == from)
        {
            Some(i) => i,
            None => {
                let fresh = SenderState {
                    addr: from,
                    sender: header.sender,
                    seq: SequenceTracker::new(),
                    assembler: CatalogAssembler::new(),
                    header: None,
                    datagrams: 0,
                    events: 0,
                    invalid: 0,
                    dropped: 0,
                    lost_written: 0,
                    max_records: 0,
                    last_time: 0,
                    last_seen: self.clock,
                };
                if self.senders.len() < self.config.max_senders {
                    self.senders_seen += 1;
                    self.senders.push(fresh);
                    self.senders.len() - 1
                } else {
                    let quietest = self
                        .senders
                        .iter()
                        .enumerate()
                        .min_by_key(|(_, s)| s.last_seen)
                        .map(|(i, s)| (i, s.last_seen));
                    match quietest {
                        Some((i, seen)) if self.clock - seen > self.config.idle_datagrams => {
                            self.senders_seen += 1;
                            // Keep the tracked senders in order of arrival.
                            let mut old = self.senders.remove(i);
                            self.senders.push(fresh);
                            if let Some(h) = old.lost_hoops(true) {
                                out.event(&h);
                            }
                            if self.retired.len() < MAX_RETIRED {
                                self.retired.push(old.summary());
                            } else {
                                self.retired_uncounted += 1;
                            }
                            self.senders.len() - 1
                        }
                        _ => {
                            self.invalid.too_many_senders += 1;
                            self.progress.invalid.fetch_add(1, Ordering::Relaxed);
                            return;
                        }
                    }
                }
            }
        };
        let max_catalog = self.config.max_catalog_len;
        let s = &mut self.senders[index];
        s.last_seen = self.clock;
        let verdict = s.seq.observe(header.sequence);
        if !verdict.accepted() {
            self.progress.invalid.fetch_add(1, Ordering::Relaxed);
            return;
        }
        s.datagrams += 1;
        self.progress.datagrams.fetch_add(1, Ordering::Relaxed);
        match header.kind {
            DatagramKind::Events => {
                let n = view.record_count() as u64;
                s.max_records = s.max_records.max(n);
                // The view checked the length: exactly `n` records follow
                // the header. They go on as they are (big-endian records).
                let raw = bytes.get(HEADER_LEN..).unwrap_or_default();
                for c in raw.chunks_exact(RECORD_LEN) {
                    let mut t = [0u8; 8];
                    t.copy_from_slice(&c[..8]);
                    s.last_time = s.last_time.max(u64::from_be_bytes(t));
                }
                out.records(raw);
                s.events += n;
                self.progress.events.fetch_add(n, Ordering::Relaxed);
            }
            DatagramKind::Catalog => {
                if let Some(fragment) = view.fragment() {
                    if fragment.total_len as usize > max_catalog {
                        s.invalid += 1;
                    } else {
                        match s.assembler.push(&fragment) {
                            Ok(Some(h)) => {
                                if self.first_header.is_none() {
                                    self.first_header = Some(h.clone());
                                }
                                s.header = Some(h);
                            }
                            Ok(None) => {}
                            Err(_) => s.invalid += 1,
                        }
                    }
                }
            }
        }
        if header.dropped > s.dropped {
            let new = header.dropped - s.dropped;
            s.dropped = header.dropped;
            // Saturating, as the summary: the count comes from the network.
            // `handle` takes `&mut self`: this is the counter's only writer.
            let p = &self.progress.sender_dropped;
            p.store(
                p.load(Ordering::Relaxed).saturating_add(new),
                Ordering::Relaxed,
            );
            out.event(&s.hoops(new, 0));
        }
        if matches!(verdict, Verdict::InOrder { .. }) {
            if let Some(h) = s.lost_hoops(false) {
                out.event(&h);
            }
        }
    }

    /// Ends every sender's stream: datagrams still missing are lost (their
    /// hoops records go to `out`).
    pub fn finish(&mut self, out: &mut dyn FnMut(&Event)) {
        self.finish_into(&mut EachEvent(out))
    }

    fn finish_into(&mut self, out: &mut dyn Sink) {
        for s in &mut self.senders {
            if let Some(h) = s.lost_hoops(true) {
                out.event(&h);
            }
        }
    }

    /// The account so far.
    pub fn summary(&self) -> ReceiverSummary {
        ReceiverSummary {
            senders: self
                .retired
                .iter()
                .cloned()
                .chain(self.senders.iter().map(SenderState::summary))
                .collect(),
            retired_uncounted: self.retired_uncounted,
            invalid: self.invalid,
            ..ReceiverSummary::default()
        }
    }

    /// The header for the received trace: the first sender's (its clock and
    /// class table), or the built-in classes when no header arrived.
    pub fn trace_header(&self) -> TraceHeader {
        match &self.first_header {
            Some(h) if self.senders_seen == 1 => h.clone(),
            Some(h) => h.clone().without_queue(),
            None => TraceHeader::new(Catalog::builtin(), &Clock::monotonic()).without_queue(),
        }
    }
}

/// When [`Receiver::run`] stops. With no limit at all it runs until
/// [`Stopper::stop`] is called.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunLimit {
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Stop once this many events have been received.
    pub events: Option<u64>,
}

impl RunLimit {
    /// Run for `d`.
    pub fn duration(d: Duration) -> Self {
        RunLimit {
            duration: Some(d),
            events: None,
        }
    }
    /// Run until `n` events have arrived.
    pub fn events(n: u64) -> Self {
        RunLimit {
            duration: None,
            events: Some(n),
        }
    }
    /// Also stop after `d`.
    pub fn or_after(mut self, d: Duration) -> Self {
        self.duration = Some(d);
        self
    }
}

/// Stops a running [`Receiver`] from another thread.
#[derive(Clone, Debug, Default)]
pub struct Stopper(Arc<AtomicBool>);

impl Stopper {
    /// Asks the receiver to stop (within about 20 ms); it then writes its
    /// file and returns its summary.
    pub fn stop(&self) {
        self.0.store(true, Ordering::Release);
    }
}

/// A bound UDP socket and a [`ReceiverCore`].
#[derive(Debug)]
pub struct Receiver {
    socket: UdpSocket,
    core: ReceiverCore,
    stop: Stopper,
}

impl Receiver {
    /// Binds to `addr` with the default limits. Port 0 lets the system choose
    /// (see [`Receiver::local_addr`]).
    pub fn bind(addr: SocketAddr) -> Result<Self, Error> {
        Receiver::bind_with(addr, ReceiverConfig::default())
    }

    /// Binds to `addr` with `config`'s limits.
    pub fn bind_with(addr: SocketAddr, config: ReceiverConfig) -> Result<Self, Error> {
        let io_err = |action: &'static str, e: io::Error| Error::Io {
            path: None,
            action,
            source: io::Error::new(e.kind(), format!("{addr}: {e}")),
        };
        let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
            .map_err(|e| io_err("open a UDP socket to receive on", e))?;
        if addr.is_ipv6() {
            let _ = socket.set_only_v6(true);
        }
        let _ = socket.set_recv_buffer_size(config.recv_buffer);
        socket
            .bind(&SockAddr::from(addr))
            .map_err(|e| io_err("bind the receiver to (is another receiver running there? pick another --listen address)", e))?;
        let socket: UdpSocket = socket.into();
        socket
            .set_read_timeout(Some(Duration::from_millis(20)))
            .map_err(|e| io_err("configure the receiver socket", e))?;
        Ok(Receiver {
            socket,
            core: ReceiverCore::new(config),
            stop: Stopper::default(),
        })
    }

    /// The address the receiver listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.socket
            .local_addr()
            .expect("a bound socket has an address")
    }

    /// A handle that stops [`Receiver::run`] from another thread.
    pub fn stopper(&self) -> Stopper {
        self.stop.clone()
    }

    /// Live counters, readable while [`Receiver::run`] runs.
    pub fn progress(&self) -> Arc<Progress> {
        self.core.progress()
    }

    /// Receives until `limit` (or the [`Stopper`]) says stop, handing every
    /// record to `out`. Returns the account.
    pub fn run_with(
        &mut self,
        limit: RunLimit,
        out: &mut dyn FnMut(&Event),
    ) -> Result<ReceiverSummary, Error> {
        self.run_into(limit, &mut EachEvent(out))
    }

    fn run_into(&mut self, limit: RunLimit, out: &mut dyn Sink) -> Result<ReceiverSummary, Error> {
        let start = Instant::now();
        let mut buf = vec![0u8; MAX_DATAGRAM_LEN + 1];
        loop {
            if self.stop.0.load(Ordering::Acquire) {
                break;
            }
            if limit.duration.is_some_and(|d| start.elapsed() >= d) {
                break;
            }
            if limit
                .events
                .is_some_and(|n| self.core.progress.events() >= n)
            {
                break;
            }
            match self.socket.recv_from(&mut buf) {
                Ok((n, from)) => self.core.handle_into(from, &buf[..n], out),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                            | io::ErrorKind::ConnectionRefused
                            | io::ErrorKind::ConnectionReset
                    ) => {}
                Err(e) => {
                    return Err(Error::Io {
                        path: None,
                        action: "receive datagrams",
                        source: e,
                    })
                }
            }
        }
        self.core.finish_into(out);
        let mut summary = self.core.summary();
        summary.elapsed = start.elapsed();
        Ok(summary)
    }

    /// Receives until `limit` (or the [`Stopper`]) says stop and writes what
    /// arrived to the trace file `path` (with the first sender's header), then
    /// returns the account. Records are spooled to `<path>.part` while
    /// receiving, so memory stays bounded.
    pub fn run(
        mut self,
        path: impl AsRef<Path>,
        limit: RunLimit,
    ) -> Result<ReceiverSummary, Error> {
        let path = path.as_ref();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::io("create the directory of trace file", path, e))?;
        }
        let mut part_name = path.as_os_str().to_owned();
        part_name.push(".part");
        let part = PathBuf::from(part_name);
        let file = File::create(&part).map_err(|e| Error::io("create spool file", &part, e))?;
        let mut out = Spool {
            file: BufWriter::with_capacity(1 << 16, file),
            records: 0,
            failure: None,
        };
        let mut summary = self.run_into(limit, &mut out)?;
        let Spool {
            file: mut spool,
            records,
            failure,
        } = out;
        if let Some(e) = failure {
            return Err(Error::io("write spool file", &part, e));
        }
        spool
            .flush()
            .map_err(|e| Error::io("write spool file", &part, e))?;
        drop(spool);
        let header = self.core.trace_header();
        let mut w = crate::wire::create_trace_file(path, &header)?;
        let mut src = File::open(&part).map_err(|e| Error::io("read spool file", &part, e))?;
        let mut chunk = vec![0u8; 1 << 16];
        loop {
            let n = src
                .read(&mut chunk)
                .map_err(|e| Error::io("read spool file", &part, e))?;
            if n == 0 {
                break;
            }
            w.get_mut()
                .write_all(&chunk[..n])
                .map_err(|e| Error::io("write trace file", path, e))?;
        }
        w.finish()
            .map_err(|e| Error::io("write trace file", path, e))?;
        let _ = std::fs::remove_file(&part);
        summary.records_written = records;
        summary.file = Some(path.to_path_buf());
        Ok(summary)
    }
}

/// Records spooled to a file as they arrive.
struct Spool {
    file: BufWriter<File>,
    records: u64,
    failure: Option<io::Error>,
}

impl Sink for Spool {
    fn event(&mut self, e: &Event) {
        let mut rec = [0u8; RECORD_LEN];
        record::emit(e, &mut rec);
        self.records(&rec);
    }
    fn records(&mut self, raw: &[u8]) {
        if self.failure.is_some() {
            return;
        }
        match self.file.write_all(raw) {
            Ok(()) => self.records += (raw.len() / RECORD_LEN) as u64,
            Err(e) => self.failure = Some(e),
        }
    }
}
