//! The arguments of `qtrace sql`, shared by the `qtrace` executable (which
//! parses them, so `qtrace sql --help`, completions and the man page work
//! in every build) and by `qtrace-sql` (which runs them).

use clap::Args;

use crate::spine::format::parse_time;

/// Arguments of `qtrace sql`.
#[derive(Args, Debug)]
pub struct SqlArgs {
    /// Stores and .qtr files, then the query (optional).
    ///
    /// Parquet store folders and .qtr trace files, then the query. The last
    /// argument is the query unless it names an existing file or folder;
    /// without a query, statements are read from standard input (a prompt
    /// on a terminal).
    #[arg(required = true, value_name = "INPUT... [QUERY]")]
    pub args: Vec<String>,
    /// Output format: table, csv or json.
    ///
    /// How results are printed: `table` (aligned columns), `csv` or `json`
    /// (one object per line).
    #[arg(long, short, value_name = "FORMAT", default_value = "table",
          value_parser = ["table", "csv", "json"])]
    pub format: String,
    /// Most rows a table shows.
    ///
    /// Most rows a table shows (the rest are counted; csv and json print
    /// every row).
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub max_rows: usize,
    /// Worker threads of the engine (default: one per core).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Longest interrupt handler in the `slices` view.
    ///
    /// Longest interrupt handler in the `slices` view (as `qtrace analyze
    /// --irq-max`).
    #[arg(long, value_name = "TIME", value_parser = parse_time, default_value = "1us")]
    pub irq_max: u64,
}
