//! The `qtrace` command-line tool (crate `qtrace-cli`). Each subcommand
//! lives in its own module under `commands/`; what they share — the exit
//! status, inputs, outputs, reporting — is the spine (`spine/`). Subcommands
//! import the spine and the `qtrace` library's public API, never each other;
//! `main` alone turns an [`Exit`] into the process's exit code.

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

mod commands;
mod spine;

use commands::{
    analyze, convert, ctl, dump, events, keygen, live, plot, recover, recv, sql, stats,
};
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
    /// Print the events of trace files in time order.
    ///
    /// Print the events of trace files, one per line, merged in time order.
    ///
    /// Each line: time (s since the clock origin), source (CPU or thread),
    /// class, event, arguments by name. A loss is a `[LOST n EVENTS]` line,
    /// shown whatever the class and event filters (a loss may hide any event);
    /// several --class/--event filters show the union. After the events, one
    /// `[END: …]` line per file says whether it is complete (with the
    /// records it holds and its queue's counters when it was written), CUT
    /// SHORT (no close record: the writer died or the disk filled; what is
    /// known lost before the cut is given), or DAMAGED (its close record
    /// disagrees with it). A file written before
    /// close records gets no END line (`qtrace stats` says "completeness
    /// unknown").
    ///
    /// Each file is read once: a name a name record gives (a source's, a
    /// task's, an event's) is shown from that record on; files saved by
    /// fixed and circular queues start with every name.
    ///
    /// A file that cannot be opened (a bad header) is reported and the other
    /// files are still dumped; a FIFO is refused at once (save the stream to
    /// a file first); a ring file is refused with what to do.
    ///
    /// Exit status (FORMAT.md, "Exit statuses"): 2 when a file is not a
    /// qtrace trace or is DAMAGED (a record that does not decode, or a close
    /// record that disagrees with the file; the events before the damage
    /// are printed); otherwise 3 when a file is CUT SHORT (no close record,
    /// whether it ends at a record boundary or inside a record), or when it
    /// holds a `[STREAM OF SENDER … ENDED WITHOUT A CLOSE …]` line (written
    /// by `qtrace recv`: that sender's events after its last datagram are
    /// lost without a count); 0 otherwise.
    Dump(dump::DumpArgs),
    /// Summarise trace files: counts, losses, completeness.
    ///
    /// Summarise trace files: events per class and event, losses, time span,
    /// and whether each file is complete. Events are counted as `dump` shows
    /// them: a string or name logged as a run of records is one; name records
    /// are counted apart, and events take the names they give. What a cut
    /// left of a close run is counted as control records, not events; a FIFO
    /// is refused at once; a ring file is refused with what to do.
    ///
    /// Exit status (FORMAT.md, "Exit statuses"): 2 when a file is not a
    /// qtrace trace or is damaged (a record that does not decode, or a close
    /// record that disagrees with the file); otherwise 3 when a file is cut
    /// short (no close record, at a record boundary or inside a record), or
    /// when it holds unclosed streams (a sender's stream that `qtrace recv`
    /// saw end without a close: its events after its last datagram are lost
    /// without a count); 0 otherwise (complete files, and old files whose
    /// completeness is unknown).
    Stats(stats::StatsArgs),
    /// Receive UDP datagrams into a trace file or a store.
    ///
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
    ///
    /// It listens on loopback unless given --listen; with --key-file it
    /// accepts only datagrams keyed with one of its keys. Forged, replayed
    /// and other-keyed datagrams — and, keyed or not, counters that go
    /// backwards and datagrams after a sender's close — are rejected before
    /// they touch a stream, counted per source address in the summary and
    /// logged at most once a second.
    Recv(recv::RecvArgs),
    /// Write a new key for keyed datagrams.
    ///
    /// Write a new key for keyed datagrams to FILE: 32 random bytes, mode
    /// 600, never over an existing file.
    ///
    /// Give the same file to the senders (`UdpParams::with_key`) and to
    /// `qtrace recv --key-file FILE`: the receiver then accepts only
    /// datagrams that key authenticates. Exit status 1 when the file exists
    /// or cannot be written.
    Keygen(keygen::KeygenArgs),
    /// Turn ring files left by a crash into trace files.
    ///
    /// Turn ring files (left by fixed and circular queues whose process died
    /// without shutting down: SIGKILL, abort, a crash) into trace files; a
    /// directory given stands for every `*.ring` file in it.
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
    /// Convert traces to CTF, Perfetto, Chrome JSON, Parquet.
    ///
    /// Convert trace files to CTF 1.8 (babeltrace2, Trace Compass), Perfetto's
    /// protobuf trace (ui.perfetto.dev), Chrome Trace Event JSON (Perfetto,
    /// chrome://tracing) or Parquet tables (DuckDB, ClickHouse, pyarrow,
    /// polars; FORMAT.md 7).
    ///
    /// Exit status 2 when a file cannot be opened, is not a qtrace trace or is
    /// damaged (a record that does not decode, or a close record that
    /// disagrees; the events before the damage are converted and the output
    /// is complete); 3 when a file is cut short (no close record, at a
    /// record boundary or inside a record; its events are converted); 1 when
    /// the output cannot be written. Outputs are written
    /// beside (`.NAME.partial-PID`; Parquet parts `.part-N.parquet.tmp`) and
    /// renamed once whole: a conversion that fails or is killed leaves
    /// nothing at --out that a reader would take for a whole output.
    Convert(convert::Args),
    /// What the scheduler did: tasks, CPUs, interrupts.
    ///
    /// What the scheduler did: per task, per CPU, per interrupt, latencies.
    ///
    /// Per task: activations, CPU time, response times, preemptions, time
    /// blocked on semaphores; per CPU: utilisation and idle; interrupts: rate
    /// and handler time (a time at the --irq-max cap is marked `*`);
    /// `--latency-from EVENT --latency-to EVENT` (or `--from`/`--to`): a
    /// latency histogram. Measures during which events were lost are left
    /// out and counted apart. Exit status 2 when a file is damaged (the
    /// events before the damage are analysed), 3 when one is cut short.
    Analyze(analyze::AnalyzeArgs),
    /// Draw an SVG timeline of the schedule.
    ///
    /// Draw a self-contained SVG timeline of the schedule.
    ///
    /// A row per source (`CPU N`, or `irq L` for a source that only takes
    /// interrupts) and per task with running, blocked and interrupt spans,
    /// activations, loss markers, a time axis and a legend. Open the file in
    /// a browser. Exit status 2 when --from/--to hold no event (no picture
    /// is written).
    Plot(plot::PlotArgs),
    /// Watch a running system in the terminal.
    ///
    /// Watch a running system: per task CPU share, activations, response
    /// times (p50, p99, max), preemptions and time blocked; per CPU busy
    /// time; per sender event rate, losses and stream health; the recent
    /// events of a class. Refreshed every 250 ms over a sliding window.
    ///
    /// Events come from a receiver of its own (`--listen ADDR`: nothing is
    /// written; `qtrace recv --out FILE --live` keeps the trace and shows
    /// this view), or from a trace file followed as it grows (FILE: an
    /// online queue's file). With --ctl PID|NAME, the view is instead a
    /// running tracer's status through its control endpoint (queues,
    /// counters, losses and rates, phase, uptime), asked for at each
    /// refresh, until the program ends. Keys: q quit, p pause, s sort the tasks, c the
    /// class of the recent events, t one task or all. When standard output
    /// is not a terminal, the same figures are printed as plain text every
    /// --every seconds (1 by default) until --duration, Ctrl-C or the file's
    /// close. The view samples: it reads a followed file at most 250 000
    /// events a second, then jumps to the newest events (the header counts
    /// those it skipped). Exit status 2 for bad arguments, an address it
    /// cannot bind, or a followed file that is not a trace or is damaged
    /// (the view stops and says why); 1 when its receiver fails.
    Live(live::LiveArgs),
    /// Control a running tracer through its control endpoint.
    ///
    /// Examples: `qtrace ctl list`; `qtrace ctl 4242 status`; `qtrace ctl
    /// server snapshot /tmp/now.qtr`; `qtrace ctl server disable class
    /// system`; `qtrace ctl server stop 0`. Exit status 0 when done, 1 when
    /// the endpoint refused or failed, 2 for bad arguments or no such
    /// endpoint.
    ///
    /// Who is served: the traced program's own user; and, when the program
    /// allows a group (Config::with_control_group), that group's members,
    /// by their effective or a supplementary group, who give the socket's
    /// path: `qtrace ctl /tmp/qtrace-UID-gGID/PID.NAME.sock status`.
    ///
    /// A program serves an endpoint when it asks for one: library feature
    /// `control` (Linux), then Config::with_control(NAME) before
    /// qtrace::global::install, or qtrace::control::Endpoint::bind. Its
    /// socket is $XDG_RUNTIME_DIR/qtrace/PID.NAME.sock (else
    /// /tmp/qtrace-UID/), and nothing listens on a network: from another
    /// machine, ssh (docs/control.md; `cargo run --example control
    /// --features control` is a program to try it on).
    Ctl(ctl::CtlArgs),
    /// Query traces and stores with SQL (DuckDB).
    ///
    /// Query traces with SQL, in-process: DuckDB over Parquet stores and
    /// trace files, with ready views.
    ///
    /// Inputs: store folders (written by `qtrace convert --to parquet --out
    /// DIR` or `qtrace recv --store DIR`; read where they lie, no import) and
    /// .qtr trace files (converted to a scratch store first). Tables:
    /// `events`, `losses`, `payloads`, `streams`, `jobs` (FORMAT.md 7). Ready views,
    /// whose figures equal `qtrace analyze`'s (each host's records are one
    /// trace, merged in time order): `slices` (task runs, interrupt handlers,
    /// semaphore holds, as the Perfetto export draws them), `response_times`
    /// (one row per job; `lossy` when a loss falls inside), `preemptions`,
    /// `cpu_busy`, `counters`, `flows`; and the table `wake_flows` (the
    /// wake-up flows analyze derives, with their latency; FORMAT.md 7.5b).
    /// Example:
    ///
    ///   qtrace sql store "SELECT task, count(*), quantile_disc(response_ns, 0.99)
    ///   FROM response_times WHERE NOT lossy GROUP BY task ORDER BY task"
    ///
    /// Without a query, statements (ending with `;`) are read from standard
    /// input: a prompt on a terminal (.views, .mode, .help, .quit). A dot
    /// command also works as the query (`qtrace sql STORE .views`).
    ///
    /// The engine is a second executable, `qtrace-sql` (installed with
    /// `cargo install qtrace-cli --features sql`), found beside `qtrace` and
    /// then on PATH; DuckDB's library (libduckdb.so; libduckdb.dylib on
    /// macOS) is looked for in QTRACE_DUCKDB_LIB (the file or its folder),
    /// beside `qtrace`, in ../lib from it, then in LD_LIBRARY_PATH
    /// (DYLD_LIBRARY_PATH on macOS) and the loader's default folders. The
    /// other subcommands never load DuckDB.
    ///
    /// Exit status: 2 when an input is not a store or a trace, a trace is
    /// damaged, or a statement fails (DuckDB's message is printed; at the
    /// prompt, when any failed); 3 when a trace is cut short (the answer
    /// covers its events up to the cut; also on a cache hit); 1 when the
    /// output cannot be written; 4 when `qtrace-sql` or DuckDB's
    /// library is not found (the message says where it looked and how to
    /// get it).
    Sql(sql::SqlArgs),
    /// Print a shell completion script.
    ///
    /// For bash: `qtrace completions bash > ~/.local/share/bash-completion/completions/qtrace`;
    /// zsh: a file `_qtrace` in a folder of `$fpath`; fish:
    /// `~/.config/fish/completions/qtrace.fish`.
    Completions {
        /// The shell: bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) on standard output.
    ///
    /// Read it with `qtrace man | man -l -`, or install it:
    /// `qtrace man > ~/.local/share/man/man1/qtrace.1`.
    Man,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return ExitCode::from(Exit::of_usage(&e).code()),
    };
    let status = match cli.command {
        Command::Dump(args) => dump::run(args),
        Command::Stats(args) => stats::run(args),
        Command::Recv(args) => recv::run(args, live::watch),
        Command::Keygen(args) => keygen::run(args),
        Command::Live(args) => live::run(args),
        Command::Ctl(args) => ctl::run(args),
        Command::Recover(args) => recover::run(args),
        Command::Convert(args) => convert::run(&args),
        Command::Analyze(args) => analyze::run(args),
        Command::Plot(args) => plot::run(args),
        Command::Events => events::run(),
        Command::Completions { shell } => spine::io::with_stdout(|out| {
            clap_complete::generate(shell, &mut Cli::command(), "qtrace", out);
            Ok(Exit::Ok)
        }),
        Command::Man => spine::io::with_stdout(|out| {
            clap_mangen::Man::new(Cli::command()).render(out)?;
            Ok(Exit::Ok)
        }),
        Command::Sql(args) => sql::run(args, std::env::args_os().skip(2).collect()),
    };
    ExitCode::from(status.code())
}
