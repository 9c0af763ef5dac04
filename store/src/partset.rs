//! A part set: part N of every table in one folder (a conversion's output,
//! or one partition of a store), with the rows not yet handed to the
//! Parquet writers.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use arrow_array::cast::AsArray;
use arrow_array::RecordBatch;

use crate::columns::{
    EventCols, EventRows, Interner, JobCols, LossCols, PayloadCols, Scratch, Spare, StreamCols,
};
use crate::error::StoreError;
use crate::part::PartWriter;
use crate::schema::{Table, BATCH_ROWS};

/// Tells part sets apart (a run's cached dictionary keys belong to one).
static GENERATION: AtomicU64 = AtomicU64::new(1);

/// What an encoder thread ends with: the parts closed, with their sizes.
type Closed = Result<Vec<(PathBuf, u64)>, StoreError>;

/// Opens when a part set's encoder thread has ended (its parts renamed
/// into place, or it stopped on an error): its sender half is dropped then.
/// The next set of the same folder waits for it before it creates its
/// temps, so a crash leaves at most one unfinished set there.
#[derive(Debug)]
pub struct Gate(Receiver<()>);

impl Gate {
    fn wait(self) {
        // Err once the sender is dropped: the gate is open.
        let _ = self.0.recv();
    }
}

/// A part set closing on its own encoder thread: the rows were all handed
/// over, the thread writes what is left, closes each part atomically and
/// ends.
#[derive(Debug)]
pub struct Closing {
    /// The part number.
    pub number: u64,
    encoder: Option<JoinHandle<Closed>>,
    /// Taken by the next set of the same folder.
    pub gate: Option<Gate>,
}

impl Closing {
    /// Whether the parts are closed (or closing failed): [`Closing::wait`]
    /// would not wait.
    pub fn is_done(&self) -> bool {
        self.encoder.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Waits for the encoder thread; the parts' paths and sizes.
    ///
    /// # Errors
    /// [`StoreError`] when writing or closing failed.
    pub fn wait(mut self) -> Result<Vec<(PathBuf, u64)>, StoreError> {
        join(self.encoder.take())
    }
}

/// The end of an encoder thread.
fn join(encoder: Option<JoinHandle<Closed>>) -> Closed {
    match encoder.map(JoinHandle::join) {
        Some(Ok(result)) => result,
        _ => Err(StoreError::Target(
            "the Parquet encoder thread panicked (a bug in qtrace-store, please report it)".into(),
        )),
    }
}

/// Closes every part of a set at once: each on a scoped thread of its own
/// but the first (the events', the longest: its last row group's encoding
/// and footer), on this one. Their fsyncs, the folders' too, wait on the
/// disk together instead of one after another. Every part is closed
/// whatever the others do; one error is returned as it is, several as one
/// naming them all.
fn finish_all(writers: Vec<PartWriter>) -> Closed {
    let results: Vec<Result<(PathBuf, u64), StoreError>> = std::thread::scope(|s| {
        let mut writers = writers.into_iter();
        let first = writers.next();
        let others: Vec<_> = writers
            .map(|w| {
                std::thread::Builder::new()
                    .name("qtrace-close".into())
                    .spawn_scoped(s, move || w.finish())
            })
            .collect();
        let mut results: Vec<_> = first.map(PartWriter::finish).into_iter().collect();
        results.extend(others.into_iter().map(|h| match h {
            Ok(h) => h.join().unwrap_or_else(|_| {
                Err(StoreError::Target(
                    "a part's closing thread panicked (a bug in qtrace-store, please report it)"
                        .into(),
                ))
            }),
            // Its part stays a temp, as after any failed close.
            Err(e) => Err(StoreError::Target(format!(
                "cannot start a thread to close a part: {e}"
            ))),
        }));
        results
    });
    let (parts, errors): (Vec<_>, Vec<_>) = results.into_iter().partition(Result::is_ok);
    let mut errors: Vec<StoreError> = errors.into_iter().filter_map(Result::err).collect();
    if !errors.is_empty() {
        // The set is lost whole (its rows are counted where it failed):
        // its parts that did reach their place go, or their rows would be
        // both rows and not stored (FORMAT.md 7.1).
        for (path, _) in parts.iter().filter_map(|r| r.as_ref().ok()) {
            let _ = std::fs::remove_file(path);
        }
    }
    match errors.len() {
        0 => Ok(parts.into_iter().filter_map(Result::ok).collect()),
        1 => Err(errors.remove(0)),
        _ => Err(StoreError::Target(
            errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
        )),
    }
}

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
/// and encoded by a thread of the set's own (its columns split with a
/// second for a conversion's or a receiver's set): the Parquet encoding
/// (most of the cost) runs beside the thread that reads or receives. At most
/// `IN_FLIGHT` (4) batches wait for it (a conversion's, 2): memory stays
/// bounded, and a caller faster than the encoder waits.
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
    /// Events rows buffers the encoder made columns, given back emptied
    /// (as many as were in flight at most).
    spares: Receiver<Spare>,
    encoder: Option<JoinHandle<Closed>>,
    /// The encoded size so far, as the encoder last saw it.
    encoded: Arc<AtomicU64>,
    /// Rows handed to the encoder, per table.
    sent: [u64; 5],
    /// Opens when the encoder thread ends.
    gate: Option<Gate>,
}

/// Batches that may wait for a set's encoder.
pub const IN_FLIGHT: usize = 4;

/// Batches that may wait for a conversion's encoder
/// ([`PartSet::create_parallel`]): the reading thread, faster than the
/// encoder, waits sooner, and the batches it would have read ahead are not
/// held (a receiver's set keeps `IN_FLIGHT`: its socket must not wait).
const CONVERT_IN_FLIGHT: usize = 2;

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
        Self::start(root, sub, n, false, IN_FLIGHT, None)
    }

    /// [`PartSet::create`], its columns encoded on two threads instead of
    /// one, its queue `CONVERT_IN_FLIGHT` deep (a conversion).
    ///
    /// # Errors
    /// As [`PartSet::create`].
    pub fn create_parallel(root: &Path, sub: &Path, n: u64) -> Result<Self, StoreError> {
        Self::start(root, sub, n, true, CONVERT_IN_FLIGHT, None)
    }

    /// A receiver's set: its columns encoded on two threads, its queue
    /// `IN_FLIGHT` deep (its socket must not wait). Each batch's encoding
    /// then takes about half the time, and the receiving thread less often
    /// finds the queue full: 2 M-event rounds on 2 cores received 10.2
    /// against 9.2 M events/s with one thread (mean of 15; docs/benchmarks-history.md,
    /// `recvstore`).
    ///
    /// With `after` (the previous set of the same folder, still closing),
    /// its temps are created by its encoder thread once that gate opens
    /// (the previous set is then closed), and rows handed over meanwhile
    /// wait in its queue (`IN_FLIGHT` batches at most); an error creating
    /// them is reported by the next hand-over or [`PartSet::finish`].
    /// Without, as [`PartSet::create`].
    ///
    /// # Errors
    /// As [`PartSet::create`]; with `after`, only when the encoder thread
    /// cannot be started.
    pub(crate) fn create_receiving(
        root: &Path,
        sub: &Path,
        n: u64,
        after: Option<Gate>,
    ) -> Result<Self, StoreError> {
        Self::start(root, sub, n, true, IN_FLIGHT, after)
    }

    fn start(
        root: &Path,
        sub: &Path,
        n: u64,
        parallel: bool,
        depth: usize,
        after: Option<Gate>,
    ) -> Result<Self, StoreError> {
        let mut writers = Vec::with_capacity(Table::ALL.len());
        // Without a set to wait for, the temps are created here: an error
        // is seen at once.
        let folders: Vec<(Table, PathBuf)> = Table::ALL
            .into_iter()
            .filter(|&t| t != Table::Jobs)
            .map(|t| (t, Self::folder(root, t, sub)))
            .collect();
        if after.is_none() {
            for (table, dir) in &folders {
                writers.push(PartWriter::create(dir, *table, n, parallel)?);
            }
        }
        // The jobs part (last of Table::ALL) is made by the encoder thread:
        // its folders would lengthen the caller's pause (a receiver's, whose
        // datagrams wait meanwhile and so look delayed to the clock
        // alignment, 7.7); an error there stops the encoder, which `send`
        // and `finish` report.
        let jobs_dir = Self::folder(root, Table::Jobs, sub);
        let (tx, rx) = sync_channel::<Job>(depth);
        let (open_tx, open_rx): (Sender<()>, Receiver<()>) = channel();
        let (spare_tx, spares) = channel::<Spare>();
        let encoded = Arc::new(AtomicU64::new(0));
        let size = encoded.clone();
        let encoder = std::thread::Builder::new()
            .name(format!("qtrace-parquet-{n}"))
            .spawn(move || {
                // Dropped when this thread ends, however: the gate opens.
                let _open = open_tx;
                if let Some(gate) = after {
                    gate.wait();
                    for (table, dir) in &folders {
                        writers.push(PartWriter::create(dir, *table, n, parallel)?);
                    }
                }
                writers.push(PartWriter::create(&jobs_dir, Table::Jobs, n, parallel)?);
                let mut scratch = Scratch::default();
                for job in rx {
                    match job {
                        Job::Write(t, batch) => writers[t].write(&batch)?,
                        Job::Events(rows) => {
                            let (columns, n, strings, spare) = rows.keyed(&mut scratch);
                            // Gone once the set is closed: then dropped.
                            let _ = spare_tx.send(spare);
                            let strings = strings.as_string_opt::<i32>().ok_or_else(|| {
                                StoreError::Target(
                                    "the events' dictionary is not Utf8 (a bug in qtrace-store, please report it)"
                                        .into(),
                                )
                            })?;
                            writers[0].write_keyed(&columns, n, strings)?;
                            scratch.give_back(columns);
                        }
                    }
                    size.store(
                        writers.iter().map(PartWriter::size).sum(),
                        Ordering::Relaxed,
                    );
                }
                finish_all(writers)
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
            spares,
            encoder: Some(encoder),
            encoded,
            sent: [0; 5],
            gate: Some(Gate(open_rx)),
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
        let rows = self.events.take(&self.dict, self.spares.try_recv().ok());
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

    /// Hands the held rows of a table to the encoder when `n` more could
    /// take it past [`BATCH_ROWS`]: a batch is one data page, and FORMAT.md
    /// 7.2 bounds a page at 65,536 rows. Call before pushing `n` records
    /// (each makes at most one row of `events`, `losses` and `jobs`).
    ///
    /// # Errors
    /// [`StoreError`] when writing failed.
    #[inline]
    pub fn make_room(&mut self, n: usize) -> Result<(), StoreError> {
        if self.events.len() + n > BATCH_ROWS {
            self.send_events()?;
        }
        if self.losses.len() + n > BATCH_ROWS {
            let b = self.losses.batch(&self.dict)?;
            self.send(1, b)?;
        }
        if self.job_rows.len() + n > BATCH_ROWS {
            let b = self.job_rows.batch(&self.dict)?;
            self.send(4, b)?;
        }
        Ok(())
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
    pub fn finish(self) -> Result<Vec<(PathBuf, u64)>, StoreError> {
        self.close()?.wait()
    }

    /// Hands every row held to the encoder and lets it close the parts on
    /// its own (a receiver's thread does not wait for the encoding of the
    /// last batches, the footers and the fsyncs: datagrams would wait in
    /// the socket meanwhile, and be lost once its buffer is full).
    ///
    /// # Errors
    /// [`StoreError`] when writing failed before.
    pub fn close(mut self) -> Result<Closing, StoreError> {
        self.flush()?;
        self.jobs = None; // the encoder's loop ends: it closes the parts
        Ok(Closing {
            number: self.number,
            encoder: self.encoder.take(),
            gate: self.gate.take(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::part::{part_name, temp_name};

    fn files(root: &Path, n: u64, name: fn(u64) -> String) -> Vec<bool> {
        Table::ALL
            .into_iter()
            .map(|t| {
                PartSet::folder(root, t, Path::new("host=a"))
                    .join(name(n))
                    .exists()
            })
            .collect()
    }

    /// The parts are closed together (`finish_all`): one that fails does
    /// not stop the others, every failure is reported, and the set is lost
    /// whole (the parts that reached their place are removed).
    #[test]
    fn closing_a_set_closes_every_part_and_reports_every_failure() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let sub = Path::new("host=a");
        let set = PartSet::create(root, sub, 1).unwrap();
        // Their temps' folders gone: the renames fail.
        for t in [Table::Losses, Table::Payloads] {
            std::fs::remove_dir_all(PartSet::folder(root, t, sub)).unwrap();
        }
        let e = set.finish().unwrap_err().to_string();
        assert!(e.contains("losses") && e.contains("payloads"), "{e}");
        assert_eq!(files(root, 1, part_name), [false; 5]);
    }

    /// A receiver's set (two encoding threads, `create_receiving`) writes
    /// the same bytes as a set of one thread given the same rows: several
    /// batches, each past the size that splits its columns between the
    /// threads, and reused buffers from the second batch on.
    #[test]
    fn two_encoding_threads_write_the_same_bytes_as_one() {
        use crate::columns::{At, EventRow, RunKeys};
        let dir = tempfile::tempdir().unwrap();
        let write = |root: &Path, two: bool| {
            let sub = Path::new("host=a");
            let mut set = if two {
                PartSet::create_receiving(root, sub, 1, None).unwrap()
            } else {
                PartSet::create(root, sub, 1).unwrap()
            };
            let k = RunKeys {
                run: set.dict.key("r"),
                host: set.dict.key("a"),
                sender: Some(3),
            };
            let name = set.dict.key("n");
            for i in 0..(3 * BATCH_ROWS + 1000) as u64 {
                let at = At {
                    seq: i,
                    time_ns: (i * i % 977) as i64 + i as i64 * 50,
                    aligned_ns: i as i64 * 50 + 7,
                };
                let row = EventRow {
                    source: (i % 5) as u32,
                    event_id: (i % 7) as u16,
                    class: Some(name),
                    event: (i % 3 != 0).then_some(name),
                    args: [i, i.wrapping_mul(0x9E37_79B9_7F4A_7C15)],
                    flags: (i % 2) as u16,
                    queue: Some(1),
                };
                set.events.push(&k, &at, &row);
                set.flush_full().unwrap();
            }
            set.finish().unwrap()
        };
        let one = write(&dir.path().join("one"), false);
        let two = write(&dir.path().join("two"), true);
        assert_eq!(one.len(), two.len());
        for ((a, _), (b, _)) in one.iter().zip(&two) {
            assert_eq!(
                std::fs::read(a).unwrap(),
                std::fs::read(b).unwrap(),
                "{a:?}"
            );
        }
    }

    /// A set made after another of its folder creates its temps only once
    /// that one is closed (renamed into place): a crash meanwhile leaves one
    /// unfinished set there, not two. Closing does not wait for the
    /// encoder; waiting gives the parts.
    #[test]
    fn the_next_set_of_a_folder_starts_once_the_closing_one_is_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let sub = Path::new("host=a");
        let mut first = PartSet::create(root, sub, 1).unwrap();
        let gate = first.gate.take().unwrap();
        let second = PartSet::create_receiving(root, sub, 2, Some(gate)).unwrap();
        // The first is open: its encoder runs, so the second waits.
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_eq!(files(root, 1, temp_name)[..4], [true; 4]);
        assert_eq!(files(root, 2, temp_name), [false; 5]);
        let closing = first.close().unwrap();
        assert_eq!(closing.number, 1);
        let parts = closing.wait().unwrap();
        assert_eq!(parts.len(), Table::ALL.len());
        assert_eq!(files(root, 1, part_name), [true; 5]);
        assert_eq!(files(root, 1, temp_name), [false; 5]);
        let closed = second.finish().unwrap();
        assert_eq!(closed.len(), Table::ALL.len());
        assert_eq!(files(root, 2, part_name), [true; 5]);
        assert_eq!(files(root, 2, temp_name), [false; 5]);
    }
}
