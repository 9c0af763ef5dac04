//! One Parquet part written beside and closed atomically: rows go to a
//! hidden temp file (`.part-N.parquet.tmp`, which no `*.parquet` glob
//! matches); closing writes the footer, fsyncs the file, renames it to
//! `part-N.parquet` and fsyncs the folder. A reader never sees half a part;
//! a crash leaves the temp, which the next start accounts for.

use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use parquet::arrow::arrow_writer::ArrowWriterOptions;
use parquet::arrow::ArrowWriter;

use crate::error::StoreError;
use crate::schema::Table;

/// The name of part `n`.
pub fn part_name(n: u64) -> String {
    format!("part-{n}.parquet")
}

/// The temp name of part `n` while it is written.
pub fn temp_name(n: u64) -> String {
    format!(".part-{n}.parquet.tmp")
}

/// The part number of a file name `part-N.parquet` or `.part-N.parquet.tmp`.
pub fn part_number(name: &str) -> Option<(u64, bool)> {
    if let Some(n) = name
        .strip_prefix(".part-")
        .and_then(|s| s.strip_suffix(".parquet.tmp"))
    {
        return n.parse().ok().map(|n| (n, true));
    }
    name.strip_prefix("part-")
        .and_then(|s| s.strip_suffix(".parquet"))
        .and_then(|n| n.parse().ok())
        .map(|n| (n, false))
}

/// A part being written.
pub struct PartWriter {
    writer: ArrowWriter<File>,
    temp: PathBuf,
    path: PathBuf,
    rows: u64,
}

impl std::fmt::Debug for PartWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartWriter")
            .field("path", &self.path)
            .field("rows", &self.rows)
            .finish()
    }
}

impl PartWriter {
    /// Starts part `n` of `table` in `dir` (created if missing). An existing
    /// part of that number is never overwritten: this fails.
    ///
    /// # Errors
    /// [`StoreError::Io`] when the folder or the temp file cannot be made,
    /// [`StoreError::Exists`] when the part exists.
    pub fn create(dir: &Path, table: Table, n: u64) -> Result<Self, StoreError> {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::io("create the folder", dir, e))?;
        let path = dir.join(part_name(n));
        if path.exists() {
            return Err(StoreError::Exists(path));
        }
        let temp = dir.join(temp_name(n));
        let file = File::create(&temp).map_err(|e| StoreError::io("create", &temp, e))?;
        // No ARROW:schema in the file: readers see the Parquet types
        // (strings as strings, not Arrow dictionaries), so that a Hive
        // partition value (`host=…`, a string) merges with the column.
        let options = ArrowWriterOptions::new()
            .with_properties(table.properties())
            .with_skip_arrow_metadata(true);
        let writer = ArrowWriter::try_new_with_options(file, table.schema(), options)?;
        Ok(PartWriter {
            writer,
            temp,
            path,
            rows: 0,
        })
    }

    /// Writes rows.
    ///
    /// # Errors
    /// [`StoreError::Parquet`] when encoding or writing fails.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<(), StoreError> {
        if batch.num_rows() > 0 {
            self.writer.write(batch)?;
            self.rows += batch.num_rows() as u64;
        }
        Ok(())
    }

    /// Bytes on disk so far plus the encoded bytes of the row group in
    /// progress: the part's size if it closed now, about.
    pub fn size(&self) -> u64 {
        (self.writer.bytes_written() + self.writer.in_progress_size()) as u64
    }

    /// Writes the footer, fsyncs, renames the temp to `part-N.parquet` and
    /// fsyncs the folder; returns the part's path and size.
    ///
    /// # Errors
    /// [`StoreError`] when any step fails (the temp stays).
    pub fn finish(self) -> Result<(PathBuf, u64), StoreError> {
        let PartWriter {
            writer, temp, path, ..
        } = self;
        let file = writer.into_inner()?;
        file.sync_all()
            .map_err(|e| StoreError::io("fsync", &temp, e))?;
        let size = file
            .metadata()
            .map_err(|e| StoreError::io("stat", &temp, e))?
            .len();
        drop(file);
        std::fs::rename(&temp, &path).map_err(|e| StoreError::io("rename", &temp, e))?;
        sync_dir(path.parent().unwrap_or(Path::new(".")))?;
        Ok((path, size))
    }
}

/// Fsyncs a folder, so a rename in it survives a power cut.
///
/// # Errors
/// [`StoreError::Io`] when the folder cannot be opened or synced.
pub fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StoreError::io("fsync the folder", dir, e))
}
