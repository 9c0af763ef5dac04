//! The tables read by engines that are not qtrace, unchanged: DuckDB, chdb
//! (ClickHouse's engine) and pyarrow count the same rows and losses as the
//! `parquet` crate's reader, and DuckDB and chdb compute the same response
//! times per task as `qtrace analyze` (response_times.sql) on the main
//! job's trace; a store is read with its Hive partitions; the README's
//! Python snippet runs. The Python packages come from the virtual
//! environment scripts/test.sh makes (`target/pyenv`, or `QTRACE_PYTHON`):
//! without it these tests say so and pass without checking, unless
//! `QTRACE_REQUIRE_ENGINES` is set (CI), when they fail.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::parquet_rows::table_rows;
use crate::common::recv::send_user3;
use crate::convert_rows::{convert, main_job_trace};

/// The Python with duckdb, chdb and pyarrow, if installed.
fn python() -> Option<PathBuf> {
    let python = std::env::var_os("QTRACE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/pyenv/bin/python")
        });
    let ok = Command::new(&python)
        .args(["-c", "import duckdb, chdb, pyarrow"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        let msg = format!(
            "{} lacks duckdb, chdb or pyarrow (scripts/test.sh installs them into target/pyenv)",
            python.display()
        );
        // CI sets it: there the engines must be there.
        assert!(
            std::env::var_os("QTRACE_REQUIRE_ENGINES").is_none(),
            "{msg} (QTRACE_REQUIRE_ENGINES is set)"
        );
        eprintln!("skipped: {msg}");
    }
    ok.then_some(python)
}

fn engines(python: &Path, dir: &Path, hive: bool) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/parquet/engines.py");
    let mut cmd = Command::new(python);
    cmd.arg(script).arg(dir).arg(if hive { "1" } else { "0" });
    if hive {
        cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/fleet.md"));
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Rows per table and the losses' sum, read by the `parquet` crate.
fn our_counts(dir: &Path) -> (Value, u64) {
    let mut rows = serde_json::Map::new();
    for t in ["events", "losses", "payloads", "streams"] {
        rows.insert(t.into(), table_rows(dir, t).len().into());
    }
    let lost = table_rows(dir, "losses")
        .iter()
        .map(|r| r["count"].as_u64().unwrap())
        .sum();
    (Value::Object(rows), lost)
}

#[test]
fn duckdb_and_chdb_count_and_compute_response_times_as_analyze_does() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let files = main_job_trace(&dir.path().join("trace"));
    let tables = dir.path().join("tables");
    let (code, err) = convert(&files, &tables);
    assert_eq!(code, Some(0), "{err}");
    let got = engines(&python, &tables, false);
    let (rows, lost) = our_counts(&tables);
    for engine in ["duckdb", "chdb", "pyarrow"] {
        assert_eq!(got[engine]["rows"], rows, "{engine}");
    }
    assert_eq!(got["duckdb"]["lost"], lost);
    assert_eq!(got["chdb"]["lost"], lost);
    assert!(lost > 0, "the main job's circular queue overwrites");

    // qtrace analyze on the same files.
    let o = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .arg("analyze")
        .arg("--json")
        .args(&files)
        .output()
        .unwrap();
    let analyze: Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut want = Vec::new();
    for t in analyze["tasks"].as_array().unwrap() {
        let r = &t["response"];
        let n = r["count"].as_u64().unwrap();
        if n > 0 {
            want.push((
                t["task"].as_u64().unwrap(),
                n,
                r["min_ns"].as_u64().unwrap(),
                r["max_ns"].as_u64().unwrap(),
                r["mean_ns"].as_u64().unwrap(),
            ));
        }
    }
    assert!(want.len() >= 4, "{analyze}");
    for engine in ["duckdb", "chdb"] {
        let rows = got[engine]["response"].as_array().unwrap();
        let have: Vec<(u64, u64, u64, u64, u64)> = rows
            .iter()
            .map(|r| {
                let v: Vec<u64> = r
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_u64().unwrap())
                    .collect();
                // The mean as analyze gives it: whole ns, rounded down.
                let mean = v[4] / v[1];
                (v[0], v[1], v[2], v[3], mean)
            })
            .collect();
        assert_eq!(have, want, "{engine}: task, jobs, min, max, mean");
    }
}

#[test]
fn a_store_reads_with_its_hive_partitions_and_the_readmes_snippet_runs() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let listen = std::net::SocketAddr::from(([127, 0, 0, 1], crate::common::loopback::free_port()));
    let child = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(["recv", "--listen", &listen.to_string(), "--store"])
        .arg(&store)
        .args(["--count", "3000", "--duration", "20", "--roll", "20KiB"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    crate::common::recv::wait_listening(listen);
    send_user3(listen, 3000);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = engines(&python, &store, true);
    let (rows, lost) = our_counts(&store);
    for engine in ["duckdb", "chdb", "pyarrow"] {
        assert_eq!(got[engine]["rows"], rows, "{engine}");
    }
    assert_eq!(got["duckdb"]["lost"], lost);
    assert_eq!(got["duckdb"]["hosts"], serde_json::json!(["127.0.0.1"]));
    let events = rows["events"].as_u64().unwrap();
    assert_eq!(events + lost, 3000);

    // docs/fleet.md's queries, through chdb, on this store.
    let fleet = got["fleet"].as_array().unwrap();
    assert_eq!(fleet.len(), 3, "{fleet:?}");
    let cell = |q: usize, r: usize, c: usize| {
        fleet[q][r][c]
            .as_str()
            .unwrap()
            .trim_matches('"')
            .to_string()
    };
    let hoops: u64 = table_rows(&store, "losses")
        .iter()
        .filter(|r| r["kind"] == "hoops")
        .map(|r| r["count"].as_u64().unwrap())
        .sum();
    assert_eq!(fleet[0].as_array().unwrap().len(), usize::from(hoops > 0));
    if hoops > 0 {
        assert_eq!(
            (cell(0, 0, 0), cell(0, 0, 2)),
            ("127.0.0.1".to_string(), hoops.to_string())
        );
    }
    assert_eq!(fleet[1].as_array().unwrap().len(), 1, "one stream");
    assert_eq!(cell(1, 0, 1), events.to_string());
    assert_eq!(cell(1, 0, 3), "closed");
    let per_second: u64 = fleet[2]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[2].as_str().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(per_second, events);

    // The README's snippet, on this store.
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
            .unwrap();
    let at = readme
        .find("<!-- python:traces-as-data -->")
        .expect("the README's marker");
    let body = &readme[at..];
    let start = body.find("```python\n").unwrap() + "```python\n".len();
    let snippet = &body[start..start + body[start..].find("```").unwrap()];
    let snippet = snippet.replace("\"tables/events\"", &format!("{:?}", store.join("events")));
    let o = Command::new(&python)
        .args(["-c", &snippet])
        .output()
        .unwrap();
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(format!("{events} events").as_str()));
    assert_eq!(
        lines.next(),
        Some(format!("user3 {events}").as_str()),
        "{text}"
    );
}

/// Pages of `arg0` delta-packed and PLAIN in one column chunk, one of
/// them a stored zstd frame (FORMAT.md 7.2): DuckDB, chdb and pyarrow read
/// every value (count, sum, min and max of `arg0`, sum of `arg1` equal to
/// the trace's).
#[test]
fn delta_packed_plain_and_stored_pages_read_alike_in_every_engine() {
    use crate::common::args_trace;
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("args.qtr");
    args_trace::write(&trace);
    let tables = dir.path().join("tables");
    let (code, err) = convert(&[trace], &tables);
    assert_eq!(code, Some(0), "{err}");
    let script = r#"
import sys, glob, duckdb, chdb, pyarrow.parquet as pq
f = glob.glob(sys.argv[1] + "/events/*.parquet")[0]
d = duckdb.connect().execute(f"select count(*), sum(arg0::hugeint), min(arg0), max(arg0), sum(arg1::hugeint) from '{f}'").fetchone()
print(*d)
c = chdb.query(f"select count(), sum(toUInt128(arg0)), min(arg0), max(arg0), sum(toUInt128(arg1)) from file('{f}', Parquet)", "TabSeparated")
print(*str(c).split())
t = pq.read_table(f, columns=["arg0", "arg1"])
a0, a1 = t["arg0"].to_pylist(), t["arg1"].to_pylist()
print(len(a0), sum(a0), min(a0), max(a0), sum(a1))
m = pq.ParquetFile(f).metadata.row_group(0)
col = [m.column(i) for i in range(m.num_columns) if m.column(i).path_in_schema == "arg0"][0]
print(*sorted(col.encodings))
"#;
    let o = Command::new(&python)
        .args(["-c", script])
        .arg(&tables)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    let want = args_trace::figures().join(" ");
    for (engine, line) in ["duckdb", "chdb", "pyarrow"].iter().zip(&lines) {
        assert_eq!(*line, want, "{engine}");
    }
    assert_eq!(
        lines[3], "DELTA_BINARY_PACKED PLAIN RLE",
        "arg0's encodings"
    );
    // The page of 65,536 scattered values is a stored frame (FORMAT.md
    // 7.2): the magic number, descriptor E0, its 524,288 bytes' length.
    let events = std::fs::read_dir(tables.join("events")).unwrap();
    let bytes = std::fs::read(events.map(|e| e.unwrap().path()).next().unwrap()).unwrap();
    let mut frame = vec![0x28, 0xB5, 0x2F, 0xFD, 0xE0];
    frame.extend(524_288u64.to_le_bytes());
    let at = bytes.windows(frame.len()).filter(|w| *w == frame).count();
    assert_eq!(at, 1, "one stored PLAIN page of arg0");
}
