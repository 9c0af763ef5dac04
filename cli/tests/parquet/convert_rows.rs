//! `qtrace convert --to parquet` against `qtrace dump --json`: every line
//! dump shows for a file is one row of events, losses or payloads of that
//! run, in `seq` order, with the same values; the streams row counts them.
//! On the main job's trace, a received file, a recovered ring and traces
//! with strings, names and a cut run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Map, Value};

use crate::common::parquet_rows::{metadata, parquet_files, table_rows};

/// A JSON object (a dump line, a row).
type Obj = Map<String, Value>;
/// Dump's lines per file label.
type Lines = BTreeMap<String, Vec<Obj>>;

fn qtrace() -> Command {
    Command::new(env!("CARGO_BIN_EXE_qtrace"))
}

/// `qtrace convert --to parquet FILES --out OUT`: its exit code and stderr.
pub fn convert(files: &[PathBuf], out: &Path) -> (Option<i32>, String) {
    let o = qtrace()
        .args(["convert", "--to", "parquet"])
        .args(files)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    (o.status.code(), String::from_utf8(o.stderr).unwrap())
}

/// `qtrace dump --json FILES`: the event lines per file label, and the end
/// lines.
fn dump(files: &[PathBuf]) -> (Lines, Vec<Obj>) {
    let o = qtrace()
        .arg("dump")
        .arg("--json")
        .args(files)
        .output()
        .unwrap();
    let mut lines = Lines::new();
    let mut ends = Vec::new();
    for l in String::from_utf8(o.stdout).unwrap().lines() {
        let mut v: Map<String, Value> = serde_json::from_str(l).unwrap();
        v.insert("_raw".into(), json!(l));
        if v.contains_key("end") {
            ends.push(v);
            continue;
        }
        let file = v["file"].as_str().unwrap().to_string();
        lines.entry(file).or_default().push(v);
    }
    (lines, ends)
}

/// Whether dump's argument values (declared ones, and undeclared non-zero
/// ones, in order) are what the row's `arg0`, `arg1` show.
fn args_match(shown: &[u64], a0: u64, a1: u64) -> bool {
    match shown {
        [x, y] => (*x, *y) == (a0, a1),
        [x] => (*x == a0 && a1 == 0) || (*x == a1 && a0 == 0),
        [] => a0 == 0 && a1 == 0,
        _ => false,
    }
}

/// The values of a dump line's `"args":{…}` in the order shown (a JSON
/// map parsed here would sort its keys).
fn args_in_order(raw: &str) -> Vec<u64> {
    let start = raw.find("\"args\":{").unwrap() + "\"args\":{".len();
    let body = &raw[start..start + raw[start..].find('}').unwrap()];
    body.split(',')
        .filter(|kv| !kv.is_empty())
        .map(|kv| kv.rsplit(':').next().unwrap().parse().unwrap())
        .collect()
}

/// What a dump line says, in the tables' terms.
fn expected(line: &Map<String, Value>) -> Value {
    let time = &line["time_ns"];
    if let Some(lost) = line.get("lost") {
        let flags = line["flags"].as_u64().unwrap();
        let kind = if flags & 1 != 0 {
            "unreadable"
        } else if flags & 2 != 0 {
            "damaged"
        } else {
            "hoops"
        };
        let q = line["queue"].as_u64().unwrap();
        return json!({"table": "losses", "time_ns": time, "count": lost, "kind": kind,
            "queue": if q <= 0xffff { json!(q) } else { Value::Null }, "accounted": null});
    }
    if let Some(u) = line.get("unclosed_stream") {
        return json!({"table": "losses", "time_ns": time, "count": 0, "kind": "unclosed",
            "queue": null, "accounted": u["events"], "sender": u["sender"]});
    }
    if line.contains_key("payload") {
        let mut v = json!({"table": "payloads", "time_ns": time, "source": line["source"],
            "event_id": line["id"], "state": line["payload"],
            "received": line.get("received").cloned().unwrap_or(Value::Null),
            "expected": line.get("expected").cloned().unwrap_or(Value::Null),
            "logged_len": line.get("logged_len").cloned().unwrap_or(Value::Null),
            "text": line.get("text").cloned().unwrap_or(Value::Null),
            "bytes": line.get("bytes").cloned().unwrap_or(Value::Null)});
        let m = v.as_object_mut().unwrap();
        if let Some(what) = line.get("name_of") {
            m.insert("kind".into(), json!("name"));
            m.insert("name_of".into(), what.clone());
            m.insert("subject".into(), line["subject"].clone());
        } else {
            let kind = if line.contains_key("text") {
                "str"
            } else {
                "bytes"
            };
            m.insert("kind".into(), json!(kind));
            m.insert("event".into(), line["event"].clone());
            m.insert(
                "arg0".into(),
                line.get("arg0").cloned().unwrap_or(Value::Null),
            );
        }
        return v;
    }
    json!({"table": "events", "time_ns": time, "source": line["source"], "event_id": line["id"],
        "class": line["class"], "event": line["event"], "flags": line["flags"]})
}

/// A row, projected as [`expected`] projects a dump line.
fn actual(table: &str, row: &Map<String, Value>) -> Value {
    let pick = |keys: &[&str]| -> Value {
        let mut m = Map::new();
        m.insert("table".into(), json!(table));
        for k in keys {
            m.insert(k.to_string(), row[*k].clone());
        }
        Value::Object(m)
    };
    match table {
        "losses" => {
            let mut v = pick(&["time_ns", "count", "kind", "queue", "accounted"]);
            if row["kind"] == "unclosed" {
                v.as_object_mut()
                    .unwrap()
                    .insert("sender".into(), row["sender"].clone());
            }
            v
        }
        "payloads" => {
            let mut v = pick(&[
                "time_ns",
                "source",
                "event_id",
                "state",
                "received",
                "expected",
                "logged_len",
                "text",
                "bytes",
                "kind",
            ]);
            let m = v.as_object_mut().unwrap();
            if row["kind"] == "name" {
                m.insert("name_of".into(), row["name_of"].clone());
                m.insert("subject".into(), row["subject"].clone());
            } else {
                m.insert("event".into(), row["event"].clone());
                m.insert("arg0".into(), row["arg0"].clone());
            }
            v
        }
        _ => pick(&["time_ns", "source", "event_id", "class", "event", "flags"]),
    }
}

/// Converts `files` into a new folder and checks every table against
/// `qtrace dump --json` of the same files; returns the folder (kept in
/// `dir`) and the numbers of (events, losses, payloads) rows.
pub fn convert_and_compare(dir: &Path, files: &[PathBuf]) -> (PathBuf, [usize; 3]) {
    let out = dir.join("tables");
    let (code, err) = convert(files, &out);
    let (lines, ends) = dump(files);
    let want_code = if ends.iter().any(|e| e["complete"] == false) {
        3
    } else {
        0
    };
    assert_eq!(code, Some(want_code), "{err}");
    // Every file carries the schema version and its table.
    for table in ["events", "losses", "payloads", "streams"] {
        let parts = parquet_files(&out.join(table));
        assert_eq!(parts.len(), 1, "{table}: {parts:?}");
        assert_eq!(parts[0].file_name().unwrap(), "part-0.parquet");
        let kv = metadata(&parts[0]);
        assert!(
            kv.contains(&("qtrace.schema_version".into(), Some("1".into()))),
            "{kv:?}"
        );
        assert!(
            kv.contains(&("qtrace.table".into(), Some(table.into()))),
            "{kv:?}"
        );
    }
    // The rows of each run, in seq order, across the three tables.
    let mut runs: BTreeMap<String, Vec<(u64, Value, Obj)>> = BTreeMap::new();
    let mut counts = [0; 3];
    for (i, table) in ["events", "losses", "payloads"].into_iter().enumerate() {
        for row in table_rows(&out, table) {
            counts[i] += 1;
            assert_eq!(row["aligned_ns"], row["time_ns"], "files: aligned = time");
            if row.get("kind") != Some(&json!("unclosed")) {
                assert_eq!(row["sender"], Value::Null, "files have no sender");
            }
            let run = row["run"].as_str().unwrap().to_string();
            let seq = row["seq"].as_u64().unwrap();
            runs.entry(run)
                .or_default()
                .push((seq, actual(table, &row), row));
        }
    }
    assert_eq!(
        runs.keys().collect::<Vec<_>>(),
        lines
            .keys()
            .filter(|k| !lines[*k].is_empty())
            .collect::<Vec<_>>()
    );
    for (run, rows) in &mut runs {
        rows.sort_by_key(|r| r.0);
        let shown = &lines[run];
        assert_eq!(rows.len(), shown.len(), "{run}: rows vs dump lines");
        for (i, ((seq, got, row), line)) in rows.iter().zip(shown).enumerate() {
            assert_eq!(*seq, i as u64, "{run}: seq numbers the rows from 0");
            assert_eq!(*got, expected(line), "{run}, line {i}: {line:?}");
            if got["table"] == "events" {
                let vals = args_in_order(line["_raw"].as_str().unwrap());
                let (a0, a1) = (row["arg0"].as_u64().unwrap(), row["arg1"].as_u64().unwrap());
                assert!(
                    args_match(&vals, a0, a1),
                    "{run}, line {i}: {line:?} vs {row:?}"
                );
            }
        }
    }
    // One streams row per file: its counts are its rows'.
    let streams = table_rows(&out, "streams");
    assert_eq!(streams.len(), files.len());
    for s in &streams {
        let run = s["run"].as_str().unwrap();
        let shown = lines.get(run).map_or(&[][..], Vec::as_slice);
        let events = shown
            .iter()
            .filter(|l| expected(l)["table"] == "events")
            .count();
        let lost: u64 = shown
            .iter()
            .filter_map(|l| l.get("lost").and_then(Value::as_u64))
            .sum();
        assert_eq!(s["events"], json!(events), "{run}");
        assert_eq!(s["lost"], json!(lost), "{run}");
        let end = ends.iter().find(|e| e["file"] == run);
        let complete = end.is_some_and(|e| e["complete"] == true);
        assert_eq!(s["complete"], json!(complete), "{run}: {end:?}");
        if let Some(e) = end {
            assert_eq!(s["verdict"], e["end"], "{run}");
            for k in ["accepted", "dropped", "overwritten", "delivered"] {
                assert_eq!(s[k], e.get(k).cloned().unwrap_or(Value::Null), "{run} {k}");
            }
        }
    }
    (out, counts)
}

/// The main job's example (`cargo test` builds it next to the binaries).
fn standard_init() -> PathBuf {
    let bin = Path::new(env!("CARGO_BIN_EXE_qtrace"));
    let path = bin
        .parent()
        .unwrap()
        .join("examples")
        .join(format!("standard_init{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.exists(),
        "{} is missing: run `cargo test --workspace` (it builds the examples) or `cargo build --example standard_init` first",
        path.display()
    );
    path
}

/// The main job's trace files, in `dir`.
pub fn main_job_trace(dir: &Path) -> Vec<PathBuf> {
    let out = Command::new(standard_init()).arg(dir).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "qtr"))
        .collect();
    files.sort();
    files
}

#[test]
fn the_main_jobs_trace_row_by_row() {
    let dir = tempfile::tempdir().unwrap();
    let files = main_job_trace(&dir.path().join("trace"));
    assert!(files.len() >= 2, "{files:?}");
    let (_, [events, losses, _]) = convert_and_compare(dir.path(), &files);
    assert!(events > 1000, "{events}");
    // Whether the circular queue overwrote depends on how many events the
    // time-driven job logged (fewer on a loaded host): the loss rows are
    // compared with dump's above either way, and recovered rings with
    // known overwrites are checked by the recovery test below.
    let _ = losses;
}

#[test]
fn strings_names_and_a_cut_run_row_by_row() {
    use crate::common::combine_runs::{file_cut_inside_a_run, two_queues_with_names};
    let dir = tempfile::tempdir().unwrap();
    let d1 = dir.path().join("names");
    std::fs::create_dir(&d1).unwrap();
    let (tracer, q1) = two_queues_with_names(&d1);
    tracer.log_event_str(qtrace::classes::user::USER1, 9, "hello, tables");
    tracer.log_event_bytes(qtrace::classes::user::USER1, 10, &[0xff, 0x00, 0xfe]);
    let report = tracer.shutdown().unwrap();
    let mut files: Vec<PathBuf> = report
        .queues
        .iter()
        .flat_map(|q| q.status.files.clone())
        .collect();
    let _ = q1;
    let d2 = dir.path().join("cut");
    std::fs::create_dir(&d2).unwrap();
    // Another name than the first tracer's queue0-fixed.qtr: a run is
    // named by its file's name.
    let cut = file_cut_inside_a_run(&d2);
    let renamed = d2.join("cut-fixed.qtr");
    std::fs::rename(&cut, &renamed).unwrap();
    files.push(renamed);
    let (out, [_, _, payloads]) = convert_and_compare(dir.path(), &files);
    let rows = table_rows(&out, "payloads");
    assert!(payloads >= 5, "{rows:?}");
    let texts: Vec<&Value> = rows.iter().map(|r| &r["text"]).collect();
    assert!(texts.contains(&&json!("hello, tables")), "{texts:?}");
    assert!(texts.contains(&&json!("worker-7")), "{texts:?}");
    assert!(rows
        .iter()
        .any(|r| r["bytes"] == json!("ff00fe") && r["kind"] == "bytes"));
    assert!(rows
        .iter()
        .any(|r| r["state"] == "partial" && r["complete"] == false));
    // The events rows of the named source carry no name of their own, but
    // the run-time event names are the ones dump shows (checked above).
}

#[test]
fn a_recovered_ring_row_by_row() {
    use crate::common::default_queues::circular_and_fixed;
    use crate::common::manual_tracer::manual_tracer;
    use qtrace::classes::user;
    use qtrace::clock::ManualClock;
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("live");
    std::fs::create_dir(&live).unwrap();
    let clock = ManualClock::new(100);
    let t = manual_tracer(&live, &clock);
    circular_and_fixed(&t, 4, 3);
    t.activate().unwrap();
    for i in 0..10 {
        clock.advance(10);
        t.log_event(user::USER0, [i, 0]);
        t.log_event(user::USER1, [i, 0]);
    }
    std::mem::forget(t); // as after SIGKILL
    let dead = dir.path().join("dead");
    std::fs::create_dir(&dead).unwrap();
    for name in ["queue0-circular.ring", "queue1-fixed.ring"] {
        std::fs::copy(live.join(name), dead.join(name)).unwrap();
    }
    let recovered = dir.path().join("recovered");
    let o = qtrace()
        .arg("recover")
        .arg(dead.join("queue0-circular.ring"))
        .arg(dead.join("queue1-fixed.ring"))
        .arg("--out")
        .arg(&recovered)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let files = vec![
        recovered.join("queue0-circular.qtr"),
        recovered.join("queue1-fixed.qtr"),
    ];
    let (out, [events, losses, _]) = convert_and_compare(dir.path(), &files);
    assert_eq!((events, losses), (4 + 3, 2));
    let lost: u64 = table_rows(&out, "losses")
        .iter()
        .map(|r| r["count"].as_u64().unwrap())
        .sum();
    assert_eq!(
        lost,
        6 + 7,
        "6 overwritten by the circular queue, 7 dropped by the fixed one"
    );
}

#[test]
fn a_received_file_row_by_row() {
    use crate::common::recv::{recv_listening, send_user3};
    let dir = tempfile::tempdir().unwrap();
    let received = dir.path().join("received.qtr");
    let (listen, child) = recv_listening(&received, &["--count", "500", "--duration", "20"]);
    let report = send_user3(listen, 500);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sent = report.queues[0].counters.accepted;
    let (tables, [events, _, _]) = convert_and_compare(dir.path(), &[received]);
    let lost: u64 = table_rows(&tables, "losses")
        .iter()
        .map(|r| r["count"].as_u64().unwrap())
        .sum();
    assert_eq!(
        events as u64 + lost,
        sent,
        "every event sent is a row or counted lost"
    );
    let users = table_rows(&tables, "events")
        .into_iter()
        .filter(|r| r["event"] == "user3")
        .count();
    assert_eq!(users, events);
}

#[test]
fn an_event_named_after_its_first_rows_is_named_from_the_name_record_on() {
    use crate::common::combine_runs::fixed_tracer;
    use qtrace::classes::user;
    use qtrace::queues::{Online, OnlineParams};
    use qtrace::{Config, Tracer};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("late");
    std::fs::create_dir(&d).unwrap();
    // An online queue writes the name record where it was logged, after
    // the first two events (a fixed queue's file starts with the names).
    let tracer = Tracer::with_config(Config::default().with_output_dir(&d));
    let q = tracer
        .create_queue::<Online>(OnlineParams::default())
        .unwrap();
    tracer.assign_event(user::USER1, q).unwrap();
    tracer.activate().unwrap();
    tracer.log_event(user::USER1, [1, 0]);
    tracer.log_event(user::USER1, [2, 0]);
    tracer.name_event(user::USER1, "named late").unwrap();
    tracer.log_event(user::USER1, [3, 0]);
    let report = tracer.shutdown().unwrap();
    let mut files: Vec<PathBuf> = report.queues[0].status.files.clone();
    // A second file, without names.
    let d2 = dir.path().join("plain");
    std::fs::create_dir(&d2).unwrap();
    let tracer = fixed_tracer(&d2, 64);
    tracer.log_event(user::USER1, [4, 0]);
    let report = tracer.shutdown().unwrap();
    let other = d2.join("plain-fixed.qtr");
    std::fs::rename(&report.queues[0].status.files[0], &other).unwrap();
    files.push(other);
    let (out, [events, _, _]) = convert_and_compare(dir.path(), &files);
    assert_eq!(events, 4);
    // As dump shows them (compared above): the name from its record on.
    let mut named: Vec<(u64, Value)> = table_rows(&out, "events")
        .iter()
        .map(|r| (r["arg0"].as_u64().unwrap(), r["event"].clone()))
        .collect();
    named.sort_by_key(|r| r.0);
    assert_eq!(
        named,
        vec![
            (1, json!("user1")),
            (2, json!("user1")),
            (3, json!("named late")),
            (4, json!("user1")),
        ]
    );
}
