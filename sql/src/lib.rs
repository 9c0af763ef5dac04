//! `qtrace sql`: SQL over qtrace traces, in-process — no server, no import
//! step. An [`Engine`] is an embedded DuckDB (1.5.6) whose tables are views
//! over the Parquet files of qtrace's store (FORMAT.md 7), read where they
//! lie, and whose ready views compute what `qtrace analyze` computes:
//!
//! | view | one row per |
//! |---|---|
//! | `events`, `losses`, `payloads`, `streams` | the store's tables (FORMAT.md 7) |
//! | `slices` | task run, interrupt handler, semaphore hold, as the Perfetto export draws them |
//! | `response_times` | job: activate to endcycle, `lossy` when a loss falls inside |
//! | `preemptions` | preemption of a task by another on its source |
//! | `cpu_busy` | source: dispatches, busy, idle and lossy time, utilisation |
//! | `counters`, `flows` | counter record, flow record (FORMAT.md 1.3.2, 1.3.3) |
//! | `wake_flows` | derived wake-up flow: a signal or interrupt to the schedule of the task it woke, with its latency |
//!
//! The views are plain SQL (`views.sql`, in this crate) over `events` and
//! `losses`, per stream (column `stream`): a received stream is one trace
//! (its `run`: one sender's run, tests/fleet.rs), a host's converted files
//! are one (`stream` = ''), merged in time order as `qtrace analyze` merges
//! the files it is given, and their figures equal analyze's (tests/views.rs
//! checks it on the main job's trace and on generated schedules).
//! `wake_flows` alone is not SQL: a table that the library's analysis fills
//! at the first query naming it (`src/wakes.rs`: which waiter a signal
//! releases depends on every earlier release, a state machine).
//!
//! Results print as an aligned table, CSV or JSON lines ([`Format`],
//! [`Printer`]); [`prompt`] reads statements line by line.
//!
//! DuckDB is linked, not compiled: the build links the DuckDB project's
//! prebuilt `libduckdb.so` 1.5.6 found in `DUCKDB_LIB_DIR`
//! (`scripts/duckdb-lib.sh` fetches it), or compiles it from source with the
//! feature `bundled`.

#![deny(missing_docs)]
#![forbid(unsafe_code)]
// docs.rs (`--cfg docsrs`): cfg'd items get a badge, as in the library.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod cache;
mod engine;
mod error;
mod output;
mod prompt;
mod views;
mod wakes;

pub use cache::Cache;
pub use engine::{Engine, InputsEnd, Options, Progress};
pub use error::Error;
pub use output::{Format, Printer};
pub use prompt::prompt;
pub use views::{READY, VIEWS_SQL};
