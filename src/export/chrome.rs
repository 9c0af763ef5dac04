//! Chrome Trace Event JSON output, for Perfetto's UI and `chrome://tracing`.
//!
//! # What is written
//!
//! One JSON object, `{"displayTimeUnit":"ns","otherData":{…},"traceEvents":[…]}`,
//! with one trace event per line. Times (`ts`) are microseconds since the
//! trace's clock origin, with three decimals (exact nanoseconds); the origin
//! itself is in `otherData.clock_origin_unix_ns`.
//!
//! - Process 1, "qtrace sources", has one thread per source (`tid` = the
//!   source number; the tracer's own source `u32::MAX` is named "tracer").
//! - Every record is an instant event (`"ph":"i"`) on its source's thread, named
//!   after the event, with the class as category and the named arguments as
//!   `args` — every argument `qtrace dump` shows, named as it names them
//!   (see [`args`](super::args)). Arguments above 2^53 (which JavaScript numbers cannot hold) are
//!   written as hexadecimal strings.
//! - A counter record (FORMAT.md 1.3.2) is a counter event (`"ph":"C"`)
//!   named `class:S` (category `counter`), with `"id"` its source as a
//!   string (each source's values are a series of their own) and the value
//!   in `args` under the counter's unit, or `value` when it has none: an
//!   integer kind as a JSON integer with all its digits (JavaScript readers
//!   round past 2^53), an `f64` as a number
//!   (`"NaN"`, `"inf"`, `"-inf"` as strings).
//! - A flow record (FORMAT.md 1.3.3) is its instant, then a flow event on
//!   the same thread and time: `"ph":"s"` (begin), `"t"` (step) or `"f"`
//!   with `"bp":"e"` (end), named `class:S`, category `flow`, `"id"` the
//!   instance's number (from 1, in the order instances begin: an instance
//!   is the record's (origin, id), so ids of different origins never
//!   meet). A step or end of no open instance has no flow event.
//! - A derived wake-up flow (the analysis's, FORMAT.md 1.3.3: a
//!   `semaphore:signal` or the `system:activate` of an interrupt's handler
//!   to the woken task's next `system:schedule`) is a flow event named and
//!   of category `wake` after each of the two instants: `"ph":"s"` at the
//!   signal or activate, `"f"` with `"bp":"e"` at the schedule (binding to
//!   the `task N` slice it begins), `"id"` 2^52 + k (k from 1 in the order
//!   of the wakes: never a declared flow's instance number).
//! - Hoops records are global instant markers (`"s":"g"`) named
//!   `hoops (N lost)`, with `lost` and `queue` in `args`.
//! - Duration events nest on every thread:
//!   - a **task** slice (`task N`, category `task`) from a `system:schedule` to
//!     the next `system:schedule` on the same source (or the end of the trace);
//!   - an **interrupt** slice (`irq N`, category `interrupt`) from a
//!     `lowlevel:interrupt` to the next event of the same source, at most
//!     [`ChromeOptions::interrupt_max_ns`] long — so it always nests inside the
//!     task slice that it interrupted;
//!   - a **semaphore** slice (`task T sem S`, category `semaphore`) from a
//!     `semaphore:wait` or `semaphore:waitnb` to the `semaphore:signal` of the
//!     same task and semaphore, on its own thread of process 2, "qtrace
//!     semaphores" (one thread per task/semaphore pair, so different pairs
//!     never overlap on a thread; repeated waits of one pair nest, last in
//!     first out).
//!
//!   - a **scope** slice (`class:S`, category `scope`) from an `S.begin` to
//!     the `S.end` that closes it on the same source (FORMAT.md 1.3.1), on
//!     the source's thread of process 3, "qtrace scopes" (apart from its
//!     task and interrupt slices, which a scope may cross); the begin's named
//!     arguments are the `B`'s `args`, the end's code the `E`'s (`code`), or
//!     `ended` when no end event closed it.
//!
//!   Task, interrupt and scope slices are `B`/`E` pairs written as they happen; every
//!   thread's `B`/`E` times are non-decreasing in file order (a time earlier
//!   than the thread's previous one is raised to it), so each `E` closes the
//!   innermost open `B` at a time no earlier than its begin. Semaphore slices
//!   are `X` (complete) events written at the signal, because a `waitnb` may
//!   have failed: one that is never signalled is dropped (counted in
//!   [`ConvertStats::unpaired`]), while a blocking `wait` never signalled is
//!   shown held until the end of the trace.
//!
//! The slices are derived once for this and the [Perfetto](super::perfetto)
//! export (`src/export/slices.rs`), so both draw the same ones.
//!
//! # Memory
//!
//! The writer keeps, per source, the open task and the pending interrupt, and
//! per task/semaphore pair the stack of open waits: bounded by
//! [`ChromeOptions::max_tracks`] and [`ChromeOptions::max_open_waits`] (past
//! which the oldest open `waitnb` is forgotten, or, when the oldest is a
//! blocking `wait`, the new wait opens nothing). Beyond those limits events
//! are still written as instants and counted in [`ConvertStats::unpaired`].
//!
//! # Why by hand
//!
//! The output is a flat sequence of small objects with fixed keys, numbers and
//! names that the catalog has already validated; formatting it directly into a
//! buffered writer costs no allocation per event and no dependency of the
//! library. The tests parse every output with `serde_json`.

use std::io::{BufWriter, Write};

use super::args::UNNAMED;
use super::slices::{Edge, SliceOptions, Slices, Source};
use super::wakes::{WakeStep, Wakes};
use super::ExportError as Error;
use super::{ConvertStats, EventSink};
use crate::classes::counters::CounterTable;
use crate::classes::flows::{FlowTable, FlowTracker};
use crate::classes::scopes::ScopeTable;
use crate::classes::{tracer, Catalog};
use crate::model::combine::{self, Assembler, Item, Names as RunNames, Payload, PayloadState};
use crate::model::event::TRACER_SOURCE;
use crate::model::io_error::IoError;
use crate::{Event, EventId};
use qtrace_core::classes::counter::CounterKind;
use qtrace_core::classes::flow::FlowPhase;

/// The process that holds one thread per source.
pub(crate) const SOURCES_PID: u32 = 1;
/// The process that holds one thread per task/semaphore pair.
pub(crate) const SEMAPHORES_PID: u32 = 2;
/// The process that holds one thread per source with scopes (its `tid` is
/// the source number).
pub(crate) const SCOPES_PID: u32 = 3;

/// Tuning of [`ChromeWriter`].
///
/// ```
/// use qtrace::classes::{lowlevel, system, Catalog};
/// use qtrace::export::chrome::{ChromeOptions, ChromeWriter};
/// use qtrace::export;
/// use qtrace::Event;
///
/// // Interrupt slices last at most 5 µs (instead of 1 µs).
/// let options = ChromeOptions { interrupt_max_ns: 5_000, ..ChromeOptions::default() };
/// let writer = ChromeWriter::with_options(&Catalog::builtin(), 0, Vec::new(), options)?;
/// let events = [
///     Event::new(0, lowlevel::INTERRUPT, 0, [15, 0]),
///     Event::new(9_000, system::SCHEDULE, 0, [1, 0]),
/// ];
/// let stats = export::convert(writer, events)?;
/// assert_eq!(stats.events, 2);
/// # Ok::<(), qtrace::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChromeOptions {
    /// Longest interrupt slice, in nanoseconds (it ends earlier if the same
    /// source logs another event). Default 1 µs.
    pub interrupt_max_ns: u64,
    /// Most sources, and most task/semaphore pairs, that get duration events.
    /// Default 65 536 each.
    pub max_tracks: usize,
    /// Most open (unsignalled) waits per task/semaphore pair. Default 1024.
    pub max_open_waits: usize,
}

impl Default for ChromeOptions {
    fn default() -> Self {
        ChromeOptions {
            interrupt_max_ns: 1_000,
            max_tracks: 65_536,
            max_open_waits: 1_024,
        }
    }
}

/// Names of one event, JSON-escaped once.
#[derive(Debug)]
struct Names {
    name: String,
    class: String,
    args: Vec<String>,
}

/// Writes Chrome Trace Event JSON, one event at a time (see the [module
/// documentation](self)).
///
/// ```
/// use qtrace::classes::{system, Catalog};
/// use qtrace::export::chrome::ChromeWriter;
/// use qtrace::export::EventSink;
/// use qtrace::Event;
///
/// let catalog = Catalog::builtin();
/// let mut json = Vec::new();
/// let mut w = ChromeWriter::new(&catalog, 0, &mut json)?;
/// w.push(&Event::new(1_000, system::SCHEDULE, 0, [3, 0]))?;
/// w.push(&Event::new(5_000, system::SCHEDULE, 0, [4, 0]))?;
/// let stats = w.finish()?;
/// assert_eq!((stats.events, stats.slices), (2, 2));
/// drop(w);
/// let text = String::from_utf8(json).unwrap();
/// assert!(text.contains(r#""name":"task 3""#) && text.contains(r#""name":"task 4""#));
/// # Ok::<(), qtrace::Error>(())
/// ```
#[derive(Debug)]
pub struct ChromeWriter<W: Write> {
    out: BufWriter<W>,
    names: Vec<Names>,
    /// The slice derivation shared with the Perfetto export.
    slices: Slices,
    /// Its edges of the current event, reused.
    edges: Vec<Edge>,
    /// Open waits per (task, semaphore) pair.
    end: u64,
    first: bool,
    stats: ConvertStats,
    finished: bool,
    /// Combine runs being reassembled, and the names learned from them.
    runs: Assembler,
    run_names: RunNames,
    ready: Vec<Item>,
    /// `tracing:span_begin` and `tracing:span_end` (the `tracing` bridge's
    /// span events), when the catalog has them.
    span_events: Option<(EventId, EventId)>,
    /// Whether process [`SCOPES_PID`] is named (at the first scope).
    scopes_named: bool,
    /// The catalog's counters (FORMAT.md 1.3.2), with each one's `args`
    /// key (its unit, escaped, or `value`).
    counters: CounterTable,
    counter_keys: Vec<String>,
    /// Pairs flow records (FORMAT.md 1.3.3) into instances.
    flows: FlowTracker,
    /// The derived wake-up flows (`src/export/wakes.rs`).
    wakes: Wakes,
}

/// `s` as the inside of a JSON string: qtrace-core's one escaper.
fn esc(s: &str) -> String {
    qtrace_core::json::JsonEscaped(s).to_string()
}

/// Microseconds with three decimals: exact nanoseconds.
struct Ts(u64);

impl std::fmt::Display for Ts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{:03}", self.0 / 1000, self.0 % 1000)
    }
}

/// A u64 as a JSON value that JavaScript reads exactly.
struct Num(u64);

impl std::fmt::Display for Num {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0 <= 1 << 53 {
            write!(f, "{}", self.0)
        } else {
            write!(f, "\"{:#x}\"", self.0)
        }
    }
}

/// A counter's value as a JSON number: an integer with all its digits (a
/// JavaScript reader rounds one past 2^53 to the nearest double), an
/// `f64` in Rust's shortest round-trip form; NaN and infinities, which JSON
/// has no number for, as the strings `"NaN"`, `"inf"`, `"-inf"`.
struct CounterNum(CounterKind, u64);

impl std::fmt::Display for CounterNum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            CounterKind::U64 => write!(f, "{}", self.1),
            CounterKind::I64 => write!(f, "{}", self.1 as i64),
            CounterKind::F64 => {
                let v = f64::from_bits(self.1);
                if v.is_nan() {
                    f.write_str("\"NaN\"")
                } else if v.is_infinite() {
                    f.write_str(if v > 0.0 { "\"inf\"" } else { "\"-inf\"" })
                } else {
                    write!(f, "{v:?}")
                }
            }
        }
    }
}

/// ` (queue N)` after a queue counter's name (FORMAT.md 1.3.4), else
/// nothing.
struct QueueSuffix(Option<u64>);

impl std::fmt::Display for QueueSuffix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(q) => write!(f, " (queue {q})"),
            None => Ok(()),
        }
    }
}

fn io_err(e: std::io::Error) -> Error {
    Error::Io(IoError::without_path("write the Chrome trace JSON", e))
}

impl<W: Write> ChromeWriter<W> {
    /// Starts the JSON document on `out` with default options;
    /// `origin_unix_ns` is the Unix time of the trace's time zero. (The
    /// example is [`ChromeWriter`]'s.)
    ///
    /// ```
    /// use qtrace::classes::{system, Catalog};
    /// use qtrace::export::chrome::ChromeWriter;
    /// use qtrace::export::EventSink;
    /// use qtrace::Event;
    ///
    /// let mut w = ChromeWriter::new(&Catalog::builtin(), 0, Vec::new())?;
    /// w.push(&Event::new(1_000, system::SCHEDULE, 0, [3, 0]))?;
    /// assert_eq!(w.finish()?.events, 1);
    /// # Ok::<(), qtrace::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ExportError::Io`](Error::Io) if `out` cannot be written.
    pub fn new(catalog: &Catalog, origin_unix_ns: u64, out: W) -> Result<Self, Error> {
        Self::with_options(catalog, origin_unix_ns, out, ChromeOptions::default())
    }

    /// As [`ChromeWriter::new`], with explicit options.
    ///
    /// # Errors
    ///
    /// [`ExportError::Io`](Error::Io) if `out` cannot be written;
    /// [`ExportError::InvalidExportOption`](Error::InvalidExportOption) if
    /// an option is out of range.
    pub fn with_options(
        catalog: &Catalog,
        origin_unix_ns: u64,
        out: W,
        options: ChromeOptions,
    ) -> Result<Self, Error> {
        let names = catalog
            .events()
            .iter()
            .map(|e| Names {
                name: esc(&e.name),
                class: esc(catalog
                    .class(e.class)
                    .map(|c| c.name.as_str())
                    .unwrap_or("unknown")),
                args: e.args.iter().map(|a| esc(a)).collect(),
            })
            .collect();
        let counters = CounterTable::new(catalog);
        let mut w = ChromeWriter {
            out: BufWriter::with_capacity(64 * 1024, out),
            names,
            slices: Slices::new(SliceOptions {
                interrupt_max_ns: options.interrupt_max_ns,
                max_tracks: options.max_tracks,
                max_open_waits: options.max_open_waits,
            })
            .with_scopes(&ScopeTable::new(catalog)),
            edges: Vec::with_capacity(8),
            end: 0,
            first: true,
            stats: ConvertStats::default(),
            finished: false,
            runs: Assembler::new(),
            run_names: RunNames::new(),
            ready: Vec::new(),
            span_events: catalog
                .event_by_name("tracing:span_begin")
                .zip(catalog.event_by_name("tracing:span_end"))
                .map(|(b, e)| (b.id, e.id)),
            scopes_named: false,
            counter_keys: counters
                .counters()
                .iter()
                .map(|c| match c.unit.as_str() {
                    "" => "value".to_string(),
                    unit => esc(unit),
                })
                .collect(),
            counters,
            flows: FlowTable::new(catalog).tracker(),
            wakes: Wakes::new(options.interrupt_max_ns),
        };
        write!(
            w.out,
            "{{\"displayTimeUnit\":\"ns\",\"otherData\":{{\"generator\":\"qtrace\",\"clock_origin_unix_ns\":\"{origin_unix_ns}\"}},\"traceEvents\":["
        )
        .map_err(io_err)?;
        for (pid, name) in [
            (SOURCES_PID, "qtrace sources"),
            (SEMAPHORES_PID, "qtrace semaphores"),
        ] {
            w.line(format_args!(
                "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{pid},\"tid\":0,\"args\":{{\"name\":\"{name}\"}}}}"
            ))?;
        }
        Ok(w)
    }

    /// Names known in advance ([`crate::model::combine::Names`] gathered by a
    /// first pass over the trace), for traces whose name records come after
    /// the events they name — a circular queue's snapshot, where early name
    /// records were overwritten and recorded again later. Name records met
    /// while converting still add to them.
    pub fn with_names(mut self, names: RunNames) -> Self {
        self.run_names = names;
        self
    }

    /// Writes one trace event (with the separator before it).
    fn line(&mut self, args: std::fmt::Arguments<'_>) -> Result<(), Error> {
        let sep = if self.first { "\n" } else { ",\n" };
        self.first = false;
        self.out.write_all(sep.as_bytes()).map_err(io_err)?;
        self.out.write_fmt(args).map_err(io_err)
    }

    fn thread_name(
        &mut self,
        pid: u32,
        tid: u64,
        name: std::fmt::Arguments<'_>,
    ) -> Result<(), Error> {
        self.line(format_args!(
            "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"name\":\"{name}\"}}}}"
        ))
    }

    fn begin(
        &mut self,
        pid: u32,
        tid: u64,
        ts: u64,
        cat: &str,
        name: std::fmt::Arguments<'_>,
        arg: (&str, u64),
    ) -> Result<(), Error> {
        self.stats.slices += 1;
        self.line(format_args!(
            "{{\"ph\":\"B\",\"name\":\"{name}\",\"cat\":\"{cat}\",\"ts\":{},\"pid\":{pid},\"tid\":{tid},\"args\":{{\"{}\":{}}}}}",
            Ts(ts),
            arg.0,
            Num(arg.1)
        ))
    }

    fn end_slice(
        &mut self,
        pid: u32,
        tid: u64,
        ts: u64,
        cat: &str,
        name: std::fmt::Arguments<'_>,
    ) -> Result<(), Error> {
        self.line(format_args!(
            "{{\"ph\":\"E\",\"name\":\"{name}\",\"cat\":\"{cat}\",\"ts\":{},\"pid\":{pid},\"tid\":{tid}}}",
            Ts(ts)
        ))
    }

    /// A counter record (FORMAT.md 1.3.2) as a `C` event of process 1
    /// named `class:S`, with `id` its source (so each source has its own
    /// series) and the value under its unit's name (or `value`). A queue
    /// counter's (1.3.4) is named `class:S (queue N)`: a series per queue.
    fn counter(&mut self, e: &Event, counter: usize) -> Result<(), Error> {
        let (Some(info), Some(key)) = (self.counters.get(counter), self.counter_keys.get(counter))
        else {
            return Ok(());
        };
        let sep = if self.first { "\n" } else { ",\n" };
        self.first = false;
        let value = CounterNum(info.kind, e.args[0]);
        let queue = QueueSuffix(info.queue(e));
        write!(
            self.out,
            "{sep}{{\"ph\":\"C\",\"name\":\"{}{queue}\",\"cat\":\"counter\",\"id\":\"{}\",\"ts\":{},\"pid\":{SOURCES_PID},\"tid\":{},\"args\":{{\"{key}\":{value}}}}}",
            esc(&info.name),
            e.source,
            Ts(e.time),
            e.source,
        )
        .map_err(io_err)
    }

    fn instant(&mut self, e: &Event) -> Result<(), Error> {
        if let Some(counter) = self.counters.lookup(e.id) {
            return self.counter(e, counter);
        }
        let sep = if self.first { "\n" } else { ",\n" };
        self.first = false;
        let (tid, ts, pid) = (e.source, Ts(e.time), SOURCES_PID);
        let out = &mut self.out;
        let r = if e.id == tracer::HOOPS {
            write!(
                out,
                "{sep}{{\"ph\":\"i\",\"s\":\"g\",\"name\":\"hoops ({} lost)\",\"cat\":\"tracer\",\"ts\":{ts},\"pid\":{pid},\"tid\":{tid},\"args\":{{\"lost\":{},\"queue\":{}}}}}",
                e.args[0],
                Num(e.args[0]),
                Num(e.args[1])
            )
        } else if let Some(n) = self.names.get(e.id.0 as usize) {
            let name = match self.run_names.event(e.id) {
                Some(run_time) => std::borrow::Cow::Owned(esc(run_time)),
                None => std::borrow::Cow::Borrowed(n.name.as_str()),
            };
            write!(
                out,
                "{sep}{{\"ph\":\"i\",\"s\":\"t\",\"name\":\"{}\",\"cat\":\"{}\",\"ts\":{ts},\"pid\":{pid},\"tid\":{tid},\"args\":{{",
                name, n.class
            )
            .and_then(|()| {
                // Every argument `qtrace dump` shows (see `export::args`): the
                // declared ones, and an undeclared slot when it is non-zero.
                let mut first = true;
                for (i, (&value, unnamed)) in e.args.iter().zip(UNNAMED).enumerate() {
                    let name = match n.args.get(i) {
                        Some(a) => a.as_str(),
                        None if value != 0 => unnamed,
                        None => continue,
                    };
                    let comma = if first { "" } else { "," };
                    first = false;
                    write!(out, "{comma}\"{name}\":{}", Num(value))?;
                }
                out.write_all(b"}}")
            })
        } else {
            write!(
                out,
                "{sep}{{\"ph\":\"i\",\"s\":\"t\",\"name\":\"unknown\",\"cat\":\"unknown\",\"ts\":{ts},\"pid\":{pid},\"tid\":{tid},\"args\":{{\"id\":{},\"arg0\":{},\"arg1\":{}}}}}",
                e.id.0,
                Num(e.args[0]),
                Num(e.args[1])
            )
        };
        r.map_err(io_err)?;
        self.flow(e)
    }

    /// After a flow record's instant (FORMAT.md 1.3.3), its flow event:
    /// `s` for a begin, `t` for a step, `f` (binding to the enclosing
    /// slice, `"bp":"e"`) for an end, named `class:S`, category `flow`,
    /// with `id` the instance's number (from 1, in the order instances
    /// begin), at the instant's time and thread. A step or end that no open
    /// instance takes has none.
    fn flow(&mut self, e: &Event) -> Result<(), Error> {
        let Some(step) = self.flows.push(e) else {
            return Ok(());
        };
        let (Some(n), Some(name)) = (step.instance, self.flows.table().name(step.flow)) else {
            return Ok(());
        };
        let (ph, bp) = match step.phase {
            FlowPhase::Begin => ("s", ""),
            FlowPhase::Step => ("t", ""),
            FlowPhase::End => ("f", ",\"bp\":\"e\""),
        };
        write!(
            self.out,
            ",\n{{\"ph\":\"{ph}\",\"name\":\"{}\",\"cat\":\"flow\",\"id\":{n},\"ts\":{},\"pid\":{SOURCES_PID},\"tid\":{}{bp}}}",
            esc(name),
            Ts(e.time),
            e.source,
        )
        .map_err(io_err)
    }

    /// After the instant of an event that begins or ends a derived wake-up
    /// flow (`src/export/wakes.rs`), its flow event: `s` at the signal or
    /// activate, `f` (`"bp":"e"`, binding to the task slice the schedule
    /// begins) at the schedule, named and of category `wake`, `id` 2^52 + k.
    fn wake_flow(&mut self, e: &Event, step: WakeStep) -> Result<(), Error> {
        let (ph, bp, id) = match step {
            WakeStep::Begin(id) => ("s", "", id),
            WakeStep::End(id) => ("f", ",\"bp\":\"e\"", id),
        };
        write!(
            self.out,
            ",\n{{\"ph\":\"{ph}\",\"name\":\"wake\",\"cat\":\"wake\",\"id\":{id},\"ts\":{},\"pid\":{SOURCES_PID},\"tid\":{}{bp}}}",
            Ts(e.time),
            e.source,
        )
        .map_err(io_err)
    }

    /// A span's slice name: its callsite's run-time name, else `span`.
    fn span_name(&self, callsite: u64) -> String {
        u16::try_from(callsite)
            .ok()
            .and_then(|id| self.run_names.event(EventId(id)))
            .map_or_else(|| "span".to_string(), esc)
    }

    /// `N` or `N name` for task `N`, with its name when a name record gave
    /// one.
    fn task_suffix(&self, task: u64) -> String {
        match self.run_names.task(task) {
            Some(name) => format!("{task} {}", esc(name)),
            None => task.to_string(),
        }
    }

    /// Writes the reassembled runs waiting in `ready`.
    fn write_ready(&mut self) -> Result<(), Error> {
        let items = std::mem::take(&mut self.ready);
        for item in &items {
            match item {
                Item::Payload(p) => self.payload(p)?,
                Item::Event(e) => self.instant(e)?,
            }
        }
        self.ready = items;
        self.ready.clear();
        Ok(())
    }

    /// A reassembled run: a name renames its source's thread; any other is
    /// an instant on its source's thread with the payload in `args.text`
    /// (or `args.bytes`, hexadecimal, when it is not UTF-8) and, when it is
    /// not whole, `args.partial` or `args.corrupt`.
    fn payload(&mut self, p: &Payload) -> Result<(), Error> {
        let before = p
            .name_of()
            .and_then(|(_, s)| self.run_names.source(s as u32))
            .map(str::to_string);
        if let Some((kind, subject)) = self.run_names.learn(p) {
            if kind == combine::NAME_SOURCE && p.state == PayloadState::Complete {
                let name = esc(&p.text());
                // A thread already shown gets its new name (not the same
                // name twice).
                let renamed = before.as_deref() != Some(&*p.text());
                if renamed && self.slices.knows(subject as u32) {
                    self.thread_name(SOURCES_PID, subject, format_args!("{subject} {name}"))?;
                }
            }
            return Ok(());
        }
        self.source_state(p.source)?;
        let (name, class, arg) = match self.names.get(p.id.0 as usize) {
            Some(n) => (
                self.run_names
                    .event(p.id)
                    .map_or_else(|| n.name.clone(), esc),
                n.class.clone(),
                n.args.first().cloned().unwrap_or_else(|| "arg0".into()),
            ),
            None => ("unknown".into(), "unknown".into(), "arg0".into()),
        };
        let mut args = String::new();
        if let Some(a) = p.arg {
            args.push_str(&format!("\"{arg}\":{},", Num(a)));
        }
        match std::str::from_utf8(&p.bytes) {
            Ok(s) => args.push_str(&format!("\"text\":\"{}\"", esc(s))),
            Err(_) => {
                args.push_str("\"bytes\":\"");
                for b in &p.bytes {
                    args.push_str(&format!("{b:02x}"));
                }
                args.push('"');
            }
        }
        match p.state {
            PayloadState::Complete => {}
            PayloadState::Cut { received, expected } => {
                let of =
                    expected.map_or("the begin record lost".to_string(), |n| format!("of {n}"));
                args.push_str(&format!(",\"partial\":\"{received} records {of}\""));
            }
            PayloadState::Mismatch => args.push_str(",\"corrupt\":true"),
        }
        if p.truncated_at_logging() {
            args.push_str(&format!(",\"logged_len\":{}", p.logged_len.unwrap_or(0)));
        }
        self.line(format_args!(
            "{{\"ph\":\"i\",\"s\":\"t\",\"name\":\"{name}\",\"cat\":\"{class}\",\"ts\":{},\"pid\":{SOURCES_PID},\"tid\":{},\"args\":{{{args}}}}}",
            Ts(p.time),
            p.source
        ))
    }

    /// Registers `source`, naming its thread when it is new; whether it is
    /// followed (under [`ChromeOptions::max_tracks`]).
    fn source_state(&mut self, source: u32) -> Result<bool, Error> {
        match self.slices.source(source) {
            Source::Known => return Ok(true),
            Source::Untracked => return Ok(false),
            Source::New => {}
        }
        self.stats.sources += 1;
        if source == TRACER_SOURCE {
            self.thread_name(SOURCES_PID, source as u64, format_args!("tracer"))?;
        } else if let Some(name) = self.run_names.source(source) {
            let name = esc(name);
            self.thread_name(SOURCES_PID, source as u64, format_args!("{source} {name}"))?;
        } else {
            self.thread_name(SOURCES_PID, source as u64, format_args!("source {source}"))?;
        }
        Ok(true)
    }

    /// Draws one slice edge: task and interrupt slices as `B`/`E` on the
    /// source's thread, a semaphore held as an `X` on its pair's thread
    /// (named at the pair's first wait).
    fn edge(&mut self, edge: Edge) -> Result<(), Error> {
        match edge {
            Edge::TaskBegin { source, task, t } => self.begin(
                SOURCES_PID,
                source as u64,
                t,
                "task",
                format_args!("task {}", self.task_suffix(task)),
                ("task", task),
            ),
            Edge::TaskEnd { source, task, t } => self.end_slice(
                SOURCES_PID,
                source as u64,
                t,
                "task",
                format_args!("task {}", self.task_suffix(task)),
            ),
            Edge::IrqBegin { source, irq, t } => self.begin(
                SOURCES_PID,
                source as u64,
                t,
                "interrupt",
                format_args!("irq {irq}"),
                ("irq", irq),
            ),
            Edge::IrqEnd { source, irq, t } => self.end_slice(
                SOURCES_PID,
                source as u64,
                t,
                "interrupt",
                format_args!("irq {irq}"),
            ),
            Edge::WaitOpen {
                task,
                sem,
                pair,
                new: true,
                ..
            } => self.thread_name(
                SEMAPHORES_PID,
                sem_tid(pair),
                format_args!("task {task} sem {sem}"),
            ),
            Edge::WaitOpen { .. } => Ok(()),
            Edge::Held {
                task,
                sem,
                pair,
                begin,
                end,
                ..
            } => self.held((task, sem), sem_tid(pair), begin, end),
            Edge::ScopeBegin {
                source,
                scope,
                t,
                args,
                first,
                ..
            } => {
                if !self.scopes_named {
                    // Named at the first scope: a trace without scopes
                    // reads as it did before scopes existed.
                    self.scopes_named = true;
                    let (pid, name) = (SCOPES_PID, "qtrace scopes");
                    self.line(format_args!(
                        "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{pid},\"tid\":0,\"args\":{{\"name\":\"{name}\"}}}}"
                    ))?;
                }
                if first {
                    self.thread_name(SCOPES_PID, source as u64, format_args!("source {source}"))?;
                }
                let table = self.slices.scope_table();
                let name = esc(table.name(scope).unwrap_or("scope"));
                let begin = table.events(scope).map_or(0, |(b, _)| b.0 as usize);
                let mut fields = String::new();
                if let Some(n) = self.names.get(begin) {
                    for (a, v) in n.args.iter().zip(args) {
                        let sep = if fields.is_empty() { "" } else { "," };
                        fields.push_str(&format!("{sep}\"{a}\":{}", Num(v)));
                    }
                }
                self.stats.slices += 1;
                self.line(format_args!(
                    "{{\"ph\":\"B\",\"name\":\"{name}\",\"cat\":\"scope\",\"ts\":{},\"pid\":{SCOPES_PID},\"tid\":{source},\"args\":{{{fields}}}}}",
                    Ts(t)
                ))
            }
            Edge::ScopeEnd {
                source,
                scope,
                t,
                code,
                ..
            } => {
                let name = esc(self.slices.scope_table().name(scope).unwrap_or("scope"));
                let args = match code {
                    Some(c) => format!("{{\"code\":{}}}", Num(c)),
                    None => "{\"ended\":\"without its end event\"}".to_string(),
                };
                self.line(format_args!(
                    "{{\"ph\":\"E\",\"name\":\"{name}\",\"cat\":\"scope\",\"ts\":{},\"pid\":{SCOPES_PID},\"tid\":{source},\"args\":{args}}}",
                    Ts(t)
                ))
            }
        }
    }

    /// Writes the complete event of a semaphore held from `begin` to `end`.
    fn held(&mut self, key: (u64, u64), tid: u64, begin: u64, end: u64) -> Result<(), Error> {
        self.stats.slices += 1;
        self.line(format_args!(
            "{{\"ph\":\"X\",\"name\":\"task {} sem {}\",\"cat\":\"semaphore\",\"ts\":{},\"dur\":{},\"pid\":{SEMAPHORES_PID},\"tid\":{tid},\"args\":{{\"task\":{},\"sem\":{}}}}}",
            key.0,
            key.1,
            Ts(begin),
            Ts(end.saturating_sub(begin)),
            Num(key.0),
            Num(key.1)
        ))
    }

    /// Draws the edges in `self.edges` and empties it.
    fn draw_edges(&mut self) -> Result<(), Error> {
        let mut edges = std::mem::take(&mut self.edges);
        let mut result = Ok(());
        for &edge in &edges {
            result = self.edge(edge);
            if result.is_err() {
                break;
            }
        }
        edges.clear();
        self.edges = edges;
        result
    }
}

/// The thread of the pair numbered `pair` in process [`SEMAPHORES_PID`].
fn sem_tid(pair: usize) -> u64 {
    pair as u64 + 1
}

impl<W: Write> EventSink for ChromeWriter<W> {
    fn push(&mut self, e: &Event) -> Result<(), Error> {
        if self.finished {
            return Err(Error::ConverterFinished);
        }
        self.end = self.end.max(e.time);
        if e.id == tracer::HOOPS {
            self.stats.hoops += 1;
            self.stats.lost = self.stats.lost.saturating_add(e.args[0]);
        } else {
            self.stats.events += 1;
        }
        if e.id.0 as usize >= self.names.len() {
            self.stats.unknown += 1;
        }
        if combine::is_combine(e) {
            let ready = &mut self.ready;
            self.runs.push(*e, &mut |item| ready.push(item));
            return self.write_ready();
        }
        let tracked = self.source_state(e.source)?;
        let wake = self.wakes.push(e);
        let mut edges = std::mem::take(&mut self.edges);
        self.slices.push(e, &mut edges);
        self.edges = edges;
        self.draw_edges()?;
        if tracked {
            if let Some((begin, end)) = self.span_events {
                if e.id == begin || e.id == end {
                    let name = self.span_name(e.args[1]);
                    let ts = self.slices.at(e.source, e.time).unwrap_or(e.time);
                    if e.id == begin {
                        self.begin(
                            SOURCES_PID,
                            e.source as u64,
                            ts,
                            "span",
                            format_args!("{name}"),
                            ("span", e.args[0]),
                        )?;
                    } else {
                        self.end_slice(
                            SOURCES_PID,
                            e.source as u64,
                            ts,
                            "span",
                            format_args!("{name}"),
                        )?;
                    }
                }
            }
        }
        self.instant(e)?;
        match wake {
            Some(step) => self.wake_flow(e, step),
            None => Ok(()),
        }
    }

    fn finish(&mut self) -> Result<ConvertStats, Error> {
        if self.finished {
            return Ok(self.stats);
        }
        self.finished = true;
        let ready = &mut self.ready;
        self.runs.finish(&mut |item| ready.push(item));
        self.write_ready()?;
        let mut edges = std::mem::take(&mut self.edges);
        self.slices.finish(self.end, &mut edges);
        self.edges = edges;
        self.draw_edges()?;
        self.stats.unpaired += self.slices.unpaired() + self.flows.unpaired();
        self.out.write_all(b"\n]}\n").map_err(io_err)?;
        self.out.flush().map_err(io_err)?;
        Ok(self.stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classes::{lowlevel, semaphore, system, user};
    use crate::EventId;

    fn run(events: &[Event], options: ChromeOptions) -> (ConvertStats, Vec<serde_json::Value>) {
        let mut out = Vec::new();
        let catalog = Catalog::builtin();
        let mut w = ChromeWriter::with_options(&catalog, 0, &mut out, options).unwrap();
        for e in events {
            w.push(e).unwrap();
        }
        let stats = w.finish().unwrap();
        drop(w);
        let doc: serde_json::Value = serde_json::from_slice(&out).expect("valid JSON");
        (stats, doc["traceEvents"].as_array().unwrap().clone())
    }

    /// (ph, name, ts in ns, pid, tid) of the B/E events.
    fn slices(events: &[serde_json::Value]) -> Vec<(String, String, u64, u64, u64)> {
        events
            .iter()
            .filter(|e| e["ph"] == "B" || e["ph"] == "E")
            .map(|e| {
                (
                    e["ph"].as_str().unwrap().to_string(),
                    e["name"].as_str().unwrap().to_string(),
                    (e["ts"].as_f64().unwrap() * 1000.0).round() as u64,
                    e["pid"].as_u64().unwrap(),
                    e["tid"].as_u64().unwrap(),
                )
            })
            .collect()
    }

    fn s(ph: &str, name: &str, ts: u64, pid: u32, tid: u64) -> (String, String, u64, u64, u64) {
        (ph.into(), name.into(), ts, pid as u64, tid)
    }

    #[test]
    fn interrupt_ends_at_next_event_or_cap_inside_the_task() {
        let events = [
            Event::new(1_000, system::SCHEDULE, 0, [3, 0]),
            Event::new(2_000, lowlevel::INTERRUPT, 0, [9, 0]),
            Event::new(2_400, user::USER0, 0, [1, 0]), // ends irq 9 at 2.4 µs
            Event::new(3_000, lowlevel::INTERRUPT, 0, [9, 0]),
            Event::new(9_000, system::SCHEDULE, 0, [4, 0]), // irq capped at 4 µs
            Event::new(9_500, lowlevel::INTERRUPT, 0, [1, 0]), // trace ends at 9.5 µs
        ];
        let (stats, out) = run(&events, ChromeOptions::default());
        assert_eq!(stats.slices, 5);
        assert_eq!(stats.events, 6);
        assert_eq!(
            slices(&out),
            [
                s("B", "task 3", 1_000, 1, 0),
                s("B", "irq 9", 2_000, 1, 0),
                s("E", "irq 9", 2_400, 1, 0),
                s("B", "irq 9", 3_000, 1, 0),
                s("E", "irq 9", 4_000, 1, 0),
                s("E", "task 3", 9_000, 1, 0),
                s("B", "task 4", 9_000, 1, 0),
                s("B", "irq 1", 9_500, 1, 0),
                s("E", "irq 1", 9_500, 1, 0),
                s("E", "task 4", 9_500, 1, 0),
            ]
        );
        // Every record is also an instant, on its source's thread.
        let instants = out.iter().filter(|e| e["ph"] == "i").count();
        assert_eq!(instants, 6);
    }

    /// (name, ts, dur in ns, tid) of the X events.
    fn completes(events: &[serde_json::Value]) -> Vec<(String, u64, u64, u64)> {
        let ns = |v: &serde_json::Value| (v.as_f64().unwrap() * 1000.0).round() as u64;
        events
            .iter()
            .filter(|e| e["ph"] == "X")
            .map(|e| {
                assert_eq!(e["pid"], SEMAPHORES_PID);
                (
                    e["name"].as_str().unwrap().to_string(),
                    ns(&e["ts"]),
                    ns(&e["dur"]),
                    e["tid"].as_u64().unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn semaphore_waits_pair_per_task_and_sem_last_in_first_out() {
        let events = [
            Event::new(10, semaphore::WAIT, 0, [1, 7]),
            Event::new(20, semaphore::WAIT, 1, [2, 7]),
            Event::new(30, semaphore::WAIT, 0, [1, 7]), // nested wait, same pair
            Event::new(40, semaphore::SIGNAL, 0, [1, 7]),
            Event::new(50, semaphore::SIGNAL, 1, [2, 7]),
            Event::new(60, semaphore::SIGNAL, 1, [5, 5]), // no wait: unpaired
            Event::new(70, semaphore::WAITNB, 1, [2, 7]), // never signalled: failed
            Event::new(80, semaphore::WAITNB, 0, [3, 3]), // signalled: held
            Event::new(90, semaphore::SIGNAL, 0, [3, 3]),
        ];
        let (stats, out) = run(&events, ChromeOptions::default());
        assert_eq!(stats.unpaired, 2);
        assert_eq!(stats.slices, 4);
        let x = |n: &str, ts, dur, tid| (n.to_string(), ts, dur, tid);
        assert_eq!(
            completes(&out),
            [
                x("task 1 sem 7", 30, 10, 1),
                x("task 2 sem 7", 20, 30, 2),
                x("task 3 sem 3", 80, 10, 3),
                x("task 1 sem 7", 10, 80, 1), // blocking wait still open at the end
            ]
        );
        let names: Vec<&str> = out
            .iter()
            .filter(|e| e["name"] == "thread_name" && e["pid"] == 2)
            .map(|e| e["args"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["task 1 sem 7", "task 2 sem 7", "task 3 sem 3"]);
    }

    #[test]
    fn hoops_are_global_markers_with_their_count() {
        let events = [
            Event::new(5, tracer::HOOPS, TRACER_SOURCE, [42, 1]),
            Event::new(6, EventId(0x0777), 3, [1, u64::MAX]),
        ];
        let (stats, out) = run(&events, ChromeOptions::default());
        assert_eq!((stats.hoops, stats.lost, stats.unknown), (1, 42, 1));
        let hoops = out.iter().find(|e| e["cat"] == "tracer").unwrap();
        assert_eq!(hoops["name"], "hoops (42 lost)");
        assert_eq!(hoops["s"], "g");
        assert_eq!(hoops["args"]["lost"], 42);
        assert_eq!(hoops["args"]["queue"], 1);
        assert_eq!(hoops["tid"], u64::from(TRACER_SOURCE));
        let unknown = out.iter().find(|e| e["name"] == "unknown").unwrap();
        assert_eq!(unknown["args"]["id"], 0x0777);
        assert_eq!(unknown["args"]["arg1"], "0xffffffffffffffff");
    }

    #[test]
    fn limits_turn_slices_into_counted_instants() {
        let options = ChromeOptions {
            max_tracks: 1,
            max_open_waits: 1,
            ..ChromeOptions::default()
        };
        let events = [
            Event::new(1, system::SCHEDULE, 0, [1, 0]),
            Event::new(2, system::SCHEDULE, 1, [1, 0]), // second source: no state
            Event::new(3, semaphore::WAIT, 0, [1, 1]),
            Event::new(4, semaphore::WAIT, 0, [1, 1]), // second open wait: over the limit
            Event::new(5, semaphore::WAIT, 0, [2, 2]), // second pair: over the limit
        ];
        let (stats, out) = run(&events, options);
        assert_eq!(stats.unpaired, 3);
        assert_eq!(stats.slices, 2);
        assert_eq!(out.iter().filter(|e| e["ph"] == "i").count(), 5);
    }

    #[test]
    fn semaphore_slices_nest_when_input_times_go_back() {
        // The proptest chrome_always_nests found: wait at 5000, then a wait
        // stamped 4500 (merged or damaged input), signals at 5700 and 9900
        // gave [4500, 5700] and [5000, 9900] on one thread: overlapping, not
        // nested. Times on a pair's thread are now raised like B/E times.
        let evs = [
            Event::new(5_000, semaphore::WAIT, 0, [2, 2]),
            Event::new(4_500, semaphore::WAIT, 0, [2, 2]),
            Event::new(5_700, semaphore::SIGNAL, 0, [2, 2]),
            Event::new(9_900, semaphore::SIGNAL, 0, [2, 2]),
        ];
        let (stats, events) = run(&evs, ChromeOptions::default());
        let spans: Vec<(String, String)> = events
            .iter()
            .filter(|e| e["ph"] == "X")
            .map(|e| (e["ts"].to_string(), e["dur"].to_string()))
            .collect();
        let want = [("5.0", "0.7"), ("5.0", "4.9")];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(t, d)| (t.to_string(), d.to_string()))
            .collect();
        assert_eq!(spans, want);
        assert_eq!((stats.slices, stats.unpaired), (2, 0));
    }

    #[test]
    fn times_never_go_back_on_a_thread() {
        let events = [
            Event::new(100, system::SCHEDULE, 0, [1, 0]),
            Event::new(50, system::SCHEDULE, 0, [2, 0]),
        ];
        let (_, out) = run(&events, ChromeOptions::default());
        assert_eq!(
            slices(&out),
            [
                s("B", "task 1", 100, 1, 0),
                s("E", "task 1", 100, 1, 0),
                s("B", "task 2", 100, 1, 0),
                s("E", "task 2", 100, 1, 0),
            ]
        );
    }

    #[test]
    fn timestamps_are_exact_microseconds() {
        assert_eq!(Ts(1_234_567).to_string(), "1234.567");
        assert_eq!(Ts(5).to_string(), "0.005");
        assert_eq!(Num(1 << 53).to_string(), "9007199254740992");
        assert_eq!(Num((1 << 53) + 1).to_string(), "\"0x20000000000001\"");
    }
}
