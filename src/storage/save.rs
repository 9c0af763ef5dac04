//! What the in-memory queues share for saving: hoops records from ticket
//! gaps, the default file name, writing a trace file, and the status cell.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use parking_lot::Mutex;

use crate::classes::tracer::HOOPS;
use crate::model::event::Event;
use crate::model::event::TRACER_SOURCE;
use crate::model::handle::QueueHandle;
use crate::queue::config_error::ConfigError;
use crate::queue::queue_trait::{QueueContext, QueueStatus};
use crate::ring::Ticketed;

use crate::wire::{QueueTotals, TraceHeader, TraceWriter};

/// A hoops record: `lost` events were lost at `time` by queue `queue`.
#[inline]
pub(crate) fn hoops(time: u64, lost: u64, queue: QueueHandle) -> Event {
    Event::new(time, HOOPS, TRACER_SOURCE, [lost, queue.0 as u64])
}

/// `records` (sorted by ticket) as a trace, with a hoops record wherever
/// tickets are missing: before the first record for tickets `0..first`, between
/// records for each gap, and after the last for tickets up to `end` (stamped
/// with the last record's time, or `now()` when there is none). The hoops
/// records add up to `end - records.len()` (when `end` is past the last ticket).
pub(crate) fn with_hoops(
    records: &[Ticketed],
    end: u64,
    queue: QueueHandle,
    now: impl FnOnce() -> u64,
) -> Vec<Event> {
    let mut out = Vec::with_capacity(records.len() + 2);
    let mut next = 0u64;
    let mut last_time = None;
    for r in records {
        if r.ticket > next {
            out.push(hoops(r.event.time, r.ticket - next, queue));
        }
        out.push(r.event);
        next = r.ticket + 1;
        last_time = Some(r.event.time);
    }
    if end > next {
        out.push(hoops(last_time.unwrap_or_else(now), end - next, queue));
    }
    out
}

/// `<output_dir>/queue<handle>-<type>.qtr`.
pub(crate) fn default_path(ctx: &QueueContext) -> PathBuf {
    ctx.output_dir
        .join(format!("queue{}-{}.qtr", ctx.handle, ctx.type_name))
}

/// Trace files this process holds locked, from the phase 2 that created
/// them until their queue saves: (path, the locked file).
static HELD: Mutex<Vec<(PathBuf, File)>> = Mutex::new(Vec::new());

/// Every trace file path this process has locked. `flock` cannot tell this
/// process's other open files from another process's, so a lock refused on
/// one of these paths is this process's own (another tracer of it writing
/// the same path): processes are kept apart, tracers of one process are
/// not (the later save wins, as before; RELIABILITY.md).
static OURS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Whether `file` is the file `path` names now.
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
        _ => false,
    }
}

/// Opens `path` to write a trace over it, holding its exclusive advisory
/// lock (`flock`) so two processes never overwrite each other's traces: the
/// file this process already holds for it (from phase 2), or the file there
/// (or a new one) once its lock is taken. Only then is it emptied. Not a
/// regular file (a device, a FIFO): opened as it is, without a lock.
///
/// # Errors
/// [`ConfigError::Io`] naming the path: the directory or the file cannot be
/// created, or another process holds the file's lock (it is writing a trace
/// there: a tracer or a receiver), which says to give another directory.
pub(crate) fn create_locked(path: &Path) -> Result<File, ConfigError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| ConfigError::io("create the directory of trace file", path, e))?;
    }
    let held = {
        let mut held = HELD.lock();
        let at = held.iter().position(|(p, _)| p == path);
        at.map(|i| held.swap_remove(i).1)
    };
    let mut file = match held.filter(|f| same_file(f, path)) {
        Some(f) => f,
        None => {
            let f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .open(path)
                .map_err(|e| ConfigError::io("create trace file", path, e))?;
            if f.metadata().is_ok_and(|m| m.file_type().is_file()) {
                match lock(&f) {
                    Ok(()) => {
                        let mut ours = OURS.lock();
                        if !ours.iter().any(|p| p == path) {
                            ours.push(path.to_path_buf());
                        }
                    }
                    // This process's own lock (another of its tracers).
                    Err(_) if OURS.lock().iter().any(|p| p == path) => {}
                    Err(e) => return Err(ConfigError::io("lock trace file", path, e)),
                }
            }
            f
        }
    };
    let regular = file.metadata().ok().filter(|m| m.file_type().is_file());
    if let Some(len) = regular.map(|m| m.len()) {
        // An empty file is not truncated: on ext4 a truncation to 0 makes
        // the close start writing the file back (its `auto_da_alloc`),
        // which a snapshot of a 1 M-event ring paid for on every new file.
        if len > 0 {
            file.set_len(0)
                .map_err(|e| ConfigError::io("empty trace file", path, e))?;
        }
        file.seek(SeekFrom::Start(0))
            .map_err(|e| ConfigError::io("empty trace file", path, e))?;
    }
    Ok(file)
}

/// Takes `file`'s exclusive lock without waiting. Held by another process:
/// an error that says what to do; a file system without locks: no error.
fn lock(file: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: the descriptor is `file`'s, open for the whole call; flock
    // touches no memory of ours.
    let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if r == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Err(io::Error::new(
            io::ErrorKind::WouldBlock,
            "another process is writing a trace there (it holds the file's lock); give this tracer another output directory (Config::with_output_dir) or the queue its own file",
        ))
    } else {
        Ok(())
    }
}

/// Writes a trace file: the queue's header, the names prologue (every name
/// the tracer recorded, FORMAT.md 1.8, stamped with the first event's time),
/// then `events`, then the close run (FORMAT.md 1.5) carrying `totals`,
/// stamped with the clock's time; in compact chunks (trace-file version 2,
/// FORMAT.md 1.11) when `compact`, else in 32-byte records. The file is
/// opened with [`create_locked`]: a trace another process is writing there
/// is never overwritten.
pub(crate) fn write_trace(
    path: &Path,
    ctx: &QueueContext,
    events: &[Event],
    totals: QueueTotals,
    compact: bool,
) -> Result<(), ConfigError> {
    let mut events = events.iter();
    let fill = |b: &mut Vec<Event>| b.extend(events.by_ref().take(BATCH));
    write_trace_from(path, ctx, fill, totals, compact).map(drop)
}

/// The header of a memory queue's trace file: the queue's, in compact
/// chunks or 32-byte records.
pub(crate) fn save_header(ctx: &QueueContext, compact: bool) -> TraceHeader {
    TraceHeader::for_queue(ctx).with_compact(compact)
}

/// Events handed to the writer at once by [`write_trace_from`] (32 KiB).
pub(crate) const BATCH: usize = 1024;

/// [`write_trace`] of the events `fill` gives, a batch at a time (a
/// merged snapshot, written as it is merged rather than gathered first):
/// each call appends to the empty batch it gets at most [`BATCH`] events,
/// none once they are all given. Returns the number of events written
/// (hoops records included, the prologue and the close run not).
pub(crate) fn write_trace_from(
    path: &Path,
    ctx: &QueueContext,
    mut fill: impl FnMut(&mut Vec<Event>),
    totals: QueueTotals,
    compact: bool,
) -> Result<u64, ConfigError> {
    let mut batch = Vec::with_capacity(BATCH);
    fill(&mut batch);
    let file = create_locked(path)?;
    // 1 MiB: a 1 M-event snapshot (32 MiB of 32-byte records) in 32 writes.
    let mut w = TraceWriter::new(
        BufWriter::with_capacity(1 << 20, file),
        &save_header(ctx, compact),
    )
    .map_err(|e| ConfigError::io("write the header of trace file", path, e))?;
    let first = batch.first().map_or_else(|| ctx.clock.now(), |e| e.time);
    w.write_events(&ctx.names.records(first))
        .map_err(|e| ConfigError::io("write trace file", path, e))?;
    let mut written = 0u64;
    while !batch.is_empty() {
        w.write_events(&batch)
            .map_err(|e| ConfigError::io("write trace file", path, e))?;
        written += batch.len() as u64;
        batch.clear();
        fill(&mut batch);
    }
    w.finish_with_close(ctx.clock.now(), totals)
        .map_err(|e| ConfigError::io("close trace file", path, e))?;
    Ok(written)
}

/// Creates a memory queue's trace file at phase 2 (its directory, then the
/// header), so that a directory that cannot be written fails
/// [`Tracer::activate`](crate::Tracer::activate) instead of the save at
/// shutdown. Until the queue saves, the file holds only a header whose flag
/// promises a close run, so it reads as cut short — the truth for a process
/// that dies before saving. The file stays locked (`flock`) until the queue
/// saves, so another process tracing into the same directory is refused
/// ([`create_locked`]) instead of overwriting it.
///
/// # Errors
/// [`ConfigError::Io`] naming the path and saying what to do.
pub(crate) fn create_at_activate(
    path: &Path,
    ctx: &QueueContext,
    compact: bool,
) -> Result<(), ConfigError> {
    let file = create_locked(path).map_err(with_hint)?;
    let keep = file
        .try_clone()
        .map_err(|e| with_hint(ConfigError::io("open trace file", path, e)))?;
    let w = TraceWriter::new(BufWriter::new(file), &save_header(ctx, compact))
        .map_err(|e| with_hint(ConfigError::io("write the header of trace file", path, e)))?;
    w.finish()
        .map_err(|e| with_hint(ConfigError::io("write the header of trace file", path, e)))?;
    HELD.lock().push((path.to_path_buf(), keep));
    Ok(())
}

/// Adds to an [`ConfigError::Io`] about a trace file what the user can do.
pub(crate) fn with_hint(e: ConfigError) -> ConfigError {
    match e {
        ConfigError::Io(mut e) => {
            e.source = std::io::Error::new(
                e.source.kind(),
                format!(
                    "{}; give the tracer a writable directory (Config::with_output_dir) or the queue a writable `file` parameter",
                    e.source
                ),
            );
            ConfigError::Io(e)
        }
        other => other,
    }
}

/// A queue's [`QueueStatus`], updated on the configuration path.
#[derive(Debug, Default)]
pub(crate) struct StatusCell(Mutex<QueueStatus>);

impl StatusCell {
    /// Records the outcome of writing `path`, passing the result through.
    pub(crate) fn record<T>(
        &self,
        path: &Path,
        result: Result<T, ConfigError>,
    ) -> Result<T, ConfigError> {
        let mut s = self.0.lock();
        match &result {
            Ok(_) => {
                if !s.files.iter().any(|f| f == path) {
                    s.files.push(path.to_path_buf());
                }
            }
            Err(e) => {
                s.io_errors += 1;
                s.last_error = Some(e.to_string());
            }
        }
        result
    }

    pub(crate) fn get(&self) -> QueueStatus {
        self.0.lock().clone()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::EventId;

    fn t(ticket: u64) -> Ticketed {
        Ticketed {
            ticket,
            event: Event::new(ticket * 10, EventId(0x0b), 0, [ticket, 0]),
        }
    }

    #[test]
    fn hoops_at_every_gap() {
        let q = QueueHandle(3);
        let got = with_hoops(&[t(2), t(3), t(6)], 9, q, || 999);
        assert_eq!(
            got,
            vec![
                hoops(20, 2, q),
                t(2).event,
                t(3).event,
                hoops(60, 2, q),
                t(6).event,
                hoops(60, 2, q),
            ]
        );
        assert_eq!(with_hoops(&[], 5, q, || 999), vec![hoops(999, 5, q)]);
        assert_eq!(with_hoops(&[], 0, q, || 999), vec![]);
        assert_eq!(with_hoops(&[t(0)], 1, q, || 999), vec![t(0).event]);
    }

    #[test]
    fn hoops_record_layout() {
        let h = hoops(5, 7, QueueHandle(2));
        assert_eq!(h.id, HOOPS);
        assert_eq!(h.source, TRACER_SOURCE);
        assert_eq!(h.args, [7, 2]);
        assert_eq!(h.time, 5);
    }
}

/// The context an in-memory queue writes its snapshots with (and the panic
/// save, which snapshots): the one `create` got, replaced by the one each
/// `activate` gets. The tracer's catalog is final at phase 2 (classes are
/// defined in phase 1 only), so a snapshot taken once the queue is active
/// lists every class, also those defined after the queue was created; one
/// taken in phase 1 lists the classes defined when it was taken' s queue
/// was created — see `FileContext::update`.
#[derive(Debug)]
pub(crate) struct FileContext(Mutex<QueueContext>);

impl FileContext {
    /// The context of `create`.
    pub(crate) fn new(ctx: &QueueContext) -> Self {
        FileContext(Mutex::new(ctx.clone()))
    }

    /// Takes the context of `activate` (the catalog frozen for phase 2).
    pub(crate) fn update(&self, ctx: &QueueContext) {
        *self.0.lock() = ctx.clone();
    }

    /// The current context (a clone: the lock is held only to copy it).
    pub(crate) fn get(&self) -> QueueContext {
        self.0.lock().clone()
    }
}
