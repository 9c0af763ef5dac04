//! Every argument that `qtrace dump --json` shows survives `qtrace convert`,
//! under the same name: in CTF (read back by babeltrace2), Chrome JSON
//! (serde_json) and Perfetto (decoded with Perfetto's schema by
//! `scripts/check-perfetto.py`). babeltrace2 and the PyPI `perfetto` package
//! are needed for two of the three checks; each is skipped with a message
//! where its tool is missing, unless `QTRACE_REQUIRE_BABELTRACE2` /
//! `QTRACE_REQUIRE_PERFETTO` is set (CI).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use qtrace::classes::{lowlevel, semaphore, system, tracer, user, Catalog};
use qtrace::clock::{Clock, ManualClock};
use qtrace::wire::{create_trace_file, TraceHeader};
use qtrace::{Event, EventId};

use crate::common::babeltrace2;
use crate::common::success;
use babeltrace2::babeltrace2_text;
use success::assert_success;

/// (event name as `class:event`, arguments by name) per event, in time order.
type Shown = Vec<(String, BTreeMap<String, u64>)>;

/// Events whose undeclared slots are non-zero, and ordinary ones.
fn events() -> Vec<Event> {
    vec![
        Event::new(100, system::SCHEDULE, 0, [0, 2]), // the issue's `task=0 arg1=2`
        Event::new(200, system::SCHEDULE, 0, [5, 0]),
        Event::new(300, system::ACTIVATE, 1, [4, 9]),
        Event::new(400, lowlevel::INTERRUPT, 1, [7, 3]),
        Event::new(500, user::USER2, 0, [1 << 40, 0]),
        Event::new(600, semaphore::WAIT, 1, [4, 1]),
        Event::new(700, tracer::RESERVED, 0, [0, 6]),
        Event::new(800, tracer::RESERVED, 0, [8, 6]),
        Event::new(900, semaphore::SIGNAL, 1, [4, 1]),
    ]
}

fn write_trace(dir: &Path) -> PathBuf {
    let path = dir.join("t.qtr");
    let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)))
        .with_clock("manual", 1_000_000_000, 1_700_000_000_000_000_000)
        .unwrap();
    let mut w = create_trace_file(&path, &header).unwrap();
    w.write_events(&events()).unwrap();
    w.finish().unwrap();
    path
}

fn qtrace(args: &[&std::ffi::OsStr]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(args)
        .output()
        .unwrap();
    assert_success(&out);
    out
}

fn dump_json(trace: &Path) -> Shown {
    let out = qtrace(&["dump".as_ref(), "--json".as_ref(), trace.as_os_str()]);
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let name = format!(
                "{}:{}",
                v["class"].as_str().unwrap(),
                v["event"].as_str().unwrap()
            );
            let args = v["args"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
                .collect();
            (name, args)
        })
        .collect()
}

fn convert(trace: &Path, to: &str, out: &Path) {
    qtrace(&[
        "convert".as_ref(),
        "--to".as_ref(),
        to.as_ref(),
        trace.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
}

fn args_of(v: &serde_json::Value) -> BTreeMap<String, u64> {
    v.as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
        .collect()
}

#[test]
fn dump_shows_the_undeclared_second_argument() {
    let dir = tempfile::tempdir().unwrap();
    let shown = dump_json(&write_trace(dir.path()));
    let first = &shown[0];
    assert_eq!(first.0, "system:schedule");
    assert_eq!(
        first.1,
        BTreeMap::from([("task".to_string(), 0), ("arg1".to_string(), 2)])
    );
    assert_eq!(shown.len(), events().len());
}

#[test]
fn chrome_json_carries_every_argument() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_trace(dir.path());
    let json = dir.path().join("t.json");
    convert(&trace, "chrome", &json);
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let got: Shown = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "i")
        .map(|e| {
            (
                format!(
                    "{}:{}",
                    e["cat"].as_str().unwrap(),
                    e["name"].as_str().unwrap()
                ),
                args_of(&e["args"]),
            )
        })
        .collect();
    assert_eq!(got, dump_json(&trace));
}

#[test]
fn perfetto_carries_every_argument() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_trace(dir.path());
    let pf = dir.path().join("t.pftrace");
    convert(&trace, "perfetto", &pf);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/check-perfetto.py");
    let out = match Command::new("python3")
        .arg(script)
        .arg(&pf)
        .arg("--events")
        .output()
    {
        Ok(o) if o.status.code() != Some(3) => o,
        _ => {
            let msg =
                "python3 with the PyPI package perfetto is needed (scripts/test.sh installs it)";
            assert!(
                std::env::var_os("QTRACE_REQUIRE_PERFETTO").is_none(),
                "{msg}"
            );
            eprintln!("SKIPPED: {msg}");
            return;
        }
    };
    assert_success(&out);
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut got: Shown = summary["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                format!("{}:{}", e[2].as_str().unwrap(), e[3].as_str().unwrap()),
                args_of(&e[4]),
            )
        })
        .collect();
    // The same events with the same arguments; the file holds each
    // sequence's (source's) packets together, so they come in another
    // order than `dump`'s.
    let mut want = dump_json(&trace);
    got.sort();
    want.sort();
    assert_eq!(got, want);
}

#[test]
fn ctf_carries_every_argument_for_babeltrace2() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_trace(dir.path());
    let ctf = dir.path().join("ctf");
    convert(&trace, "ctf", &ctf);
    let Some(out) = babeltrace2_text(&ctf) else {
        return;
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !stderr.contains("ERROR"),
        "{stderr}"
    );
    // "[time] (+delta) class:event: { source = 0 }, { task = 0, arg1 = 2 }"
    let got: Shown = stdout
        .lines()
        .map(|l| {
            let rest = l.split(") ").nth(1).unwrap();
            let (name, fields) = rest.split_once(": ").unwrap();
            let groups: Vec<&str> = fields
                .split("}, {")
                .map(|g| g.trim_matches(|c| c == '{' || c == '}' || c == ' '))
                .collect();
            // The first group is the packet context; the payload follows.
            let args = groups
                .get(1)
                .map(|g| {
                    g.split(", ")
                        .map(|kv| {
                            let (k, v) = kv.split_once(" = ").unwrap();
                            (k.to_string(), v.parse().unwrap())
                        })
                        .collect()
                })
                .unwrap_or_default();
            (name.to_string(), args)
        })
        .collect();
    assert_eq!(got, dump_json(&trace), "{stdout}");
}

#[test]
fn unknown_event_numbers_keep_their_arguments() {
    // dump names an unknown event's non-zero slots arg0/arg1; every converter
    // keeps both raw arguments and the number (checked in tests/export/export.rs and
    // tests/export/perfetto_export.rs); here only that dump and the library agree.
    let catalog = Catalog::builtin();
    let e = Event::new(0, EventId(0x0777), 0, [0, 5]);
    let shown: Vec<(&str, u64)> = qtrace::export::args::event_args(&catalog, &e).collect();
    assert_eq!(shown, [("arg1", 5)]);
}
