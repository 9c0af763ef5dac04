//! The stream files: one per source, a sequence of packets (header,
//! context, events) buffered one packet at a time within a memory budget;
//! losses as `events_discarded`.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::metadata::{
    clock_origin, metadata, name_class_id, payload_class_id, undeclared_mask, variant_id,
};
use crate::classes::{tracer, Catalog};
use crate::export::ExportError;
use crate::export::{ConvertStats, EventSink};
use crate::model::combine::{self, Assembler, Item, Payload, PayloadState};
use crate::model::event::TRACER_SOURCE;
use crate::Event;

/// The CTF packet magic number.
pub const MAGIC: u32 = 0xC1FC_1FC1;
/// Bytes of packet header plus packet context before the first event.
pub const PACKET_PREAMBLE: usize = 4 + 4 + 8 + 8 * 6 + 4;
/// Bytes of an event header (`id: u16`, `timestamp: u64`).
pub const EVENT_HEADER: usize = 2 + 8;

/// Tuning of [`CtfWriter`].
///
/// ```
/// use qtrace::classes::Catalog;
/// use qtrace::export::ctf::{CtfOptions, CtfWriter};
/// use qtrace::export::ExportError;
///
/// let dir = std::env::temp_dir().join(format!("qtrace-ctf-options-doc-{}", std::process::id()));
/// let tiny = CtfOptions { packet_bytes: 16, ..CtfOptions::default() };
/// let err = CtfWriter::with_options(&dir, &Catalog::builtin(), 0, tiny).unwrap_err();
/// assert!(matches!(err, ExportError::InvalidExportOption { .. }));
/// let small = CtfOptions { packet_bytes: 4096, ..CtfOptions::default() };
/// CtfWriter::with_options(&dir, &Catalog::builtin(), 0, small)?;
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), qtrace::Error>(())
/// ```
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
pub(super) struct Stream {
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
/// documentation](super)).
///
/// ```
/// use qtrace::classes::{system, Catalog};
/// use qtrace::export::ctf::CtfWriter;
/// use qtrace::export::EventSink;
/// use qtrace::Event;
///
/// let dir = std::env::temp_dir().join(format!("qtrace-ctf-type-doc-{}", std::process::id()));
/// let mut w = CtfWriter::create(&dir, &Catalog::builtin(), 0)?;
/// w.push(&Event::new(1_000, system::SCHEDULE, 0, [3, 0]))?;
/// let stats = w.finish()?;
/// assert_eq!((stats.events, stats.packets), (1, 1));
/// assert_eq!(w.dir(), dir.as_path());
/// assert!(dir.join("metadata").exists());
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), qtrace::Error>(())
/// ```
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

impl CtfWriter {
    /// Creates `dir` (which must be new or empty) and writes its `metadata`,
    /// with default options; `origin_unix_ns` is the Unix time of the
    /// trace's time zero.
    ///
    /// ```
    /// use qtrace::classes::{system, Catalog};
    /// use qtrace::export::{self, ctf::CtfWriter};
    /// use qtrace::Event;
    ///
    /// let dir = std::env::temp_dir().join(format!("qtrace-ctf-create-doc-{}", std::process::id()));
    /// let events = [Event::new(1_000, system::SCHEDULE, 0, [3, 0])];
    /// let stats = export::convert(CtfWriter::create(&dir, &Catalog::builtin(), 0)?, events)?;
    /// assert_eq!(stats.events, 1);
    /// assert!(dir.join("metadata").exists());
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), qtrace::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ExportError::Io`] (naming the path) if `dir` cannot be created or
    /// written, or [`ExportError::InvalidExportOption`] if it is not empty.
    pub fn create(dir: &Path, catalog: &Catalog, origin_unix_ns: u64) -> Result<Self, ExportError> {
        Self::with_options(dir, catalog, origin_unix_ns, CtfOptions::default())
    }

    /// As [`CtfWriter::create`], with explicit options.
    ///
    /// # Errors
    ///
    /// As [`CtfWriter::create`], and [`ExportError::InvalidExportOption`]
    /// if an option is out of range (a packet must hold one event).
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

/// A new stream for `source`, counted in `stats`.
pub(super) fn new_stream(dir: &Path, source: u32, stats: &mut ConvertStats) -> Stream {
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

/// A payload as a CTF string: `(encoding, text)` with encoding 0 = the
/// UTF-8 bytes (no NUL inside), 1 = lowercase hexadecimal of the bytes.
pub(super) fn ctf_text(bytes: &[u8]) -> (u8, Vec<u8>) {
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

// The writer's tests (they look at its buffers), in a file of their own.
#[cfg(test)]
#[path = "tests.rs"]
mod tests;
