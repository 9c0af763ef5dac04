//! Writing trace files: the header, then records, in the FORMAT.md layout.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use super::close::{hoops_lost, CloseRecord, QueueTotals, CLOSE_RUN_LEN};
use super::record::{self, RECORD_LEN};
use super::TraceHeader;
use crate::model::io_error::IoError;
use crate::Event;
use qtrace_core::compact::{self, ChunkEncoder, ChunkHeader};

/// Records encoded per `write` call by [`TraceWriter::write_events`].
const BATCH: usize = 128;

/// Records in one chunk of a compact file (FORMAT.md 1.11): a chunk is
/// written when it holds this many, and at every flush.
pub(crate) const CHUNK_RECORDS: usize = 2048;

/// The chunk being filled by a compact [`TraceWriter`].
#[derive(Debug)]
struct CompactBody {
    pending: Vec<Event>,
    next: ChunkHeader,
    buf: Vec<u8>,
}

impl CompactBody {
    fn new() -> Box<Self> {
        Box::new(CompactBody {
            pending: Vec::with_capacity(CHUNK_RECORDS),
            next: ChunkHeader::default(),
            buf: vec![0u8; compact::HEADER_LEN + compact::MAX_RECORD_LEN * CHUNK_RECORDS],
        })
    }

    /// Encodes the pending records as one chunk into `sink` (nothing when
    /// none is pending).
    fn write_chunk<W: Write>(&mut self, sink: &mut W) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let mut enc = ChunkEncoder::new(&mut self.buf, self.next)
            .map_err(|_| io::Error::other("compact chunk buffer too small"))?;
        for e in &self.pending {
            // The buffer holds CHUNK_RECORDS records of the largest size.
            enc.push(e)
                .map_err(|_| io::Error::other("compact chunk buffer too small"))?;
        }
        let n = enc.finish();
        sink.write_all(&self.buf[..n])?;
        self.next = self.next.following(self.pending.len() as u16, 0);
        self.pending.clear();
        Ok(())
    }

    /// Appends 32-byte records ([`record::emit`]), in the chunks that
    /// [`CompactBody::push`] of each would write: the pending chunk topped
    /// up first, then whole chunks encoded straight from `bytes` (each
    /// record decoded into the encoder, never copied into `pending`: a
    /// circular queue's snapshot of a 1 M-event shard), the rest pending.
    fn push_encoded<W: Write>(&mut self, mut bytes: &[u8], sink: &mut W) -> io::Result<()> {
        let full = || io::Error::other("compact chunk buffer too small");
        while !self.pending.is_empty() {
            let Some((r, rest)) = bytes.split_first_chunk::<RECORD_LEN>() else {
                return Ok(());
            };
            self.push(&record::parse(r), sink)?;
            bytes = rest;
        }
        while bytes.len() >= RECORD_LEN * CHUNK_RECORDS {
            let (chunk, rest) = bytes.split_at(RECORD_LEN * CHUNK_RECORDS);
            let mut enc = ChunkEncoder::new(&mut self.buf, self.next).map_err(|_| full())?;
            for r in chunk.chunks_exact(RECORD_LEN) {
                // The buffer holds CHUNK_RECORDS records of the largest size.
                enc.push(&record::parse(r.try_into().expect("32 bytes")))
                    .map_err(|_| full())?;
            }
            let n = enc.finish();
            sink.write_all(&self.buf[..n])?;
            self.next = self.next.following(CHUNK_RECORDS as u16, 0);
            bytes = rest;
        }
        for r in bytes.chunks_exact(RECORD_LEN) {
            self.pending
                .push(record::parse(r.try_into().expect("32 bytes")));
        }
        Ok(())
    }

    fn push<W: Write>(&mut self, e: &Event, sink: &mut W) -> io::Result<()> {
        self.pending.push(*e);
        if self.pending.len() == CHUNK_RECORDS {
            self.write_chunk(sink)?;
        }
        Ok(())
    }
}

/// Writes a trace: the header at construction, then one 32-byte big-endian
/// record per event, or, when the header says so
/// ([`TraceHeader::with_compact`]), compact chunks of up to 2048 records
/// (FORMAT.md 1.11; a chunk is written when full and at every
/// [`flush`](TraceWriter::flush)). Wrap the sink in a `BufWriter` (as
/// [`create_trace_file`] does) unless it buffers itself.
///
/// ```
/// use qtrace::classes::{system, Catalog};
/// use qtrace::clock::{Clock, ManualClock};
/// use qtrace::wire::{TraceHeader, TraceWriter};
/// use qtrace::Event;
///
/// let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)));
/// let mut w = TraceWriter::new(Vec::new(), &header)?;
/// w.write_event(&Event::new(10, system::SCHEDULE, 0, [3, 0]))?;
/// assert_eq!(w.events_written(), 1);
/// let bytes = w.finish()?;
/// assert_eq!(bytes.len(), header.to_bytes().len() + 32);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct TraceWriter<W: Write> {
    sink: W,
    events: u64,
    lost: u64,
    compact: Option<Box<CompactBody>>,
}

impl<W: Write> TraceWriter<W> {
    /// Writes `header` to `sink` and returns a writer for the records.
    ///
    ///
    /// ```
    /// use qtrace::classes::{system, Catalog};
    /// use qtrace::clock::{Clock, ManualClock};
    /// use qtrace::wire::{TraceHeader, TraceWriter};
    /// use qtrace::Event;
    ///
    /// let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)));
    /// let mut w = TraceWriter::new(Vec::new(), &header)?;
    /// w.write_event(&Event::new(1, system::SCHEDULE, 0, [3, 0]))?;
    /// assert_eq!(w.events_written(), 1);
    /// assert_eq!(w.get_ref().len(), header.to_bytes().len() + 32);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// The sink's error when writing the header fails.
    pub fn new(mut sink: W, header: &TraceHeader) -> io::Result<Self> {
        sink.write_all(&header.to_bytes())?;
        Ok(TraceWriter {
            sink,
            events: 0,
            lost: 0,
            compact: header.is_compact().then(CompactBody::new),
        })
    }

    /// Appends one record.
    ///
    /// # Errors
    ///
    /// The sink's error; the record may then be partly written.
    pub fn write_event(&mut self, event: &Event) -> io::Result<()> {
        if let Some(c) = self.compact.as_mut() {
            c.push(event, &mut self.sink)?;
            self.events += 1;
            self.count_lost(event);
            return Ok(());
        }
        let mut buf = [0u8; RECORD_LEN];
        record::emit(event, &mut buf);
        self.sink.write_all(&buf)?;
        self.events += 1;
        self.count_lost(event);
        Ok(())
    }

    /// Appends records in order (encoded in batches: one `write` per 128).
    ///
    /// On an error, [`TraceWriter::events_written`] counts the records of the
    /// batches that were fully handed to the sink.
    ///
    /// # Errors
    ///
    /// The sink's first error (see above for what was written).
    pub fn write_events(&mut self, events: &[Event]) -> io::Result<()> {
        if self.compact.is_some() {
            return events.iter().try_for_each(|e| self.write_event(e));
        }
        let mut buf = [0u8; RECORD_LEN * BATCH];
        for chunk in events.chunks(BATCH) {
            let n = record::emit_all(chunk, &mut buf);
            self.sink.write_all(&buf[..n])?;
            self.events += chunk.len() as u64;
            chunk.iter().for_each(|e| self.count_lost(e));
        }
        Ok(())
    }

    /// Appends `count` records already encoded ([`record::emit`]) in
    /// `bytes`, whose hoops records state `lost` events lost (the caller
    /// knows both: a circular queue's snapshot writes its rings' copies
    /// straight from where it copied them, issue 36). A compact writer
    /// encodes them into its chunks.
    pub(crate) fn write_encoded(&mut self, bytes: &[u8], count: u64, lost: u64) -> io::Result<()> {
        debug_assert_eq!(bytes.len() as u64, count * RECORD_LEN as u64);
        if let Some(c) = self.compact.as_mut() {
            // Decoded straight into the chunks (the caller states the
            // loss: no record is looked at for hoops).
            c.push_encoded(bytes, &mut self.sink)?;
            self.events += count;
            self.lost = self.lost.saturating_add(lost);
            return Ok(());
        }
        self.sink.write_all(bytes)?;
        self.events += count;
        self.lost = self.lost.saturating_add(lost);
        Ok(())
    }

    fn count_lost(&mut self, event: &Event) {
        if let Some(n) = hoops_lost(event) {
            self.lost = self.lost.saturating_add(n);
        }
    }

    /// Records written so far (events and hoops records).
    pub fn events_written(&self) -> u64 {
        self.events
    }

    /// Events lost as stated by the hoops records written so far (the sum of
    /// their `arg0`, saturating).
    pub fn lost_written(&self) -> u64 {
        self.lost
    }

    /// Ends the trace with a close run (FORMAT.md 1.5) stamped `time` and
    /// carrying the writing queue's final `totals`, plus the records written
    /// and the loss they state; then flushes and hands back the sink. The
    /// header should have [`TraceHeader::closes`] set (as
    /// [`TraceHeader::for_queue`] does), so that a file without the run reads
    /// as cut short.
    ///
    /// ```
    /// use qtrace::classes::Catalog;
    /// use qtrace::clock::{Clock, ManualClock};
    /// use qtrace::reader::{Completeness, TraceReader};
    /// use qtrace::wire::{QueueTotals, TraceHeader, TraceWriter};
    ///
    /// let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)))
    ///     .with_close_run(true);
    /// let w = TraceWriter::new(Vec::new(), &header)?;
    /// let bytes = w.finish_with_close(9, QueueTotals::default())?;
    /// let mut r = TraceReader::new(&bytes[..])?;
    /// assert_eq!(r.by_ref().count(), 0); // the close run is not an event
    /// assert!(matches!(r.completeness(), Some(Completeness::Complete(_))));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// The sink's error; the file is then cut short, which readers report.
    pub fn finish_with_close(mut self, time: u64, totals: QueueTotals) -> io::Result<W> {
        let close = CloseRecord::new(time, totals, self.events, self.lost);
        if let Some(c) = self.compact.as_mut() {
            for e in &close.to_records() {
                c.push(e, &mut self.sink)?;
            }
            return self.finish();
        }
        let mut buf = [0u8; RECORD_LEN * CLOSE_RUN_LEN];
        let n = record::emit_all(&close.to_records(), &mut buf);
        self.sink.write_all(&buf[..n])?;
        self.finish()
    }

    /// Flushes the sink; a compact writer first writes the records it holds
    /// as one chunk (so a file flushed often has smaller chunks).
    ///
    /// # Errors
    ///
    /// The sink's error.
    pub fn flush(&mut self) -> io::Result<()> {
        if let Some(c) = self.compact.as_mut() {
            c.write_chunk(&mut self.sink)?;
        }
        self.sink.flush()
    }

    /// The sink.
    pub fn get_ref(&self) -> &W {
        &self.sink
    }

    /// The sink, mutably (writing to it directly corrupts the trace).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.sink
    }

    /// Flushes and hands back the sink, without a close run: if the header
    /// has [`TraceHeader::closes`] set (as [`TraceHeader::for_queue`] and a
    /// header decoded from a closed file do), readers report the file as cut
    /// short; end it with [`TraceWriter::finish_with_close`] instead, or
    /// clear the flag with [`TraceHeader::with_close_run`]`(false)`.
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
    /// w.write_events(&[Event::new(1, system::SCHEDULE, 0, [3, 0]); 3])?;
    /// let bytes: Vec<u8> = w.finish()?; // the sink back
    /// assert_eq!(TraceReader::new(&bytes[..])?.count(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// The sink's error from flushing.
    pub fn finish(mut self) -> io::Result<W> {
        self.flush()?;
        Ok(self.sink)
    }
}

/// Creates (or truncates) the trace file at `path`, creating missing parent
/// directories, and writes `header` to it.
///
/// ```
/// use qtrace::classes::{system, Catalog};
/// use qtrace::clock::{Clock, ManualClock};
/// use qtrace::reader::TraceReader;
/// use qtrace::wire::{create_trace_file, TraceHeader};
/// use qtrace::Event;
///
/// let path = std::env::temp_dir().join(format!("qtrace-create-doc-{}.qtr", std::process::id()));
/// let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)));
/// let mut w = create_trace_file(&path, &header)?;
/// w.write_event(&Event::new(1, system::SCHEDULE, 0, [3, 0]))?;
/// w.finish()?;
/// assert_eq!(TraceReader::open(&path)?.count(), 1);
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`IoError`] naming the path and what failed (the crate-level error
/// turns it into [`Error::Io`](crate::Error::Io)).
pub fn create_trace_file(
    path: impl AsRef<Path>,
    header: &TraceHeader,
) -> Result<TraceWriter<BufWriter<File>>, IoError> {
    let path = path.as_ref();
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| IoError::new("create the directory of trace file", path, e))?;
    }
    let file = File::create(path).map_err(|e| IoError::new("create trace file", path, e))?;
    TraceWriter::new(BufWriter::with_capacity(64 * 1024, file), header)
        .map_err(|e| IoError::new("write the header of trace file", path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classes::{system, Catalog, ClassSpec};
    use crate::model::clock::{Clock, ManualClock};
    use crate::EventId;
    use crate::QueueHandle;

    fn header() -> TraceHeader {
        let mut catalog = Catalog::builtin();
        catalog
            .define(ClassSpec::new("net", "network").event("rx", "received", &["len", "port"]))
            .unwrap();
        TraceHeader::new(catalog, &Clock::manual(&ManualClock::new(0)))
            .with_host("box")
            .unwrap()
            .with_process_id(7)
            .with_queue(QueueHandle(1), "fixed")
            .unwrap()
    }

    #[test]
    fn header_then_records() {
        let h = header();
        let mut w = TraceWriter::new(Vec::new(), &h).unwrap();
        let events: Vec<Event> = (0..300)
            .map(|i| Event::new(i, EventId((i % 0x18) as u16), 1, [i, !i]))
            .collect();
        w.write_event(&Event::new(1, system::CREATE, 2, [3, 4]))
            .unwrap();
        w.write_events(&events).unwrap();
        assert_eq!(w.events_written(), 301);
        let bytes = w.finish().unwrap();
        let (back, len) = TraceHeader::decode(&bytes).unwrap();
        assert_eq!(back, h);
        assert_eq!(len, h.buffer_len());
        assert_eq!(bytes.len(), len + 301 * 32);
        let rec: &[u8; 32] = bytes[len..len + 32].try_into().unwrap();
        assert_eq!(record::parse(rec), Event::new(1, system::CREATE, 2, [3, 4]));
        for (i, e) in events.iter().enumerate() {
            let at = len + 32 * (i + 1);
            let rec: &[u8; 32] = bytes[at..at + 32].try_into().unwrap();
            assert_eq!(&record::parse(rec), e);
        }
    }

    /// Pre-encoded records written to a compact writer give the bytes of
    /// the same records written as events: a pending chunk topped up,
    /// whole chunks straight from the bytes, the rest pending; records of
    /// many sizes among them (no hoops record: the caller states the loss).
    #[test]
    fn compact_write_encoded_has_the_bytes_of_write_events() {
        let h = header().with_compact(true).with_close_run(true);
        let events: Vec<Event> = (0..3 * CHUNK_RECORDS as u64 + 77)
            .map(|i| {
                let big = if i % 97 == 0 { u64::MAX - i } else { i };
                Event::new(
                    i * 5 + (i % 3),
                    EventId(0x0b + (i % 40) as u16),
                    1,
                    [big, i / 7],
                )
            })
            .collect();
        let mut encoded = vec![0u8; events.len() * RECORD_LEN];
        for (e, out) in events.iter().zip(encoded.chunks_exact_mut(RECORD_LEN)) {
            record::emit(e, out.try_into().unwrap());
        }
        for split in [0, 5, CHUNK_RECORDS, CHUNK_RECORDS + 1] {
            let mut a = TraceWriter::new(Vec::new(), &h).unwrap();
            let mut b = TraceWriter::new(Vec::new(), &h).unwrap();
            a.write_events(&events[..split]).unwrap();
            b.write_events(&events[..split]).unwrap();
            a.write_events(&events[split..]).unwrap();
            let rest = &encoded[split * RECORD_LEN..];
            b.write_encoded(rest, (events.len() - split) as u64, 0)
                .unwrap();
            assert_eq!(b.events_written(), events.len() as u64);
            let close = QueueTotals::default();
            let (a, b) = (
                a.finish_with_close(9, close).unwrap(),
                b.finish_with_close(9, close).unwrap(),
            );
            assert_eq!(a, b, "split {split}");
            let back: Vec<Event> = crate::reader::TraceReader::new(&b[..])
                .unwrap()
                .map(Result::unwrap)
                .collect();
            assert_eq!(back.len(), events.len());
            if let Some(k) = (0..back.len()).find(|&k| back[k] != events[k]) {
                panic!("record {k}: {:?} != {:?}", back[k], events[k]);
            }
        }
    }

    #[test]
    fn create_trace_file_makes_directories_and_names_the_path() {
        let dir = std::env::temp_dir().join(format!("qtrace-writer-{}", std::process::id()));
        let path = dir.join("a/b/queue1-fixed.qtr");
        let w = create_trace_file(&path, &header()).unwrap();
        w.finish().unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            header().buffer_len() as u64
        );
        // A path under a regular file cannot be created.
        let bad = path.join("x.qtr");
        let err = create_trace_file(&bad, &header()).unwrap_err();
        assert_eq!(err.action, "create the directory of trace file");
        assert!(err.to_string().contains("x.qtr"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
