//! `qtrace convert`: trace files to CTF 1.8 (babeltrace2, Trace Compass),
//! Perfetto's protobuf trace (Perfetto's UI and trace processor) or Chrome
//! Trace Event JSON (Perfetto, chrome://tracing).

use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::time::Duration;

use clap::ValueEnum;
use indicatif::{ProgressBar, ProgressStyle};
use qtrace::classes::{semaphore, system};
use qtrace::combine::{is_combine, Names, NAME_EVENT, NAME_EVENT_ID, NAME_SOURCE, NAME_TASK};
use qtrace::export::chrome::ChromeWriter;
use qtrace::export::ctf::CtfWriter;
use qtrace::export::perfetto::PerfettoWriter;
use qtrace::export::split::SplitByTime;
use qtrace::export::{ConvertStats, EventSink};
use qtrace::reader::{Completeness, MergedReader, ReadError, TraceReader};
use qtrace::Event;

use crate::spine::format::parse_time;
use crate::spine::io::{
    ends, gather_names, is_cut, is_cut_error, read_status, report_cuts, Reading,
};
use crate::spine::json::JsonObject;
use crate::spine::staged::Staged;
use crate::spine::Exit;

/// Any failure of the command: the message says what to do.
type Failure = Box<dyn std::error::Error>;

/// The output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A CTF 1.8 trace directory (metadata + one stream file per source).
    Ctf,
    /// One Chrome Trace Event JSON file.
    Chrome,
    /// One Perfetto protobuf trace file (TrackEvent packets in zlib-compressed
    /// chunks, as Perfetto itself writes them: 30 to 50 times smaller than
    /// Chrome JSON; see --uncompressed).
    Perfetto,
    /// Parquet tables (events, losses, payloads, streams, jobs; FORMAT.md 7) in
    /// the folder OUT: DuckDB, ClickHouse, pyarrow, polars and Spark read
    /// them. Each file is one run; a folder that holds tables already gets
    /// a new part of each (parts are never overwritten).
    Parquet,
}

/// Arguments of `qtrace convert`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The output format.
    #[arg(long, value_enum)]
    pub to: Format,
    /// Trace files of one run (one per queue); their events are merged in time order.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Output: a folder (ctf, parquet) or a file.
    ///
    /// Where to write: a new or empty directory for `ctf`, a file for
    /// `chrome` and `perfetto`, a new or empty directory for `parquet` (its
    /// tables appear there together once whole; a killed conversion leaves
    /// nothing there).
    #[arg(long, short)]
    pub out: PathBuf,
    /// Write one file per time slice of this length.
    ///
    /// Write one file per time slice of this length (`chrome` and
    /// `perfetto`): OUT's name plus `-0000`, `-0001`… (the slice's number
    /// since the clock origin) before its extension; each file opens on its own.
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub split: Option<u64>,
    /// perfetto: write the packets uncompressed.
    ///
    /// `perfetto` only: write the packets as they are, without Perfetto's
    /// `compressed_packets` chunks (5 to 10 times larger), for tools that cannot
    /// inflate them.
    #[arg(long)]
    pub uncompressed: bool,
    /// Print a JSON summary on stdout.
    ///
    /// At the end, one JSON object on one line of standard output (the
    /// messages stay on standard error): `to`, `out`, `exit_status`,
    /// `error` (null, or why nothing was converted), `files` (inputs
    /// given), `events` (converted, loss records excepted), `lost` (events
    /// the loss records count), `loss_records` (hoops records; Parquet:
    /// losses rows), `sources` (0 for parquet), `unknown_events`,
    /// `damaged` (inputs read up to a damage), `incomplete` (inputs cut
    /// short or whose close record disagrees with them).
    #[arg(long)]
    pub json: bool,
}

/// Chrome JSON above this many events draws a warning.
const CHROME_WARN_EVENTS: u64 = 1_000_000;
/// Chrome JSON above this many bytes draws a warning.
const CHROME_WARN_BYTES: u64 = 100 * 1_000_000;

/// The file of time slice `part` of `out`: `trace.json` → `trace-0003.json`.
fn part_path(out: &std::path::Path, part: u64) -> PathBuf {
    let stem = out
        .file_stem()
        .map_or_else(Default::default, |s| s.to_string_lossy().into_owned());
    let name = match out.extension() {
        Some(ext) => format!("{stem}-{part:04}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{part:04}"),
    };
    out.with_file_name(name)
}

/// Opens a trace file; also returns how many records it holds (for the
/// progress bar only: a file whose size cannot be read counts none).
fn open(path: &PathBuf) -> Result<(TraceReader, u64), Failure> {
    let reader = TraceReader::open(path)?;
    let size = std::fs::metadata(path).map_or(0, |m| m.len());
    let records = size.saturating_sub(reader.header_len()) / Event::SIZE as u64;
    Ok((reader, records))
}

fn progress(total_records: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total_records);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} events ({eta} left)",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// What a conversion did: its counts, and the damage found in the inputs
/// (each damaged file contributes the events before its damage).
pub struct Outcome {
    /// The converter's counts.
    pub stats: ConvertStats,
    /// Read errors, at most one per input file.
    pub damaged: Vec<ReadError>,
    /// Each input's completeness, in the order of the files given.
    pub ends: Vec<Option<Completeness>>,
}

/// Events a batch carries from the reading thread to the converting one.
const BATCH: usize = 4096;

/// Batches in flight between the two threads.
const BATCHES: usize = 4;

/// Feeds the merged inputs into `sink`, ticking the progress bar. A damaged
/// input stops at its damage (the reader yields one error, then ends); the
/// others go on, and the output is finished either way, so it stays valid.
///
/// The inputs are read (blocks decoded, files merged in time order) on a
/// thread of their own, which hands the events over in batches of
/// [`BATCH`], in order: the converting thread only converts (a quarter of
/// its time was reading; docs/benchmarks-history.md, "Perfetto: a chunk per sequence").
/// If no thread can be started, both happen here. `sink` is a type
/// parameter (its `push` inlined, not called through a vtable).
fn pump<S: EventSink, R: Read + Send>(
    sink: &mut S,
    events: &mut MergedReader<R>,
    bar: &ProgressBar,
) -> Result<Outcome, Failure> {
    pump_watching(sink, events, bar, false)?
        .ok_or_else(|| "the conversion stopped at a name record although none was watched".into())
}

/// [`pump`]; with `watch`, it stops at the first *late* name record (one
/// naming a subject a record before it used: [`Watch`]) without
/// finishing `sink`, and returns `None`. A sink that learns names as they
/// come writes the same bytes as one given every name in advance when no
/// name record is late: the names pass can be skipped (see [`convert`]).
fn pump_watching<S: EventSink, R: Read + Send>(
    sink: &mut S,
    events: &mut MergedReader<R>,
    bar: &ProgressBar,
    watch: bool,
) -> Result<Option<Outcome>, Failure> {
    let (to_sink, batches) = std::sync::mpsc::sync_channel::<Vec<Event>>(BATCHES);
    let (to_reader, spares) = std::sync::mpsc::sync_channel::<Vec<Event>>(BATCHES + 1);
    let mut n = 0u64;
    let (pushed, read) = std::thread::scope(|scope| {
        // Reborrowed for the scope: `events` is usable again after it.
        let inputs = &mut *events;
        let reader = std::thread::Builder::new()
            .name("qtrace-convert-read".into())
            .spawn_scoped(scope, move || {
                let mut watch = Watch::new(watch);
                let damaged = read_batches(inputs, &to_sink, &spares, &mut watch);
                (damaged, watch.late)
            });
        let Ok(reader) = reader else {
            return (None, (Vec::new(), false));
        };
        let mut pushed = Ok(());
        for mut batch in batches.iter() {
            for e in &batch {
                if let Err(err) = sink.push(e) {
                    pushed = Err(err);
                    break;
                }
            }
            if pushed.is_err() {
                break;
            }
            n += batch.len() as u64;
            bar.set_position(n);
            batch.clear();
            let _ = to_reader.try_send(batch);
        }
        // A failed push ends the loop: closing the channel ends the reader.
        drop(batches);
        // A panic on the reading thread is raised here: swallowed, it would
        // end the output early as if the inputs had ended.
        let read = reader
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (Some(pushed), read)
    });
    let (damaged, late) = match pushed {
        Some(pushed) => {
            pushed?;
            read
        }
        None => return pump_here(sink, events, bar, Watch::new(watch)),
    };
    if late {
        return Ok(None);
    }
    bar.set_position(n);
    Ok(Some(Outcome {
        stats: sink.finish()?,
        damaged,
        ends: Vec::new(),
    }))
}

/// Watches the records read for a *late* name record: one naming a
/// subject (a source, a task, an event id) that a record before it already
/// used. Until its first name record a subject is unnamed for a writer
/// learning names as they come and named for one given every name in
/// advance, so the two write the same bytes exactly when no subject is
/// used before a name record naming it. "Used" is a superset of what the
/// Perfetto writer names: every record's source and event id, and the task
/// argument of the system and semaphore classes (their task tracks and
/// `task N` slices). A file that starts with its names prologue (FORMAT.md
/// 1.8), holds no name record, or names each subject before using it (a
/// task named when created) has none.
struct Watch {
    on: bool,
    /// Sources, event ids and tasks used so far (indexed below
    /// [`Used::DENSE`], hashed above).
    sources: Used,
    ids: Used,
    tasks: Used,
    /// The subject of the name run each source is writing, from its begin
    /// record (a run's later records carry payload only).
    pending: std::collections::HashMap<u32, (u8, u64)>,
    /// A late name record was read (the reading stopped there).
    late: bool,
}

/// A set of numbers: a bit per number below [`Used::DENSE`] (a fixed
/// table: a few instructions a record on the reading thread), hashed above.
struct Used {
    dense: Box<[u64; (Used::DENSE / 64) as usize]>,
    sparse: std::collections::HashSet<u64>,
}

impl Default for Used {
    fn default() -> Self {
        Used {
            dense: Box::new([0; (Used::DENSE / 64) as usize]),
            sparse: std::collections::HashSet::new(),
        }
    }
}

impl Used {
    const DENSE: u64 = 1 << 16;

    #[inline(always)]
    fn insert(&mut self, v: u64) {
        if v < Self::DENSE {
            self.dense[(v / 64) as usize] |= 1 << (v % 64);
        } else {
            self.sparse.insert(v);
        }
    }

    fn contains(&self, v: u64) -> bool {
        if v < Self::DENSE {
            self.dense[(v / 64) as usize] & (1 << (v % 64)) != 0
        } else {
            self.sparse.contains(&v)
        }
    }
}

/// `flags` bit 13 of a combine record: the run's begin record (FORMAT.md 1.8).
const RUN_BEGIN: u16 = 0x2000;

impl Watch {
    fn new(on: bool) -> Self {
        Watch {
            on,
            sources: Used::default(),
            ids: Used::default(),
            tasks: Used::default(),
            pending: std::collections::HashMap::new(),
            late: false,
        }
    }

    /// Whether `e` is a late name record (remembered in `late`).
    #[inline(always)]
    fn late(&mut self, e: &Event) -> bool {
        if !self.on {
            return false;
        }
        if is_combine(e) && e.id == NAME_EVENT {
            if e.flags & RUN_BEGIN != 0 {
                let a = e.args[1];
                self.pending
                    .insert(e.source, ((a >> 56) as u8, a & ((1 << 56) - 1)));
            }
            // Checked at every record of the run: the name is learned at
            // its last one.
            if let Some(&(kind, subject)) = self.pending.get(&e.source) {
                let used = match kind {
                    NAME_SOURCE => self.sources.contains(subject),
                    NAME_TASK => self.tasks.contains(subject),
                    NAME_EVENT_ID => self.ids.contains(subject),
                    _ => false,
                };
                self.late |= used;
            }
            return self.late;
        }
        self.sources.insert(u64::from(e.source));
        self.ids.insert(u64::from(e.id.0));
        let id = e.id.0;
        if (system::CREATE.0..=system::DISABLE.0).contains(&id)
            || (semaphore::WAIT.0..=semaphore::SIGNAL.0).contains(&id)
        {
            self.tasks.insert(e.args[0]);
        }
        false
    }
}

/// The reading thread of [`pump`]: sends the events in batches (reusing
/// the buffers sent back) until the inputs end, `watch` sees a late name
/// record, or the converting thread stops listening; returns the inputs'
/// read errors.
fn read_batches<R: Read>(
    events: &mut MergedReader<R>,
    to_sink: &std::sync::mpsc::SyncSender<Vec<Event>>,
    spares: &std::sync::mpsc::Receiver<Vec<Event>>,
    watch: &mut Watch,
) -> Vec<ReadError> {
    let mut damaged = Vec::new();
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        // One input's events come from its reader's block a run at a time
        // ([`MergedReader::read_buffered`]: no value returned per event).
        let end = loop {
            let from = batch.len();
            if events.read_buffered(&mut batch, BATCH - from) > 0 {
                if batch[from..].iter().any(|e| watch.late(e)) {
                    return damaged;
                }
            } else {
                match events.next_with_input() {
                    Some((_, Ok(e))) => {
                        if watch.late(&e) {
                            return damaged;
                        }
                        batch.push(e);
                    }
                    Some((_, Err(err))) => damaged.push(err),
                    None => break true,
                }
            }
            if batch.len() == BATCH {
                break false;
            }
        };
        if !batch.is_empty() && to_sink.send(batch).is_err() {
            return damaged;
        }
        if end {
            return damaged;
        }
        batch = spares
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BATCH));
    }
}

/// [`pump_watching`] on one thread (when no reading thread can be started).
fn pump_here<S: EventSink, R: Read>(
    sink: &mut S,
    events: &mut MergedReader<R>,
    bar: &ProgressBar,
    mut watch: Watch,
) -> Result<Option<Outcome>, Failure> {
    let mut n = 0u64;
    let mut damaged = Vec::new();
    let mut buffer = Vec::with_capacity(BATCH);
    loop {
        buffer.clear();
        if events.read_buffered(&mut buffer, BATCH) == 0 {
            match events.next_with_input() {
                Some((_, Ok(e))) => buffer.push(e),
                Some((_, Err(err))) => {
                    damaged.push(err);
                    continue;
                }
                None => break,
            }
        }
        for e in &buffer {
            if watch.late(e) {
                return Ok(None);
            }
            sink.push(e)?;
            n += 1;
            if n.is_multiple_of(4096) {
                bar.set_position(n);
            }
        }
    }
    bar.set_position(n);
    Ok(Some(Outcome {
        stats: sink.finish()?,
        damaged,
        ends: Vec::new(),
    }))
}

/// Runs `qtrace convert` and reports on stderr.
/// Exit status [`Exit::BadInput`] when an input cannot be opened, is not a
/// qtrace trace or is damaged (as for `qtrace dump` and `qtrace stats`),
/// [`Exit::Cut`] when one is cut short, [`Exit::Failed`] when the output
/// cannot be written.
pub fn run(args: &Args) -> Exit {
    let mut json = JsonObject::new()
        .str(
            "to",
            args.to.to_possible_value().as_ref().map(|v| v.get_name()),
        )
        .str("out", Some(&args.out.display().to_string()));
    let (status, error, stats, damaged, incomplete) = match report(args) {
        Ok((status, stats, damaged, incomplete)) => (status, None, stats, damaged, incomplete),
        Err((status, e)) => (status, Some(e), ConvertStats::default(), 0, 0),
    };
    if args.json {
        json = json
            .u64("exit_status", status.code().into())
            .str("error", error.as_deref())
            .u64("files", args.files.len() as u64)
            .u64("events", stats.events)
            .u64("lost", stats.lost)
            .u64("loss_records", stats.hoops)
            .u64("sources", stats.sources)
            .u64("unknown_events", stats.unknown)
            .u64("damaged", damaged)
            .u64("incomplete", incomplete);
        println!("{}", json.finish());
    }
    status
}

/// Converts and reports on stderr: the status, the counts, the damaged
/// and the incomplete inputs; or the status and the error.
fn report(args: &Args) -> Result<(Exit, ConvertStats, u64, u64), (Exit, String)> {
    match convert(args) {
        Ok(Outcome {
            stats,
            damaged,
            ends,
        }) => {
            for err in &damaged {
                eprintln!("qtrace convert: {err}; the events before it were converted");
            }
            report_cuts("qtrace convert", &args.files, &ends);
            if args.to == Format::Parquet {
                eprintln!(
                    "qtrace convert: {} events ({} lost, in {} losses rows) into the tables events, losses, payloads, streams and jobs under {}",
                    stats.events,
                    stats.lost,
                    stats.hoops,
                    args.out.display()
                );
                let incomplete = incomplete(&args.files, &ends, &damaged);
                let status = read_status(Reading::of(&damaged), &ends);
                let damaged = damaged.iter().filter(|e| !is_cut_error(e)).count() as u64;
                return Ok((status, stats, damaged, incomplete));
            }
            eprintln!(
                "qtrace convert: {} events ({} lost, in {} hoops records) from {} sources into {}",
                stats.events,
                stats.lost,
                stats.hoops,
                stats.sources,
                args.out.display()
            );
            let incomplete = incomplete(&args.files, &ends, &damaged);
            let damaged_n = damaged.iter().filter(|e| !is_cut_error(e)).count() as u64;
            let status = read_status(Reading::of(&damaged), &ends);
            Ok((status, stats, damaged_n, incomplete))
        }
        Err(e) => {
            eprintln!("qtrace convert: {e}");
            let status = if e.is::<ReadError>() {
                Exit::BadInput
            } else {
                Exit::Failed
            };
            Err((status, e.to_string()))
        }
    }
}

/// Inputs cut short: at a record boundary (their completeness) or inside
/// a record (a read error of that file that is a cut).
fn incomplete(files: &[PathBuf], ends: &[Option<Completeness>], errors: &[ReadError]) -> u64 {
    let cut_inside = |file: &PathBuf| {
        errors.iter().any(|e| {
            is_cut_error(e) && matches!(e, ReadError::Format { path: Some(p), .. } if p == file)
        })
    };
    files
        .iter()
        .zip(ends)
        .filter(|(f, e)| is_cut(**e) || cut_inside(f))
        .count() as u64
}

/// A CTF trace goes to a new or empty directory (it is renamed there once
/// whole, which replaces an empty directory).
fn ctf_target_usable(out: &std::path::Path) -> Result<(), Failure> {
    let why = match std::fs::read_dir(out) {
        Ok(mut entries) => entries.next().map(|_| "the directory is not empty"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(_) if out.exists() => Some("it is not a directory"),
        Err(_) => None,
    };
    if let Some(why) = why {
        return Err(format!(
            "cannot write a CTF trace into {}: {why}; give a new or empty directory (babeltrace2 would read stale stream files)",
            out.display()
        )
        .into());
    }
    Ok(())
}

/// Converts the files named in `args` to Parquet tables.
fn convert_parquet(args: &Args) -> Result<Outcome, Failure> {
    if args.split.is_some() || args.uncompressed {
        return Err("--split and --uncompressed do not apply to --to parquet: the tables hold every event once; select a time range with a query on the time column".into());
    }
    let mut inputs = Vec::with_capacity(args.files.len());
    let mut total = 0;
    for path in &args.files {
        let (reader, records) = open(path)?;
        total += records;
        inputs.push((path.clone(), reader));
    }
    let bar = progress(total);
    let report = qtrace_store::convert(inputs, &args.out, &mut |n| bar.set_position(n))?;
    bar.finish_and_clear();
    for stage in &report.cleaned {
        eprintln!(
            "qtrace convert: removed {}, the stage folder of a conversion into {} that was killed before its tables were whole",
            stage.display(),
            args.out.display()
        );
    }
    Ok(Outcome {
        stats: ConvertStats {
            events: report.events,
            lost: report.lost,
            hoops: report.loss_rows,
            ..ConvertStats::default()
        },
        damaged: report.damaged,
        ends: report.ends,
    })
}

/// Opens the files named in `args`, merged in time order; also returns how
/// many records they hold (for the progress bar).
fn open_inputs(args: &Args) -> Result<(MergedReader, u64), Failure> {
    let mut inputs: Vec<TraceReader> = Vec::with_capacity(args.files.len());
    let mut total = 0;
    for path in &args.files {
        let (input, records) = open(path)?;
        if let Some(first) = inputs.first() {
            if first.catalog() != input.catalog() {
                return Err(format!(
                    "{} names its events differently from {}: convert files of different tracers separately",
                    path.display(),
                    args.files[0].display()
                )
                .into());
            }
        }
        total += records;
        inputs.push(input);
    }
    Ok((MergedReader::new(inputs), total))
}

/// Converts the files named in `args`.
pub fn convert(args: &Args) -> Result<Outcome, Failure> {
    if args.to == Format::Parquet {
        return convert_parquet(args);
    }
    let (mut merged, total) = open_inputs(args)?;
    let base = merged.base_unix_ns();
    let catalog = merged
        .readers()
        .next()
        .map(|r| r.catalog().clone())
        .unwrap_or_default();
    let bar = progress(total);
    if args.uncompressed && args.to != Format::Perfetto {
        return Err(
            "--uncompressed applies to --to perfetto only; drop it for CTF and Chrome JSON".into(),
        );
    }
    // Written beside and renamed once whole: a failed or killed conversion
    // leaves nothing at the paths the user named.
    let staged = std::cell::RefCell::new(Staged::new());
    let create = |path: &std::path::Path| staged.borrow_mut().create(path);
    let outcome = match (args.to, args.split) {
        // Written above (a folder of tables, no single output stream).
        (Format::Parquet, _) => return convert_parquet(args),
        (Format::Ctf, Some(_)) => {
            return Err("--split applies to --to chrome and --to perfetto; convert a time range of a CTF trace with babeltrace2's --begin/--end".into())
        }
        (Format::Ctf, None) => {
            ctf_target_usable(&args.out)?;
            let tmp = staged.borrow_mut().beside(&args.out);
            let mut w = CtfWriter::create(&tmp, &catalog, base)?;
            pump(&mut w, &mut merged, &bar)?
        }
        (Format::Chrome, None) => {
            // Names first (a circular queue's snapshot may hold its name
            // records after the events they name): one pass over the name
            // records of every file.
            let names = gather_names(&args.files);
            let mut w = ChromeWriter::new(&catalog, base, create(&args.out)?)?.with_names(names);
            pump(&mut w, &mut merged, &bar)?
        }
        (Format::Perfetto, None) => {
            // Names first, as for Chrome (task slices and tracks are named
            // from their first packet on), unless no name record names a
            // subject used before it (`Watch`: a file starting with its
            // names prologue, FORMAT.md 1.8, holding none, or naming each
            // task before it runs): then the writer learning the names as
            // they come writes the same bytes, and the names pass (8 % of
            // the conversion) is skipped. A late name record stops that
            // first try, and the conversion starts again after the names
            // pass. Several files, or an output that
            // cannot be written twice (a device or a pipe), take the names
            // pass first.
            let tmp = staged.borrow_mut().beside(&args.out);
            let file = |tmp: &std::path::Path| {
                std::fs::File::create(tmp).map_err(|e| qtrace::Error::io("create", tmp, e))
            };
            let perfetto = |names, tmp| -> Result<_, Failure> {
                Ok(PerfettoWriter::new(&catalog, base, file(tmp)?)?
                    .with_names(names)
                    .with_compression(!args.uncompressed))
            };
            let first_try = args.files.len() == 1 && tmp != args.out;
            let tried = if first_try {
                let mut w = perfetto(Names::new(), &tmp)?;
                pump_watching(&mut w, &mut merged, &bar, true)?
            } else {
                None
            };
            match tried {
                Some(outcome) => outcome,
                None => {
                    if first_try {
                        merged = open_inputs(args)?.0;
                    }
                    let mut w = perfetto(gather_names(&args.files), &tmp)?;
                    pump(&mut w, &mut merged, &bar)?
                }
            }
        }
        (Format::Chrome, Some(window)) => {
            let mut w = SplitByTime::new(window, |part, _| {
                ChromeWriter::new(&catalog, base, create(&part_path(&args.out, part))?)
            })?;
            pump(&mut w, &mut merged, &bar)?
        }
        (Format::Perfetto, Some(window)) => {
            let mut w = SplitByTime::new(window, |part, _| {
                Ok(
                    PerfettoWriter::new(&catalog, base, create(&part_path(&args.out, part))?)?
                        .with_compression(!args.uncompressed),
                )
            })?;
            pump(&mut w, &mut merged, &bar)?
        }
    };
    staged.into_inner().commit()?;
    if args.to == Format::Chrome && args.split.is_none() {
        let bytes = std::fs::metadata(&args.out).map_or(0, |m| m.len());
        let events = outcome.stats.events;
        if events > CHROME_WARN_EVENTS || bytes > CHROME_WARN_BYTES {
            eprintln!(
                "qtrace convert: warning: {events} events, {} MB of Chrome JSON: Perfetto's UI may run out of memory on it; use --to perfetto (30 to 50 times smaller) or --split TIME",
                bytes / 1_000_000
            );
        }
    }
    bar.finish_and_clear();
    let mut outcome = outcome;
    outcome.ends = ends(&merged);
    Ok(outcome)
}
