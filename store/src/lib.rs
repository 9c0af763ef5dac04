//! Parquet tables of qtrace traces (FORMAT.md 7): `events`, `losses`,
//! `payloads` and `streams`, written with the Apache Arrow project's
//! `parquet` crate (zstd, delta-encoded times, dictionary-encoded strings),
//! readable by DuckDB, ClickHouse, pyarrow, polars or Spark without qtrace.
//!
//! - [`convert()`]: trace files (queues' files, received files, recovered
//!   rings) to the tables of a new folder, which appear together or not at
//!   all (`qtrace convert --to parquet`).
//! - [`Store`]: the receiver's rolling, Hive-partitioned store (`qtrace recv
//!   --store`): parts closed atomically, rolled by size or time, old parts
//!   deleted by age or total size, unfinished parts of a killed receiver
//!   accounted for at the next start ([`recover_dir`]).
//!
//! A crate of its own, outside the library: a tracing user never compiles
//! arrow or parquet.
//!
//! ```no_run
//! use std::path::PathBuf;
//! use qtrace::reader::TraceReader;
//!
//! let path = PathBuf::from("trace.qtr");
//! let reader = TraceReader::open(&path)?;
//! let report = qtrace_store::convert(vec![(path, reader)], "tables".as_ref(), &mut |_| {})?;
//! println!("{} events, {} lost", report.events, report.lost);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]
// docs.rs (`--cfg docsrs`): cfg'd items get a badge, as in the library.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod align;
mod checkpoint;
mod columns;
mod convert;
mod delta;
mod error;
mod idkeys;
mod jobs;
mod names;
mod numbers;
mod part;
mod partset;
mod rejections;
mod run;
mod scan;
mod schema;
mod stage;
mod store;
mod zstd_page;

pub use align::{Align, MAX_DRIFT_PPM, WINDOWS, WINDOW_NS};
pub use columns::StreamRow;
pub use convert::{convert, verdict, ConvertReport, Input};
pub use error::StoreError;
pub use part::{part_name, part_number, sync_dir, temp_name};
pub use partset::PartSet;
pub use run::{kind, Run, RunInfo};
pub use scan::{next_part_number, scan, Found};
pub use schema::{Table, BATCH_ROWS, EVENT_ROW_GROUP, SCHEMA_VERSION, TABLE_KEY, VERSION_KEY};
pub use store::{recover_dir, utc_date_hour, Store, StoreConfig, StoreReport};
