//! What `Engine::open` reads: every part under each table's folder at any
//! depth (Hive partitions of `qtrace recv --store`), several stores at once,
//! never a part being written, and a store without a table.

use std::fs;
use std::path::Path;

use qtrace_sql::{Engine, Error, Format, Options, Printer};

/// Writes an events part of `n` rows of `host` at `path` through DuckDB.
fn part(path: &Path, host: &str, n: u64) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let engine = Engine::empty(&Options::default()).unwrap();
    engine
        .connection()
        .execute_batch(&format!(
            "COPY (SELECT 'r' AS run, '{host}' AS host, NULL::UINTEGER AS sender, range::UBIGINT AS seq, \
             (range * 10)::BIGINT AS time_ns, (range * 10)::BIGINT AS aligned_ns, 0::UINTEGER AS source, \
             11::USMALLINT AS event_id, 'user' AS class, 'user0' AS event, 0::UBIGINT AS arg0, \
             0::UBIGINT AS arg1, 0::USMALLINT AS flags, NULL::USMALLINT AS queue FROM range({n})) \
             TO '{}' (FORMAT parquet)",
            path.display()
        ))
        .unwrap();
}

fn csv(engine: &Engine, sql: &str) -> String {
    let mut out = Vec::new();
    engine
        .run(sql, Printer::new(Format::Csv, &mut out))
        .unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn partitions_at_any_depth_and_several_stores_are_read_and_temps_never() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    part(
        &a.join("events/host=10.0.0.1/date=2026-11-27/hour=15/part-0.parquet"),
        "10.0.0.1",
        3,
    );
    part(
        &a.join("events/host=10.0.0.2/date=2026-11-27/hour=16/part-1.parquet"),
        "10.0.0.2",
        4,
    );
    // A part being written: hidden, not ending in .parquet, and not Parquet.
    fs::write(
        a.join("events/host=10.0.0.2/date=2026-11-27/hour=16/.part-2.parquet.tmp"),
        b"half",
    )
    .unwrap();
    part(&b.join("events/part-0.parquet"), "laptop", 5);
    let engine = Engine::open(&[a, b], &Options::default()).unwrap();
    assert_eq!(
        csv(
            &engine,
            "SELECT host, count(*) AS n FROM events GROUP BY host ORDER BY host"
        ),
        "host,n\n10.0.0.1,3\n10.0.0.2,4\nlaptop,5\n"
    );
    // No losses folder anywhere: an empty losses table, and the views bind.
    assert_eq!(
        csv(&engine, "SELECT (SELECT count(*) FROM losses) AS losses, (SELECT count(*) FROM response_times) AS jobs"),
        "losses,jobs\n0,0\n"
    );
}

#[test]
fn a_folder_that_is_not_a_store_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    match Engine::open(&[dir.path().to_path_buf()], &Options::default()) {
        Err(Error::BadInput { why, .. }) => {
            assert!(why.contains("no events/ or losses/ folder"), "{why}")
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("an empty folder opened as a store"),
    }
    assert!(matches!(
        Engine::open(&[], &Options::default()),
        Err(Error::NoInput)
    ));
}

/// Writes `events` as the trace file `path`.
fn trace(path: &Path, events: &[qtrace::Event]) {
    trace_on(path, "", events);
}

/// Writes `events` as the trace file `path` of host `host`.
fn trace_on(path: &Path, host: &str, events: &[qtrace::Event]) {
    use qtrace::classes::Catalog;
    use qtrace::clock::{Clock, ManualClock};
    use qtrace::wire::{create_trace_file, TraceHeader};
    let mut header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)))
        .with_clock("manual", 1_000_000_000, 0)
        .unwrap();
    if !host.is_empty() {
        header = header.with_host(host).unwrap();
    }
    let mut w = create_trace_file(path, &header).unwrap();
    w.write_events(events).unwrap();
    w.finish().unwrap();
}

/// Converts the trace files `paths` (one conversion) into the store `out`.
fn convert(paths: &[&Path], out: &Path) {
    let inputs = paths
        .iter()
        .map(|p| {
            let r = qtrace::reader::TraceReader::open(p).unwrap();
            (p.to_path_buf(), r)
        })
        .collect();
    qtrace_store::convert(inputs, out, &mut |_| {}).unwrap();
}

const JOBS: &str = "SELECT task, activated_ns, ended_ns, response_ns, lossy FROM response_times \
    ORDER BY task, activated_ns";

/// Whether the engine pairs no job itself (FORMAT.md 7.5a: every host's
/// jobs were paired by the store writer).
fn stored_only(engine: &Engine) -> bool {
    csv(
        engine,
        "SELECT sql LIKE '%list_sort%' AS derived FROM duckdb_views() \
         WHERE view_name = 'response_times'",
    ) == "derived\nfalse\n"
}

#[test]
fn jobs_are_paired_by_the_writer_per_conversion_and_by_the_views_otherwise() {
    use qtrace::classes::{system, tracer};
    use qtrace::Event;
    let a = |t, task| Event::new(t, system::ACTIVATE, 0, [task, 0]);
    let e = |t, task| Event::new(t, system::ENDCYCLE, 0, [task, 0]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Task 1 is activated in cpu0.qtr and ended in cpu1.qtr: one conversion
    // of both pairs them as analyze does (over the merged files).
    trace(
        &d.join("cpu0.qtr"),
        &[
            a(10, 1),
            a(20, 2),
            Event::new(25, tracer::HOOPS, 0, [3, 0]),
            a(40, 1),
        ],
    );
    trace(
        &d.join("cpu1.qtr"),
        &[e(5, 2), e(30, 1), e(35, 2), e(50, 1)],
    );
    let want = "task,activated_ns,ended_ns,response_ns,lossy\n\
                1,10,30,20,true\n1,40,50,10,false\n2,20,35,15,true\n";
    let both = d.join("both");
    convert(&[&d.join("cpu0.qtr"), &d.join("cpu1.qtr")], &both);
    let engine = Engine::open(std::slice::from_ref(&both), &Options::default()).unwrap();
    assert!(stored_only(&engine));
    assert_eq!(csv(&engine, JOBS), want);

    // Two conversions of the same host, given together: each paired its own
    // files only, so the views pair the host's jobs themselves — same jobs.
    let (s0, s1) = (d.join("s0"), d.join("s1"));
    convert(&[&d.join("cpu0.qtr")], &s0);
    convert(&[&d.join("cpu1.qtr")], &s1);
    let engine = Engine::open(&[s0, s1], &Options::default()).unwrap();
    assert!(!stored_only(&engine));
    assert_eq!(csv(&engine, JOBS), want);

    // A store written before the jobs table (its parts have none): read,
    // the views pair the jobs.
    let old = d.join("old");
    for t in ["events", "losses", "payloads", "streams"] {
        fs::create_dir_all(old.join(t)).unwrap();
        let part = |s: &Path| s.join(t).join("part-0.parquet");
        fs::copy(part(&both), part(&old)).unwrap();
    }
    let engine = Engine::open(std::slice::from_ref(&old), &Options::default()).unwrap();
    assert!(!stored_only(&engine));
    assert_eq!(csv(&engine, JOBS), want);
    // Old and new parts together (every record twice: each activate and
    // endcycle pairs with a copy) are paired by the views.
    let engine = Engine::open(&[old, both], &Options::default()).unwrap();
    assert!(!stored_only(&engine));
    assert_eq!(
        csv(&engine, "SELECT count(*) AS jobs FROM response_times"),
        "jobs\n6\n"
    );
}

#[test]
fn a_paired_host_and_an_unpaired_one_in_one_query() {
    use qtrace::classes::system;
    use qtrace::Event;
    let a = |t, task| Event::new(t, system::ACTIVATE, 0, [task, 0]);
    let e = |t, task| Event::new(t, system::ENDCYCLE, 0, [task, 0]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let first = [a(10, 1), a(20, 2), a(40, 1)];
    let second = [e(5, 2), e(30, 1), e(35, 2), e(50, 1)];
    for host in ["a", "b"] {
        trace_on(&d.join(format!("{host}0.qtr")), host, &first);
        trace_on(&d.join(format!("{host}1.qtr")), host, &second);
    }
    // Host a in one conversion (paired by the writer), host b in two.
    let sa = d.join("sa");
    convert(&[&d.join("a0.qtr"), &d.join("a1.qtr")], &sa);
    let (sb0, sb1) = (d.join("sb0"), d.join("sb1"));
    convert(&[&d.join("b0.qtr")], &sb0);
    convert(&[&d.join("b1.qtr")], &sb1);
    let engine = Engine::open(&[sa, sb0, sb1], &Options::default()).unwrap();
    assert!(!stored_only(&engine));
    assert_eq!(
        csv(&engine, "SELECT host, stream FROM qtrace_paired_streams"),
        "host,stream\na,\n"
    );
    assert_eq!(
        csv(
            &engine,
            "SELECT host, task, activated_ns, ended_ns, lossy FROM response_times ORDER BY ALL"
        ),
        "host,task,activated_ns,ended_ns,lossy\n\
         a,1,10,30,false\na,1,40,50,false\na,2,20,35,false\n\
         b,1,10,30,false\nb,1,40,50,false\nb,2,20,35,false\n"
    );
}
