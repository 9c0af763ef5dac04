//! `qtrace sql`'s engine side: a query, or a prompt, over Parquet stores
//! and trace files; a thin client of the qtrace-sql crate. Only the
//! `qtrace-sql` executable (feature `sql`) compiles it: `qtrace` never links
//! DuckDB.

use std::io::{self, IsTerminal};
use std::path::PathBuf;

use qtrace_sql::{prompt, Engine, Error, Format, Options, Printer};

use crate::args::SqlArgs;
use crate::spine::io::with_stdout;
use crate::spine::Exit;

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
    let format: Format = match args.format.parse() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("qtrace sql: {e}");
            return Exit::BadInput;
        }
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
        // A dot command (`.views`, `.help`) as the query: as at the prompt.
        Some(q) if q.trim_start().starts_with('.') => with_stdout(|out| {
            let failed = prompt(
                &engine,
                &mut q.as_bytes(),
                out,
                &mut io::stderr(),
                false,
                format,
            )?;
            Ok(if failed > 0 { Exit::BadInput } else { Exit::Ok })
        }),
        Some(q) => with_stdout(|out| {
            let mut printer = Printer::new(format, out);
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
                format,
            )?;
            Ok(if failed > 0 { Exit::BadInput } else { Exit::Ok })
        }),
    }
}
