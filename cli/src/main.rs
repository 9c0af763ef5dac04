//! The `qtrace` command-line tool (crate `qtrace-cli`). Each subcommand
//! lives in its own module under `commands/`; what they share — the exit
//! status, inputs, outputs, reporting — is the spine (`spine/`). Subcommands
//! import the spine and the `qtrace` library's public API, never each other;
//! `main` alone turns an [`Exit`] into the process's exit code.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod commands;
mod spine;

use commands::{analyze, convert, dump, events, plot, recover, recv, stats};
use spine::Exit;

/// Tools for qtrace traces.
#[derive(Parser, Debug)]
#[command(
    name = "qtrace",
    version,
    about = "Tools for qtrace traces",
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List the built-in classes and events.
    Events,
    /// Print the events of trace files, one per line, merged in time order.
    ///
    /// Each line: time (s since the clock origin), source (CPU or thread),
    /// class, event, arguments by name. A loss is a `[LOST n EVENTS]` line,
    /// shown whatever the class and event filters (a loss may hide any event);
    /// several --class/--event filters show the union. After the events, one
    /// `[END: …]` line per file says whether it is complete (with its
    /// queue's final counters), CUT SHORT (no close record: the writer died
    /// or the disk filled; what is known lost before the cut is given), or
    /// DAMAGED (its close record disagrees with it). A file written before
    /// close records gets no END line (`qtrace stats` says "completeness
    /// unknown").
    ///
    /// A file that cannot be opened (a bad header) is reported and the other
    /// files are still dumped; a FIFO is refused at once (save the stream to
    /// a file first).
    ///
    /// Exit status: 2 when a file is not a qtrace trace or is damaged (the
    /// events before the damage are printed); otherwise 3 when a file is cut
    /// short or its close record disagrees with it, or when it holds a
    /// `[STREAM OF SENDER … ENDED WITHOUT A CLOSE …]` line (written by `qtrace
    /// recv`: that sender's events after its last datagram are lost without
    /// a count); 0 otherwise.
    Dump(dump::DumpArgs),
    /// Summarise trace files: events per class and event, losses, time span,
    /// and whether each file is complete. What a cut left of a close run is
    /// counted as control records, not events; a FIFO is refused at once.
    ///
    /// Exit status: 2 when a file is not a qtrace trace or is damaged; otherwise
    /// 3 when a file is cut short (no close record) or its close record
    /// disagrees with it, or when it holds unclosed streams (a sender's stream
    /// that `qtrace recv` saw end without a close: its events after its last
    /// datagram are lost without a count); 0 otherwise (complete files, and
    /// old files whose completeness is unknown).
    Stats(stats::StatsArgs),
    /// Receive UDP queue datagrams and write them to a trace file (--out) or
    /// to Parquet tables (--store).
    ///
    /// A trace already at --out is moved aside to `<stem>-previous.<ext>`,
    /// never overwritten; another `qtrace recv` writing it makes this one
    /// refuse (exit status 1). An output deleted or replaced while written is
    /// re-created, starting with a hoops record for what went with it (exit
    /// status 3). With --store DIR: parts are written beside and renamed once
    /// whole, rolled by --roll and deleted by --keep; a store another process
    /// writes is refused (exit status 1); a write error stops the receiver
    /// with its closed parts whole (exit status 3).
    Recv(recv::RecvArgs),
    /// Turn ring files (left by fixed and circular queues whose process died
    /// without shutting down: SIGKILL, abort, a crash) into trace files.
    ///
    /// Also accounts for the unfinished parts a killed `qtrace recv --store`
    /// left in a store folder (given instead of ring files).
    ///
    /// Prints one line per file: events recovered and lost, with the lost
    /// split into dropped, overwritten and unreadable (slots being written
    /// at the crash, marked in the trace). Exit status 2 when a file cannot
    /// be read or is not a ring file (the others are still recovered); 1
    /// when an output cannot be written.
    Recover(recover::RecoverArgs),
    /// Convert trace files to CTF 1.8 (babeltrace2, Trace Compass), Perfetto's
    /// protobuf trace (ui.perfetto.dev), Chrome Trace Event JSON (Perfetto,
    /// chrome://tracing) or Parquet tables (DuckDB, ClickHouse, pyarrow,
    /// polars; FORMAT.md 7).
    ///
    /// Exit status 2 when a file cannot be opened, is not a qtrace trace or is
    /// damaged (the events before the damage are converted and the output is
    /// complete); 3 when a file is cut short (no close record; its events are
    /// converted); 1 when the output cannot be written. Outputs are written
    /// beside (`.NAME.partial-PID`; Parquet parts `.part-N.parquet.tmp`) and
    /// renamed once whole: a conversion that fails or is killed leaves
    /// nothing at --out that a reader would take for a whole output.
    Convert(convert::Args),
    /// What the scheduler did: per task, per CPU, per interrupt, latencies.
    ///
    /// Per task: activations, CPU time, response times, preemptions, time
    /// blocked on semaphores; per CPU: utilisation and idle; interrupts: rate
    /// and handler time; `--from EVENT --to EVENT`: a latency histogram. Measures during which events were lost are left
    /// out and counted apart. Exit status 2 when a file is damaged (the
    /// events before the damage are analysed).
    Analyze(analyze::AnalyzeArgs),
    /// Draw a self-contained SVG timeline of the schedule.
    ///
    /// A row per source (CPU) and per task with running, blocked and
    /// interrupt spans, activations, loss markers and a time axis. Open the
    /// file in a browser.
    Plot(plot::PlotArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Usage errors on stderr with status 2; --help and --version on
            // stdout with status 0 (clap says which).
            let _ = e.print();
            return ExitCode::from(
                if e.use_stderr() {
                    Exit::BadInput
                } else {
                    Exit::Ok
                }
                .code(),
            );
        }
    };
    let status = match cli.command {
        Command::Dump(args) => dump::run(args),
        Command::Stats(args) => stats::run(args),
        Command::Recv(args) => recv::run(args),
        Command::Recover(args) => recover::run(args),
        Command::Convert(args) => convert::run(&args),
        Command::Analyze(args) => analyze::run(args),
        Command::Plot(args) => plot::run(args),
        Command::Events => events::run(),
    };
    ExitCode::from(status.code())
}
