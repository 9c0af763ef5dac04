//! Parquet tables: `qtrace convert --to parquet` compared row by row with
//! `qtrace dump --json`, `qtrace recv --store` (rolling, retention, a
//! SIGKILLed receiver, exact loss accounting), and the same files read by
//! DuckDB, chdb and pyarrow (when scripts/test.sh installed them).
//!
//! One test binary, one module per file (tests/README.md is the map).

#[path = "../common/mod.rs"]
mod common;

mod atomic;
mod convert_rows;
mod engines;
mod store;
