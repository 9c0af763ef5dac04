//! `qtrace dump` and `qtrace convert` on combine runs (`qtrace::combine`):
//! payloads of every length shown whole, names applied to the lines after
//! them, a run cut by the end of a file shown partial, and names that come
//! after the events they name (a circular queue's snapshot). The library's
//! side of each case is in the library's `tests/export/combine.rs`.

use std::path::PathBuf;

use qtrace::classes::user;
use qtrace::combine::MAX_PAYLOAD;
use qtrace::queues::{Circular, CircularParams};
use qtrace::{Config, Tracer};

use crate::common::combine_runs;
use combine_runs::{file_cut_inside_a_run, fixed_tracer, payload, two_queues_with_names};

use crate::common::temp_dirs;

use crate::common::success;
use success::assert_success;

fn dir(name: &str) -> PathBuf {
    temp_dirs::fresh_dir("combine-cli", name)
}

#[test]
fn dump_shows_every_length_whole() {
    let d = dir("fixed");
    let tracer = fixed_tracer(&d, 1 << 20);
    for len in 0..=MAX_PAYLOAD {
        tracer.log_event_bytes(user::USER1, len as u64, &payload(len));
    }
    let report = tracer.shutdown().unwrap();
    let file = &report.queues[0].status.files[0];
    // `qtrace dump` shows each payload whole, in order.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .arg("dump")
        .arg(file)
        .output()
        .unwrap();
    assert_success(&out);
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), MAX_PAYLOAD + 2); // and the END line
    for (len, line) in lines.iter().take(MAX_PAYLOAD + 1).enumerate() {
        let want = format!(
            "user       user1          {}text={:?}",
            if len == 0 {
                String::new()
            } else {
                format!("value={len} ")
            },
            String::from_utf8(payload(len)).unwrap()
        );
        assert!(line.ends_with(&want), "{line:?} does not end with {want:?}");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn dump_shows_names_on_the_lines_after_them() {
    let d = dir("names");
    let (tracer, _) = two_queues_with_names(&d);
    let report = tracer.shutdown().unwrap();
    for (i, q) in report.queues.iter().enumerate() {
        // Each file: the names prologue (every name the tracer recorded,
        // FORMAT.md 1.8), the two name records as recorded, then its own
        // event.
        let file = &q.status.files[0];
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_qtrace"))
            .arg("dump")
            .arg(file)
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for at in [0, 2] {
            assert!(
                lines[at].ends_with("[NAME source 7 text=\"worker-7\"]"),
                "{text}"
            );
            assert!(
                lines[at + 1].ends_with("[NAME task 3 text=\"idle task\"]"),
                "{text}"
            );
        }
        assert!(
            lines[4].ends_with(&format!(
                "7(worker-7)  user       user{i}          value={} arg1=0",
                i + 1
            )),
            "{text}"
        );
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn dump_shows_a_run_cut_by_the_end_of_the_file_partial() {
    let d = dir("crash");
    let file = &file_cut_inside_a_run(&d);
    // dump says so too.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .arg("dump")
        .arg(file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3)); // cut short
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(&format!(
            "value=2 text={:?} [PARTIAL: 2 of 5 records, the rest lost]",
            "y".repeat(16)
        )),
        "{text}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn qtrace_convert_names_threads_whose_name_records_come_last() {
    let d = dir("convert-names");
    let tracer = Tracer::with_config(Config::default().with_output_dir(&d));
    let q = tracer
        .create_queue::<Circular>(CircularParams::default().with_capacity(64))
        .unwrap();
    tracer.assign_event(user::USER0, q).unwrap();
    tracer.activate().unwrap();
    qtrace::source::set_current(11);
    tracer.log_event(user::USER0, [1, 0]);
    tracer.name_thread("late-name").unwrap(); // after the event it names
    let file = d.join("snap.qtr");
    tracer
        .queue(q)
        .unwrap()
        .as_circular()
        .unwrap()
        .snapshot(&file)
        .unwrap();
    let json = d.join("out.json");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(["convert", "--to", "chrome", "-o"])
        .arg(&json)
        .arg(&file)
        .output()
        .unwrap();
    assert_success(&out);
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let names: Vec<&str> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "thread_name" && e["tid"] == 11)
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["11 late-name"]);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn dump_names_the_events_before_a_late_name_record() {
    // Failed before the first pass: the first event's line read `12` and
    // its JSON object had no "source_name".
    let d = dir("dump-late-names");
    let tracer = Tracer::with_config(Config::default().with_output_dir(&d));
    let q = tracer
        .create_queue::<Circular>(CircularParams::default().with_capacity(64))
        .unwrap();
    tracer.assign_event(user::USER0, q).unwrap();
    tracer.activate().unwrap();
    qtrace::source::set_current(12);
    tracer.log_event(user::USER0, [1, 0]);
    tracer.name_thread("late-name").unwrap(); // after the event it names
    tracer.log_event(user::USER0, [2, 0]);
    let file = d.join("snap.qtr");
    tracer
        .queue(q)
        .unwrap()
        .as_circular()
        .unwrap()
        .snapshot(&file)
        .unwrap();
    let dump = |json: bool| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_qtrace"));
        cmd.arg("dump");
        if json {
            cmd.arg("--json");
        }
        let out = cmd.arg(&file).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    // The names prologue (FORMAT.md 1.8) names the source first; the
    // name record stays where it was recorded.
    let text = dump(false);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    for at in [0, 2] {
        assert!(
            lines[at].ends_with("[NAME source 12 text=\"late-name\"]"),
            "{text}"
        );
    }
    assert!(
        lines[1].ends_with("12(late-name)  user       user0          value=1 arg1=0"),
        "{text}"
    );
    assert!(
        lines[3].ends_with("12(late-name)  user       user0          value=2 arg1=0"),
        "{text}"
    );
    assert!(lines[4].contains("[END: complete; "), "{text}");
    let json = dump(true);
    let objects: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(objects.len(), 5, "{json}"); // and the end object
    for (o, value) in [(&objects[1], 1), (&objects[3], 2)] {
        assert_eq!(o["source"], 12, "{json}");
        assert_eq!(o["source_name"], "late-name", "{json}");
        assert_eq!(o["event"], "user0", "{json}");
        assert_eq!(o["args"]["value"], value, "{json}");
    }
    for at in [0, 2] {
        assert_eq!(objects[at]["name_of"], "source", "{json}");
        assert_eq!(objects[at]["source_name"], "late-name", "{json}");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn dump_names_every_event_of_a_ring_that_overwrote_its_name_records() {
    // Failed before the names prologue: the ring's 64 records hold none of
    // the 40 name records, and dump showed `e7` for the run-time name.
    let d = dir("dump-overwritten-names");
    let tracer = Tracer::with_config(Config::default().with_output_dir(&d));
    let mut spec = qtrace::classes::ClassSpec::new("app", "run-time named events");
    for n in 0..40 {
        spec = spec.event(format!("e{n}"), "", &["n"]);
    }
    let app = tracer.define_class(spec).unwrap();
    let q = tracer
        .create_queue::<Circular>(CircularParams::default().with_capacity(64).with_shards(0))
        .unwrap();
    tracer.assign_class(app.id, q).unwrap();
    tracer.activate().unwrap();
    let ids: Vec<_> = (0..40)
        .map(|n| app.event(&format!("e{n}")).unwrap())
        .collect();
    for (n, &id) in ids.iter().enumerate() {
        tracer.name_event(id, &format!("site {n} of 40")).unwrap();
    }
    for _ in 0..5 {
        for (n, &id) in ids.iter().enumerate() {
            tracer.log_event(id, [n as u64, 0]);
        }
    }
    let report = tracer.shutdown().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .arg("dump")
        .arg(&report.queues[0].status.files[0])
        .output()
        .unwrap();
    assert_success(&out);
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // The prologue's 40 names, the hoops record of the 200 events and 80
    // name records overwritten, the ring's newest 64 events, the END line.
    assert_eq!(lines.len(), 40 + 1 + 64 + 1, "{text}");
    for (n, line) in lines[..40].iter().enumerate() {
        let want = format!("[NAME event {:#06x} text=\"site {n} of 40\"]", ids[n].0);
        assert!(line.ends_with(&want), "{line:?} does not end with {want:?}");
    }
    assert!(lines[40].ends_with("[LOST 216 EVENTS] (queue 0)"), "{text}");
    // The last 64 of 200 events: event 136 % 40 = 16 first.
    for (k, line) in lines[41..105].iter().enumerate() {
        let n = (136 + k) % 40;
        let want = format!("app        {:<14} n={n}", format!("site {n} of 40"));
        assert!(line.ends_with(&want), "{line:?} does not end with {want:?}");
    }
    assert!(lines[105].contains("[END: complete; "), "{text}");
    std::fs::remove_dir_all(&d).unwrap();
}
