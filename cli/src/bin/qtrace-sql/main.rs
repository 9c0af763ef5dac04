//! `qtrace-sql`: the engine of `qtrace sql` (DuckDB), an executable of its
//! own so that `qtrace` never links DuckDB's library (feature `sql`). Run it
//! through `qtrace sql ARGS`, which finds it and DuckDB's library and
//! checks the arguments first; run directly, it takes the same arguments.
//! Its RUNPATH is `$ORIGIN:$ORIGIN/../lib` (cli/build.rs).

// The spine's files are shared with `qtrace`; this executable uses a few of
// their items.
#[allow(dead_code)]
mod spine;

#[path = "../../commands/sql/args.rs"]
mod args;
mod engine;

use std::process::ExitCode;

use clap::Parser;

use spine::Exit;

/// Query traces with SQL (the engine of `qtrace sql`).
#[derive(Parser, Debug)]
#[command(name = "qtrace sql", version)]
struct Cli {
    #[command(flatten)]
    args: args::SqlArgs,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return ExitCode::from(Exit::of_usage(&e).code()),
    };
    ExitCode::from(engine::run(cli.args).code())
}
