//! The UDP queue: a bounded queue whose background task streams the events to
//! a receiver ([`crate::receiver`], `qtrace recv`) in datagrams
//! (FORMAT.md, [`crate::wire::datagram`]).
//!
//! - **Policy**: as the circular-online queue, new events are dropped while the
//!   queue is full; the cumulative drop count travels in every datagram's
//!   header, so the receiver writes hoops records where events were lost and
//!   a lost datagram does not lose the count.
//! - **Task**: runs every `period` (250 ms), or early at the high-water mark,
//!   and sends at most `datagrams_per_period` event datagrams per round
//!   ([`DatagramsPerPeriod::Limit`], 1 as S.Ha.R.K.) or everything queued
//!   ([`DatagramsPerPeriod::All`]). At shutdown it sends everything left.
//! - **Catalog**: the queue's trace header (clock, host, class table) goes
//!   first, as catalog datagrams, and again every `catalog_interval`, so a
//!   receiver started late can still name user-defined events. Catalog
//!   datagrams do not count against the per-period limit.
//! - **Datagrams**: at most `max_datagram_len` bytes (1472: fits a 1500-byte
//!   Ethernet MTU over IPv4), numbered 0, 1, 2, … per sender.
//! - **Segmentation offload** (Linux): full datagrams built in one round are
//!   handed to the kernel together and split by it (`UDP_SEGMENT`), one
//!   system call for up to 45 datagrams; the datagrams on the wire are the
//!   same. Where the kernel or the route does not support it, the queue sends
//!   one datagram per call. On loopback this is 2–3× the event rate.
//! - **No receiver**: the kernel's "port unreachable" answers are counted in
//!   [`Queue::status`] and [`UdpQueue::stats`] and the stream goes on. Each
//!   answer is about the send before it: that send's events were not
//!   received, so they count as dropped, not delivered
//!   ([`UdpStats::refused_events`]; `total_lost()` includes them). Exact
//!   when each refusal is reported before the next send (as on loopback);
//!   refusals the kernel merges into one report count once.
//! - **End of stream**: at shutdown the task sends everything left, its
//!   catalog once more, then a close datagram (FORMAT.md 2.4) 3 times, 2 ms
//!   apart, with its final counts, so the receiver can mark every event sent
//!   but not received as lost. What cannot be sent within 2 s is given up:
//!   counted as dropped ([`UdpStats::abandoned_events`]), named in
//!   [`Queue::status`], and marked lost by the receiver from the close
//!   datagram.
//! - **Effective rate**: one datagram per period only below the high-water
//!   mark; a queue at the mark wakes its task and rounds follow each other at
//!   once (README.md gives measured figures).
//!
//! ```
//! use qtrace::classes::user;
//! use qtrace::queues::{DatagramsPerPeriod, Udp, UdpParams};
//! use qtrace::receiver::{Receiver, RunLimit};
//! use std::time::Duration;
//!
//! let mut receiver = Receiver::bind("127.0.0.1:0".parse().unwrap())?;
//! let tracer = qtrace::Tracer::new();
//! let q = tracer.create_queue::<Udp>(
//!     UdpParams::to(receiver.local_addr())
//!         .with_period(Duration::from_millis(5))
//!         .with_datagrams_per_period(DatagramsPerPeriod::All),
//! )?;
//! tracer.assign_class(user::CLASS, q)?;
//! tracer.activate()?;
//! let rx = std::thread::spawn(move || {
//!     let mut events = Vec::new();
//!     receiver
//!         .run_with(RunLimit::events(100).or_after(Duration::from_secs(30)), &mut |e| {
//!             events.push(*e)
//!         })
//!         .map(|s| (s, events))
//! });
//! for i in 0..100 {
//!     tracer.log_event(user::USER0, [i, 0]);
//! }
//! tracer.shutdown()?;
//! let (summary, mut events) = rx.join().unwrap()?;
//! assert_eq!(summary.events(), 100);
//! // The receiver stopped at 100 events, before the close datagram came: the
//! // stream ends with its unclosed-stream mark (FORMAT.md 1.5).
//! let mark = events.pop().unwrap();
//! let sender = summary.senders[0].sender;
//! assert_eq!(qtrace::wire::close::unclosed_stream(&mark), Some((sender, 100)));
//! assert_eq!(events.iter().map(|e| e.args[0]).collect::<Vec<_>>(), (0..100).collect::<Vec<_>>());
//! # Ok::<(), qtrace::Error>(())
//! ```

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::{AnyQueue, QueueType};
use crate::model::event::Event;
use crate::queue::config_error::ConfigError;
use crate::queue::queue_trait::{Queue, QueueContext, QueueCounters, QueueStatus, Reservation};
use crate::queues::drained::feed::Feed;
use crate::queues::drained::lifecycle::{Lifecycle, TaskNames};
use crate::queues::drained::sender::{SendOutcome, UdpSender};
use crate::queues::drained::task::Work;
use crate::wire::datagram::{
    encode_catalog_fragment, encode_close, CloseCounts, EventsEncoder, DEFAULT_MAX_DATAGRAM_LEN,
    MAX_DATAGRAM_LEN, MIN_DATAGRAM_LEN,
};
use crate::wire::TraceHeader;
use crate::wire::DEFAULT_PORT;

/// Datagrams handed to the kernel in one call with segmentation offload
/// (the kernel's limit, `UDP_MAX_SEGMENTS`).
const MAX_SEGMENTS: usize = 64;

/// The UDP queue type. Parameters: [`UdpParams`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Udp;

/// How many event datagrams the task sends per round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DatagramsPerPeriod {
    /// At most this many (S.Ha.R.K. sent 1).
    Limit(u32),
    /// Everything queued.
    All,
}

/// Parameters of a [`Udp`] queue. `Default` sends to `127.0.0.1:5510`
/// ([`DEFAULT_PORT`]) with S.Ha.R.K.'s values: 8192 events, a 250 ms period,
/// one datagram per period.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UdpParams {
    /// Capacity in events (a power of two).
    pub capacity: usize,
    /// The address to send from; `None`: any address of the remote's IP
    /// version, a port the system chooses.
    pub local: Option<SocketAddr>,
    /// The receiver's address.
    pub remote: SocketAddr,
    /// How often the task runs.
    pub period: Duration,
    /// Event datagrams per round.
    pub datagrams_per_period: DatagramsPerPeriod,
    /// The largest datagram, in bytes (72 to 65507; 1472 fits Ethernet: 44
    /// records in a 1448-byte datagram).
    pub max_datagram_len: usize,
    /// Fill level (percent, 1–100) that wakes the task early.
    pub high_water_percent: u8,
    /// How often the catalog is sent again (10 s); it is also sent first and
    /// at shutdown.
    pub catalog_interval: Duration,
    /// The sender id in every datagram; `None`: derived from the process,
    /// the queue handle and the time.
    pub sender_id: Option<u32>,
    /// Let the kernel split a batch of full datagrams, handed over in one
    /// call, into datagrams (Linux UDP segmentation offload; the datagrams
    /// on the wire are the same). On by default; where the kernel does not
    /// support it, one call per datagram is used.
    pub segmentation_offload: bool,
}

impl Default for UdpParams {
    fn default() -> Self {
        UdpParams::to(SocketAddr::from((Ipv4Addr::LOCALHOST, DEFAULT_PORT)))
    }
}

impl UdpParams {
    /// The defaults, sending to `remote`.
    pub fn to(remote: SocketAddr) -> Self {
        UdpParams {
            capacity: 8192,
            local: None,
            remote,
            period: Duration::from_millis(250),
            datagrams_per_period: DatagramsPerPeriod::Limit(1),
            max_datagram_len: DEFAULT_MAX_DATAGRAM_LEN,
            high_water_percent: 80,
            catalog_interval: Duration::from_secs(10),
            sender_id: None,
            segmentation_offload: true,
        }
    }
    /// Holds `capacity` events (a power of two).
    pub fn with_capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity;
        self
    }
    /// Sends from `local`.
    pub fn with_local(mut self, local: SocketAddr) -> Self {
        self.local = Some(local);
        self
    }
    /// Runs the task every `period`.
    pub fn with_period(mut self, period: Duration) -> Self {
        self.period = period;
        self
    }
    /// Sends `n` event datagrams per round.
    pub fn with_datagrams_per_period(mut self, n: DatagramsPerPeriod) -> Self {
        self.datagrams_per_period = n;
        self
    }
    /// Datagrams of at most `len` bytes.
    pub fn with_max_datagram_len(mut self, len: usize) -> Self {
        self.max_datagram_len = len;
        self
    }
    /// Wakes the task at `percent` % full.
    pub fn with_high_water_percent(mut self, percent: u8) -> Self {
        self.high_water_percent = percent;
        self
    }
    /// Switches segmentation offload on or off.
    pub fn with_segmentation_offload(mut self, on: bool) -> Self {
        self.segmentation_offload = on;
        self
    }
    /// Sends the catalog again every `interval` (10 s by default).
    pub fn with_catalog_interval(mut self, interval: Duration) -> Self {
        self.catalog_interval = interval;
        self
    }
    /// Uses `id` as the sender id.
    pub fn with_sender_id(mut self, id: u32) -> Self {
        self.sender_id = Some(id);
        self
    }
}

/// What a UDP queue's task has done.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UdpStats {
    /// Event datagrams handed to the network.
    pub event_datagrams: u64,
    /// Catalog datagrams handed to the network.
    pub catalog_datagrams: u64,
    /// Events sent.
    pub events_sent: u64,
    /// Sends answered by "port unreachable" (no receiver listening).
    pub refused: u64,
    /// Events in datagrams the receiver's host refused (port unreachable):
    /// the events of the send before each refusal the kernel reported. They
    /// are not delivered: the queue's counters count them as dropped.
    pub refused_events: u64,
    /// Close datagrams handed to the network at shutdown.
    pub close_datagrams: u64,
    /// Sends that failed for another reason (retried later).
    pub send_errors: u64,
    /// Rounds that found the socket's send buffer full (retried later).
    pub would_block: u64,
    /// Events given up at shutdown: still in the ring, or in datagrams built
    /// but not sent, when the shutdown deadline (2 s) passed (a send that
    /// kept failing, a producer that claimed a slot and never committed it).
    /// They are not delivered: the queue's counters count them as dropped,
    /// the close datagram tells the receiver (`unsent`, and a gap for the
    /// unsent datagrams), and the queue's status names them.
    pub abandoned_events: u64,
}

#[derive(Debug, Default)]
struct Stats {
    event_datagrams: AtomicU64,
    catalog_datagrams: AtomicU64,
    events_sent: AtomicU64,
    refused: AtomicU64,
    refused_events: AtomicU64,
    close_datagrams: AtomicU64,
    send_errors: AtomicU64,
    would_block: AtomicU64,
    abandoned_events: AtomicU64,
}

#[derive(Debug)]
struct Shared {
    feed: Feed,
    stats: Stats,
    last_error: Mutex<Option<String>>,
}

/// A UDP queue (see the [module documentation](self)).
pub struct UdpQueue {
    shared: Arc<Shared>,
    params: UdpParams,
    sender_id: u32,
    lifecycle: Lifecycle<()>,
}

impl fmt::Debug for UdpQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UdpQueue")
            .field("params", &self.params)
            .field("sender_id", &self.sender_id)
            .field("stats", &self.stats())
            .finish()
    }
}

impl QueueType for Udp {
    type Params = UdpParams;
    const NAME: &'static str = "udp";

    fn create(&self, mut params: UdpParams, ctx: &QueueContext) -> Result<AnyQueue, ConfigError> {
        let bad = |reason: String| ConfigError::InvalidParameter {
            queue_type: Self::NAME,
            reason,
        };
        if params.period.is_zero() {
            return Err(bad("period is zero: use a period such as 250 ms".into()));
        }
        if !(MIN_DATAGRAM_LEN..=MAX_DATAGRAM_LEN).contains(&params.max_datagram_len) {
            return Err(bad(format!(
                "max datagram size {} is out of range: use {MIN_DATAGRAM_LEN} to {MAX_DATAGRAM_LEN} bytes ({DEFAULT_MAX_DATAGRAM_LEN} fits Ethernet)",
                params.max_datagram_len
            )));
        }
        if params.datagrams_per_period == DatagramsPerPeriod::Limit(0) {
            return Err(bad(
                "0 datagrams per period would never send: use Limit(1) or more, or All".into(),
            ));
        }
        if params.catalog_interval.is_zero() {
            return Err(bad("catalog interval is zero: use a few seconds".into()));
        }
        let local = params.local.unwrap_or(if params.remote.is_ipv4() {
            SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0))
        } else {
            SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0))
        });
        if local.is_ipv4() != params.remote.is_ipv4() || params.remote.port() == 0 {
            // The sender's own checks give the message.
            UdpSender::open(local, params.remote)?;
        }
        params.local = Some(local);
        let feed = Feed::new(
            Self::NAME,
            params.capacity,
            params.high_water_percent,
            false,
        )?;
        let sender_id = params.sender_id.unwrap_or_else(|| derive_sender_id(ctx));
        let lifecycle = Lifecycle::new(
            (),
            TaskNames {
                thread: "qtrace-udp",
                start: "start the UDP queue's send thread",
                finish: "finish the UDP queue's send task",
                panicked: "send task panicked",
            },
            params.period,
            Arc::clone(&feed.control),
        );
        Ok(AnyQueue::UdpQueue(UdpQueue {
            shared: Arc::new(Shared {
                feed,
                stats: Stats::default(),
                last_error: Mutex::new(None),
            }),
            params,
            sender_id,
            lifecycle,
        }))
    }
}

fn derive_sender_id(ctx: &QueueContext) -> u32 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() ^ d.as_secs() as u32)
        .unwrap_or(0);
    // A small integer hash mixing the three.
    let mut x = (std::process::id() as u64) << 32 | (ctx.handle.0 as u64) << 16 | nanos as u64;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x as u32
}

impl UdpQueue {
    /// The sender id this queue puts in its datagrams.
    pub fn sender_id(&self) -> u32 {
        self.sender_id
    }

    /// What the task has sent so far.
    pub fn stats(&self) -> UdpStats {
        let s = &self.shared.stats;
        UdpStats {
            event_datagrams: s.event_datagrams.load(Ordering::Relaxed),
            catalog_datagrams: s.catalog_datagrams.load(Ordering::Relaxed),
            events_sent: s.events_sent.load(Ordering::Relaxed),
            refused: s.refused.load(Ordering::Relaxed),
            refused_events: s.refused_events.load(Ordering::Relaxed),
            close_datagrams: s.close_datagrams.load(Ordering::Relaxed),
            send_errors: s.send_errors.load(Ordering::Relaxed),
            would_block: s.would_block.load(Ordering::Relaxed),
            abandoned_events: s.abandoned_events.load(Ordering::Relaxed),
        }
    }

    /// The parameters the queue was created with (`local` filled in).
    pub fn params(&self) -> &UdpParams {
        &self.params
    }

    fn streamer(&self, ctx: &QueueContext) -> Result<Streamer, ConfigError> {
        let local = self.params.local.expect("filled in at create");
        let socket = UdpSender::open(local, self.params.remote)?;
        // A full events datagram: every datagram is at most this long, all
        // but the last of a batch exactly this long.
        let seg = crate::wire::datagram::HEADER_LEN
            + crate::wire::datagram::records_per_datagram(self.params.max_datagram_len)
                * crate::wire::record::RECORD_LEN;
        let batch = (MAX_DATAGRAM_LEN / seg).min(MAX_SEGMENTS);
        let gso = self.params.segmentation_offload && batch > 1 && socket.set_segment_size(seg);
        Ok(Streamer {
            shared: Arc::clone(&self.shared),
            socket,
            sender: self.sender_id,
            header: TraceHeader::for_queue(ctx).to_bytes(),
            buf: vec![0u8; if gso { seg * batch } else { seg }],
            seg,
            gso,
            pending: None,
            sequence: 0,
            first_event: 0,
            last_sent_events: 0,
            sent_dropped: 0,
            snapshot_left: 0,
            snapshot_dropped: 0,
            per_round: self.params.datagrams_per_period,
            catalog_interval: self.params.catalog_interval,
            catalog_due: None,
        })
    }
}

impl Queue for UdpQueue {
    #[inline]
    fn get(&self) -> Option<Reservation> {
        self.shared.feed.get()
    }

    #[inline]
    fn post(&self, reservation: Reservation, event: &Event) {
        self.shared.feed.post(reservation, event)
    }

    /// The whole run in consecutive positions, or none of it (dropped and
    /// counted, and marked in the file like any drop).
    fn post_run(&self, run: &crate::model::combine::Run<'_>) -> usize {
        self.shared.feed.post_run(run)
    }

    fn activate(&self, ctx: &QueueContext) -> Result<(), ConfigError> {
        self.lifecycle.activate(ctx.handle, |()| {
            self.streamer(ctx).map_err(|e| (e, Some(())))
        })
    }

    fn terminate(&self, ctx: &QueueContext) -> Result<(), ConfigError> {
        // Never activated: what was logged since phase 1 is sent now.
        self.lifecycle.terminate(None, |()| self.streamer(ctx))
    }

    /// Events in refused datagrams (nobody listening at the remote address)
    /// are not delivered: they move from `accepted` and `delivered` to
    /// `dropped`, so `total_lost()` includes them and `attempts()` is
    /// unchanged. Events given up at shutdown
    /// ([`UdpStats::abandoned_events`]) move from `accepted` and `queued` to
    /// `dropped` the same way: a final report never shows them `queued`.
    fn counters(&self) -> QueueCounters {
        let s = &self.shared.stats;
        let refused = s.refused_events.load(Ordering::Relaxed);
        let mut c = self
            .shared
            .feed
            .counters(s.events_sent.load(Ordering::Relaxed));
        let refused = refused.min(c.delivered);
        c.accepted -= refused;
        c.delivered -= refused;
        c.dropped += refused;
        let abandoned = s.abandoned_events.load(Ordering::Relaxed).min(c.queued);
        c.accepted -= abandoned;
        c.queued -= abandoned;
        c.dropped += abandoned;
        c
    }

    fn status(&self) -> QueueStatus {
        let s = &self.shared.stats;
        QueueStatus {
            io_errors: s.refused.load(Ordering::Relaxed) + s.send_errors.load(Ordering::Relaxed),
            last_error: self.shared.last_error.lock().clone(),
            files: Vec::new(),
            snapshots_suppressed: 0,
        }
    }
}

/// A datagram that could not be sent yet.
///
/// `buf[start..end]` holds consecutive datagrams, each `seg` bytes long but
/// the last (a batch for segmentation offload, or a single datagram).
struct Pending {
    start: usize,
    end: usize,
    catalog: bool,
}

/// The task's side: drains the ring into datagrams.
struct Streamer {
    shared: Arc<Shared>,
    socket: UdpSender,
    sender: u32,
    /// The encoded trace header, sent as catalog fragments.
    header: Vec<u8>,
    /// Room for one datagram, or for a batch of them with segmentation
    /// offload.
    buf: Vec<u8>,
    /// The size of a full events datagram (at most `max_datagram_len`);
    /// catalog datagrams are no longer.
    seg: usize,
    /// Whether the kernel splits batches into datagrams (Linux UDP GSO).
    gso: bool,
    pending: Option<Pending>,
    sequence: u64,
    /// Events put in datagrams so far: the first-event field of the next
    /// datagram (so the receiver counts a lost datagram's events exactly).
    first_event: u64,
    /// The drop total carried by the last datagram built.
    sent_dropped: u64,
    /// Events in the last send call that went out: the ones a refusal
    /// reported by the next send is about.
    last_sent_events: u64,
    /// Events of the current snapshot not yet taken out of the ring.
    snapshot_left: usize,
    /// The drop total read when the snapshot was taken.
    snapshot_dropped: u64,
    per_round: DatagramsPerPeriod,
    catalog_interval: Duration,
    catalog_due: Option<Instant>,
}

impl Streamer {
    fn note(&self, msg: String) {
        *self.shared.last_error.lock() = Some(msg);
    }

    /// Sends what is pending: with segmentation offload the whole batch in
    /// one call, otherwise one datagram per call. `false`: keep the rest and
    /// try later.
    fn send_pending(&mut self) -> bool {
        while let Some(p) = self.pending.take() {
            let end = if self.gso {
                p.end
            } else {
                (p.start + self.seg).min(p.end)
            };
            let stats = &self.shared.stats;
            let sent = match self.socket.send(&self.buf[p.start..end]) {
                SendOutcome::Sent => true,
                SendOutcome::SentAfterRefusal => {
                    count_refusal(&self.shared, 1, &mut self.last_sent_events, &self.socket);
                    true
                }
                SendOutcome::Refused => {
                    // Refused twice in a row: this one was not sent either.
                    // Keep it for the next round; the stream never waits.
                    count_refusal(&self.shared, 2, &mut self.last_sent_events, &self.socket);
                    false
                }
                SendOutcome::Failed(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    stats.would_block.fetch_add(1, Ordering::Relaxed);
                    false
                }
                SendOutcome::Failed(_) if self.gso && end - p.start > self.seg => {
                    // The path does not take offloaded batches: send one
                    // datagram per call from now on.
                    self.gso = false;
                    self.socket.set_segment_size(0);
                    self.pending = Some(p);
                    continue;
                }
                SendOutcome::Failed(e) => {
                    stats.send_errors.fetch_add(1, Ordering::Relaxed);
                    self.note(format!(
                        "sending to {} from {}: {e}",
                        self.socket.remote_addr(),
                        self.socket.local_addr()
                    ));
                    false
                }
            };
            if !sent {
                self.pending = Some(p);
                return false;
            }
            if p.catalog {
                stats.catalog_datagrams.fetch_add(1, Ordering::Relaxed);
                self.last_sent_events = 0;
            } else {
                let mut datagrams = 0;
                let mut events = 0;
                let mut at = p.start;
                while at < end {
                    // The count field of each events datagram we built.
                    let count = &self.buf[at + 12..at + 14];
                    events += u16::from_be_bytes([count[0], count[1]]) as u64;
                    datagrams += 1;
                    at += self.seg;
                }
                stats
                    .event_datagrams
                    .fetch_add(datagrams, Ordering::Relaxed);
                stats.events_sent.fetch_add(events, Ordering::Relaxed);
                self.last_sent_events = events;
            }
            if end < p.end {
                self.pending = Some(Pending { start: end, ..p });
            }
        }
        true
    }

    /// Sends the whole catalog, fragment by fragment.
    fn send_catalog(&mut self) -> bool {
        let mut offset = 0;
        while offset < self.header.len() {
            let (len, n) = match encode_catalog_fragment(
                &mut self.buf[..self.seg],
                self.sender,
                self.sequence,
                self.sent_dropped,
                self.first_event,
                &self.header,
                offset,
            ) {
                Ok(x) => x,
                Err(e) => {
                    self.note(format!("cannot encode the catalog: {e}"));
                    return true;
                }
            };
            self.sequence += 1;
            offset += n;
            self.pending = Some(Pending {
                start: 0,
                end: len,
                catalog: true,
            });
            if !self.send_pending() {
                // Finish the rest of the catalog at the next try from 0.
                return false;
            }
        }
        true
    }

    /// One round: catalog if due, then up to `limit` event datagrams.
    fn round(&mut self, limit: u64) -> bool {
        if !self.send_pending() {
            return false;
        }
        let now = Instant::now();
        if self.catalog_due.map_or(true, |t| now >= t) {
            self.catalog_due = Some(now + self.catalog_interval);
            if !self.send_catalog() {
                // Start the catalog again from its first byte next time.
                self.catalog_due = None;
                return false;
            }
        }
        let shared = Arc::clone(&self.shared);
        let ring = &shared.feed.ring;
        let seg = self.seg;
        let records = crate::wire::datagram::records_per_datagram(seg);
        let mut sent = 0;
        // Datagrams are built one after the other in `buf[..at]`; with
        // segmentation offload, full ones are sent together.
        let mut at = 0;
        while sent < limit {
            if at + seg > self.buf.len() {
                if !self.send_batch(at) {
                    return false;
                }
                at = 0;
            }
            // Drops counted now came after the events in the ring now: they
            // are reported by the datagram that carries the last of those
            // events, so the receiver marks them after it (the snapshot may
            // span several datagrams and rounds).
            if self.snapshot_left == 0 {
                self.snapshot_dropped = ring.dropped();
                self.snapshot_left = ring.len();
            }
            let dropped = if records >= self.snapshot_left {
                self.snapshot_dropped
            } else {
                self.sent_dropped
            };
            let mut enc = match EventsEncoder::new(
                &mut self.buf[at..at + seg],
                self.sender,
                self.sequence,
                dropped,
                self.first_event,
            ) {
                Ok(enc) => enc,
                Err(_) => return true, // seg is checked at create: cannot happen
            };
            let capacity = enc.capacity().min(ring.len());
            let n = ring.drain(capacity, |e| {
                enc.push(e);
            });
            self.snapshot_left = self.snapshot_left.saturating_sub(n);
            if n == 0 && dropped == self.sent_dropped {
                break; // nothing new to say
            }
            let count = enc.len() as u64;
            let len = enc.finish();
            self.sequence += 1;
            self.first_event += count;
            self.sent_dropped = dropped;
            sent += 1;
            at += len;
            // Only the last datagram of a batch may be short.
            if len < seg || !self.gso {
                if !self.send_batch(at) {
                    return false;
                }
                at = 0;
            }
        }
        self.send_batch(at)
    }

    /// Sends the events datagrams built in `buf[..end]`.
    fn send_batch(&mut self, end: usize) -> bool {
        if end == 0 {
            return true;
        }
        self.pending = Some(Pending {
            start: 0,
            end,
            catalog: false,
        });
        self.send_pending()
    }
}

impl Streamer {
    /// Events in datagrams built but not sent.
    fn pending_events(&self) -> u64 {
        let Some(p) = &self.pending else { return 0 };
        if p.catalog {
            return 0;
        }
        let mut events = 0;
        let mut at = p.start;
        while at + 14 <= p.end {
            events += u16::from_be_bytes([self.buf[at + 12], self.buf[at + 13]]) as u64;
            at += self.seg;
        }
        events
    }
}

impl Work for Streamer {
    fn run_once(&mut self) {
        let limit = match self.per_round {
            DatagramsPerPeriod::Limit(n) => n as u64,
            DatagramsPerPeriod::All => u64::MAX,
        };
        self.round(limit);
        self.shared.feed.rearm();
    }

    fn finish(&mut self) {
        // Send everything left. A full send buffer or a producer caught
        // between claim and commit gets a moment; an error a few retries.
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut quiet = 0;
        loop {
            let done = self.round(u64::MAX);
            let ring = &self.shared.feed.ring;
            if done && ring.is_empty() && self.sent_dropped == ring.dropped() {
                // A producer that read its route before shutdown masked it
                // may still be about to claim a slot: stop only once the
                // queue has stayed empty for 2 ms.
                quiet += 1;
                if quiet >= 2 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
                continue;
            }
            quiet = 0;
            if Instant::now() >= deadline {
                // Give up what is left: counted dropped (not `queued`), and
                // told to the receiver by the close datagram (`unsent` for
                // the ring, a gap for the datagrams built but not sent).
                let left = self.shared.feed.ring.len() as u64 + self.pending_events();
                self.pending = None;
                self.shared
                    .stats
                    .abandoned_events
                    .fetch_add(left, Ordering::Relaxed);
                self.note(format!(
                    "{left} events could not be sent to {} within the 2 s shutdown deadline: counted as dropped (UdpStats::abandoned_events), the receiver marks them lost",
                    self.socket.remote_addr()
                ));
                break;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        // The catalog once more (so a receiver that lost a fragment of every
        // earlier copy still names the stream), then the close datagrams.
        self.catalog_due = None;
        let _ = self.send_catalog();
        self.send_close();
    }
}

/// Counts `reports` "port unreachable" answers to the sends before this
/// one: the events of the last send that went out (`last_sent_events`, then
/// reset) were not received.
fn count_refusal(shared: &Shared, reports: u64, last_sent_events: &mut u64, socket: &UdpSender) {
    let stats = &shared.stats;
    stats.refused.fetch_add(reports, Ordering::Relaxed);
    stats
        .refused_events
        .fetch_add(std::mem::take(last_sent_events), Ordering::Relaxed);
    *shared.last_error.lock() = Some(format!(
        "{} refused datagrams (port unreachable): is a receiver listening there?",
        socket.remote_addr()
    ));
}

/// How many times the close datagram is sent, and the pause between copies.
const CLOSE_COPIES: u32 = 3;
const CLOSE_SPACING: Duration = Duration::from_millis(2);

impl Streamer {
    /// Sends the close datagram [`CLOSE_COPIES`] times: the sender's final
    /// counts, so the receiver can mark what it sent but never received.
    fn send_close(&mut self) {
        let ring = &self.shared.feed.ring;
        let counts = CloseCounts {
            logged: ring.accepted() + ring.dropped(),
            unsent: ring.len() as u64,
        };
        let mut buf = [0u8; 56];
        let Ok(len) = encode_close(
            &mut buf,
            self.sender,
            self.sequence,
            ring.dropped(),
            self.first_event,
            counts,
        ) else {
            return;
        };
        let stats = &self.shared.stats;
        for copy in 0..CLOSE_COPIES {
            if copy > 0 {
                std::thread::sleep(CLOSE_SPACING);
            }
            // A full send buffer gets a few short retries.
            for _ in 0..10 {
                match self.socket.send(&buf[..len]) {
                    SendOutcome::Sent => {}
                    SendOutcome::SentAfterRefusal => {
                        count_refusal(&self.shared, 1, &mut self.last_sent_events, &self.socket)
                    }
                    SendOutcome::Refused => {
                        count_refusal(&self.shared, 2, &mut self.last_sent_events, &self.socket);
                        break;
                    }
                    SendOutcome::Failed(_) => {
                        std::thread::sleep(Duration::from_micros(500));
                        continue;
                    }
                }
                self.last_sent_events = 0;
                stats.close_datagrams.fetch_add(1, Ordering::Relaxed);
                break;
            }
        }
    }
}
