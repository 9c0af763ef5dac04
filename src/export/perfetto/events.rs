//! Track events: slice begins and ends, instants with their arguments as
//! debug annotations, reassembled combine runs, and the `lost events`
//! counter.

use std::fmt::Write as _;
use std::io::Write;

use super::interning::{fixed_annotation, fixed_category, Interner, Prefix, Sequence};
use super::protobuf::{
    put_bytes, put_double, put_fixed64, put_int, put_message, put_pair, put_prefix, put_uint,
    put_uint_at,
};
use super::schema::{field, COUNTER, INSTANT, SLICE_BEGIN, SLICE_END};
use super::writer::PerfettoWriter;
use crate::export::args::UNNAMED;
use crate::export::ExportError as Error;
use crate::model::combine::{self, Payload, PayloadState};
use crate::{Event, EventId};
use qtrace_core::classes::counter::CounterKind;

/// The value of a debug annotation.
#[derive(Clone, Copy, Debug)]
pub(super) enum Value<'a> {
    Uint(u64),
    Bool(bool),
    Str(&'a str),
}

/// A slice's name: formatted, or a prefix and a number (`task 3`), whose
/// iid is remembered per sequence once interned.
#[derive(Clone, Copy, Debug)]
pub(super) enum SliceName<'a> {
    Fmt(std::fmt::Arguments<'a>),
    Numbered(Prefix, u64),
}

/// Appends `track_uuid` unless it is the sequence's default track.
pub(super) fn put_track(e: &mut Vec<u8>, default: Option<u64>, track: u64) {
    if default != Some(track) {
        put_uint(e, field::TRACK_UUID, track);
    }
}

/// Room for a packed slice edge: at most 2 + 11 + 9 + 2 + 2 + 3 * 11 = 59
/// bytes, and every `put_uint_at` has room for a 10-byte varint (both
/// lengths fit one byte).
const EDGE_ROOM: usize = 64;

/// Room for a packed slice edge with an annotation: 59 + 2 + 2 * 11 = 83.
const ANNOTATED_EDGE_ROOM: usize = 96;

/// Room for a packed instant: 2 + 11 + 9 + 2 + 24 + 2 * 23 = 94.
const INSTANT_ROOM: usize = 128;

impl<W: Write> PerfettoWriter<W> {
    /// Writes a slice begin named `name` (category `cat`) on `track` at `t`.
    pub(super) fn begin(
        &mut self,
        t: u64,
        track: u64,
        cat: &str,
        name: SliceName<'_>,
    ) -> Result<(), Error> {
        self.begin_for(t, track, cat, name, None)
    }

    /// As [`begin`](Self::begin); with `Some(e)`, the begin stands for the
    /// event `e` (no instant is written for it) and carries `e`'s arguments
    /// after the first (which the slice's name shows) as debug annotations.
    pub(super) fn begin_for(
        &mut self,
        t: u64,
        track: u64,
        cat: &str,
        name: SliceName<'_>,
        of: Option<&Event>,
    ) -> Result<(), Error> {
        self.stats.slices += 1;
        let iid = self.slice_name(name);
        let cat_iid = self.category(cat);
        // A begin that stands for an event ending a derived wake-up flow
        // carries the flow's id (`src/export/wakes.rs`).
        let flow = of.and(self.derived.take());
        if let Some(iid) =
            iid.filter(|_| flow.is_none() && !of.is_some_and(|ev| self.shows_args(ev, 1)))
        {
            let names = Some((iid, cat_iid));
            let mut p = [0u8; EDGE_ROOM];
            if let Some(n) = self.packed_edge(&mut p, t, track, SLICE_BEGIN, names, None) {
                self.ordered(track, t)?;
                return self.append_packed(t, &p, n);
            }
        }
        self.begin_encoded(track, iid, cat_iid, of);
        if let Some((f, n)) = flow {
            put_fixed64(&mut self.event, f, n);
        }
        self.ordered(track, t)?;
        self.emit(t)
    }

    /// Encodes a slice begin whose name (`None`: written in full, from
    /// `self.text`) and category are interned already into `self.event`.
    fn begin_encoded(&mut self, track: u64, iid: Option<u64>, cat_iid: u64, of: Option<&Event>) {
        let e = &mut self.event;
        e.clear();
        put_uint(e, field::TYPE, SLICE_BEGIN);
        put_track(e, self.st.track, track);
        match iid {
            Some(iid) => put_uint(e, field::NAME_IID, iid),
            None => put_bytes(e, field::NAME, self.text.as_bytes()),
        }
        put_uint(e, field::CATEGORY_IIDS, cat_iid);
        if let Some(ev) = of {
            self.put_args(ev, 1);
        }
    }

    /// Writes the end of the innermost open slice on `track` at `t`.
    pub(super) fn end_slice(&mut self, t: u64, track: u64) -> Result<(), Error> {
        let mut p = [0u8; EDGE_ROOM];
        if let Some(n) = self.packed_edge(&mut p, t, track, SLICE_END, None, None) {
            self.ordered(track, t)?;
            return self.append_packed(t, &p, n);
        }
        self.end_encoded(track);
        self.ordered(track, t)?;
        self.emit(t)
    }

    /// A slice begin (as [`begin`](Self::begin)) with one debug annotation
    /// `ann` = `source` (a blocking wait's `source`).
    pub(super) fn begin_annotated(
        &mut self,
        t: u64,
        track: u64,
        cat: &str,
        name: SliceName<'_>,
        (ann, source): (&str, u32),
    ) -> Result<(), Error> {
        self.stats.slices += 1;
        let iid = self.slice_name(name);
        let cat_iid = self.category(cat);
        let ann = (self.annotation_name(ann), u64::from(source));
        if let Some(iid) = iid {
            let names = Some((iid, cat_iid));
            let mut p = [0u8; ANNOTATED_EDGE_ROOM];
            if let Some(n) = self.packed_edge(&mut p, t, track, SLICE_BEGIN, names, Some(ann)) {
                self.ordered(track, t)?;
                return self.append_packed(t, &p, n);
            }
        }
        self.begin_encoded(track, iid, cat_iid, None);
        self.uint_annotation(ann);
        self.ordered(track, t)?;
        self.emit(t)
    }

    /// The end of the innermost open slice on `track` at `t` (as
    /// [`end_slice`](Self::end_slice)), with the debug annotation `ann` =
    /// `source` if any (a signal's `signal source`).
    pub(super) fn end_annotated(
        &mut self,
        t: u64,
        track: u64,
        ann: Option<(&str, u32)>,
    ) -> Result<(), Error> {
        let Some((ann, source)) = ann else {
            return self.end_slice(t, track);
        };
        let ann = (self.annotation_name(ann), u64::from(source));
        // A signal's end that begins a derived wake-up flow carries its id.
        let flow = self.derived.take();
        let mut p = [0u8; ANNOTATED_EDGE_ROOM];
        if flow.is_none() {
            if let Some(n) = self.packed_edge(&mut p, t, track, SLICE_END, None, Some(ann)) {
                self.ordered(track, t)?;
                return self.append_packed(t, &p, n);
            }
        }
        self.end_encoded(track);
        self.uint_annotation(ann);
        if let Some((f, n)) = flow {
            put_fixed64(&mut self.event, f, n);
        }
        self.ordered(track, t)?;
        self.emit(t)
    }

    /// Appends a `uint` debug annotation (name iid, value) to `self.event`.
    fn uint_annotation(&mut self, (iid, value): (u64, u64)) {
        put_pair(
            &mut self.event,
            field::DEBUG_ANNOTATIONS,
            (field::ANNOTATION_NAME_IID, iid),
            (field::UINT_VALUE, value),
        );
    }

    /// Encodes a slice end on `track` into `self.event`.
    fn end_encoded(&mut self, track: u64) {
        let e = &mut self.event;
        e.clear();
        put_uint(e, field::TYPE, SLICE_END);
        put_track(e, self.st.track, track);
    }

    /// Appends a debug annotation `name` = `value` to `self.event` (its name
    /// interned).
    pub(super) fn annotate(&mut self, name: &str, value: Value<'_>) {
        let iid = self.annotation_name(name);
        if let Value::Uint(v) = value {
            put_pair(
                &mut self.event,
                field::DEBUG_ANNOTATIONS,
                (field::ANNOTATION_NAME_IID, iid),
                (field::UINT_VALUE, v),
            );
            return;
        }
        put_message(&mut self.event, field::DEBUG_ANNOTATIONS, |a| {
            put_uint(a, field::ANNOTATION_NAME_IID, iid);
            match value {
                Value::Uint(v) => put_uint(a, field::UINT_VALUE, v),
                Value::Bool(v) => put_uint(a, field::BOOL_VALUE, u64::from(v)),
                Value::Str(v) => put_bytes(a, field::STRING_VALUE, v.as_bytes()),
            }
        });
    }

    /// Appends the arguments of catalog event `e` from slot `from` on as debug
    /// annotations to `self.event` (as `qtrace dump` shows them: declared
    /// arguments always, undeclared ones when not 0).
    pub(super) fn put_args(&mut self, e: &Event, from: usize) {
        let idx = e.id.0 as usize;
        if idx >= self.events.len() {
            return;
        }
        let declared = self.events[idx].2.len();
        for (slot, (&value, unnamed)) in e.args.iter().zip(UNNAMED).enumerate() {
            if slot < from || (slot >= declared && value == 0) {
                continue;
            }
            let mut iid = self.st.arg_iids.get(idx)[slot];
            if iid == 0 {
                let arg_name = self.events[idx].2.get(slot).map_or(unnamed, |s| s);
                iid = self
                    .st
                    .annotation_names
                    .get(
                        arg_name,
                        true,
                        field::DEBUG_ANNOTATION_NAMES,
                        &mut self.interned,
                    )
                    .unwrap_or(0);
                let mut iids = self.st.arg_iids.get(idx);
                iids[slot] = iid;
                self.st.arg_iids.set(idx, iids);
            }
            put_pair(
                &mut self.event,
                field::DEBUG_ANNOTATIONS,
                (field::ANNOTATION_NAME_IID, iid),
                (field::UINT_VALUE, value),
            );
        }
    }

    /// Whether [`put_args`](Self::put_args) from slot `from` writes any
    /// annotation for `e`.
    #[inline]
    fn shows_args(&self, e: &Event, from: usize) -> bool {
        let Some((_, _, names)) = self.events.get(e.id.0 as usize) else {
            return false;
        };
        let declared = names.len();
        (from..e.args.len()).any(|slot| slot < declared || e.args[slot] != 0)
    }

    /// Whether a slice edge at `t` can be packed
    /// ([`packed_edge`](Self::packed_edge)): its time not before the
    /// sequence's clock, a small sequence id, no interned data to carry.
    #[inline]
    fn packable(&self, t: u64) -> bool {
        t >= self.st.clock && self.st.id < 1 << 56 && self.interned.is_empty()
    }

    /// A slice edge encoded whole into `p` (the same bytes as
    /// [`begin_for`](Self::begin_for), [`end_slice`](Self::end_slice) and
    /// the annotated ones through `self.event` and [`emit`](Self::emit)):
    /// a begin (`kind` [`SLICE_BEGIN`], with the iids of its name and
    /// category) or an end, with at most one `uint` annotation `ann` (name
    /// iid, value), [`packable`](Self::packable). Returns the packet's
    /// length; `None` for any other edge, or when `p` is shorter than
    /// [`EDGE_ROOM`] ([`ANNOTATED_EDGE_ROOM`] with an annotation).
    #[inline]
    fn packed_edge(
        &self,
        p: &mut [u8],
        t: u64,
        track: u64,
        kind: u64,
        names: Option<(u64, u64)>,
        ann: Option<(u64, u64)>,
    ) -> Option<usize> {
        let st = &self.st;
        let room = if ann.is_some() {
            ANNOTATED_EDGE_ROOM
        } else {
            EDGE_ROOM
        };
        if p.len() < room || !self.packable(t) {
            return None;
        }
        let mut m = put_uint_at(p, 2, field::TIMESTAMP, t - st.clock);
        m = put_uint_at(p, m, field::TRUSTED_SEQUENCE_ID, st.id);
        let at = m;
        p[at] = (field::TRACK_EVENT << 3 | 2) as u8;
        m = put_uint_at(p, at + 2, field::TYPE, kind);
        if st.track != Some(track) {
            m = put_uint_at(p, m, field::TRACK_UUID, track);
        }
        if let Some((name, cat)) = names {
            m = put_uint_at(p, m, field::NAME_IID, name);
            m = put_uint_at(p, m, field::CATEGORY_IIDS, cat);
        }
        if let Some((iid, value)) = ann {
            let a = m;
            p[a] = (field::DEBUG_ANNOTATIONS << 3 | 2) as u8;
            m = put_uint_at(p, a + 2, field::ANNOTATION_NAME_IID, iid);
            m = put_uint_at(p, m, field::UINT_VALUE, value);
            p[a + 1] = (m - a - 2) as u8;
        }
        p[at + 1] = (m - at - 2) as u8;
        p[0] = (field::TRACE_PACKET << 3 | 2) as u8;
        p[1] = (m - 2) as u8;
        Some(m)
    }

    /// Appends a packet encoded on the stack (the first `n` bytes of
    /// `packet`, filled in place by the caller: no array returned by value,
    /// whose copies were 4 % of the converting thread's instructions) to the
    /// current sequence's chunk; `t` is its time, the sequence's clock from
    /// now on.
    #[inline]
    fn append_packed<const N: usize>(
        &mut self,
        t: u64,
        packet: &[u8; N],
        n: usize,
    ) -> Result<(), Error> {
        let c = &mut self.st.chunk;
        let capacity = c.capacity();
        put_prefix(c, packet, n);
        let (len, grown) = (c.len(), c.capacity() - capacity);
        self.st.clock = t;
        self.filled(self.cur, len, grown)
    }

    /// Writes the instant of `e` on `track`.
    pub(super) fn instant(&mut self, e: &Event, track: u64) -> Result<(), Error> {
        let mut p = [0u8; INSTANT_ROOM];
        if self.flow.is_some() {
            return self.instant_general(e, track);
        }
        if let Some(n) = self.packed_instant(&mut p, e, track) {
            return self.append_packed(e.time, &p, n);
        }
        self.instant_general(e, track)
    }

    /// [`instant`](Self::instant) through `self.event` and
    /// [`emit`](Self::emit): any instant.
    fn instant_general(&mut self, e: &Event, track: u64) -> Result<(), Error> {
        let idx = e.id.0 as usize;
        let ev = &mut self.event;
        ev.clear();
        put_uint(ev, field::TYPE, INSTANT);
        put_track(ev, self.st.track, track);
        if idx < self.events.len() {
            let (mut name, mut cat) = self.st.event_iids.get(idx);
            // (`name` may be replaced by a run-time name below.)
            if name == 0 {
                let (n, c, _) = &self.events[idx];
                // Catalog names are bounded by the catalog: always interned.
                name = self
                    .st
                    .names
                    .get(n, true, field::EVENT_NAMES, &mut self.interned)
                    .unwrap_or(0);
                cat = self
                    .st
                    .categories
                    .get(c, true, field::EVENT_CATEGORIES, &mut self.interned)
                    .unwrap_or(0);
                self.st.event_iids.set(idx, (name, cat));
            }
            if !self.run_names.is_empty() {
                // A name record gave this event a run-time name.
                if let Some(n) = self.run_names.event(e.id) {
                    let n = n.to_string();
                    name = self
                        .st
                        .names
                        .get(&n, true, field::EVENT_NAMES, &mut self.interned)
                        .unwrap_or(0);
                }
            }
            let ev = &mut self.event;
            put_uint(ev, field::NAME_IID, name);
            put_uint(ev, field::CATEGORY_IIDS, cat);
            self.put_args(e, 0);
        } else {
            self.stats.unknown += 1;
            let name = self
                .st
                .names
                .get("unknown", true, field::EVENT_NAMES, &mut self.interned)
                .unwrap_or(0);
            let cat = self.category("unknown");
            let ev = &mut self.event;
            put_uint(ev, field::NAME_IID, name);
            put_uint(ev, field::CATEGORY_IIDS, cat);
            for (arg, value) in [
                ("id", u64::from(e.id.0)),
                ("arg0", e.args[0]),
                ("arg1", e.args[1]),
            ] {
                let iid = self
                    .st
                    .annotation_names
                    .get(arg, true, field::DEBUG_ANNOTATION_NAMES, &mut self.interned)
                    .unwrap_or(0);
                put_message(&mut self.event, field::DEBUG_ANNOTATIONS, |a| {
                    put_uint(a, field::ANNOTATION_NAME_IID, iid);
                    put_uint(a, field::UINT_VALUE, value);
                });
            }
        }
        if let Some((f, n)) = self.flow.take() {
            // A flow record (FORMAT.md 1.3.3): its instance on the instant.
            put_fixed64(&mut self.event, f, n);
        }
        self.emit(e.time)
    }

    /// The usual instant, the most frequent packet, encoded whole into `p`
    /// (the same bytes as [`instant`](Self::instant) through `self.event`
    /// and [`emit`](Self::emit)): a catalog event on its sequence's default
    /// track, its name, category and argument names interned already, its
    /// time not before the sequence's clock, no run-time name. Returns the
    /// packet's length; `None` for any other, or when `p` is shorter than
    /// [`INSTANT_ROOM`].
    #[inline]
    fn packed_instant(&self, p: &mut [u8], e: &Event, track: u64) -> Option<usize> {
        let idx = e.id.0 as usize;
        let st = &self.st;
        if p.len() < INSTANT_ROOM
            || st.track != Some(track)
            || e.time < st.clock
            || !self.interned.is_empty()
            || st.id >= 1 << 56
            || idx >= self.events.len()
            || (!self.run_names.is_empty() && self.run_names.event(e.id).is_some())
        {
            return None;
        }
        let (name, cat) = st.event_iids.get(idx);
        let iids = st.arg_iids.get(idx);
        let declared = self.events[idx].2.len();
        if name == 0 || cat == 0 {
            return None;
        }
        // The packet: key and length, timestamp delta, sequence id (at most
        // 2 + 11 + 9 bytes), the track event's key and length, then its
        // body: type, name, category, one annotation an argument shown (as
        // `put_args` writes them; at most 2 + 2 * 11 + 2 * 23 bytes).
        let mut m = put_uint_at(p, 2, field::TIMESTAMP, e.time - st.clock);
        m = put_uint_at(p, m, field::TRUSTED_SEQUENCE_ID, st.id);
        let body = m + 2;
        p[m] = (field::TRACK_EVENT << 3 | 2) as u8;
        let mut n = put_uint_at(p, body, field::TYPE, INSTANT);
        n = put_uint_at(p, n, field::NAME_IID, name);
        n = put_uint_at(p, n, field::CATEGORY_IIDS, cat);
        for (slot, &value) in e.args.iter().enumerate() {
            if slot >= declared && value == 0 {
                continue;
            }
            let iid = iids[slot];
            if iid == 0 || iid >= 1 << 56 {
                return None;
            }
            let at = n;
            p[at] = (field::DEBUG_ANNOTATIONS << 3 | 2) as u8;
            n = put_uint_at(p, at + 2, field::ANNOTATION_NAME_IID, iid);
            n = put_uint_at(p, n, field::UINT_VALUE, value);
            p[at + 1] = (n - at - 2) as u8;
        }
        if n - body >= 0x80 || n - 2 >= 0x80 {
            return None;
        }
        p[m + 1] = (n - body) as u8;
        p[0] = (field::TRACE_PACKET << 3 | 2) as u8;
        p[1] = (n - 2) as u8;
        Some(n)
    }

    /// A reassembled run. A name record names its source, task or event:
    /// a track already declared is declared again with the name (the trace
    /// processor renames it); later tracks, task slices and instants carry
    /// it. Any other run is an instant on its source's track, named after its
    /// event, with the event's first argument (when logged), the payload as
    /// `text` (or `bytes`, hexadecimal, when it is not UTF-8) and, when it is
    /// not whole, `partial` or `corrupt`, and `logged_len` when the logger
    /// cut it.
    pub(super) fn payload(&mut self, p: &Payload) -> Result<(), Error> {
        if let Some((kind, subject)) = p.name_of() {
            let before = self.names_of(kind, subject);
            self.run_names.learn(p);
            if p.state == PayloadState::Complete && self.names_of(kind, subject) != before {
                if kind == combine::NAME_SOURCE {
                    if let Some(&(uuid, _)) = self.sources.get(subject as u32) {
                        self.declare_source(subject as u32, uuid)?;
                    }
                } else if kind == combine::NAME_TASK {
                    if let Some(uuid) = self.tasks.get(&subject).map(|t| t.uuid) {
                        self.declare_task(subject, uuid)?;
                    }
                }
            }
            return Ok(());
        }
        let tracked = self.source_track(p.source)?;
        let track = self.instant_track(tracked)?;
        let (name, cat, arg) = match self.events.get(p.id.0 as usize) {
            Some((n, c, args)) => (
                self.run_names.event(p.id).unwrap_or(n).to_string(),
                c.clone(),
                args.first().map_or(UNNAMED[0], |a| a.as_str()).to_string(),
            ),
            None => ("unknown".into(), "unknown".into(), UNNAMED[0].to_string()),
        };
        let name_iid = self
            .st
            .names
            .get(&name, true, field::EVENT_NAMES, &mut self.interned);
        let cat_iid = self.category(&cat);
        let ev = &mut self.event;
        ev.clear();
        put_uint(ev, field::TYPE, INSTANT);
        put_track(ev, self.st.track, track);
        put_uint(ev, field::NAME_IID, name_iid.unwrap_or(0));
        put_uint(ev, field::CATEGORY_IIDS, cat_iid);
        if let Some(a) = p.arg {
            self.annotate(&arg, Value::Uint(a));
        }
        match std::str::from_utf8(&p.bytes) {
            Ok(text) => self.annotate("text", Value::Str(text)),
            Err(_) => {
                let mut hex = String::with_capacity(2 * p.bytes.len());
                for b in &p.bytes {
                    let _ = write!(hex, "{b:02x}");
                }
                self.annotate("bytes", Value::Str(&hex));
            }
        }
        match p.state {
            PayloadState::Complete => {}
            PayloadState::Cut { received, expected } => {
                let of =
                    expected.map_or("the begin record lost".to_string(), |n| format!("of {n}"));
                self.annotate("partial", Value::Str(&format!("{received} records {of}")));
            }
            PayloadState::Mismatch => self.annotate("corrupt", Value::Bool(true)),
        }
        if p.truncated_at_logging() {
            self.annotate(
                "logged_len",
                Value::Uint(u64::from(p.logged_len.unwrap_or(0))),
            );
        }
        self.emit(p.time)
    }

    /// The name known for a name record's subject.
    pub(super) fn names_of(&self, kind: u8, subject: u64) -> Option<String> {
        match kind {
            combine::NAME_SOURCE => self.run_names.source(subject as u32),
            combine::NAME_TASK => self.run_names.task(subject),
            combine::NAME_EVENT_ID => u16::try_from(subject)
                .ok()
                .and_then(|id| self.run_names.event(EventId(id))),
            _ => None,
        }
        .map(str::to_string)
    }

    /// Writes a counter record (FORMAT.md 1.3.2) as a value on the track of
    /// its source and counter: a child `class:S` of the source's track
    /// (`tracked`), made at the counter's first value there; for a source
    /// past `max_tracks`, one shared track `other sources class:S`. A queue
    /// counter (1.3.4) has a track per queue too, `class:S (queue N)`.
    /// Integer kinds are `counter_value` (a `u64` past `i64::MAX` is
    /// `i64::MAX`), `f64` is `double_counter_value`.
    pub(super) fn counter_value(
        &mut self,
        e: &Event,
        counter: usize,
        tracked: Option<u64>,
    ) -> Result<(), Error> {
        let Some(info) = self.counters.get(counter) else {
            return Ok(());
        };
        let queue = info.queue(e);
        let key = (tracked.map(|_| e.source), counter, queue);
        let kind = info.kind;
        let uuid = match self.counter_tracks.get(&key) {
            Some(&u) => u,
            None => {
                let (name, unit) = (info.series_name(queue), info.unit.clone());
                let u = match tracked {
                    Some(parent) => {
                        self.new_track(Some(parent), format_args!("{name}"), Some(&unit))?
                    }
                    None => {
                        self.new_track(None, format_args!("other sources {name}"), Some(&unit))?
                    }
                };
                self.counter_tracks.insert(key, u);
                u
            }
        };
        let ev = &mut self.event;
        ev.clear();
        put_uint(ev, field::TYPE, COUNTER);
        put_track(ev, self.st.track, uuid);
        let v = e.args[0];
        match kind {
            CounterKind::U64 => put_int(ev, field::COUNTER_VALUE, v.min(i64::MAX as u64) as i64),
            CounterKind::I64 => put_int(ev, field::COUNTER_VALUE, v as i64),
            CounterKind::F64 => put_double(ev, field::DOUBLE_COUNTER_VALUE, f64::from_bits(v)),
        }
        self.ordered(uuid, e.time)?;
        self.emit(e.time)
    }

    /// Steps the `lost events` counter to the total lost so far.
    pub(super) fn loss_counter(&mut self, t: u64) -> Result<(), Error> {
        let uuid = match self.loss_track {
            Some(u) => u,
            None => {
                let u = self.new_track(None, format_args!("lost events"), Some(""))?;
                self.loss_track = Some(u);
                u
            }
        };
        let e = &mut self.event;
        e.clear();
        put_uint(e, field::TYPE, COUNTER);
        put_track(e, self.st.track, uuid);
        put_int(
            e,
            field::COUNTER_VALUE,
            self.stats.lost.min(i64::MAX as u64) as i64,
        );
        self.ordered(uuid, t)?;
        self.emit(t)
    }
    /// Interns a slice name (a numbered one from its cache, else formatted
    /// into the reused `self.text`, which holds it when it is not interned).
    pub(super) fn slice_name(&mut self, name: SliceName<'_>) -> Option<u64> {
        match name {
            SliceName::Fmt(args) => self.slice_text(args),
            SliceName::Numbered(prefix, n) => {
                if let Some(&iid) = self.st.numbered.get(&(prefix, n)) {
                    return Some(iid);
                }
                let iid = self.slice_text(format_args!("{} {n}", prefix.as_str()));
                if let Some(iid) = iid {
                    self.st.numbered.insert((prefix, n), iid);
                }
                iid
            }
        }
    }

    /// Interns the slice name `name` formats.
    fn slice_text(&mut self, name: std::fmt::Arguments<'_>) -> Option<u64> {
        self.text.clear();
        let _ = self.text.write_fmt(name);
        let before = self.st.names.ids.len();
        let iid = self.st.names.get(
            &self.text,
            self.st.slice_names < self.options.max_interned,
            field::EVENT_NAMES,
            &mut self.interned,
        );
        if self.st.names.ids.len() > before {
            self.st.slice_names += 1;
        }
        iid
    }

    /// The iid of a category (a slice's: `task`, `interrupt`, `semaphore`,
    /// `scope`, remembered per sequence; or a class name).
    pub(super) fn category(&mut self, name: &str) -> u64 {
        self.remembered_iid(
            name,
            fixed_category(name),
            |st| &mut st.categories,
            field::EVENT_CATEGORIES,
        )
    }

    /// The iid of a debug annotation's name (the semaphore slices',
    /// `source` and `signal source`, remembered per sequence).
    fn annotation_name(&mut self, name: &str) -> u64 {
        self.remembered_iid(
            name,
            fixed_annotation(name),
            |st| &mut st.annotation_names,
            field::DEBUG_ANNOTATION_NAMES,
        )
    }

    /// The iid of `name` in the sequence's table `table` (interned as
    /// `kind` when new); a name with a `slot` of the fixed ones is looked
    /// up there first and remembered there (no string hashed next time).
    #[inline]
    fn remembered_iid(
        &mut self,
        name: &str,
        slot: Option<usize>,
        table: fn(&mut Sequence) -> &mut Interner,
        kind: u32,
    ) -> u64 {
        if let Some(&iid) = slot.and_then(|k| self.st.fixed.get(k)).filter(|&&i| i != 0) {
            return iid;
        }
        let iid = table(&mut self.st)
            .get(name, true, kind, &mut self.interned)
            .unwrap_or(0);
        if let Some(k) = slot {
            self.st.fixed[k] = iid;
        }
        iid
    }
}

#[cfg(test)]
mod tests {
    use crate::classes::{system, user, Catalog};
    use crate::export::perfetto::PerfettoWriter;
    use crate::export::EventSink;
    use crate::Event;

    #[test]
    fn a_packed_instant_is_the_bytes_of_the_general_path() {
        let catalog = Catalog::builtin();
        let mut w = PerfettoWriter::new(&catalog, 0, Vec::new())
            .unwrap()
            .with_compression(false);
        // The first of each event interns its names (the general path).
        for e in [
            Event::new(100, user::USER0, 0, [1, 0]),
            Event::new(150, user::USER1, 0, [5, 7]),
        ] {
            w.push(&e).unwrap();
        }
        let track = w.sources.get(0).unwrap().0;
        for e in [
            Event::new(200, user::USER0, 0, [u64::MAX, 0]),
            Event::new(200, user::USER1, 0, [0, 1 << 40]),
            Event::new(300, user::USER1, 0, [0, 0]),
            Event::new(1 << 50, user::USER0, 0, [3, 9]),
        ] {
            let mut packet = [0u8; super::INSTANT_ROOM];
            let n = w.packed_instant(&mut packet, &e, track).expect("packed");
            // Too little room: not packed.
            assert!(w
                .packed_instant(&mut packet[..super::INSTANT_ROOM - 1], &e, track)
                .is_none());
            let before = w.st.chunk.len();
            w.instant_general(&e, track).unwrap();
            assert_eq!(&w.st.chunk[before..], &packet[..n], "{e:?}");
        }
        // Not packed: a time before the sequence's clock (absolute on
        // BOOTTIME), another track, an event whose names are not interned.
        let p = &mut [0u8; super::INSTANT_ROOM];
        assert!(w
            .packed_instant(p, &Event::new(10, user::USER0, 0, [1, 0]), track)
            .is_none());
        assert!(w
            .packed_instant(p, &Event::new(1 << 51, user::USER0, 0, [1, 0]), track + 1)
            .is_none());
        let e = Event::new(1 << 51, system::CREATE, 0, [1, 0]);
        assert!(w.packed_instant(p, &e, track).is_none());
    }

    #[test]
    fn a_packed_slice_edge_is_the_bytes_of_the_general_path() {
        use super::super::schema::{SLICE_BEGIN, SLICE_END};
        let catalog = Catalog::builtin();
        let mut w = PerfettoWriter::new(&catalog, 0, Vec::new())
            .unwrap()
            .with_compression(false);
        // Two dispatches: source 0's track, tasks 3 and 4's, names interned.
        w.push(&Event::new(100, system::SCHEDULE, 0, [3, 0]))
            .unwrap();
        w.push(&Event::new(200, system::SCHEDULE, 0, [4, 0]))
            .unwrap();
        let track = w.sources.get(0).unwrap().0;
        let task = w.tasks.get(&4).unwrap().uuid;
        assert!(w.interned.is_empty());
        // Begins and ends on the sequence's track and on another one, with
        // small and large times, iids, track uuids and annotation values,
        // without an annotation and with one.
        for (t, on, names, ann) in [
            (200, track, Some((1, 1)), None),
            (300, task, Some((2, 1)), None),
            (300, track, None, None),
            (1 << 40, task, None, None),
            (1 << 62, u64::MAX, Some((u64::MAX, 1 << 56)), None),
            (u64::MAX, track, Some((127, 128)), None),
            (u64::MAX, task, Some((5, 1)), Some((4, 0))),
            (u64::MAX, task, None, Some((5, 3))),
            (u64::MAX, track, None, Some((u64::MAX, u64::MAX))),
            (
                u64::MAX,
                u64::MAX,
                Some((u64::MAX, u64::MAX)),
                Some((u64::MAX, u64::MAX)),
            ),
        ] {
            let kind = if names.is_some() {
                SLICE_BEGIN
            } else {
                SLICE_END
            };
            let mut packet = [0u8; super::ANNOTATED_EDGE_ROOM];
            let n = w
                .packed_edge(&mut packet, t, on, kind, names, ann)
                .expect("packed");
            let mut small = [0u8; super::EDGE_ROOM];
            if ann.is_none() {
                let m = w.packed_edge(&mut small, t, on, kind, names, ann).unwrap();
                assert_eq!(&small[..m], &packet[..n]);
                let short = &mut small[..super::EDGE_ROOM - 1];
                assert!(w.packed_edge(short, t, on, kind, names, ann).is_none());
            } else {
                assert!(w.packed_edge(&mut small, t, on, kind, names, ann).is_none());
            }
            let before = w.st.chunk.len();
            match names {
                Some((name, cat)) => w.begin_encoded(on, Some(name), cat, None),
                None => w.end_encoded(on),
            }
            if let Some(ann) = ann {
                w.uint_annotation(ann);
            }
            w.emit(t).unwrap();
            let general = &w.st.chunk[before..];
            assert_eq!(general, &packet[..n], "{t} {on} {names:?} {ann:?}");
        }
        // Not packed: a time before the sequence's clock.
        assert!(w
            .packed_edge(
                &mut [0u8; super::EDGE_ROOM],
                10,
                track,
                SLICE_END,
                None,
                None
            )
            .is_none());
        // A schedule shows no argument after its task (a slice begin stands
        // for it alone); an event with a second argument logged does.
        assert!(!w.shows_args(&Event::new(1, system::SCHEDULE, 0, [3, 0]), 1));
        assert!(w.shows_args(&Event::new(1, system::SCHEDULE, 0, [3, 5]), 1));
    }
}
