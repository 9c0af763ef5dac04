//! The store's errors.

use std::fmt;
use std::path::{Path, PathBuf};

/// What went wrong while writing or reading Parquet tables.
#[derive(Debug)]
#[non_exhaustive]
pub enum StoreError {
    /// A file or folder operation failed.
    Io {
        /// What was being done.
        action: &'static str,
        /// On what.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
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
}

impl StoreError {
    pub(crate) fn io(action: &'static str, path: &Path, source: std::io::Error) -> Self {
        StoreError::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Io {
                action,
                path,
                source,
            } => write!(f, "cannot {action} {}: {source}", path.display()),
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
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Io { source, .. } => Some(source),
            StoreError::Parquet(e) => Some(e),
            StoreError::Arrow(e) => Some(e),
            StoreError::Read(e) => Some(e),
            _ => None,
        }
    }
}

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
