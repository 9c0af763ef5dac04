//! The file [`super::Receiver::run`] writes: a readable trace at every
//! moment, whatever happens to the receiver.
//!
//! - **Header first.** The file starts with a provisional header (the
//!   built-in classes, this process's clock) whose length field reserves
//!   [`super::ReceiverConfig::header_room`] bytes (zero padding, which readers
//!   skip). When a sender's header (its catalog) arrives, it is written over
//!   the provisional one **in place**, in one write, if it fits the room;
//!   otherwise the file is **rewritten**: a copy with a larger room is
//!   written next to it (`<file>.rewrite`) and renamed over it, so the file
//!   at the path is always whole (a crash during the copy leaves the
//!   `.rewrite` file behind, and the file as it was).
//! - **Records** are written at least every 50 ms and whenever 64 KiB of
//!   32-byte records are waiting: as compact chunks of at most 2,048
//!   records (FORMAT.md 1.11, file version 2, the default), encoded from
//!   the waiting records at each write, or as 32-byte records (version 1,
//!   when the header given to [`LiveFile::create`] is not compact). After a
//!   crash (even SIGKILL) the file reads as a trace holding every record of
//!   the whole chunks (or records) written so far; the records of the last
//!   50 ms may be missing, a chunk cut by the crash reads as cut, and the
//!   file has no close run, so it reads as cut short (header flag bit 0 is
//!   set from the start).
//! - **The end**: when the receiver stops, the close run (FORMAT.md 1.5):
//!   part 1 `accepted` = events received, `dropped` = events the file's
//!   hoops records mark lost; part 2 `overwritten` = 0, `delivered` = events
//!   received (all written); part 3 as the format says. Its time is the
//!   latest event time written.
//! - **A full disk** (or any write error) stops the writing: the file is
//!   cut back to its last whole record (or chunk), and [`LiveFile::failure`] says why;
//!   no close run is written, so the file reads as cut short (it ends
//!   before the streams did).
//!   On Linux the writer keeps 256 KiB allocated past the end of the file
//!   (`fallocate` with `FALLOC_FL_KEEP_SIZE`): when that reservation can no
//!   longer be renewed the disk is treated as full while the reserved space
//!   still takes the records waiting and the end of the file.
//! - **Never over another trace.** The file is created new (never
//!   truncated) and held with an exclusive advisory lock (`flock`) while it
//!   is written. A file already at the path that another process holds
//!   locked (another receiver writing it) is left alone and creating fails
//!   with a message saying so; any other file there (a previous trace, a
//!   killed receiver's) is moved aside to `<stem>-previous.<ext>`
//!   (`<stem>-previous-2.<ext>`, … when taken), never overwritten; an empty
//!   file there is removed.
//! - **Deleted or replaced while written** (its link count is 0, or the
//!   path names another file or nothing; checked at most every 100 ms,
//!   before a write): the records written so far went with the old inode.
//!   The file is re-created (whatever now holds the path is moved aside)
//!   with the current header and one hoops record for the events that were
//!   in the old file plus the losses its hoops records stated; then
//!   writing goes on. [`LiveFile::records_written`] counts the records in
//!   the file at the path only; [`LiveFile::records_lost_with_file`] and
//!   [`LiveFile::files_replaced`] say what went with deleted files.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::classes::tracer::HOOPS;
use crate::model::event::{Event, TRACER_SOURCE};
use crate::model::io_error::IoError;
use crate::wire::record::{self, RECORD_LEN};
use crate::wire::{CloseRecord, QueueTotals, TraceHeader, CHUNK_RECORDS};
use qtrace_core::compact::{ChunkEncoder, ChunkHeader, HEADER_LEN, MAX_RECORD_LEN};

/// Records waiting in memory before they are written.
const FLUSH_BYTES: usize = 64 << 10;
/// The longest records wait in memory.
pub(crate) const FLUSH_INTERVAL: Duration = Duration::from_millis(50);
/// Space kept allocated past the end of the file (Linux).
const RESERVE: u64 = 256 << 10;
/// How often the file is checked for having been deleted or replaced.
const REPLACED_CHECK: Duration = Duration::from_millis(100);
/// The offset of the header-length field in the fixed header (FORMAT.md
/// §1.1).
const HEADER_LEN_FIELD: usize = 16;

/// `header` encoded with its length field saying `room` bytes (zero
/// padding up to there), or `None` if it does not fit.
/// Header flag bit 0 (a close run ends the complete file) is set.
pub(crate) fn padded_header(header: &TraceHeader, room: usize) -> Option<Vec<u8>> {
    let mut bytes = header.clone().with_close_run(true).to_bytes();
    if bytes.len() > room || room % 8 != 0 || room > crate::wire::header::MAX_HEADER_LEN {
        return None;
    }
    bytes[HEADER_LEN_FIELD..HEADER_LEN_FIELD + 4].copy_from_slice(&(room as u32).to_be_bytes());
    bytes.resize(room, 0);
    Some(bytes)
}

/// The room to reserve for `header`: at least `wanted` (rounded up to 8),
/// and twice the header's own length if that is more.
fn room_for(header: &TraceHeader, wanted: usize) -> usize {
    let own = header.clone().with_close_run(true).buffer_len();
    let room = wanted.max(own * 2).div_ceil(8) * 8;
    room.min(crate::wire::header::MAX_HEADER_LEN).max(own)
}

/// The received trace file.
#[derive(Debug)]
pub(crate) struct LiveFile {
    path: PathBuf,
    file: File,
    /// Whole records waiting to be written.
    buf: Vec<u8>,
    header_len: u64,
    /// Records in the file (written).
    written: u64,
    /// Events lost as the hoops records pushed so far say (sum of `arg0`).
    lost: u64,
    /// Of `lost`, what the records still in `buf` say.
    buf_lost: u64,
    /// Events (records other than hoops and control records) in the file.
    file_events: u64,
    /// Events waiting in `buf`.
    buf_events: u64,
    /// The latest record time pushed (the time of a re-created file's hoops).
    last_time: u64,
    /// The header in the file (to re-create it).
    header: TraceHeader,
    /// Records written to files that were then deleted or replaced.
    lost_with_file: u64,
    /// Events of those records.
    events_lost_with_file: u64,
    /// Times the file was found deleted or replaced and re-created.
    replaced: u64,
    last_check: Instant,
    /// Where the reservation past the end reaches (Linux).
    reserved_to: u64,
    last_flush: Instant,
    /// Writing failed: nothing more goes into the file.
    failure: Option<String>,
    /// The disk is (nearly) full: receiving stops, the reserved space still
    /// takes the waiting records and the end.
    full: Option<String>,
    /// Bytes of the file after the header (whole records or chunks).
    body_len: u64,
    /// The file's records are compact chunks (FORMAT.md 1.11).
    compact: bool,
    /// The header of the next chunk (compact).
    next: ChunkHeader,
    /// The chunks of one write (compact), and each one's end in it and
    /// record count.
    out: Vec<u8>,
    ends: Vec<(usize, u64)>,
    /// Where one chunk is encoded (compact).
    scratch: Vec<u8>,
}

/// Encodes `events` (at most [`CHUNK_RECORDS`]) as one chunk numbered
/// `header` into `scratch` (room for as many records of the largest size),
/// appended to `out`.
fn push_chunk(
    scratch: &mut [u8],
    header: ChunkHeader,
    events: impl Iterator<Item = Event>,
    out: &mut Vec<u8>,
) {
    let mut enc = ChunkEncoder::new(scratch, header).expect("room for a chunk header");
    for e in events {
        // The buffer has room for CHUNK_RECORDS records of the largest size.
        enc.push(&e).expect("room for every record");
    }
    let n = enc.finish();
    out.extend_from_slice(&scratch[..n]);
}

impl LiveFile {
    /// Creates `path` with `header`, reserving `room` bytes for the header:
    /// a new file, locked, never over another trace (see the module's
    /// documentation).
    ///
    /// # Errors
    ///
    /// [`IoError`] if the directory or the file cannot be created, if
    /// another process is writing a trace at `path`, or if the trace there
    /// cannot be moved aside.
    pub(crate) fn create(path: &Path, header: &TraceHeader, room: usize) -> Result<Self, IoError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| IoError::new("create the directory of trace file", path, e))?;
        }
        let mut file = create_new_locked(path)?;
        let compact = header.is_compact();
        let room = room_for(header, room);
        let bytes = padded_header(header, room)
            .unwrap_or_else(|| header.clone().with_close_run(true).to_bytes());
        file.write_all(&bytes)
            .map_err(|e| IoError::new("write the header of trace file", path, e))?;
        let mut f = LiveFile {
            path: path.to_path_buf(),
            file,
            buf: Vec::with_capacity(FLUSH_BYTES * 2),
            header_len: bytes.len() as u64,
            written: 0,
            lost: 0,
            buf_lost: 0,
            file_events: 0,
            buf_events: 0,
            last_time: 0,
            header: header.clone(),
            lost_with_file: 0,
            events_lost_with_file: 0,
            replaced: 0,
            last_check: Instant::now(),
            reserved_to: 0,
            last_flush: Instant::now(),
            failure: None,
            full: None,
            body_len: 0,
            compact,
            next: ChunkHeader::default(),
            out: Vec::new(),
            ends: Vec::new(),
            scratch: if compact {
                vec![0u8; HEADER_LEN + MAX_RECORD_LEN * CHUNK_RECORDS]
            } else {
                Vec::new()
            },
        };
        f.reserve();
        Ok(f)
    }

    /// Records written to files at the path that were then deleted or
    /// replaced (lost with their inode; the re-created file marks their
    /// events with a hoops record).
    pub(crate) fn records_lost_with_file(&self) -> u64 {
        self.lost_with_file
    }

    /// Events written to files that were then deleted or replaced.
    pub(crate) fn events_lost_with_file(&self) -> u64 {
        self.events_lost_with_file
    }

    /// Checks now (whenever it was last checked) whether the file was
    /// deleted or replaced, re-creates it if so, and writes what waits: the
    /// counts are then final for the close run.
    pub(crate) fn settle(&mut self) {
        if self.failure.is_none() && self.file_replaced() {
            self.recreate();
        }
        self.last_check = Instant::now();
        self.flush();
    }

    /// Times the file was found deleted or replaced and re-created.
    pub(crate) fn files_replaced(&self) -> u64 {
        self.replaced
    }

    /// Whether the file being written was deleted (no link left) or
    /// replaced (its path names another file, or nothing).
    fn file_replaced(&self) -> bool {
        use std::os::unix::fs::MetadataExt;
        let Ok(meta) = self.file.metadata() else {
            return false;
        };
        if meta.nlink() == 0 {
            return true;
        }
        match std::fs::metadata(&self.path) {
            Ok(m) => m.ino() != meta.ino() || m.dev() != meta.dev(),
            Err(_) => true,
        }
    }

    /// The file was deleted or replaced: what was written to it went with
    /// its inode. Re-creates it (moving aside whatever holds the path now)
    /// with the header and one hoops record for the events of the old file
    /// and the losses it stated. Called before a write (the records in
    /// `buf` are not lost: they go into the new file).
    fn recreate(&mut self) {
        let stated = self.lost - self.buf_lost;
        let lost_events = self.file_events.saturating_add(stated);
        let opened = (|| -> Result<(File, Vec<u8>, usize, ChunkHeader), IoError> {
            if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(|e| {
                    IoError::new("create the directory of trace file", &self.path, e)
                })?;
            }
            let mut file = create_new_locked(&self.path)?;
            let room = room_for(&self.header, self.header_len as usize);
            let mut bytes = padded_header(&self.header, room)
                .unwrap_or_else(|| self.header.clone().with_close_run(true).to_bytes());
            let header_len = bytes.len();
            let mut next = ChunkHeader::default();
            if lost_events > 0 {
                // Queue 0xffff: the records of every sender went with it.
                let hoops = Event::new(
                    self.last_time,
                    HOOPS,
                    TRACER_SOURCE,
                    [lost_events, u64::from(crate::wire::header::NO_QUEUE)],
                );
                if self.compact {
                    let mut scratch = [0u8; HEADER_LEN + MAX_RECORD_LEN];
                    push_chunk(&mut scratch, next, std::iter::once(hoops), &mut bytes);
                    next = next.following(1, 0);
                } else {
                    let mut rec = [0u8; RECORD_LEN];
                    record::emit(&hoops, &mut rec);
                    bytes.extend_from_slice(&rec);
                }
            }
            file.write_all(&bytes)
                .map_err(|e| IoError::new("write the header of trace file", &self.path, e))?;
            let body = bytes.len() - header_len;
            bytes.truncate(header_len);
            Ok((file, bytes, body, next))
        })();
        match opened {
            Ok((file, header, body, next)) => {
                self.file = file;
                self.header_len = header.len() as u64;
                self.body_len = body as u64;
                self.next = next;
                self.lost_with_file = self.lost_with_file.saturating_add(self.written);
                self.events_lost_with_file =
                    self.events_lost_with_file.saturating_add(self.file_events);
                self.replaced += 1;
                self.written = u64::from(lost_events > 0);
                self.file_events = 0;
                self.lost = lost_events.saturating_add(self.buf_lost);
                self.reserved_to = 0;
                self.reserve();
            }
            Err(e) => self.fail(format!(
                "trace file {} was deleted or replaced while written, and re-creating it failed: {e}",
                self.path.display()
            )),
        }
    }

    /// Why receiving must stop (the disk is full, or writing failed).
    pub(crate) fn failure(&self) -> Option<&str> {
        self.failure.as_deref().or(self.full.as_deref())
    }

    /// Records written to the file.
    pub(crate) fn records_written(&self) -> u64 {
        self.written
    }

    /// Appends whole records (a multiple of 32 bytes).
    pub(crate) fn push(&mut self, raw: &[u8]) {
        if self.failure.is_some() {
            return;
        }
        for c in raw.chunks_exact(RECORD_LEN) {
            let mut t = [0u8; 8];
            t.copy_from_slice(&c[0..8]);
            self.last_time = self.last_time.max(u64::from_be_bytes(t));
            let id = u16::from_be_bytes([c[8], c[9]]);
            if id == HOOPS.0 {
                let mut n = [0u8; 8];
                n.copy_from_slice(&c[16..24]);
                let n = u64::from_be_bytes(n);
                self.lost = self.lost.saturating_add(n);
                self.buf_lost = self.buf_lost.saturating_add(n);
            } else if id != 0 {
                // Id 0: the tracer's control records (marks), not events.
                self.buf_events += 1;
            }
        }
        self.buf.extend_from_slice(raw);
        if self.buf.len() >= FLUSH_BYTES {
            self.flush();
        }
    }

    /// Writes the waiting records if 50 ms have passed since the last write.
    pub(crate) fn tick(&mut self) {
        if self.last_flush.elapsed() >= FLUSH_INTERVAL {
            self.flush();
        }
    }

    /// Writes the waiting records (whole records; a failure cuts the file
    /// back to its last whole record and stops the writing).
    pub(crate) fn flush(&mut self) {
        self.last_flush = Instant::now();
        if self.failure.is_some() {
            return;
        }
        if self.last_check.elapsed() >= REPLACED_CHECK {
            self.last_check = Instant::now();
            if self.file_replaced() {
                self.recreate();
                if self.failure.is_some() {
                    return;
                }
            }
        }
        if self.buf.is_empty() {
            return;
        }
        if self.compact {
            self.encode();
        }
        let bytes = if self.compact { &self.out } else { &self.buf };
        match self.file.write_all(bytes) {
            Ok(()) => {
                self.written += (self.buf.len() / RECORD_LEN) as u64;
                self.body_len += bytes.len() as u64;
                self.file_events += self.buf_events;
                self.buf_events = 0;
                self.buf_lost = 0;
                self.buf.clear();
                self.out.clear();
                self.ends.clear();
                self.reserve();
            }
            Err(e) => self.fail(format!(
                "cannot write trace file {}: {e}",
                self.path.display()
            )),
        }
    }

    /// Encodes the waiting records into `out`: chunks of at most
    /// [`CHUNK_RECORDS`] records numbered on from `next`.
    fn encode(&mut self) {
        self.out.clear();
        self.ends.clear();
        for part in self.buf.chunks(CHUNK_RECORDS * RECORD_LEN) {
            let n = part.len() / RECORD_LEN;
            let events = part
                .chunks_exact(RECORD_LEN)
                .map(|c| record::parse(c.try_into().expect("32-byte chunks")));
            push_chunk(&mut self.scratch, self.next, events, &mut self.out);
            self.next = self.next.following(n as u16, 0);
            let before = self.ends.last().map_or(0, |e| e.1);
            self.ends.push((self.out.len(), before + n as u64));
        }
    }

    /// Stops the writing: the file keeps its whole records (or, compact,
    /// the whole chunks of a write cut short).
    fn fail(&mut self, why: String) {
        self.buf.clear();
        self.buf_events = 0;
        self.buf_lost = 0;
        let len = self.file.seek(SeekFrom::End(0)).unwrap_or(self.header_len);
        let body = len.saturating_sub(self.header_len);
        if self.compact {
            // Of the write cut short, the chunks wholly in the file.
            let got = body.saturating_sub(self.body_len);
            let (end, records) = self
                .ends
                .iter()
                .take_while(|e| e.0 as u64 <= got)
                .last()
                .copied()
                .unwrap_or((0, 0));
            self.body_len += end as u64;
            self.written += records;
            self.out.clear();
            self.ends.clear();
        } else {
            let whole = body / RECORD_LEN as u64;
            self.body_len = whole * RECORD_LEN as u64;
            self.written = whole;
        }
        let _ = self.file.set_len(self.header_len + self.body_len);
        let _ = self.file.seek(SeekFrom::End(0));
        self.failure = Some(why);
    }

    /// Keeps [`RESERVE`] bytes allocated past the end (Linux); when that is
    /// refused for lack of space the disk counts as full.
    #[cfg(target_os = "linux")]
    fn reserve(&mut self) {
        use std::os::fd::AsRawFd;
        let end = self.header_len + self.body_len;
        if end + RESERVE / 2 < self.reserved_to {
            return;
        }
        let (Ok(offset), Ok(len)) = (i64::try_from(end), i64::try_from(RESERVE)) else {
            return;
        };
        // SAFETY: the descriptor is this open file's for the whole call; the
        // call only allocates blocks, it reads and writes no memory of ours.
        let r = unsafe {
            libc::fallocate(
                self.file.as_raw_fd(),
                libc::FALLOC_FL_KEEP_SIZE,
                offset,
                len,
            )
        };
        if r == 0 {
            self.reserved_to = end + RESERVE;
            return;
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ENOSPC) || e.raw_os_error() == Some(libc::EDQUOT) {
            // The space reserved earlier still takes the waiting records
            // and the end of the file; nothing more is received.
            if self.full.is_none() {
                self.full = Some(format!(
                    "trace file {}: the disk is full ({e})",
                    self.path.display()
                ));
            }
        } else {
            // Not supported here (some file systems): write without a
            // reservation.
            self.reserved_to = u64::MAX;
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn reserve(&mut self) {}

    /// Puts `header` at the start of the file: in place if it fits the
    /// room, else by rewriting the file (a copy renamed over it).
    pub(crate) fn set_header(&mut self, header: &TraceHeader) {
        if self.failure.is_some() {
            return;
        }
        self.flush();
        if self.failure.is_some() {
            return;
        }
        // The file's form stays the one it was created in.
        let header = &header.clone().with_compact(self.compact);
        self.header = header.clone();
        if let Some(bytes) = padded_header(header, self.header_len as usize) {
            let r = (|| {
                self.file.seek(SeekFrom::Start(0))?;
                self.file.write_all(&bytes)?;
                self.file.seek(SeekFrom::End(0))?;
                Ok::<(), io::Error>(())
            })();
            if let Err(e) = r {
                self.fail(format!(
                    "cannot write the header of trace file {}: {e}",
                    self.path.display()
                ));
            }
            return;
        }
        if let Err(e) = self.rewrite(header) {
            self.fail(format!(
                "cannot rewrite trace file {} with a larger header: {e}",
                self.path.display()
            ));
        }
    }

    fn rewrite(&mut self, header: &TraceHeader) -> io::Result<()> {
        let room = room_for(header, self.header_len as usize * 2);
        let bytes = padded_header(header, room)
            .unwrap_or_else(|| header.clone().with_close_run(true).to_bytes());
        let mut name = self.path.as_os_str().to_owned();
        name.push(".rewrite");
        let tmp = PathBuf::from(name);
        let mut out = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        lock(&out)?;
        let copy = (|| {
            out.write_all(&bytes)?;
            self.file.seek(SeekFrom::Start(self.header_len))?;
            let mut src = (&mut self.file).take(self.body_len);
            io::copy(&mut src, &mut out)?;
            std::fs::rename(&tmp, &self.path)
        })();
        if let Err(e) = copy {
            let _ = std::fs::remove_file(&tmp);
            let _ = self.file.seek(SeekFrom::End(0));
            return Err(e);
        }
        out.seek(SeekFrom::End(0))?;
        self.file = out;
        self.header_len = bytes.len() as u64;
        self.reserved_to = 0;
        self.reserve();
        Ok(())
    }

    /// Events lost as the hoops records written say.
    pub(crate) fn lost(&self) -> u64 {
        self.lost
    }

    /// Writes what is waiting, then — unless writing stopped early (a full
    /// disk, an error: the file then reads as cut short) — the close run
    /// (FORMAT.md 1.5) stamped `time` with `totals`, then syncs. Returns
    /// whether the close run was written.
    pub(crate) fn finish(&mut self, time: u64, totals: QueueTotals) -> bool {
        self.flush();
        let ok = self.failure().is_none() && {
            let close = CloseRecord::new(time, totals, self.written, self.lost);
            let mut end = Vec::with_capacity(HEADER_LEN + 3 * MAX_RECORD_LEN);
            if self.compact {
                let mut scratch = [0u8; HEADER_LEN + 3 * MAX_RECORD_LEN];
                push_chunk(
                    &mut scratch,
                    self.next,
                    close.to_records().into_iter(),
                    &mut end,
                );
            } else {
                let mut recs = [0u8; RECORD_LEN * 3];
                let n = record::emit_all(&close.to_records(), &mut recs);
                end.extend_from_slice(&recs[..n]);
            }
            match self.file.write_all(&end) {
                Ok(()) => {
                    self.body_len += end.len() as u64;
                    true
                }
                Err(e) => {
                    self.fail(format!(
                        "cannot write trace file {}: {e}",
                        self.path.display()
                    ));
                    false
                }
            }
        };
        // The reservation past the end is given back.
        let _ = self.file.set_len(self.header_len + self.body_len);
        let _ = self.file.sync_all();
        ok
    }
}

/// Takes the exclusive advisory lock of `file` without waiting.
fn lock(file: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: the descriptor is `file`'s, open for the whole call; flock
    // touches no memory of ours.
    let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `path` with `-previous` (then `-previous-2`, …) added to its stem: the
/// first name not taken.
fn aside_name(path: &Path) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ext = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    let mut k = 1;
    loop {
        let name = if k == 1 {
            format!("{stem}-previous{ext}")
        } else {
            format!("{stem}-previous-{k}{ext}")
        };
        let target = path.with_file_name(name);
        if std::fs::symlink_metadata(&target).is_err() {
            return target;
        }
        k += 1;
    }
}

/// Creates `path` as a new file (read and write) holding its exclusive
/// lock. A file already there is never truncated: if another process holds
/// its lock, this fails saying so; if it is empty it is removed; otherwise it
/// is moved aside ([`aside_name`]).
pub(crate) fn create_new_locked(path: &Path) -> Result<File, IoError> {
    let mut last = None;
    // A few rounds: another receiver may create or move the file meanwhile.
    for _ in 0..8 {
        match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
        {
            Ok(f) => {
                if let Err(e) = lock(&f) {
                    // Locked by another process between its creation and
                    // ours: theirs.
                    return Err(IoError::new("lock trace file", path, busy(e)));
                }
                return Ok(f);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(IoError::new("create trace file", path, e)),
        }
        let old = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(IoError::new("open the trace file already at", path, e)),
        };
        if let Err(e) = lock(&old) {
            return Err(IoError::new("lock trace file", path, busy(e)));
        }
        let len = old.metadata().map(|m| m.len()).unwrap_or(1);
        let moved = if len == 0 {
            std::fs::remove_file(path)
        } else {
            std::fs::rename(path, aside_name(path))
        };
        match moved {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(IoError::new(
                    "move aside the previous trace file (it is never overwritten)",
                    path,
                    e,
                ))
            }
        }
        last = Some(io::Error::from(io::ErrorKind::AlreadyExists));
    }
    Err(IoError::new(
        "create trace file (another process keeps creating it)",
        path,
        last.unwrap_or_else(|| io::ErrorKind::AlreadyExists.into()),
    ))
}

/// What to say when a trace file's lock is held.
fn busy(e: io::Error) -> io::Error {
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        io::Error::new(
            io::ErrorKind::WouldBlock,
            "another process is writing a trace there (it holds the file's lock); give this receiver another output path, or stop the other one first",
        )
    } else {
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classes::Catalog;
    use crate::model::clock::{Clock, ManualClock};

    /// 32-byte records of `user0 [i, 0]` at times `10 i`, for `i` in `from..from + n`.
    fn records(from: u64, n: u64) -> Vec<u8> {
        let mut v = Vec::new();
        for i in from..from + n {
            let mut r = [0u8; RECORD_LEN];
            record::emit(
                &Event::new(10 * i, crate::classes::user::USER0, 1, [i, 0]),
                &mut r,
            );
            v.extend_from_slice(&r);
        }
        v
    }

    fn read(path: &Path) -> (TraceHeader, Vec<Event>, crate::reader::Completeness) {
        let mut r = crate::reader::TraceReader::open(path).unwrap();
        let header = r.header().clone();
        let events = r.by_ref().map(Result::unwrap).collect();
        (header, events, r.completeness().unwrap())
    }

    /// Both forms: the records written so far read back (cut short, the
    /// file still open); a file deleted while written is re-created with a
    /// hoops record for its records; the close run ends it complete. The
    /// compact file is numbered chunk by chunk (a reader checks it) and
    /// takes less than a quarter of the 32-byte form's bytes.
    #[test]
    fn both_forms_read_back_and_are_re_created_after_deletion() {
        use crate::reader::Completeness;
        let mut sizes = Vec::new();
        for compact in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("r.qtr");
            let h = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)))
                .with_compact(compact);
            let mut f = LiveFile::create(&path, &h, 4096).unwrap();
            f.push(&records(0, 3000));
            f.flush();
            assert_eq!(f.records_written(), 3000);
            let (header, events, end) = read(&path);
            assert_eq!(
                (header.is_compact(), header.version()),
                (compact, 1 + u16::from(compact))
            );
            assert_eq!(events.len(), 3000);
            assert!(events
                .iter()
                .enumerate()
                .all(|(i, e)| e.args[0] == i as u64));
            assert_eq!(
                end,
                Completeness::Cut {
                    records: 3000,
                    lost: 0
                }
            );
            sizes.push(std::fs::metadata(&path).unwrap().len() - 4096);
            std::fs::remove_file(&path).unwrap();
            f.push(&records(3000, 10));
            f.settle();
            assert_eq!((f.files_replaced(), f.records_written()), (1, 11));
            assert!(f.finish(30_100, QueueTotals::default()));
            let (header, events, end) = read(&path);
            assert_eq!(header.is_compact(), compact);
            assert_eq!(events.len(), 11);
            assert_eq!((events[0].id, events[0].args[0]), (HOOPS, 3000));
            let values: Vec<u64> = events[1..].iter().map(|e| e.args[0]).collect();
            assert_eq!(values, (3000..3010).collect::<Vec<_>>());
            match end {
                Completeness::Complete(close) => {
                    assert_eq!((close.records, close.lost), (11, 3000));
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(sizes[1], 3000 * 32);
        assert!(sizes[0] * 4 < sizes[1], "{sizes:?}");
    }

    #[test]
    fn a_padded_header_reads_back_with_its_room() {
        let h = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)));
        let own = h.buffer_len();
        let bytes = padded_header(&h, 4096).unwrap();
        assert_eq!(bytes.len(), 4096);
        assert!(bytes[own..].iter().all(|&b| b == 0));
        let (back, len) = TraceHeader::decode(&bytes).unwrap();
        assert_eq!((back, len), (h.clone().with_close_run(true), 4096));
        assert_eq!(padded_header(&h, own - 8), None);
        assert_eq!(padded_header(&h, own + 1), None);
    }
}
