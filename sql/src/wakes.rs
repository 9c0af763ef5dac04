//! The `wake_flows` table: the wake-up flows `qtrace analyze` derives (a
//! semaphore signal or an interrupt to the schedule of the task it woke,
//! FORMAT.md 7.5b), computed by the library's own analysis over each
//! stream's scheduler rows, in the order and with the figures analyze
//! gives. Not plain SQL like `views.sql`: a signal releases the waiter that
//! has waited longest among those still blocked and not yet released, a
//! choice that depends on every earlier release (a state machine, which
//! window functions do not express). The table is made empty with the
//! views and filled once, at the first query that names it.

use duckdb::{params, Connection};
use qtrace::analysis::{AnalysisOptions, Analyzer, WakeCause};
use qtrace::classes::{tracer, Catalog};
use qtrace::{Event, EventId};

/// The table, empty (made with the views).
pub(crate) const CREATE: &str = "CREATE OR REPLACE TABLE wake_flows (host VARCHAR, \
    stream VARCHAR, number UBIGINT, task UBIGINT, cause VARCHAR, sem UBIGINT, by_task UBIGINT, irq UBIGINT, \
    from_ns BIGINT, from_source UINTEGER, to_ns BIGINT, to_source UINTEGER, \
    latency_ns UBIGINT, lossy BOOLEAN);";

/// The rows the analysis reads, each stream's in trace order (time, run,
/// seq, as `qtrace_sched`): its scheduler, semaphore and interrupt events,
/// and its hoops records (`event_id` NULL).
const ROWS: &str = "SELECT host, stream, time_ns, source, event_id, arg0, arg1 FROM (
    SELECT host, stream, run, seq, time_ns, source, event_id, arg0, arg1 FROM qtrace_events
    WHERE event_id IN (3, 4, 5, 6, 7, 8, 10, 19, 20, 21, 22)
    UNION ALL
    SELECT host, stream, run, seq, time_ns, 0, NULL, count, 0 FROM qtrace_hoops
) ORDER BY host, stream, time_ns, run, seq";

/// Fills `wake_flows` (made by [`CREATE`]) from the views over `events`
/// and `losses`; `irq_max_ns` is analyze's `--irq-max` (how long after an
/// interrupt an activate counts as its handler's).
pub(crate) fn fill(conn: &Connection, irq_max_ns: u64) -> duckdb::Result<()> {
    let mut stmt = conn.prepare(ROWS)?;
    let mut rows = stmt.query([])?;
    let mut appender = conn.appender("wake_flows")?;
    let catalog = Catalog::builtin();
    let options = AnalysisOptions {
        interrupt_max_ns: irq_max_ns,
        ..AnalysisOptions::default()
    };
    let mut current: Option<((String, String), Analyzer)> = None;
    let mut flush = |key: (String, String), a: Analyzer| -> duckdb::Result<()> {
        for (n, f) in a.finish().wake_flows.iter().enumerate() {
            let (cause, sem, by, irq) = match f.cause {
                WakeCause::Signal { sem, by } => ("signal", Some(sem), Some(by), None),
                WakeCause::Interrupt { irq } => ("interrupt", None, None, Some(irq)),
            };
            appender.append_row(params![
                key.0,
                key.1,
                n as u64 + 1,
                f.task,
                cause,
                sem,
                by,
                irq,
                f.from_ns as i64,
                f.from_source,
                f.to_ns as i64,
                f.to_source,
                f.latency_ns(),
                f.lossy
            ])?;
        }
        Ok(())
    };
    while let Some(row) = rows.next()? {
        let key: (String, String) = (row.get(0)?, row.get(1)?);
        let time: i64 = row.get(2)?;
        let id: Option<u16> = row.get(4)?;
        let event = Event::new(
            time.max(0) as u64,
            id.map_or(tracer::HOOPS, EventId),
            row.get::<_, Option<u32>>(3)?.unwrap_or(0),
            [row.get(5)?, row.get(6)?],
        );
        match &mut current {
            Some((k, a)) if *k == key => a.push(&event),
            _ => {
                let mut a = Analyzer::new(&catalog, options.clone());
                a.push(&event);
                if let Some((k, done)) = current.replace((key, a)) {
                    flush(k, done)?;
                }
            }
        }
    }
    if let Some((k, done)) = current.take() {
        flush(k, done)?;
    }
    appender.flush()
}
