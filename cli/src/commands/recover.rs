//! `qtrace recover FILE|DIR... --out DIR`: turns the ring files that fixed
//! and circular queues leave behind when their process dies into ordinary
//! trace files (a directory given stands for the `*.ring` files in it).
//!
//! Each input's header is checked (magic, byte order, version, layout)
//! before its body is read, and no more than its layout is read, so a file
//! that is not a ring file (`/dev/zero`, a pipe) ends at once. A ring file
//! whose writer still runs is refused unless `--force` (then the output is
//! a snapshot, written without its close run). An output that exists is
//! never overwritten: the trace is written beside it and linked into place
//! only if the name is free.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use clap::Args;
use qtrace::storage::{recover_file, write_trace, writer_alive, RecoverError};

use crate::spine::io::with_stdout;
use crate::spine::json::JsonObject;
use crate::spine::Exit;

/// Arguments of `qtrace recover`.
#[derive(Args, Debug)]
pub struct RecoverArgs {
    /// Ring files, folders of them, or a store folder.
    ///
    /// Ring files (`*.ring`, left in the output directory by a process that
    /// did not shut down), or directories: every `*.ring` file in each; or
    /// the folder of a Parquet store (`qtrace recv --store DIR`) whose
    /// receiver was killed: its unfinished parts are accounted for (a
    /// losses row of kind `unfinished` each) and removed.
    #[arg(required = true, value_name = "FILE|DIR|STORE")]
    pub files: Vec<PathBuf>,
    /// Directory for the recovered traces.
    ///
    /// Directory for the recovered traces (created if needed); each is named
    /// after its ring file with the extension `.qtr`. An existing trace there
    /// is never overwritten. Needed for ring files only.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Recover a ring file whose process still runs.
    ///
    /// Recover a ring file whose process is still running: the result is a
    /// snapshot of rings still being written, not complete (it has no close
    /// run and reads as cut).
    #[arg(long)]
    pub force: bool,
    /// Write 32-byte records (trace-file version 1), not compact chunks.
    ///
    /// Write the recovered traces in 32-byte records (trace-file version 1,
    /// FORMAT.md 1.4) instead of compact chunks (version 2, FORMAT.md 1.11,
    /// the default, as the queues' own saves: about 5 bytes an event instead
    /// of 32), for a tool that reads records at fixed offsets. Every qtrace
    /// command reads both. The ring files themselves are slot-based either way.
    #[arg(long = "32")]
    pub records_32: bool,
    /// Print a JSON summary on stdout (the text goes to stderr).
    ///
    /// At the end, one JSON object on one line of standard output (the
    /// per-file lines go to standard error): `exit_status`; `recovered`:
    /// one object per trace written, `{"ring", "trace", "events", "lost",
    /// "dropped", "overwritten", "unreadable", "snapshot", "damaged"}`
    /// (`damaged`: the number of damaged fields); `stores`: one object per
    /// store folder, `{"store", "unfinished_parts"}`; `not_recovered`: the
    /// inputs given (or found) that gave no trace.
    #[arg(long)]
    pub json: bool,
}

/// Runs `qtrace recover`: exit status 0 when every file was recovered
/// whole, 2 when one could not be read, is not a ring file, is damaged (its
/// trace is still written, marked and not complete) or belongs to a live
/// process (without `--force`), 3 when a snapshot of a live process was
/// written (`--force`), 1 when an output cannot be written or already
/// exists. The other files are still recovered.
pub fn run(args: RecoverArgs) -> Exit {
    with_stdout(|out| {
        if !args.json {
            return recover_all(&args, out, &mut Report::default());
        }
        let mut report = Report::default();
        let status = recover_all(&args, &mut io::stderr(), &mut report)?;
        let json = JsonObject::new()
            .u64("exit_status", status.code().into())
            .raw("recovered", &format!("[{}]", report.recovered.join(",")))
            .raw("stores", &format!("[{}]", report.stores.join(",")))
            .strs(
                "not_recovered",
                report.not_recovered.iter().map(String::as_str),
            )
            .finish();
        writeln!(out, "{json}")?;
        Ok(status)
    })
}

/// What `--json` prints: each object already as JSON.
#[derive(Default)]
struct Report {
    recovered: Vec<String>,
    stores: Vec<String>,
    not_recovered: Vec<String>,
}

fn recover_all(args: &RecoverArgs, out: &mut dyn Write, report: &mut Report) -> io::Result<Exit> {
    let mut status = Exit::Ok;
    let mut files = Vec::new();
    for arg in &args.files {
        if arg.join("events").is_dir() {
            match qtrace_store::recover_dir(arg) {
                Ok(temps) => {
                    writeln!(
                        out,
                        "{}: {} unfinished part files accounted for (losses rows of kind unfinished) and removed",
                        arg.display(),
                        temps.len()
                    )?;
                    report.stores.push(
                        JsonObject::new()
                            .str("store", Some(&arg.display().to_string()))
                            .u64("unfinished_parts", temps.len() as u64)
                            .finish(),
                    );
                }
                Err(e) => {
                    eprintln!("qtrace: {}: {e}", arg.display());
                    report.not_recovered.push(arg.display().to_string());
                    status = status.and(Exit::Failed);
                }
            }
            continue;
        }
        if !arg.is_dir() {
            files.push(arg.clone());
            continue;
        }
        match ring_files(arg) {
            Ok(found) if found.is_empty() => {
                eprintln!(
                    "qtrace: {}: no ring files (*.ring) in this directory: a process that shut down leaves none (its traces are the .qtr files)",
                    arg.display()
                );
                report.not_recovered.push(arg.display().to_string());
                status = status.and(Exit::BadInput);
            }
            Ok(found) => files.extend(found),
            Err(e) => {
                eprintln!("qtrace: {}: cannot list the directory: {e}", arg.display());
                report.not_recovered.push(arg.display().to_string());
                status = status.and(Exit::BadInput);
            }
        }
    }
    for file in &files {
        let Some(out_dir) = &args.out else {
            eprintln!(
                "qtrace: {}: give --out DIR for the recovered trace",
                file.display()
            );
            status = status.and(Exit::BadInput);
            report.not_recovered.push(file.display().to_string());
            continue;
        };
        // As `dump` and `stats`: a FIFO would block until something writes
        // it, and a ring file is a file a process mapped, never a stream.
        if let Some(what) = crate::spine::io::not_a_file(file) {
            eprintln!(
                "qtrace: {}: it is {what}, not a ring file; copy the ring file and recover the copy",
                file.display()
            );
            status = status.and(Exit::BadInput);
            report.not_recovered.push(file.display().to_string());
            continue;
        }
        let live = writer_alive(file);
        if let (Some(pid), false) = (live, args.force) {
            eprintln!(
                "qtrace: {}: {} (--force)",
                file.display(),
                RecoverError::Live { pid }
            );
            status = status.and(Exit::BadInput);
            report.not_recovered.push(file.display().to_string());
            continue;
        }
        let mut rec = match recover_file(file) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("qtrace: {}: {e}", file.display());
                status = status.and(Exit::BadInput);
                report.not_recovered.push(file.display().to_string());
                continue;
            }
        };
        rec.snapshot = live.is_some();
        if args.records_32 {
            rec.header = rec.header.with_compact(false);
        }
        let target = out_dir.join(output_name(file));
        if let Err(e) = write_new(&rec, out_dir, &target) {
            eprintln!("qtrace: {e}");
            status = status.and(Exit::Failed);
            report.not_recovered.push(file.display().to_string());
            continue;
        }
        let c = rec.counts;
        writeln!(
            out,
            "{} -> {}: {} events recovered, {} lost ({} dropped, {} overwritten, {} unreadable at the crash)",
            file.display(),
            target.display(),
            c.recovered,
            c.lost(),
            c.dropped,
            c.overwritten,
            c.unreadable
        )?;
        if let Some(pid) = live {
            eprintln!(
                "qtrace: {}: a snapshot of process {pid}, which is still running: {} is not complete (no close run; its producers kept writing while it was read)",
                file.display(),
                target.display()
            );
            status = status.and(Exit::Cut);
        }
        report.recovered.push(
            JsonObject::new()
                .str("ring", Some(&file.display().to_string()))
                .str("trace", Some(&target.display().to_string()))
                .u64("events", c.recovered)
                .u64("lost", c.lost())
                .u64("dropped", c.dropped)
                .u64("overwritten", c.overwritten)
                .u64("unreadable", c.unreadable)
                .bool("snapshot", live.is_some())
                .u64("damaged", rec.damage.len() as u64)
                .finish(),
        );
        if !rec.damage.is_empty() {
            for d in rec.damage.iter().take(10) {
                eprintln!("qtrace: {}: {d}", file.display());
            }
            if rec.damage.len() > 10 {
                eprintln!(
                    "qtrace: {}: {} more damaged fields",
                    file.display(),
                    rec.damage.len() - 10
                );
            }
            eprintln!(
                "qtrace: {}: the ring file is damaged: {} holds the records that passed the checks, marked damaged and not complete (counts are what the trusted fields show)",
                file.display(),
                target.display()
            );
            status = status.and(Exit::BadInput);
        }
    }
    Ok(status)
}

/// Writes `rec` beside `target` and links it into place only if `target`
/// does not exist: an earlier output is never overwritten, and a killed
/// recovery leaves no partial trace at `target`.
fn write_new(rec: &qtrace::storage::Recovered, dir: &Path, target: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let exists = |t: &Path| {
        format!(
            "{} already exists: it is not overwritten; remove it or choose another --out",
            t.display()
        )
    };
    if target.symlink_metadata().is_ok() {
        return Err(exists(target));
    }
    let name = target.file_name().unwrap_or_default().to_string_lossy();
    let tmp = target.with_file_name(format!(".{name}.partial-{}", std::process::id()));
    write_trace(rec, &tmp).map_err(|e| {
        std::fs::remove_file(&tmp).ok();
        e.to_string()
    })?;
    // A hard link fails if the name is taken (no race with another writer);
    // file systems without hard links fall back to a rename after the check above.
    let placed = match std::fs::hard_link(&tmp, target) {
        Ok(()) => std::fs::remove_file(&tmp).map_err(|e| e.to_string()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(exists(target)),
        Err(_) => std::fs::rename(&tmp, target).map_err(|e| {
            format!(
                "cannot move the recovered trace to {}: {e}",
                target.display()
            )
        }),
    };
    if placed.is_err() {
        std::fs::remove_file(&tmp).ok();
    }
    placed
}

/// The `*.ring` files in `dir` (not its subdirectories), by name.
fn ring_files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "ring") && path.is_file() {
            found.push(path);
        }
    }
    found.sort();
    Ok(found)
}

/// `queue0-circular.ring` → `queue0-circular.qtr`.
fn output_name(ring: &Path) -> PathBuf {
    let stem = ring.file_stem().unwrap_or(ring.as_os_str());
    PathBuf::from(stem).with_extension("qtr")
}
