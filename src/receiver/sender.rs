//! One sender stream's state: its sequence window, held datagrams, header and counts.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;

use super::rejection::RejectionKind;
use super::sequence::{Gap, ReorderLimits, SequenceTracker, Span, Verdict};
use super::sink::{Context, StreamId};
use super::summary::SenderSummary;
use crate::classes::tracer::HOOPS;
use crate::model::event::Event;
use crate::model::event::TRACER_SOURCE;
use crate::wire::close::unclosed_mark;
use crate::wire::datagram::{
    CatalogAssembler, CloseCounts, DatagramHeader, DatagramKind, DatagramView,
};
use crate::wire::header::NO_QUEUE;
use crate::wire::record::RECORD_LEN;
use crate::wire::TraceHeader;

/// One sender's state.
#[derive(Debug)]
pub(super) struct SenderState {
    pub(super) addr: SocketAddr,
    pub(super) sender: u32,
    /// Order of first appearance (for the summary).
    pub(super) ordinal: u64,
    /// Sequence state; holds datagrams (their bytes) that arrived early.
    pub(super) seq: SequenceTracker<Box<[u8]>>,
    pub(super) assembler: CatalogAssembler,
    header: Option<TraceHeader>,
    pub(super) datagrams: u64,
    events: u64,
    invalid: u64,
    dropped: u64,
    unsent: u64,
    /// The close datagram's number, once one arrived (repeats are counted,
    /// not tracked).
    pub(super) close_seq: Option<u64>,
    /// The close datagram's counts, once it was released.
    pub(super) closed: Option<CloseCounts>,
    /// The time of the last event written (the time of a loss after it).
    pub(super) last_time: u64,
    /// The core's datagram count at this sender's last datagram.
    pub(super) last_seen: u64,
    /// The end (first event + events) of the furthest datagram of this
    /// stream refused while it had no slot; if its numbering never reaches
    /// there, the rest is marked lost when the stream ends
    /// ([`SenderState::mark_refused`]).
    pub(super) refused_end: u64,
    /// The number after the furthest such datagram.
    pub(super) refused_next: u64,
    /// Events of refused datagrams marked lost that way, and the datagrams
    /// (numbers never released) they were in.
    refused_lost: u64,
    refused_lost_datagrams: u64,
    /// Whether the unclosed-stream mark was written
    /// ([`SenderState::mark_unclosed`]).
    unclosed_marked: bool,
    /// A keyed stream's key id and session (FORMAT.md 2.6).
    pub(super) key: Option<(u16, u64)>,
    /// Copies of the close datagram accepted (the first included).
    pub(super) close_copies: u32,
    /// A compact datagram's records decoded into 32-byte records (kept to
    /// spare an allocation per datagram).
    pub(super) decoded: Vec<u8>,
}

/// How many copies of its close datagram a sender sends (FORMAT.md 2.4): a
/// keyed stream accepts no more.
pub(super) const CLOSE_COPIES: u32 = 3;

impl SenderState {
    pub(super) fn new(
        addr: SocketAddr,
        sender: u32,
        ordinal: u64,
        clock: u64,
        limits: ReorderLimits,
    ) -> Self {
        SenderState {
            addr,
            sender,
            ordinal,
            seq: SequenceTracker::new(limits),
            assembler: CatalogAssembler::new(),
            header: None,
            datagrams: 0,
            events: 0,
            invalid: 0,
            dropped: 0,
            unsent: 0,
            close_seq: None,
            closed: None,
            last_time: 0,
            last_seen: clock,
            refused_end: 0,
            refused_next: 0,
            refused_lost: 0,
            refused_lost_datagrams: 0,
            unclosed_marked: false,
            key: None,
            close_copies: 0,
            decoded: Vec::new(),
        }
    }

    /// Judges a datagram of this stream before anything of the stream
    /// changes (FORMAT.md 3.2): `Err` says why it is rejected. A keyed
    /// stream rejects what it already received or can no longer place
    /// (replays); every stream rejects counters that go backwards and
    /// datagrams numbered after its close.
    pub(super) fn judge(&self, header: &DatagramHeader, span: Span) -> Result<(), RejectionKind> {
        let n = header.sequence;
        let keyed = self.key.is_some();
        if header.kind == DatagramKind::Close && self.close_seq == Some(n) {
            // A copy of the close datagram (2.4).
            if keyed && self.close_copies >= CLOSE_COPIES {
                return Err(RejectionKind::Replayed);
            }
            return Ok(());
        }
        let verdict = self.seq.classify(n);
        if keyed {
            match verdict {
                Verdict::Duplicate => return Err(RejectionKind::Replayed),
                Verdict::TooLate | Verdict::Implausible => {
                    return Err(RejectionKind::OutsideWindow)
                }
                Verdict::InOrder { .. } | Verdict::Reordered => {}
            }
        }
        if self.close_seq.is_some_and(|c| n > c)
            || (header.kind == DatagramKind::Close
                && self.seq.highest_held().is_some_and(|h| h > n))
        {
            return Err(RejectionKind::AfterClose);
        }
        if verdict.accepted() && !self.seq.consistent(n, span) {
            return Err(RejectionKind::CountersBackwards);
        }
        Ok(())
    }

    fn queue_handle(&self) -> u64 {
        self.header
            .as_ref()
            .and_then(|h| h.queue())
            .map_or(NO_QUEUE as u64, |(q, _)| q.0 as u64)
    }

    fn hoops(&self, lost: u64) -> Event {
        Event::new(
            self.last_time,
            HOOPS,
            TRACER_SOURCE,
            [lost, self.queue_handle()],
        )
    }

    /// Whether datagram `header` from this sender's address starts a new
    /// incarnation (a sender restarted with the same id on the same port):
    /// it has no event before it (first event 0), the stream is under way,
    /// and either the stream's close was released (then any such datagram
    /// but a copy of the close), or it is numbered 0 and the stream's close
    /// arrived or the stream is more than [`sequence::WINDOW`] numbers
    /// further.
    pub(super) fn restarts(&self, header: &DatagramHeader) -> bool {
        if header.first_event != 0 || self.seq.next_expected() == 0 {
            return false;
        }
        if self.closed.is_some() {
            return !(header.kind == DatagramKind::Close
                && self.close_seq == Some(header.sequence));
        }
        header.sequence == 0
            && (self.close_seq.is_some() || self.seq.next_expected() > super::sequence::WINDOW)
    }

    /// Writes one datagram released in sequence order: the hoops record for
    /// the events lost just before it, its events or catalog fragment, then
    /// a hoops record for drops it reports. `decoded`: a compact datagram's
    /// records as 32-byte records, decoded when `view` was checked
    /// ([`DatagramView::new_checked_into`]).
    pub(super) fn release(
        &mut self,
        gap: Gap,
        view: &DatagramView<&[u8]>,
        decoded: &[u8],
        cx: &mut Context<'_>,
    ) {
        self.announce(cx);
        if gap.events > 0 {
            cx.progress
                .lost_events
                .fetch_add(gap.events, Ordering::Relaxed);
            cx.out.event(&self.hoops(gap.events));
        }
        let header = view.header();
        match header.kind {
            DatagramKind::Events => {
                let n = view.record_count() as u64;
                // The view checked the length: exactly `n` records follow
                // the header. They go on as they are (big-endian records);
                // a compact chunk's were decoded into 32-byte records when
                // it was checked.
                let raw = if view.is_compact() {
                    decoded
                } else {
                    view.payload()
                };
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
                                    *cx.header_gen += 1;
                                }
                                self.header = Some(h);
                            }
                            Ok(None) => {}
                            Err(_) => self.invalid += 1,
                        }
                    }
                }
            }
            DatagramKind::Close => {
                if let Some(counts) = view.close() {
                    if counts.unsent > 0 {
                        self.unsent = counts.unsent;
                        cx.progress
                            .unsent
                            .fetch_add(counts.unsent, Ordering::Relaxed);
                        cx.out.event(&self.hoops(counts.unsent));
                    }
                    self.closed = Some(counts);
                }
            }
        }
        if header.dropped > self.dropped {
            let new = header.dropped - self.dropped;
            self.dropped = header.dropped;
            // Saturating, as the summary: the count comes from the network.
            // Only the receiving thread writes it (`handle` takes `&mut`), so
            // a load and a store suffice (no deprecated `fetch_update`).
            let p = &cx.progress.sender_dropped;
            p.store(
                p.load(Ordering::Relaxed).saturating_add(new),
                Ordering::Relaxed,
            );
            cx.out.event(&self.hoops(new));
        }
    }

    /// Tells the sink that the records that follow are this stream's.
    fn announce(&self, cx: &mut Context<'_>) {
        cx.out.stream(&self.stream_id(), self.header.as_ref());
    }

    /// Which stream this is, as a sink is told.
    pub(super) fn stream_id(&self) -> StreamId {
        StreamId {
            addr: self.addr,
            sender: self.sender,
            ordinal: self.ordinal,
        }
    }

    /// Releases the held datagrams that can go (all of them if `flush`).
    pub(super) fn release_held(&mut self, flush: bool, cx: &mut Context<'_>) {
        let mut decoded = std::mem::take(&mut self.decoded);
        while let Some((gap, bytes)) = self.seq.pop(flush) {
            // Held datagrams were checked when they arrived; their records
            // are decoded (again) now, so that a held datagram keeps its
            // compact bytes, not 8 times as many.
            if let Ok(view) = DatagramView::new_checked_into(&bytes[..], &mut decoded) {
                self.release(gap, &view, &decoded, cx);
            }
        }
        self.decoded = decoded;
    }

    /// At the end of the stream: the events of datagrams refused while it
    /// had no slot that no gap of its numbering counted (they came after
    /// its last datagram released) are lost: one hoops record.
    pub(super) fn mark_refused(&mut self, cx: &mut Context<'_>) {
        let accounted = self.seq.events_accounted();
        if self.refused_end > accounted {
            let lost = self.refused_end - accounted;
            self.refused_end = 0;
            self.refused_lost = self.refused_lost.saturating_add(lost);
            self.refused_lost_datagrams = self
                .refused_lost_datagrams
                .saturating_add(self.refused_next.saturating_sub(self.seq.next_expected()));
            cx.progress.lost_events.fetch_add(lost, Ordering::Relaxed);
            self.announce(cx);
            cx.out.event(&self.hoops(lost));
        }
    }

    /// At the end of the stream, after everything else of it was written:
    /// if no close datagram was released, the unclosed-stream mark
    /// (FORMAT.md 1.5, 3.3 item 6) — the events the sender logged after its
    /// last datagram that arrived are lost without a count. Written once.
    pub(super) fn mark_unclosed(&mut self, cx: &mut Context<'_>) {
        if self.closed.is_some() || self.unclosed_marked {
            return;
        }
        self.unclosed_marked = true;
        let accounted = self.summary().accounted();
        self.announce(cx);
        cx.out
            .event(&unclosed_mark(self.last_time, self.sender, accounted));
    }

    pub(super) fn summary(&self) -> SenderSummary {
        let c = self.seq.counts();
        SenderSummary {
            addr: self.addr,
            sender: self.sender,
            key_id: self.key.map(|(id, _)| id),
            queue: self
                .header
                .as_ref()
                .and_then(|h| h.queue())
                .map(|(q, t)| (q.0, t.to_string())),
            datagrams: self.datagrams,
            events: self.events,
            lost_datagrams: self.seq.lost().saturating_add(self.refused_lost_datagrams),
            lost_events: c.lost_events.saturating_add(self.refused_lost),
            duplicates: c.duplicates,
            reordered: c.reordered,
            late: c.too_late,
            invalid: self.invalid + c.implausible,
            sender_dropped: self.dropped,
            unsent: self.unsent,
            has_catalog: self.header.is_some(),
            closed: self.closed.is_some(),
            logged: self.closed.map(|c| c.logged),
        }
    }
}
