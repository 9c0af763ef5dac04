//! What can go wrong: [`Error`].

use std::fmt;
use std::io;
use std::path::PathBuf;

/// An error of `qtrace sql`: a bad input, a query DuckDB refused, or an
/// output that could not be written.
///
/// ```
/// use qtrace_sql::Error;
///
/// let e = Error::NoInput;
/// assert!(e.to_string().contains("store folder"));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// No store folder or trace file was given.
    NoInput,
    /// An input is neither a Parquet store folder nor a trace file.
    BadInput {
        /// The input.
        path: PathBuf,
        /// Why it was refused, and what to give instead.
        why: String,
    },
    /// A `.qtr` input could not be converted to Parquet tables.
    Convert {
        /// The trace file.
        path: PathBuf,
        /// The converter's message.
        message: String,
    },
    /// DuckDB refused a statement or failed while running it (the message is
    /// DuckDB's own: a syntax error, an unknown column, a failed cast …).
    Query(duckdb::Error),
    /// The output could not be written (a closed pipe, a full disk).
    Output(io::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoInput => write!(
                f,
                "no input: give a Parquet store folder (written by `qtrace convert --to parquet \
                 --out DIR` or `qtrace recv --store DIR`) or .qtr trace files, then the query"
            ),
            Error::BadInput { path, why } => write!(f, "{}: {why}", path.display()),
            Error::Convert { path, message } => write!(
                f,
                "{}: cannot read it as a qtrace trace for SQL: {message}",
                path.display()
            ),
            Error::Query(e) => write!(f, "{e}"),
            Error::Output(e) => write!(f, "cannot write the result: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Query(e) => Some(e),
            Error::Output(e) => Some(e),
            _ => None,
        }
    }
}

impl From<duckdb::Error> for Error {
    fn from(e: duckdb::Error) -> Self {
        Error::Query(e)
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Output(e)
    }
}
