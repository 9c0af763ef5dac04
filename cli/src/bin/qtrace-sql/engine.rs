//! `qtrace sql`'s engine side: a query, or a prompt, over Parquet stores
//! and trace files; a thin client of the qtrace-sql crate. Only the
//! `qtrace-sql` executable (feature `sql`) compiles it: `qtrace` never links
//! DuckDB.

use std::io::{self, IsTerminal};
use std::path::PathBuf;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use qtrace_sql::{prompt, Cache, Engine, Error, Format, InputsEnd, Options, Printer};

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
    let cache = if args.no_cache {
        None
    } else {
        args.cache_dir
            .clone()
            .or_else(Cache::user_dir)
            .map(|dir| Cache {
                dir,
                max_bytes: args.cache_max,
            })
    };
    let options = Options {
        threads: args.threads,
        irq_max_ns: args.irq_max,
        cache,
    };
    // Made at the first report: nothing shows on a cache hit or for stores.
    let mut bar: Option<ProgressBar> = None;
    let opened = Engine::open_with_progress(&inputs, &options, &mut |p| {
        let bar = bar.get_or_insert_with(progress_bar);
        bar.set_length(p.total);
        bar.set_position(p.done);
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let engine = match opened {
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
    // A cut or damaged .qtr input sets the status as for the other
    // commands, the query's answer printed all the same.
    let inputs = match engine.inputs_end() {
        InputsEnd::Whole => Exit::Ok,
        InputsEnd::Cut => Exit::Cut,
        InputsEnd::Damaged => Exit::BadInput,
    };
    let answered = match query {
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
    };
    answered.and(inputs)
}

/// A bar on stderr while .qtr inputs are converted; hidden when stderr is
/// not a terminal.
fn progress_bar() -> ProgressBar {
    if !io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template(
            "converting .qtr files {wide_bar} {human_pos}/{human_len} events ({eta} left)",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}
