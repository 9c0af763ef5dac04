//! The writer: its options and state, and the orchestration of one event
//! (combine runs reassembled, slice edges drawn, an instant otherwise).

use std::collections::{BTreeMap, HashMap};
use std::io::{BufWriter, Write};

use super::interning::Sequence;
use super::schema::{field, SEQUENCE_ID};
use super::zipper::{Deflater, Zipper};
use crate::classes::counters::CounterTable;
use crate::classes::flows::{FlowTable, FlowTracker};
use crate::classes::scopes::ScopeTable;
use crate::classes::{system, tracer, Catalog};
use crate::export::by_source::BySource;
use crate::export::slices::{Edge, SliceOptions, Slices};
use crate::export::wakes::{WakeStep, Wakes};
use crate::export::ExportError as Error;
use crate::export::{ConvertStats, EventSink};
use crate::model::combine::{self, Assembler, Item, Names as RunNames};
use crate::Event;
use qtrace_core::classes::flow::FlowPhase;

/// Uncompressed bytes of one sequence's packets gathered before they are
/// written: as one `compressed_packets` packet (see the module
/// documentation), or as they are when compression is off. 256 KiB rather
/// than 128: half the compressor resets and 1.4 % fewer bytes, for 3 % less
/// deflate work (docs/benchmarks-history.md, "Perfetto: zlib-rs's SIMD, packed slice
/// edges, 256 KiB chunks").
pub const CHUNK_BYTES: usize = 256 * 1024;

/// Most bytes the sequences' unwritten chunks may hold together (their
/// buffers' capacity): past it, every chunk is written, and the buffers of
/// all sequences are let go (a trace of many sources keeps a few MiB, not
/// a chunk a source).
pub(super) const MAX_HELD: usize = 32 * CHUNK_BYTES;

/// Times on one track never go back, so its slices nest.
#[derive(Debug)]
pub(super) struct TaskTrack {
    pub(super) uuid: u64,
    /// Times never go back on the task's track, so its slices nest.
    pub(super) clamp: u64,
    /// The source whose `source S` slice is open on this track.
    pub(super) on: Option<u32>,
}

/// Tuning of [`PerfettoWriter`].
///
/// ```
/// use qtrace::classes::Catalog;
/// use qtrace::export::perfetto::{PerfettoOptions, PerfettoWriter};
/// use qtrace::export::ExportError;
///
/// let options = PerfettoOptions { max_tracks: 1_024, ..PerfettoOptions::default() };
/// PerfettoWriter::with_options(&Catalog::builtin(), 0, Vec::new(), options)?;
/// let none = PerfettoOptions { max_tracks: 0, ..PerfettoOptions::default() };
/// let err = PerfettoWriter::with_options(&Catalog::builtin(), 0, Vec::new(), none).unwrap_err();
/// assert!(matches!(err, ExportError::InvalidExportOption { .. }));
/// # Ok::<(), qtrace::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerfettoOptions {
    /// Longest interrupt slice, in nanoseconds (it ends earlier if the same
    /// source logs another event). Default 1 µs, as the Chrome export.
    pub interrupt_max_ns: u64,
    /// Most sources, most tasks and most task/semaphore pairs that get a
    /// track of their own. Default 65 536 each.
    pub max_tracks: usize,
    /// Most open (unsignalled) waits per task/semaphore pair. Default 1024.
    pub max_open_waits: usize,
    /// Most slice names (`task N`, `irq N`, …) interned per packet sequence
    /// (one a source); later ones are written in full. Default 65 536.
    pub max_interned: usize,
}

impl Default for PerfettoOptions {
    fn default() -> Self {
        PerfettoOptions {
            interrupt_max_ns: 1_000,
            max_tracks: 65_536,
            max_open_waits: 1_024,
            max_interned: 65_536,
        }
    }
}

/// Writes a Perfetto protobuf trace, one event at a time (see the [module
/// documentation](super)).
///
/// ```
/// use qtrace::classes::{system, Catalog};
/// use qtrace::export::perfetto::PerfettoWriter;
/// use qtrace::export::EventSink;
/// use qtrace::Event;
///
/// let mut trace = Vec::new();
/// let mut w = PerfettoWriter::new(&Catalog::builtin(), 0, &mut trace)?;
/// w.push(&Event::new(1_000, system::SCHEDULE, 0, [3, 0]))?;
/// w.push(&Event::new(5_000, system::SCHEDULE, 0, [4, 0]))?;
/// let stats = w.finish()?;
/// // Each dispatch is a slice on the CPU's track and one on the task's.
/// assert_eq!((stats.events, stats.slices), (2, 4));
/// drop(w);
/// assert!(!trace.is_empty()); // a protobuf `Trace`, for ui.perfetto.dev
/// # Ok::<(), qtrace::Error>(())
/// ```
#[derive(Debug)]
pub struct PerfettoWriter<W: Write> {
    pub(super) out: BufWriter<W>,
    pub(super) options: PerfettoOptions,
    /// Whether chunks are written as `compressed_packets`.
    pub(super) compress: bool,
    /// The capacity of the sequences' chunk buffers, together (bounded by
    /// [`MAX_HELD`]).
    pub(super) held: usize,
    /// Whether sequence 1's chunk holds a track descriptor not yet written:
    /// it is written before any other chunk, so that a track's descriptor
    /// comes before the packets that use it in the file.
    pub(super) descriptors: bool,
    /// Per track uuid: the sequence (index + 1; 0 none) that last wrote a
    /// slice edge or counter value on it, and at what time. Tracks that
    /// several sequences write (a task's, a task/semaphore pair's, the
    /// loss counter) keep their packets of equal times in the order
    /// written, as the trace processor's sort by time keeps ties in file
    /// order: see `PerfettoWriter::ordered`.
    pub(super) last_writer: Vec<(u32, u64)>,
    /// The compressor (when compressing in place), made at its first chunk.
    pub(super) deflater: Option<Deflater>,
    /// The compression thread, started at the first chunk compressed
    /// (`None` before, when compression is off, or if no thread started).
    pub(super) zipper: Option<Zipper>,
    pub(super) zipper_failed: bool,
    /// Per catalog event: its name, category (class) name and argument names.
    pub(super) events: Vec<(String, String, Vec<String>)>,
    /// The state of the packet sequence being written (`seqs[cur]` holds a
    /// placeholder meanwhile), and of the others; boxed, so that switching
    /// sequences swaps pointers, not five tables (8 % of the export's time).
    pub(super) st: Box<Sequence>,
    // Boxed on purpose: `enter` swaps a sequence with `st`.
    #[allow(clippy::vec_box)]
    pub(super) seqs: Vec<Box<Sequence>>,
    pub(super) cur: usize,
    /// Combine runs being reassembled, the names learned from name runs,
    /// and the items reassembled but not yet written.
    pub(super) runs: Assembler,
    pub(super) run_names: RunNames,
    pub(super) ready: Vec<Item>,
    /// The slice derivation shared with the Chrome export.
    pub(super) slices: Slices,
    /// Its edges of the current event, reused.
    pub(super) edges: Vec<Edge>,
    /// Track and packet sequence (index in `seqs`) of each followed source.
    pub(super) sources: BySource<(u64, usize)>,
    /// The `scopes` track of each source with scopes (a child of its track).
    pub(super) scope_tracks: BTreeMap<u32, u64>,
    /// Hashed (FxHash), not ordered: looked up three times a schedule, never
    /// walked in order.
    pub(super) tasks: HashMap<u64, TaskTrack, rustc_hash::FxBuildHasher>,
    /// Track of each task/semaphore pair, by its [`Edge`] number.
    pub(super) pairs: Vec<u64>,
    /// The shared track of sources past `max_tracks`, once made.
    pub(super) overflow_track: Option<u64>,
    /// The counters of the catalog (FORMAT.md 1.3.2).
    pub(super) counters: CounterTable,
    /// The track of each (source, counter, queue) with a value (`None`:
    /// the sources past `max_tracks`, together; the queue of a queue
    /// counter's series, FORMAT.md 1.3.4, else `None`).
    pub(super) counter_tracks: BTreeMap<(Option<u32>, usize, Option<u64>), u64>,
    /// Pairs flow records (FORMAT.md 1.3.3) into instances.
    pub(super) flows: FlowTracker,
    /// The flow field (`flow_ids` or `terminating_flow_ids`) and instance
    /// number the next instant carries.
    pub(super) flow: Option<(u32, u64)>,
    /// The derived wake-up flows (`src/export/wakes.rs`), and the flow
    /// field and id the current event's packet carries (taken by the slice
    /// edge that stands for the event, else by its instant).
    pub(super) wakes: Wakes,
    pub(super) derived: Option<(u32, u64)>,
    /// The `lost events` counter track, once made.
    pub(super) loss_track: Option<u64>,
    pub(super) next_uuid: u64,
    /// Latest event time seen (where open slices end at `finish`).
    pub(super) end: u64,
    /// Encoding buffers, reused: the packet, its track event, its interned
    /// data.
    pub(super) packet: Vec<u8>,
    pub(super) event: Vec<u8>,
    pub(super) interned: Vec<u8>,
    pub(super) text: String,
    pub(super) stats: ConvertStats,
    pub(super) finished: bool,
}

pub(super) fn io_err(e: std::io::Error) -> Error {
    Error::Io(crate::model::io_error::IoError::without_path(
        "write the Perfetto trace",
        e,
    ))
}

impl<W: Write> PerfettoWriter<W> {
    /// Starts the trace on `out` with default options; `origin_unix_ns` is the
    /// Unix time of the trace's time zero.
    ///
    /// ```
    /// use qtrace::classes::{system, Catalog};
    /// use qtrace::export::{self, perfetto::PerfettoWriter};
    /// use qtrace::Event;
    ///
    /// let events = [Event::new(1_000, system::SCHEDULE, 0, [3, 0])];
    /// let stats = export::convert(PerfettoWriter::new(&Catalog::builtin(), 0, Vec::new())?, events)?;
    /// assert_eq!(stats.events, 1);
    /// # Ok::<(), qtrace::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`ExportError::Io`](Error::Io) if `out` cannot be written.
    pub fn new(catalog: &Catalog, origin_unix_ns: u64, out: W) -> Result<Self, Error> {
        Self::with_options(catalog, origin_unix_ns, out, PerfettoOptions::default())
    }

    /// As [`PerfettoWriter::new`], with explicit options.
    ///
    /// # Errors
    /// [`ExportError::Io`](Error::Io) if `out` cannot be written;
    /// [`ExportError::InvalidExportOption`](Error::InvalidExportOption)
    /// if `max_tracks` or `max_interned` is 0.
    pub fn with_options(
        catalog: &Catalog,
        origin_unix_ns: u64,
        out: W,
        options: PerfettoOptions,
    ) -> Result<Self, Error> {
        for (option, value) in [
            ("PerfettoOptions::max_tracks", options.max_tracks),
            ("PerfettoOptions::max_interned", options.max_interned),
        ] {
            if value == 0 {
                return Err(Error::InvalidExportOption {
                    option,
                    reason: "must be at least 1".to_string(),
                });
            }
        }
        let events: Vec<(String, String, Vec<String>)> = catalog
            .events()
            .iter()
            .map(|e| {
                let class = catalog
                    .class(e.class)
                    .map_or("unknown", |c| c.name.as_str());
                (e.name.clone(), class.to_string(), e.args.clone())
            })
            .collect();
        let mut w = PerfettoWriter {
            out: BufWriter::with_capacity(64 * 1024, out),
            options,
            compress: true,
            held: 0,
            descriptors: false,
            last_writer: Vec::new(),
            deflater: None,
            zipper: None,
            zipper_failed: false,
            events,
            st: Box::new(Sequence {
                id: SEQUENCE_ID,
                ..Sequence::default()
            }),
            seqs: vec![Box::default()],
            cur: 0,
            runs: Assembler::new(),
            run_names: RunNames::new(),
            ready: Vec::new(),
            slices: Slices::new(SliceOptions {
                interrupt_max_ns: options.interrupt_max_ns,
                max_tracks: options.max_tracks,
                max_open_waits: options.max_open_waits,
            })
            .with_scopes(&ScopeTable::new(catalog)),
            scope_tracks: BTreeMap::new(),
            counters: CounterTable::new(catalog),
            counter_tracks: BTreeMap::new(),
            flows: FlowTable::new(catalog).tracker(),
            flow: None,
            wakes: Wakes::new(options.interrupt_max_ns),
            derived: None,
            edges: Vec::with_capacity(8),
            sources: BySource::default(),
            tasks: HashMap::default(),
            pairs: Vec::new(),
            overflow_track: None,
            loss_track: None,
            next_uuid: 1,
            end: 0,
            packet: Vec::with_capacity(256),
            event: Vec::with_capacity(256),
            interned: Vec::with_capacity(256),
            text: String::new(),
            stats: ConvertStats::default(),
            finished: false,
        };
        w.start(origin_unix_ns)?;
        Ok(w)
    }

    /// Names known in advance ([`crate::model::combine::Names::gather`] over the
    /// input's name records): tracks get their source's or task's name when
    /// they are declared, even when the name record comes later in the trace
    /// (a circular queue's snapshot may hold it after the events it names).
    /// Without it, a name record renames the tracks declared before it.
    ///
    /// ```
    /// use qtrace::classes::{system, Catalog};
    /// use qtrace::combine::{Names, Run, NAME_TASK};
    /// use qtrace::export::{self, perfetto::PerfettoWriter};
    /// use qtrace::Event;
    ///
    /// let name = Run::name(9_000, 0, NAME_TASK, 3, b"idle");
    /// let mut events = vec![Event::new(1_000, system::SCHEDULE, 0, [3, 0])];
    /// events.extend((0..name.len()).map(|i| name.record(i)));
    /// let names = Names::gather(events.iter().copied());
    /// assert_eq!(names.task(3), Some("idle"));
    /// let mut trace = Vec::new();
    /// let w = PerfettoWriter::new(&Catalog::builtin(), 0, &mut trace)?
    ///     .with_names(names)
    ///     .with_compression(false);
    /// export::convert(w, events)?;
    /// // The task's track and its slice on the CPU's track say `task 3 idle`.
    /// assert!(trace.windows(11).any(|w| w == b"task 3 idle"));
    /// # Ok::<(), qtrace::Error>(())
    /// ```
    pub fn with_names(mut self, names: RunNames) -> Self {
        self.run_names = names;
        self
    }

    /// Whether the packets are written compressed (`true`, the default: see
    /// "Compression" in the [module documentation](super)) or as they are
    /// (`false`: for a tool that reads Perfetto's protobuf but cannot inflate
    /// `compressed_packets`; the file is several times larger). Either way
    /// the packets are the same, in the same order, and they reach `out` in
    /// chunks of about 256 KiB, each of one packet sequence's packets.
    ///
    /// ```
    /// use qtrace::classes::{system, Catalog};
    /// use qtrace::export::{self, perfetto::PerfettoWriter};
    /// use qtrace::Event;
    ///
    /// let events = [Event::new(1_000, system::SCHEDULE, 0, [3, 0])];
    /// let mut plain = Vec::new();
    /// let w = PerfettoWriter::new(&Catalog::builtin(), 0, &mut plain)?.with_compression(false);
    /// export::convert(w, events)?;
    /// // Readable as it is: the slice's name is in the file.
    /// assert!(plain.windows(6).any(|w| w == b"task 3"));
    /// # Ok::<(), qtrace::Error>(())
    /// ```
    pub fn with_compression(mut self, compress: bool) -> Self {
        self.compress = compress;
        self
    }
    /// The sequence of `source` (the shared one if it has none).
    pub(super) fn sequence_of(&self, source: u32) -> usize {
        self.sources.get(source).map_or(0, |&(_, seq)| seq)
    }

    /// Makes `seq` the packet sequence written on.
    pub(super) fn enter(&mut self, seq: usize) {
        if seq != self.cur {
            std::mem::swap(&mut self.st, &mut self.seqs[self.cur]);
            std::mem::swap(&mut self.st, &mut self.seqs[seq]);
            self.cur = seq;
        }
    }
}

impl<W: Write> EventSink for PerfettoWriter<W> {
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
        if combine::is_combine(e) {
            if e.id.0 as usize >= self.events.len() {
                self.stats.unknown += 1;
            }
            let ready = &mut self.ready;
            self.runs.push(*e, &mut |item| ready.push(item));
            return self.write_ready();
        }
        self.record(e)
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
        for &edge in &edges {
            let seq = match edge {
                Edge::TaskEnd { source, .. }
                | Edge::IrqEnd { source, .. }
                | Edge::ScopeEnd { source, .. } => self.sequence_of(source),
                _ => 0,
            };
            self.enter(seq);
            self.edge(edge, None)?;
        }
        self.stats.unpaired += self.slices.unpaired() + self.flows.unpaired();
        self.flush_all(false)?;
        if let Some(z) = &mut self.zipper {
            z.drain(&mut self.out).map_err(io_err)?;
        }
        self.out.flush().map_err(io_err)?;
        Ok(self.stats)
    }
}

impl<W: Write> PerfettoWriter<W> {
    /// Writes the reassembled runs waiting in `ready`.
    fn write_ready(&mut self) -> Result<(), Error> {
        let items = std::mem::take(&mut self.ready);
        let mut result = Ok(());
        for item in &items {
            result = match item {
                Item::Payload(p) => self.payload(p),
                Item::Event(e) => self.record(e),
            };
            if result.is_err() {
                break;
            }
        }
        self.ready = items;
        self.ready.clear();
        result
    }

    /// Writes a record that is not part of a combine run: its slice edges,
    /// and an instant unless an edge stands for it.
    fn record(&mut self, e: &Event) -> Result<(), Error> {
        let tracked = self.source_track(e.source)?;
        self.derived = self.wakes.push(e).map(|w| match w {
            WakeStep::Begin(id) => (field::FLOW_IDS, id),
            WakeStep::End(id) => (field::TERMINATING_FLOW_IDS, id),
        });
        let mut edges = std::mem::take(&mut self.edges);
        self.slices.push(e, &mut edges);
        // Whether the event is drawn as a slice's begin or end (else it is
        // an instant).
        let mut drawn = false;
        let mut result = Ok(());
        for &edge in &edges {
            match self.edge(edge, Some(e)) {
                Ok(d) => drawn |= d,
                Err(err) => {
                    result = Err(err);
                    break;
                }
            }
        }
        edges.clear();
        self.edges = edges;
        result?;
        // A derived flow no edge took goes on the event's instant.
        let derived = self.derived.take();
        // Every system event names a task: give it its track.
        // (A schedule's task track is made, or counted, above.)
        if e.id != system::SCHEDULE
            && (system::CREATE.0..=system::DISABLE.0).contains(&e.id.0)
            && self.task_track(e.args[0])?.is_none()
        {
            self.stats.unpaired += 1;
        }
        if let Some(counter) = self.counters.lookup(e.id) {
            // A counter record is its value on its counter track.
            self.counter_value(e, counter, tracked)?;
        } else if !drawn {
            // A paired flow record carries its instance: a begin or step in
            // `flow_ids`, an end in `terminating_flow_ids`.
            self.flow = self.flows.push(e).and_then(|f| {
                let field = match f.phase {
                    FlowPhase::End => field::TERMINATING_FLOW_IDS,
                    _ => field::FLOW_IDS,
                };
                f.instance.map(|n| (field, n))
            });
            self.flow = self.flow.or(derived);
            let track = self.instant_track(tracked)?;
            self.instant(e, track)?;
        }
        if e.id == tracer::HOOPS {
            self.loss_counter(e.time)?;
        }
        Ok(())
    }
}
