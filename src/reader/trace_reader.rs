//! [`TraceReader`]: one trace file's header, then its events, read in
//! blocks and checked as untrusted input.

use super::error::read_full;
use super::*;
use crate::classes::tracer::HOOPS;
use crate::model::combine::{is_combine, Assembler, Item, Names, NAME_EVENT};
use crate::wire::close::CLOSE_ID;
use qtrace_core::compact::{self, Chunk, ChunkHeader, DecodeError};

/// A trace file being read: its header, then its events as an iterator.
///
/// The close run that ends a complete file is not yielded; after the last
/// event, [`TraceReader::completeness`] says whether the file was complete.
/// A record with id 0 and flag bit 15 that is not part of a well-formed
/// final close run is yielded as it is (a stray control record).
///
/// # Items
///
/// `TraceReader` is an [`Iterator`] of **`Result<Event, ReadError>`**, one
/// item per record in file order (hoops records, which say how many events
/// were lost at that point, included: id [`tracer::HOOPS`](crate::classes::tracer::HOOPS)). After the last
/// record it yields `None`. A damaged or cut-short file yields every event
/// before the damage, then one `Err` naming the byte offset, then `None`
/// (the iterator is fused). So `for e in reader { let e = e?; … }` reads a
/// whole file, and `reader.collect::<Result<Vec<Event>, _>>()` gets every
/// event or the first error.
///
/// ```
/// use qtrace::classes::{system, Catalog};
/// use qtrace::clock::{Clock, ManualClock};
/// use qtrace::reader::{ReadError, TraceReader};
/// use qtrace::wire::{create_trace_file, TraceHeader};
/// use qtrace::Event;
///
/// let path = std::env::temp_dir().join(format!("qtrace-items-doc-{}.qtr", std::process::id()));
/// let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)));
/// let mut w = create_trace_file(&path, &header)?;
/// w.write_event(&Event::new(5, system::SCHEDULE, 0, [3, 0]))?;
/// w.finish()?;
///
/// let reader = TraceReader::open(&path)?;
/// let events: Vec<Event> = reader.collect::<Result<_, ReadError>>()?;
/// assert_eq!(events, [Event::new(5, system::SCHEDULE, 0, [3, 0])]);
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct TraceReader<R = BufReader<File>> {
    source: R,
    header: TraceHeader,
    header_len: u64,
    offset: u64,
    done: bool,
    path: Option<PathBuf>,
    /// Close-run candidates read but not yet yielded.
    held: Vec<Event>,
    /// Records to yield before reading on (stray candidates), then an error.
    release: VecDeque<Event>,
    error: Option<ReadError>,
    records: u64,
    lost: u64,
    completeness: Option<Completeness>,
    /// Bytes read ahead of `offset`: `block[pos..end]` are the next records
    /// (many are decoded from one large read, none with a read of its own).
    block: Box<[u8]>,
    pos: usize,
    end: usize,
    /// An I/O error met while reading ahead, reported once the bytes read
    /// before it are used up (so every whole record before it is yielded).
    read_error: Option<ReadError>,
    /// The source said end of file.
    eof: bool,
    /// Run-time names learned from the name records yielded so far, and
    /// the name runs being reassembled (only name records go through it).
    names: Names,
    name_runs: Assembler,
    /// A compact file (version 2, FORMAT.md 1.11): its chunks are decoded
    /// into `decoded`, one chunk at a time (`block` is not used).
    compact: Option<Box<CompactBody>>,
    /// A compact file's records decoded from its current chunk:
    /// `decoded[dpos..dend]` are the next ones (the slots past `dend` are
    /// kept from larger chunks, so a chunk is decoded with no fill first).
    decoded: Vec<Event>,
    dpos: usize,
    dend: usize,
    /// `decoded[dpos..plain_end]` need no care of their own (no close-run,
    /// hoops or name record, nothing held back): [`TraceReader::next_buffered`]
    /// yields them with one comparison. Found by one scan a stretch (or
    /// none, `chunk_plain`), so every record is looked at once at most;
    /// `plain_end <= dpos` otherwise.
    plain_end: usize,
    /// The current chunk has no record that needs care (its decoder says
    /// so, `Records::may_hold`): its stretch of plain records is all of
    /// it, found with no scan.
    chunk_plain: bool,
    /// A compact file (`compact` is set): `offset` names the chunk the
    /// records come from and does not move by record.
    compact_file: bool,
}

/// The reading state of a compact file's chunks.
#[derive(Debug)]
struct CompactBody {
    /// The byte offset of the next chunk.
    next_at: u64,
    /// The sequence and first record the next chunk must carry.
    expect: ChunkHeader,
    /// The chunk's bytes as read.
    raw: Vec<u8>,
}

/// Bytes a [`TraceReader`] reads ahead in one call: 2048 records. Larger than
/// the [`BufReader`] of [`TraceReader::open`] (which only serves the header),
/// so such reads bypass its buffer: a reader holds about 72 KiB, as the
/// 64 KiB `BufReader` alone did before.
const BLOCK_LEN: usize = 64 * 1024;

/// The [`BufReader`] of [`TraceReader::open`]: reads of [`BLOCK_LEN`] bypass it.
const OPEN_BUFFER_LEN: usize = 8 * 1024;

impl TraceReader<BufReader<File>> {
    /// Opens the trace file at `path` and checks its header.
    ///
    /// ```
    /// use qtrace::classes::{system, Catalog};
    /// use qtrace::clock::{Clock, ManualClock};
    /// use qtrace::reader::TraceReader;
    /// use qtrace::wire::{create_trace_file, TraceHeader};
    /// use qtrace::Event;
    ///
    /// let path = std::env::temp_dir().join(format!("qtrace-open-doc-{}.qtr", std::process::id()));
    /// let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)));
    /// let mut w = create_trace_file(&path, &header)?;
    /// w.write_event(&Event::new(7, system::SCHEDULE, 0, [3, 0]))?;
    /// w.finish()?;
    ///
    /// let mut reader = TraceReader::open(&path)?;
    /// assert_eq!(reader.path(), Some(path.as_path()));
    /// assert_eq!(reader.next().unwrap()?.time, 7);
    /// assert!(reader.next().is_none());
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ReadError::Open`] when the file cannot be opened;
    /// [`ReadError::Format`] (naming the file and the byte offset) when its
    /// header is not a valid qtrace header; [`ReadError::Io`] when reading
    /// the header fails.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, ReadError> {
        let path = path.as_ref();
        let p = Some(path.to_path_buf());
        let file = File::open(path).map_err(|source| ReadError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        let mut reader = TraceReader::new(BufReader::with_capacity(OPEN_BUFFER_LEN, file))
            .map_err(|e| e.with_path(&p))?;
        reader.path = p;
        Ok(reader)
    }
}

impl<R: Read> TraceReader<R> {
    /// Reads and checks the header from `source` (a file, a slice, a socket).
    ///
    /// ```
    /// use qtrace::classes::{system, Catalog};
    /// use qtrace::clock::{Clock, ManualClock};
    /// use qtrace::reader::TraceReader;
    /// use qtrace::wire::{TraceHeader, TraceWriter};
    /// use qtrace::Event;
    ///
    /// let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)));
    /// let mut w = TraceWriter::new(Vec::new(), &header)?;
    /// w.write_event(&Event::new(7, system::SCHEDULE, 0, [3, 0]))?;
    /// let bytes = w.finish()?;
    ///
    /// let reader = TraceReader::new(&bytes[..])?;
    /// assert_eq!(reader.header().clock_kind(), "manual");
    /// assert_eq!(reader.event_name(system::SCHEDULE), Some("schedule"));
    /// let times: Vec<u64> = reader.map(|e| e.map(|e| e.time)).collect::<Result<_, _>>()?;
    /// assert_eq!(times, [7]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ReadError::Format`] (with the byte offset) when the header is not a
    /// valid qtrace header or is cut short; [`ReadError::Io`] when reading
    /// from `source` fails.
    pub fn new(mut source: R) -> Result<Self, ReadError> {
        let mut fixed = [0u8; FIXED_LEN];
        let n = read_full(&mut source, &mut fixed, 0)?;
        let header_len = header::check_fixed(&fixed[..n])?;
        // Grow only as bytes arrive: a short file claiming a large header
        // costs what it holds, and the claim itself is capped.
        let mut bytes = Vec::with_capacity(header_len.min(64 * 1024));
        bytes.extend_from_slice(&fixed);
        let want = (header_len - FIXED_LEN) as u64;
        (&mut source)
            .take(want)
            .read_to_end(&mut bytes)
            .map_err(|source| ReadError::Io {
                path: None,
                offset: FIXED_LEN as u64,
                source,
            })?;
        let (header, len) = TraceHeader::decode(&bytes)?;
        Ok(TraceReader {
            source,
            header_len: len as u64,
            offset: len as u64,
            done: false,
            path: None,
            held: Vec::with_capacity(CLOSE_RUN_LEN),
            release: VecDeque::new(),
            error: None,
            records: 0,
            lost: 0,
            completeness: None,
            block: vec![0u8; BLOCK_LEN].into_boxed_slice(),
            pos: 0,
            end: 0,
            read_error: None,
            eof: false,
            names: Names::new(),
            name_runs: Assembler::new(),
            decoded: Vec::new(),
            dpos: 0,
            dend: 0,
            plain_end: 0,
            chunk_plain: false,
            compact: header.is_compact().then(|| {
                Box::new(CompactBody {
                    next_at: len as u64,
                    expect: ChunkHeader::default(),
                    raw: Vec::new(),
                })
            }),
            compact_file: header.is_compact(),
            header,
        })
    }

    /// Whether the file is complete: `None` until the iterator has ended
    /// (all records read, or an error), then what the end of the file says.
    /// A file that ends inside a record, or cannot be read on, is
    /// [`Completeness::Cut`] when its writer closes its files.
    pub fn completeness(&self) -> Option<Completeness> {
        self.completeness
    }

    /// Records yielded so far (events, hoops records, stray control records;
    /// not the final close run).
    pub fn records_read(&self) -> u64 {
        self.records
    }

    /// Lost events stated by the hoops records yielded so far (saturating).
    pub fn lost_read(&self) -> u64 {
        self.lost
    }

    /// The file's header.
    pub fn header(&self) -> &TraceHeader {
        &self.header
    }

    /// The file's class and event table.
    pub fn catalog(&self) -> &Catalog {
        self.header.catalog()
    }

    /// The class of any event id in the file's table (built-in or
    /// user-defined), as S.Ha.R.K.'s `event_class`.
    pub fn event_class(&self, id: EventId) -> Option<&ClassInfo> {
        let catalog = self.catalog();
        catalog.class_of(id).and_then(|c| catalog.class(c))
    }

    /// The name of any event id, as S.Ha.R.K.'s `event_name`: its run-time
    /// name when a name record read so far gave one
    /// ([`Tracer::name_event`](crate::Tracer::name_event), the `tracing`
    /// bridge's callsite names), else its name in the file's table. A saved
    /// file carries every name at its start (FORMAT.md 1.8, "Names
    /// prologue"); a file written as the program ran has a name from its
    /// name record on.
    pub fn event_name(&self, id: EventId) -> Option<&str> {
        self.names
            .event(id)
            .or_else(|| self.catalog().event_name(id))
    }

    /// Where the records start.
    pub fn header_len(&self) -> u64 {
        self.header_len
    }

    /// The byte offset of the next record; in a compact file (FORMAT.md
    /// 1.11), of the chunk it is in (or of the next chunk to read).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The file's path, when opened from one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Reads ahead until a whole record is buffered, the source ends, or it
    /// fails; one `read` call usually brings thousands of records. Like
    /// `read_full` it waits for no more than one record, so a socket's
    /// events are yielded as they arrive.
    fn refill(&mut self) {
        self.block.copy_within(self.pos..self.end, 0);
        self.end -= self.pos;
        self.pos = 0;
        while self.end < RECORD_LEN && !self.eof && self.read_error.is_none() {
            match self.source.read(&mut self.block[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(k) => self.end += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => {
                    self.read_error = Some(ReadError::Io {
                        path: None,
                        offset: self.offset + self.end as u64,
                        source,
                    });
                }
            }
        }
    }

    /// Reads and decodes the next chunk of a compact file into `decoded`
    /// (skipping chunks of no record), or notes the end of the file or the
    /// error that stops it; the records decoded before an error are yielded
    /// first.
    fn refill_compact(&mut self) {
        let Some(mut c) = self.compact.take() else {
            return;
        };
        self.dend = 0;
        self.dpos = 0;
        self.plain_end = 0;
        self.chunk_plain = false;
        while self.dend == 0 && !self.eof && self.read_error.is_none() {
            self.offset = c.next_at;
            if let Err(e) = self.read_chunk(&mut c) {
                self.read_error = Some(e);
            }
        }
        self.compact = Some(c);
    }

    /// One chunk of a compact file: read, checked (FORMAT.md 8.5, then its
    /// place in the file: 1.11), decoded into `decoded` in one batch.
    fn read_chunk(&mut self, c: &mut CompactBody) -> Result<(), ReadError> {
        let at = c.next_at;
        let mut head = [0u8; compact::HEADER_LEN];
        let n = read_full(&mut self.source, &mut head, at)?;
        if n == 0 {
            self.eof = true;
            return Ok(());
        }
        let chunk_error = |e: DecodeError| -> ReadError {
            match e {
                DecodeError::Truncated { needed, available } => WireError::Truncated {
                    offset: at,
                    needed: needed as u64,
                    available: available as u64,
                    what: "compact chunk",
                },
                DecodeError::UnsupportedVersion { version } => WireError::UnsupportedVersion {
                    offset: at + compact::field::VERSION as u64,
                    version,
                    supported: &compact::SUPPORTED_VERSIONS,
                },
                DecodeError::BadMagic => WireError::Invalid {
                    offset: at,
                    what: "compact chunk",
                    reason: "its magic is not QTRZ".into(),
                },
                DecodeError::Corrupt { offset, what } => WireError::Invalid {
                    offset: at + offset as u64,
                    what: "compact chunk",
                    reason: what.into(),
                },
                _ => WireError::Invalid {
                    offset: at,
                    what: "compact chunk",
                    reason: "does not decode".into(),
                },
            }
            .into()
        };
        // The header alone: a bad magic, version or length is reported as
        // such before the body is read (or found missing).
        let length = match Chunk::new_checked(&head[..n]) {
            Ok(_) => 0,
            Err(DecodeError::Truncated { needed, .. }) if n == compact::HEADER_LEN => {
                (needed - compact::HEADER_LEN) as u64
            }
            Err(e) => return Err(chunk_error(e)),
        };
        c.raw.clear();
        c.raw.extend_from_slice(&head);
        let body_at = at + compact::HEADER_LEN as u64;
        (&mut self.source)
            .take(length)
            .read_to_end(&mut c.raw)
            .map_err(|source| ReadError::Io {
                path: None,
                offset: body_at,
                source,
            })?;
        let chunk = Chunk::new_checked(&c.raw).map_err(chunk_error)?;
        let h = chunk.header();
        if (h.sequence, h.first_event) != (c.expect.sequence, c.expect.first_event) {
            return Err(WireError::Invalid {
                offset: at + compact::field::SEQUENCE as u64,
                what: "compact chunk",
                reason: format!(
                    "sequence {} and first record {}, where the chunk after the previous one \
                     has sequence {} and first record {} (a chunk is missing or out of place)",
                    h.sequence, h.first_event, c.expect.sequence, c.expect.first_event
                ),
            }
            .into());
        }
        c.next_at = at + c.raw.len() as u64;
        c.expect = h.following(chunk.count(), 0);
        let count = chunk.count() as usize;
        if self.decoded.len() < count {
            self.decoded.resize(count, Event::default());
        }
        let mut records = chunk.records();
        self.dend = records.fill(&mut self.decoded[..count]);
        self.chunk_plain = CARE_IDS.iter().all(|&id| !records.may_hold(id));
        // `fill` stopped short of its room only at the chunk's end or an
        // impossible record; `next` says which.
        match records.next() {
            Some(Err(e)) => Err(chunk_error(e)),
            _ => Ok(()),
        }
    }

    fn next_event(&mut self) -> Result<Option<Event>, ReadError> {
        if self.compact_file {
            if self.dpos == self.dend {
                self.refill_compact();
            }
            if let Some(&e) = self.decoded[..self.dend].get(self.dpos) {
                self.dpos += 1;
                return Ok(Some(e));
            }
            return match self.read_error.take() {
                Some(e) => Err(e),
                None => Ok(None),
            };
        }
        if self.end - self.pos < RECORD_LEN {
            self.refill();
        }
        let available = self.end - self.pos;
        if available < RECORD_LEN {
            if let Some(e) = self.read_error.take() {
                return Err(e);
            }
            if available == 0 {
                return Ok(None);
            }
            return Err(WireError::Truncated {
                offset: self.offset,
                needed: RECORD_LEN as u64,
                available: available as u64,
                what: "record",
            }
            .into());
        }
        Ok(Some(self.decode()))
    }

    /// Decodes the buffered record at `pos` (`end - pos >= RECORD_LEN`).
    #[inline]
    fn decode(&mut self) -> Event {
        let mut bytes = [0u8; RECORD_LEN];
        bytes.copy_from_slice(&self.block[self.pos..self.pos + RECORD_LEN]);
        self.pos += RECORD_LEN;
        self.offset += RECORD_LEN as u64;
        record::parse(&bytes)
    }
}

/// Events (4 KiB) of a 32-byte file's run parsed on the stack, then copied
/// to the caller's batch at once ([`TraceReader::read_buffered`]). Parsed
/// straight into the batch, an event took six stores of its fields; when
/// the batch's lines were last read on another core (a pipelined command
/// hands its batches back), each store waited for its line and the store
/// buffer filled: `analyze` of a 32-byte file ran 2x slower whenever the
/// host put the two vCPUs on different dies. The copy's 64-byte stores wait
/// once a line (docs/benchmarks-history.md, "The two vCPUs on different
/// dies, and the 32-byte reader's staged runs").
const STAGE: usize = 128;

/// Whether a record may need more than counting when yielded: a close-run
/// part, a hoops record, a name record (a superset: the exact tests follow).
#[inline]
fn needs_care(e: &Event) -> bool {
    // `CARE_IDS`, compared one by one (`CARE_IDS.contains` read 3 % slower
    // in `benches/decode.rs`).
    e.id == CLOSE_ID || e.id == HOOPS || e.id == NAME_EVENT
}

/// The ids [`needs_care`] looks for.
const CARE_IDS: [EventId; 3] = [CLOSE_ID, HOOPS, NAME_EVENT];

/// Whether `held` can begin a close run: parts 1, 2, … in order, exact
/// flags, the tracer's source, one time.
fn run_prefix(held: &[Event]) -> bool {
    held.iter().enumerate().all(|(i, e)| {
        close_part(e) == Some(i as u16 + 1)
            && e.flags == crate::wire::close::CLOSE_RECORD_FLAG | (i as u16 + 1)
            && e.source == crate::wire::close::CLOSE_SOURCE
            && e.time == held[0].time
    })
}

impl<R: Read> TraceReader<R> {
    /// Takes one record read from the file: holds it when it may belong to
    /// the final close run, otherwise queues it (and any held records, now
    /// known stray) for yielding.
    fn take(&mut self, e: Event) {
        if self.header.closes() && close_part(&e).is_some() && self.held.len() < CLOSE_RUN_LEN {
            self.held.push(e);
            if run_prefix(&self.held) {
                return;
            }
            // Not a run: everything held is stray, except the newest record
            // when it may start a run of its own.
            let last = self.held.pop().expect("just pushed");
            self.release.extend(self.held.drain(..));
            if run_prefix(std::slice::from_ref(&last)) {
                self.held.push(last);
            } else {
                self.release.push_back(last);
            }
            return;
        }
        if !self.held.is_empty() {
            // A record after a (partial) run: the run was not final.
            self.release.extend(self.held.drain(..));
            self.take(e);
            return;
        }
        self.release.push_back(e);
    }

    /// The end of the records (or an error): settles the completeness.
    fn end(&mut self, clean_end: bool) {
        self.done = true;
        let run: Option<CloseRecord> = if clean_end && self.held.len() == CLOSE_RUN_LEN {
            let run: [Event; CLOSE_RUN_LEN] = [self.held[0], self.held[1], self.held[2]];
            CloseRecord::from_records(&run)
        } else {
            None
        };
        if run.is_some() {
            self.held.clear();
        } else {
            self.release.extend(self.held.drain(..));
        }
        // The records still to be yielded count toward what the file holds.
        let (mut records, mut lost) = (self.records, self.lost);
        for e in &self.release {
            records += 1;
            if let Some(n) = hoops_lost(e) {
                lost = lost.saturating_add(n);
            }
        }
        self.completeness = Some(match (self.header.closes(), run) {
            (false, _) => Completeness::Unknown,
            (true, Some(close)) if close.records == records && close.lost == lost => {
                Completeness::Complete(close)
            }
            (true, Some(close)) => Completeness::Mismatch {
                close,
                records,
                lost,
            },
            (true, None) => Completeness::Cut { records, lost },
        });
    }

    fn yield_released(&mut self) -> Option<Event> {
        let e = self.release.pop_front()?;
        self.records += 1;
        if let Some(n) = hoops_lost(&e) {
            self.lost = self.lost.saturating_add(n);
        }
        if e.id == NAME_EVENT && is_combine(&e) {
            self.learn_name(e);
        }
        Some(e)
    }
}

impl<R: Read> Iterator for TraceReader<R> {
    type Item = Result<Event, ReadError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match self.next_buffered() {
            Some(e) => Some(Ok(e)),
            None => self.next_slow(),
        }
    }
}

impl<R: Read> TraceReader<R> {
    /// The next event if it is already read ahead and needs no other care
    /// (it is not part of a close run, nothing is held back); `None` means
    /// "call [`Iterator::next`]", not the end of the file. The same events
    /// in the same order as `next`, with the same counts; a loop that tries
    /// this first and falls back to `next` reads faster, as nothing on this
    /// path can fail (no `Result` to build and unpack per event).
    ///
    /// ```
    /// # use qtrace::classes::{system, Catalog};
    /// # use qtrace::clock::{Clock, ManualClock};
    /// # use qtrace::reader::TraceReader;
    /// # use qtrace::wire::{TraceHeader, TraceWriter};
    /// # use qtrace::Event;
    /// # let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)));
    /// # let mut w = TraceWriter::new(Vec::new(), &header)?;
    /// # for t in 0..3 { w.write_event(&Event::new(t, system::SCHEDULE, 0, [t, 0]))?; }
    /// # let bytes = w.finish()?;
    /// let mut reader = TraceReader::new(&bytes[..])?;
    /// let mut times = Vec::new();
    /// loop {
    ///     let e = match reader.next_buffered() {
    ///         Some(e) => e,
    ///         None => match reader.next() {
    ///             Some(e) => e?,
    ///             None => break,
    ///         },
    ///     };
    ///     times.push(e.time);
    /// }
    /// assert_eq!(times, [0, 1, 2]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline(always)]
    pub fn next_buffered(&mut self) -> Option<Event> {
        if self.compact_file {
            if self.dpos < self.plain_end {
                let e = self.decoded[self.dpos];
                self.dpos += 1;
                self.records += 1;
                return Some(e);
            }
            return self.next_buffered_compact();
        }
        if !self.release.is_empty() || !self.held.is_empty() {
            return None;
        }
        let at = self.pos;
        let bytes = self.block.get(at..self.end)?.first_chunk::<RECORD_LEN>()?;
        let e = record::parse(bytes);
        if self.header.closes() && close_part(&e).is_some() {
            return None;
        }
        self.pos += RECORD_LEN;
        self.offset += RECORD_LEN as u64;
        self.counted(e)
    }

    /// Appends to `out` at most `limit` of the events that
    /// [`TraceReader::next_buffered`] would yield one by one (the same
    /// events in the same order, with the same counts) and returns how many;
    /// `0` means "call [`Iterator::next`]", not the end of the file. For a
    /// loop that hands a file's events on in batches: they go from the
    /// reader's block into `out` with no value returned per event (a
    /// compact file's decoded stretches are copied whole). Measured on a
    /// 5 M-event 32-byte file, `qtrace analyze` ran at 1.8x the events a
    /// second this way as through `next_buffered` (docs/benchmarks-history.md,
    /// "The analysis's reader in batches").
    ///
    /// ```
    /// # use qtrace::classes::{system, Catalog};
    /// # use qtrace::clock::{Clock, ManualClock};
    /// # use qtrace::reader::TraceReader;
    /// # use qtrace::wire::{TraceHeader, TraceWriter};
    /// # use qtrace::Event;
    /// # let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)));
    /// # let mut w = TraceWriter::new(Vec::new(), &header)?;
    /// # for t in 0..5 { w.write_event(&Event::new(t, system::SCHEDULE, 0, [t, 0]))?; }
    /// # let bytes = w.finish()?;
    /// let mut reader = TraceReader::new(&bytes[..])?;
    /// let mut batch = Vec::new();
    /// let mut times = Vec::new();
    /// loop {
    ///     if reader.read_buffered(&mut batch, 2) == 0 {
    ///         match reader.next() {
    ///             Some(e) => batch.push(e?),
    ///             None => break,
    ///         }
    ///     }
    ///     times.extend(batch.drain(..).map(|e| e.time));
    /// }
    /// assert_eq!(times, [0, 1, 2, 3, 4]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read_buffered(&mut self, out: &mut Vec<Event>, limit: usize) -> usize {
        let start = out.len();
        if self.compact_file {
            while out.len() - start < limit {
                if self.dpos < self.plain_end {
                    let n = (self.plain_end - self.dpos).min(limit - (out.len() - start));
                    out.extend_from_slice(&self.decoded[self.dpos..self.dpos + n]);
                    self.dpos += n;
                    self.records += n as u64;
                    continue;
                }
                match self.next_buffered_compact() {
                    Some(e) => out.push(e),
                    None => break,
                }
            }
            return out.len() - start;
        }
        if !self.release.is_empty() || !self.held.is_empty() {
            return 0;
        }
        let closes = self.header.closes();
        let n = (self.end.saturating_sub(self.pos) / RECORD_LEN).min(limit);
        let Some(run) = self.block.get(self.pos..self.pos + n * RECORD_LEN) else {
            return 0;
        };
        out.reserve(n);
        // Plain records in a tight loop; one that needs care (a close-run
        // part, hoops, a name) ends it and is taken below.
        let mut taken = 0;
        let mut care = None;
        // Parsed into `stage` (in L1), then copied: see `STAGE`.
        let mut stage = [Event::default(); STAGE];
        for group in run.chunks(STAGE * RECORD_LEN) {
            let mut k = 0;
            for (bytes, slot) in group.chunks_exact(RECORD_LEN).zip(stage.iter_mut()) {
                let e = record::parse(bytes.first_chunk().expect("chunks of RECORD_LEN"));
                if needs_care(&e) {
                    care = Some(e);
                    break;
                }
                *slot = e;
                k += 1;
            }
            out.extend_from_slice(&stage[..k]);
            taken += k;
            if care.is_some() {
                break;
            }
        }
        if let Some(e) = care {
            if !(closes && close_part(&e).is_some()) {
                if let Some(lost) = hoops_lost(&e) {
                    self.lost = self.lost.saturating_add(lost);
                }
                if e.id == NAME_EVENT && is_combine(&e) {
                    self.learn_name(e);
                }
                out.push(e);
                taken += 1;
            }
        }
        self.pos += taken * RECORD_LEN;
        self.offset += (taken * RECORD_LEN) as u64;
        self.records += taken as u64;
        taken
    }

    /// [`TraceReader::next_buffered`] on a compact file past its stretch of
    /// plain records: finds the next stretch, or takes the record at hand
    /// with its care. Once a stretch (or a record that needs care), so out
    /// of line: the per-record path stays small enough to inline.
    #[inline(never)]
    fn next_buffered_compact(&mut self) -> Option<Event> {
        if !self.release.is_empty() || !self.held.is_empty() {
            return None;
        }
        let ahead = &self.decoded[self.dpos..self.dend];
        let plain = if self.chunk_plain {
            ahead.len()
        } else {
            ahead.iter().position(needs_care).unwrap_or(ahead.len())
        };
        let e = *ahead.first()?;
        if plain > 0 {
            self.plain_end = self.dpos + plain;
            self.dpos += 1;
            self.records += 1;
            return Some(e);
        }
        if self.header.closes() && close_part(&e).is_some() {
            return None;
        }
        self.dpos += 1;
        self.counted(e)
    }

    /// Counts a record being yielded (a hoops record's loss, a name
    /// record's name) and yields it.
    #[inline(always)]
    fn counted(&mut self, e: Event) -> Option<Event> {
        self.records += 1;
        if let Some(n) = hoops_lost(&e) {
            self.lost = self.lost.saturating_add(n);
        }
        if e.id == NAME_EVENT && is_combine(&e) {
            self.learn_name(e);
        }
        Some(e)
    }

    /// Takes a record of a name run (for [`TraceReader::event_name`]).
    #[cold]
    #[inline(never)]
    fn learn_name(&mut self, e: Event) {
        let names = &mut self.names;
        self.name_runs.push(e, &mut |item| {
            if let Item::Payload(p) = item {
                names.learn(&p);
            }
        });
    }

    /// [`Iterator::next`] past its fast path: reads ahead, holds close-run
    /// candidates, ends the file. Kept out of line so the fast path inlines.
    #[cold]
    #[inline(never)]
    fn next_slow(&mut self) -> Option<Result<Event, ReadError>> {
        loop {
            if let Some(e) = self.yield_released() {
                return Some(Ok(e));
            }
            if self.done {
                return self.error.take().map(Err);
            }
            match self.next_event() {
                Ok(Some(e)) => self.take(e),
                Ok(None) => self.end(true),
                Err(e) => {
                    self.error = Some(e.with_path(&self.path));
                    self.end(false);
                }
            }
        }
    }
}

impl<R: Read> std::iter::FusedIterator for TraceReader<R> {}
