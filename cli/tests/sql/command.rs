//! The command itself: output formats byte for byte, the prompt on a pipe,
//! what it says about bad inputs and bad queries.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn qtrace(args: &[&str], stdin: &str) -> Output {
    let cache = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(args)
        // Conversions of .qtr inputs go into a cache of this call's own.
        .env("XDG_CACHE_HOME", cache.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run qtrace");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> &str {
    std::str::from_utf8(b).unwrap()
}

/// A store of two events and one loss, written by DuckDB itself in the
/// schema of FORMAT.md 7 (as any writer of it would).
fn store(dir: &Path) -> String {
    std::fs::create_dir_all(dir.join("events")).unwrap();
    std::fs::create_dir_all(dir.join("losses")).unwrap();
    let events = dir.join("events/part-0.parquet");
    let losses = dir.join("losses/part-0.parquet");
    let sql = format!(
        "COPY (SELECT * FROM (VALUES \
           ('a.qtr', 'h', NULL::UINTEGER, 0::UBIGINT, 100::BIGINT, 100::BIGINT, 0::UINTEGER, 3::USMALLINT, 'system', 'activate', 7::UBIGINT, 0::UBIGINT, 0::USMALLINT, 0::USMALLINT), \
           ('a.qtr', 'h', NULL, 2, 350, 350, 0, 7, 'system', 'endcycle', 7, 0, 0, 0)) \
           t(run, host, sender, seq, time_ns, aligned_ns, source, event_id, class, event, arg0, arg1, flags, queue)) \
         TO '{}' (FORMAT parquet); \
         COPY (SELECT 'a.qtr' AS run, 'h' AS host, NULL::UINTEGER AS sender, 1::UBIGINT AS seq, \
           200::BIGINT AS time_ns, 200::BIGINT AS aligned_ns, 5::UBIGINT AS count, 'hoops' AS kind, \
           0::USMALLINT AS queue, NULL::UBIGINT AS accounted) TO '{}' (FORMAT parquet);",
        events.display(),
        losses.display()
    );
    // The engine over an empty folder runs the COPY statements.
    let empty = dir.join("empty");
    std::fs::create_dir_all(empty.join("events")).unwrap();
    let out = qtrace(&["sql", empty.to_str().unwrap(), &sql], "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    dir.to_str().unwrap().to_string()
}

#[test]
fn a_result_as_a_table_csv_and_json_lines() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let q = "SELECT task, activated_ns AS \"from\", response_ns, lossy, 'a,\"b\"' AS note, NULL AS none, 2.5 AS x FROM response_times";
    let out = qtrace(&["sql", &s, q], "");
    assert_eq!(text(&out.stderr), "");
    assert_eq!(
        text(&out.stdout),
        "task  from  response_ns  lossy  note   none    x\n\
         ----  ----  -----------  -----  -----  ----  ---\n   \
         7   100          250  true   a,\"b\"  NULL  2.5\n\
         (1 row)\n"
    );
    let out = qtrace(&["sql", "--format", "csv", &s, q], "");
    assert_eq!(
        text(&out.stdout),
        "task,from,response_ns,lossy,note,none,x\n7,100,250,true,\"a,\"\"b\"\"\",,2.5\n"
    );
    let out = qtrace(&["sql", "-f", "json", &s, q], "");
    assert_eq!(
        text(&out.stdout),
        "{\"task\":7,\"from\":100,\"response_ns\":250,\"lossy\":true,\"note\":\"a,\\\"b\\\"\",\"none\":null,\"x\":2.5}\n"
    );
    assert!(out.status.success());
}

#[test]
fn statements_from_a_pipe_run_one_by_one_and_a_failure_sets_the_status() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let input = "SELECT count(*) AS n\n  FROM events;\nSELECT nope FROM events;\n.mode csv\nSELECT kind, count FROM losses;\n";
    let out = qtrace(&["sql", &s], input);
    assert_eq!(text(&out.stdout), "n\n-\n2\n(1 row)\nkind,count\nhoops,5\n");
    let err = text(&out.stderr);
    assert!(err.starts_with("Error: ") && err.contains("nope"), "{err}");
    assert_eq!(out.status.code(), Some(2));
    // No failure: status 0, and no prompt text on a pipe.
    let out = qtrace(&["sql", &s], ".views\n");
    assert!(
        text(&out.stdout).starts_with("events "),
        "{}",
        text(&out.stdout)
    );
    assert_eq!((text(&out.stderr), out.status.code()), ("", Some(0)));
    let views = text(&out.stdout).to_owned();
    assert_eq!(views.lines().count(), 12, "{views}");
    // .views as the query argument: the same list.
    let out = qtrace(&["sql", &s, ".views"], "");
    assert_eq!((text(&out.stderr), out.status.code()), ("", Some(0)));
    assert_eq!(text(&out.stdout), views);
    let out = qtrace(&["sql", &s, ".nonsense"], "");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "Error: unknown command \".nonsense\" (.help lists them)\n"
    );
}

#[test]
fn bad_inputs_and_queries_are_refused_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let events = dir.path().join("events");
    let part = events.join("part-0.parquet");
    let cases: [(&[&str], &str); 4] = [
        (
            &["sql", "SELECT 1"],
            "no input: give a Parquet store folder",
        ),
        (
            &["sql", events.to_str().unwrap(), "SELECT 1"],
            "not a qtrace Parquet store",
        ),
        (
            &["sql", part.to_str().unwrap(), "SELECT 1"],
            "cannot read it as a qtrace trace",
        ),
        (&["sql", &s, "SELECT * FROM nowhere"], "nowhere"),
    ];
    for (args, says) in cases {
        let out = qtrace(args, "");
        let err = text(&out.stderr);
        assert!(
            err.starts_with("qtrace sql: ") && err.contains(says),
            "{args:?}: {err}"
        );
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(text(&out.stdout), "", "{args:?}");
    }
}

/// `qtrace sql`'s DuckDB (1.5.6) reads `arg0` pages delta-packed and PLAIN
/// in one chunk, one of them a stored zstd frame (FORMAT.md 7.2): every
/// value, from a store and from the `.qtr` converted on the fly.
#[test]
fn delta_packed_plain_and_stored_pages_read_by_its_duckdb() {
    use crate::common::args_trace;
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("args.qtr");
    args_trace::write(&trace);
    let tables = dir.path().join("tables");
    let o = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(["convert", "--to", "parquet", "--out"])
        .arg(&tables)
        .arg(&trace)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let query = "SELECT count(*), sum(arg0::HUGEINT), min(arg0), max(arg0), \
                 sum(arg1::HUGEINT) FROM events";
    let want = format!("{}\n", args_trace::figures().join(","));
    for input in [&tables, &trace] {
        let o = qtrace(
            &["sql", "--format", "csv", input.to_str().unwrap(), query],
            "",
        );
        assert!(o.status.success(), "{}", text(&o.stderr));
        let out = text(&o.stdout);
        // The header line, then the figures.
        assert_eq!(out.split_once('\n').unwrap().1, want, "{}", input.display());
    }
}

/// `.qtr` inputs are converted once into the cache and read from it while
/// the files are unchanged; a file written again is converted again;
/// `--no-cache` keeps nothing; a limit smaller than the conversion keeps
/// nothing either and says so.
#[test]
fn a_second_query_over_unchanged_files_reads_the_cache() {
    use crate::common::args_trace;
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("args.qtr");
    args_trace::write(&trace);
    let cache = dir.path().join("cache");
    let query = "SELECT count(*), sum(arg0::HUGEINT) FROM events";
    let want = format!("{}\n", args_trace::figures()[..2].join(","));
    let run = |extra: &[&str]| {
        let mut args = vec!["sql", "--format", "csv"];
        args.extend_from_slice(extra);
        args.extend([trace.to_str().unwrap(), query]);
        let o = qtrace(&args, "");
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert_eq!(text(&o.stdout).split_once('\n').unwrap().1, want);
        text(&o.stderr).to_string()
    };
    let entries = || -> Vec<String> {
        std::fs::read_dir(&cache)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let c = cache.to_str().unwrap();
    let first = run(&["--cache-dir", c]);
    assert!(first.contains("converted into the cache"), "{first}");
    assert_eq!(entries().len(), 1);
    let second = run(&["--cache-dir", c]);
    assert_eq!(second, "", "a hit converts nothing and says nothing");
    assert_eq!(entries().len(), 1);
    // Written again: a new entry, the old one kept within the limit.
    args_trace::write(&trace);
    let third = run(&["--cache-dir", c]);
    assert!(third.contains("converted into the cache"), "{third}");
    assert_eq!(entries().len(), 2);
    // --no-cache: nothing added.
    let before = entries();
    assert_eq!(run(&["--no-cache"]), "");
    assert_eq!(entries(), before);
    // A limit below the conversion's size: used once, not kept.
    let small = dir.path().join("small");
    let s = small.to_str().unwrap();
    let said = run(&["--cache-dir", s, "--cache-max", "1K"]);
    assert!(
        said.contains("larger than the cache's limit (1024 bytes)"),
        "{said}"
    );
    let left: Vec<_> = std::fs::read_dir(&small).unwrap().flatten().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_cut_or_damaged_trace_sets_the_status_also_from_the_cache() {
    use qtrace::classes::{user, Catalog};
    use qtrace::clock::{Clock, ManualClock};
    use qtrace::wire::{create_trace_file, QueueTotals, TraceHeader};
    use qtrace::Event;
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let c = cache.to_str().unwrap().to_string();
    let query = "SELECT count(*) FROM events";
    let run = |trace: &Path| {
        let o = qtrace(
            &[
                "sql",
                "--format",
                "csv",
                "--cache-dir",
                &c,
                trace.to_str().unwrap(),
                query,
            ],
            "",
        );
        (
            o.status.code(),
            text(&o.stdout).to_string(),
            text(&o.stderr).to_string(),
        )
    };
    // Whole (a writer that closes its files, 1.5): 0.
    let whole = dir.path().join("whole.qtr");
    let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)))
        .with_close_run(true);
    let mut w = create_trace_file(&whole, &header).unwrap();
    for i in 0..1000u64 {
        w.write_event(&Event::new(10 * i, user::USER0, 1, [i, 0]))
            .unwrap();
    }
    let totals = QueueTotals {
        accepted: 1000,
        dropped: 0,
        overwritten: 0,
        delivered: 1000,
    };
    w.finish_with_close(10_000, totals).unwrap();
    let (code, out, err) = run(&whole);
    assert_eq!(code, Some(0), "{err}");
    let rows = out.lines().nth(1).unwrap().to_string();
    // Cut short (the close run's three records gone): 3, with the events
    // before the cut answered; the same from the cache, note and all.
    let cut = dir.path().join("cut.qtr");
    let bytes = std::fs::read(&whole).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() - 3 * 32]).unwrap();
    for pass in ["converted", "cached"] {
        let (code, out, err) = run(&cut);
        assert_eq!(code, Some(3), "{pass}: {err}");
        assert_eq!(out.lines().nth(1).unwrap(), rows, "{pass}");
        assert!(
            err.contains("cut.qtr: cut short, no close record"),
            "{pass}: {err}"
        );
    }
    // Damaged (the close run's record count off by one): 2, both times.
    let damaged = dir.path().join("damaged.qtr");
    let mut bytes = bytes.clone();
    let at = bytes.len() - 16;
    let n = u64::from_be_bytes(bytes[at..at + 8].try_into().unwrap());
    bytes[at..at + 8].copy_from_slice(&(n + 1).to_be_bytes());
    std::fs::write(&damaged, &bytes).unwrap();
    for pass in ["converted", "cached"] {
        let (code, _, err) = run(&damaged);
        assert_eq!(code, Some(2), "{pass}: {err}");
        assert!(
            err.contains("damaged.qtr: damaged, its close record disagrees"),
            "{pass}: {err}"
        );
    }
}
