//! `qtrace convert` end to end: trace files written by the wire writer, merged
//! in time order, converted by the binary, read back by serde_json and
//! babeltrace2 (skipped with a message when babeltrace2 is not installed).

use std::path::Path;
use std::process::{Command, Output};

use qtrace::classes::{system, tracer, user, Catalog};
use qtrace::clock::{Clock, ManualClock};
use qtrace::wire::{create_trace_file, TraceHeader};
use qtrace::Event;

use crate::common::babeltrace2;
use crate::common::success;
use babeltrace2::babeltrace2_text;
use success::assert_success;

const ORIGIN: u64 = 1_700_000_000_000_000_000;

fn write_trace(path: &Path, origin: u64, events: &[Event]) {
    let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)))
        .with_clock("manual", 1_000_000_000, origin)
        .unwrap();
    let mut w = create_trace_file(path, &header).unwrap();
    w.write_events(events).unwrap();
    w.finish().unwrap();
}

/// Two queues' files of one run; the second's clock origin is 100 ns later.
fn two_files(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let a = dir.join("queue0-circular.qtr");
    let b = dir.join("queue1-fixed.qtr");
    write_trace(
        &a,
        ORIGIN,
        &[
            Event::new(100, system::SCHEDULE, 0, [1, 0]),
            Event::new(300, tracer::HOOPS, u32::MAX, [9, 0]),
            Event::new(500, system::SCHEDULE, 0, [2, 0]),
        ],
    );
    write_trace(
        &b,
        ORIGIN + 100,
        &[
            Event::new(100, user::USER1, 1, [11, 0]), // 200 on the common base
            Event::new(300, user::USER1, 1, [12, 0]), // 400
        ],
    );
    (a, b)
}

/// Runs `qtrace convert --to TO INPUTS… --out OUT EXTRA…`.
fn convert(to: &str, inputs: &[&Path], out: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(["convert", "--to", to])
        .args(inputs)
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

/// The JSON document in the file `path`.
fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The instant events (`"ph": "i"`) of a Chrome JSON document, in order.
fn instants(doc: &serde_json::Value) -> impl Iterator<Item = &serde_json::Value> {
    doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "i")
}

#[test]
fn chrome_merges_files_in_time_order() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_files(dir.path());
    let json = dir.path().join("out.json");
    let out = convert("chrome", &[&a, &b], &json, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // Not a terminal: no progress bar, only the summary.
    assert_eq!(
        stderr.trim(),
        format!(
            "qtrace convert: 4 events (9 lost, in 1 hoops records) from 3 sources into {}",
            json.display()
        )
    );
    let doc = read_json(&json);
    assert_eq!(doc["otherData"]["clock_origin_unix_ns"], ORIGIN.to_string());
    let instants: Vec<(String, String)> = instants(&doc)
        .map(|e| (e["name"].as_str().unwrap().into(), e["ts"].to_string()))
        .collect();
    let want = [
        ("schedule", "0.1"),
        ("user1", "0.2"),
        ("hoops (9 lost)", "0.3"),
        ("user1", "0.4"),
        ("schedule", "0.5"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect();
    assert_eq!(instants, want);
}

#[test]
fn ctf_is_read_by_babeltrace2() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_files(dir.path());
    let ctf = dir.path().join("ctf");
    let out = convert("ctf", &[&a, &b], &ctf, &[]);
    assert_success(&out);
    // A second conversion into the same directory is refused, not mixed in.
    let again = convert("ctf", &[&a], &ctf, &[]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("not empty"));

    let Some(text) = babeltrace2_text(&ctf) else {
        return;
    };
    let stdout = String::from_utf8_lossy(&text.stdout);
    let stderr = String::from_utf8_lossy(&text.stderr);
    assert!(
        text.status.success() && !stderr.contains("ERROR"),
        "{stderr}"
    );
    let names: Vec<&str> = stdout
        .lines()
        // "[time] (+delta) class:event: { source = 0 }, { … }"
        .map(|l| l.split(") ").nth(1).unwrap().split(": ").next().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "system:schedule",
            "user:user1",
            "user:user1",
            "system:schedule"
        ]
    );
    assert!(
        stdout
            .lines()
            .next()
            .unwrap()
            .starts_with("[22:13:20.000000100]"),
        "{stdout}"
    );
    assert!(stderr.contains("Tracer discarded 9 events"), "{stderr}");
}

#[test]
fn missing_file_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.qtr");
    let out = convert("chrome", &[&missing], &dir.path().join("x.json"), &[]);
    // Status 2 for a bad input, as `qtrace dump` and `qtrace stats`.
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("qtrace convert: ") && stderr.contains("nope.qtr"),
        "{stderr}"
    );
}

#[test]
fn not_a_trace_is_status_2_and_an_unwritable_output_status_1() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "just some text\n").unwrap();
    let out = convert("ctf", &[&text], &dir.path().join("ctf"), &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not a qtrace trace file"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    let (a, _) = two_files(dir.path());
    let out = convert("chrome", &[&a], &dir.path().join("no/such/dir/x.json"), &[]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn a_file_cut_inside_a_record_converts_up_to_the_cut_with_status_3() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_files(dir.path());
    // Cut the last record of the first file in half: cut short (3), as a
    // cut at a record boundary, not damaged (2).
    let bytes = std::fs::read(&a).unwrap();
    std::fs::write(&a, &bytes[..bytes.len() - 16]).unwrap();
    let json = dir.path().join("out.json");
    let out = convert("chrome", &[&a, &b], &json, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("queue0-circular.qtr")
            && stderr.contains("the events before it were converted"),
        "{stderr}"
    );
    assert!(
        stderr.contains("qtrace convert: 3 events (9 lost"),
        "{stderr}"
    );
    // The output is still a complete JSON document.
    let doc = read_json(&json);
    let names: Vec<&str> = instants(&doc)
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["schedule", "user1", "hoops (9 lost)", "user1"]);
}

#[test]
fn split_writes_time_slices_that_each_parse() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_files(dir.path());
    let json = dir.path().join("out.json");
    // Events at 100, 200, 300 (hoops), 400, 500 ns: slices of 250 ns.
    let out = convert("chrome", &[&a, &b], &json, &["--split", "250ns"]);
    assert_success(&out);
    assert!(!json.exists());
    let mut names = Vec::new();
    for part in ["out-0000.json", "out-0001.json", "out-0002.json"] {
        let doc = read_json(&dir.path().join(part));
        let instants: Vec<String> = instants(&doc)
            .map(|e| e["name"].as_str().unwrap().to_string())
            .collect();
        names.push(instants);
    }
    assert_eq!(
        names,
        [
            vec!["schedule", "user1"],
            vec!["hoops (9 lost)", "user1"],
            vec!["schedule"]
        ]
    );
    // CTF cannot be split: a clear error, status 1.
    let ctf = convert("ctf", &[&a], &dir.path().join("ctf"), &["--split", "1s"]);
    assert_eq!(ctf.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&ctf.stderr).contains("--split applies to --to chrome"));
}

#[test]
fn big_chrome_output_warns_and_names_the_ways_out() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.qtr");
    let events: Vec<Event> = (0..1_000_001u64)
        .map(|i| Event::new(i, user::USER0, 0, [i, 0]))
        .collect();
    write_trace(&path, ORIGIN, &events);
    let json = dir.path().join("big.json");
    let out = convert("chrome", &[&path], &json, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("qtrace convert: warning: 1000001 events")
            && stderr.contains("use --to perfetto")
            && stderr.contains("--split TIME"),
        "{stderr}"
    );
    // A small one: no warning.
    let at_limit = dir.path().join("small.qtr");
    write_trace(&at_limit, ORIGIN, &events[..1_000]);
    let out = convert("chrome", &[&at_limit], &json, &[]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning"));
}

#[test]
fn json_summary_counts_the_conversion() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_files(dir.path());
    let out = dir.path().join("trace.json");
    let o = convert("chrome", &[&a, &b], &out, &["--json"]);
    assert_success(&o);
    let stdout = String::from_utf8(o.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    // Sources: CPU 0, thread 1 and the hoops record's (u32::MAX), as the
    // message on stderr says ("from 3 sources").
    let stderr = String::from_utf8(o.stderr).unwrap();
    assert!(stderr.contains("from 3 sources"), "{stderr}");
    assert_eq!(
        v,
        serde_json::json!({
            "to": "chrome", "out": out.display().to_string(), "exit_status": 0,
            "error": null, "files": 2, "events": 4, "lost": 9, "loss_records": 1,
            "sources": 3, "unknown_events": 0, "damaged": 0, "incomplete": 0
        })
    );

    // Nothing converted: the error, and the status of a bad input.
    let missing = dir.path().join("missing.qtr");
    let o = convert(
        "chrome",
        &[&missing],
        &dir.path().join("x.json"),
        &["--json"],
    );
    assert_eq!(o.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["exit_status"], 2);
    assert_eq!(v["events"], 0);
    let error = v["error"].as_str().unwrap();
    assert!(error.contains("missing.qtr"), "{error}");
}
