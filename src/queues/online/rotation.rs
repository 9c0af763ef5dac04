//! Rotation and retention of the online queue's file: the drainer closes the
//! open chunk when it reaches its size or age bound (each chunk a complete
//! trace, the next made whole before the open one is closed), never splits a
//! combine run across two chunks, and deletes the oldest closed chunks beyond
//! the retention.

use super::chunks::{chunk_path, ClosedChunk};
use super::drainer::{Drainer, COMPACT_BATCH};
use crate::model::combine::{BEGIN, COMBINE, CONTROL, END};
use crate::queues::drained::samples::SAMPLE_RECORDS;
use crate::storage::reserve::{reserve, RESERVE_LEN};
use crate::wire::record::RECORD_LEN;
use crate::wire::CHUNK_RECORDS;
use qtrace_core::compact::{ChunkHeader, HEADER_LEN, MAX_RECORD_LEN};
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
impl Drainer {
    /// Records that still fit in the open chunk, keeping room for a hoops
    /// record, a queue counters' sample (if sampled) and the close run
    /// (`usize::MAX` without a size bound).
    pub(super) fn room(&self) -> usize {
        let Some(max) = self.rotation.max_bytes.filter(|_| self.file.is_some()) else {
            return usize::MAX;
        };
        let left = max.saturating_sub(self.file_len);
        let slots = if self.compact.is_some() {
            // Records of the largest size, with a chunk header for each
            // chunk of a batch (one more: a held run may make another) and
            // one for the tail (hoops and close run).
            let headers = (COMPACT_BATCH / CHUNK_RECORDS + 2) as u64;
            left.saturating_sub(headers * HEADER_LEN as u64) / MAX_RECORD_LEN as u64
        } else {
            left / RECORD_LEN as u64
        };
        // The queue counters' sample (two records, and in a compact file
        // its own chunk when it goes first in a round) comes on top.
        let (samples, sample_chunk) = if self.counters.is_some() {
            (
                SAMPLE_RECORDS as u64,
                (HEADER_LEN / MAX_RECORD_LEN + 1) as u64,
            )
        } else {
            (0, 0)
        };
        let slots = if self.compact.is_some() {
            slots.saturating_sub(sample_chunk)
        } else {
            slots
        };
        usize::try_from(slots.saturating_sub(4 + samples)).unwrap_or(usize::MAX)
    }

    /// Whether the open chunk's first record is older than the age bound
    /// (an empty chunk is never closed for its age).
    pub(super) fn age_due(&self) -> bool {
        self.file.is_some()
            && !self.rotate_blocked
            && matches!(
                (self.first_record_at, self.rotation.max_age),
                (Some(at), Some(age)) if at.elapsed() >= age
            )
    }

    /// The header and the names prologue (stamped with the time of the
    /// last record drained, so it precedes what follows) of a chunk after
    /// the first, the prologue's record count, and (in a compact file) the
    /// header of the chunk that follows the prologue's.
    pub(super) fn chunk_head(&self) -> (Vec<u8>, u64, ChunkHeader) {
        let mut head = self.header.clone();
        let names = self.names.records(self.last_time);
        let mut next = ChunkHeader::default();
        self.encode_events(&mut next, &names, &mut head);
        (head, names.len() as u64, next)
    }

    /// Closes the open chunk and continues in the next (called between
    /// batches: nothing pending). The next chunk is made whole first (header
    /// and names prologue, written under a hidden name and then linked to
    /// its own), then the open one gets its close run and is synced: a
    /// reader that sees the close run finds the next chunk there. Then
    /// retention deletes the oldest closed chunks. If the next chunk cannot
    /// be made, the error is counted and the open chunk goes on past its
    /// bound until the next round tries again.
    pub(super) fn rotate(&mut self) {
        if self.rotate_blocked || !self.rotation.on() {
            return;
        }
        let Some(base) = self.base.clone().filter(|_| self.file.is_some()) else {
            return;
        };
        self.rotate_blocked = true;
        let next = self.chunk + 1;
        let path = chunk_path(&base, next);
        let (head, prologue, next_chunk) = self.chunk_head();
        let (handle, file) = match create_chunk(&path, &head) {
            Ok(pair) => pair,
            Err(e) => {
                let skip = if e.kind() == io::ErrorKind::AlreadyExists {
                    // Not ours: never written over; the next try takes
                    // the number after it.
                    self.chunk = next;
                    " (a file of that name exists: it is left alone and the number skipped)"
                } else {
                    ""
                };
                self.shared.io_error(
                    &format!(
                        "open the next chunk {}{skip}; {} goes on past its bound until the next round",
                        path.display(),
                        self.name
                    ),
                    &e,
                );
                return;
            }
        };
        self.close(0, 0);
        if let Some(f) = &self.file {
            if let Err(e) = f.sync_data() {
                self.shared
                    .io_error(&format!("sync the closed chunk {}", self.name), &e);
            }
        }
        if let Some(old) = self.path.replace(path.clone()) {
            self.closed.push_back(ClosedChunk {
                path: old,
                bytes: self.file_len,
                events: self.in_file,
            });
        }
        self.file = Some(handle);
        self.sink = Box::new(file);
        self.name = path.display().to_string();
        self.file_len = head.len() as u64;
        if let Some(c) = self.compact.as_mut() {
            c.next = next_chunk;
        }
        self.reserved_to = self.file_len + RESERVE_LEN;
        self.records = prologue;
        self.prologue = prologue;
        self.samples = 0;
        self.lost = 0;
        self.in_file = 0;
        self.chunk = next;
        self.first_record_at = None;
        self.rotate_blocked = false;
        self.retain();
    }

    /// Deletes the oldest closed chunks, whole, until the retention holds;
    /// their events count as overwritten. Then publishes the chunks kept.
    fn retain(&mut self) {
        let (keep_chunks, keep_bytes) = (self.rotation.keep_chunks, self.rotation.keep_bytes);
        while let Some(oldest) = self.closed.front() {
            let bytes: u64 = self.closed.iter().map(|c| c.bytes).sum();
            let over = keep_chunks.is_some_and(|k| self.closed.len() + 1 > k)
                || keep_bytes.is_some_and(|b| bytes > b);
            if !over {
                break;
            }
            match std::fs::remove_file(&oldest.path) {
                Ok(()) => {}
                // Gone already: its events are gone too.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    let what = format!("delete the chunk {} (retention)", oldest.path.display());
                    self.shared.io_error(&what, &e);
                    break;
                }
            }
            self.shared
                .retired
                .fetch_add(oldest.events, Ordering::Relaxed);
            self.closed.pop_front();
        }
        let mut kept: Vec<PathBuf> = self.closed.iter().map(|c| c.path.clone()).collect();
        kept.extend(self.path.clone());
        self.shared.io.lock().chunks = kept;
    }

    /// With rotation: holds back a combine run that `pending` ends inside
    /// (its end not drained yet, or the batch cut it) until its end is
    /// drained, so that a chunk boundary never splits a run — unless the run
    /// starts an empty chunk (then it is longer than a chunk, or its
    /// producer is slow: it goes on as it comes).
    pub(super) fn hold_open_run(&mut self) {
        let flags = |i: usize| self.pending[i].flags;
        let in_run = |f: u16| f & (COMBINE | CONTROL) == COMBINE;
        let recs = self.pending.len();
        if !self.rotation.on() || recs == 0 {
            return;
        }
        let last = flags(recs - 1);
        if !in_run(last) || last & END != 0 {
            return;
        }
        // The run's records are consecutive (queues claim a run whole).
        let mut b = recs - 1;
        while flags(b) & BEGIN == 0 {
            if b == 0 || !in_run(flags(b - 1)) {
                return; // its begin record is not here: nothing to keep whole
            }
            b -= 1;
        }
        if b == 0 && self.records == self.prologue {
            return;
        }
        self.carry.extend_from_slice(&self.pending[b..]);
        self.pending.truncate(b);
        self.pending_events -= (recs - b) as u64;
    }
}

/// Creates the chunk `path` whole: `head` (header and names prologue) is
/// written to a hidden file beside it (`.<name>.tmp`, room for the close run
/// reserved), which is then linked to `path` — never over an existing file
/// (`AlreadyExists`) — so a reader never sees a chunk without its whole
/// header. Returns two handles to it (one for positioned writes).
fn create_chunk(path: &Path, head: &[u8]) -> io::Result<(File, File)> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let made = (|| -> io::Result<(File, File)> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        reserve(&f, head.len() as u64, RESERVE_LEN)?;
        f.write_all(head)?;
        let handle = f.try_clone()?;
        match std::fs::hard_link(&tmp, path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Err(e),
            // A file system without hard links: a rename, if the name is free.
            Err(_) if !path.exists() => std::fs::rename(&tmp, path)?,
            Err(e) => return Err(e),
        }
        Ok((handle, f))
    })();
    let _ = std::fs::remove_file(&tmp);
    made
}
