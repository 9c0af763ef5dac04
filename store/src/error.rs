//! The store's errors.

use std::fmt;
use std::path::{Path, PathBuf};

/// What went wrong while writing or reading Parquet tables.
///
/// Each variant holds its cause once, in its message: `source()` is `None`
/// (the command prints the message; a chain printer would print the cause
/// twice). The cause's value stays in the variant for matching.
#[derive(Debug)]
#[non_exhaustive]
pub enum StoreError {
    /// A file or folder operation failed.
    Io(qtrace::IoError),
    /// The Parquet writer failed.
    Parquet(parquet::errors::ParquetError),
    /// Building a record batch failed (a bug: the columns disagree with the
    /// schema).
    Arrow(arrow_schema::ArrowError),
    /// A trace file could not be read.
    Read(qtrace::reader::ReadError),
    /// A part of that number exists already: parts are never overwritten.
    Exists(PathBuf),
    /// The output folder is not usable.
    Target(String),
    /// The store stopped on `cause`: `count` events and losses it had
    /// taken are not in its closed parts. `recorded`: they are in a
    /// `losses` row of kind `unstored` per stream (FORMAT.md 7.4), written
    /// after the error (the folder re-created if it was deleted); else
    /// this error is the only place that says so.
    Unstored {
        /// The first write error.
        cause: Box<StoreError>,
        /// Events rows and losses counts taken but not stored whole.
        count: u64,
        /// Whether `unstored` losses rows say so in the store.
        recorded: bool,
    },
}

impl StoreError {
    pub(crate) fn io(action: &'static str, path: &Path, source: std::io::Error) -> Self {
        StoreError::Io(qtrace::IoError::new(action, path, source))
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Io(e) => write!(f, "{e}"),
            StoreError::Parquet(e) => write!(f, "writing Parquet failed: {e}"),
            StoreError::Arrow(e) => write!(
                f,
                "building a record batch failed (a bug in qtrace-store, please report it): {e}"
            ),
            StoreError::Read(e) => write!(f, "{e}"),
            StoreError::Exists(p) => write!(
                f,
                "{} exists: parts are never overwritten; move it away or write to another folder",
                p.display()
            ),
            StoreError::Target(s) => f.write_str(s),
            StoreError::Unstored {
                cause,
                count,
                recorded,
            } => write!(
                f,
                "{cause}; {count} events and losses it took are not in its closed parts{}",
                if *recorded {
                    " (written as losses of kind unstored)"
                } else {
                    " (nothing more could be written: this message is their only record)"
                }
            ),
        }
    }
}

/// The cause is in the message (the type's docs): no `source()`.
impl std::error::Error for StoreError {}

impl From<parquet::errors::ParquetError> for StoreError {
    fn from(e: parquet::errors::ParquetError) -> Self {
        StoreError::Parquet(e)
    }
}

impl From<arrow_schema::ArrowError> for StoreError {
    fn from(e: arrow_schema::ArrowError) -> Self {
        StoreError::Arrow(e)
    }
}

impl From<qtrace::reader::ReadError> for StoreError {
    fn from(e: qtrace::reader::ReadError) -> Self {
        StoreError::Read(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    /// Every error's chain: no message repeats the text of its source.
    fn assert_cause_once(e: &(dyn std::error::Error + 'static)) {
        let mut cur = e;
        while let Some(next) = cur.source() {
            let (outer, inner) = (cur.to_string(), next.to_string());
            assert!(
                !outer.contains(&inner),
                "{outer:?} repeats its source {inner:?}"
            );
            cur = next;
        }
    }

    #[test]
    fn causes_are_held_once() {
        let io = StoreError::io(
            "create",
            Path::new("/t/part-0.parquet"),
            std::io::Error::new(std::io::ErrorKind::PermissionDenied, "denied"),
        );
        assert_eq!(io.to_string(), "cannot create /t/part-0.parquet: denied");
        let parquet = StoreError::from(parquet::errors::ParquetError::General("bad page".into()));
        assert_eq!(
            parquet.to_string(),
            "writing Parquet failed: Parquet error: bad page"
        );
        let arrow = StoreError::from(arrow_schema::ArrowError::SchemaError("x".into()));
        let read = StoreError::from(qtrace::reader::ReadError::from(
            qtrace::wire::WireError::Truncated {
                offset: 64,
                needed: 32,
                available: 4,
                what: "record",
            },
        ));
        for e in [&io, &parquet, &arrow, &read] {
            assert!(e.source().is_none(), "{e}");
            assert_cause_once(e);
        }
        match io {
            StoreError::Io(e) => assert_eq!(e.source.kind(), std::io::ErrorKind::PermissionDenied),
            other => panic!("{other:?}"),
        }
    }
}
