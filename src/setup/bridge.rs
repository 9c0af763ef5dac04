//! The `tracing` bridge (cargo feature `tracing`): a
//! [`tracing_subscriber::Layer`] that records `tracing` events and spans into
//! qtrace.
//!
//! - [`QtraceLayer::new`] (phase 1) defines a user class `tracing` with two
//!   span events (`span_begin`, `span_end`, arguments `span` and `callsite`)
//!   and `slots` callsite events (`callsite0`, `callsite1`, …). Route the
//!   class to a queue with [`Tracer::assign_class`] and [`QtraceLayer::class`].
//! - Each `tracing` callsite is **interned once**, at its first event or
//!   span through this layer, to the next free callsite event: the first
//!   sight takes a mutex (once per callsite); every later event finds its
//!   callsite without a lock, in an open-addressing table keyed by the
//!   address of the callsite's `static` metadata (an atomic load or two; no
//!   hashing beyond one multiplication). The callsite's description — level,
//!   target, name and field names, as `INFO app::db query: message,rows` for
//!   a span `query` (`tracing` names an event `event <file>:<line>`) — is
//!   recorded as a run-time event name ([`Tracer::name_event`]), so readers
//!   name it: `qtrace dump` shows it in place of `callsite3`, Chrome JSON
//!   names its instants and slices with it. The tracer also keeps the name
//!   ([`Tracer::recorded_names`]), and every file a fixed or circular queue
//!   saves starts with the names it keeps (FORMAT.md 1.8, "Names
//!   prologue"): a circular queue that overwrote the first name records
//!   still saves a file that names every callsite. Events and span
//!   creations of callsites beyond `slots` are not recorded, and each is
//!   counted ([`QtraceLayer::unmapped`]).
//! - An event is formatted only when its callsite event is enabled
//!   ([`Tracer::is_enabled`]). Its first two **numeric** fields (`u64`,
//!   `i64` as two's complement, `bool`) go to the record's two arguments in
//!   field order; **string and debug** fields (and the message, floats and
//!   128-bit integers, which `tracing` hands over as debug values) are
//!   formatted into a stack buffer of [`QtraceLayer::MAX_TEXT`] bytes (never the heap),
//!   with numeric fields after the second. An event without text is one
//!   record ([`Tracer::log_event`]); an event with text is a combine run
//!   ([`Tracer::log_event_bytes`]) whose begin record keeps the first
//!   numeric field, the second being appended to the text as `name=value`.
//! - A **span** records `span_begin` when it is entered and `span_end` when
//!   it is exited (`args = [span id, callsite event id]`); its fields, if
//!   its callsite declares any, are recorded once, when it is created, as an
//!   event of its callsite (values given later with `Span::record` are
//!   not recorded). Chrome JSON draws each begin/end pair as a slice named
//!   after the span.
//! - The layer is [`Clone`] (one reference count): give a clone to the
//!   subscriber and keep one for [`QtraceLayer::unmapped`].
//!
//! ```
//! # let _cwd = tempfile::tempdir().unwrap(); std::env::set_current_dir(_cwd.path()).unwrap(); // own directory: doc tests run in parallel
//! use std::sync::Arc;
//! use qtrace::bridge::QtraceLayer;
//! use qtrace::queues::{Fixed, FixedParams};
//! use qtrace::Tracer;
//! use tracing_subscriber::layer::SubscriberExt;
//!
//! let tracer = Arc::new(Tracer::new());
//! let q = tracer.create_queue::<Fixed>(FixedParams::default())?;
//! let layer = QtraceLayer::new(Arc::clone(&tracer), 64)?;
//! tracer.assign_class(layer.class(), q)?;
//! tracer.activate()?;
//! let subscriber = tracing_subscriber::registry().with(layer);
//! tracing::subscriber::with_default(subscriber, || {
//!     let span = tracing::info_span!("request", id = 7u64);
//!     let _enter = span.enter();
//!     tracing::info!(rows = 3u64, table = "users", "query done");
//! });
//! // Reassembled: the event's number in its argument, its strings as text.
//! let mut found = Vec::new();
//! let mut asm = qtrace::combine::Assembler::new();
//! for e in tracer.queue(q)?.as_fixed().unwrap().snapshot_events() {
//!     asm.push(e, &mut |item| {
//!         if let qtrace::combine::Item::Payload(p) = item {
//!             found.push((p.arg, p.text().into_owned()));
//!         }
//!     });
//! }
//! assert!(found.contains(&(Some(3), "query done table=users".to_string())));
//! # Ok::<(), qtrace::Error>(())
//! ```

use std::fmt::{self, Write as _};
use std::sync::atomic::{AtomicU16, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use arrayvec::ArrayString;
use tracing_core::field::{Field, Visit};
use tracing_core::span::{Attributes, Id};
use tracing_core::{Event as TracingEvent, Metadata, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

use crate::classes::ClassSpec;
use crate::model::event::EventId;
use crate::queue::config_error::ConfigError;
use crate::router::tracer::Tracer;
use crate::ClassId;

/// Records `tracing` events and spans into a [`Tracer`] (see the [module
/// documentation](self)).
///
/// Cloning is cheap (one reference count): every clone is the same layer,
/// with one callsite table, one set of names and one [`QtraceLayer::unmapped`]
/// count. Give a clone to the subscriber and keep one to read its counters:
///
/// ```
/// # let _cwd = tempfile::tempdir().unwrap(); std::env::set_current_dir(_cwd.path()).unwrap(); // own directory: doc tests run in parallel
/// use std::sync::Arc;
/// use qtrace::bridge::QtraceLayer;
/// use qtrace::queues::{Circular, CircularParams};
/// use qtrace::Tracer;
/// use tracing_subscriber::layer::SubscriberExt;
///
/// let tracer = Arc::new(Tracer::new());
/// let q = tracer.create_queue::<Circular>(CircularParams::default())?;
/// let layer = QtraceLayer::new(Arc::clone(&tracer), 1)?;
/// tracer.assign_class(layer.class(), q)?;
/// tracer.activate()?;
/// let subscriber = tracing_subscriber::registry().with(layer.clone());
/// tracing::subscriber::with_default(subscriber, || {
///     tracing::info!("one callsite");
///     tracing::info!("a second one: no slot left");
/// });
/// assert_eq!(layer.unmapped(), 1);
/// # Ok::<(), qtrace::Error>(())
/// ```
#[derive(Clone)]
pub struct QtraceLayer {
    inner: Arc<Shared>,
}

/// What every clone of a layer shares.
struct Shared {
    tracer: Arc<Tracer>,
    class: ClassId,
    span_begin: EventId,
    span_end: EventId,
    first: u16,
    slots: u16,
    /// Interned callsites, read without a lock on every event.
    callsites: CallsiteTable,
    /// Descriptions of the interned callsites, by slot; its lock also
    /// serialises interning.
    described: parking_lot::Mutex<Vec<String>>,
    unmapped: AtomicU64,
}

impl fmt::Debug for QtraceLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QtraceLayer")
            .field("class", &self.inner.class)
            .field("slots", &self.inner.slots)
            .field("interned", &self.inner.described.lock().len())
            .field("unmapped", &self.unmapped())
            .finish()
    }
}

impl QtraceLayer {
    /// The class the layer defines.
    ///
    /// ```
    /// assert_eq!(qtrace::bridge::QtraceLayer::CLASS_NAME, "tracing");
    /// ```
    pub const CLASS_NAME: &'static str = "tracing";
    /// The largest text of one event's string fields, in bytes (the rest is
    /// cut, and the text ends with `…`).
    pub const MAX_TEXT: usize = 1024;

    /// Defines the `tracing` class with `slots` callsite events (phase 1)
    /// and returns the layer.
    ///
    /// # Errors
    ///
    /// What [`Tracer::define_class`] returns: [`ConfigError::AfterPhase2`] after
    /// [`Tracer::activate`] (create the layer before it), a class `tracing`
    /// already defined, or too many events in the tracer (at most
    /// [`EventId::MAX_EVENTS`] in all: ask for fewer slots).
    pub fn new(tracer: Arc<Tracer>, slots: u16) -> Result<Self, ConfigError> {
        let mut spec = ClassSpec::new(Self::CLASS_NAME, "events and spans of the tracing crate")
            .event("span_begin", "a span was entered", &["span", "callsite"])
            .event("span_end", "a span was exited", &["span", "callsite"]);
        for i in 0..slots {
            spec = spec.event(format!("callsite{i}"), "", &["a0", "a1"]);
        }
        let defined = tracer.define_class(spec)?;
        let id = |name: &str| defined.event(name).expect("defined above");
        let span_begin = id("span_begin");
        Ok(QtraceLayer {
            inner: Arc::new(Shared {
                span_end: id("span_end"),
                first: span_begin.0 + 2,
                class: defined.id,
                span_begin,
                slots,
                tracer,
                callsites: CallsiteTable::new(slots),
                described: parking_lot::Mutex::new(Vec::new()),
                unmapped: AtomicU64::new(0),
            }),
        })
    }

    /// The `tracing` class, to route with [`Tracer::assign_class`].
    pub fn class(&self) -> ClassId {
        self.inner.class
    }

    /// Events and spans of callsites that found no free callsite event (the
    /// layer was created with too few slots): not recorded.
    pub fn unmapped(&self) -> u64 {
        self.inner.unmapped.load(Ordering::Relaxed)
    }

    /// Records the names of every callsite interned so far once more, into
    /// every queue. Saved files do not need it: the tracer keeps the names
    /// and every file a fixed or circular queue saves (shutdown, snapshot,
    /// snapshot on trigger) starts with them. Call it for a reader of the
    /// queue's records in memory
    /// ([`CircularQueue::snapshot_events`](crate::queues::CircularQueue::snapshot_events)),
    /// or for a user-defined queue, once the ring may have overwritten the
    /// first name records.
    ///
    /// # Errors
    ///
    /// [`ConfigError::AfterShutdown`] once the tracer is shut down.
    pub fn record_names(&self) -> Result<(), ConfigError> {
        let s = &*self.inner;
        let described = s.described.lock();
        for (i, text) in described.iter().enumerate() {
            s.tracer.name_event(EventId(s.first + i as u16), text)?;
        }
        Ok(())
    }
}

impl Shared {
    /// The callsite event of `meta`, interning it on first sight.
    #[inline]
    fn intern(&self, meta: &'static Metadata<'static>) -> Option<EventId> {
        let key = callsite_key(meta);
        if let Some(id) = self.callsites.get(key) {
            return Some(id);
        }
        self.intern_slow(key, meta)
    }

    #[cold]
    #[inline(never)]
    fn intern_slow(&self, key: usize, meta: &'static Metadata<'static>) -> Option<EventId> {
        let mut described = self.described.lock();
        if let Some(id) = self.callsites.get(key) {
            return Some(id);
        }
        if described.len() >= self.slots as usize {
            return None;
        }
        let id = EventId(self.first + described.len() as u16);
        self.callsites.insert(key, id);
        let text = describe(meta);
        let _ = self.tracer.name_event(id, &text);
        described.push(text);
        Some(id)
    }

    /// Records the fields `record` visits as event `id`.
    fn record(&self, id: EventId, record: impl FnOnce(&mut Fields)) {
        if !self.tracer.is_enabled(id) {
            return;
        }
        let mut fields = Fields::default();
        record(&mut fields);
        if fields.text.is_empty() {
            self.tracer.log_event(id, fields.args);
        } else {
            if fields.numeric >= 2 {
                let (name, value) = (fields.second, fields.args[1]);
                fields.text_field(name, format_args!("{value}"));
            }
            self.tracer
                .log_event_bytes(id, fields.args[0], fields.text.as_bytes());
        }
    }
}

/// A callsite's key: the address of its metadata, a `static` of the
/// callsite (never 0, the table's "empty").
fn callsite_key(meta: &'static Metadata<'static>) -> usize {
    meta as *const Metadata<'static> as usize
}

/// Callsite → event id, in open addressing over the metadata's address:
/// a lookup is an atomic load or two and no lock, because a lock and a
/// SipHash probe cost more than the record itself (docs/benchmarks-history.md, "`tracing`
/// events"). Entries are only added (under the layer's `described` lock),
/// never removed; the table has at least twice as many entries as the
/// layer has slots, so a probe always ends at a free entry.
struct CallsiteTable {
    keys: Box<[AtomicUsize]>,
    ids: Box<[AtomicU16]>,
    shift: u32,
}

impl CallsiteTable {
    fn new(slots: u16) -> Self {
        let len = (2 * usize::from(slots)).max(2).next_power_of_two();
        CallsiteTable {
            keys: (0..len).map(|_| AtomicUsize::new(0)).collect(),
            ids: (0..len).map(|_| AtomicU16::new(0)).collect(),
            shift: usize::BITS - len.trailing_zeros(),
        }
    }

    /// Where `key`'s probe starts (Fibonacci hashing of the address).
    #[inline]
    fn home(&self, key: usize) -> usize {
        // `shift` < usize::BITS: the table has at least 2 entries.
        key.wrapping_mul(0x9E37_79B9_7F4A_7C15_u64 as usize) >> self.shift
    }

    #[inline]
    fn get(&self, key: usize) -> Option<EventId> {
        let mask = self.keys.len() - 1;
        let mut i = self.home(key);
        for _ in 0..self.keys.len() {
            // Acquire: the id stored before the key is visible.
            match self.keys[i].load(Ordering::Acquire) {
                k if k == key => return Some(EventId(self.ids[i].load(Ordering::Relaxed))),
                0 => return None,
                _ => i = (i + 1) & mask,
            }
        }
        None
    }

    /// Adds `key` (absent); callers hold the layer's `described` lock.
    fn insert(&self, key: usize, id: EventId) {
        let mask = self.keys.len() - 1;
        let mut i = self.home(key);
        while self.keys[i].load(Ordering::Relaxed) != 0 {
            i = (i + 1) & mask;
        }
        self.ids[i].store(id.0, Ordering::Relaxed);
        self.keys[i].store(key, Ordering::Release);
    }
}

/// `LEVEL target name: field,field`.
fn describe(meta: &Metadata<'_>) -> String {
    let mut s = format!("{} {} {}", meta.level(), meta.target(), meta.name());
    for (i, f) in meta.fields().iter().enumerate() {
        s.push_str(if i == 0 { ": " } else { "," });
        s.push_str(f.name());
    }
    s
}

/// An event's fields: numbers to arguments, the rest to text.
#[derive(Default)]
struct Fields {
    args: [u64; 2],
    numeric: usize,
    second: &'static str,
    text: ArrayString<{ QtraceLayer::MAX_TEXT }>,
    full: bool,
}

impl Fields {
    fn number(&mut self, field: &Field, value: u64) {
        match self.numeric {
            0 => self.args[0] = value,
            1 => {
                self.args[1] = value;
                self.second = field.name();
            }
            _ => self.text_field(field.name(), format_args!("{value}")),
        }
        self.numeric += 1;
    }

    /// Appends `name=value` (just the value for the message).
    fn text_field(&mut self, name: &str, value: fmt::Arguments<'_>) {
        if self.full {
            return;
        }
        let sep = if self.text.is_empty() { "" } else { " " };
        let ok = if name == "message" {
            write!(self.text, "{sep}{value}")
        } else {
            write!(self.text, "{sep}{name}={value}")
        };
        if ok.is_err() {
            // Cut, with a mark that fits.
            self.full = true;
            while self.text.len() > QtraceLayer::MAX_TEXT - '…'.len_utf8() {
                self.text.pop();
            }
            self.text.push('…');
        }
    }
}

impl Visit for Fields {
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.number(field, value);
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.number(field, value as u64);
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.number(field, value as u64);
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.text_field(field.name(), format_args!("{value}"));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.text_field(field.name(), format_args!("{value:?}"));
    }
}

impl<S> Layer<S> for QtraceLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_event(&self, event: &TracingEvent<'_>, _ctx: Context<'_, S>) {
        let s = &*self.inner;
        match s.intern(event.metadata()) {
            Some(id) => s.record(id, |f| event.record(f)),
            None => {
                s.unmapped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, _id: &Id, _ctx: Context<'_, S>) {
        let s = &*self.inner;
        match s.intern(attrs.metadata()) {
            Some(id) => {
                if !attrs.fields().is_empty() {
                    s.record(id, |f| attrs.record(f));
                }
            }
            None => {
                s.unmapped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        let s = &*self.inner;
        if let Some(cs) = ctx.metadata(id).and_then(|m| s.intern(m)) {
            s.tracer
                .log_event(s.span_begin, [id.into_u64(), cs.0 as u64]);
        }
    }

    fn on_exit(&self, id: &Id, ctx: Context<'_, S>) {
        let s = &*self.inner;
        if let Some(cs) = ctx.metadata(id).and_then(|m| s.intern(m)) {
            s.tracer.log_event(s.span_end, [id.into_u64(), cs.0 as u64]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_callsite_table_finds_every_key_and_no_other() {
        let table = CallsiteTable::new(100);
        assert_eq!(table.keys.len(), 256);
        // Addresses 8 apart, as statics are; and keys that share a home.
        let mut keys: Vec<usize> = (1..=90).map(|i| 0x5555_0000 + 8 * i).collect();
        let home = table.home(keys[0]);
        keys.extend(
            (1..4096usize)
                .map(|k| k * 16)
                .filter(|&k| table.home(k) == home)
                .take(10),
        );
        for (i, &k) in keys.iter().enumerate() {
            assert_eq!(table.get(k), None, "{k:#x} before insert");
            table.insert(k, EventId(1000 + i as u16));
        }
        for (i, &k) in keys.iter().enumerate() {
            assert_eq!(table.get(k), Some(EventId(1000 + i as u16)), "{k:#x}");
        }
        assert_eq!(table.get(0x7777_0001), None);
        // No slots: a table of 2 empty entries answers None.
        assert_eq!(CallsiteTable::new(0).get(0x1000), None);
    }
}
