//! Following a trace file as it grows, like `tail -f` (`qtrace dump
//! --follow`, `qtrace live FILE`): the events written so far, then each new
//! one as its writer (an online queue, `qtrace recv`) appends it, until the
//! file ends with its close run (it says it is complete), the caller stops,
//! or Ctrl-C.
//!
//! [`Follow`] is a `Read` over the file that waits at its end instead of
//! ending, so the library's [`TraceReader`] reads it unchanged (it waits
//! for no more than one whole record, or one whole chunk in a compact file). [`Follower`] reopens the path when
//! the writer re-creates the file (the online queue re-creates one that was
//! deleted or replaced; `qtrace recv` may rewrite its file to a copy renamed
//! over it, whose records already read are then skipped), and goes on into
//! the next chunk when an online queue that rotates closes one (FORMAT.md
//! 1.10: the next chunk exists, whole, before the closed one gets its close
//! run; chunks that retention deleted before they were reached are counted).

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use qtrace::reader::{Completeness, ReadError, TraceReader};
use qtrace::wire::CloseRecord;
use qtrace::Event;
use qtrace_core::compact;
use qtrace_core::encode::record::{parse, RECORD_LEN};

use super::interrupt;

/// How often a follower looks at the file again once it has read all of it.
pub const POLL: Duration = Duration::from_millis(50);

/// Why a [`Follow`] said "end of file".
const GOING: u8 = 0;
const STOPPED: u8 = 1;
const REPLACED: u8 = 2;
const CLOSED: u8 = 3;

/// What a [`Follow`] and its owner share.
#[derive(Debug, Default)]
pub struct FollowState {
    /// Set by the owner (or Ctrl-C): stop waiting.
    pub stop: AtomicBool,
    /// The header's length, once read: where records start.
    header_len: AtomicU64,
    /// Why it ended (GOING until then).
    end: AtomicU8,
    /// The file's records are compact chunks (version 2, FORMAT.md 1.11).
    compact: AtomicBool,
}

/// A trace file read to its current end, then waited on as it grows.
pub struct Follow {
    file: File,
    /// Bytes served before the file's (a header, when the file is read
    /// from a later offset: [`Follower::skip_to_end`]).
    prefix: Vec<u8>,
    path: PathBuf,
    /// (device, inode) of the open file.
    id: (u64, u64),
    pos: u64,
    state: Arc<FollowState>,
    /// In a compact file: where the next chunk not yet walked starts (0:
    /// at the records' start), and the (start, end) of the last two whole
    /// chunks walked (a close run may be split between them).
    walk: u64,
    last_chunks: [Option<(u64, u64)>; 2],
}

impl Follow {
    fn open(path: &Path, state: Arc<FollowState>) -> io::Result<Follow> {
        let file = File::open(path)?;
        let m = file.metadata()?;
        state.end.store(GOING, Ordering::Relaxed);
        state.header_len.store(0, Ordering::Relaxed);
        Ok(Follow {
            file,
            prefix: Vec::new(),
            path: path.to_path_buf(),
            id: (m.dev(), m.ino()),
            pos: 0,
            state,
            walk: 0,
            last_chunks: [None; 2],
        })
    }

    /// Whether the path now names another file (re-created by its writer).
    fn replaced(&self) -> bool {
        match std::fs::metadata(&self.path) {
            Ok(m) => (m.dev(), m.ino()) != self.id || m.len() < self.pos,
            // Deleted and not yet re-created: keep waiting.
            Err(_) => false,
        }
    }

    /// Whether what was read so far ends with a well-formed close run.
    fn closed(&mut self) -> bool {
        if self.state.compact.load(Ordering::Relaxed) {
            return self.closed_compact();
        }
        let start = self.state.header_len.load(Ordering::Relaxed);
        let run = 3 * RECORD_LEN as u64;
        if start == 0
            || self.pos < start + run
            || !(self.pos - start).is_multiple_of(RECORD_LEN as u64)
        {
            return false;
        }
        let mut bytes = [0u8; 3 * RECORD_LEN];
        if self.file.read_exact_at(&mut bytes, self.pos - run).is_err() {
            return false;
        }
        let mut recs = [Event::default(); 3];
        for (r, c) in recs.iter_mut().zip(bytes.chunks_exact(RECORD_LEN)) {
            if let Ok(c) = <&[u8; RECORD_LEN]>::try_from(c) {
                *r = parse(c);
            }
        }
        CloseRecord::from_records(&recs).is_some()
    }

    /// [`Self::closed`] for a compact file: what was read so far ends
    /// exactly after a whole chunk (found by walking the chunks' lengths),
    /// and the records of the last chunks end with a close run.
    fn closed_compact(&mut self) -> bool {
        let start = self.state.header_len.load(Ordering::Relaxed);
        if start == 0 {
            return false;
        }
        self.walk = self.walk.max(start);
        let mut head = [0u8; compact::HEADER_LEN];
        while self.walk + compact::HEADER_LEN as u64 <= self.pos {
            if self.file.read_exact_at(&mut head, self.walk).is_err() {
                return false;
            }
            let at = compact::field::LENGTH;
            let len = u32::from_be_bytes([head[at], head[at + 1], head[at + 2], head[at + 3]]);
            let end = self.walk + compact::HEADER_LEN as u64 + u64::from(len);
            if end > self.pos {
                break;
            }
            self.last_chunks = [self.last_chunks[1], Some((self.walk, end))];
            self.walk = end;
        }
        if self.walk != self.pos {
            return false;
        }
        let mut tail: Vec<Event> = Vec::new();
        for (from, to) in self.last_chunks.iter().flatten() {
            let mut bytes = vec![0u8; (to - from) as usize];
            if self.file.read_exact_at(&mut bytes, *from).is_err() {
                return false;
            }
            let Ok(chunk) = compact::Chunk::new_checked(&bytes) else {
                return false;
            };
            for r in chunk.records() {
                match r {
                    Ok(e) => tail.push(e),
                    Err(_) => return false,
                }
            }
        }
        match tail.len().checked_sub(3) {
            Some(i) => <&[Event; 3]>::try_from(&tail[i..])
                .is_ok_and(|run| CloseRecord::from_records(run).is_some()),
            None => false,
        }
    }
}

impl Read for Follow {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if !self.prefix.is_empty() {
            let n = buf.len().min(self.prefix.len());
            buf[..n].copy_from_slice(&self.prefix[..n]);
            self.prefix.drain(..n);
            return Ok(n);
        }
        loop {
            let n = self.file.read(buf)?;
            if n > 0 {
                self.pos += n as u64;
                return Ok(n);
            }
            let why = if self.state.stop.load(Ordering::Relaxed) || interrupt::happened() {
                STOPPED
            } else if self.closed() {
                CLOSED
            } else if self.replaced() {
                REPLACED
            } else {
                std::thread::sleep(POLL);
                continue;
            };
            self.state.end.store(why, Ordering::Relaxed);
            return Ok(0);
        }
    }
}

/// One step of a [`Follower`].
#[derive(Debug)]
pub enum Step {
    /// The next event (hoops records included).
    Event(Event),
    /// The writer re-created the file: what follows is the new file's
    /// (`copy`: a copy of the old one, whose records already shown are
    /// skipped).
    Replaced {
        /// Whether the new file starts as the old one did.
        copy: bool,
    },
    /// The file is damaged at this point: nothing more is read.
    Damaged(ReadError),
    /// The file followed was a chunk of a rotating online queue and closed
    /// (`ended`: its completeness); what follows is the next chunk of the
    /// same run, `path`. `missed` chunks between them were deleted
    /// (retention) before the follower reached them.
    NextChunk {
        /// How the closed chunk ended.
        ended: Completeness,
        /// The chunk followed from now on.
        path: PathBuf,
        /// Chunks deleted in between.
        missed: u64,
    },
    /// The end: the file closed (its completeness), or the caller stopped
    /// (`None`).
    End(Option<Completeness>),
}

/// Follows the trace file at a path, across re-creations.
pub struct Follower {
    path: PathBuf,
    state: Arc<FollowState>,
    reader: Option<TraceReader<Follow>>,
    /// The first record of the file followed, and records yielded from it.
    first: Option<Event>,
    read: u64,
    /// Records of a copy still to skip.
    skip: u64,
    /// The first event of a re-created file, read to tell it from a copy.
    pending: Option<Event>,
    /// Bytes of the file skipped by [`Follower::skip_to_end`]: the reader's
    /// offsets are this much behind the file's.
    base: u64,
    done: bool,
}

impl Follower {
    /// Opens `path`, waiting (every [`POLL`]) until it exists and holds a
    /// whole header, or until `state.stop` (then `Ok(None)`).
    ///
    /// # Errors
    ///
    /// [`ReadError`] when the file cannot be opened (other than not existing
    /// yet) or its header is not a qtrace header.
    pub fn open(path: &Path, state: Arc<FollowState>) -> Result<Option<Follower>, ReadError> {
        let mut f = Follower {
            path: path.to_path_buf(),
            state,
            reader: None,
            first: None,
            read: 0,
            skip: 0,
            pending: None,
            base: 0,
            done: false,
        };
        Ok(f.reopen()?.then_some(f))
    }

    /// The path followed now (the current chunk, after a rotation).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The next chunk of the same run as the chunk followed (same process,
    /// clock origin and queue), if the path is a chunk's name and one with
    /// a higher number is there: the lowest, with the count of numbers
    /// skipped.
    fn next_chunk(&self) -> Option<(PathBuf, u64)> {
        let (stem, n, ext) = chunk_name(self.path.file_name()?.to_str()?)?;
        let dir = match self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            Some(d) => d.to_path_buf(),
            None => PathBuf::from("."),
        };
        let mut later: Vec<(u64, PathBuf)> = std::fs::read_dir(&dir)
            .ok()?
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let (s, m, x) = chunk_name(&name)?;
                (s == stem && x == ext && m > n).then(|| (m, e.path()))
            })
            .collect();
        later.sort();
        let here = self.reader.as_ref()?.header();
        // The lowest of this run (a file of that name the queue did not
        // write, or a later run's chunk, is passed over).
        later.into_iter().find_map(|(m, path)| {
            let there = TraceReader::open(&path).ok()?;
            let there = there.header();
            let same_run = here.process_id() == there.process_id()
                && here.clock_origin_unix_ns() == there.clock_origin_unix_ns()
                && here.queue() == there.queue();
            same_run.then_some((path, m - n - 1))
        })
    }

    /// The reader of the file followed now (its header, its catalog).
    pub fn reader(&self) -> Option<&TraceReader<Follow>> {
        self.reader.as_ref()
    }

    /// [`Self::reopen`] where the follow goes on: `None` when the file is
    /// open again, else the follow's last step (stopped while waiting for
    /// the file, or the file cannot be opened).
    fn reopen_or_stop(&mut self) -> Option<Step> {
        let last = match self.reopen() {
            Ok(true) => return None,
            Ok(false) => Step::End(None),
            Err(e) => Step::Damaged(e),
        };
        self.done = true;
        Some(last)
    }

    /// (Re)opens the path; `false` when stopped before it existed.
    fn reopen(&mut self) -> Result<bool, ReadError> {
        if let Some(what) = super::io::not_a_file(&self.path) {
            return Err(ReadError::Open {
                path: self.path.clone(),
                source: io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("it is {what}, not a trace file"),
                ),
            });
        }
        let follow = loop {
            match Follow::open(&self.path, self.state.clone()) {
                Ok(f) => break f,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    if self.state.stop.load(Ordering::Relaxed) || interrupt::happened() {
                        return Ok(false);
                    }
                    std::thread::sleep(POLL);
                }
                Err(source) => {
                    return Err(ReadError::Open {
                        path: self.path.clone(),
                        source,
                    })
                }
            }
        };
        let state = self.state.clone();
        let reader = TraceReader::new(follow).map_err(|e| match e {
            ReadError::Format { error, .. } => ReadError::Format {
                path: Some(self.path.clone()),
                error,
            },
            other => other,
        })?;
        if state.end.load(Ordering::Relaxed) == STOPPED {
            return Ok(false);
        }
        state
            .header_len
            .store(reader.header_len(), Ordering::Relaxed);
        state
            .compact
            .store(reader.header().is_compact(), Ordering::Relaxed);
        self.reader = Some(reader);
        self.base = 0;
        Ok(true)
    }

    /// Jumps ahead to the newest records (leaving the last three to be read,
    /// so a close run is still seen): what a view that cannot keep up
    /// does. Returns the records skipped (0 when it is near the end). The
    /// file's end is then [`Completeness::Mismatch`] (its close record
    /// counts the records skipped): that it ended with a close run is what
    /// [`Step::End`] with a completeness says. A compact file (FORMAT.md
    /// 1.11) is never skipped: its chunks are numbered from its start, so a
    /// reader must read them all.
    pub fn skip_to_end(&mut self) -> u64 {
        let Some(reader) = self.reader.as_ref() else {
            return 0;
        };
        if reader.header().is_compact() {
            return 0;
        }
        let (start, at) = (reader.header_len(), reader.offset() + self.base);
        let rec = RECORD_LEN as u64;
        let Ok(len) = std::fs::metadata(&self.path).map(|m| m.len()) else {
            return 0;
        };
        let end = start + (len.saturating_sub(start) / rec) * rec;
        let to = end.saturating_sub(3 * rec).max(at);
        if to - at < 2 * rec * 1024 || self.pending.is_some() {
            return 0;
        }
        // A reader over the header, then the file from `to`.
        let Ok(mut follow) = Follow::open(&self.path, self.state.clone()) else {
            return 0;
        };
        let mut head = vec![0u8; start as usize];
        if follow.file.read_exact_at(&mut head, 0).is_err()
            || io::Seek::seek(&mut follow.file, io::SeekFrom::Start(to)).is_err()
        {
            return 0;
        }
        follow.prefix = head;
        follow.pos = to;
        let Ok(reader) = TraceReader::new(follow) else {
            return 0;
        };
        self.state.header_len.store(start, Ordering::Relaxed);
        self.reader = Some(reader);
        self.base = to - start;
        let skipped = (to - at) / rec;
        self.read += skipped;
        skipped
    }

    /// The next event if it is already read (never waits).
    pub fn buffered(&mut self) -> Option<Event> {
        if self.pending.is_some() {
            return None;
        }
        loop {
            let e = self.reader.as_mut()?.next_buffered()?;
            if self.take(&e) {
                return Some(e);
            }
        }
    }

    /// Whether `e` is shown (not a record of a copy already shown).
    fn take(&mut self, e: &Event) -> bool {
        if self.first.is_none() {
            self.first = Some(*e);
        }
        if self.skip > 0 {
            self.skip -= 1;
            return false;
        }
        self.read += 1;
        true
    }

    /// The next step: waits for the next event as long as the file is not
    /// closed and the caller has not stopped. After [`Step::End`] or
    /// [`Step::Damaged`], `None`.
    pub fn next(&mut self) -> Option<Step> {
        if let Some(e) = self.pending.take() {
            self.read += 1;
            return Some(Step::Event(e));
        }
        loop {
            if self.done {
                return None;
            }
            let Some(reader) = self.reader.as_mut() else {
                self.done = true;
                return Some(Step::End(None));
            };
            match reader.next() {
                Some(Ok(e)) => {
                    if self.take(&e) {
                        return Some(Step::Event(e));
                    }
                }
                Some(Err(e)) if self.state.end.load(Ordering::Relaxed) == GOING => {
                    self.done = true;
                    return Some(Step::Damaged(e));
                }
                // Ended by a stop or a re-creation: the cut is not damage.
                Some(Err(_)) | None => match self.state.end.load(Ordering::Relaxed) {
                    REPLACED => {
                        let (first, read) = (self.first.take(), self.read);
                        self.reader = None;
                        if let Some(last) = self.reopen_or_stop() {
                            return Some(last);
                        }
                        // A copy starts with the same record: skip what was shown.
                        let copy = match self.reader.as_mut().and_then(|r| r.next()) {
                            Some(Ok(e)) if Some(e) == first => {
                                self.first = Some(e);
                                self.read = 1;
                                self.skip = read.saturating_sub(1);
                                true
                            }
                            Some(Ok(e)) => {
                                self.first = Some(e);
                                self.read = 0;
                                self.skip = 0;
                                // Shown after the Replaced step.
                                self.pending = Some(e);
                                false
                            }
                            _ => {
                                self.read = 0;
                                false
                            }
                        };
                        return Some(Step::Replaced { copy });
                    }
                    CLOSED => {
                        let ended = reader.completeness();
                        if let (Some(ended), Some((path, missed))) = (ended, self.next_chunk()) {
                            self.path = path.clone();
                            self.reader = None;
                            (self.first, self.read, self.skip) = (None, 0, 0);
                            if let Some(last) = self.reopen_or_stop() {
                                return Some(last);
                            }
                            return Some(Step::NextChunk {
                                ended,
                                path,
                                missed,
                            });
                        }
                        self.done = true;
                        return Some(Step::End(ended));
                    }
                    _ => {
                        self.done = true;
                        return Some(Step::End(None));
                    }
                },
            }
        }
    }
}

/// A chunk's file name (FORMAT.md 1.10) as (stem, number, extension):
/// `run.000042.qtr` → ("run", 42, Some("qtr")), `trace.000042` →
/// ("trace", 42, None). The number has 6 digits at least.
fn chunk_name(name: &str) -> Option<(&str, u64, Option<&str>)> {
    let digits = |d: &str| d.len() >= 6 && d.bytes().all(|b| b.is_ascii_digit());
    let (rest, last) = name.rsplit_once('.')?;
    if digits(last) {
        return Some((rest, last.parse().ok()?, None));
    }
    let (stem, n) = rest.rsplit_once('.')?;
    (digits(n) && !stem.is_empty()).then_some((stem, n.parse().ok()?, Some(last)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use qtrace::classes::{system, Catalog};
    use qtrace::clock::{Clock, ManualClock};
    use qtrace::wire::{create_trace_file, QueueTotals, TraceWriter};
    use std::io::BufWriter;

    fn header() -> qtrace::wire::TraceHeader {
        qtrace::wire::TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)))
            .with_close_run(true)
    }

    fn ev(t: u64) -> Event {
        Event::new(t, system::SCHEDULE, 0, [t, 0])
    }

    /// A trace file at `path` holding `times`, open for more.
    fn file(path: &Path, times: &[u64]) -> TraceWriter<BufWriter<File>> {
        let mut w = create_trace_file(path, &header()).unwrap();
        for &t in times {
            w.write_event(&ev(t)).unwrap();
        }
        w.flush().unwrap();
        w
    }

    fn event(step: Option<Step>) -> u64 {
        match step {
            Some(Step::Event(e)) => e.time,
            other => panic!("not an event: {other:?}"),
        }
    }

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("qtrace-follow-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// A compact file (FORMAT.md 1.11) followed as it grows chunk by chunk
    /// (each flush writes one), to its close run split between two chunks
    /// (2,047 records, then the close run's 3): every event, then complete.
    /// `skip_to_end` never skips in it.
    #[test]
    fn a_compact_file_is_followed_chunk_by_chunk_to_its_close_run() {
        let d = dir("compact");
        let path = d.join("t.qtr");
        let mut w = create_trace_file(&path, &header().with_compact(true)).unwrap();
        w.write_event(&ev(1)).unwrap();
        w.flush().unwrap();
        let mut f = Follower::open(&path, Arc::new(FollowState::default()))
            .unwrap()
            .unwrap();
        assert_eq!(event(f.next()), 1);
        for t in 2..=2047 {
            w.write_event(&ev(t)).unwrap();
        }
        w.flush().unwrap();
        for t in 2..=2047 {
            assert_eq!(event(f.next()), t);
        }
        assert_eq!(f.skip_to_end(), 0);
        // 2,046 records pending, then the close run's 3: a chunk of 2,048
        // (the first 2 close records), then one of 1.
        for t in 2048..=4093 {
            w.write_event(&ev(t)).unwrap();
        }
        let bytes = w.finish_with_close(5000, QueueTotals::default()).unwrap();
        drop(bytes);
        for t in 2048..=4093 {
            assert_eq!(event(f.next()), t);
        }
        match f.next() {
            Some(Step::End(Some(c))) => assert_eq!(c.is_complete(), Some(true)),
            other => panic!("{other:?}"),
        }
        assert!(f.next().is_none());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_copy_renamed_over_the_file_goes_on_where_it_was() {
        let d = dir("copy");
        let path = d.join("t.qtr");
        let mut w = file(&path, &[1, 2]);
        let mut f = Follower::open(&path, Arc::new(FollowState::default()))
            .unwrap()
            .unwrap();
        assert_eq!((event(f.next()), event(f.next())), (1, 2));
        w.write_event(&ev(3)).unwrap();
        w.flush().unwrap();
        assert_eq!(event(f.next()), 3); // the file grew
                                        // The writer rewrites it to a copy with more, renamed over it.
        let copy = d.join("t.qtr.new");
        let w2 = file(&copy, &[1, 2, 3, 4, 5]);
        w2.finish_with_close(9, QueueTotals::default()).unwrap();
        std::fs::rename(&copy, &path).unwrap();
        assert!(matches!(f.next(), Some(Step::Replaced { copy: true })));
        assert_eq!((event(f.next()), event(f.next())), (4, 5));
        match f.next() {
            Some(Step::End(Some(c))) => assert_eq!(c.is_complete(), Some(true)),
            other => panic!("{other:?}"),
        }
        assert!(f.next().is_none());
        drop(w);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_re_created_file_is_followed_from_its_start_and_stop_ends_a_wait() {
        let d = dir("new");
        let path = d.join("t.qtr");
        let _w = file(&path, &[1]);
        let state = Arc::new(FollowState::default());
        let mut f = Follower::open(&path, state.clone()).unwrap().unwrap();
        assert_eq!(event(f.next()), 1);
        std::fs::remove_file(&path).unwrap();
        let _w2 = file(&path, &[7, 8]);
        assert!(matches!(f.next(), Some(Step::Replaced { copy: false })));
        assert_eq!(f.buffered(), None); // the new file's first event comes from next
        assert_eq!((event(f.next()), event(f.next())), (7, 8));
        let stopping = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            state.stop.store(true, Ordering::Relaxed);
        });
        assert!(matches!(f.next(), Some(Step::End(None))));
        stopping.join().unwrap();
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_closed_chunk_is_followed_into_the_next_of_its_run_counting_those_deleted() {
        let d = dir("chunks");
        let w = file(&d.join("run.000001.qtr"), &[1, 2]);
        let mut f = Follower::open(&d.join("run.000001.qtr"), Arc::new(FollowState::default()))
            .unwrap()
            .unwrap();
        assert_eq!((event(f.next()), event(f.next())), (1, 2));
        // Chunk 2 was deleted (retention); chunk 3 is the next one there,
        // and a file of another name is not.
        let _other = file(&d.join("other.000002.qtr"), &[99]);
        let w3 = file(&d.join("run.000003.qtr"), &[5, 6]);
        w.finish_with_close(3, QueueTotals::default()).unwrap();
        match f.next() {
            Some(Step::NextChunk {
                ended,
                path,
                missed,
            }) => {
                assert_eq!(ended.is_complete(), Some(true));
                assert_eq!((path, missed), (d.join("run.000003.qtr"), 1));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(f.path(), d.join("run.000003.qtr"));
        assert_eq!((event(f.next()), event(f.next())), (5, 6));
        // The last chunk closes with no chunk after it: the end.
        w3.finish_with_close(7, QueueTotals::default()).unwrap();
        match f.next() {
            Some(Step::End(Some(c))) => assert_eq!(c.is_complete(), Some(true)),
            other => panic!("{other:?}"),
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn chunk_names_are_parsed_with_or_without_an_extension() {
        assert_eq!(chunk_name("run.000042.qtr"), Some(("run", 42, Some("qtr"))));
        assert_eq!(
            chunk_name("a.b.1234567.qtr"),
            Some(("a.b", 1234567, Some("qtr")))
        );
        assert_eq!(chunk_name("trace.000003"), Some(("trace", 3, None)));
        assert_eq!(chunk_name("run.qtr"), None);
        assert_eq!(chunk_name("run.0042.qtr"), None);
        assert_eq!(chunk_name(".000042.qtr"), None);
    }

    #[test]
    fn skip_to_end_jumps_to_the_newest_records_and_still_sees_the_close() {
        let d = dir("skip");
        let path = d.join("t.qtr");
        let times: Vec<u64> = (1..=10_000).collect();
        let w = file(&path, &times);
        let mut f = Follower::open(&path, Arc::new(FollowState::default()))
            .unwrap()
            .unwrap();
        assert_eq!(event(f.next()), 1);
        // Near the end already: nothing to skip... after 1 of 10 000 there is.
        assert_eq!(f.skip_to_end(), 9996);
        assert_eq!(f.skip_to_end(), 0);
        assert_eq!(
            (event(f.next()), event(f.next()), event(f.next())),
            (9998, 9999, 10_000)
        );
        w.finish_with_close(20_000, QueueTotals::default()).unwrap();
        // Closed; the close record counts the records skipped too.
        match f.next() {
            Some(Step::End(Some(c))) => assert!(matches!(c, Completeness::Mismatch { .. })),
            other => panic!("{other:?}"),
        }
        let _ = std::fs::remove_dir_all(&d);
    }
}
