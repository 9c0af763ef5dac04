//! One Parquet part written beside and closed atomically: rows go to a
//! hidden temp file (`.part-N.parquet.tmp`, which no `*.parquet` glob
//! matches); closing writes the footer, fsyncs the file, renames it to
//! `part-N.parquet` and fsyncs the folder (the row groups closed before
//! were synced behind, on a thread, while the next was encoded). A reader
//! never sees half a part; a crash leaves the temp, which the next start
//! accounts for.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, SchemaRef};
use bytes::Bytes;
use parquet::arrow::arrow_writer::{
    compute_leaves, ArrowColumnChunk, ArrowColumnWriter, ArrowRowGroupWriterFactory,
};
use parquet::arrow::ArrowSchemaConverter;
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::ParquetError;
use parquet::file::properties::WriterPropertiesPtr;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::ColumnDescPtr;

use crate::error::StoreError;
use crate::names::NameChunk;
use crate::numbers::{self, NumberChunk};
use crate::schema::{Table, EVENT_ROW_GROUP, ZSTD_LEVEL};

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

/// One column of the row group in progress.
enum Column {
    /// Encoded by the `parquet` crate.
    Arrow(Box<ArrowColumnWriter>),
    /// A dictionary-encoded string column, encoded by [`NameChunk`].
    Names(NameChunk),
    /// An integer column, encoded by [`NumberChunk`].
    Numbers(NumberChunk),
}

/// A closed column chunk, to append to its row group.
enum Chunk {
    Arrow(ArrowColumnChunk),
    Raw(Bytes, ColumnCloseResult),
}

impl Column {
    fn write(
        &mut self,
        field: &Field,
        array: &ArrayRef,
        keyed: Option<&StringArray>,
    ) -> Result<(), ParquetError> {
        match self {
            Column::Arrow(w) => {
                for leaf in compute_leaves(field, array)? {
                    w.write(&leaf)?;
                }
                Ok(())
            }
            Column::Names(n) => n.write(array, keyed),
            Column::Numbers(n) => n.write(array),
        }
    }

    fn close(self) -> Result<Chunk, ParquetError> {
        match self {
            Column::Arrow(w) => w.close().map(Chunk::Arrow),
            Column::Names(n) => n.close().map(|(b, c)| Chunk::Raw(b, c)),
            Column::Numbers(n) => n.close().map(|(b, c)| Chunk::Raw(b, c)),
        }
    }

    fn size(&self) -> usize {
        match self {
            Column::Arrow(w) => w.get_estimated_total_bytes(),
            Column::Names(n) => n.size(),
            Column::Numbers(n) => n.size(),
        }
    }
}

/// Batches of at least this many rows are encoded on two threads (the
/// columns split in two halves); smaller ones are not worth a thread.
const PARALLEL_ROWS: usize = 8 * 1024;

/// The bytes gathered before a write to a part's file: the `parquet`
/// crate copies a closed column chunk through an 8 KiB buffer, a `write`
/// call each 8 KiB (about 380 for an events row group of 3 MB, on the
/// encoder thread while the other core waits).
const WRITE_BUFFER: usize = 1 << 20;

/// What a thread's share of [`each`] ends with: per column its index,
/// result and time taken.
type Done<T> = Result<Vec<(usize, T, Duration)>, ParquetError>;

/// Runs `f` over every column, on two threads when `parallel`: the columns
/// taken longest first by `cost` (each column's time the last time), each
/// by whichever thread is free next, so that one costly column (a PLAIN
/// `arg0` under zstd) does not leave the other thread idle as halves by
/// position did, nor a thread slowed by sharing its core (with the reading
/// thread) hold the other waiting at the join as a split made beforehand
/// did. `cost` is then updated.
fn each<C: Send, T: Send>(
    columns: &mut [C],
    cost: &mut [Duration],
    parallel: bool,
    f: impl Fn(usize, &mut C) -> Result<T, ParquetError> + Sync,
) -> Result<Vec<T>, ParquetError> {
    let n = columns.len();
    let mut all: Vec<(usize, &mut C)> = columns.iter_mut().enumerate().collect();
    let of = |i: usize| cost.get(i).copied().unwrap_or_default();
    all.sort_by_key(|(i, _)| std::cmp::Reverse(of(*i)));
    // Taken one at a time by either thread (a lock a column, 14 a batch).
    let queue = Mutex::new(all.into_iter());
    let run = || -> Done<T> {
        let mut done = Vec::new();
        loop {
            let next = queue.lock().unwrap_or_else(PoisonError::into_inner).next();
            let Some((i, c)) = next else {
                return Ok(done);
            };
            let start = Instant::now();
            let r = f(i, c)?;
            done.push((i, r, start.elapsed()));
        }
    };
    let done = if !parallel || n < 2 {
        run()?
    } else {
        std::thread::scope(|s| -> Done<T> {
            let second = s.spawn(run);
            let mut first = run()?;
            let second = second.join().map_err(|_| {
                ParquetError::General("a Parquet encoding thread panicked".into())
            })??;
            first.extend(second);
            Ok(first)
        })?
    };
    let mut out: Vec<Option<T>> = (0..n).map(|_| None).collect();
    for (i, r, took) in done {
        if let Some(c) = cost.get_mut(i) {
            *c = took;
        }
        out[i] = Some(r);
    }
    Ok(out.into_iter().flatten().collect())
}

/// A part being written: row groups of at most [`EVENT_ROW_GROUP`] rows,
/// their columns encoded on one thread or two, the dictionary-encoded
/// string columns by [`NameChunk`], the integers by [`NumberChunk`].
pub struct PartWriter {
    file: SerializedFileWriter<BufWriter<File>>,
    factory: ArrowRowGroupWriterFactory,
    schema: SchemaRef,
    props: WriterPropertiesPtr,
    leaves: Vec<ColumnDescPtr>,
    columns: Vec<Column>,
    /// Row groups closed.
    groups: usize,
    /// Rows in the row group in progress.
    group_rows: usize,
    /// Encode on two threads.
    parallel: bool,
    /// Each column's time to encode a batch, the last time ([`each`]).
    cost: Vec<Duration>,
    /// Each column's time to close its chunk, the last time.
    close_cost: Vec<Duration>,
    temp: PathBuf,
    path: PathBuf,
    rows: u64,
    /// The fdatasync of the row groups closed so far, on a thread of its
    /// own ([`PartWriter::sync_behind`]); joined by `finish`.
    sync: Option<JoinHandle<std::io::Result<()>>>,
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
    /// Starts part `n` of `table` in `dir` (created if missing), its columns
    /// encoded on two threads when `parallel`. An existing part of that
    /// number is never overwritten: this fails.
    ///
    /// # Errors
    /// [`StoreError::Io`] when the folder or the temp file cannot be made,
    /// [`StoreError::Exists`] when the part exists.
    pub fn create(dir: &Path, table: Table, n: u64, parallel: bool) -> Result<Self, StoreError> {
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
        let props = Arc::new(table.properties());
        let schema = table.schema();
        let columns = schema.fields().len();
        let parquet = ArrowSchemaConverter::new()
            .with_coerce_types(props.coerce_types())
            .convert(&schema)?;
        let file = BufWriter::with_capacity(WRITE_BUFFER, file);
        let file = SerializedFileWriter::new(file, parquet.root_schema_ptr(), props.clone())?;
        let leaves = file.schema_descr().columns().to_vec();
        let factory = ArrowRowGroupWriterFactory::new(&file, schema.clone());
        // The column writers are made at the first rows, by the thread that
        // encodes: a receiver opening a part set does not wait for them.
        Ok(PartWriter {
            file,
            factory,
            schema,
            props,
            leaves,
            columns: Vec::new(),
            groups: 0,
            group_rows: 0,
            parallel,
            cost: vec![Duration::ZERO; columns],
            close_cost: vec![Duration::ZERO; columns],
            temp,
            path,
            rows: 0,
            sync: None,
        })
    }

    /// The column writers of the next row group.
    fn new_columns(&self) -> Result<Vec<Column>, ParquetError> {
        let arrow = self.factory.create_column_writers(self.groups)?;
        arrow
            .into_iter()
            .zip(self.schema.fields())
            .zip(&self.leaves)
            .map(|((w, field), leaf)| match field.data_type() {
                DataType::Dictionary(_, v) if **v == DataType::Utf8 => {
                    NameChunk::new(leaf.clone(), ZSTD_LEVEL).map(Column::Names)
                }
                t if numbers::handles(t) => {
                    NumberChunk::new(leaf.clone(), &self.props, ZSTD_LEVEL).map(Column::Numbers)
                }
                _ => Ok(Column::Arrow(Box::new(w))),
            })
            .collect()
    }

    /// Writes rows.
    ///
    /// # Errors
    /// [`StoreError::Parquet`] when encoding or writing fails.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<(), StoreError> {
        self.write_columns(batch.columns(), batch.num_rows(), None)
    }

    /// Writes `rows` rows given as the table's columns, its name columns
    /// as `Int32` keys into `strings` (not dictionary arrays: no
    /// `DictionaryArray::try_new` a batch, which checks each key's
    /// validity on the thread that then waits for the other).
    ///
    /// # Errors
    /// [`StoreError::Parquet`] when encoding or writing fails (a key past
    /// `strings` too).
    pub fn write_keyed(
        &mut self,
        arrays: &[ArrayRef],
        rows: usize,
        strings: &StringArray,
    ) -> Result<(), StoreError> {
        self.write_columns(arrays, rows, Some(strings))
    }

    fn write_columns(
        &mut self,
        all: &[ArrayRef],
        rows: usize,
        keyed: Option<&StringArray>,
    ) -> Result<(), StoreError> {
        if all.len() != self.schema.fields().len() {
            return Err(StoreError::Parquet(ParquetError::General(format!(
                "qtrace-store: {} columns for a table of {} (a bug in qtrace-store, please report it)",
                all.len(),
                self.schema.fields().len()
            ))));
        }
        let mut at = 0;
        while at < rows {
            if self.columns.is_empty() {
                self.columns = self.new_columns()?;
            }
            let take = (rows - at).min(EVENT_ROW_GROUP - self.group_rows);
            let arrays: Vec<ArrayRef> = all.iter().map(|a| a.slice(at, take)).collect();
            let fields = self.schema.fields();
            let parallel = self.parallel && take >= PARALLEL_ROWS;
            each(&mut self.columns, &mut self.cost, parallel, |i, c| {
                c.write(&fields[i], &arrays[i], keyed)
            })?;
            at += take;
            self.group_rows += take;
            self.rows += take as u64;
            if self.group_rows == EVENT_ROW_GROUP {
                self.close_group()?;
                self.sync_behind()?;
            }
        }
        Ok(())
    }

    /// Closes the row group in progress (if it has rows) and writes it out.
    fn close_group(&mut self) -> Result<(), StoreError> {
        if self.group_rows == 0 {
            return Ok(());
        }
        self.groups += 1;
        let columns = std::mem::take(&mut self.columns);
        let mut columns: Vec<Option<Column>> = columns.into_iter().map(Some).collect();
        let chunks = each(
            &mut columns,
            &mut self.close_cost,
            self.parallel,
            |_, c| match c.take() {
                Some(c) => c.close(),
                None => Err(ParquetError::General("a column closed twice".into())),
            },
        )?;
        let mut group = self.file.next_row_group()?;
        for chunk in chunks {
            match chunk {
                Chunk::Arrow(c) => c.append_to_row_group(&mut group)?,
                Chunk::Raw(bytes, close) => group.append_column(&bytes, close)?,
            }
        }
        group.close()?;
        self.group_rows = 0;
        Ok(())
    }

    /// Starts an fdatasync of the row groups written so far on a thread
    /// of its own: the disk writes them while the next group is encoded,
    /// and the fsync at `finish` has only the last group and the footer
    /// left (it was the conversion's last wait, both cores idle). One at a
    /// time: one still running is left to go on (the next group's starts
    /// after it); a finished one's error is returned here.
    ///
    /// # Errors
    /// [`StoreError::Io`] when the last sync failed, or the bytes cannot
    /// be written out or the thread started.
    fn sync_behind(&mut self) -> Result<(), StoreError> {
        if self.sync.as_ref().is_some_and(|s| !s.is_finished()) {
            return Ok(());
        }
        self.join_sync()?;
        // The writers' buffers (8 KiB, `WRITE_BUFFER`) to the file, so the sync covers
        // every closed group.
        self.file
            .flush()
            .map_err(|e| StoreError::io("write", &self.temp, e))?;
        let file = self
            .file
            .inner()
            .get_ref()
            .try_clone()
            .map_err(|e| StoreError::io("open again", &self.temp, e))?;
        let sync = std::thread::Builder::new()
            .name("qtrace-sync".into())
            .spawn(move || file.sync_data())
            .map_err(|e| StoreError::io("start the fsync thread for", &self.temp, e))?;
        self.sync = Some(sync);
        Ok(())
    }

    /// Waits for the sync started by [`PartWriter::sync_behind`], if any;
    /// its error.
    ///
    /// # Errors
    /// [`StoreError::Io`] when it failed; [`StoreError::Target`] when its
    /// thread panicked.
    fn join_sync(&mut self) -> Result<(), StoreError> {
        match self.sync.take().map(JoinHandle::join) {
            None | Some(Ok(Ok(()))) => Ok(()),
            Some(Ok(Err(e))) => Err(StoreError::io("fsync", &self.temp, e)),
            Some(Err(_)) => Err(StoreError::Target(
                "the fsync thread panicked (a bug in qtrace-store, please report it)".into(),
            )),
        }
    }

    /// Bytes on disk so far plus the encoded bytes of the row group in
    /// progress: the part's size if it closed now, about.
    pub fn size(&self) -> u64 {
        let held: usize = self.columns.iter().map(Column::size).sum();
        (self.file.bytes_written() + held) as u64
    }

    /// Writes the footer, fsyncs, renames the temp to `part-N.parquet` and
    /// fsyncs the folder; returns the part's path and size.
    ///
    /// # Errors
    /// [`StoreError`] when any step fails (the temp stays).
    pub fn finish(mut self) -> Result<(PathBuf, u64), StoreError> {
        self.close_group()?;
        // The sync behind, never dropped: its error is this part's.
        self.join_sync()?;
        let PartWriter {
            file, temp, path, ..
        } = self;
        let file = file
            .into_inner()?
            .into_inner()
            .map_err(|e| StoreError::io("write", &temp, e.into_error()))?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columns::{At, Interner, PayloadCols, PayloadRow, RunKeys};
    use arrow_array::types::Int32Type;
    use arrow_array::{Array, DictionaryArray, StringArray};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    /// The events' name columns given as keys (`write_keyed`): a key past
    /// the strings is an error, not a panic nor a page.
    #[test]
    fn a_keyed_name_past_the_strings_is_an_error() {
        use crate::columns::{EventCols, EventRow};
        let dir = tempfile::tempdir().unwrap();
        let mut dict = Interner::default();
        let k = RunKeys {
            run: dict.key("run-1"),
            host: dict.key("host-a"),
            sender: None,
        };
        let mut cols = EventCols::default();
        let at = At {
            seq: 0,
            time_ns: 1,
            aligned_ns: 1,
        };
        let row = |class| EventRow {
            source: 0,
            event_id: 1,
            class: Some(class),
            event: None,
            args: [0, 0],
            flags: 0,
            queue: None,
        };
        cols.push(&k, &at, &row(1));
        cols.push(&k, &at, &row(2)); // two strings: key 2 is past them
        let (columns, n, strings, _) = cols.take(&dict, None).keyed(&mut Default::default());
        let strings = strings.as_any().downcast_ref::<StringArray>().unwrap();
        let mut w = PartWriter::create(dir.path(), Table::Events, 0, false).unwrap();
        let e = w.write_keyed(&columns, n, strings).unwrap_err();
        assert!(
            e.to_string().contains("a name key past the dictionary"),
            "{e}"
        );
    }

    /// Every column type the writer has a path for (name pages, integer
    /// slices, the crate's Arrow writer for the rest), nulls in each
    /// nullable one, two batches encoded on two threads: read back by the
    /// parquet crate's own reader, value for value.
    #[test]
    fn a_payloads_part_reads_back_value_for_value() {
        let dir = tempfile::tempdir().unwrap();
        let mut dict = Interner::default();
        let mut cols = PayloadCols::default();
        let (run, host) = (dict.key("run-1"), dict.key("host-a"));
        let names = [dict.key("alpha"), dict.key("beta"), dict.key("gamma")];
        let (str_kind, complete) = (dict.key("str"), dict.key("complete"));
        let n = 3 * PARALLEL_ROWS as u64;
        let texts: Vec<String> = (0..n).map(|i| format!("t{i}")).collect();
        for i in 0..n {
            let k = RunKeys {
                run,
                host,
                sender: (i % 2 == 0).then_some(i as u32),
            };
            let at = At {
                seq: i,
                time_ns: i as i64 * 10,
                aligned_ns: -(i as i64),
            };
            let row = PayloadRow {
                source: i as u32,
                event_id: (i % 5) as u16,
                class: (i % 4 != 0).then_some(names[(i % 3) as usize]),
                // Long runs of one key (RLE runs) and short ones.
                event: (i % 1000 < 990).then_some(names[((i / 100) % 3) as usize]),
                kind: str_kind,
                arg0: (i % 3 != 0).then_some(u64::MAX - i),
                name_of: None,
                subject: (i % 7 == 0).then_some(i),
                text: Some(&texts[i as usize]),
                bytes: None,
                complete: i % 2 == 0,
                state: complete,
                received: (i % 5 == 0).then_some(i as u32),
                expected: None,
                logged_len: Some(7),
            };
            cols.push(&k, &at, &row);
        }
        let batch = cols.batch(&dict).unwrap();
        let mut w = PartWriter::create(dir.path(), Table::Payloads, 0, true).unwrap();
        w.write(&batch.slice(0, 5000)).unwrap();
        w.write(&batch.slice(5000, n as usize - 5000)).unwrap();
        let (path, _) = w.finish().unwrap();
        assert_eq!(read_back(&path, &batch), n as usize);
    }

    /// A part of two row groups: the first, once closed, is synced behind
    /// on a thread while the second is written; `finish` joins that sync
    /// and the part reads back whole, value for value, in two groups.
    #[test]
    fn a_part_of_two_row_groups_syncs_the_first_behind_and_reads_back() {
        use crate::columns::{EventCols, EventRow};
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let dir = tempfile::tempdir().unwrap();
        let mut dict = Interner::default();
        let mut cols = EventCols::default();
        let k = RunKeys {
            run: dict.key("run-1"),
            host: dict.key("host-a"),
            sender: None,
        };
        let names = [dict.key("alpha"), dict.key("beta")];
        let n = EVENT_ROW_GROUP as u64 + 1000;
        for i in 0..n {
            let at = At {
                seq: i,
                time_ns: i as i64 * 40,
                aligned_ns: i as i64 * 40,
            };
            let row = EventRow {
                source: (i % 3) as u32,
                event_id: (i % 2) as u16,
                class: Some(names[0]),
                event: Some(names[(i % 2) as usize]),
                args: [i, i % 5],
                flags: 0,
                queue: None,
            };
            cols.push(&k, &at, &row);
        }
        let batch = cols.batch(&dict).unwrap();
        let mut w = PartWriter::create(dir.path(), Table::Events, 0, true).unwrap();
        assert!(w.sync.is_none());
        w.write(&batch.slice(0, EVENT_ROW_GROUP)).unwrap();
        // The first group closed: its sync started behind.
        assert_eq!(w.groups, 1);
        assert!(w.sync.is_some());
        w.write(&batch.slice(EVENT_ROW_GROUP, 1000)).unwrap();
        let (path, size) = w.finish().unwrap();
        assert_eq!(size, std::fs::metadata(&path).unwrap().len());
        assert_eq!(read_back(&path, &batch), n as usize);
        let file = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
        let groups: Vec<i64> = file
            .metadata()
            .row_groups()
            .iter()
            .map(|g| g.num_rows())
            .collect();
        assert_eq!(groups, [EVENT_ROW_GROUP as i64, 1000]);
    }

    /// Reads the part at `path` with the parquet crate's reader and checks
    /// it holds `batch`, value for value (dictionary columns as strings);
    /// returns the rows read.
    fn read_back(path: &Path, batch: &RecordBatch) -> usize {
        let mut at = 0;
        let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap())
            .unwrap()
            .build()
            .unwrap();
        for got in reader {
            let got = got.unwrap();
            let want = batch.slice(at, got.num_rows());
            for (i, field) in want.schema().fields().iter().enumerate() {
                let w = want.column(i);
                let g = got.column(i);
                match w.as_any().downcast_ref::<DictionaryArray<Int32Type>>() {
                    Some(d) => {
                        let strings: StringArray = d
                            .downcast_dict::<StringArray>()
                            .unwrap()
                            .into_iter()
                            .collect();
                        assert_eq!(g.as_ref(), &strings as &dyn Array, "{}", field.name());
                    }
                    None => assert_eq!(g.as_ref(), w.as_ref(), "{}", field.name()),
                }
            }
            at += got.num_rows();
        }
        at
    }

    /// Integer columns at their extremes (times that jump across the whole
    /// INT64 range, so the delta encoding's deltas wrap; UINT64 and UINT32
    /// values above the signed maximum): read back value for value, and
    /// each chunk's min and max ordered as its logical type orders them.
    #[test]
    fn an_events_part_at_the_integers_extremes_reads_back_with_their_ranges() {
        use crate::columns::EventCols;
        use crate::columns::EventRow;
        use parquet::file::reader::{FileReader, SerializedFileReader};
        use parquet::file::statistics::Statistics;
        let dir = tempfile::tempdir().unwrap();
        let mut dict = Interner::default();
        let mut cols = EventCols::default();
        let (run, host) = (dict.key("run-1"), dict.key("host-a"));
        let n = 2 * PARALLEL_ROWS as u64 + 333;
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for i in 0..n {
            // xorshift: values all over the range.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let time = match i % 5 {
                0 => i64::MIN,
                1 => i64::MAX,
                2 => x as i64,
                _ => i as i64 * 50,
            };
            let k = RunKeys {
                run,
                host,
                sender: None,
            };
            let at = At {
                seq: if i == 7 { u64::MAX } else { i },
                time_ns: time,
                aligned_ns: time.wrapping_neg(),
            };
            let row = EventRow {
                source: if i % 3 == 0 { u32::MAX } else { i as u32 },
                event_id: (x >> 48) as u16,
                class: None,
                event: None,
                args: [x, u64::from(i % 2 == 0)],
                flags: u16::MAX,
                queue: (i % 4 != 0).then_some(i as u16),
            };
            cols.push(&k, &at, &row);
        }
        let batch = cols.batch(&dict).unwrap();
        let mut w = PartWriter::create(dir.path(), Table::Events, 0, true).unwrap();
        w.write(&batch.slice(0, 100)).unwrap();
        w.write(&batch.slice(100, n as usize - 100)).unwrap();
        let (path, _) = w.finish().unwrap();
        assert_eq!(read_back(&path, &batch), n as usize);
        let file = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
        let group = file.metadata().row_group(0);
        let column = |name: &str| {
            let i = (0..group.num_columns())
                .find(|&i| group.column(i).column_path().string() == name)
                .unwrap();
            group.column(i).statistics().unwrap().clone()
        };
        let range64 = |s: Statistics| match s {
            Statistics::Int64(v) => (*v.min_opt().unwrap(), *v.max_opt().unwrap()),
            s => panic!("{s:?}"),
        };
        let range32 = |s: Statistics| match s {
            Statistics::Int32(v) => (*v.min_opt().unwrap(), *v.max_opt().unwrap()),
            s => panic!("{s:?}"),
        };
        // Unsigned: u64::MAX (stored as -1) is the max, 0 the min.
        assert_eq!(range64(column("seq")), (0, -1));
        assert_eq!(range64(column("time_ns")), (i64::MIN, i64::MAX));
        assert_eq!(range32(column("source")).1, -1);
        assert_eq!(range32(column("flags")), (0xFFFF, 0xFFFF));
        let q = column("queue");
        assert_eq!(q.null_count_opt(), Some(n.div_ceil(4)));
        let max = (0..n).filter(|i| i % 4 != 0).max().unwrap();
        assert_eq!(range32(q), (1, max as i32));
    }

    /// `arg0` and `arg1` choose their encoding per page: a batch of a
    /// counter between small numbers (bit-packed deltas, under half the
    /// PLAIN bytes) is DELTA_BINARY_PACKED, a batch of scattered 64-bit
    /// values PLAIN and stored (zstd does not halve it); one chunk holds
    /// both, its metadata lists both with their page counts, and it reads
    /// back value for value.
    #[test]
    fn arguments_are_delta_packed_per_page_when_that_halves_them() {
        use crate::columns::{EventCols, EventRow};
        use parquet::basic::Encoding;
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let dir = tempfile::tempdir().unwrap();
        let mut dict = Interner::default();
        let mut cols = EventCols::default();
        let (run, host) = (dict.key("run-1"), dict.key("host-a"));
        let half = 20_000u64;
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for i in 0..2 * half {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = RunKeys {
                run,
                host,
                sender: None,
            };
            let at = At {
                seq: i,
                time_ns: i as i64 * 50,
                aligned_ns: i as i64 * 50,
            };
            let arg0 = if i < half {
                if i % 10 < 6 {
                    i
                } else {
                    i % 7
                }
            } else {
                x
            };
            let row = EventRow {
                source: (i % 4) as u32,
                event_id: 1,
                class: None,
                event: None,
                args: [arg0, i % 3],
                flags: 0,
                queue: None,
            };
            cols.push(&k, &at, &row);
        }
        let batch = cols.batch(&dict).unwrap();
        let mut w = PartWriter::create(dir.path(), Table::Events, 0, true).unwrap();
        w.write(&batch.slice(0, half as usize)).unwrap();
        w.write(&batch.slice(half as usize, half as usize)).unwrap();
        let (path, _) = w.finish().unwrap();
        assert_eq!(read_back(&path, &batch), 2 * half as usize);
        let file = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
        let group = file.metadata().row_group(0);
        let column = |name: &str| {
            let i = (0..group.num_columns())
                .find(|&i| group.column(i).column_path().string() == name)
                .unwrap();
            group.column(i).clone()
        };
        // Each data page's own encoding, from its header.
        let reader = file.get_row_group(0).unwrap();
        let pages = |name: &str| {
            let i = (0..group.num_columns())
                .find(|&i| group.column(i).column_path().string() == name)
                .unwrap();
            let mut got: Vec<(Encoding, usize)> = Vec::new();
            for page in reader.get_column_page_reader(i).unwrap() {
                let e = page.unwrap().encoding();
                match got.last_mut() {
                    Some((last, n)) if *last == e => *n += 1,
                    _ => got.push((e, 1)),
                }
            }
            got
        };
        let arg0 = column("arg0");
        let listed: Vec<Encoding> = arg0.encodings().collect();
        assert_eq!(listed.len(), 3, "{listed:?}");
        for e in [
            Encoding::RLE,
            Encoding::DELTA_BINARY_PACKED,
            Encoding::PLAIN,
        ] {
            assert!(listed.contains(&e), "{listed:?}");
        }
        assert_eq!(
            pages("arg0"),
            [(Encoding::DELTA_BINARY_PACKED, 1), (Encoding::PLAIN, 1)]
        );
        // The scattered page is stored: its 160,000 PLAIN bytes plus a zstd
        // frame's 13 header bytes and 3 a block, beside the delta page.
        assert!(arg0.compressed_size() > 160_000 + 13 + 2 * 3);
        // `arg1` (0, 1, 2 repeating): deltas of 2 bits, both pages.
        assert_eq!(pages("arg1"), [(Encoding::DELTA_BINARY_PACKED, 2)]);
        // `source` is not a 64-bit column: dictionary-encoded, its
        // dictionary page (PLAIN) before both data pages.
        assert_eq!(
            pages("source"),
            [(Encoding::PLAIN, 1), (Encoding::RLE_DICTIONARY, 2)]
        );
    }

    /// A dictionary-encoded integer column turns PLAIN from the page that
    /// does not fit its dictionary on (`source`: a value of 2^16 or more;
    /// `event_id`: more than 4,096 values), the rows read back as written.
    #[test]
    fn integer_dictionaries_fall_back_to_plain_pages() {
        use crate::columns::{EventCols, EventRow};
        use parquet::basic::Encoding;
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let dir = tempfile::tempdir().unwrap();
        let mut dict = Interner::default();
        let mut cols = EventCols::default();
        let k = RunKeys {
            run: dict.key("run-1"),
            host: dict.key("host-a"),
            sender: None,
        };
        let page = 5_000u64;
        for i in 0..3 * page {
            let at = At {
                seq: i,
                time_ns: i as i64,
                aligned_ns: i as i64,
            };
            let second = (page..2 * page).contains(&i);
            let row = EventRow {
                source: if second && i % 100 == 7 {
                    70_000
                } else {
                    (i % 4) as u32
                },
                event_id: if second { i as u16 } else { (i % 5) as u16 },
                class: None,
                event: None,
                args: [i, 0],
                flags: 0,
                queue: None,
            };
            cols.push(&k, &at, &row);
        }
        let batch = cols.batch(&dict).unwrap();
        let mut w = PartWriter::create(dir.path(), Table::Events, 0, false).unwrap();
        for p in 0..3 {
            w.write(&batch.slice((p * page) as usize, page as usize))
                .unwrap();
        }
        let (path, _) = w.finish().unwrap();
        assert_eq!(read_back(&path, &batch), 3 * page as usize);
        let file = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
        let group = file.metadata().row_group(0);
        let reader = file.get_row_group(0).unwrap();
        let pages = |name: &str| {
            let i = (0..group.num_columns())
                .find(|&i| group.column(i).column_path().string() == name)
                .unwrap();
            let mut got: Vec<(Encoding, usize)> = Vec::new();
            for page in reader.get_column_page_reader(i).unwrap() {
                let e = page.unwrap().encoding();
                match got.last_mut() {
                    Some((last, n)) if *last == e => *n += 1,
                    _ => got.push((e, 1)),
                }
            }
            got
        };
        let want = [
            (Encoding::PLAIN, 1), // the dictionary page
            (Encoding::RLE_DICTIONARY, 1),
            (Encoding::PLAIN, 2),
        ];
        assert_eq!(pages("source"), want);
        assert_eq!(pages("event_id"), want);
        // `flags`, one value throughout: dictionary pages only.
        assert_eq!(
            pages("flags"),
            [(Encoding::PLAIN, 1), (Encoding::RLE_DICTIONARY, 3)]
        );
    }
}
