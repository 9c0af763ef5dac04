//! Trace files to Parquet tables (`qtrace convert --to parquet`): every
//! file is one run; its events, losses and payloads go to part 0 of each
//! table, written in a stage folder beside the output folder and renamed to
//! it once whole (`stage.rs`): the tables appear together or not at all, and
//! a folder that holds anything is refused (a second conversion into it
//! would double its rows).

use std::path::{Path, PathBuf};

use qtrace::combine::Names;
use qtrace::reader::{Completeness, MergedReader, ReadError, TraceReader};
use qtrace::Event;

use crate::columns::StreamRow;
use crate::error::StoreError;
use crate::partset::PartSet;
use crate::run::{Run, RunInfo};
use crate::stage::Stage;

/// Events taken from the reader at once: 32 KiB, in the first-level cache
/// while the rows take them.
const READ_BUFFER: usize = 1024;

/// What a conversion wrote.
#[derive(Debug, Default)]
pub struct ConvertReport {
    /// The parts written, with their sizes in bytes.
    pub parts: Vec<(PathBuf, u64)>,
    /// Records read.
    pub records: u64,
    /// Events rows.
    pub events: u64,
    /// Events lost (sum of the losses rows' counts).
    pub lost: u64,
    /// Losses rows.
    pub loss_rows: u64,
    /// Payloads rows.
    pub payload_rows: u64,
    /// Read errors, at most one per input (its events before it are
    /// written).
    pub damaged: Vec<ReadError>,
    /// Each input's completeness, in the order given.
    pub ends: Vec<Option<Completeness>>,
    /// Stage folders of conversions into the same output that were killed
    /// (`.NAME.converting-PID` beside it, no process holding its lock),
    /// removed before this one began.
    pub cleaned: Vec<PathBuf>,
}

/// One input: its path and its open reader.
pub type Input = (PathBuf, TraceReader);

/// The `verdict` word of a file's end, as `qtrace dump` and `stats` say it.
pub fn verdict(c: Option<&Completeness>, damaged: bool) -> &'static str {
    if damaged {
        return "damaged";
    }
    match c {
        Some(Completeness::Complete(_)) => "complete",
        Some(Completeness::Cut { .. }) => "cut",
        Some(Completeness::Mismatch { .. }) => "damaged",
        _ => "unknown",
    }
}

/// Converts `inputs` into the tables under `out`, which must be absent (it
/// is created) or an empty folder; `progress` is called with the records
/// read so far, every 64 Ki records. The tables are written in a stage
/// folder beside `out` (`.NAME.converting-PID`, locked by this process while
/// it converts) and renamed to `out` once every part is whole: a conversion
/// killed at any point leaves nothing at `out`, and the next conversion
/// into `out` removes its stage folder ([`ConvertReport::cleaned`]).
/// Names given at run time (name records) apply to the rows after them, as
/// `qtrace dump` shows them (a fixed or circular queue's file starts with
/// the names kept, FORMAT.md 1.8): one read of each file.
///
/// # Errors
/// [`StoreError::Target`] when `out` holds anything already;
/// [`StoreError`] when the output cannot be written (nothing is left at
/// `out`); a damaged input is not an error (its events before the damage
/// are written, and [`ConvertReport::damaged`] says so).
pub fn convert(
    inputs: Vec<Input>,
    out: &Path,
    progress: &mut dyn FnMut(u64),
) -> Result<ConvertReport, StoreError> {
    let (stage, cleaned) = Stage::begin(out)?;
    match convert_into(inputs, &stage, progress) {
        Ok(mut report) => match stage.commit() {
            Ok(()) => {
                for (path, _) in &mut report.parts {
                    if let Ok(rel) = path.strip_prefix(stage.path()) {
                        *path = out.join(rel);
                    }
                }
                report.cleaned = cleaned;
                Ok(report)
            }
            Err(e) => {
                stage.abandon();
                Err(e)
            }
        },
        Err(e) => {
            stage.abandon();
            Err(e)
        }
    }
}

fn convert_into(
    inputs: Vec<Input>,
    stage: &Stage,
    progress: &mut dyn FnMut(u64),
) -> Result<ConvertReport, StoreError> {
    let mut set = PartSet::create_parallel(stage.path(), Path::new(""), 0)?;
    // A run is named by its file's name, or by the path as given when two
    // inputs share a name.
    let file_name = |p: &Path| {
        p.file_name().map_or_else(
            || p.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    };
    let names: Vec<String> = inputs.iter().map(|(p, _)| file_name(p)).collect();
    let mut runs = Vec::with_capacity(inputs.len());
    let mut readers = Vec::with_capacity(inputs.len());
    for (i, (path, reader)) in inputs.into_iter().enumerate() {
        let unique = names.iter().filter(|n| **n == names[i]).count() == 1;
        let name = if unique {
            names[i].clone()
        } else {
            path.display().to_string()
        };
        let header = reader.header();
        let info = RunInfo {
            name,
            host: header.host().to_string(),
            sender: None,
            queue: header.queue().map(|(q, _)| q.0),
            path: path.display().to_string(),
        };
        runs.push(Run::new(info, reader.catalog().clone(), Names::new()));
        readers.push(reader);
    }
    // One job pairing (FORMAT.md 7.5a) per host for the whole conversion,
    // as analyze pairs over the merged files: it moves to whichever of the
    // host's runs is written (`holder`, per the host's first run, `lead`).
    let mut first: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let lead: Vec<usize> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| *first.entry(r.info.host.as_str()).or_insert(i))
        .collect();
    drop(first);
    let mut holder = lead.clone();
    let several = runs.len() > 1;
    let mut merged = MergedReader::new(readers);
    let mut report = ConvertReport::default();
    let mut damaged: Vec<Option<ReadError>> = runs.iter().map(|_| None).collect();
    let mut records = 0u64;
    let mut push = |i: usize, e: &Event| -> Result<(), StoreError> {
        // One input (the usual case) holds its pairing throughout.
        if several {
            let h = &mut holder[lead[i]];
            if *h != i {
                let (from, to) = two(&mut runs, *h, i);
                to.take_jobs_from(from);
                *h = i;
            }
        }
        runs[i].push(e, &mut set);
        records += 1;
        if records.is_multiple_of(crate::schema::BATCH_ROWS as u64) {
            set.flush_full()?;
            progress(records);
        }
        Ok(())
    };
    // Events read ahead a buffer at a time (`MergedReader::read_buffered`,
    // one input: input 0), not one by one: each would go out to the stack
    // and be loaded back wider than it was stored (a stalled load an event).
    let mut buffer = Vec::with_capacity(READ_BUFFER);
    loop {
        buffer.clear();
        if merged.read_buffered(&mut buffer, READ_BUFFER) > 0 {
            for e in &buffer {
                push(0, e)?;
            }
            continue;
        }
        match merged.next_with_input() {
            Some((i, Ok(e))) => push(i, &e)?,
            Some((i, Err(err))) => damaged[i] = Some(err),
            None => break,
        }
    }
    progress(records);
    report.ends = (0..merged.len()).map(|i| merged.completeness(i)).collect();
    for (i, run) in runs.iter_mut().enumerate() {
        run.finish(&mut set);
        let end = report.ends[i];
        let close = match end {
            Some(Completeness::Complete(c)) | Some(Completeness::Mismatch { close: c, .. }) => {
                Some(c.totals)
            }
            _ => None,
        };
        let row = StreamRow {
            complete: end.and_then(|c| c.is_complete()) == Some(true) && damaged[i].is_none(),
            verdict: verdict(end.as_ref(), damaged[i].is_some()).to_string(),
            accepted: close.map(|t| t.accepted),
            dropped: close.map(|t| t.dropped),
            overwritten: close.map(|t| t.overwritten),
            delivered: close.map(|t| t.delivered),
            origin_unix_ns: i64::try_from(merged.base_unix_ns()).ok(),
            ..StreamRow::default()
        };
        report.events += run.events();
        report.lost = report.lost.saturating_add(run.lost());
        run.stream_row(&mut set, row);
    }
    report.records = records;
    report.loss_rows = set.losses_rows();
    report.payload_rows = set.payloads_rows();
    report.parts = set.finish()?;
    report.damaged = damaged.into_iter().flatten().collect();
    Ok(report)
}

/// Runs `a` and `b` (distinct) of `runs`, mutably.
fn two(runs: &mut [Run], a: usize, b: usize) -> (&mut Run, &mut Run) {
    if a < b {
        let (x, y) = runs.split_at_mut(b);
        (&mut x[a], &mut y[0])
    } else {
        let (x, y) = runs.split_at_mut(a);
        (&mut y[0], &mut x[b])
    }
}
