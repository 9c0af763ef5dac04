//! The receiver (S.Ha.R.K.'s `udpdump`): takes the UDP queue's datagrams from
//! any number of senders and writes them to a trace file.
//!
//! - **Per sender** (a source address and the sender id in the datagram), it
//!   detects lost datagrams (sequence gaps) and exactly how many events they
//!   held (from the first-event field of the datagrams on both sides),
//!   duplicates and reordering ([`sequence`]). A sender's datagrams are
//!   written in sequence order: one that arrives ahead of a missing one is
//!   held (at most [`ReceiverConfig::reorder`]) until the missing one arrives
//!   or is given up on. It reassembles the
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
//!   fixed-size sequence window, at most [`ReceiverConfig::reorder`] held
//!   datagrams and a catalog of at most [`ReceiverConfig::max_catalog_len`]
//!   bytes; received records go straight to disk.
//!
//! # Hoops records in the received trace
//!
//! - *Sender drops*: when a datagram reports more drops than any before it
//!   from its sender, a hoops record with the difference (`args = [lost,
//!   queue]`, the sender's queue handle from its header, or `0xffff` if not yet
//!   known) follows that datagram's events: the UDP queue reports drops in
//!   the datagram that carries the last event queued before them, so the
//!   record is never placed before an event that preceded the loss.
//! - *Lost datagrams*: a datagram is given up on when more than
//!   [`ReceiverConfig::reorder`] datagrams (or bytes) are held behind it,
//!   when the sender is [`sequence::WINDOW`] datagrams further, or when the
//!   receiver stops. Then one hoops record per gap (a run of consecutive lost
//!   datagrams) goes exactly where the gap is — after the events before it,
//!   before the events after it, with the time of the last event before it —
//!   and carries the exact number of events lost: the first-event field of
//!   the datagram after the gap minus the events released before it. A gap of
//!   datagrams that held no events (catalog datagrams) writes no record. A
//!   lost datagram that arrives after it was given up on is discarded (it was
//!   counted lost), so events received + hoops counts = events sent, exactly.
//!   Only datagrams lost after the last one that arrived cannot be known.
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
use sequence::{Gap, Limits, SequenceTracker, Span};

/// The port `qtrace recv` listens on and the UDP queue sends to by default.
pub const DEFAULT_PORT: u16 = 5510;

/// The address `qtrace recv` listens on by default: loopback only.
pub fn default_listen_addr() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], DEFAULT_PORT))
}

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
    /// Per sender, how many datagrams (256) and bytes (512 KiB) are held
    /// while a missing datagram may still arrive; beyond that it is given up
    /// on (counted lost).
    pub reorder: Limits,
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
            reorder: Limits::default(),
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
    /// Events those datagrams held, exactly (as many hoops records say).
    pub lost_events: u64,
    /// Datagrams received twice (discarded).
    pub duplicates: u64,
    /// Datagrams that arrived after a later one (accepted).
    pub reordered: u64,
    /// Datagrams that arrived after they were given up on or with an
    /// impossible sequence number, and catalog datagrams that did not decode
    /// (discarded).
    pub invalid: u64,
    /// Events the sender reported it dropped (its queue was full).
    pub sender_dropped: u64,
    /// Whether its header (clock, host, class table) arrived.
    pub has_catalog: bool,
}

impl SenderSummary {
    /// Every event the sender logged up to its last datagram that arrived:
    /// received, dropped by the sender, or lost in transit — each exactly.
    pub fn accounted(&self) -> u64 {
        // Counts come from the network: saturate rather than overflow.
        self.events
            .saturating_add(self.sender_dropped)
            .saturating_add(self.lost_events)
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
    /// Events lost on the way (in lost datagrams), all senders, exactly.
    pub fn lost_events(&self) -> u64 {
        self.senders
            .iter()
            .fold(0u64, |n, s| n.saturating_add(s.lost_events))
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
                 {} lost in transit ({} datagrams), {} duplicates, {} reordered, {} invalid",
                s.sender,
                s.addr,
                queue,
                s.datagrams,
                s.events,
                s.sender_dropped,
                s.lost_events,
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
    /// Sequence state; holds datagrams (their bytes) that arrived early.
    seq: SequenceTracker<Box<[u8]>>,
    assembler: CatalogAssembler,
    header: Option<TraceHeader>,
    datagrams: u64,
    events: u64,
    invalid: u64,
    dropped: u64,
    /// The time of the last event written (the time of a loss after it).
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

    fn hoops(&self, lost: u64) -> Event {
        Event::new(self.last_time, HOOPS, u32::MAX, [lost, self.queue_handle()])
    }

    /// Writes one datagram released in sequence order: the hoops record for
    /// the events lost just before it, its events or catalog fragment, then
    /// a hoops record for drops it reports.
    fn release(&mut self, gap: Gap, bytes: &[u8], cx: &mut Context<'_>) {
        if gap.events > 0 {
            cx.progress
                .lost_events
                .fetch_add(gap.events, Ordering::Relaxed);
            cx.out.event(&self.hoops(gap.events));
        }
        // Held datagrams were checked when they arrived.
        let Ok(view) = DatagramView::new_checked(bytes) else {
            return;
        };
        let header = view.header();
        match header.kind {
            DatagramKind::Events => {
                let n = view.record_count() as u64;
                // The view checked the length: exactly `n` records follow
                // the header. They go on as they are (big-endian records).
                let raw = bytes.get(HEADER_LEN..).unwrap_or_default();
                for c in raw.chunks_exact(RECORD_LEN) {
                    let mut t = [0u8; 8];
                    t.copy_from_slice(&c[..8]);
                    self.last_time = self.last_time.max(u64::from_be_bytes(t));
                }
                cx.out.records(raw);
                self.events += n;
                cx.progress.events.fetch_add(n, Ordering::Relaxed);
            }
            DatagramKind::Catalog => {
                if let Some(fragment) = view.fragment() {
                    if fragment.total_len as usize > cx.max_catalog {
                        self.invalid += 1;
                    } else {
                        match self.assembler.push(&fragment) {
                            Ok(Some(h)) => {
                                if cx.first_header.is_none() {
                                    *cx.first_header = Some(h.clone());
                                }
                                self.header = Some(h);
                            }
                            Ok(None) => {}
                            Err(_) => self.invalid += 1,
                        }
                    }
                }
            }
        }
        if header.dropped > self.dropped {
            let new = header.dropped - self.dropped;
            self.dropped = header.dropped;
            // Saturating, as the summary: the count comes from the network.
            let _ = cx.progress.sender_dropped.fetch_update(
                Ordering::Relaxed,
                Ordering::Relaxed,
                |d| Some(d.saturating_add(new)),
            );
            cx.out.event(&self.hoops(new));
        }
    }

    /// Releases the held datagrams that can go (all of them if `flush`).
    fn release_held(&mut self, flush: bool, cx: &mut Context<'_>) {
        while let Some((gap, bytes)) = self.seq.pop(flush) {
            self.release(gap, &bytes, cx);
        }
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
            lost_events: c.lost_events,
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
    lost_events: AtomicU64,
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
    /// Events lost in transit so far (in datagrams given up on).
    pub fn lost_events(&self) -> u64 {
        self.lost_events.load(Ordering::Relaxed)
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

/// What releasing a sender's datagram needs besides the sender.
struct Context<'a> {
    out: &'a mut dyn Sink,
    progress: &'a Progress,
    first_header: &'a mut Option<TraceHeader>,
    max_catalog: usize,
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
                    seq: SequenceTracker::new(self.config.reorder),
                    assembler: CatalogAssembler::new(),
                    header: None,
                    datagrams: 0,
                    events: 0,
                    invalid: 0,
                    dropped: 0,
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
                            old.release_held(
                                true,
                                &mut Context {
                                    out,
                                    progress: &self.progress,
                                    first_header: &mut self.first_header,
                                    max_catalog: self.config.max_catalog_len,
                                },
                            );
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
        let s = &mut self.senders[index];
        s.last_seen = self.clock;
        let span = Span {
            first_event: header.first_event,
            events: view.record_count() as u64,
            bytes: bytes.len(),
        };
        let (verdict, now) = s.seq.observe(header.sequence, span, || bytes.into());
        if !verdict.accepted() {
            self.progress.invalid.fetch_add(1, Ordering::Relaxed);
            return;
        }
        s.datagrams += 1;
        self.progress.datagrams.fetch_add(1, Ordering::Relaxed);
        let mut cx = Context {
            out,
            progress: &self.progress,
            first_header: &mut self.first_header,
            max_catalog: self.config.max_catalog_len,
        };
        if let Some(gap) = now {
            s.release(gap, bytes, &mut cx);
        }
        s.release_held(false, &mut cx);
    }

    /// Ends every sender's stream: held datagrams are written, and datagrams
    /// still missing before them are lost (their hoops records go to `out`).
    pub fn finish(&mut self, out: &mut dyn FnMut(&Event)) {
        self.finish_into(&mut EachEvent(out))
    }

    fn finish_into(&mut self, out: &mut dyn Sink) {
        let mut cx = Context {
            out,
            progress: &self.progress,
            first_header: &mut self.first_header,
            max_catalog: self.config.max_catalog_len,
        };
        for s in &mut self.senders {
            s.release_held(true, &mut cx);
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
