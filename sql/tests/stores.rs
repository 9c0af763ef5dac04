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
