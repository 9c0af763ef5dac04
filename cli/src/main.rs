//! The `qtrace` command-line tool. Each subcommand lives in its own module.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod analyze;
mod convert;
mod dump;
mod payload;
mod plot;
mod recover;
mod recv;
mod stats;
mod text;

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
    /// Exit status: 2 when a file is not a qtrace trace or is damaged (the
    /// events before the damage are printed); otherwise 3 when a file is cut
    /// short or its close record disagrees with it, or when it holds a
    /// `[STREAM OF SENDER … ENDED WITHOUT A CLOSE …]` line (written by `qtrace
    /// recv`: that sender's events after its last datagram are lost without
    /// a count); 0 otherwise.
    Dump(dump::DumpArgs),
    /// Summarise trace files: events per class and event, losses, time span,
    /// and whether each file is complete.
    ///
    /// Exit status: 2 when a file is not a qtrace trace or is damaged; otherwise
    /// 3 when a file is cut short (no close record) or its close record
    /// disagrees with it, or when it holds unclosed streams (a sender's stream
    /// that `qtrace recv` saw end without a close: its events after its last
    /// datagram are lost without a count); 0 otherwise (complete files, and
    /// old files whose completeness is unknown).
    Stats(stats::StatsArgs),
    /// Receive UDP queue datagrams and write them to a trace file.
    Recv(recv::RecvArgs),
    /// Turn ring files (left by fixed and circular queues whose process died
    /// without shutting down: SIGKILL, abort, a crash) into trace files.
    ///
    /// Prints one line per file: events recovered and lost, with the lost
    /// split into dropped, overwritten and unreadable (slots being written
    /// at the crash, marked in the trace). Exit status 2 when a file cannot
    /// be read or is not a ring file (the others are still recovered); 1
    /// when an output cannot be written.
    Recover(recover::RecoverArgs),
    /// Convert trace files to CTF 1.8 (babeltrace2, Trace Compass), Perfetto's
    /// protobuf trace (ui.perfetto.dev) or Chrome Trace Event JSON (Perfetto,
    /// chrome://tracing).
    ///
    /// Exit status 2 when a file cannot be opened, is not a qtrace trace or is
    /// damaged (the events before the damage are converted and the output is
    /// complete); 3 when a file is cut short (no close record; its events are
    /// converted); 1 when the output cannot be written.
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

/// Runs `write` on a buffered standard output and flushes it. Its `Ok` is
/// the exit status; a reader that stops early (`qtrace stats f | head`) ends
/// the command quietly with success; any other write error exits with 1.
pub fn with_stdout(write: impl FnOnce(&mut dyn Write) -> io::Result<ExitCode>) -> ExitCode {
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    match write(&mut out).and_then(|status| out.flush().map(|()| status)) {
        Ok(status) => status,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("qtrace: cannot write the output: {e}");
            ExitCode::from(1)
        }
    }
}

/// `qtrace events`: the built-in classes and events.
fn list_events(out: &mut dyn Write) -> io::Result<ExitCode> {
    let catalog = qtrace::classes::Catalog::builtin();
    for class in catalog.classes() {
        writeln!(
            out,
            "class {} {:<10} {}",
            class.id, class.name, class.description
        )?;
        for e in class.events().filter_map(|id| catalog.event(id)) {
            writeln!(
                out,
                "  {} {:<14} {} [{}]",
                e.id,
                e.name,
                e.description,
                e.args.join(", ")
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Dump(args) => dump::run(args),
        Command::Stats(args) => stats::run(args),
        Command::Recv(args) => recv::run(args),
        Command::Recover(args) => recover::run(args),
        Command::Convert(args) => convert::run(&args),
        Command::Analyze(args) => analyze::run(args),
        Command::Plot(args) => plot::run(args),
        Command::Events => with_stdout(list_events),
    }
}
