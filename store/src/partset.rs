//! A part set: part N of every table in one folder (a conversion's output,
//! or one partition of a store), with the rows not yet handed to the
//! Parquet writers.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::columns::{EventCols, Interner, LossCols, PayloadCols, StreamCols};
use crate::error::StoreError;
use crate::part::PartWriter;
use crate::schema::{Table, BATCH_ROWS};

/// Tells part sets apart (a run's cached dictionary keys belong to one).
static GENERATION: AtomicU64 = AtomicU64::new(1);

/// Part N of the four tables under one root, in `<root>/<table>/<sub>/`.
#[derive(Debug)]
pub struct PartSet {
    /// This set's identity (for cached dictionary keys).
    pub(crate) generation: u64,
    /// The strings of this set's dictionary columns.
    pub(crate) dict: Interner,
    /// Events rows not yet written.
    pub(crate) events: EventCols,
    /// Losses rows not yet written.
    pub(crate) losses: LossCols,
    /// Payloads rows not yet written.
    pub(crate) payloads: PayloadCols,
    /// Streams rows not yet written.
    pub(crate) streams: StreamCols,
    writers: Vec<PartWriter>,
    /// The part number.
    pub(crate) number: u64,
}

impl PartSet {
    /// The folder of `table` under `root`, partition `sub` (empty for none).
    pub fn folder(root: &Path, table: Table, sub: &Path) -> PathBuf {
        root.join(table.name()).join(sub)
    }

    /// Starts part `n` of every table.
    ///
    /// # Errors
    /// [`StoreError`] when a folder or temp file cannot be made, or the part
    /// exists.
    pub fn create(root: &Path, sub: &Path, n: u64) -> Result<Self, StoreError> {
        let mut writers = Vec::with_capacity(4);
        for table in Table::ALL {
            writers.push(PartWriter::create(
                &Self::folder(root, table, sub),
                table,
                n,
            )?);
        }
        Ok(PartSet {
            generation: GENERATION.fetch_add(1, Ordering::Relaxed),
            dict: Interner::default(),
            events: EventCols::default(),
            losses: LossCols::default(),
            payloads: PayloadCols::default(),
            streams: StreamCols::default(),
            writers,
            number: n,
        })
    }

    /// Hands full batches to the writers (call after pushing rows).
    ///
    /// # Errors
    /// [`StoreError`] when writing fails.
    #[inline]
    pub fn flush_full(&mut self) -> Result<(), StoreError> {
        if self.events.len() >= BATCH_ROWS {
            let b = self.events.batch(&self.dict)?;
            self.writers[0].write(&b)?;
        }
        if self.losses.len() >= BATCH_ROWS {
            let b = self.losses.batch(&self.dict)?;
            self.writers[1].write(&b)?;
        }
        if self.payloads.len() >= BATCH_ROWS / 16 || self.payloads.bytes_held() > 8 << 20 {
            let b = self.payloads.batch(&self.dict)?;
            self.writers[2].write(&b)?;
        }
        Ok(())
    }

    /// Hands every row held to the writers.
    ///
    /// # Errors
    /// [`StoreError`] when writing fails.
    pub fn flush(&mut self) -> Result<(), StoreError> {
        let b = self.events.batch(&self.dict)?;
        self.writers[0].write(&b)?;
        let b = self.losses.batch(&self.dict)?;
        self.writers[1].write(&b)?;
        let b = self.payloads.batch(&self.dict)?;
        self.writers[2].write(&b)?;
        let b = self.streams.batch(&self.dict)?;
        self.writers[3].write(&b)?;
        Ok(())
    }

    /// The set's size on disk if it closed now, about (rows not yet handed
    /// to the writers count 8 bytes each).
    pub fn size(&self) -> u64 {
        let held = (self.events.len() + self.losses.len()) as u64 * 8;
        self.writers.iter().map(PartWriter::size).sum::<u64>() + held
    }

    /// Events rows in the set.
    pub fn event_rows(&self) -> u64 {
        self.writers[0].rows() + self.events.len() as u64
    }

    /// Losses rows in the set.
    pub fn losses_rows(&self) -> u64 {
        self.writers[1].rows() + self.losses.len() as u64
    }

    /// Payloads rows in the set.
    pub fn payloads_rows(&self) -> u64 {
        self.writers[2].rows() + self.payloads.len() as u64
    }

    /// Writes what is held and closes every part atomically; returns the
    /// parts' paths and sizes.
    ///
    /// # Errors
    /// [`StoreError`] when writing or closing fails.
    pub fn finish(mut self) -> Result<Vec<(PathBuf, u64)>, StoreError> {
        self.flush()?;
        self.writers.into_iter().map(PartWriter::finish).collect()
    }
}
