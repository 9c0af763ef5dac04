//! The [`Engine`]: an in-process DuckDB whose `events`, `losses`,
//! `payloads` and `streams` are views over Parquet files, with the ready
//! views on top.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use duckdb::arrow::record_batch::RecordBatch;
use duckdb::{Config, Connection};
use qtrace::reader::{Completeness, TraceReader};

use crate::cache::{self, Cache};
use crate::output::Printer;
use crate::views;
use crate::wakes;
use crate::Error;

/// How the engine runs.
///
/// ```
/// let o = qtrace_sql::Options::default();
/// assert_eq!((o.threads, o.irq_max_ns, o.cache), (None, 1_000, None));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Worker threads (DuckDB's `threads`); `None`: one per core.
    pub threads: Option<usize>,
    /// Longest interrupt handler in the `slices` view, in ns (the SQL
    /// variable `qtrace_irq_max_ns`; `qtrace analyze --irq-max`).
    pub irq_max_ns: u64,
    /// Where `.qtr` inputs' conversions are kept for the next query over
    /// the same files ([`Cache`]); `None`: into a scratch folder removed
    /// when the engine is dropped. (`qtrace sql` uses [`Cache::user_dir`].)
    pub cache: Option<Cache>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            threads: None,
            irq_max_ns: 1_000,
            cache: None,
        }
    }
}

/// How far the conversion of `.qtr` inputs has come, for a progress bar:
/// records read so far and in all (from the files' sizes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Records read so far.
    pub done: u64,
    /// Records in all the inputs.
    pub total: u64,
}

/// The tables of a store, in folder order.
const TABLES: [&str; 5] = ["events", "losses", "payloads", "streams", "jobs"];

/// An in-process DuckDB over qtrace's Parquet tables, with the ready views.
///
/// ```no_run
/// use qtrace_sql::{Engine, Format, Options, Printer};
///
/// let engine = Engine::open(&["store".into()], &Options::default())?;
/// let mut out = Vec::new();
/// engine.run(
///     "SELECT task, count(*) FROM response_times GROUP BY task",
///     Printer::new(Format::Csv, &mut out),
/// )?;
/// # Ok::<(), qtrace_sql::Error>(())
/// ```
pub struct Engine {
    conn: Connection,
    /// Where `.qtr` inputs were converted (removed on drop).
    _scratch: Option<tempfile::TempDir>,
    notes: Vec<String>,
    end: InputsEnd,
    /// `qtrace_irq_max_ns`, and whether `wake_flows` is filled (at the
    /// first query naming it, [`Engine::fill_wake_flows`]).
    irq_max_ns: u64,
    wakes_filled: std::sync::atomic::AtomicBool,
}

/// How the `.qtr` inputs of an [`Engine`] ended (FORMAT.md 1.5), the worst
/// of them: what `qtrace sql`'s exit status says, as the other commands'
/// (3 for a cut input, 2 for a damaged one), also on a cache hit.
///
/// ```
/// use qtrace_sql::InputsEnd;
/// assert!(InputsEnd::Damaged > InputsEnd::Cut && InputsEnd::Cut > InputsEnd::Whole);
/// assert_eq!(InputsEnd::default(), InputsEnd::Whole);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum InputsEnd {
    /// Every input complete, or of unknown completeness (written before
    /// close records), or no `.qtr` input at all.
    #[default]
    Whole,
    /// An input cut short (no close record: its writer died, its disk
    /// filled); its events up to the cut are in the tables.
    Cut,
    /// An input damaged (a record that does not decode, or a close record
    /// that disagrees with the file); its events before the damage are in
    /// the tables.
    Damaged,
}

impl InputsEnd {
    /// The word kept in a cache entry.
    pub(crate) fn word(self) -> &'static str {
        match self {
            InputsEnd::Whole => "whole",
            InputsEnd::Cut => "cut",
            InputsEnd::Damaged => "damaged",
        }
    }

    /// The end a cache entry's word says; `None` for another word.
    pub(crate) fn from_word(w: &str) -> Option<InputsEnd> {
        [InputsEnd::Whole, InputsEnd::Cut, InputsEnd::Damaged]
            .into_iter()
            .find(|e| e.word() == w)
    }
}

impl Engine {
    /// An engine with no table: create `events` and `losses` (tables or
    /// views of the FORMAT.md 7 columns), then call [`Engine::create_views`].
    ///
    /// # Errors
    ///
    /// DuckDB's, when it cannot start (a bad thread count).
    pub fn empty(options: &Options) -> Result<Engine, Error> {
        let mut config = Config::default();
        if let Some(n) = options.threads {
            config = config.threads(n.max(1) as i64)?;
        }
        let conn = Connection::open_in_memory_with_flags(config)?;
        conn.execute_batch(&format!(
            "SET VARIABLE qtrace_irq_max_ns = {}::UBIGINT;",
            options.irq_max_ns
        ))?;
        Ok(Engine {
            conn,
            _scratch: None,
            notes: Vec::new(),
            end: InputsEnd::Whole,
            irq_max_ns: options.irq_max_ns,
            wakes_filled: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// An engine over `inputs`: Parquet store folders (each with `events/`,
    /// `losses/` … folders of parts, as `qtrace convert --to parquet --out
    /// DIR` and `qtrace recv --store DIR` write them), read where they are,
    /// and trace files (`.qtr`: queues' files, received files, recovered
    /// rings), converted together, as `qtrace convert --to parquet` does,
    /// into the cache of [`Options::cache`] (used again while the files are
    /// unchanged) or a scratch store removed when the engine is dropped.
    /// A cache that cannot be used is a note ([`Engine::notes`]), not an
    /// error: the inputs are then converted into a scratch store.
    ///
    /// # Errors
    ///
    /// [`Error::NoInput`] for no input; [`Error::BadInput`] for a path that
    /// is neither a store folder nor a trace file; DuckDB's error when a
    /// file is not Parquet of the expected columns.
    pub fn open(inputs: &[PathBuf], options: &Options) -> Result<Engine, Error> {
        Engine::open_with_progress(inputs, options, &mut |_| {})
    }

    /// [`Engine::open`], calling `progress` while `.qtr` inputs are
    /// converted (every 64 Ki records; not at all on a cache hit).
    ///
    /// # Errors
    ///
    /// As [`Engine::open`].
    pub fn open_with_progress(
        inputs: &[PathBuf],
        options: &Options,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Engine, Error> {
        if inputs.is_empty() {
            return Err(Error::NoInput);
        }
        let mut stores = Vec::new();
        let mut traces = Vec::new();
        for p in inputs {
            if p.is_dir() {
                if !TABLES.iter().any(|t| p.join(t).is_dir()) {
                    return Err(Error::BadInput {
                        path: p.clone(),
                        why: "not a qtrace Parquet store (no events/ or losses/ folder): give \
                              the folder `qtrace convert --to parquet --out DIR` or `qtrace \
                              recv --store DIR` wrote, or .qtr files"
                            .into(),
                    });
                }
                stores.push(p.clone());
            } else if p.is_file() {
                traces.push(p.clone());
            } else {
                return Err(Error::BadInput {
                    path: p.clone(),
                    why: "no such file or folder".into(),
                });
            }
        }
        let mut engine = Engine::empty(options)?;
        if !traces.is_empty() {
            let converted = match &options.cache {
                Some(c) => engine.convert_cached(c, &traces, progress)?,
                None => None,
            };
            match converted {
                Some(dir) => stores.push(dir),
                None => {
                    let scratch = scratch_dir(&traces[0])?;
                    let (notes, end) = convert(&traces, scratch.path(), progress)?;
                    engine.notes.extend(notes);
                    engine.end = end;
                    stores.push(scratch.path().to_path_buf());
                    engine._scratch = Some(scratch);
                }
            }
        }
        engine.attach(&stores)?;
        engine.create_views()?;
        Ok(engine)
    }

    /// `traces` from `cache`, converted into it first on a miss; `None`
    /// when the cache cannot be used (a note says why) or the conversion is
    /// larger than its limit (converted again into a scratch store).
    fn convert_cached(
        &mut self,
        cache: &Cache,
        traces: &[PathBuf],
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Option<PathBuf>, Error> {
        let unusable = |e: io::Error| {
            format!(
                "the conversion cache {} cannot be used ({e}): converting into a scratch folder",
                cache.dir.display()
            )
        };
        let key = match cache::key(traces) {
            Ok(k) => k,
            Err(e) => {
                self.notes.push(unusable(e));
                return Ok(None);
            }
        };
        if let Some((dir, notes, end)) = cache::lookup(cache, &key) {
            self.notes.extend(notes);
            self.end = end;
            return Ok(Some(dir));
        }
        let building = match cache::building(cache, &key) {
            Ok(b) => b,
            Err(e) => {
                self.notes.push(unusable(e));
                return Ok(None);
            }
        };
        let (notes, end) = match convert(traces, &building, progress) {
            Ok(n) => n,
            Err(e) => {
                let _ = fs::remove_dir_all(&building);
                return Err(e);
            }
        };
        let kept = cache::commit(cache, &key, &building, &notes, end);
        self.notes.extend(notes);
        self.end = end;
        match kept {
            Ok(Some(dir)) => {
                self.notes.push(format!(
                    "converted into the cache {} (the next query over the same unchanged files starts at once)",
                    dir.display()
                ));
                Ok(Some(dir))
            }
            Ok(None) => {
                // Over the limit: use it this once from a scratch folder
                // that goes when the engine does.
                let scratch = scratch_dir(&traces[0])?;
                let tables = scratch.path().join("tables");
                fs::rename(&building, &tables).map_err(|e| Error::Convert {
                    path: traces[0].clone(),
                    cause: qtrace_store::StoreError::Io(qtrace::IoError::new(
                        "move a conversion into",
                        scratch.path(),
                        e,
                    )),
                })?;
                self.notes.push(format!(
                    "the conversion is larger than the cache's limit ({} bytes): not kept",
                    cache.max_bytes
                ));
                self._scratch = Some(scratch);
                Ok(Some(tables))
            }
            Err(e) => {
                let _ = fs::remove_dir_all(&building);
                self.notes.push(unusable(e));
                Ok(None)
            }
        }
    }

    /// What the engine noticed opening its inputs, to show the user: damaged
    /// or cut trace files (their events up to the damage are in the tables).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// How the `.qtr` inputs ended, the worst of them (the same on a cache
    /// hit as when they were converted); [`InputsEnd::Whole`] for stores.
    pub fn inputs_end(&self) -> InputsEnd {
        self.end
    }

    /// Makes `events`, `losses`, `payloads` and `streams` views over the
    /// Parquet files of `stores` (every `*.parquet` under each table's
    /// folder, at any depth: Hive partitions included). A table no store has
    /// files of is, for `events` and `losses`, an empty view of its columns,
    /// and otherwise absent.
    fn attach(&self, stores: &[PathBuf]) -> Result<(), Error> {
        for table in TABLES {
            let globs: Vec<String> = stores
                .iter()
                .filter(|s| has_parquet(&s.join(table)))
                .map(|s| sql_string(&format!("{}/{table}/**/*.parquet", s.display())))
                .collect();
            let body = if globs.is_empty() {
                match table {
                    "events" => views::EMPTY_EVENTS.to_string(),
                    "losses" => views::EMPTY_LOSSES.to_string(),
                    _ => continue,
                }
            } else {
                // Hive partition folders (host=…/date=…) are not read as
                // columns: every file carries its own `host`. By name: a
                // file written before a column was appended (FORMAT.md 7.8)
                // reads it as NULL.
                format!(
                    "SELECT * FROM read_parquet([{}], hive_partitioning = false, \
                     union_by_name = true)",
                    globs.join(", ")
                )
            };
            self.conn
                .execute_batch(&format!("CREATE OR REPLACE VIEW {table} AS {body};"))?;
            if table == "streams" && !globs.is_empty() {
                // Which file each streams row is in: one file per conversion
                // (views.sql, qtrace_paired_streams).
                self.conn.execute_batch(&format!(
                    "CREATE OR REPLACE VIEW qtrace_stream_files AS \
                     SELECT filename AS file, host, run, sender FROM read_parquet([{}], \
                     hive_partitioning = false, union_by_name = true, filename = true);",
                    globs.join(", ")
                ))?;
            }
        }
        // The store paired the jobs only if every events part has its jobs
        // part (FORMAT.md 7.5a; parts written before that table have none):
        // else the views pair them all (views.sql, qtrace_paired_streams).
        let stored = stores.iter().all(|s| {
            let mut events = Vec::new();
            parquet_files(&s.join("events"), &mut events);
            events.iter().all(|f| {
                f.strip_prefix(s.join("events"))
                    .is_ok_and(|rel| s.join("jobs").join(rel).is_file())
            })
        });
        self.conn
            .execute_batch(&format!("SET VARIABLE qtrace_jobs_stored = {stored};"))?;
        Ok(())
    }

    /// Creates the view `name` as `empty` (a query of no rows with the
    /// table's columns) unless a view or table of that name exists: a store
    /// without that table (written before it existed, or holding none of
    /// its parts) still answers the views that read it. Whether it was
    /// there.
    fn view_unless_present(&self, name: &str, empty: &str) -> Result<bool, Error> {
        let present: i64 = self.conn.query_row(
            "SELECT (SELECT count(*) FROM duckdb_views() WHERE view_name = ?1) \
             + (SELECT count(*) FROM duckdb_tables() WHERE table_name = ?1)",
            [name],
            |r| r.get(0),
        )?;
        if present == 0 {
            self.conn
                .execute_batch(&format!("CREATE VIEW {name} AS {empty};"))?;
        }
        Ok(present > 0)
    }

    /// Creates the ready views over `events` and `losses` (see the crate
    /// documentation).
    ///
    /// # Errors
    ///
    /// DuckDB's, when `events` or `losses` lack a column the views read.
    pub fn create_views(&self) -> Result<(), Error> {
        let streams = self.view_unless_present("streams", views::EMPTY_STREAMS)?;
        self.view_unless_present("jobs", views::EMPTY_JOBS)?;
        let files: i64 = self.conn.query_row(
            "SELECT count(*) FROM duckdb_views() WHERE view_name = 'qtrace_stream_files'",
            [],
            |r| r.get(0),
        )?;
        if files == 0 {
            self.conn.execute_batch(
                "CREATE VIEW qtrace_stream_files AS \
                 SELECT 'streams' AS file, host, run, sender FROM streams;",
            )?;
        }
        views::create(&self.conn)?;
        self.conn.execute_batch(wakes::CREATE)?;
        self.wakes_filled
            .store(false, std::sync::atomic::Ordering::Relaxed);
        // Every stream of a store has streams rows (FORMAT.md 7.5): when all
        // are paired, response_times is the stored jobs alone.
        let all: bool = streams
            && self.conn.query_row(
                "SELECT NOT EXISTS (SELECT host, stream FROM qtrace_stream_keys EXCEPT \
                 SELECT host, stream FROM qtrace_paired_streams)",
                [],
                |r| r.get(0),
            )?;
        if all {
            self.conn.execute_batch(views::ALL_PAIRED)?;
        }
        Ok(())
    }

    /// Fills the `wake_flows` table (FORMAT.md 7.5b) with the wake-up flows
    /// `qtrace analyze` derives from each stream, once: [`Engine::run`]
    /// does it before a query that names `wake_flows`; call it before
    /// querying the table through [`Engine::connection`].
    ///
    /// # Errors
    ///
    /// DuckDB's, when the scheduler rows cannot be read or the table
    /// written.
    pub fn fill_wake_flows(&self) -> Result<(), Error> {
        use std::sync::atomic::Ordering;
        if !self.wakes_filled.swap(true, Ordering::AcqRel) {
            if let Err(e) = wakes::fill(&self.conn, self.irq_max_ns) {
                // No half-filled table: the next query tries again.
                self.wakes_filled.store(false, Ordering::Release);
                let _ = self.conn.execute_batch("DELETE FROM wake_flows;");
                return Err(e.into());
            }
        }
        Ok(())
    }

    /// The DuckDB connection (to register tables, run statements with
    /// parameters, read results as Arrow).
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// Runs `sql` (one statement or several separated by `;`: all run, the
    /// last one's result is printed) and prints the result through
    /// `printer`, batch by batch. Returns the number of rows printed.
    ///
    /// # Errors
    ///
    /// [`Error::Query`] with DuckDB's message (a syntax error, an unknown
    /// table, a failed cast); [`Error::Output`] when the output cannot be
    /// written.
    pub fn run(&self, sql: &str, mut printer: Printer<'_>) -> Result<u64, Error> {
        if sql.to_ascii_lowercase().contains("wake_flows") {
            self.fill_wake_flows()?;
        }
        let mut stmt = self.conn.prepare(sql)?;
        // Executes (streaming); the rows are fetched below, where a failure
        // is an error rather than the iterator's panic.
        drop(stmt.stream_arrow([])?);
        printer.schema(&stmt.schema())?;
        while let Some(rows) = stmt.step()? {
            printer.batch(&RecordBatch::from(&rows))?;
        }
        Ok(printer.finish()?)
    }
}

/// A scratch folder, removed when dropped.
fn scratch_dir(first: &Path) -> Result<tempfile::TempDir, Error> {
    tempfile::Builder::new()
        .prefix("qtrace-sql-")
        .tempdir()
        .map_err(|e| Error::Convert {
            path: first.to_path_buf(),
            cause: qtrace_store::StoreError::Io(qtrace::IoError::new(
                "create a scratch folder in",
                std::env::temp_dir(),
                e,
            )),
        })
}

/// Converts `traces` (one run each, merged in time order) into the tables
/// under `out`; returns the notes on damaged and cut files, and how the
/// inputs ended.
fn convert(
    traces: &[PathBuf],
    out: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Vec<String>, InputsEnd), Error> {
    let mut inputs = Vec::with_capacity(traces.len());
    let mut total = 0u64;
    for path in traces {
        let reader = TraceReader::open(path).map_err(|e| Error::Convert {
            path: path.clone(),
            cause: e.into(),
        })?;
        let size = fs::metadata(path).map_or(0, |m| m.len());
        total += size.saturating_sub(reader.header_len()) / qtrace::Event::SIZE as u64;
        inputs.push((path.clone(), reader));
    }
    let report = qtrace_store::convert(inputs, out, &mut |done| {
        progress(Progress {
            done,
            total: total.max(done),
        })
    })
    .map_err(|cause| Error::Convert {
        path: traces[0].clone(),
        cause,
    })?;
    let mut notes = Vec::new();
    let mut worst = InputsEnd::Whole;
    for e in &report.damaged {
        notes.push(format!(
            "{e} (its events before the damage are in the tables)"
        ));
        worst = InputsEnd::Damaged;
    }
    for (path, end) in traces.iter().zip(&report.ends) {
        match end {
            Some(Completeness::Cut { .. }) => {
                notes.push(format!(
                    "{}: cut short, no close record (its events up to the cut are in the tables; qtrace stats says more)",
                    path.display()
                ));
                worst = worst.max(InputsEnd::Cut);
            }
            Some(Completeness::Mismatch { .. }) => {
                notes.push(format!(
                    "{}: damaged, its close record disagrees with it (qtrace stats says more)",
                    path.display()
                ));
                worst = InputsEnd::Damaged;
            }
            _ => {}
        }
    }
    Ok((notes, worst))
}

/// Whether `dir` holds a `*.parquet` file at any depth (hidden entries and
/// unfinished parts skipped).
/// Every `*.parquet` file under `dir`, at any depth (not hidden ones: parts
/// being written).
fn parquet_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') {
            continue;
        }
        let path = e.path();
        if path.is_dir() {
            parquet_files(&path, out);
        } else if name.ends_with(".parquet") {
            out.push(path);
        }
    }
}

fn has_parquet(dir: &Path) -> bool {
    let Ok(entries) = fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') {
            return false;
        }
        let path = e.path();
        if path.is_dir() {
            has_parquet(&path)
        } else {
            name.ends_with(".parquet")
        }
    })
}

/// `s` as an SQL string literal.
fn sql_string(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}
