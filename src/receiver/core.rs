//! The receiver's logic without I/O: datagrams in, records out.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::config::{ReceiverConfig, MAX_RETIRED};
use super::progress::Progress;
use super::rejection::{RejectedSource, RejectionKind};
use super::sender::{SenderState, CLOSE_COPIES};
use super::sequence::Span;
use super::sessions::{Admission, Sessions};
use super::sink::{Context, EachEvent, Sink, StreamId};
use super::summary::{InvalidCounts, ReceiverSummary, RefusedSource, SenderSummary};
use crate::classes::{tracer::HOOPS, Catalog};
use crate::model::clock::Clock;
use crate::model::event::Event;
use crate::model::event::TRACER_SOURCE;
use crate::wire::datagram::keyed;
use crate::wire::datagram::{CatalogAssembler, DatagramHeader, DatagramKind, DatagramView, MAGIC};
use crate::wire::header::NO_QUEUE;
use crate::wire::{TraceHeader, WireError};

/// The [`Context`] of a [`ReceiverCore`] (`$core`) writing to `$out`: a
/// macro, not a method, so that the core's sender table stays free to
/// borrow at the same time.
macro_rules! context {
    ($core:expr, $out:expr) => {
        Context {
            out: $out,
            progress: &$core.progress,
            first_header: &mut $core.first_header,
            header_gen: &mut $core.header_gen,
            max_catalog: $core.config.max_catalog_len,
        }
    };
}

/// The receiver's logic without a socket: feed it datagrams with
/// [`ReceiverCore::handle`], collect the records it hands out.
///
/// ```
/// use qtrace::classes::{system, tracer};
/// use qtrace::receiver::{ReceiverConfig, ReceiverCore};
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
/// let from = "127.0.0.1:40000".parse().unwrap();
/// let mut core = ReceiverCore::new(ReceiverConfig::default());
/// let mut out = Vec::new();
/// let e = |t| Event::new(t, system::SCHEDULE, 0, [t, 0]);
/// core.handle(from, &datagram(0, 0, &[e(1)]), &mut |r| out.push(*r));
/// // Datagram 1 (events 1 and 2) is lost; datagram 2 holds event 3.
/// core.handle(from, &datagram(2, 3, &[e(4)]), &mut |r| out.push(*r));
/// core.finish(&mut |r| out.push(*r));
///
/// assert_eq!(out[0], e(1));
/// assert_eq!((out[1].id, out[1].args[0]), (tracer::HOOPS, 2)); // exactly 2 lost, in place
/// assert_eq!(out[2], e(4));
/// // No close datagram: the stream is marked unclosed (4 events accounted for).
/// assert_eq!(qtrace::wire::unclosed_stream(&out[3]), Some((7, 4)));
/// let sender = &core.summary().senders[0];
/// assert_eq!((sender.events, sender.lost_events, sender.closed), (2, 2, false));
/// ```
#[derive(Debug)]
pub struct ReceiverCore {
    pub(super) config: ReceiverConfig,
    senders: Vec<SenderState>,
    /// Replaced senders that may resume (oldest first).
    parked: Vec<SenderState>,
    /// Finished streams (restarted senders' earlier incarnations, parked
    /// senders pushed out): (ordinal, account).
    retired: Vec<(u64, SenderSummary)>,
    retired_uncounted: u64,
    /// The sums of the accounts not kept (beyond [`MAX_RETIRED`]), so
    /// that the summary's totals stay whole: events, sender drops, lost
    /// datagrams, events lost in them, unsent.
    uncounted: [u64; 5],
    /// The last [`CLOSED_ENDS`] closed streams that ended: (address,
    /// sender id, close sequence), so that the later copies of their close
    /// datagram count as duplicates, not as new streams.
    closed_ends: VecDeque<(SocketAddr, u32, u64)>,
    refused: Vec<RefusedSource>,
    /// Per entry of `refused`: events not yet claimed by a stream that got
    /// a slot later, and the end (first event + events) of its furthest
    /// refused datagram.
    refused_unclaimed: Vec<(u64, u64)>,
    /// The first sender header that arrived, for the received file.
    first_header: Option<TraceHeader>,
    /// Changes whenever [`ReceiverCore::trace_header`] would change.
    header_gen: u64,
    /// Sender streams seen so far (tracked, parked, retired and uncounted).
    senders_seen: u64,
    /// Datagrams handled (a logical clock for idleness).
    clock: u64,
    invalid: InvalidCounts,
    /// Rejections per source address (at most [`MAX_RETIRED`] addresses).
    rejected: Vec<RejectedSource>,
    /// Per sender id, the newest keyed session admitted and whether its
    /// stream ended (an older one, or one that ended, is a replay), with
    /// the floor that covers the ids forgotten (`sessions.rs`).
    sessions: Sessions,
    /// The version 1 datagram a keyed one carries (reused: no allocation
    /// per datagram).
    scratch: Vec<u8>,
    /// The records of the compact datagram being handled, decoded once
    /// while it is checked (reused: no allocation per datagram).
    decoded: Vec<u8>,
    pub(super) progress: Arc<Progress>,
}

/// Closed streams remembered after they ended, for the later copies of
/// their close (a fleet stopping at once: 4,096 senders' closes
/// interleaved).
const CLOSED_ENDS: usize = 4 * MAX_RETIRED;

/// Which stream a datagram belongs to, decided before anything changes.
#[derive(Clone, Copy, Debug)]
enum Target {
    /// The stream in this slot of the table.
    Table(usize),
    /// This parked stream, which resumes.
    Parked(usize),
    /// A new stream (it replaces one of the same sender id, if any).
    New,
}

impl ReceiverCore {
    /// A receiver core with `config`'s limits.
    ///
    /// ```
    /// use qtrace::receiver::{ReceiverConfig, ReceiverCore};
    ///
    /// let core = ReceiverCore::new(ReceiverConfig::default());
    /// assert_eq!(core.progress().datagrams(), 0);
    /// assert!(core.summary().senders.is_empty());
    /// ```
    pub fn new(config: ReceiverConfig) -> Self {
        ReceiverCore {
            config,
            senders: Vec::new(),
            parked: Vec::new(),
            retired: Vec::new(),
            retired_uncounted: 0,
            uncounted: [0; 5],
            closed_ends: VecDeque::new(),
            refused: Vec::new(),
            refused_unclaimed: Vec::new(),
            first_header: None,
            header_gen: 0,
            senders_seen: 0,
            clock: 0,
            invalid: InvalidCounts::default(),
            rejected: Vec::new(),
            sessions: Sessions::default(),
            scratch: Vec::new(),
            decoded: Vec::new(),
            progress: Arc::default(),
        }
    }

    /// The live counters.
    pub fn progress(&self) -> Arc<Progress> {
        Arc::clone(&self.progress)
    }

    /// Handles one datagram from `from`; every record to write (events, and
    /// hoops records where losses are detected) goes to `out`, in order.
    ///
    /// ```
    /// use qtrace::classes::system;
    /// use qtrace::receiver::{ReceiverConfig, ReceiverCore};
    /// use qtrace::Event;
    /// use qtrace_core::encode::datagram::{DatagramHeader, DatagramKind};
    ///
    /// // An events datagram of sender 7 with one event (FORMAT.md 3).
    /// let event = Event::new(5, system::SCHEDULE, 0, [3, 0]);
    /// let header = DatagramHeader { kind: DatagramKind::Events, sender: 7, sequence: 0, dropped: 0, first_event: 0 };
    /// let mut bytes = [0u8; 72];
    /// header.emit(1, (&mut bytes[..40]).try_into().unwrap());
    /// qtrace_core::encode::record::emit(&event, (&mut bytes[40..]).try_into().unwrap());
    ///
    /// let mut core = ReceiverCore::new(ReceiverConfig::default());
    /// let mut out = Vec::new();
    /// core.handle("127.0.0.1:40000".parse().unwrap(), &bytes, &mut |e| out.push(*e));
    /// assert_eq!(out, [event]);
    /// ```
    pub fn handle(&mut self, from: SocketAddr, bytes: &[u8], out: &mut dyn FnMut(&Event)) {
        self.handle_into(from, bytes, &mut EachEvent(out))
    }

    /// Counts a new stream; returns its ordinal.
    fn count_stream(&mut self) -> u64 {
        self.senders_seen += 1;
        if self.senders_seen == 2 && self.first_header.is_some() {
            // The file's header loses its queue: it is no longer one sender's.
            self.header_gen += 1;
        }
        self.senders_seen
    }

    /// A new stream's state, counted as a sender seen.
    fn fresh(&mut self, from: SocketAddr, sender: u32, key: Option<(u16, u64)>) -> SenderState {
        let ordinal = self.count_stream();
        let mut s = SenderState::new(from, sender, ordinal, self.clock, self.config.reorder);
        s.key = key;
        s
    }

    /// Ends a stream for good: what it held is written, the events of its
    /// refused datagrams that no gap counted are marked lost, its account
    /// kept.
    fn retire(&mut self, mut old: SenderState, out: &mut dyn Sink) {
        let mut cx = context!(self, out);
        old.release_held(true, &mut cx);
        old.mark_refused(&mut cx);
        old.mark_unclosed(&mut cx);
        let account = old.summary();
        cx.out.end(&old.stream_id(), &account);
        if let Some((_, session)) = old.key {
            self.sessions.end(old.sender, session, None);
        }
        if let (Some(seq), Some(_)) = (old.close_seq, old.closed) {
            if self.closed_ends.len() >= CLOSED_ENDS {
                self.closed_ends.pop_front();
            }
            self.closed_ends.push_back((old.addr, old.sender, seq));
        }
        if self.retired.len() < MAX_RETIRED {
            self.retired.push((old.ordinal, account));
        } else {
            self.retired_uncounted += 1;
            let u = &mut self.uncounted;
            for (n, add) in u.iter_mut().zip([
                account.events,
                account.sender_dropped,
                account.lost_datagrams,
                account.lost_events,
                account.unsent,
            ]) {
                *n = n.saturating_add(add);
            }
        }
    }

    /// How long (in datagrams handled) a parked sender must have been
    /// quiet before a new one may end its stream for good to take its
    /// place: [`ReceiverConfig::idle_datagrams`] × [`MAX_RETIRED`]. A
    /// parked sender that still sends is never pushed out (it would come
    /// back as a new stream, its earlier events counted twice).
    fn parked_idle(&self) -> u64 {
        self.config
            .idle_datagrams
            .saturating_mul(MAX_RETIRED as u64)
    }

    /// The parked sender quiet for longest.
    fn oldest_parked(&self) -> Option<usize> {
        self.parked
            .iter()
            .enumerate()
            .min_by_key(|(_, s)| s.last_seen)
            .map(|(i, _)| i)
    }

    /// Parks a replaced sender: what it held is written; it resumes where it
    /// stopped if it sends again.
    fn park(&mut self, mut old: SenderState, out: &mut dyn Sink) {
        if old.closed.is_some() {
            return self.retire(old, out);
        }
        old.release_held(true, &mut context!(self, out));
        old.assembler = CatalogAssembler::new();
        // Its buffer of decoded records (up to 2 MiB after a reordered
        // compact datagram) is made again if it resumes: a parked sender
        // keeps its fixed state and header only (RELIABILITY.md, "Receiver memory").
        old.decoded = Vec::new();
        if self.parked.len() >= MAX_RETIRED {
            if let Some(p) = self.oldest_parked() {
                let oldest = self.parked.remove(p);
                self.retire(oldest, out);
            }
        }
        self.parked.push(old);
    }

    /// Puts `state` in the sender table, replacing a closed or idle sender
    /// if the table is full; the state back if no slot can be had.
    fn admit(&mut self, state: SenderState, out: &mut dyn Sink) -> Result<usize, Box<SenderState>> {
        if self.senders.len() < self.config.max_senders {
            self.senders.push(state);
            return Ok(self.senders.len() - 1);
        }
        let closed = self
            .senders
            .iter()
            .position(|s| s.closed.is_some() && s.seq.held() == 0);
        let victim = closed.or_else(|| {
            self.senders
                .iter()
                .enumerate()
                .min_by_key(|(_, s)| s.last_seen)
                .filter(|(_, s)| self.clock - s.last_seen >= self.config.idle_datagrams)
                .map(|(i, _)| i)
        });
        let Some(i) = victim else {
            return Err(Box::new(state));
        };
        // Parking the victim would push a parked sender out for good: only
        // one quiet for long enough (else the new sender is refused).
        let victim = &self.senders[i];
        if (victim.closed.is_none() || victim.seq.held() > 0) && self.parked.len() >= MAX_RETIRED {
            let quiet = self
                .oldest_parked()
                .is_some_and(|p| self.clock - self.parked[p].last_seen >= self.parked_idle());
            if !quiet {
                return Err(Box::new(state));
            }
        }
        let old = std::mem::replace(&mut self.senders[i], state);
        self.park(old, out);
        Ok(i)
    }

    /// Counts a refused datagram against its source address. `end` is the
    /// end of its events in the sender's numbering; `claimed`: a stream
    /// state (parked) accounts for them, else they wait for one that gets
    /// a slot later or are marked lost when the receiver stops.
    fn refuse(&mut self, from: SocketAddr, sender: u32, events: u64, end: u64, claimed: bool) {
        self.invalid.too_many_senders += 1;
        self.progress.invalid.fetch_add(1, Ordering::Relaxed);
        let i = match self
            .refused
            .iter()
            .position(|r| r.addr == from && r.sender == sender)
        {
            Some(i) => {
                let r = &mut self.refused[i];
                r.datagrams += 1;
                r.events = r.events.saturating_add(events);
                i
            }
            None if self.refused.len() < MAX_RETIRED => {
                self.refused.push(RefusedSource {
                    addr: from,
                    sender,
                    datagrams: 1,
                    events,
                });
                self.refused_unclaimed.push((0, 0));
                self.refused.len() - 1
            }
            None => return,
        };
        if !claimed {
            let (unclaimed, furthest) = &mut self.refused_unclaimed[i];
            *unclaimed = unclaimed.saturating_add(events);
            *furthest = (*furthest).max(end);
        }
    }

    /// The stream datagram `header` from `from` belongs to, changing
    /// nothing: `Err` when it must be rejected (a keyed session older than
    /// its sender's newest, or one that ended).
    fn identify(
        &self,
        from: SocketAddr,
        header: &DatagramHeader,
        key: Option<(u16, u64)>,
    ) -> Result<Target, RejectionKind> {
        let id = header.sender;
        let Some((_, session)) = key else {
            // Unkeyed: known by its id, from its address, unless it restarts.
            if let Some(i) = self.senders.iter().position(|s| s.sender == id) {
                let s = &self.senders[i];
                return Ok(if s.addr == from && !s.restarts(header) {
                    Target::Table(i)
                } else {
                    Target::New
                });
            }
            if let Some(p) = self.parked.iter().position(|s| s.sender == id) {
                let s = &self.parked[p];
                return Ok(if s.addr == from && !s.restarts(header) {
                    Target::Parked(p)
                } else {
                    Target::New
                });
            }
            return Ok(Target::New);
        };
        // Keyed: known by its id and session, from any address; a newer
        // session is a new incarnation, an older one a replay.
        let same = |s: &SenderState| s.sender == id && s.key.is_some_and(|(_, x)| x == session);
        if let Some(i) = self.senders.iter().position(same) {
            return Ok(Target::Table(i));
        }
        if let Some(p) = self.parked.iter().position(same) {
            return Ok(Target::Parked(p));
        }
        match self.sessions.admission(id, session, header.sequence) {
            Admission::Replayed => Err(RejectionKind::Replayed),
            Admission::New | Admission::Resumed => Ok(Target::New),
        }
    }

    /// Counts a rejected datagram against its source address (it changes
    /// nothing else).
    fn reject(&mut self, from: SocketAddr, kind: RejectionKind) {
        self.invalid.rejected.add(kind);
        self.progress.invalid.fetch_add(1, Ordering::Relaxed);
        self.progress.rejected.fetch_add(1, Ordering::Relaxed);
        *self.progress.last_rejection.lock() = Some((from, kind.describe()));
        match self.rejected.iter().position(|r| r.addr == from) {
            Some(i) => self.rejected[i].counts.add(kind),
            None if self.rejected.len() < MAX_RETIRED => {
                let mut r = RejectedSource {
                    addr: from,
                    counts: Default::default(),
                };
                r.counts.add(kind);
                self.rejected.push(r);
            }
            None => {}
        }
    }

    /// The table slot of `target` (what [`ReceiverCore::identify`] decided
    /// for datagram `header` from `from`), taking one if needed; `None`
    /// when it is refused (the table is full).
    fn slot(
        &mut self,
        target: Target,
        from: SocketAddr,
        header: &DatagramHeader,
        events: u64,
        key: Option<(u16, u64)>,
        out: &mut dyn Sink,
    ) -> Option<usize> {
        let state = match target {
            Target::Table(i) => return Some(i),
            Target::Parked(p) => self.parked.remove(p),
            Target::New => {
                if let Some(i) = self.senders.iter().position(|s| s.sender == header.sender) {
                    // A restarted sender (new port, numbering from 0
                    // again, a newer session): its earlier incarnation
                    // ends here, and it keeps the slot.
                    let fresh = self.fresh(from, header.sender, key);
                    let old = std::mem::replace(&mut self.senders[i], fresh);
                    self.retire(old, out);
                    if let Some((_, session)) = key {
                        self.sessions.admit(header.sender, session);
                    }
                    return Some(i);
                }
                if let Some(p) = self.parked.iter().position(|s| s.sender == header.sender) {
                    let old = self.parked.remove(p);
                    self.retire(old, out);
                    self.fresh(from, header.sender, key)
                } else {
                    // Not counted as seen until it gets a slot.
                    let mut s =
                        SenderState::new(from, header.sender, 0, self.clock, self.config.reorder);
                    s.key = key;
                    s
                }
            }
        };
        let new = state.ordinal == 0;
        let end = header.first_event.saturating_add(events);
        match self.admit(state, out) {
            Ok(i) => {
                if let (Target::New, Some((_, session))) = (target, key) {
                    self.sessions.admit(header.sender, session);
                }
                if new {
                    self.senders[i].ordinal = self.count_stream();
                    claim_refused(
                        &self.refused,
                        &mut self.refused_unclaimed,
                        &mut self.senders[i],
                    );
                }
                Some(i)
            }
            Err(mut state) => {
                if !new {
                    // A parked sender that could not resume stays parked,
                    // and accounts for the refused events itself.
                    state.refused_end = state.refused_end.max(end);
                    state.refused_next = state.refused_next.max(header.sequence.saturating_add(1));
                    // It still sends: not one to push out.
                    state.last_seen = self.clock;
                    self.parked.push(*state);
                }
                // A new keyed session that got no slot is not yet its
                // sender's newest: its next datagram tries again.
                self.refuse(from, header.sender, events, end, !new);
                None
            }
        }
    }

    /// The key that confirms keyed datagram `bytes` (key id `id`), or why
    /// it is rejected.
    fn check_tag(&self, id: u16, bytes: &[u8]) -> Result<(), RejectionKind> {
        #[cfg(feature = "keys")]
        {
            if self.config.keys.is_empty() {
                return Err(RejectionKind::NoKey);
            }
            let mut held = self.config.keys.iter().filter(|k| k.id() == id).peekable();
            if held.peek().is_none() {
                return Err(RejectionKind::UnknownKey);
            }
            if held.any(|k| keyed::verify(k, bytes)) {
                Ok(())
            } else {
                Err(RejectionKind::BadTag)
            }
        }
        #[cfg(not(feature = "keys"))]
        {
            let _ = (id, bytes);
            Err(RejectionKind::NoKey)
        }
    }

    /// Whether this receiver accepts only keyed datagrams.
    fn keyed_only(&self) -> bool {
        #[cfg(feature = "keys")]
        {
            !self.config.keys.is_empty()
        }
        #[cfg(not(feature = "keys"))]
        {
            false
        }
    }

    /// Counts a datagram that failed its checks (FORMAT.md 3.1).
    fn count_invalid(&mut self, e: &WireError) {
        match e {
            WireError::BadMagic { .. } => self.invalid.not_qtrace += 1,
            WireError::Truncated { .. } => self.invalid.truncated += 1,
            WireError::UnsupportedVersion { .. } => self.invalid.unsupported_version += 1,
            _ => self.invalid.malformed += 1,
        }
        self.progress.invalid.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn handle_into(&mut self, from: SocketAddr, bytes: &[u8], out: &mut dyn Sink) {
        self.clock += 1;
        let keyed_version = bytes.len() >= 6
            && bytes[..4] == MAGIC
            && keyed::is_keyed(u16::from_be_bytes([bytes[4], bytes[5]]));
        if !keyed_version {
            return self.handle_checked(from, bytes, None, out);
        }
        // A keyed datagram: its tag is checked before anything else is
        // read (FORMAT.md 4.3), then the version 1 datagram it carries.
        let (id, session) = match keyed::keyed_fields(bytes) {
            Ok(x) => x,
            Err(e) => return self.count_invalid(&e),
        };
        if let Err(kind) = self.check_tag(id, bytes) {
            return self.reject(from, kind);
        }
        let mut inner = std::mem::take(&mut self.scratch);
        keyed::unkeyed_into(bytes, &mut inner);
        self.handle_checked(from, &inner, Some((id, session)), out);
        self.scratch = inner;
    }

    /// Handles a version 1 datagram (`key`: the key id and session of the
    /// keyed datagram that carried it, its tag checked).
    fn handle_checked(
        &mut self,
        from: SocketAddr,
        bytes: &[u8],
        key: Option<(u16, u64)>,
        out: &mut dyn Sink,
    ) {
        let mut decoded = std::mem::take(&mut self.decoded);
        self.handle_decoded(from, bytes, key, &mut decoded, out);
        self.decoded = decoded;
    }

    /// [`ReceiverCore::handle_checked`] with `decoded`, the buffer a compact
    /// datagram's records are decoded into while it is checked: a datagram
    /// released at once is written from it, not decoded again.
    fn handle_decoded(
        &mut self,
        from: SocketAddr,
        bytes: &[u8],
        key: Option<(u16, u64)>,
        decoded: &mut Vec<u8>,
        out: &mut dyn Sink,
    ) {
        let view = match DatagramView::new_checked_into(bytes, decoded) {
            Ok(v) => v,
            Err(e) => return self.count_invalid(&e),
        };
        if key.is_none() && self.keyed_only() {
            return self.reject(from, RejectionKind::Unkeyed);
        }
        let header = view.header();
        let events = view.record_count() as u64;
        let span = Span {
            first_event: header.first_event,
            events,
            bytes: bytes.len(),
            dropped: header.dropped,
        };
        // Judged before any stream changes: a rejected datagram never
        // takes, resets or parks a slot, nor changes a stream's counts.
        if let Some(c) = view.close() {
            let said = header
                .first_event
                .saturating_add(header.dropped)
                .saturating_add(c.unsent);
            if c.logged < said {
                return self.reject(from, RejectionKind::CountersBackwards);
            }
        }
        let target = match self.identify(from, &header, key) {
            Ok(t) => t,
            Err(kind) => return self.reject(from, kind),
        };
        if let (Target::New, DatagramKind::Close) = (target, header.kind) {
            if self
                .closed_ends
                .contains(&(from, header.sender, header.sequence))
            {
                // A later copy of the close of a stream that ended: a
                // duplicate (its stream was whole), not a new stream.
                self.progress.invalid.fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
        let existing = match target {
            Target::Table(i) => Some(&self.senders[i]),
            Target::Parked(p) => Some(&self.parked[p]),
            Target::New => None,
        };
        if let Some(Err(kind)) = existing.map(|s| s.judge(&header, span)) {
            return self.reject(from, kind);
        }
        let Some(index) = self.slot(target, from, &header, events, key, out) else {
            return;
        };
        let s = &mut self.senders[index];
        s.last_seen = self.clock;
        if header.kind == DatagramKind::Close {
            if s.close_seq == Some(header.sequence) {
                // A repeated close (sent 2 ms after the first): counted, and
                // what is still missing before the close is given up on —
                // the stream is over.
                s.close_copies = (s.close_copies + 1).min(CLOSE_COPIES);
                s.datagrams += 1;
                self.progress.datagrams.fetch_add(1, Ordering::Relaxed);
                if s.closed.is_none() {
                    s.release_held(true, &mut context!(self, out));
                }
                return;
            }
            if s.close_seq.is_none() {
                s.close_seq = Some(header.sequence);
                s.close_copies = 1;
            }
        }
        let (verdict, now) = s.seq.observe(header.sequence, span, || bytes.into());
        if !verdict.accepted() {
            self.progress.invalid.fetch_add(1, Ordering::Relaxed);
            return;
        }
        s.datagrams += 1;
        self.progress.datagrams.fetch_add(1, Ordering::Relaxed);
        let mut cx = context!(self, out);
        if let Some(gap) = now {
            s.release(gap, &view, decoded, &mut cx);
        }
        s.release_held(false, &mut cx);
    }

    /// Ends every sender's stream: held datagrams are written, and datagrams
    /// still missing before them are lost (their hoops records go to `out`),
    /// as are the events of a sender's refused datagrams that came after its
    /// last one that got in (a hoops record of its queue); each stream
    /// (tracked or parked) that ended without its close datagram then gets
    /// its unclosed-stream mark (FORMAT.md 1.5, 3.3 item 6; once per
    /// stream); then one hoops record per refused source address whose
    /// sender never got a slot.
    pub fn finish(&mut self, out: &mut dyn FnMut(&Event)) {
        self.finish_into(&mut EachEvent(out))
    }

    pub(super) fn finish_into(&mut self, out: &mut dyn Sink) {
        let mut cx = context!(self, out);
        let mut time = 0;
        for s in &mut self.senders {
            s.release_held(true, &mut cx);
            s.mark_refused(&mut cx);
            s.mark_unclosed(&mut cx);
            cx.out.end(&s.stream_id(), &s.summary());
            time = time.max(s.last_time);
        }
        for s in &mut self.parked {
            s.mark_refused(&mut cx);
            s.mark_unclosed(&mut cx);
            cx.out.end(&s.stream_id(), &s.summary());
            time = time.max(s.last_time);
        }
        // A keyed stream under way may go on at the next receiver that
        // loads the session file, from the number after its last one.
        for s in self.senders.iter().chain(self.parked.iter()) {
            if let Some((_, session)) = s.key {
                let next = s.closed.is_none().then(|| s.seq.next_expected());
                self.sessions.end(s.sender, session, next);
            }
        }
        // Refused events no stream claimed: their sender never got a slot.
        for (i, (events, _)) in self.refused_unclaimed.iter_mut().enumerate() {
            if *events > 0 {
                if let Some(r) = self.refused.get(i) {
                    let id = StreamId {
                        addr: r.addr,
                        sender: r.sender,
                        ordinal: 0,
                    };
                    cx.out.stream(&id, None);
                }
                cx.out.event(&Event::new(
                    time,
                    HOOPS,
                    TRACER_SOURCE,
                    [*events, NO_QUEUE as u64],
                ));
                *events = 0;
            }
        }
    }

    /// Whether every sender in the table has closed its stream (its close
    /// datagram arrived): what a receiver that reached its event count
    /// waits a moment for, so a run that lost nothing ends closed.
    pub(crate) fn all_closed(&self) -> bool {
        self.senders.iter().all(|s| s.closed.is_some())
    }

    /// The account so far.
    pub fn summary(&self) -> ReceiverSummary {
        let mut senders: Vec<(u64, SenderSummary)> = self
            .retired
            .iter()
            .cloned()
            .chain(
                self.parked
                    .iter()
                    .chain(self.senders.iter())
                    .map(|s| (s.ordinal, s.summary())),
            )
            .collect();
        senders.sort_by_key(|(n, _)| *n);
        ReceiverSummary {
            senders: senders.into_iter().map(|(_, s)| s).collect(),
            retired_uncounted: self.retired_uncounted,
            uncounted_events: self.uncounted[0],
            uncounted_sender_dropped: self.uncounted[1],
            uncounted_lost_datagrams: self.uncounted[2],
            uncounted_lost_events: self.uncounted[3],
            uncounted_unsent: self.uncounted[4],
            invalid: self.invalid,
            refused: self.refused.clone(),
            rejected: self.rejected.clone(),
            keyed: self.keyed_only(),
            ..ReceiverSummary::default()
        }
    }

    /// The session file (FORMAT.md 3.7): per sender id the newest keyed
    /// session admitted, whether its stream ended or from which datagram
    /// number it may go on, and the floor below which a session of an id
    /// not listed is a replay. A receiver that loads it
    /// ([`ReceiverCore::load_sessions`]) rejects a replay of every stream
    /// this one received.
    ///
    /// ```
    /// use qtrace::receiver::{ReceiverConfig, ReceiverCore};
    ///
    /// let mut core = ReceiverCore::new(ReceiverConfig::default());
    /// let file = core.session_file();
    /// assert_eq!(&file[..4], b"QTRS");
    /// assert_eq!(file.len(), 24); // no keyed session yet
    /// assert_eq!(core.load_sessions(&file), Ok(0));
    /// ```
    pub fn session_file(&mut self) -> Vec<u8> {
        let live: std::collections::HashMap<(u32, u64), Option<u64>> = self
            .senders
            .iter()
            .chain(self.parked.iter())
            .filter_map(|s| {
                let (_, session) = s.key?;
                let next = s.closed.is_none().then(|| s.seq.next_expected());
                Some(((s.sender, session), next))
            })
            .collect();
        self.sessions
            .encode(|id, session| live.get(&(id, session)).copied().flatten())
    }

    /// Whether the sessions changed since [`ReceiverCore::session_file`]
    /// last ran.
    pub(super) fn sessions_changed(&self) -> bool {
        self.sessions.dirty()
    }

    /// Loads a session file an earlier receiver wrote
    /// ([`ReceiverCore::session_file`], FORMAT.md 3.7), before the first
    /// datagram: from then on, the streams it lists as ended and every
    /// older session are rejected as replays, and a stream it lists as
    /// under way goes on (as a new stream here) from the datagram number it
    /// gives. Returns the sender ids loaded.
    ///
    /// # Errors
    ///
    /// [`WireError`] when the bytes are not a session file (the field at
    /// fault and its offset); nothing is loaded then.
    pub fn load_sessions(&mut self, bytes: &[u8]) -> Result<usize, WireError> {
        self.sessions = Sessions::decode(bytes, super::sessions::MAX_SESSIONS)?;
        Ok(self.sessions.len())
    }

    /// The header for the received trace: the sender's (its pid, clock,
    /// host, queue and class table) when one sender was seen; the first
    /// sender's without its queue when several were; the built-in classes
    /// and this process's clock while no header has arrived.
    pub fn trace_header(&self) -> TraceHeader {
        match &self.first_header {
            Some(h) if self.senders_seen == 1 => h.clone(),
            Some(h) => h.clone().without_queue(),
            None => TraceHeader::new(Catalog::builtin(), &Clock::monotonic()).without_queue(),
        }
    }

    /// The latest event time written, all senders.
    pub(super) fn last_time(&self) -> u64 {
        self.senders
            .iter()
            .chain(self.parked.iter())
            .map(|s| s.last_time)
            .max()
            .unwrap_or(0)
    }

    /// A number that changes whenever [`ReceiverCore::trace_header`] would.
    pub fn header_generation(&self) -> u64 {
        self.header_gen
    }
}

/// A stream that got a slot after datagrams from its address and id were
/// refused accounts for them itself (a gap in its numbering, or marked lost
/// at its end by [`SenderState::mark_refused`]).
fn claim_refused(refused: &[RefusedSource], unclaimed: &mut [(u64, u64)], state: &mut SenderState) {
    for (r, (events, furthest)) in refused.iter().zip(unclaimed) {
        if r.addr == state.addr && r.sender == state.sender && *events > 0 {
            state.refused_end = state.refused_end.max(*furthest);
            *events = 0;
        }
    }
}
