//! Inputs and outputs of the subcommands: opening trace files (one by one,
//! or merged in time order through [`qtrace::reader::MergedReader`]),
//! reading them with damage reported, standard output that a reader may
//! close early, output files, and the one place that says which files were
//! cut short and what the exit status is.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use qtrace::combine::Names;
use qtrace::reader::{Completeness, MergedReader, ReadError, TraceReader};
use qtrace::Event;

use super::Exit;

/// Runs `write` on a buffered standard output and flushes it. Its `Ok` is
/// the exit status; a reader that stops early (`qtrace stats f | head`) ends
/// the command quietly with success; any other write error is reported and
/// is [`Exit::Failed`].
pub fn with_stdout(write: impl FnOnce(&mut dyn Write) -> io::Result<Exit>) -> Exit {
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    match write(&mut out).and_then(|status| out.flush().map(|()| status)) {
        Ok(status) => status,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Exit::Ok,
        Err(e) => {
            eprintln!("qtrace: cannot write the output: {e}");
            Exit::Failed
        }
    }
}

/// The label a file is shown with: its file name.
pub fn label(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// One open input file.
pub struct Input {
    /// The label shown for the file ([`label`]).
    pub label: String,
    /// Its path.
    pub path: PathBuf,
    /// The reader.
    pub reader: TraceReader,
}

/// What `path` is when it is a FIFO or a socket (which a reader would wait
/// on, or read as a stream), `None` for anything else.
pub fn not_a_file(path: &Path) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let t = std::fs::metadata(path).ok()?.file_type();
    if t.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        None
    }
}

/// Opens one trace file. A FIFO (named pipe) is refused with a message at
/// once: opening one blocks until a writer comes, and a trace is read more
/// than once (names first, then events), which a pipe cannot give.
///
/// # Errors
/// [`ReadError::Open`] for a FIFO or a socket (saying what to do), else
/// what [`TraceReader::open`] returns.
pub fn open_trace(path: &Path) -> Result<TraceReader, ReadError> {
    if let Some(what) = not_a_file(path) {
        return Err(ReadError::Open {
            path: path.to_path_buf(),
            source: io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "it is {what}, not a trace file; save the stream to a file first (cat {} > trace.qtr) and read that",
                    path.display()
                ),
            ),
        });
    }
    TraceReader::open(path).map_err(|e| match e {
        ReadError::Format { .. } if is_ring_file(path) => ReadError::Open {
            path: path.to_path_buf(),
            source: io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "it is a ring file (what a fixed or circular queue keeps while its process runs), not a trace: run `qtrace recover {} --out DIR` to turn it into one",
                    path.display()
                ),
            ),
        },
        e => e,
    })
}

/// The first bytes of a ring file (FORMAT.md, "Ring files": the header's
/// magic).
const RING_MAGIC: &[u8; 8] = b"qtrRING\0";

/// Whether `path` starts with a ring file's magic.
pub fn is_ring_file(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && &head == RING_MAGIC
}

/// For a trace file cut short: what to do when the ring file of its queue
/// lies beside it (the `.qtr` a fixed or circular queue left when its
/// process died holds only the header; its events are in the `.ring`).
pub fn ring_hint(path: &Path) -> Option<String> {
    let ring = path.with_extension("ring");
    is_ring_file(&ring).then(|| {
        format!(
            "its queue's ring file {} is beside it, with the events of a process that did not shut down: run `qtrace recover {} --out DIR`",
            ring.display(),
            ring.display()
        )
    })
}

/// Opens every file, one reader each; the error of the first bad one.
pub fn open_all(files: &[PathBuf]) -> Result<Vec<Input>, ReadError> {
    files
        .iter()
        .map(|path| {
            Ok(Input {
                label: label(path),
                path: path.clone(),
                reader: open_trace(path)?,
            })
        })
        .collect()
}

/// Opens every file that opens: (their paths and readers, the errors of
/// the others), so one bad file does not keep the others from being read.
pub fn open_each(files: &[PathBuf]) -> (Vec<PathBuf>, Vec<TraceReader>, Vec<ReadError>) {
    let (mut paths, mut readers, mut errors) = (Vec::new(), Vec::new(), Vec::new());
    for path in files {
        match open_trace(path) {
            Ok(r) => {
                paths.push(path.clone());
                readers.push(r);
            }
            Err(e) => errors.push(e),
        }
    }
    (paths, readers, errors)
}

/// Opens every file and merges them in time order (times in ns since the
/// earliest clock origin); the error of the first bad one.
pub fn open_merged(files: &[PathBuf]) -> Result<MergedReader, ReadError> {
    let readers = files
        .iter()
        .map(|p| open_trace(p))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(MergedReader::new(readers))
}

/// Reads `merged` to its end, calling `f(input, event)` for every event in
/// time order; reports each damaged input on stderr. Returns whether every
/// input was read to its end without damage; the error is `f`'s.
///
/// Events already read ahead come a batch at a time
/// ([`MergedReader::read_buffered`] into a buffer of [`BUFFERED`] events,
/// in the cache): handed over one by one, each went out to the stack and
/// was loaded back wider than it was stored, a stalled load an event
/// (docs/benchmarks-history.md, "The analysis's reader in batches").
/// Inlined into each subcommand (it is the per-event loop): out of the
/// subcommand's codegen unit, `dump` of one file took measurably longer.
#[inline]
pub fn read_merged<R: io::Read>(
    merged: &mut MergedReader<R>,
    mut f: impl FnMut(usize, &Event) -> io::Result<()>,
) -> io::Result<Reading> {
    let mut reading = Reading::default();
    let mut buffer = Vec::with_capacity(BUFFERED);
    loop {
        buffer.clear();
        if merged.read_buffered(&mut buffer, BUFFERED) > 0 {
            // `read_buffered` reads one input only: input 0.
            for e in &buffer {
                f(0, e)?;
            }
            continue;
        }
        match merged.next_with_input() {
            Some((i, Ok(e))) => f(i, &e)?,
            Some((_, Err(err))) => {
                eprintln!("qtrace: {err}");
                reading.note(&err);
            }
            None => return Ok(reading),
        }
    }
}

/// Events [`read_merged`] takes from a reader at once: 32 KiB, in the
/// first-level cache while `f` goes through them.
pub const BUFFERED: usize = 1024;

/// What reading inputs to their ends met besides events: damage, or a
/// file cut inside a record (a cut at a record boundary shows in the
/// file's completeness instead).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reading {
    /// An input is damaged (exit status 2).
    pub damaged: bool,
    /// An input ended inside a record or block: cut short (exit status 3).
    pub cut: bool,
}

impl Reading {
    /// Counts `err`: a cut ([`is_cut_error`]) or damage.
    pub fn note(&mut self, err: &ReadError) {
        if is_cut_error(err) {
            self.cut = true;
        } else {
            self.damaged = true;
        }
    }

    /// What `errors` make of a reading.
    pub fn of<'a>(errors: impl IntoIterator<Item = &'a ReadError>) -> Self {
        let mut r = Reading::default();
        for e in errors {
            r.note(e);
        }
        r
    }
}

/// Whether `err` is the end of a file cut inside a record or a block (it
/// ends before a record it announces): the same kind of damage as a cut
/// at a record boundary, "CUT SHORT" (exit status 3), not a damaged file.
pub fn is_cut_error(err: &ReadError) -> bool {
    err.wire_error()
        .is_some_and(qtrace::wire::WireError::is_truncated)
}

/// Every input's completeness, in input order (`None` for one not read to
/// its end).
pub fn ends<R: io::Read>(merged: &MergedReader<R>) -> Vec<Option<Completeness>> {
    (0..merged.len()).map(|i| merged.completeness(i)).collect()
}

/// Whether `c` is not complete: the file is cut short (exit status
/// [`Exit::Cut`]) or its close record disagrees with it ([`is_mismatch`]:
/// [`Exit::BadInput`], which wins).
pub fn is_cut(c: Option<Completeness>) -> bool {
    c.is_some_and(|c| c.is_complete() == Some(false))
}

/// Whether `c` makes the exit status [`Exit::BadInput`]: the file's close
/// record disagrees with it (DAMAGED: records were removed or added).
pub fn is_mismatch(c: Option<Completeness>) -> bool {
    matches!(c, Some(Completeness::Mismatch { .. }))
}

/// Reports each file of `files` that was cut short on stderr, after
/// `command` (with the ring file beside it, if any: [`ring_hint`]).
pub fn report_cuts(command: &str, files: &[PathBuf], ends: &[Option<Completeness>]) {
    for (path, end) in files.iter().zip(ends) {
        if let Some(c) = end.filter(|c| is_cut(Some(*c))) {
            eprintln!("{command}: {}: {c}", path.display());
            if let Some(hint) = ring_hint(path) {
                eprintln!("{command}: {}: {hint}", path.display());
            }
        }
    }
}

/// The exit status of a command that read trace files: [`Exit::BadInput`]
/// when one was damaged (a bad record, or a close record that disagrees),
/// [`Exit::Cut`] when one was cut short (inside a
/// record, or at a record boundary: its completeness says so),
/// [`Exit::Ok`] otherwise.
pub fn read_status(reading: Reading, ends: &[Option<Completeness>]) -> Exit {
    let status = if reading.damaged || ends.iter().any(|e| is_mismatch(*e)) {
        Exit::BadInput
    } else {
        Exit::Ok
    };
    if reading.cut || ends.iter().any(|e| is_cut(*e)) {
        status.and(Exit::Cut)
    } else {
        status
    }
}

/// [`report_cuts`] then [`read_status`].
pub fn report_and_status(
    command: &str,
    files: &[PathBuf],
    reading: Reading,
    ends: &[Option<Completeness>],
) -> Exit {
    report_cuts(command, files, ends);
    read_status(reading, ends)
}

/// The names the name records of `files` give (sources, tasks, event ids),
/// gathered in a first pass over their records (a circular queue's snapshot
/// may hold a name record after the events it names). A file that cannot be
/// read gives none (the pass that shows the events reports it). Records are
/// decoded from the reader's block (`next_buffered`): this pass costs about
/// what `qtrace stats` does.
pub fn gather_names(files: &[PathBuf]) -> Names {
    Names::gather(files.iter().flat_map(|file| records(file)))
}

/// The records of `file`, up to its end or its first damage.
fn records(file: &Path) -> impl Iterator<Item = Event> {
    let mut reader = open_trace(file).ok();
    std::iter::from_fn(move || {
        let r = reader.as_mut()?;
        if let Some(e) = r.next_buffered() {
            return Some(e);
        }
        // Damage: the events pass reports it; names stop here.
        r.next()?.ok()
    })
}
