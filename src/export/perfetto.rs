//! Perfetto's native protobuf trace (`TracePacket`s of `TrackEvent`s), for
//! Perfetto's UI (<https://ui.perfetto.dev>) and its trace processor.
//!
//! # What is written
//!
//! A `perfetto.protos.Trace`: a sequence of `TracePacket`s on one packet
//! sequence per source (`trusted_packet_sequence_id` 2, 3, … in order of
//! the sources' first events) and a shared sequence 1 (track descriptors,
//! the first packet, events of sources past [`PerfettoOptions::max_tracks`],
//! slice ends written at the end of the trace).
//!
//! - **Sequences.** Every packet names its sequence (Perfetto's trace
//!   processor refuses interned data, packet defaults and sequence-scoped
//!   clocks on a packet without `trusted_packet_sequence_id`). A source's
//!   events, and the slice edges they cause on task and task/semaphore
//!   tracks, go on the source's sequence, whose `TrackEventDefaults` name the
//!   source's track: its events omit `track_uuid` (the trace processor takes
//!   the default, `track_event_tokenizer.cc` lines 547-550 at `ec5d16b1`).
//!   Only a sequence's first packet sets `sequence_flags`
//!   (`SEQ_INCREMENTAL_STATE_CLEARED | SEQ_NEEDS_INCREMENTAL_STATE`). The
//!   proto's comment on `trace_packet_defaults` asks every later packet for
//!   `SEQ_NEEDS_INCREMENTAL_STATE` too, but the trace processor only uses that flag
//!   to *skip* a packet while the sequence's incremental state is invalid
//!   (from the start of a sequence until a packet clears it, or after a
//!   packet loss its writer reports); in a file written in one go, whose
//!   sequences start with a packet that clears the state, it never is, so
//!   the flag would change nothing and cost 2 bytes a packet. (Perfetto at
//!   `ec5d16b1`: `src/trace_processor/importers/proto/proto_trace_reader.cc`
//!   lines 340-347 and 397-425, `packet_sequence_state_builder.h` lines 54-74.)
//! - **Time.** A sequence's first packet clears its incremental state, makes
//!   clock 64 (a sequence-scoped, *incremental* clock in nanoseconds) the
//!   default of its later packets, and maps it with a `ClockSnapshot` to
//!   `BOOTTIME` 0 (sequence 1's also maps `REALTIME` to the trace's clock
//!   origin, Unix ns). Each later packet's `timestamp` is then the delta from
//!   the same sequence's previous one, a one- or two-byte varint for a busy
//!   trace. A packet earlier than that (an interrupt slice's end, a
//!   semaphore slice's begin, input that goes back in time) names `BOOTTIME`
//!   (clock 6) itself and carries an absolute time instead; the trace
//!   processor sorts packets by time.
//! - **Interning.** Per sequence, event names, categories (class names) and
//!   argument names are written once, in the `interned_data` of the packet
//!   that first uses them, and referred to by number after that. So are the
//!   names of slices (`task 3`, `irq 9`, `sem 1`), up to
//!   [`PerfettoOptions::max_interned`] names a sequence; past that, names are
//!   written in full.
//! - **Tracks.** One track per source (`source N`, or `tracer` for the
//!   tracer's own source `u32::MAX`); one per task that an event names
//!   (`task N`, from the system and semaphore classes); under a task's track
//!   (at the top if the task has none, past [`PerfettoOptions::max_tracks`]),
//!   one per task/semaphore pair (`task T sem S`); and a counter track
//!   `lost events`. Every descriptor sets `sibling_merge_behavior` to
//!   `SIBLING_MERGE_BEHAVIOR_NONE`.
//! - **Names.** A source or task named by a name record
//!   ([`crate::combine`]: `Tracer::name_source`, `name_task`) has its name
//!   after its number: track `source 5 worker-5`, track and task slices
//!   `task 3 idle`; an event given a run-time name (`NAME_EVENT_ID`) is
//!   named so. A name known in advance ([`PerfettoWriter::with_names`]) is
//!   used from the first track on; a name that arrives after its track was
//!   declared declares the track again with the name, which the trace
//!   processor takes as a rename for tracks that do not merge with siblings
//!   (`src/trace_processor/importers/proto/track_event_tracker.cc` lines
//!   176-221 at `ec5d16b1`). Task slices written before the name keep
//!   `task N`.
//! - **Strings and bytes.** A combine run (`log_str`, `log_bytes`) is
//!   reassembled ([`crate::combine::Assembler`], as the Chrome export does)
//!   into one instant on its source's track, named after its event, with the
//!   event's first argument when one was logged, the payload as `text` (or
//!   `bytes`, hexadecimal, when it is not UTF-8), `partial` (`"2 records of
//!   3"`) or `corrupt` when it is not whole, and `logged_len` when the
//!   logger cut it.
//! - **Events.** Every record is written once: as a slice begin or end if
//!   the export draws it as one, else as an instant.
//!   - A `system:schedule` on a source with a track *is* the begin of its
//!     `task N` slice on that track (N = its `task` argument), and a
//!     `lowlevel:interrupt` the begin of its `irq N` slice; their other
//!     arguments that `qtrace dump` shows (a schedule's non-zero `arg1`) are
//!     debug annotations of the begin. Its time is the slice's, so raised to
//!     the track's latest time if the input goes back in time there.
//!   - Every other record is an instant (`TYPE_INSTANT`) on its source's
//!     track, named after the event, with the class as category and every
//!     argument that `qtrace dump` shows (see [`args`](super::args)) as a
//!     debug annotation (`uint_value`). An event the catalog does not define
//!     is an instant `unknown` of category `unknown` with `id`, `arg0` and
//!     `arg1`.
//!   - A blocking `semaphore:wait` *is* the begin of its `sem S` slice on
//!     the `task T sem S` track (T and S: its `task` and `sem` arguments),
//!     with a debug annotation `source` (the source that logged it, as the
//!     track of an instant would say); a `semaphore:signal` that closes an
//!     open wait *is* that slice's end, annotated `signal source` (the trace
//!     processor adds an end's annotations to its slice's, so the name
//!     differs from the begin's). A `waitnb` stays an instant, since it may
//!     have failed: its slice's begin is written at the signal, with the
//!     waitnb's time and no annotation. A signal with no open wait, and a
//!     wait past the limits, stay instants.
//! - **Slices**, as the [Chrome](super::chrome) export draws them (one
//!   derivation for both, `src/export/slices.rs`):
//!   - `task N` (category `task`) on the source's track from a
//!     `system:schedule` to the next `system:schedule` on that source (or the
//!     end of the trace), and the same span as `source S` on the task's track;
//!   - `irq N` (category `interrupt`) on the source's track from a
//!     `lowlevel:interrupt` to the next event of the same source, at most
//!     [`PerfettoOptions::interrupt_max_ns`] long, so it nests in the task
//!     slice it interrupted;
//!   - `sem S` (category `semaphore`) on the pair's track from a
//!     `semaphore:wait` or `semaphore:waitnb` to the `semaphore:signal` of
//!     the same task and semaphore (last in, first out); a `waitnb` never
//!     signalled most likely failed and draws none (counted in
//!     [`ConvertStats::unpaired`]), a blocking `wait` never signalled is
//!     shown held until the end of the trace (an end with no annotation).
//!
//!   Slice times never go back on a track (a time earlier than the track's
//!   previous one is raised to it), so slices nest on every track.
//! - **Compression.** By default the packets are gathered into chunks of
//!   about [`CHUNK_BYTES`] (128 KiB) and each chunk is written as one packet
//!   whose `compressed_packets` (field 50) is the zlib stream (level 6) of
//!   the chunk's packets, each with its `Trace.packet` key and length, as
//!   Perfetto's tracing service writes a trace with `compression_type:
//!   COMPRESSION_TYPE_DEFLATE` (`src/tracing/service/zlib_compressor.cc`:
//!   `deflateInit(&stream_, 6)`, a zlib header; a `Trace.packet` preamble per
//!   packet; one `compressed_packets` packet per batch). The trace processor
//!   inflates it and reads the packets inside as if they were in the file
//!   (`src/trace_processor/importers/proto/proto_trace_tokenizer.cc`,
//!   `has_compressed_packets`); a sequence's state (clock, interning,
//!   default track) carries on from one chunk to the next. It makes the file
//!   several times smaller (BENCHMARKS.md, "Perfetto: compressed packets").
//!   A tool that cannot inflate reads the output of
//!   [`PerfettoWriter::with_compression`]`(false)`: the same packets, not
//!   compressed.
//! - **Losses.** A hoops record is an instant `hoops` (category `tracer`,
//!   arguments `lost` and `queue`) on the tracer's track, and a step of the
//!   `lost events` counter track, which counts the events lost so far.
//!
//! # Memory
//!
//! Per source: its track, open task, pending interrupt and sequence (clock
//! and interning tables, each bounded by the catalog's events and
//! [`PerfettoOptions::max_interned`]); per task: its track
//! and the source it runs on; per task/semaphore pair: its track and open
//! waits; the names learned (at most
//! [`crate::combine::Names::MAX`] of each kind) and the combine runs being
//! reassembled (at most [`crate::combine::Assembler::MAX_PENDING`]). Each is
//! bounded by
//! [`PerfettoOptions::max_tracks`], [`PerfettoOptions::max_open_waits`] and
//! [`PerfettoOptions::max_interned`]; past those limits events are still
//! written as instants (on their source's track, or a shared `other sources`
//! track, where a schedule or interrupt is an instant too) and counted in
//! [`ConvertStats::unpaired`]. A pair whose open waits fill
//! [`PerfettoOptions::max_open_waits`] forgets its oldest open `waitnb`; if
//! the oldest is a blocking wait (whose begin is written), the new wait opens
//! nothing.
//!
//! # Encoder
//!
//! Written with the crate's own small protobuf encoder (see
//! `src/export/protobuf.rs` for why no protobuf crate).
//!
//! ```
//! use qtrace::classes::{system, Catalog};
//! use qtrace::export::{self, perfetto::PerfettoWriter};
//! use qtrace::Event;
//!
//! let catalog = Catalog::builtin();
//! let events = vec![
//!     Event::new(1_000, system::SCHEDULE, 0, [3, 0]),
//!     Event::new(5_000, system::SCHEDULE, 0, [4, 0]),
//! ];
//! let mut trace = Vec::new();
//! let stats = export::convert(PerfettoWriter::new(&catalog, 0, &mut trace)?, events)?;
//! assert_eq!((stats.events, stats.slices), (2, 4)); // task 3 and 4, on the CPU and task tracks
//! // One Trace.packet (field 1, length-delimited) holding compressed_packets
//! // (field 50: key 0x92 0x03), the zlib stream of every packet.
//! assert_eq!(trace[0], 0x0a);
//! assert!(trace.windows(2).any(|w| w == [0x92, 0x03]));
//! # Ok::<(), qtrace::Error>(())
//! ```

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io::{BufWriter, Write};

use flate2::write::ZlibEncoder;
use flate2::Compression;

use super::args::UNNAMED;
use super::protobuf::{put_bytes, put_int, put_message, put_uint};
use super::slices::{Edge, SliceOptions, Slices, Source};
use super::ExportError as Error;
use super::{ConvertStats, EventSink};
use crate::classes::{system, tracer, Catalog};
use crate::combine::{self, Assembler, Item, Names as RunNames, Payload, PayloadState};
use crate::event::TRACER_SOURCE;
use crate::io_error::IoError;
use crate::{Event, EventId};

/// The shared packet sequence (the first packet, track descriptors, events
/// of sources without a track); the sources' own sequences follow it: 2, 3, …
pub const SEQUENCE_ID: u64 = 1;
/// The sequence-scoped incremental clock (nanoseconds) of packet timestamps.
pub const INCREMENTAL_CLOCK: u64 = 64;
/// Perfetto's `BUILTIN_CLOCK_BOOTTIME`: time 0 is the trace's clock origin.
pub const BOOTTIME_CLOCK: u64 = 6;
/// Perfetto's `BUILTIN_CLOCK_REALTIME` (Unix time).
pub const REALTIME_CLOCK: u64 = 1;

// Field numbers of perfetto.protos messages (protos/perfetto/trace/…).
mod field {
    pub const TRACE_PACKET: u32 = 1;
    // TracePacket
    pub const TIMESTAMP: u32 = 8;
    pub const TIMESTAMP_CLOCK_ID: u32 = 58;
    pub const TRUSTED_SEQUENCE_ID: u32 = 10;
    pub const SEQUENCE_FLAGS: u32 = 13;
    pub const TRACK_EVENT: u32 = 11;
    pub const TRACK_DESCRIPTOR: u32 = 60;
    pub const CLOCK_SNAPSHOT: u32 = 6;
    pub const INTERNED_DATA: u32 = 12;
    pub const TRACE_PACKET_DEFAULTS: u32 = 59;
    pub const COMPRESSED_PACKETS: u32 = 50;
    // TracePacketDefaults
    pub const DEFAULT_TIMESTAMP_CLOCK_ID: u32 = 58;
    pub const TRACK_EVENT_DEFAULTS: u32 = 11;
    // ClockSnapshot / Clock
    pub const CLOCKS: u32 = 1;
    pub const CLOCK_ID: u32 = 1;
    pub const CLOCK_TIMESTAMP: u32 = 2;
    pub const CLOCK_IS_INCREMENTAL: u32 = 3;
    // InternedData
    pub const EVENT_CATEGORIES: u32 = 1;
    pub const EVENT_NAMES: u32 = 2;
    pub const DEBUG_ANNOTATION_NAMES: u32 = 3;
    pub const IID: u32 = 1;
    pub const INTERNED_NAME: u32 = 2;
    // TrackDescriptor
    pub const UUID: u32 = 1;
    pub const PARENT_UUID: u32 = 5;
    pub const TRACK_NAME: u32 = 2;
    pub const COUNTER: u32 = 8;
    pub const COUNTER_UNIT: u32 = 3;
    pub const SIBLING_MERGE_BEHAVIOR: u32 = 15;
    // TrackEvent
    pub const TYPE: u32 = 9;
    pub const TRACK_UUID: u32 = 11;
    pub const NAME_IID: u32 = 10;
    pub const NAME: u32 = 23;
    pub const CATEGORY_IIDS: u32 = 3;
    pub const DEBUG_ANNOTATIONS: u32 = 4;
    pub const COUNTER_VALUE: u32 = 30;
    // DebugAnnotation
    pub const ANNOTATION_NAME_IID: u32 = 1;
    pub const UINT_VALUE: u32 = 3;
    pub const BOOL_VALUE: u32 = 2;
    pub const STRING_VALUE: u32 = 6;
}

/// Uncompressed bytes of packets gathered before they are written: as one
/// `compressed_packets` packet (see the module documentation), or as they
/// are when compression is off.
pub const CHUNK_BYTES: usize = 128 * 1024;

/// `TrackEvent.Type`.
const SLICE_BEGIN: u64 = 1;
const SLICE_END: u64 = 2;
const INSTANT: u64 = 3;
const COUNTER: u64 = 4;
/// `TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED`.
const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
/// `TracePacket.SequenceFlags.SEQ_NEEDS_INCREMENTAL_STATE`.
const SEQ_NEEDS_INCREMENTAL_STATE: u64 = 2;
/// Debug annotation of a blocking `semaphore:wait` drawn as its `sem S`
/// slice's begin: the source that logged the wait.
pub const WAIT_SOURCE: &str = "source";
/// Debug annotation of a `semaphore:signal` drawn as its `sem S` slice's end:
/// the source that logged the signal (a name of its own: the trace processor
/// adds an end's arguments to its slice's, next to the begin's `source`).
pub const SIGNAL_SOURCE: &str = "signal source";
/// `TrackDescriptor.SiblingMergeBehavior.SIBLING_MERGE_BEHAVIOR_NONE`.
const SIBLING_MERGE_BEHAVIOR_NONE: u64 = 2;
/// `CounterDescriptor.Unit.UNIT_COUNT`.
const UNIT_COUNT: u64 = 2;

/// Tuning of [`PerfettoWriter`].
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

/// Times on one track never go back, so its slices nest.
#[derive(Debug)]
struct TaskTrack {
    uuid: u64,
    /// Times never go back on the task's track, so its slices nest.
    clamp: u64,
    /// The source whose `source S` slice is open on this track.
    on: Option<u32>,
}

/// The value of a debug annotation.
#[derive(Clone, Copy, Debug)]
enum Value<'a> {
    Uint(u64),
    Bool(bool),
    Str(&'a str),
}

/// One packet sequence: its id, incremental clock, default track and
/// interning tables (the trace processor keeps all of them per sequence).
#[derive(Debug, Default)]
struct Sequence {
    /// `trusted_packet_sequence_id`.
    id: u64,
    /// Time of the incremental clock (the latest delta-encoded packet).
    clock: u64,
    /// `TrackEventDefaults.track_uuid`: events on it omit `track_uuid`.
    track: Option<u64>,
    /// Per catalog event id: interned iids of its name and category.
    event_iids: HashMap<u16, (u64, u64)>,
    /// Per catalog event id: interned iids of its two argument names (0: not yet).
    arg_iids: HashMap<u16, [u64; 2]>,
    names: Interner,
    categories: Interner,
    annotation_names: Interner,
    /// Slice names interned so far (at most `max_interned`).
    slice_names: usize,
}

/// Appends `track_uuid` unless it is the sequence's default track.
fn put_track(e: &mut Vec<u8>, default: Option<u64>, track: u64) {
    if default != Some(track) {
        put_uint(e, field::TRACK_UUID, track);
    }
}

/// Interned strings of one kind.
#[derive(Debug, Default)]
struct Interner {
    ids: HashMap<String, u64>,
}

/// Writes a Perfetto protobuf trace, one event at a time (see the [module
/// documentation](self)).
#[derive(Debug)]
pub struct PerfettoWriter<W: Write> {
    out: BufWriter<W>,
    options: PerfettoOptions,
    /// Whether chunks are written as `compressed_packets`.
    compress: bool,
    /// Packets (each with its `Trace.packet` key and length) not yet written,
    /// at most about [`CHUNK_BYTES`]; and the compressed chunk, reused.
    chunk: Vec<u8>,
    zipped: Vec<u8>,
    /// Per catalog event: its name, category (class) name and argument names.
    events: Vec<(String, String, Vec<String>)>,
    /// The state of the packet sequence being written (`seqs[cur]` holds a
    /// placeholder meanwhile), and of the others.
    st: Sequence,
    seqs: Vec<Sequence>,
    cur: usize,
    /// Combine runs being reassembled, the names learned from name runs,
    /// and the items reassembled but not yet written.
    runs: Assembler,
    run_names: RunNames,
    ready: Vec<Item>,
    /// The slice derivation shared with the Chrome export.
    slices: Slices,
    /// Its edges of the current event, reused.
    edges: Vec<Edge>,
    /// Track and packet sequence (index in `seqs`) of each followed source.
    sources: BTreeMap<u32, (u64, usize)>,
    tasks: BTreeMap<u64, TaskTrack>,
    /// Track of each task/semaphore pair, by its [`Edge`] number.
    pairs: Vec<u64>,
    /// The shared track of sources past `max_tracks`, once made.
    overflow_track: Option<u64>,
    /// The `lost events` counter track, once made.
    loss_track: Option<u64>,
    next_uuid: u64,
    /// Latest event time seen (where open slices end at `finish`).
    end: u64,
    /// Encoding buffers, reused: the packet, its track event, its interned
    /// data, and a scratch buffer for nested messages.
    packet: Vec<u8>,
    event: Vec<u8>,
    interned: Vec<u8>,
    scratch: Vec<u8>,
    scratch2: Vec<u8>,
    text: String,
    stats: ConvertStats,
    finished: bool,
}

fn io_err(e: std::io::Error) -> Error {
    Error::Io(IoError::without_path("write the Perfetto trace", e))
}

/// Appends an interned-string entry (`{iid, name}`) to `interned`.
fn put_interned(interned: &mut Vec<u8>, scratch: &mut Vec<u8>, kind: u32, iid: u64, name: &str) {
    put_message(interned, kind, scratch, |m| {
        put_uint(m, field::IID, iid);
        put_bytes(m, field::INTERNED_NAME, name.as_bytes());
    });
}

impl Interner {
    /// The iid of `name`, interning it (into `interned`) if new and `allow_new`;
    /// `None` for a new name that may not be interned.
    fn get(
        &mut self,
        name: &str,
        allow_new: bool,
        kind: u32,
        interned: &mut Vec<u8>,
        scratch: &mut Vec<u8>,
    ) -> Option<u64> {
        if let Some(&iid) = self.ids.get(name) {
            return Some(iid);
        }
        if !allow_new {
            return None;
        }
        let iid = self.ids.len() as u64 + 1;
        self.ids.insert(name.to_string(), iid);
        put_interned(interned, scratch, kind, iid, name);
        Some(iid)
    }
}

impl<W: Write> PerfettoWriter<W> {
    /// Starts the trace on `out` with default options; `origin_unix_ns` is the
    /// Unix time of the trace's time zero.
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
            chunk: Vec::with_capacity(CHUNK_BYTES + 4 * 1024),
            zipped: Vec::new(),
            events,
            st: Sequence {
                id: SEQUENCE_ID,
                ..Sequence::default()
            },
            seqs: vec![Sequence::default()],
            cur: 0,
            runs: Assembler::new(),
            run_names: RunNames::new(),
            ready: Vec::new(),
            slices: Slices::new(SliceOptions {
                interrupt_max_ns: options.interrupt_max_ns,
                max_tracks: options.max_tracks,
                max_open_waits: options.max_open_waits,
            }),
            edges: Vec::with_capacity(8),
            sources: BTreeMap::new(),
            tasks: BTreeMap::new(),
            pairs: Vec::new(),
            overflow_track: None,
            loss_track: None,
            next_uuid: 1,
            end: 0,
            packet: Vec::with_capacity(256),
            event: Vec::with_capacity(256),
            interned: Vec::with_capacity(256),
            scratch: Vec::with_capacity(256),
            scratch2: Vec::with_capacity(256),
            text: String::new(),
            stats: ConvertStats::default(),
            finished: false,
        };
        w.start(origin_unix_ns)?;
        Ok(w)
    }

    /// Names known in advance ([`crate::combine::Names::gather`] over the
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
    /// "Compression" in the [module documentation](self)) or as they are
    /// (`false`: for a tool that reads Perfetto's protobuf but cannot inflate
    /// `compressed_packets`; the file is several times larger). Either way
    /// the packets are the same, and they reach `out` in chunks of about
    /// [`CHUNK_BYTES`].
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

    /// The first packet: clears the incremental state, sets the default clock
    /// and maps it to BOOTTIME and REALTIME.
    fn start(&mut self, origin_unix_ns: u64) -> Result<(), Error> {
        self.sequence_start(SEQUENCE_ID, None, Some(origin_unix_ns))
    }

    /// The first packet of sequence `id`: clears its incremental state, makes
    /// clock 64 the default clock of its packets (and `track` the default
    /// track of its track events), and maps clock 64 to BOOTTIME 0 (and, on
    /// the first sequence, REALTIME to the trace's origin).
    fn sequence_start(
        &mut self,
        id: u64,
        track: Option<u64>,
        origin_unix_ns: Option<u64>,
    ) -> Result<(), Error> {
        let p = &mut self.packet;
        p.clear();
        put_uint(p, field::TRUSTED_SEQUENCE_ID, id);
        put_uint(
            p,
            field::SEQUENCE_FLAGS,
            SEQ_INCREMENTAL_STATE_CLEARED | SEQ_NEEDS_INCREMENTAL_STATE,
        );
        let scratch2 = &mut self.scratch2;
        put_message(p, field::TRACE_PACKET_DEFAULTS, &mut self.scratch, |m| {
            put_uint(m, field::DEFAULT_TIMESTAMP_CLOCK_ID, INCREMENTAL_CLOCK);
            if let Some(track) = track {
                put_message(m, field::TRACK_EVENT_DEFAULTS, scratch2, |d| {
                    put_uint(d, field::TRACK_UUID, track);
                });
            }
        });
        put_message(p, field::CLOCK_SNAPSHOT, &mut self.scratch, |m| {
            put_message(m, field::CLOCKS, scratch2, |c| {
                put_uint(c, field::CLOCK_ID, INCREMENTAL_CLOCK);
                put_uint(c, field::CLOCK_TIMESTAMP, 0);
                put_uint(c, field::CLOCK_IS_INCREMENTAL, 1);
            });
            put_message(m, field::CLOCKS, scratch2, |c| {
                put_uint(c, field::CLOCK_ID, BOOTTIME_CLOCK);
                put_uint(c, field::CLOCK_TIMESTAMP, 0);
            });
            if let Some(origin) = origin_unix_ns {
                put_message(m, field::CLOCKS, scratch2, |c| {
                    put_uint(c, field::CLOCK_ID, REALTIME_CLOCK);
                    put_uint(c, field::CLOCK_TIMESTAMP, origin);
                });
            }
        });
        self.flush_packet()
    }

    /// Adds `self.packet` as one `Trace.packet` to the chunk, writing the
    /// chunk once it holds [`CHUNK_BYTES`].
    fn flush_packet(&mut self) -> Result<(), Error> {
        put_bytes(&mut self.chunk, field::TRACE_PACKET, &self.packet);
        if self.chunk.len() >= CHUNK_BYTES {
            self.flush_chunk()?;
        }
        Ok(())
    }

    /// Writes the chunk: its packets as they are, or (compressing) one
    /// packet whose `compressed_packets` is the zlib stream of them.
    fn flush_chunk(&mut self) -> Result<(), Error> {
        if self.chunk.is_empty() {
            return Ok(());
        }
        if !self.compress {
            self.out.write_all(&self.chunk).map_err(io_err)?;
            self.chunk.clear();
            return Ok(());
        }
        // Level 6, zlib's default and what Perfetto's service uses.
        let mut z = ZlibEncoder::new(std::mem::take(&mut self.zipped), Compression::default());
        z.write_all(&self.chunk).map_err(io_err)?;
        let zipped = z.finish().map_err(io_err)?;
        self.chunk.clear();
        self.packet.clear();
        put_bytes(&mut self.packet, field::COMPRESSED_PACKETS, &zipped);
        put_bytes(&mut self.chunk, field::TRACE_PACKET, &self.packet);
        self.out.write_all(&self.chunk).map_err(io_err)?;
        self.chunk.clear();
        self.packet.clear();
        self.zipped = zipped;
        self.zipped.clear();
        Ok(())
    }

    /// Writes a packet holding the track event in `self.event` (and the
    /// interned data in `self.interned`) at time `t`.
    fn emit(&mut self, t: u64) -> Result<(), Error> {
        let p = &mut self.packet;
        p.clear();
        if t >= self.st.clock {
            put_uint(p, field::TIMESTAMP, t - self.st.clock);
            self.st.clock = t;
        } else {
            put_uint(p, field::TIMESTAMP_CLOCK_ID, BOOTTIME_CLOCK);
            put_uint(p, field::TIMESTAMP, t);
        }
        // No `sequence_flags` here (see "Sequence" in the module docs): the
        // trace processor reads SEQ_NEEDS_INCREMENTAL_STATE only to skip a
        // packet while its sequence's incremental state is invalid
        // (proto_trace_reader.cc:397-425), which it never is after our first
        // packet cleared it. `trusted_packet_sequence_id` stays: without it
        // interned data and the sequence's clock are refused
        // (proto_trace_reader.cc:691-695, 521-527; track_event_tokenizer.cc:430-433).
        put_uint(p, field::TRUSTED_SEQUENCE_ID, self.st.id);
        if !self.interned.is_empty() {
            put_bytes(p, field::INTERNED_DATA, &self.interned);
            self.interned.clear();
        }
        put_bytes(p, field::TRACK_EVENT, &self.event);
        self.flush_packet()
    }

    /// Writes a track descriptor and returns the new track's uuid.
    fn new_track(
        &mut self,
        parent: Option<u64>,
        name: std::fmt::Arguments<'_>,
        counter: bool,
    ) -> Result<u64, Error> {
        let uuid = self.next_uuid;
        self.next_uuid += 1;
        self.declare_track(uuid, parent, name, counter)?;
        Ok(uuid)
    }

    /// Writes the descriptor of track `uuid`: new, or the same track again
    /// with a new name. Every descriptor sets `sibling_merge_behavior` to
    /// `SIBLING_MERGE_BEHAVIOR_NONE`, with which the trace processor renames
    /// a track declared again (and does not merge tracks of the same name).
    fn declare_track(
        &mut self,
        uuid: u64,
        parent: Option<u64>,
        name: std::fmt::Arguments<'_>,
        counter: bool,
    ) -> Result<(), Error> {
        self.text.clear();
        let _ = self.text.write_fmt(name);
        let p = &mut self.packet;
        p.clear();
        put_uint(p, field::TRUSTED_SEQUENCE_ID, SEQUENCE_ID);
        let (text, scratch2) = (&self.text, &mut self.scratch2);
        put_message(p, field::TRACK_DESCRIPTOR, &mut self.scratch, |d| {
            put_uint(d, field::UUID, uuid);
            if let Some(parent) = parent {
                put_uint(d, field::PARENT_UUID, parent);
            }
            put_bytes(d, field::TRACK_NAME, text.as_bytes());
            put_uint(
                d,
                field::SIBLING_MERGE_BEHAVIOR,
                SIBLING_MERGE_BEHAVIOR_NONE,
            );
            if counter {
                put_message(d, field::COUNTER, scratch2, |c| {
                    put_uint(c, field::COUNTER_UNIT, UNIT_COUNT);
                });
            }
        });
        self.flush_packet()
    }

    /// The track of `source`, made on first use with a packet sequence of
    /// its own; `None` past `max_tracks`. Makes the source's sequence (or,
    /// for `None`, the shared sequence 1) the one written on.
    fn source_track(&mut self, source: u32) -> Result<Option<u64>, Error> {
        match self.slices.source(source) {
            Source::Known => {
                let (uuid, seq) = self.sources.get(&source).copied().unwrap_or((0, 0));
                self.enter(seq);
                Ok(Some(uuid))
            }
            Source::Untracked => {
                self.enter(0);
                Ok(None)
            }
            Source::New => {
                let uuid = self.next_uuid;
                self.next_uuid += 1;
                self.declare_source(source, uuid)?;
                self.stats.sources += 1;
                let seq = self.seqs.len();
                let id = SEQUENCE_ID + seq as u64;
                self.seqs.push(Sequence {
                    id,
                    track: Some(uuid),
                    ..Sequence::default()
                });
                self.sources.insert(source, (uuid, seq));
                self.enter(seq);
                self.sequence_start(id, Some(uuid), None)?;
                Ok(Some(uuid))
            }
        }
    }

    /// The sequence of `source` (the shared one if it has none).
    fn sequence_of(&self, source: u32) -> usize {
        self.sources.get(&source).map_or(0, |&(_, seq)| seq)
    }

    /// Makes `seq` the packet sequence written on.
    fn enter(&mut self, seq: usize) {
        if seq != self.cur {
            std::mem::swap(&mut self.st, &mut self.seqs[self.cur]);
            std::mem::swap(&mut self.st, &mut self.seqs[seq]);
            self.cur = seq;
        }
    }

    fn task_track(&mut self, task: u64) -> Result<Option<u64>, Error> {
        if let Some(t) = self.tasks.get(&task) {
            return Ok(Some(t.uuid));
        }
        if self.tasks.len() >= self.options.max_tracks {
            return Ok(None);
        }
        let uuid = self.next_uuid;
        self.next_uuid += 1;
        self.declare_task(task, uuid)?;
        self.tasks.insert(
            task,
            TaskTrack {
                uuid,
                clamp: 0,
                on: None,
            },
        );
        Ok(Some(uuid))
    }

    /// Declares the track of `source` (`tracer`, `source N`, or `source N
    /// NAME` once a name record named it).
    fn declare_source(&mut self, source: u32, uuid: u64) -> Result<(), Error> {
        let name = self.run_names.source(source).map(str::to_string);
        match name {
            _ if source == TRACER_SOURCE => {
                self.declare_track(uuid, None, format_args!("tracer"), false)
            }
            Some(n) => self.declare_track(uuid, None, format_args!("source {source} {n}"), false),
            None => self.declare_track(uuid, None, format_args!("source {source}"), false),
        }
    }

    /// Declares the track of `task` (`task N`, or `task N NAME`).
    fn declare_task(&mut self, task: u64, uuid: u64) -> Result<(), Error> {
        match self.run_names.task(task).map(str::to_string) {
            Some(n) => self.declare_track(uuid, None, format_args!("task {task} {n}"), false),
            None => self.declare_track(uuid, None, format_args!("task {task}"), false),
        }
    }

    /// Interns a slice name made by `name` (formatted into a reused string).
    fn slice_name(&mut self, name: std::fmt::Arguments<'_>) -> Option<u64> {
        self.text.clear();
        let _ = self.text.write_fmt(name);
        let before = self.st.names.ids.len();
        let iid = self.st.names.get(
            &self.text,
            self.st.slice_names < self.options.max_interned,
            field::EVENT_NAMES,
            &mut self.interned,
            &mut self.scratch,
        );
        if self.st.names.ids.len() > before {
            self.st.slice_names += 1;
        }
        iid
    }

    /// The iid of a slice category (`task`, `interrupt`, `semaphore`).
    fn category(&mut self, name: &str) -> u64 {
        self.st
            .categories
            .get(
                name,
                true,
                field::EVENT_CATEGORIES,
                &mut self.interned,
                &mut self.scratch,
            )
            .unwrap_or(0)
    }

    /// Writes a slice begin named `name` (category `cat`) on `track` at `t`.
    fn begin(
        &mut self,
        t: u64,
        track: u64,
        cat: &str,
        name: std::fmt::Arguments<'_>,
    ) -> Result<(), Error> {
        self.begin_for(t, track, cat, name, None)
    }

    /// As [`begin`](Self::begin); with `Some(e)`, the begin stands for the
    /// event `e` (no instant is written for it) and carries `e`'s arguments
    /// after the first (which the slice's name shows) as debug annotations.
    fn begin_for(
        &mut self,
        t: u64,
        track: u64,
        cat: &str,
        name: std::fmt::Arguments<'_>,
        of: Option<&Event>,
    ) -> Result<(), Error> {
        self.begin_event(track, cat, name, of);
        self.emit(t)
    }

    /// Encodes a slice begin into `self.event` (see [`begin_for`](Self::begin_for))
    /// without writing it.
    fn begin_event(
        &mut self,
        track: u64,
        cat: &str,
        name: std::fmt::Arguments<'_>,
        of: Option<&Event>,
    ) {
        self.stats.slices += 1;
        let iid = self.slice_name(name);
        let cat_iid = self.category(cat);
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
    fn end_slice(&mut self, t: u64, track: u64) -> Result<(), Error> {
        let e = &mut self.event;
        e.clear();
        put_uint(e, field::TYPE, SLICE_END);
        put_track(e, self.st.track, track);
        self.emit(t)
    }

    /// Ends the pending interrupt slice of `source` at `t` at the latest.
    /// Draws one slice edge caused by event `e` (or by the end of the trace:
    /// `None`). Returns whether the edge stands for `e` itself (a schedule,
    /// an interrupt, a blocking wait, a signal), so that `e` needs no instant.
    fn edge(&mut self, edge: Edge, e: Option<&Event>) -> Result<bool, Error> {
        match edge {
            Edge::TaskEnd { source, task, t } => {
                if let Some(&(uuid, _)) = self.sources.get(&source) {
                    self.end_slice(t, uuid)?;
                }
                if let Some(tt) = self.tasks.get_mut(&task) {
                    if tt.on == Some(source) {
                        tt.on = None;
                        tt.clamp = tt.clamp.max(t);
                        let (ts, uuid) = (tt.clamp, tt.uuid);
                        self.end_slice(ts, uuid)?;
                    }
                }
                Ok(false)
            }
            Edge::TaskBegin { source, task, t } => {
                let uuid = self.sources.get(&source).map_or(0, |&(u, _)| u);
                match self.run_names.task(task).map(str::to_string) {
                    Some(n) => {
                        self.begin_for(t, uuid, "task", format_args!("task {task} {n}"), e)?
                    }
                    None => self.begin_for(t, uuid, "task", format_args!("task {task}"), e)?,
                }
                self.task_running(source, task, t)?;
                Ok(true)
            }
            Edge::IrqBegin { source, irq, t } => {
                let uuid = self.sources.get(&source).map_or(0, |&(u, _)| u);
                self.begin_for(t, uuid, "interrupt", format_args!("irq {irq}"), e)?;
                Ok(true)
            }
            Edge::IrqEnd { source, t, .. } => {
                let uuid = self.sources.get(&source).map_or(0, |&(u, _)| u);
                self.end_slice(t, uuid)?;
                Ok(false)
            }
            Edge::WaitOpen {
                task,
                sem,
                new,
                t,
                blocking,
                ..
            } => {
                if new {
                    // Under the task's track; at the top if it has none.
                    let parent = self.task_track(task)?;
                    let uuid =
                        self.new_track(parent, format_args!("task {task} sem {sem}"), false)?;
                    self.pairs.push(uuid);
                }
                let Some(ev) = e.filter(|_| blocking) else {
                    return Ok(false);
                };
                let uuid = self.pair_track(edge);
                self.begin_event(uuid, "semaphore", format_args!("sem {sem}"), None);
                self.source_annotation(WAIT_SOURCE, ev.source);
                self.emit(t)?;
                Ok(true)
            }
            Edge::Held {
                sem,
                begin,
                end,
                blocking,
                signalled,
                ..
            } => {
                let uuid = self.pair_track(edge);
                if !blocking {
                    // A waitnb's slice: its begin is written now, with its own time.
                    self.begin(begin, uuid, "semaphore", format_args!("sem {sem}"))?;
                }
                let ev = &mut self.event;
                ev.clear();
                put_uint(ev, field::TYPE, SLICE_END);
                put_track(ev, self.st.track, uuid);
                let by = e.filter(|_| signalled);
                if let Some(signal) = by {
                    self.source_annotation(SIGNAL_SOURCE, signal.source);
                }
                self.emit(end)?;
                Ok(by.is_some())
            }
        }
    }

    /// The track of the pair an edge names.
    fn pair_track(&self, edge: Edge) -> u64 {
        match edge {
            Edge::WaitOpen { pair, .. } | Edge::Held { pair, .. } => {
                self.pairs.get(pair).copied().unwrap_or(0)
            }
            _ => 0,
        }
    }

    /// Task `task` runs on `source` from `t`: its track (made on first use)
    /// shows a `source S` slice.
    fn task_running(&mut self, source: u32, task: u64, t: u64) -> Result<(), Error> {
        let Some(task_uuid) = self.task_track(task)? else {
            self.stats.unpaired += 1;
            return Ok(());
        };
        let Some(tt) = self.tasks.get_mut(&task) else {
            return Ok(());
        };
        let previous = tt.on.replace(source);
        tt.clamp = tt.clamp.max(t);
        let ts = tt.clamp;
        if previous.is_some() {
            // The events said it still ran elsewhere: end that span here.
            self.end_slice(ts, task_uuid)?;
        }
        if source == TRACER_SOURCE {
            self.begin(ts, task_uuid, "task", format_args!("tracer"))
        } else {
            self.begin(ts, task_uuid, "task", format_args!("source {source}"))
        }
    }

    /// Appends a debug annotation `name` = `source` to `self.event`.
    fn source_annotation(&mut self, name: &str, source: u32) {
        self.annotate(name, Value::Uint(u64::from(source)));
    }

    /// Appends a debug annotation `name` = `value` to `self.event` (its name
    /// interned).
    fn annotate(&mut self, name: &str, value: Value<'_>) {
        let iid = self
            .st
            .annotation_names
            .get(
                name,
                true,
                field::DEBUG_ANNOTATION_NAMES,
                &mut self.interned,
                &mut self.scratch,
            )
            .unwrap_or(0);
        put_message(
            &mut self.event,
            field::DEBUG_ANNOTATIONS,
            &mut self.scratch,
            |a| {
                put_uint(a, field::ANNOTATION_NAME_IID, iid);
                match value {
                    Value::Uint(v) => put_uint(a, field::UINT_VALUE, v),
                    Value::Bool(v) => put_uint(a, field::BOOL_VALUE, u64::from(v)),
                    Value::Str(v) => put_bytes(a, field::STRING_VALUE, v.as_bytes()),
                }
            },
        );
    }

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

    /// A reassembled run. A name record names its source, task or event:
    /// a track already declared is declared again with the name (the trace
    /// processor renames it); later tracks, task slices and instants carry
    /// it. Any other run is an instant on its source's track, named after its
    /// event, with the event's first argument (when logged), the payload as
    /// `text` (or `bytes`, hexadecimal, when it is not UTF-8) and, when it is
    /// not whole, `partial` or `corrupt`, and `logged_len` when the logger
    /// cut it.
    fn payload(&mut self, p: &Payload) -> Result<(), Error> {
        if let Some((kind, subject)) = p.name_of() {
            let before = self.names_of(kind, subject);
            self.run_names.learn(p);
            if p.state == PayloadState::Complete && self.names_of(kind, subject) != before {
                if kind == combine::NAME_SOURCE {
                    if let Some(&(uuid, _)) = self.sources.get(&(subject as u32)) {
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
        let name_iid = self.st.names.get(
            &name,
            true,
            field::EVENT_NAMES,
            &mut self.interned,
            &mut self.scratch,
        );
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
    fn names_of(&self, kind: u8, subject: u64) -> Option<String> {
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

    fn instant_track(&mut self, tracked: Option<u64>) -> Result<u64, Error> {
        if let Some(uuid) = tracked {
            return Ok(uuid);
        }
        if let Some(uuid) = self.overflow_track {
            return Ok(uuid);
        }
        let uuid = self.new_track(None, format_args!("other sources"), false)?;
        self.overflow_track = Some(uuid);
        Ok(uuid)
    }

    /// Appends the arguments of catalog event `e` from slot `from` on as debug
    /// annotations to `self.event` (as `qtrace dump` shows them: declared
    /// arguments always, undeclared ones when not 0).
    fn put_args(&mut self, e: &Event, from: usize) {
        let idx = e.id.0 as usize;
        if idx >= self.events.len() {
            return;
        }
        let declared = self.events[idx].2.len();
        for (slot, (&value, unnamed)) in e.args.iter().zip(UNNAMED).enumerate() {
            if slot < from || (slot >= declared && value == 0) {
                continue;
            }
            let id = e.id.0;
            let mut iid = self.st.arg_iids.get(&id).map_or(0, |a| a[slot]);
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
                        &mut self.scratch,
                    )
                    .unwrap_or(0);
                self.st.arg_iids.entry(id).or_default()[slot] = iid;
            }
            put_message(
                &mut self.event,
                field::DEBUG_ANNOTATIONS,
                &mut self.scratch,
                |a| {
                    put_uint(a, field::ANNOTATION_NAME_IID, iid);
                    put_uint(a, field::UINT_VALUE, value);
                },
            );
        }
    }

    /// Writes the instant of `e` on `track`.
    fn instant(&mut self, e: &Event, track: u64) -> Result<(), Error> {
        let idx = e.id.0 as usize;
        let ev = &mut self.event;
        ev.clear();
        put_uint(ev, field::TYPE, INSTANT);
        put_track(ev, self.st.track, track);
        if idx < self.events.len() {
            let (mut name, mut cat) = self.st.event_iids.get(&e.id.0).copied().unwrap_or((0, 0));
            // (`name` may be replaced by a run-time name below.)
            if name == 0 {
                let (n, c, _) = &self.events[idx];
                // Catalog names are bounded by the catalog: always interned.
                name = self
                    .st
                    .names
                    .get(
                        n,
                        true,
                        field::EVENT_NAMES,
                        &mut self.interned,
                        &mut self.scratch,
                    )
                    .unwrap_or(0);
                cat = self
                    .st
                    .categories
                    .get(
                        c,
                        true,
                        field::EVENT_CATEGORIES,
                        &mut self.interned,
                        &mut self.scratch,
                    )
                    .unwrap_or(0);
                self.st.event_iids.insert(e.id.0, (name, cat));
            }
            if !self.run_names.is_empty() {
                // A name record gave this event a run-time name.
                if let Some(n) = self.run_names.event(e.id) {
                    let n = n.to_string();
                    name = self
                        .st
                        .names
                        .get(
                            &n,
                            true,
                            field::EVENT_NAMES,
                            &mut self.interned,
                            &mut self.scratch,
                        )
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
                .get(
                    "unknown",
                    true,
                    field::EVENT_NAMES,
                    &mut self.interned,
                    &mut self.scratch,
                )
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
                    .get(
                        arg,
                        true,
                        field::DEBUG_ANNOTATION_NAMES,
                        &mut self.interned,
                        &mut self.scratch,
                    )
                    .unwrap_or(0);
                put_message(
                    &mut self.event,
                    field::DEBUG_ANNOTATIONS,
                    &mut self.scratch,
                    |a| {
                        put_uint(a, field::ANNOTATION_NAME_IID, iid);
                        put_uint(a, field::UINT_VALUE, value);
                    },
                );
            }
        }
        self.emit(e.time)
    }

    /// Steps the `lost events` counter to the total lost so far.
    fn loss_counter(&mut self, t: u64) -> Result<(), Error> {
        let uuid = match self.loss_track {
            Some(u) => u,
            None => {
                let u = self.new_track(None, format_args!("lost events"), true)?;
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
        self.emit(t)
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
                Edge::TaskEnd { source, .. } | Edge::IrqEnd { source, .. } => {
                    self.sequence_of(source)
                }
                _ => 0,
            };
            self.enter(seq);
            self.edge(edge, None)?;
        }
        self.stats.unpaired += self.slices.unpaired();
        self.flush_chunk()?;
        self.out.flush().map_err(io_err)?;
        Ok(self.stats)
    }
}

impl<W: Write> PerfettoWriter<W> {
    /// Writes a record that is not part of a combine run: its slice edges,
    /// and an instant unless an edge stands for it.
    fn record(&mut self, e: &Event) -> Result<(), Error> {
        let tracked = self.source_track(e.source)?;
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
        // Every system event names a task: give it its track.
        // (A schedule's task track is made, or counted, above.)
        if e.id != system::SCHEDULE
            && (system::CREATE.0..=system::DISABLE.0).contains(&e.id.0)
            && self.task_track(e.args[0])?.is_none()
        {
            self.stats.unpaired += 1;
        }
        if !drawn {
            let track = self.instant_track(tracked)?;
            self.instant(e, track)?;
        }
        if e.id == tracer::HOOPS {
            self.loss_counter(e.time)?;
        }
        Ok(())
    }
}
