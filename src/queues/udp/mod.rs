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
//! - **Keys** (feature `keys`, `UdpParams::with_key`): every datagram is
//!   keyed (FORMAT.md 2.6: a key id, the stream's session, an HMAC-SHA256
//!   tag) by the task as it builds it; `log_event` does exactly what it does
//!   unkeyed. A receiver holding the key rejects forgeries and replays.
//! - **Segmentation offload** (Linux): full datagrams built in one round are
//!   handed to the kernel together and split by it (`UDP_SEGMENT`), one
//!   system call for up to 45 datagrams; the datagrams on the wire are the
//!   same, except that a full compact datagram is padded with zero bytes
//!   to the full size (at most 38, FORMAT.md 2.7), as the kernel splits at
//!   one length. Where the kernel or the route does not support it, the
//!   queue sends one datagram per call. On loopback this is 2–3× the event
//!   rate of 32-byte datagrams; compact ones to `qtrace recv --out` lose
//!   nothing at 30 M events/s, where one datagram a call did so reliably
//!   only up to 24 M (BENCHMARKS.md).
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
//! let (summary, events) = rx.join().unwrap()?;
//! assert_eq!(summary.events(), 100);
//! // At 100 events the receiver waited for the close datagram (at most 1 s):
//! // the stream is closed, nothing is missing.
//! assert!(summary.senders[0].closed);
//! assert_eq!(events.iter().map(|e| e.args[0]).collect::<Vec<_>>(), (0..100).collect::<Vec<_>>());
//! # Ok::<(), qtrace::Error>(())
//! ```

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::model::event::Event;
use crate::queue::config_error::ConfigError;
use crate::queue::queue_trait::{Queue, QueueContext, QueueCounters, QueueStatus, Reservation};
use crate::queues::drained::feed::Feed;
use crate::queues::drained::lifecycle::Lifecycle;

mod params;
mod streamer;

pub use params::{DatagramsPerPeriod, Udp, UdpParams};

/// What a UDP queue's task has done.
///
/// ```
/// use qtrace::classes::user;
/// use qtrace::queues::{Udp, UdpParams, UdpQueue, UdpStats};
///
/// let receiver = std::net::UdpSocket::bind("127.0.0.1:0")?;
/// let tracer = qtrace::Tracer::new();
/// let q = tracer.create_queue::<Udp>(UdpParams::to(receiver.local_addr()?))?;
/// tracer.assign_class(user::CLASS, q)?;
/// tracer.activate()?;
/// tracer.log_event(user::USER0, [1, 0]);
/// tracer.shutdown()?;
/// let udp: &UdpQueue = tracer.queue(q)?.as_udp().unwrap();
/// let stats: UdpStats = udp.stats();
/// assert_eq!(stats.events_sent, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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

/// A UDP queue (see [`Udp`], its policy).
///
/// ```
/// use qtrace::classes::user;
/// use qtrace::queues::{Udp, UdpParams, UdpQueue, UdpStats};
///
/// let receiver = std::net::UdpSocket::bind("127.0.0.1:0")?;
/// let tracer = qtrace::Tracer::new();
/// let q = tracer.create_queue::<Udp>(UdpParams::to(receiver.local_addr()?))?;
/// tracer.assign_class(user::CLASS, q)?;
/// tracer.activate()?;
/// tracer.log_event(user::USER0, [1, 0]);
/// tracer.shutdown()?;
/// let udp: &UdpQueue = tracer.queue(q)?.as_udp().unwrap();
/// let stats: UdpStats = udp.stats();
/// assert_eq!(stats.events_sent, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
}

impl UdpQueue {
    /// The ring and wake-up behind `get` and `post`: what the tracer's
    /// producer cache keeps for this queue (`Tracer::record`).
    #[inline(always)]
    pub(crate) fn feed(&self) -> &Feed {
        &self.shared.feed
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
            lost_to_panic: 0,
        }
    }
}
