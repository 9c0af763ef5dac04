//! The four tables' Arrow schemas and the writer properties of their Parquet
//! files (FORMAT.md 7): one place, so that a reader's view of the files and
//! the writer cannot drift apart.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;

/// The schema version every file carries (`qtrace.schema_version`). A change
/// that a reader of version 1 would misread (a column renamed, retyped or
/// given another meaning) bumps it; new columns appended at the end do not.
pub const SCHEMA_VERSION: &str = "1";

/// Key-value metadata key: the schema version.
pub const VERSION_KEY: &str = "qtrace.schema_version";

/// Key-value metadata key: which table a file belongs to.
pub const TABLE_KEY: &str = "qtrace.table";

/// Rows per row group of the events table: 1 Mi rows (about 5 MB on disk at
/// 5 bytes an event, 32 MB once decoded). Large enough that a scan reads
/// long runs of pages and the per-group metadata stays small (a 100 M-event
/// store has about 100 groups), small enough that the writer's buffered
/// group stays a few MB and that an engine with 2 to 16 threads gets a group
/// per thread from a few million events on.
pub const EVENT_ROW_GROUP: usize = 1 << 20;

/// The zstd level of every page.
pub(crate) const ZSTD_LEVEL: i32 = 1;

/// Rows handed to the Parquet writer at once (the writer's column buffers).
pub const BATCH_ROWS: usize = 64 * 1024;

/// The tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Table {
    /// One row per event record.
    Events,
    /// One row per loss mark.
    Losses,
    /// One row per combine run (strings, bytes, run-time names).
    Payloads,
    /// One row per run (per part, in a store).
    Streams,
    /// One row per job ended (an endcycle that ends a job).
    Jobs,
}

impl Table {
    /// Every table, in folder order.
    pub const ALL: [Table; 5] = [
        Table::Events,
        Table::Losses,
        Table::Payloads,
        Table::Streams,
        Table::Jobs,
    ];

    /// The table's name: its folder and its `qtrace.table` value.
    pub fn name(self) -> &'static str {
        match self {
            Table::Events => "events",
            Table::Losses => "losses",
            Table::Payloads => "payloads",
            Table::Streams => "streams",
            Table::Jobs => "jobs",
        }
    }

    /// The table's Arrow schema (with the metadata keys).
    pub fn schema(self) -> SchemaRef {
        let mut fields = common();
        fields.extend(match self {
            Table::Events => events(),
            Table::Losses => losses(),
            Table::Payloads => payloads(),
            Table::Streams => streams(),
            Table::Jobs => jobs(),
        });
        let metadata = HashMap::from([
            (VERSION_KEY.to_string(), SCHEMA_VERSION.to_string()),
            (TABLE_KEY.to_string(), self.name().to_string()),
        ]);
        Arc::new(Schema::new_with_metadata(fields, metadata))
    }

    /// The Parquet writer's properties for this table: zstd, delta-encoded
    /// times and sequence numbers, dictionaries for the rest, statistics per
    /// column chunk (min/max of the times let an engine skip groups).
    pub fn properties(self) -> WriterProperties {
        let mut b = WriterProperties::builder()
            .set_compression(Compression::ZSTD(
                ZstdLevel::try_new(ZSTD_LEVEL).unwrap_or_default(),
            ))
            .set_statistics_enabled(EnabledStatistics::Chunk)
            .set_max_row_group_row_count(Some(EVENT_ROW_GROUP))
            .set_created_by(format!("qtrace-store {}", env!("CARGO_PKG_VERSION")))
            .set_key_value_metadata(Some(vec![
                parquet::file::metadata::KeyValue::new(
                    VERSION_KEY.to_string(),
                    SCHEMA_VERSION.to_string(),
                ),
                parquet::file::metadata::KeyValue::new(
                    TABLE_KEY.to_string(),
                    self.name().to_string(),
                ),
            ]));
        // Min/max of strings cost a comparison per row (a third of the
        // writer's time, measured): only numbers carry statistics.
        for name in [
            "run", "host", "class", "event", "kind", "name_of", "state", "text", "bytes", "path",
            "verdict",
        ] {
            b = b.set_column_statistics_enabled(ColumnPath::from(name), EnabledStatistics::None);
        }
        // Numbers that repeat (queues, senders, arguments) are cheaper to
        // write plain and let zstd fold than to dictionary-encode with the
        // crate's encoder (a hash per value), and as small on disk
        // (measured). The events' sources, ids and flags are written
        // dictionary-encoded by `numbers::NumberChunk` instead (an array
        // lookup a value, no hash): their keys bit-packed leave zstd a
        // fraction of the PLAIN bytes (zstd took `source`'s at 130-150
        // MB/s; the three were 40-45 % of the encoder's column time on the
        // reference corpus, measured), and take fewer bytes.
        let plain: &[&str] = match self {
            Table::Events => &["sender", "queue", "arg0", "arg1"],
            Table::Payloads => &["source", "event_id"],
            Table::Jobs => &["sender", "task"],
            _ => &[],
        };
        for name in plain {
            b = b.set_column_dictionary_enabled(ColumnPath::from(*name), false);
        }
        let delta: &[&str] = match self {
            Table::Events => &["seq", "time_ns", "aligned_ns"],
            Table::Losses | Table::Payloads => &["seq", "time_ns", "aligned_ns"],
            // Activations come in about the order of the endcycles.
            Table::Jobs => &["seq", "time_ns", "aligned_ns", "activated_ns"],
            Table::Streams => &[],
        };
        for name in delta {
            let col = ColumnPath::from(*name);
            b = b
                .set_column_dictionary_enabled(col.clone(), false)
                .set_column_encoding(col, Encoding::DELTA_BINARY_PACKED);
        }
        if self == Table::Payloads {
            for name in ["text", "bytes"] {
                b = b.set_column_dictionary_enabled(ColumnPath::from(name), false);
            }
        }
        b.build()
    }
}

/// A dictionary-encoded string column.
fn dict(name: &str, nullable: bool) -> Field {
    Field::new(
        name,
        DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
        nullable,
    )
}

fn col(name: &str, t: DataType, nullable: bool) -> Field {
    Field::new(name, t, nullable)
}

/// Every table starts with these: which run, which host, which sender.
fn common() -> Vec<Field> {
    vec![
        dict("run", false),
        dict("host", false),
        col("sender", DataType::UInt32, true),
    ]
}

/// Where a row is in its run and when.
fn position() -> Vec<Field> {
    vec![
        col("seq", DataType::UInt64, false),
        col("time_ns", DataType::Int64, false),
        col("aligned_ns", DataType::Int64, false),
    ]
}

fn events() -> Vec<Field> {
    let mut f = position();
    f.extend([
        col("source", DataType::UInt32, false),
        col("event_id", DataType::UInt16, false),
        dict("class", true),
        dict("event", true),
        col("arg0", DataType::UInt64, false),
        col("arg1", DataType::UInt64, false),
        col("flags", DataType::UInt16, false),
        col("queue", DataType::UInt16, true),
    ]);
    f
}

/// One row per job ended (FORMAT.md 7.5a): the endcycle's place, its task,
/// when the job was activated, whether a hoops record came between.
fn jobs() -> Vec<Field> {
    let mut f = position();
    f.extend([
        col("task", DataType::UInt64, false),
        col("activated_ns", DataType::Int64, false),
        col("lossy", DataType::Boolean, false),
    ]);
    f
}

fn losses() -> Vec<Field> {
    let mut f = position();
    f.extend([
        col("count", DataType::UInt64, false),
        dict("kind", false),
        col("queue", DataType::UInt16, true),
        col("accounted", DataType::UInt64, true),
    ]);
    f
}

fn payloads() -> Vec<Field> {
    let mut f = position();
    f.extend([
        col("source", DataType::UInt32, false),
        col("event_id", DataType::UInt16, false),
        dict("class", true),
        dict("event", true),
        dict("kind", false),
        col("arg0", DataType::UInt64, true),
        dict("name_of", true),
        col("subject", DataType::UInt64, true),
        col("text", DataType::Utf8, true),
        col("bytes", DataType::Binary, true),
        col("complete", DataType::Boolean, false),
        dict("state", false),
        col("received", DataType::UInt32, true),
        col("expected", DataType::UInt32, true),
        col("logged_len", DataType::UInt32, true),
    ]);
    f
}

fn streams() -> Vec<Field> {
    vec![
        col("path", DataType::Utf8, false),
        col("part", DataType::UInt64, false),
        col("first_ns", DataType::Int64, true),
        col("last_ns", DataType::Int64, true),
        col("records", DataType::UInt64, false),
        col("events", DataType::UInt64, false),
        col("lost", DataType::UInt64, false),
        col("complete", DataType::Boolean, false),
        col("verdict", DataType::Utf8, false),
        col("accepted", DataType::UInt64, true),
        col("dropped", DataType::UInt64, true),
        col("overwritten", DataType::UInt64, true),
        col("delivered", DataType::UInt64, true),
        col("datagrams", DataType::UInt64, true),
        col("lost_datagrams", DataType::UInt64, true),
        col("sender_dropped", DataType::UInt64, true),
        col("unsent", DataType::UInt64, true),
        col("logged", DataType::UInt64, true),
        col("clock_offset_ns", DataType::Int64, true),
        col("clock_offset_bound_ns", DataType::Int64, true),
        col("clock_drift_ppm", DataType::Float64, true),
        col("origin_unix_ns", DataType::Int64, true),
    ]
}
