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
    /// Where conversions of .qtr files are kept.
    ///
    /// Where conversions of .qtr inputs are kept, so the next query over the
    /// same unchanged files starts at once (default: $XDG_CACHE_HOME/qtrace/sql,
    /// else ~/.cache/qtrace/sql). An entry is keyed by the files' paths,
    /// inodes, sizes and modification times; a file written again is
    /// converted again.
    #[arg(long, value_name = "DIR", conflicts_with = "no_cache")]
    pub cache_dir: Option<std::path::PathBuf>,
    /// Most bytes the cache keeps.
    ///
    /// Most bytes the cache folder keeps (suffix K, M or G: powers of 1024);
    /// the least recently used entries are removed past it, and a conversion
    /// larger than it is not kept.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "4G")]
    pub cache_max: u64,
    /// Convert .qtr files into a scratch folder removed on exit.
    #[arg(long)]
    pub no_cache: bool,
}

/// `4G`, `512M`, `100K` or a plain number of bytes.
fn parse_size(s: &str) -> Result<u64, String> {
    let (digits, shift) = match s.as_bytes().last() {
        Some(b'K' | b'k') => (&s[..s.len() - 1], 10),
        Some(b'M' | b'm') => (&s[..s.len() - 1], 20),
        Some(b'G' | b'g') => (&s[..s.len() - 1], 30),
        _ => (s, 0),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{s:?} is not a size: give bytes, or a number with K, M or G"))?;
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{s} is larger than 16 EiB"))
}
