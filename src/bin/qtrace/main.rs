//! The `qtrace` command-line tool. Each subcommand lives in its own module.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod convert;
mod dump;
mod stats;

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
    /// several --class/--event filters show the union. Exit status 2 when a
    /// file is not a qtrace trace or is damaged (the events before the damage
    /// are printed).
    Dump(dump::DumpArgs),
    /// Summarise trace files: events per class and event, losses, time span.
    Stats(stats::StatsArgs),
    /// Convert trace files to CTF 1.8 (babeltrace2, Trace Compass) or Chrome
    /// Trace Event JSON (Perfetto, chrome://tracing).
    ///
    /// Exit status 2 when a file cannot be opened, is not a qtrace trace or is
    /// damaged (the events before the damage are converted and the output is
    /// complete); 1 when the output cannot be written.
    Convert(convert::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Dump(args) => dump::run(args),
        Command::Stats(args) => stats::run(args),
        Command::Convert(args) => convert::run(&args),
        Command::Events => {
            let catalog = qtrace::classes::Catalog::builtin();
            for class in catalog.classes() {
                println!(
                    "class {} {:<10} {}",
                    class.id, class.name, class.description
                );
                for id in class.events() {
                    let e = catalog.event(id).expect("class events exist");
                    println!(
                        "  {} {:<14} {} [{}]",
                        e.id,
                        e.name,
                        e.description,
                        e.args.join(", ")
                    );
                }
            }
            ExitCode::SUCCESS
        }
    }
}
