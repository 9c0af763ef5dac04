//! The ready views (`views.sql`) and the tables they read.

use duckdb::Connection;

/// The SQL of the ready views, run once `events` and `losses` exist.
pub const VIEWS_SQL: &str = include_str!("views.sql");

/// `response_times` when every stream's jobs were paired by the store
/// (views.sql, qtrace_paired_streams): its stored jobs alone, so that a query
/// reads no activate, joins nothing and sorts nothing.
pub(crate) const ALL_PAIRED: &str =
    "CREATE OR REPLACE VIEW response_times AS SELECT * FROM qtrace_stored_jobs;";

/// The views a user queries, with what each holds (`.views` in the prompt,
/// `qtrace sql --help`).
pub const READY: &[(&str, &str)] = &[
    ("events", "one row per event (FORMAT.md 7: run, host, seq, time_ns, source, event_id, class, event, arg0, arg1, ...)"),
    ("losses", "one row per loss mark: hoops records, unreadable slots, damage, transit losses, unclosed streams"),
    ("payloads", "one row per string, byte payload or run-time name (when the store has them)"),
    ("streams", "one row per run: counters, completeness, clock facts (when the store has them)"),
    ("jobs", "one row per job the store writer paired: task, activated_ns, lossy, at its endcycle (FORMAT.md 7.5a)"),
    ("slices", "task runs, interrupt handlers and semaphore holds, as the Perfetto export draws them"),
    ("response_times", "one row per job: activate to endcycle, per task; lossy when a loss falls inside"),
    ("preemptions", "one row per preemption: the task, its source and the task dispatched over it"),
    ("cpu_busy", "per source: dispatches, busy, idle and lossy time, utilisation"),
    ("counters", "one row per counter record (FORMAT.md 1.3.2): name, source, value as u64, i64 and f64"),
    ("flows", "one row per flow record (FORMAT.md 1.3.3): name, phase, origin, flow_id, instance"),
    ("wake_flows", "one row per derived wake-up flow (a signal or interrupt to the woken task's schedule): task, cause, from/to, latency_ns, lossy; analyze's"),
];

/// The columns of `events` and `losses` (schema version 1, FORMAT.md 7), for
/// an input without files of that table: the views still bind, over no rows.
pub(crate) const EMPTY_EVENTS: &str = "SELECT NULL::VARCHAR AS run, NULL::VARCHAR AS host, \
    NULL::UINTEGER AS sender, NULL::UBIGINT AS seq, NULL::BIGINT AS time_ns, \
    NULL::BIGINT AS aligned_ns, NULL::UINTEGER AS source, NULL::USMALLINT AS event_id, \
    NULL::VARCHAR AS class, NULL::VARCHAR AS event, NULL::UBIGINT AS arg0, \
    NULL::UBIGINT AS arg1, NULL::USMALLINT AS flags, NULL::USMALLINT AS queue WHERE false";

/// The columns of `streams` (FORMAT.md 7.5), for an input without its
/// files: the views read it to tell which streams' jobs the store paired.
pub(crate) const EMPTY_STREAMS: &str = "SELECT NULL::VARCHAR AS run, NULL::VARCHAR AS host, \
    NULL::UINTEGER AS sender, NULL::VARCHAR AS path, NULL::UBIGINT AS part, \
    NULL::BIGINT AS first_ns, NULL::BIGINT AS last_ns, NULL::UBIGINT AS records, \
    NULL::UBIGINT AS events, NULL::UBIGINT AS lost, NULL::BOOLEAN AS complete, \
    NULL::VARCHAR AS verdict WHERE false";

/// The columns of `jobs` (FORMAT.md 7.5a), for an input without its files.
pub(crate) const EMPTY_JOBS: &str = "SELECT NULL::VARCHAR AS run, NULL::VARCHAR AS host, \
    NULL::UINTEGER AS sender, NULL::UBIGINT AS seq, NULL::BIGINT AS time_ns, \
    NULL::BIGINT AS aligned_ns, NULL::UBIGINT AS task, NULL::BIGINT AS activated_ns, \
    NULL::BOOLEAN AS lossy WHERE false";

pub(crate) const EMPTY_LOSSES: &str = "SELECT NULL::VARCHAR AS run, NULL::VARCHAR AS host, \
    NULL::UINTEGER AS sender, NULL::UBIGINT AS seq, NULL::BIGINT AS time_ns, \
    NULL::BIGINT AS aligned_ns, NULL::UBIGINT AS count, NULL::VARCHAR AS kind, \
    NULL::USMALLINT AS queue, NULL::UBIGINT AS accounted WHERE false";

/// Creates the ready views on `conn`, whose `events` and `losses` exist.
///
/// # Errors
///
/// DuckDB's error when a view does not bind (a table lacks a column the
/// views read).
pub fn create(conn: &Connection) -> duckdb::Result<()> {
    conn.execute_batch(VIEWS_SQL)
}

#[cfg(test)]
mod tests {
    use qtrace::classes::{lowlevel, semaphore, system};

    /// views.sql names the built-in events by number.
    #[test]
    fn the_numbers_in_the_views_are_the_built_in_events() {
        assert_eq!(
            [
                system::ACTIVATE.0,
                system::SCHEDULE.0,
                system::DELAY.0,
                system::SLEEP.0,
                system::ENDCYCLE.0,
                system::DESTROY.0,
                system::DISABLE.0,
                lowlevel::INTERRUPT.0,
                semaphore::WAIT.0,
                semaphore::WAITNB.0,
                semaphore::SIGNAL.0,
            ],
            [3, 4, 5, 6, 7, 8, 10, 19, 20, 21, 22]
        );
    }
}
