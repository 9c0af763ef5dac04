//! Issue 25's rough edges of the reading commands: `stats` counts events, not
//! records, and names them as `dump` does; a ring file given to `dump` or
//! `stats` says to recover it, and so does the header-only trace beside it;
//! `recover DIR`; a snapshot's END line says which counts are the file's;
//! `dump` drops the padding of a partial payload and names bridge spans.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use qtrace::classes::{user, Catalog, ClassSpec};
use qtrace::clock::{Clock, ManualClock};
use qtrace::combine::{Run, NAME_EVENT_ID};
use qtrace::wire::{create_trace_file, TraceHeader};
use qtrace::Event;

use crate::common::default_queues::circular_and_fixed;
use crate::common::manual_tracer::manual_tracer;
use crate::common::temp_dirs;

fn qtrace(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run qtrace")
}

fn s(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A trace with 3 `user0` events, a 42-byte string on `user1` (a run of 4
/// records), the name of the `tracing` class's `callsite0` (a name run of 3
/// records), a span of that callsite (begin, an event of the callsite, end),
/// and a `user1` string whose begin record was lost (its last record padded
/// with zeros). The `tracing` class is the bridge's layout.
fn mixed_trace(d: &Path) -> PathBuf {
    let mut catalog = Catalog::builtin();
    let class = catalog
        .define(
            ClassSpec::new("tracing", "the tracing bridge")
                .event("span_begin", "", &["span", "callsite"])
                .event("span_end", "", &["span", "callsite"])
                .event("callsite0", "", &["a0", "a1"]),
        )
        .unwrap();
    let (begin, end, callsite) = (
        class.event("span_begin").unwrap(),
        class.event("span_end").unwrap(),
        class.event("callsite0").unwrap(),
    );
    let clock = ManualClock::new(0);
    let header = TraceHeader::new(catalog, &Clock::manual(&clock));
    let path = d.join("mixed.qtr");
    let mut w = create_trace_file(&path, &header).unwrap();
    let mut records: Vec<Event> = (0..3)
        .map(|i| Event::new(100 + i, user::USER0, 1, [i, 0]))
        .collect();
    let string = Run::new(200, user::USER1, 1, 0, &[b'x'; 42]);
    records.extend((0..string.len()).map(|i| string.record(i)));
    let name = Run::name(
        300,
        1,
        NAME_EVENT_ID,
        u64::from(callsite.0),
        b"INFO app::db query",
    );
    records.extend((0..name.len()).map(|i| name.record(i)));
    records.push(Event::new(400, begin, 1, [77, u64::from(callsite.0)]));
    records.push(Event::new(450, callsite, 1, [5, 0]));
    records.push(Event::new(500, end, 1, [77, u64::from(callsite.0)]));
    let cut = Run::new(600, user::USER1, 2, 0, b"query done");
    assert_eq!(cut.len(), 2);
    records.push(cut.record(1)); // the begin record lost
    w.write_events(&records).unwrap();
    w.finish().unwrap();
    path
}

#[test]
fn stats_counts_events_not_records_and_shows_run_time_names() {
    // Failed before: "events: 16" (every record of the runs, the name run
    // as 3 `tracer:reserved` events) and `tracing:callsite0`.
    let d = temp_dirs::fresh_dir("rough-edges", "stats-events");
    let p = mixed_trace(&d);
    let o = qtrace(&["stats", &s(&p)]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    assert!(out.contains("  events: 8\n"), "{out}");
    assert!(
        out.contains("  names: 1 name records (sources, tasks, events named; not events)\n"),
        "{out}"
    );
    let per_event: Vec<&str> = out
        .split("  per event:\n")
        .nth(1)
        .unwrap()
        .lines()
        .map(str::trim)
        .collect();
    let want = [
        ("user:user0", 3),
        ("user:user1", 2),
        ("tracing:span_begin", 1),
        ("tracing:span_end", 1),
        ("tracing:INFO app::db query", 1),
    ];
    assert_eq!(per_event.len(), want.len(), "{out}");
    for (line, (name, n)) in per_event.iter().zip(want) {
        assert_eq!(*line, format!("{name:<24} {n:>12}").trim(), "{out}");
    }
    assert!(!out.contains("reserved"), "{out}");
    let o = qtrace(&["stats", "--json", &s(&p)]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["files"][0]["events"], 8);
    assert_eq!(v["files"][0]["name_records"], 1);
    // `dump` shows as many lines of events: 8, and the name line (no END
    // line: the header does not say its writer closes its files).
    let o = qtrace(&["dump", &s(&p)]);
    let out = text(&o.stdout);
    assert_eq!(out.lines().count(), 8 + 1, "{out}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn the_reader_names_events_as_its_name_records_say() {
    // Failed before: `TraceReader::event_name` gave the table's `callsite0`.
    let d = temp_dirs::fresh_dir("rough-edges", "reader-names");
    let p = mixed_trace(&d);
    let mut r = qtrace::reader::TraceReader::open(&p).unwrap();
    let callsite = r.catalog().event_by_name("tracing:callsite0").unwrap().id;
    assert_eq!(r.event_name(callsite), Some("callsite0"));
    for e in r.by_ref() {
        e.unwrap();
    }
    assert_eq!(r.event_name(callsite), Some("INFO app::db query"));
    assert_eq!(r.event_name(user::USER0), Some("user0"));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn dump_drops_the_padding_of_a_partial_payload_and_names_spans() {
    // Failed before: `text="query done\0\0\0\0\0\0"` and `span_begin
    // span=77 callsite=…` without the span's name.
    let d = temp_dirs::fresh_dir("rough-edges", "dump-spans");
    let p = mixed_trace(&d);
    let o = qtrace(&["dump", &s(&p)]);
    let out = text(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    let callsite = Catalog::builtin().event_count(); // the first id after the built-in ones
    let find = |what: &str| {
        *lines
            .iter()
            .find(|l| l.contains(what))
            .unwrap_or_else(|| panic!("no {what}: {out}"))
    };
    assert!(
        find("span_begin").ends_with(&format!(
            "span_begin     span=77 callsite={} name=\"INFO app::db query\"",
            callsite + 2
        )),
        "{out}"
    );
    assert!(
        find("span_end").ends_with("name=\"INFO app::db query\""),
        "{out}"
    );
    assert!(
        find("query done").ends_with(
            "user1          text=\"query done\" [PARTIAL: 1 records, the begin record lost]"
        ),
        "{out}"
    );
    let o = qtrace(&["dump", "--json", &s(&p)]);
    let out = text(&o.stdout);
    let span: serde_json::Value = out
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["event"] == "span_begin")
        .unwrap();
    assert_eq!(span["span_name"], "INFO app::db query");
    assert!(out.contains("\"text\":\"query done\""), "{out}");
    std::fs::remove_dir_all(&d).unwrap();
}

/// The ring files of a tracer that never shut down, copied (as from a dead
/// process) into `d/dead` with the trace files beside them; returns that
/// directory.
fn crashed(d: &Path) -> PathBuf {
    let clock = ManualClock::new(100);
    let t = manual_tracer(d, &clock);
    circular_and_fixed(&t, 4, 3);
    t.activate().unwrap();
    for i in 0..10 {
        clock.advance(10);
        t.log_event(user::USER0, [i, 0]);
        t.log_event(user::USER1, [i, 0]);
    }
    std::mem::forget(t); // no shutdown: as after SIGKILL
    let dead = d.join("dead");
    std::fs::create_dir(&dead).unwrap();
    for entry in std::fs::read_dir(d).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::copy(&path, dead.join(path.file_name().unwrap())).unwrap();
        }
    }
    dead
}

#[test]
fn a_ring_file_and_the_trace_beside_it_say_to_recover_and_recover_finds_them() {
    // Failed before: "the magic number at byte 0 is wrong", a bare "CUT
    // SHORT … after 0 records", and `recover DIR` refused the directory.
    let d = temp_dirs::fresh_dir("rough-edges", "ring");
    let dead = crashed(&d);
    let ring = dead.join("queue0-circular.ring");
    for cmd in ["dump", "stats"] {
        let o = qtrace(&[cmd, &s(&ring)]);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{cmd}: {err}");
        assert!(
            err.contains(&format!(
                "it is a ring file (what a fixed or circular queue keeps while its process runs), not a trace: run `qtrace recover {} --out DIR`",
                ring.display()
            )),
            "{cmd}: {err}"
        );
        assert!(!err.contains("magic"), "{cmd}: {err}");
    }
    let beside = dead.join("queue0-circular.qtr");
    let names: Vec<_> = std::fs::read_dir(&dead)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(beside.is_file(), "{names:?}");
    let hint = format!(
        "its queue's ring file {} is beside it, with the events of a process that did not shut down: run `qtrace recover {} --out DIR`",
        ring.display(),
        ring.display()
    );
    for cmd in ["dump", "stats"] {
        let o = qtrace(&[cmd, &s(&beside)]);
        let (out, err) = (text(&o.stdout), text(&o.stderr));
        assert_eq!(o.status.code(), Some(3), "{cmd}: {out}{err}");
        assert!(err.contains("CUT SHORT"), "{cmd}: {err}");
        assert!(err.contains(&hint), "{cmd}: {err}");
    }
    let o = qtrace(&["stats", &s(&beside)]);
    assert!(text(&o.stdout).contains(&format!("  {hint}\n")));
    // `recover DIR` recovers every ring file in it.
    let out_dir = d.join("recovered");
    let o = qtrace(&["recover", &s(&dead), "--out", &s(&out_dir)]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines[0].contains("queue0-circular.ring -> "), "{out}");
    assert!(lines[1].contains("queue1-fixed.ring -> "), "{out}");
    assert!(out_dir.join("queue0-circular.qtr").is_file());
    assert!(out_dir.join("queue1-fixed.qtr").is_file());
    // A directory without ring files is an error that says so.
    let o = qtrace(&["recover", &s(&out_dir), "--out", &s(&d.join("x"))]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("no ring files (*.ring) in this directory"),
        "{}",
        text(&o.stderr)
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_snapshots_end_line_tells_the_files_records_from_the_queues_counters() {
    // Failed before: "[END: complete; queue accepted 10, …]" beside a file
    // of 4 records, which read as a statement about the file.
    let d = temp_dirs::fresh_dir("rough-edges", "snapshot-end");
    let clock = ManualClock::new(0);
    let t = manual_tracer(&d, &clock);
    let (c, _) = circular_and_fixed(&t, 4, 3);
    t.activate().unwrap();
    for i in 0..10 {
        clock.advance(10);
        t.log_event(user::USER0, [i, 0]);
    }
    let snap = d.join("snap.qtr");
    t.queue(c)
        .unwrap()
        .as_circular()
        .unwrap()
        .snapshot(&snap)
        .unwrap();
    t.shutdown().unwrap();
    let o = qtrace(&["dump", &s(&snap)]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    let end = out.lines().last().unwrap();
    assert_eq!(out.matches("user0").count(), 4, "{out}");
    assert!(
        end.ends_with(
            "[END: complete; the file holds 5 records; its queue had then accepted 10, dropped 0, overwritten 6, delivered 0]"
        ),
        "{out}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn dump_tells_a_torn_slot_from_a_record_that_failed_the_checks_and_a_damaged_end() {
    // FORMAT.md 1.4 and 6.4: a hoops record of 1 flagged 0x0001 stands for a
    // slot being written at the crash, one flagged 0x0003 for a record left
    // out because its words failed a check, one of 0 flagged 0x0002 ends a
    // damaged recovery. `dump` said "being written at the crash" for the
    // first two alike.
    use qtrace::classes::tracer;
    use qtrace::storage::{DAMAGED, UNREADABLE};
    let d = temp_dirs::fresh_dir("rough-edges", "damage-marks");
    let clock = ManualClock::new(0);
    let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&clock));
    let path = d.join("marks.qtr");
    let mut w = create_trace_file(&path, &header).unwrap();
    let mark = |time, lost, flags| {
        let mut e = Event::new(time, tracer::HOOPS, u32::MAX, [lost, 0]);
        e.flags = flags;
        e
    };
    w.write_events(&[
        mark(10, 1, UNREADABLE),
        mark(20, 1, UNREADABLE | DAMAGED),
        mark(30, 0, DAMAGED),
    ])
    .unwrap();
    w.finish().unwrap();
    let o = qtrace(&["dump", &s(&path)]);
    let out = text(&o.stdout);
    let lost: Vec<&str> = out.lines().filter(|l| l.contains("[LOST")).collect();
    assert_eq!(lost.len(), 3, "{out}");
    assert!(
        lost[0].ends_with("[LOST 1 EVENTS] (queue 0) unreadable: being written at the crash"),
        "{out}"
    );
    assert!(
        lost[1].ends_with(
            "[LOST 1 EVENTS] (queue 0) damaged: a record that failed the ring file's checks, left out"
        ),
        "{out}"
    );
    assert!(
        lost[2].ends_with("[LOST 0 EVENTS] (queue 0) damaged: the ring file failed its checks; the counts before this are what its sound fields show"),
        "{out}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}
