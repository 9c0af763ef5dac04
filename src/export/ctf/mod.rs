//! CTF 1.8 output: a directory with a TSDL `metadata` file and one binary
//! stream file per source, readable by babeltrace2 and Trace Compass.
//!
//! # Layout
//!
//! - `metadata`: plain-text TSDL (`/* CTF 1.8 */`), big-endian like every
//!   qtrace format. One clock `qtrace` counting nanoseconds, whose offset is
//!   the trace's clock origin (so tools print wall-clock times). One stream
//!   class. One event class per catalog event, named `class:event`
//!   (`system:schedule`), whose payload has one `uint64` field per named
//!   argument (`task`), plus an `unknown` class (id = the catalog's event
//!   count) for records whose number the catalog lacks, which keeps the raw
//!   number and both arguments. An event that declares fewer than two
//!   arguments also has *variant* classes of the same name (ids after
//!   `unknown`: `count + 1 + 3 × id + mask − 1`) that add the undeclared
//!   slots, `arg0`/`arg1`; a record whose undeclared slot is non-zero uses
//!   one, so every argument `qtrace dump` shows is in the trace
//!   (`system:schedule: { task = 0, arg1 = 2 }`).
//! - `stream-<source>` (`stream-tracer` for the tracer's own source
//!   `u32::MAX`): a sequence of packets. Each packet is a header (`magic`,
//!   `stream_id` = 0, `stream_instance_id` = the source) and a context
//!   (`timestamp_begin`, `timestamp_end`, `content_size`, `packet_size`,
//!   `packet_seq_num`, `events_discarded`, `source`), then events, each a header
//!   (`id: uint16`, `timestamp: uint64`) and its payload.
//!
//! # Losses
//!
//! CTF's own way to say "events were lost here" is the packet context's
//! `events_discarded`: the stream's cumulative count of lost events at the end
//! of the packet. A hoops record (`tracer:hoops`, source `u32::MAX`) becomes an
//! *empty packet* of the tracer stream (`stream-tracer`) at the record's time,
//! whose count has grown by the record's `lost` argument; babeltrace2 compares
//! consecutive packets and prints `Tracer discarded N events between [t0] and
//! [t1]` there. The tracer stream starts with an empty packet whose count is
//! zero, so that the first loss has an exact count too (babeltrace2 says only
//! "may have discarded" when a stream's first packet has a non-zero count).
//! So babeltrace2 counts exactly the qtrace events as events (hoops records are
//! not events, as in `qtrace stats`) and the lost ones as discarded.
//!
//! # Memory
//!
//! Each stream buffers at most one packet ([`CtfOptions::packet_bytes`]); its
//! buffer grows with what it holds. When the buffers' allocated bytes together
//! exceed [`CtfOptions::buffer_budget`], every stream is flushed and its
//! buffer released. (Besides the buffers, the writer keeps a few dozen bytes
//! of state per source.) Stream files are opened only while a
//! packet is appended, so the number of sources is not limited by open files.
//!
//! ```
//! use qtrace::classes::{system, tracer, Catalog};
//! use qtrace::export::{self, ctf::CtfWriter};
//! use qtrace::Event;
//!
//! let dir = std::env::temp_dir().join(format!("qtrace-ctf-doc-{}", std::process::id()));
//! # let _ = std::fs::remove_dir_all(&dir);
//! let catalog = Catalog::builtin();
//! let events = [
//!     Event::new(1_000, system::SCHEDULE, 0, [3, 0]),
//!     Event::new(2_000, tracer::HOOPS, u32::MAX, [7, 0]), // 7 events lost here
//!     Event::new(3_000, system::SCHEDULE, 1, [4, 0]),
//! ];
//! let stats = export::convert(CtfWriter::create(&dir, &catalog, 0)?, events)?;
//! assert_eq!((stats.events, stats.lost, stats.sources), (2, 7, 3));
//! assert!(dir.join("metadata").exists() && dir.join("stream-tracer").exists());
//! # std::fs::remove_dir_all(&dir).unwrap();
//! # Ok::<(), qtrace::Error>(())
//! ```

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::{identifier_chars, ConvertStats, EventSink};
use crate::classes::{tracer, Catalog};
use crate::combine::{self, Assembler, Item, Payload, PayloadState};
use crate::event::TRACER_SOURCE;
use crate::export::ExportError;
use crate::Event;

/// The CTF packet magic number.
pub const MAGIC: u32 = 0xC1FC_1FC1;
/// Bytes of packet header plus packet context before the first event.
pub const PACKET_PREAMBLE: usize = 4 + 4 + 8 + 8 * 6 + 4;
/// Bytes of an event header (`id: u16`, `timestamp: u64`).
pub const EVENT_HEADER: usize = 2 + 8;
/// The name of the clock in the metadata.
pub const CLOCK_NAME: &str = "qtrace";

/// Tuning of [`CtfWriter`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CtfOptions {
    /// Largest packet, in bytes (header, context and events). Default 64 KiB.
    pub packet_bytes: usize,
    /// Largest total of packet buffer memory (allocated bytes) over all
    /// streams before every stream is flushed. Default 8 MiB.
    pub buffer_budget: usize,
}

impl Default for CtfOptions {
    fn default() -> Self {
        CtfOptions {
            packet_bytes: 64 * 1024,
            buffer_budget: 8 * 1024 * 1024,
        }
    }
}

/// One stream (source) being written.
#[derive(Debug)]
struct Stream {
    path: PathBuf,
    source: u32,
    /// Whether the file has been created (later packets are appended).
    created: bool,
    /// Encoded events of the packet being built.
    buf: Vec<u8>,
    /// Time of the first event in `buf`.
    begin: u64,
    /// Time of the last event written to this stream (packets and events never
    /// go back in time).
    last: u64,
    seq: u64,
    /// Cumulative count of discarded events at the end of the current packet.
    discarded: u64,
}

/// Writes a CTF 1.8 trace directory, one event at a time (see the [module
/// documentation](self)).
#[derive(Debug)]
pub struct CtfWriter {
    dir: PathBuf,
    options: CtfOptions,
    /// Number of payload arguments of each event id (index = id).
    arg_counts: Vec<u8>,
    unknown_id: u16,
    streams: BTreeMap<u32, Stream>,
    /// Allocated bytes of every stream's packet buffer (the sum of their
    /// capacities), which [`CtfOptions::buffer_budget`] bounds.
    buffered: usize,
    /// The latest timestamp CTF readers can place (see [`max_timestamp`]).
    max_time: u64,
    stats: ConvertStats,
    finished: bool,
    /// Combine runs being reassembled.
    runs: Assembler,
    ready: Vec<Item>,
}

/// The latest timestamp a reader can place for a trace whose clock starts
/// `origin_unix_ns` after the Unix epoch: babeltrace2 holds a time as signed
/// 64-bit nanoseconds since the epoch, so a stream with a later timestamp
/// cannot be read at all (only corrupt input has one: it is past year 2262).
pub fn max_timestamp(origin_unix_ns: u64) -> u64 {
    (i64::MAX as u64).saturating_sub(clock_origin(origin_unix_ns))
}

/// The clock origin written to the metadata, capped for the same reason:
/// babeltrace2 2.0 refuses a clock offset of 9,223,372,035 s or more (its
/// whole-second offset plus one second must fit), so the cap is the last whole
/// second before that, 9,223,372,034 s.
fn clock_origin(origin_unix_ns: u64) -> u64 {
    const MAX_ORIGIN_NS: u64 = (i64::MAX as u64 / 1_000_000_000 - 2) * 1_000_000_000;
    origin_unix_ns.min(MAX_ORIGIN_NS)
}

impl CtfWriter {
    /// Creates `dir` (which must be new or empty) and writes its `metadata`,
    /// with default options.
    pub fn create(dir: &Path, catalog: &Catalog, origin_unix_ns: u64) -> Result<Self, ExportError> {
        Self::with_options(dir, catalog, origin_unix_ns, CtfOptions::default())
    }

    /// As [`CtfWriter::create`], with explicit options.
    pub fn with_options(
        dir: &Path,
        catalog: &Catalog,
        origin_unix_ns: u64,
        options: CtfOptions,
    ) -> Result<Self, ExportError> {
        if options.packet_bytes < PACKET_PREAMBLE + EVENT_HEADER + 16 {
            return Err(ExportError::InvalidExportOption {
                option: "CtfOptions::packet_bytes",
                reason: format!(
                    "packet_bytes is {}; use at least {} so a packet holds one event",
                    options.packet_bytes,
                    PACKET_PREAMBLE + EVENT_HEADER + 16
                ),
            });
        }
        fs::create_dir_all(dir).map_err(|e| ExportError::io("create the CTF directory", dir, e))?;
        let mut entries =
            fs::read_dir(dir).map_err(|e| ExportError::io("list the CTF directory", dir, e))?;
        if entries.next().is_some() {
            return Err(ExportError::io(
                "write a CTF trace into",
                dir,
                std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    "the directory is not empty; give a new or empty directory (babeltrace2 would read stale stream files)",
                ),
            ));
        }
        let meta_path = dir.join("metadata");
        fs::write(&meta_path, metadata(catalog, origin_unix_ns))
            .map_err(|e| ExportError::io("write", &meta_path, e))?;
        Ok(CtfWriter {
            dir: dir.to_path_buf(),
            options,
            arg_counts: catalog
                .events()
                .iter()
                .map(|e| e.args.len() as u8)
                .collect(),
            unknown_id: catalog.event_count() as u16,
            streams: BTreeMap::new(),
            buffered: 0,
            max_time: max_timestamp(origin_unix_ns),
            stats: ConvertStats::default(),
            finished: false,
            runs: Assembler::new(),
            ready: Vec::new(),
        })
    }

    /// The directory being written.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn flush_stream(stream: &mut Stream, stats: &mut ConvertStats) -> Result<(), ExportError> {
        if stream.buf.is_empty() {
            return Ok(());
        }
        Self::write_packet(stream, stats)
    }

    /// Writes the packet in `stream.buf` (possibly empty) and starts the next.
    fn write_packet(stream: &mut Stream, stats: &mut ConvertStats) -> Result<(), ExportError> {
        let size = (PACKET_PREAMBLE + stream.buf.len()) as u64;
        let mut head = [0u8; PACKET_PREAMBLE];
        let mut w = &mut head[..];
        let fields: [&[u8]; 10] = [
            &MAGIC.to_be_bytes(),
            &0u32.to_be_bytes(),
            &(stream.source as u64).to_be_bytes(),
            &stream.begin.to_be_bytes(),
            &stream.last.to_be_bytes(),
            &(size * 8).to_be_bytes(),
            &(size * 8).to_be_bytes(),
            &stream.seq.to_be_bytes(),
            &stream.discarded.to_be_bytes(),
            &stream.source.to_be_bytes(),
        ];
        for f in fields {
            w.write_all(f)
                .expect("the preamble buffer has the exact size");
        }
        let mut file = if stream.created {
            OpenOptions::new().append(true).open(&stream.path)
        } else {
            File::create(&stream.path)
        }
        .map_err(|e| ExportError::io("open", &stream.path, e))?;
        stream.created = true;
        file.write_all(&head)
            .and_then(|()| file.write_all(&stream.buf))
            .map_err(|e| ExportError::io("write", &stream.path, e))?;
        stream.buf.clear();
        stream.seq += 1;
        stats.packets += 1;
        Ok(())
    }

    /// Flushes every stream and releases its buffer.
    /// Writes the reassembled runs waiting in `ready`: names as
    /// `qtrace:name` events, other payloads as `qtrace:payload` events, on
    /// their source's stream (records that are not runs never wait here).
    fn write_ready(&mut self) -> Result<(), ExportError> {
        let items = std::mem::take(&mut self.ready);
        for item in &items {
            if let Item::Payload(p) = item {
                self.write_payload(p)?;
            }
        }
        self.ready = items;
        self.ready.clear();
        Ok(())
    }

    fn write_payload(&mut self, p: &Payload) -> Result<(), ExportError> {
        let mut body = Vec::with_capacity(32 + p.bytes.len());
        let (encoding, text) = ctf_text(&p.bytes);
        let class_id = match p.name_of() {
            Some((kind, subject)) => {
                body.push(kind);
                body.extend_from_slice(&subject.to_be_bytes());
                name_class_id(self.unknown_id)
            }
            None => {
                let (state, received, expected) = match p.state {
                    PayloadState::Complete => (0u8, 0, 0),
                    PayloadState::Cut { received, expected } => {
                        (1, received, expected.unwrap_or(0))
                    }
                    PayloadState::Mismatch => (2, 0, 0),
                };
                body.extend_from_slice(&p.id.0.to_be_bytes());
                body.extend_from_slice(&p.arg.unwrap_or(0).to_be_bytes());
                body.push(state);
                body.extend_from_slice(&received.to_be_bytes());
                body.extend_from_slice(&expected.to_be_bytes());
                body.extend_from_slice(&p.logged_len.unwrap_or(0).to_be_bytes());
                payload_class_id(self.unknown_id)
            }
        };
        body.push(encoding);
        body.extend_from_slice(&text);
        body.push(0);
        self.append(p.source, p.time, class_id, &body)
    }

    /// Appends one event of class `class_id` with payload bytes `body` to
    /// `source`'s stream (the path of [`EventSink::push`] for an ordinary
    /// record, with any payload).
    fn append(
        &mut self,
        source: u32,
        time: u64,
        class_id: u16,
        body: &[u8],
    ) -> Result<(), ExportError> {
        let size = EVENT_HEADER + body.len();
        let dir = &self.dir;
        let stats = &mut self.stats;
        let stream = self
            .streams
            .entry(source)
            .or_insert_with(|| new_stream(dir, source, stats));
        let time = if time < stream.last {
            stats.clamped += 1;
            stream.last
        } else if time > self.max_time {
            stats.clamped += 1;
            self.max_time
        } else {
            time
        };
        if !stream.buf.is_empty()
            && PACKET_PREAMBLE + stream.buf.len() + size > self.options.packet_bytes
        {
            Self::flush_stream(stream, stats)?;
        }
        if stream.buf.is_empty() {
            stream.begin = time;
        }
        let capacity_before = stream.buf.capacity();
        stream.buf.reserve(size);
        stream.last = time;
        stream.buf.extend_from_slice(&class_id.to_be_bytes());
        stream.buf.extend_from_slice(&time.to_be_bytes());
        stream.buf.extend_from_slice(body);
        self.buffered += stream.buf.capacity() - capacity_before;
        if self.buffered > self.options.buffer_budget {
            self.flush_all()?;
        }
        Ok(())
    }

    fn flush_all(&mut self) -> Result<(), ExportError> {
        for stream in self.streams.values_mut() {
            Self::flush_stream(stream, &mut self.stats)?;
            stream.buf = Vec::new();
        }
        self.buffered = 0;
        Ok(())
    }
}

impl EventSink for CtfWriter {
    fn push(&mut self, e: &Event) -> Result<(), ExportError> {
        if self.finished {
            return Err(ExportError::ConverterFinished);
        }
        if combine::is_combine(e) {
            // Counted as records, like `qtrace stats`; written once whole.
            self.stats.events += 1;
            let ready = &mut self.ready;
            self.runs.push(*e, &mut |item| ready.push(item));
            return self.write_ready();
        }
        let known = (e.id.0 as usize) < self.arg_counts.len();
        // The argument slots written: the declared ones, plus an undeclared
        // slot that is non-zero (as `qtrace dump` shows it), through the
        // event's variant class (see `variant_id`).
        let (class_id, slots) = if known {
            let declared = self.arg_counts[e.id.0 as usize] as usize;
            let mask = undeclared_mask(declared, &e.args);
            let all = (1u8 << declared) - 1;
            if mask == 0 {
                (e.id.0, all)
            } else {
                (variant_id(self.unknown_id, e.id.0, mask), all | mask)
            }
        } else {
            self.stats.unknown += 1;
            (self.unknown_id, 0)
        };
        let size = EVENT_HEADER
            + if known {
                8 * slots.count_ones() as usize
            } else {
                2 + 16
            };

        let dir = &self.dir;
        let stats = &mut self.stats;
        let stream = self
            .streams
            .entry(e.source)
            .or_insert_with(|| new_stream(dir, e.source, stats));
        let time = if e.time < stream.last {
            stats.clamped += 1;
            stream.last
        } else if e.time > self.max_time {
            stats.clamped += 1;
            self.max_time
        } else {
            e.time
        };
        if e.id == tracer::HOOPS {
            // Close the packet being built, then write an empty packet whose
            // cumulative count includes this loss: babeltrace2 reports the
            // difference between consecutive packets.
            Self::flush_stream(stream, stats)?;
            stream.begin = time;
            stream.last = time;
            if stream.seq == 0 {
                // A stream whose first packet has a non-zero count makes
                // babeltrace2 say only that events *may* have been lost; a
                // first packet with a zero count makes the number exact.
                Self::write_packet(stream, stats)?;
            }
            stats.hoops += 1;
            stats.lost = stats.lost.saturating_add(e.args[0]);
            stream.discarded = stream.discarded.wrapping_add(e.args[0]);
            return Self::write_packet(stream, stats);
        }
        if !stream.buf.is_empty()
            && PACKET_PREAMBLE + stream.buf.len() + size > self.options.packet_bytes
        {
            Self::flush_stream(stream, stats)?;
        }
        if stream.buf.is_empty() {
            stream.begin = time;
        }
        // The buffer grows with its content (not reserved up to a whole
        // packet): with one event each from many sources, reserving
        // `packet_bytes` per stream made memory grow far past the budget.
        let capacity_before = stream.buf.capacity();
        stream.buf.reserve(size);
        stream.last = time;
        stream.buf.extend_from_slice(&class_id.to_be_bytes());
        stream.buf.extend_from_slice(&time.to_be_bytes());
        if known {
            for (i, a) in e.args.iter().enumerate() {
                if slots & (1 << i) != 0 {
                    stream.buf.extend_from_slice(&a.to_be_bytes());
                }
            }
        } else {
            stream.buf.extend_from_slice(&e.id.0.to_be_bytes());
            stream.buf.extend_from_slice(&e.args[0].to_be_bytes());
            stream.buf.extend_from_slice(&e.args[1].to_be_bytes());
        }
        stats.events += 1;
        self.buffered += stream.buf.capacity() - capacity_before;
        if self.buffered > self.options.buffer_budget {
            self.flush_all()?;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<ConvertStats, ExportError> {
        if !self.finished {
            let ready = &mut self.ready;
            self.runs.finish(&mut |item| ready.push(item));
            self.write_ready()?;
            self.flush_all()?;
            self.finished = true;
        }
        Ok(self.stats)
    }
}

/// TSDL keywords that cannot name a field.
const KEYWORDS: &[&str] = &[
    "align",
    "callsite",
    "char",
    "clock",
    "const",
    "double",
    "enum",
    "env",
    "event",
    "floating_point",
    "float",
    "integer",
    "int",
    "long",
    "short",
    "signed",
    "stream",
    "string",
    "struct",
    "trace",
    "typealias",
    "typedef",
    "unsigned",
    "variant",
    "void",
    "_Bool",
    "_Complex",
    "_Imaginary",
];

/// A TSDL identifier for a field name. Readers drop one leading underscore
/// (CTF 1.8, section 4.1.8), so a name that is a keyword, starts with a digit
/// or starts with `_` is prefixed with `_` and reads back unchanged.
pub fn field_identifier(name: &str) -> String {
    let id = identifier_chars(name);
    let needs_prefix = id.is_empty()
        || id.starts_with(|c: char| c.is_ascii_digit() || c == '_')
        || KEYWORDS.contains(&id.as_str());
    if needs_prefix {
        format!("_{id}")
    } else {
        id
    }
}

/// The slots (bit i = `args[i]`) past the `declared` ones that are non-zero.
fn undeclared_mask(declared: usize, args: &[u64; 2]) -> u8 {
    let mut mask = 0;
    for (i, a) in args.iter().enumerate().skip(declared) {
        if *a != 0 {
            mask |= 1 << i;
        }
    }
    mask
}

/// The id of the event class that carries event `id`'s declared arguments
/// plus the undeclared slots in `mask` (1 to 3): after the `unknown` class,
/// three per catalog event.
fn variant_id(unknown_id: u16, id: u16, mask: u8) -> u16 {
    unknown_id + 1 + id * 3 + u16::from(mask - 1)
}

/// Writes the `fields` struct of an event class: the declared arguments,
/// then the undeclared slots in `extra` named `arg0`/`arg1`.
fn fields(w: &mut String, declared: &[String], extra: u8) {
    let mut names: Vec<&str> = declared.iter().map(String::as_str).collect();
    for (i, n) in super::args::UNNAMED.iter().enumerate() {
        if extra & (1 << i) != 0 {
            names.push(n);
        }
    }
    if names.is_empty() {
        return;
    }
    let _ = writeln!(w, "\tfields := struct {{");
    let mut used: Vec<String> = Vec::new();
    for (i, a) in names.iter().enumerate() {
        let mut id = field_identifier(a);
        if used.contains(&id) {
            id = format!("{id}_{i}");
        }
        let _ = writeln!(w, "\t\tuint64_t {id};");
        used.push(id);
    }
    let _ = writeln!(w, "\t}};");
}

fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_ascii_graphic() || c == ' ' => out.push(c),
            _ => out.push('_'),
        }
    }
    out.push('"');
    out
}

/// The TSDL metadata of a trace with this catalog and clock origin (what
/// [`CtfWriter`] writes to `metadata`).
pub fn metadata(catalog: &Catalog, origin_unix_ns: u64) -> String {
    let mut m = String::new();
    let w = &mut m;
    // `write!` into a String cannot fail.
    let _ = write!(
        w,
        r#"/* CTF 1.8 */

typealias integer {{ size = 16; align = 8; signed = false; }} := uint16_t;
typealias integer {{ size = 32; align = 8; signed = false; }} := uint32_t;
typealias integer {{ size = 64; align = 8; signed = false; }} := uint64_t;

trace {{
	major = 1;
	minor = 8;
	byte_order = be;
	packet.header := struct {{
		uint32_t magic;
		uint32_t stream_id;
		uint64_t stream_instance_id;
	}};
}};

env {{
	domain = "qtrace";
	tracer_name = "qtrace";
	clock_origin_unix_ns = "{origin_unix_ns}";
}};

clock {{
	name = {CLOCK_NAME};
	description = "qtrace clock: nanoseconds since the trace's origin";
	freq = 1000000000;
	precision = 1;
	offset_s = {offset_s};
	offset = {offset};
}};

typealias integer {{ size = 64; align = 8; signed = false; map = clock.{CLOCK_NAME}.value; }} := uint64_clock_t;

stream {{
	id = 0;
	packet.context := struct {{
		uint64_clock_t timestamp_begin;
		uint64_clock_t timestamp_end;
		uint64_t content_size;
		uint64_t packet_size;
		uint64_t packet_seq_num;
		uint64_t events_discarded;
		uint32_t source;
	}};
	event.header := struct {{
		uint16_t id;
		uint64_clock_t timestamp;
	}};
}};
"#,
        offset_s = clock_origin(origin_unix_ns) / 1_000_000_000,
        offset = clock_origin(origin_unix_ns) % 1_000_000_000,
    );
    for e in catalog.events() {
        let class = catalog
            .class(e.class)
            .map(|c| c.name.as_str())
            .unwrap_or("unknown");
        let _ = write!(
            w,
            "\nevent {{\n\tname = {};\n\tid = {};\n\tstream_id = 0;\n",
            quoted(&format!("{class}:{}", e.name)),
            e.id.0
        );
        fields(w, &e.args, 0);
        let _ = writeln!(w, "}};");
        // Variants that also carry undeclared non-zero slots (`arg0`, `arg1`).
        let declared = e.args.len().min(2);
        for mask in 1u8..4 {
            if mask & ((1 << declared) - 1) != 0 {
                continue;
            }
            let _ = write!(
                w,
                "\nevent {{\n\tname = {};\n\tid = {};\n\tstream_id = 0;\n",
                quoted(&format!("{class}:{}", e.name)),
                variant_id(catalog.event_count() as u16, e.id.0, mask)
            );
            fields(w, &e.args, mask);
            let _ = writeln!(w, "}};");
        }
    }
    let _ = write!(
        w,
        "\nevent {{\n\tname = \"unknown\";\n\tid = {};\n\tstream_id = 0;\n\tfields := struct {{\n\t\tuint16_t raw_id;\n\t\tuint64_t arg0;\n\t\tuint64_t arg1;\n\t}};\n}};\n",
        catalog.event_count()
    );
    // Combine runs (`crate::combine`), reassembled: see `CtfWriter`.
    let _ = write!(
        w,
        "\nevent {{\n\tname = \"qtrace:payload\";\n\tid = {};\n\tstream_id = 0;\n\tfields := struct {{\n\t\tuint16_t event_id;\n\t\tuint64_t arg;\n\t\t{U8} state;\n\t\tuint32_t received;\n\t\tuint32_t expected;\n\t\tuint32_t logged_len;\n\t\t{U8} encoding;\n\t\tstring text;\n\t}};\n}};\n",
        payload_class_id(catalog.event_count() as u16)
    );
    let _ = write!(
        w,
        "\nevent {{\n\tname = \"qtrace:name\";\n\tid = {};\n\tstream_id = 0;\n\tfields := struct {{\n\t\t{U8} kind;\n\t\tuint64_t subject;\n\t\t{U8} encoding;\n\t\tstring name;\n\t}};\n}};\n",
        name_class_id(catalog.event_count() as u16)
    );
    m
}

/// A new stream for `source`, counted in `stats`.
fn new_stream(dir: &Path, source: u32, stats: &mut ConvertStats) -> Stream {
    stats.sources += 1;
    let name = if source == TRACER_SOURCE {
        "stream-tracer".to_string()
    } else {
        format!("stream-{source}")
    };
    Stream {
        path: dir.join(name),
        source,
        created: false,
        buf: Vec::new(),
        begin: 0,
        last: 0,
        seq: 0,
        discarded: 0,
    }
}

/// The `qtrace:payload` class: after `unknown` and the three variants of
/// every catalog event ([`variant_id`]).
fn payload_class_id(unknown_id: u16) -> u16 {
    unknown_id + 1 + unknown_id * 3
}

/// The `qtrace:name` class, after `qtrace:payload`.
fn name_class_id(unknown_id: u16) -> u16 {
    payload_class_id(unknown_id) + 1
}

/// An unsigned byte in TSDL.
const U8: &str = "integer { size = 8; align = 8; signed = false; }";

/// A payload as a CTF string: `(encoding, text)` with encoding 0 = the
/// UTF-8 bytes (no NUL inside), 1 = lowercase hexadecimal of the bytes.
fn ctf_text(bytes: &[u8]) -> (u8, Vec<u8>) {
    match std::str::from_utf8(bytes) {
        Ok(s) if !s.contains('\0') => (0, bytes.to_vec()),
        _ => (
            1,
            bytes
                .iter()
                .flat_map(|b| format!("{b:02x}").into_bytes())
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classes::{system, ClassSpec};
    use crate::EventId;

    /// Parses a stream file back: (seq, discarded, begin, end, source, events
    /// as (class id, time, payload bytes)).
    type Packet = (u64, u64, u64, u64, u32, Vec<(u16, u64, Vec<u8>)>);

    fn be64(b: &[u8]) -> u64 {
        u64::from_be_bytes(b[..8].try_into().unwrap())
    }

    fn parse(bytes: &[u8], arg_counts: &dyn Fn(u16) -> usize) -> Vec<Packet> {
        let mut out = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            let p = &bytes[at..];
            assert_eq!(u32::from_be_bytes(p[..4].try_into().unwrap()), MAGIC);
            let size = (be64(&p[32..]) / 8) as usize;
            assert_eq!(
                be64(&p[40..]) / 8,
                size as u64,
                "packet_size = content_size"
            );
            let mut events = Vec::new();
            let mut e = PACKET_PREAMBLE;
            while e < size {
                let id = u16::from_be_bytes(p[e..e + 2].try_into().unwrap());
                let t = be64(&p[e + 2..]);
                let n = arg_counts(id);
                events.push((id, t, p[e + 10..e + 10 + n].to_vec()));
                e += 10 + n;
            }
            assert_eq!(e, size);
            out.push((
                be64(&p[48..]),
                be64(&p[56..]),
                be64(&p[16..]),
                be64(&p[24..]),
                u32::from_be_bytes(p[64..68].try_into().unwrap()),
                events,
            ));
            at += size;
        }
        out
    }

    #[test]
    fn hoops_become_empty_packets_that_count_cumulatively() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::builtin();
        let events = [
            Event::new(10, system::SCHEDULE, 0, [1, 0]),
            Event::new(20, tracer::HOOPS, TRACER_SOURCE, [5, 0]),
            Event::new(30, system::SCHEDULE, 0, [2, 0]),
            Event::new(40, tracer::HOOPS, TRACER_SOURCE, [3, 1]),
            Event::new(50, tracer::HOOPS, TRACER_SOURCE, [2, 0]),
        ];
        let stats =
            super::super::convert(CtfWriter::create(dir.path(), &catalog, 0).unwrap(), events)
                .unwrap();
        assert_eq!(stats.events, 2);
        assert_eq!(stats.hoops, 3);
        assert_eq!(stats.lost, 10);
        assert_eq!(stats.sources, 2);
        assert_eq!(stats.packets, 5);
        let counts = |id: u16| if id == 1 || id == 4 { 16 } else { 0 };
        let tracer = parse(
            &fs::read(dir.path().join("stream-tracer")).unwrap(),
            &counts,
        );
        let disc: Vec<(u64, u64, u64, u64)> = tracer.iter().map(|p| (p.0, p.1, p.2, p.3)).collect();
        assert_eq!(
            disc,
            [
                (0, 0, 20, 20),
                (1, 5, 20, 20),
                (2, 8, 40, 40),
                (3, 10, 50, 50)
            ]
        );
        let sizes: Vec<usize> = tracer.iter().map(|p| p.5.len()).collect();
        assert_eq!(sizes, [0, 0, 0, 0], "hoops records are empty packets");
        assert!(tracer.iter().all(|p| p.4 == TRACER_SOURCE));
        let s0 = parse(&fs::read(dir.path().join("stream-0")).unwrap(), &|_| 8);
        assert_eq!(s0.len(), 1);
        assert_eq!(
            s0[0].5,
            [
                (4, 10, 1u64.to_be_bytes().to_vec()),
                (4, 30, 2u64.to_be_bytes().to_vec())
            ]
        );
        assert_eq!((s0[0].0, s0[0].1, s0[0].2, s0[0].3), (0, 0, 10, 30));
    }

    #[test]
    fn packets_are_bounded_and_sequence_numbered() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::builtin();
        // One packet holds (128 - 68) / 18 = 3 schedule events.
        let options = CtfOptions {
            packet_bytes: 128,
            buffer_budget: 1 << 20,
        };
        let mut w = CtfWriter::with_options(dir.path(), &catalog, 0, options).unwrap();
        for i in 0..10u64 {
            w.push(&Event::new(i, system::SCHEDULE, 7, [i, 0])).unwrap();
        }
        let stats = w.finish().unwrap();
        assert_eq!(stats.packets, 4);
        let packets = parse(&fs::read(dir.path().join("stream-7")).unwrap(), &|_| 8);
        let shape: Vec<(u64, usize, u64, u64)> =
            packets.iter().map(|p| (p.0, p.5.len(), p.2, p.3)).collect();
        assert_eq!(
            shape,
            [(0, 3, 0, 2), (1, 3, 3, 5), (2, 3, 6, 8), (3, 1, 9, 9)]
        );
        assert!(w
            .push(&Event::new(11, system::SCHEDULE, 7, [0, 0]))
            .is_err());
    }

    #[test]
    fn budget_flushes_every_stream_and_time_never_goes_back() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::builtin();
        let options = CtfOptions {
            packet_bytes: 4096,
            buffer_budget: 40, // two 18-byte events fit, the third flushes all
        };
        let mut w = CtfWriter::with_options(dir.path(), &catalog, 0, options).unwrap();
        w.push(&Event::new(5, system::SCHEDULE, 0, [0, 0])).unwrap();
        w.push(&Event::new(6, system::SCHEDULE, 1, [0, 0])).unwrap();
        w.push(&Event::new(4, system::SCHEDULE, 0, [0, 0])).unwrap(); // earlier: clamped to 5
        let stats = w.finish().unwrap();
        assert_eq!(stats.clamped, 1);
        assert_eq!(stats.packets, 2);
        let s0 = parse(&fs::read(dir.path().join("stream-0")).unwrap(), &|_| 8);
        let times: Vec<u64> = s0[0].5.iter().map(|e| e.1).collect();
        assert_eq!(times, [5, 5]);
    }

    #[test]
    fn buffers_stay_within_the_budget_with_many_sources() {
        // One event from each of many sources: every stream's buffer once
        // reserved a whole packet (64 KiB), so 1000 sources held ~64 MB
        // while the budget said 8 KiB.
        let dir = tempfile::tempdir().unwrap();
        let options = CtfOptions {
            packet_bytes: 64 * 1024,
            buffer_budget: 8 * 1024,
        };
        let mut w = CtfWriter::with_options(dir.path(), &Catalog::builtin(), 0, options).unwrap();
        for src in 0..1000u32 {
            w.push(&Event::new(src as u64, system::SCHEDULE, src, [1, 0]))
                .unwrap();
            let allocated: usize = w.streams.values().map(|s| s.buf.capacity()).sum();
            assert_eq!(allocated, w.buffered, "after source {src}");
            assert!(allocated <= options.buffer_budget, "after source {src}");
        }
        let stats = w.finish().unwrap();
        assert_eq!((stats.events, stats.sources), (1000, 1000));
        let s999 = parse(&fs::read(dir.path().join("stream-999")).unwrap(), &|_| 8);
        assert_eq!(s999[0].5, [(4, 999, 1u64.to_be_bytes().to_vec())]);
    }

    #[test]
    fn unknown_events_keep_their_number() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::builtin();
        let mut w = CtfWriter::create(dir.path(), &catalog, 0).unwrap();
        w.push(&Event::new(1, EventId(0x0999), 2, [7, 8])).unwrap();
        assert_eq!(w.finish().unwrap().unknown, 1);
        let p = parse(&fs::read(dir.path().join("stream-2")).unwrap(), &|_| 18);
        let mut payload = 0x0999u16.to_be_bytes().to_vec();
        payload.extend(7u64.to_be_bytes());
        payload.extend(8u64.to_be_bytes());
        assert_eq!(p[0].5, [(catalog.event_count() as u16, 1, payload)]);
    }

    #[test]
    fn a_packet_too_small_for_one_event_is_an_option_error() {
        let dir = tempfile::tempdir().unwrap();
        let options = CtfOptions {
            packet_bytes: 80,
            ..CtfOptions::default()
        };
        let err = CtfWriter::with_options(dir.path(), &Catalog::builtin(), 0, options).unwrap_err();
        assert!(
            matches!(
                err,
                ExportError::InvalidExportOption {
                    option: "CtfOptions::packet_bytes",
                    ..
                }
            ),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "invalid converter option CtfOptions::packet_bytes: packet_bytes is 80; use at least 94 so a packet holds one event"
        );
    }

    #[test]
    fn refuses_a_non_empty_directory() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("old"), b"x").unwrap();
        let err = CtfWriter::create(dir.path(), &Catalog::builtin(), 0).unwrap_err();
        assert!(err.to_string().contains("not empty"), "{err}");
    }

    #[test]
    fn field_names_become_identifiers() {
        assert_eq!(field_identifier("task"), "task");
        assert_eq!(field_identifier("a-b.c"), "a_b_c");
        assert_eq!(field_identifier("struct"), "_struct");
        assert_eq!(field_identifier("9lives"), "_9lives");
        assert_eq!(field_identifier("_x"), "__x");
    }

    #[test]
    fn metadata_names_user_events_and_offsets_the_clock() {
        let mut catalog = Catalog::builtin();
        catalog
            .define(ClassSpec::new("net", "network").event("rx", "got one", &["len", "len-"]))
            .unwrap();
        let m = metadata(&catalog, 1_700_000_000_123_456_789);
        assert!(m.contains("offset_s = 1700000000;\n\toffset = 123456789;"));
        assert!(m.contains(
            "name = \"net:rx\";\n\tid = 23;\n\tstream_id = 0;\n\tfields := struct {\n\t\tuint64_t len;\n\t\tuint64_t len_;\n"
        ));
        assert!(m.contains("name = \"tracer:hoops\";\n\tid = 1;"));
        assert!(m.contains("name = \"unknown\";\n\tid = 24;"));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// Whatever the events and the packet size, each stream file decodes
        /// to exactly the events of its source, in order, in packets numbered
        /// 0, 1, 2, … that do not go back in time, and the tracer stream's
        /// discarded counts are the running sums of the hoops records.
        #[test]
        fn streams_decode_to_their_sources_events(
            raw in proptest::collection::vec(
                (0u64..5, 0u16..0x1a, 0u32..4, proptest::prelude::any::<u64>(), 0u64..1000),
                0..150,
            ),
            packet_bytes in 94usize..400,
        ) {
            let catalog = Catalog::builtin();
            let unknown = catalog.event_count() as u16;
            let mut t = 0;
            let events: Vec<Event> = raw
                .iter()
                .map(|&(dt, id, src, a, b)| {
                    t += dt;
                    let src = if EventId(id) == tracer::HOOPS { TRACER_SOURCE } else { src };
                    Event::new(t, EventId(id), src, [a, b])
                })
                .collect();
            let dir = tempfile::tempdir().unwrap();
            let options = CtfOptions { packet_bytes, buffer_budget: packet_bytes * 2 };
            let mut w = CtfWriter::with_options(dir.path(), &catalog, 0, options).unwrap();
            for e in &events {
                w.push(e).unwrap();
            }
            let stats = w.finish().unwrap();
            let declared = |id: u16| catalog.event(EventId(id)).unwrap().args.len();
            let payload_len = |id: u16| {
                if id == unknown {
                    18
                } else if id > unknown {
                    // A variant class: declared arguments plus the slots in its mask.
                    let (event, mask) = ((id - unknown - 1) / 3, (id - unknown - 1) % 3 + 1);
                    8 * (declared(event) + mask.count_ones() as usize)
                } else {
                    8 * declared(id)
                }
            };
            let mut sources: Vec<u32> = events.iter().map(|e| e.source).collect();
            sources.sort();
            sources.dedup();
            proptest::prop_assert_eq!(stats.sources, sources.len() as u64);
            let mut packets = 0;
            for src in sources {
                let name = if src == TRACER_SOURCE { "stream-tracer".to_string() } else { format!("stream-{src}") };
                let decoded = parse(&fs::read(dir.path().join(name)).unwrap(), &payload_len);
                packets += decoded.len() as u64;
                let mut prev_end = 0;
                for (i, p) in decoded.iter().enumerate() {
                    proptest::prop_assert_eq!(p.0, i as u64);
                    proptest::prop_assert_eq!(p.4, src);
                    proptest::prop_assert!(p.2 >= prev_end && p.3 >= p.2);
                    if let (Some(first), Some(last)) = (p.5.first(), p.5.last()) {
                        proptest::prop_assert_eq!((first.1, last.1), (p.2, p.3));
                    }
                    prev_end = p.3;
                }
                let got: Vec<(u16, u64, Vec<u8>)> =
                    decoded.iter().flat_map(|p| p.5.iter().cloned()).collect();
                let want: Vec<(u16, u64, Vec<u8>)> = events
                    .iter()
                    .filter(|e| e.source == src && e.id != tracer::HOOPS)
                    .map(|e| {
                        if e.id.0 < unknown {
                            // Written: the declared slots, and the others when non-zero
                            // (through a variant class).
                            let n = declared(e.id.0);
                            let mask = (n..2).filter(|&i| e.args[i] != 0).fold(0u16, |m, i| m | 1 << i);
                            let id = if mask == 0 { e.id.0 } else { unknown + 1 + e.id.0 * 3 + mask - 1 };
                            let bytes = (0..2)
                                .filter(|&i| i < n || e.args[i] != 0)
                                .flat_map(|i| e.args[i].to_be_bytes())
                                .collect();
                            (id, e.time, bytes)
                        } else {
                            let mut p = e.id.0.to_be_bytes().to_vec();
                            p.extend(e.args[0].to_be_bytes());
                            p.extend(e.args[1].to_be_bytes());
                            (unknown, e.time, p)
                        }
                    })
                    .collect();
                proptest::prop_assert_eq!(got, want);
                if src == TRACER_SOURCE {
                    let mut sums = vec![0u64];
                    for e in events.iter().filter(|e| e.id == tracer::HOOPS) {
                        sums.push(sums.last().unwrap().wrapping_add(e.args[0]));
                    }
                    let discarded: Vec<u64> = decoded.iter().map(|p| p.1).collect();
                    proptest::prop_assert_eq!(discarded, sums);
                }
            }
            proptest::prop_assert_eq!(stats.packets, packets);
        }
    }
}
