//! `qtrace sql`: a query, or a prompt, over Parquet stores and trace files;
//! a thin client of the qtrace-sql crate (built with the feature `sql`).

use std::io::{self, IsTerminal};
use std::path::PathBuf;

use clap::Args;
use qtrace_sql::{prompt, Engine, Error, Format, Options, Printer};

use crate::spine::format::parse_time;
use crate::spine::io::with_stdout;
use crate::spine::Exit;

/// Arguments of `qtrace sql`.
#[derive(Args, Debug)]
pub struct SqlArgs {
    /// Parquet store folders and .qtr trace files, then the query. The last
    /// argument is the query unless it names an existing file or folder;
    /// without a query, statements are read from standard input (a prompt
    /// on a terminal).
    #[arg(required = true, value_name = "INPUT... [QUERY]")]
    pub args: Vec<String>,
    /// How results are printed: `table` (aligned columns), `csv` or `json`
    /// (one object per line).
    #[arg(long, short, value_name = "FORMAT", default_value = "table")]
    pub format: Format,
    /// Most rows a table shows (the rest are counted; csv and json print
    /// every row).
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub max_rows: usize,
    /// Worker threads of the engine (default: one per core).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Longest interrupt handler in the `slices` view (as `qtrace analyze
    /// --irq-max`).
    #[arg(long, value_name = "TIME", value_parser = parse_time, default_value = "1us")]
    pub irq_max: u64,
}

/// Runs `qtrace sql`.
pub fn run(args: SqlArgs) -> Exit {
    let mut inputs: Vec<PathBuf> = args.args.iter().map(PathBuf::from).collect();
    let query = match inputs.last() {
        Some(last) if !last.exists() => {
            inputs.pop();
            args.args.last().cloned()
        }
        _ => None,
    };
    let options = Options {
        threads: args.threads,
        irq_max_ns: args.irq_max,
    };
    let engine = match Engine::open(&inputs, &options) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("qtrace sql: {e}");
            if let (Error::NoInput, Some(q)) = (&e, &query) {
                eprintln!("qtrace sql: (the last argument, {q:?}, was taken as the query: it names no file or folder)");
            }
            return Exit::BadInput;
        }
    };
    for note in engine.notes() {
        eprintln!("qtrace sql: {note}");
    }
    match query {
        Some(q) => with_stdout(|out| {
            let mut printer = Printer::new(args.format, out);
            printer.max_rows = args.max_rows;
            match engine.run(&q, printer) {
                Ok(_) => Ok(Exit::Ok),
                Err(Error::Output(e)) => Err(e),
                Err(e) => {
                    eprintln!("qtrace sql: {e}");
                    Ok(Exit::BadInput)
                }
            }
        }),
        None => with_stdout(|out| {
            let stdin = io::stdin();
            let interactive = stdin.is_terminal();
            if interactive {
                eprintln!("qtrace sql: statements end with `;`; .views lists the ready views, .help the commands, Ctrl-D leaves");
            }
            let failed = prompt(
                &engine,
                &mut stdin.lock(),
                out,
                &mut io::stderr(),
                interactive,
                args.format,
            )?;
            Ok(if failed > 0 { Exit::BadInput } else { Exit::Ok })
        }),
    }
}
