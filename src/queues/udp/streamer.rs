//! The UDP queue's task: drains the ring into event datagrams (batched with
//! segmentation offload where the kernel has it), repeats the catalog,
//! counts refusals, and sends the close datagram at the end.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{DatagramsPerPeriod, Shared, UdpQueue};
use crate::queue::config_error::ConfigError;
use crate::queue::queue_trait::QueueContext;
use crate::queues::drained::samples::{
    drain_sampled, with_queue_counters, QueueCounterIds, Sample, SAMPLE_RECORDS,
};
use crate::queues::drained::sender::{SendOutcome, UdpSender};
use crate::queues::drained::task::Work;
use crate::wire::datagram::keyed::KEYED_OVERHEAD;
use crate::wire::datagram::{
    encode_catalog_fragment, encode_close, set_version, CloseCounts, CompactEventsEncoder,
    EventsEncoder, COMPACT_VERSION, MAX_DATAGRAM_LEN, MIN_COMPACT_DATAGRAM_LEN,
};
use crate::wire::TraceHeader;
use qtrace_core::compact::MAX_RECORD_LEN;

/// Datagrams handed to the kernel in one call with segmentation offload
/// (the kernel's limit, `UDP_MAX_SEGMENTS`).
const MAX_SEGMENTS: usize = 64;

impl UdpQueue {
    /// Whether its datagrams are keyed.
    fn keyed(&self) -> bool {
        #[cfg(feature = "keys")]
        {
            self.params.key.is_some()
        }
        #[cfg(not(feature = "keys"))]
        {
            false
        }
    }

    pub(super) fn streamer(&self, ctx: &QueueContext) -> Result<Streamer, ConfigError> {
        let local = self.params.local.expect("filled in at create");
        // The queue's own counters: their class in this stream's catalog.
        let (ctx, counters) = if self.params.queue_counters {
            let (ctx, ids) =
                with_queue_counters(ctx, "udp", "UdpParams::with_queue_counters(false)")?;
            (ctx, Some(ids))
        } else {
            (ctx.clone(), None)
        };
        let ctx = &ctx;
        let socket = UdpSender::open(local, self.params.remote)?;
        // A full events datagram: every datagram is at most this long, all
        // but the last of a batch exactly this long.
        // Keyed, each datagram is KEYED_OVERHEAD bytes longer (FORMAT.md 2.6).
        let overhead = if self.keyed() { KEYED_OVERHEAD } else { 0 };
        // Compact datagrams (FORMAT.md 2.7) fill the whole size less part of
        // a record; with segmentation offload each full one is padded to it
        // with zero bytes (the kernel splits a batch at equal lengths).
        let compact = self.params.compact
            && self.params.max_datagram_len >= MIN_COMPACT_DATAGRAM_LEN + overhead;
        let room = if compact {
            self.params.max_datagram_len - overhead
        } else {
            crate::wire::datagram::HEADER_LEN
                + crate::wire::datagram::records_per_datagram(
                    self.params.max_datagram_len - overhead,
                ) * crate::wire::record::RECORD_LEN
        };
        let seg = room + overhead;
        let batch = (MAX_DATAGRAM_LEN / seg).min(MAX_SEGMENTS);
        let gso = self.params.segmentation_offload && batch > 1 && socket.set_segment_size(seg);
        Ok(Streamer {
            shared: Arc::clone(&self.shared),
            socket,
            sender: self.sender_id,
            header: TraceHeader::for_queue(ctx).to_bytes(),
            buf: vec![0u8; if gso { seg * batch } else { seg }],
            seg,
            room,
            #[cfg(feature = "keys")]
            key: self.params.key.as_deref().cloned(),
            session: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64),
            gso,
            compact,
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
            counters,
            sample: None,
            sample_at: None,
            samples_built: 0,
        })
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
pub(super) struct Streamer {
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
    /// The size of a full events datagram before it is keyed (`seg` less
    /// the key's 24 bytes; `seg` unkeyed): what the encoders fill.
    room: usize,
    /// The key datagrams are keyed with, in this task (never in
    /// `log_event`).
    #[cfg(feature = "keys")]
    key: Option<crate::wire::DatagramKey>,
    /// This stream's session (FORMAT.md 2.6): its start, ns since the
    /// Unix epoch.
    session: u64,
    /// Whether the kernel splits batches into datagrams (Linux UDP GSO).
    gso: bool,
    /// Whether events datagrams are compact (version 3, FORMAT.md 2.7);
    /// catalog and close datagrams then carry version 3 too.
    compact: bool,
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
    /// The queue's own counters, when sampled (FORMAT.md 1.3.4).
    counters: Option<QueueCounterIds>,
    /// The sample taken and not yet in a datagram.
    sample: Option<Sample>,
    /// Where in `buf` the datagram holding the last sample starts, until
    /// it is sent: its sample records are not the queue's events.
    sample_at: Option<usize>,
    /// Sample records put in datagrams: the close datagram's `logged`
    /// counts them (they are in `first_event`).
    samples_built: u64,
}

impl Streamer {
    fn note(&self, msg: String) {
        *self.shared.last_error.lock() = Some(msg);
    }

    /// Keys the datagram in `buf[at..at + len]` in place (FORMAT.md 2.6):
    /// its keyed length. Unkeyed: `len`.
    fn seal(&mut self, at: usize, len: usize) -> usize {
        #[cfg(feature = "keys")]
        if let Some(key) = &self.key {
            let end = (at + len + KEYED_OVERHEAD).min(self.buf.len());
            // The buffer has room: `seg` = `room` + the overhead.
            return crate::wire::datagram::keyed::seal(
                key,
                self.session,
                &mut self.buf[at..end],
                len,
            )
            .unwrap_or(len);
        }
        let _ = (at, self.session);
        len
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
                    if self.sample_at == Some(at) {
                        events -= SAMPLE_RECORDS as u64;
                        self.sample_at = None;
                    }
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
                &mut self.buf[..self.room],
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
            if self.compact {
                set_version(&mut self.buf[..len], COMPACT_VERSION);
            }
            self.sequence += 1;
            offset += n;
            let len = self.seal(0, len);
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
        if self.sample.is_none() {
            self.sample = self.counters.as_ref().map(|c| c.sample(ring));
        }
        let seg = self.seg;
        let room = self.room;
        let records = crate::wire::datagram::records_per_datagram(room);
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
            if self.compact {
                let Some(len) = self.compact_datagram(at, room) else {
                    break; // nothing new to say
                };
                sent += 1;
                at += len;
                // A datagram padded to `seg` continues the batch; a short
                // one (the ring ran dry) ends it, as only the last may be.
                if len < seg || !self.gso {
                    if !self.send_batch(at) {
                        return false;
                    }
                    at = 0;
                }
                continue;
            }
            let dropped = if records >= self.snapshot_left {
                self.snapshot_dropped
            } else {
                self.sent_dropped
            };
            let mut enc = match EventsEncoder::new(
                &mut self.buf[at..at + room],
                self.sender,
                self.sequence,
                dropped,
                self.first_event,
            ) {
                Ok(enc) => enc,
                Err(_) => return true, // seg is checked at create: cannot happen
            };
            let (n, samples) =
                drain_sampled(ring, &mut self.sample, enc.capacity(), ring.len(), |e| {
                    enc.push(e)
                });
            self.snapshot_left = self.snapshot_left.saturating_sub(n);
            if n == 0 && samples == 0 && dropped == self.sent_dropped {
                break; // nothing new to say
            }
            if samples > 0 {
                self.sample_at = Some(at);
                self.samples_built += samples as u64;
            }
            let count = enc.len() as u64;
            let len = enc.finish();
            let len = self.seal(at, len);
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

    /// Builds one compact events datagram in `buf[at..at + room]` from the
    /// ring and keys it: its length, or `None` when it would say nothing
    /// new (no event, no new drop). With segmentation offload, a chunk
    /// that left less than a largest record's room unused is padded with
    /// zero bytes to `room` (FORMAT.md 2.7), so the datagram is `seg` long.
    fn compact_datagram(&mut self, at: usize, room: usize) -> Option<usize> {
        let shared = Arc::clone(&self.shared);
        let ring = &shared.feed.ring;
        let mut enc = CompactEventsEncoder::new(
            &mut self.buf[at..at + room],
            self.sender,
            self.sequence,
            self.sent_dropped,
            self.first_event,
        )
        .ok()?; // room is checked at create: cannot fail
                // Take what surely fits, again and again: each record is at most
                // MAX_RECORD_LEN bytes, so the chunk ends less than one record short
                // of full. Drops counted with a snapshot came after its events: they
                // are reported by the datagram that carries the last of them.
        let mut dropped = self.sent_dropped;
        let mut samples = 0;
        loop {
            // A sample due before any event goes in first.
            samples += drain_sampled(ring, &mut self.sample, enc.room_for(), 0, |e| enc.push(e)).1;
            if self.snapshot_left == 0 {
                // Every event of the snapshot is carried (by this datagram
                // or an earlier one): its drops go with this datagram.
                dropped = self.snapshot_dropped;
                self.snapshot_dropped = ring.dropped();
                self.snapshot_left = ring.len();
                if self.snapshot_left == 0 {
                    dropped = self.snapshot_dropped;
                    break;
                }
            }
            let take = enc.room_for().min(self.snapshot_left);
            if take == 0 {
                break;
            }
            let (n, s) = drain_sampled(
                ring,
                &mut self.sample,
                enc.room_for(),
                self.snapshot_left,
                |e| enc.push(e),
            );
            samples += s;
            self.snapshot_left -= n;
            if n + s < take {
                break; // a producer is still writing the oldest record
            }
        }
        if samples > 0 {
            self.sample_at = Some(at);
            self.samples_built += samples as u64;
        }
        if enc.is_empty() && dropped == self.sent_dropped {
            return None;
        }
        enc.set_dropped(dropped);
        let count = enc.len() as u64;
        let mut len = enc.finish();
        if self.gso && room - len < MAX_RECORD_LEN {
            self.buf[at + len..at + room].fill(0);
            len = room;
        }
        let len = self.seal(at, len);
        self.sequence += 1;
        self.first_event += count;
        self.sent_dropped = dropped;
        Some(len)
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
            if self.sample_at == Some(at) {
                events -= SAMPLE_RECORDS as u64;
            }
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
        // One reading of each counter, so the close agrees with itself
        // (logged = sent + dropped + unsent: a receiver refuses one that
        // does not, FORMAT.md 3.2) even if a late producer drops meanwhile.
        let popped = ring.popped();
        let accepted = ring.accepted();
        let dropped = ring.dropped();
        let counts = CloseCounts {
            // The samples are in `first_event`: logged counts them too.
            logged: accepted + dropped + self.samples_built,
            unsent: accepted.saturating_sub(popped),
        };
        let mut buf = [0u8; 56 + KEYED_OVERHEAD];
        let Ok(len) = encode_close(
            &mut buf,
            self.sender,
            self.sequence,
            dropped,
            self.first_event,
            counts,
        ) else {
            return;
        };
        if self.compact {
            set_version(&mut buf[..len], COMPACT_VERSION);
        }
        #[cfg(feature = "keys")]
        let len = match &self.key {
            Some(key) => {
                crate::wire::datagram::keyed::seal(key, self.session, &mut buf, len).unwrap_or(len)
            }
            None => len,
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
