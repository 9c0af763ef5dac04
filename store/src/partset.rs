//! A part set: part N of every table in one folder (a conversion's output,
//! or one partition of a store), with the rows not yet handed to the
//! Parquet writers.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use arrow_array::RecordBatch;

use crate::columns::{EventCols, EventRows, Interner, JobCols, LossCols, PayloadCols, StreamCols};
use crate::error::StoreError;
use crate::part::PartWriter;
use crate::schema::{Table, BATCH_ROWS};

/// Tells part sets apart (a run's cached dictionary keys belong to one).
static GENERATION: AtomicU64 = AtomicU64::new(1);

/// What an encoder thread ends with: the parts closed, with their sizes.
type Closed = Result<Vec<(PathBuf, u64)>, StoreError>;

/// What the caller hands the encoder thread.
enum Job {
    /// Rows for table `0` (index into [`Table::ALL`]).
    Write(usize, RecordBatch),
    /// Events rows, made columns by the encoder thread (off the thread that
    /// reads or receives: a conversion's longest).
    Events(EventRows),
}

/// Part N of the four tables under one root, in `<root>/<table>/<sub>/`.
///
/// Rows are gathered here (by the receiver's or the converter's thread)
/// and encoded by a thread of the set's own: the Parquet encoding (most of
/// the cost) runs beside the thread that reads or receives. At most
/// `IN_FLIGHT` (4) batches wait for it: memory stays bounded, and a caller
/// faster than the encoder waits.
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
    /// The jobs table's rows not yet sent.
    pub(crate) job_rows: JobCols,
    /// The part number.
    pub(crate) number: u64,
    jobs: Option<SyncSender<Job>>,
    encoder: Option<JoinHandle<Closed>>,
    /// The encoded size so far, as the encoder last saw it.
    encoded: Arc<AtomicU64>,
    /// Rows handed to the encoder, per table.
    sent: [u64; 5],
}

/// Batches that may wait for a set's encoder.
pub const IN_FLIGHT: usize = 4;

impl PartSet {
    /// The folder of `table` under `root`, partition `sub` (empty for none).
    pub fn folder(root: &Path, table: Table, sub: &Path) -> PathBuf {
        root.join(table.name()).join(sub)
    }

    /// Starts part `n` of every table (the temps are created here, so an
    /// error is seen at once), and its encoder thread.
    ///
    /// # Errors
    /// [`StoreError`] when a folder or temp file cannot be made, or the part
    /// exists.
    pub fn create(root: &Path, sub: &Path, n: u64) -> Result<Self, StoreError> {
        Self::start(root, sub, n, false)
    }

    /// [`PartSet::create`], its columns encoded on two threads instead of
    /// one (a conversion: nothing else wants the cores; a receiver's set
    /// stays on one, so that its receiving thread is not starved).
    ///
    /// # Errors
    /// As [`PartSet::create`].
    pub fn create_parallel(root: &Path, sub: &Path, n: u64) -> Result<Self, StoreError> {
        Self::start(root, sub, n, true)
    }

    fn start(root: &Path, sub: &Path, n: u64, parallel: bool) -> Result<Self, StoreError> {
        let mut writers = Vec::with_capacity(Table::ALL.len());
        for table in Table::ALL {
            if table == Table::Jobs {
                continue;
            }
            writers.push(PartWriter::create(
                &Self::folder(root, table, sub),
                table,
                n,
                parallel,
            )?);
        }
        // The jobs part (last of Table::ALL) is made by the encoder thread:
        // its folders would lengthen the caller's pause (a receiver's, whose
        // datagrams wait meanwhile and so look delayed to the clock
        // alignment, 7.7); an error there stops the encoder, which `send`
        // and `finish` report.
        let jobs_dir = Self::folder(root, Table::Jobs, sub);
        let (tx, rx) = sync_channel::<Job>(IN_FLIGHT);
        let encoded = Arc::new(AtomicU64::new(0));
        let size = encoded.clone();
        let encoder = std::thread::Builder::new()
            .name(format!("qtrace-parquet-{n}"))
            .spawn(move || {
                writers.push(PartWriter::create(&jobs_dir, Table::Jobs, n, parallel)?);
                for job in rx {
                    let (t, batch) = match job {
                        Job::Write(t, batch) => (t, batch),
                        Job::Events(rows) => (0, rows.batch()?),
                    };
                    writers[t].write(&batch)?;
                    size.store(
                        writers.iter().map(PartWriter::size).sum(),
                        Ordering::Relaxed,
                    );
                }
                writers.into_iter().map(PartWriter::finish).collect()
            })
            .map_err(|e| StoreError::io("start the encoder thread for", root, e))?;
        Ok(PartSet {
            generation: GENERATION.fetch_add(1, Ordering::Relaxed),
            dict: Interner::default(),
            events: EventCols::default(),
            losses: LossCols::default(),
            payloads: PayloadCols::default(),
            streams: StreamCols::default(),
            job_rows: JobCols::default(),
            number: n,
            jobs: Some(tx),
            encoder: Some(encoder),
            encoded,
            sent: [0; 5],
        })
    }

    /// Hands a batch to the encoder; its error if it stopped.
    fn send(&mut self, t: usize, batch: RecordBatch) -> Result<(), StoreError> {
        if batch.num_rows() == 0 && t != 3 {
            return Ok(());
        }
        self.send_job(t, batch.num_rows(), Job::Write(t, batch))
    }

    /// Hands the events rows held to the encoder.
    fn send_events(&mut self) -> Result<(), StoreError> {
        let rows = self.events.take(&self.dict);
        if rows.is_empty() {
            return Ok(());
        }
        self.send_job(0, rows.len(), Job::Events(rows))
    }

    /// Hands `job` (`rows` rows of table `t`) to the encoder; its error if
    /// it stopped.
    fn send_job(&mut self, t: usize, rows: usize, job: Job) -> Result<(), StoreError> {
        self.sent[t] += rows as u64;
        let ok = self.jobs.as_ref().is_some_and(|tx| tx.send(job).is_ok());
        if ok {
            return Ok(());
        }
        // The encoder stopped on an error: take it.
        self.jobs = None;
        match self.encoder.take().map(JoinHandle::join) {
            Some(Ok(Err(e))) => Err(e),
            _ => Err(StoreError::Target(
                "the Parquet encoder thread stopped (a bug in qtrace-store, please report it)"
                    .into(),
            )),
        }
    }

    /// Hands full batches to the encoder (call after pushing rows).
    ///
    /// # Errors
    /// [`StoreError`] when writing failed.
    #[inline]
    pub fn flush_full(&mut self) -> Result<(), StoreError> {
        if self.events.len() >= BATCH_ROWS {
            self.send_events()?;
        }
        if self.losses.len() >= BATCH_ROWS {
            let b = self.losses.batch(&self.dict)?;
            self.send(1, b)?;
        }
        if self.payloads.len() >= BATCH_ROWS / 16 || self.payloads.bytes_held() > 8 << 20 {
            let b = self.payloads.batch(&self.dict)?;
            self.send(2, b)?;
        }
        if self.job_rows.len() >= BATCH_ROWS {
            let b = self.job_rows.batch(&self.dict)?;
            self.send(4, b)?;
        }
        Ok(())
    }

    /// Hands every row held to the encoder.
    ///
    /// # Errors
    /// [`StoreError`] when writing failed.
    pub fn flush(&mut self) -> Result<(), StoreError> {
        self.send_events()?;
        let b = self.losses.batch(&self.dict)?;
        self.send(1, b)?;
        let b = self.payloads.batch(&self.dict)?;
        self.send(2, b)?;
        let b = self.streams.batch(&self.dict)?;
        self.send(3, b)?;
        let b = self.job_rows.batch(&self.dict)?;
        self.send(4, b)
    }

    /// The set's size on disk if it closed now, about: what the encoder
    /// wrote, plus 8 bytes a row for rows not yet encoded.
    pub fn size(&self) -> u64 {
        let held = (self.events.len() + self.losses.len()) as u64 * 8;
        self.encoded.load(Ordering::Relaxed) + held
    }

    /// Events rows in the set.
    pub fn event_rows(&self) -> u64 {
        self.sent[0] + self.events.len() as u64
    }

    /// Losses rows in the set.
    pub fn losses_rows(&self) -> u64 {
        self.sent[1] + self.losses.len() as u64
    }

    /// Payloads rows in the set.
    pub fn payloads_rows(&self) -> u64 {
        self.sent[2] + self.payloads.len() as u64
    }

    /// Writes what is held and closes every part atomically (after the
    /// encoder finished); returns the parts' paths and sizes.
    ///
    /// # Errors
    /// [`StoreError`] when writing or closing fails.
    pub fn finish(mut self) -> Result<Vec<(PathBuf, u64)>, StoreError> {
        self.flush()?;
        self.jobs = None; // the encoder's loop ends: it closes the parts
        match self.encoder.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            _ => Err(StoreError::Target(
                "the Parquet encoder thread panicked (a bug in qtrace-store, please report it)"
                    .into(),
            )),
        }
    }
}
