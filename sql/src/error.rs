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
        /// Why: the file could not be read, the scratch folder made, or the
        /// store's converter failed.
        cause: qtrace_store::StoreError,
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
            Error::Convert { path, cause } => write!(
                f,
                "{}: cannot read it as a qtrace trace for SQL: {cause}",
                path.display()
            ),
            Error::Query(e) => write!(f, "{e}"),
            Error::Output(e) => write!(f, "cannot write the result: {e}"),
        }
    }
}

/// Every cause is in the message (the command prints the message; a chain
/// printer would print it twice), so `source()` is `None`; the cause's value
/// stays in the variant for matching.
impl std::error::Error for Error {}

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn causes_are_held_once() {
        let cause = qtrace_store::StoreError::Io(qtrace::IoError::new(
            "open",
            "/t/a.qtr",
            io::Error::new(io::ErrorKind::NotFound, "gone"),
        ));
        let convert = Error::Convert {
            path: "/t/a.qtr".into(),
            cause,
        };
        assert_eq!(
            convert.to_string(),
            "/t/a.qtr: cannot read it as a qtrace trace for SQL: cannot open /t/a.qtr: gone"
        );
        let output = Error::from(io::Error::new(io::ErrorKind::BrokenPipe, "closed"));
        assert_eq!(output.to_string(), "cannot write the result: closed");
        // The whole chain: no message repeats the text of its source.
        for e in [&convert, &output] {
            let mut cur: &(dyn std::error::Error + 'static) = e;
            while let Some(next) = cur.source() {
                assert!(!cur.to_string().contains(&next.to_string()), "{cur}");
                cur = next;
            }
            assert!(e.source().is_none(), "{e}");
        }
        match convert {
            Error::Convert {
                cause: qtrace_store::StoreError::Io(e),
                ..
            } => assert_eq!(e.source.kind(), io::ErrorKind::NotFound),
            other => panic!("{other:?}"),
        }
    }
}
