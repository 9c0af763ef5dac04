//! `qtrace dump` and `qtrace stats`, run as the binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use qtrace::classes::{system, tracer, user, Catalog};
use qtrace::clock::{Clock, ManualClock};
use qtrace::wire::{create_trace_file, TraceHeader};
use qtrace::QueueHandle;
use qtrace::{Event, EventId};

/// A fresh directory, removed when the guard drops.
struct TempDir(PathBuf);

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn dir(name: &str) -> TempDir {
    let d = std::env::temp_dir().join(format!("qtrace-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    TempDir(d)
}

fn qtrace(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(args)
        .output()
        .expect("run qtrace")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

use crate::common::net_class;
use net_class::net_class;

/// The builtin table plus a user class `net` (`rx(len, port)`, `tx(len)`).
fn header(queue: u16) -> TraceHeader {
    let mut catalog = Catalog::builtin();
    catalog.define(net_class()).unwrap();
    TraceHeader::new(catalog, &Clock::manual(&ManualClock::new(0)))
        .with_host("testhost")
        .unwrap()
        .with_process_id(99)
        .with_queue(QueueHandle(queue), "circular")
        .unwrap()
}

const RX: EventId = EventId(0x17);
const TX: EventId = EventId(0x18);

fn write(path: &Path, queue: u16, events: &[Event]) {
    let mut w = create_trace_file(path, &header(queue)).unwrap();
    w.write_events(events).unwrap();
    w.finish().unwrap();
}

fn sample(d: &Path) -> PathBuf {
    let p = d.join("a.qtr");
    write(
        &p,
        0,
        &[
            Event::new(1_000, system::SCHEDULE, 1, [3, 0]),
            Event::new(2_500, RX, 0, [1500, 80]),
            Event::new(3_000, tracer::HOOPS, u32::MAX, [7, 0]),
            Event::new(1_000_004_000, user::USER2, 2, [42, 0]),
            Event::new(1_000_005_000, EventId(0x300), 2, [1, 2]),
            Event::new(2_000_000_000, TX, 0, [60, 0]),
        ],
    );
    p
}

#[test]
fn dump_prints_one_line_per_event_with_names_and_losses() {
    let d = dir("dump");
    let p = sample(&d);
    let o = qtrace(&["dump", p.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "         0.000001000       1  system     schedule       task=3\n\
         \x20        0.000002500       0  net        rx             len=1500 port=80\n\
         \x20        0.000003000  [LOST 7 EVENTS] (queue 0)\n\
         \x20        1.000004000       2  user       user2          value=42 arg1=0\n\
         \x20        1.000005000       2  ?          unknown(0x0300) arg0=1 arg1=2\n\
         \x20        2.000000000       0  net        tx             len=60\n"
    );
    assert_eq!(stderr(&o), "");
}

#[test]
fn dump_filters_by_class_event_and_time() {
    let d = dir("filter");
    let p = sample(&d);
    let p = p.to_str().unwrap();
    let lines = |args: &[&str]| -> Vec<String> {
        let mut a = vec!["dump"];
        a.extend_from_slice(args);
        a.push(p);
        let o = qtrace(&a);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        stdout(&o)
            .lines()
            .map(|l| l.split_whitespace().take(4).collect::<Vec<_>>().join(" "))
            .collect()
    };
    // Hoops lines are kept by class and event filters: losses concern every event.
    assert_eq!(
        lines(&["--class", "net"]),
        [
            "0.000002500 0 net rx",
            "0.000003000 [LOST 7 EVENTS]",
            "2.000000000 0 net tx"
        ]
    );
    assert_eq!(
        lines(&["--event", "system:schedule", "--event", "tx"]),
        [
            "0.000001000 1 system schedule",
            "0.000003000 [LOST 7 EVENTS]",
            "2.000000000 0 net tx"
        ]
    );
    assert_eq!(
        lines(&["--event", "0x0c", "--class", "1"]),
        [
            "0.000001000 1 system schedule",
            "0.000003000 [LOST 7 EVENTS]"
        ]
    );
    assert_eq!(
        lines(&["--from", "2500ns", "--to", "1s"]),
        ["0.000002500 0 net rx", "0.000003000 [LOST 7 EVENTS]"]
    );
    assert_eq!(lines(&["--from", "1.5s"]), ["2.000000000 0 net tx"]);
    // A filter naming nothing in any file is an error.
    let o = qtrace(&["dump", "--class", "nosuch", p]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("\"nosuch\""), "{}", stderr(&o));
}

#[test]
fn dump_json_is_one_object_per_line() {
    let d = dir("json");
    let p = sample(&d);
    let o = qtrace(&["dump", "--json", "--to", "3us", p.to_str().unwrap()]);
    assert!(o.status.success());
    assert_eq!(
        stdout(&o),
        concat!(
            r#"{"file":"a.qtr","time_ns":1000,"source":1,"id":4,"class":"system","event":"schedule","flags":0,"args":{"task":3}}"#,
            "\n",
            r#"{"file":"a.qtr","time_ns":2500,"source":0,"id":23,"class":"net","event":"rx","flags":0,"args":{"len":1500,"port":80}}"#,
            "\n",
            r#"{"file":"a.qtr","time_ns":3000,"source":4294967295,"id":1,"class":"tracer","event":"hoops","flags":0,"args":{"lost":7,"queue":0},"lost":7,"queue":0}"#,
            "\n"
        )
    );
}

#[test]
fn several_files_merge_in_time_order() {
    let d = dir("merge");
    let a = d.join("q0.qtr");
    let b = d.join("q1.qtr");
    write(
        &a,
        0,
        &[
            Event::new(10, RX, 0, [1, 0]),
            Event::new(30, RX, 0, [3, 0]),
            Event::new(50, RX, 0, [5, 0]),
        ],
    );
    write(
        &b,
        1,
        &[Event::new(20, TX, 1, [2, 0]), Event::new(40, TX, 1, [4, 0])],
    );
    let o = qtrace(&["dump", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let got: Vec<String> = stdout(&o)
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            format!("{} {} {}", f[0], f[4], f[5])
        })
        .collect();
    assert_eq!(
        got,
        [
            "q0.qtr rx len=1",
            "q1.qtr tx len=2",
            "q0.qtr rx len=3",
            "q1.qtr tx len=4",
            "q0.qtr rx len=5"
        ]
    );
}

#[test]
fn stats_counts_classes_events_losses_and_span() {
    let d = dir("stats");
    let p = sample(&d);
    let o = qtrace(&["stats", p.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "a.qtr\n\
         \x20 format v1, host testhost, pid 99, clock manual, queue 0 (circular)\n\
         \x20 events: 5\n\
         \x20 lost: 7 events in 1 hoops records\n\
         \x20 end: completeness unknown (written before close records)\n\
         \x20 time span: 0.000001000 .. 2.000000000 s (1.999999000 s)\n\
         \x20 per class:\n\
         \x20   (unknown)                           1\n\
         \x20   system                              1\n\
         \x20   user                                1\n\
         \x20   net                                 2\n\
         \x20 per event:\n\
         \x20   system:schedule                     1\n\
         \x20   user:user2                          1\n\
         \x20   net:rx                              1\n\
         \x20   net:tx                              1\n\
         \x20   unknown(0x0300)                     1\n"
    );
}

#[test]
fn not_a_trace_is_one_line_and_status_2() {
    let d = dir("bad");
    let text = d.join("notes.txt");
    std::fs::write(&text, "just some text\n").unwrap();
    let empty = d.join("empty.qtr");
    std::fs::write(&empty, "").unwrap();
    let missing = d.join("missing.qtr");
    for cmd in ["dump", "stats"] {
        for f in [&text, &empty, &missing] {
            let o = qtrace(&[cmd, f.to_str().unwrap()]);
            assert_eq!(o.status.code(), Some(2), "{cmd} {f:?}");
            let err = stderr(&o);
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(err.starts_with("qtrace: "), "{err}");
            assert!(!err.contains("panicked"), "{err}");
            assert_eq!(stdout(&o), "");
        }
    }
    let o = qtrace(&["dump", text.to_str().unwrap()]);
    assert!(
        stderr(&o).contains("not a qtrace trace file"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_truncated_file_prints_what_is_whole_then_the_offset() {
    let d = dir("trunc");
    let p = sample(&d);
    let bytes = std::fs::read(&p).unwrap();
    let cut = d.join("cut.qtr");
    std::fs::write(&cut, &bytes[..bytes.len() - 40]).unwrap();
    // Cut inside a record: cut short (3), as a cut at a record boundary.
    let o = qtrace(&["dump", cut.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(stdout(&o).lines().count(), 4);
    let at = bytes.len() - 64;
    assert!(
        stderr(&o).contains(&format!("truncated at byte {at}")),
        "{}",
        stderr(&o)
    );
    let o = qtrace(&["stats", cut.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3));
    assert!(stdout(&o).contains("events: 3\n"), "{}", stdout(&o));
}

#[test]
fn stats_sums_huge_loss_counts_without_overflow() {
    // Loss counts come from the file: two hoops records claiming u64::MAX
    // each once made `qtrace stats` panic with an arithmetic overflow.
    let d = dir("hugeloss");
    let p = d.join("h.qtr");
    let hoops = Event::new(5, tracer::HOOPS, u32::MAX, [u64::MAX, 0]);
    write(&p, 0, &[hoops, hoops]);
    let o = qtrace(&["stats", p.to_str().unwrap(), p.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains(&format!("  lost: {} events in 2 hoops records\n", u64::MAX)),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "total: 0 events, {} lost in 4 hoops records, 2 files (0 complete, 0 cut short or damaged, 2 unknown)\n",
            u64::MAX
        )),
        "{out}"
    );
}

#[test]
fn a_reader_that_stops_early_is_not_an_error() {
    // `qtrace stats f | head -1`: stats once panicked ("failed printing to
    // stdout: Broken pipe") when the reader closed the pipe.
    let d = dir("pipe");
    let p = sample(&d);
    let p = p.to_str().unwrap();
    let many: Vec<&str> = std::iter::repeat_n(p, 3000).collect();
    for args in [
        [&["stats"][..], &many[..]].concat(),
        [&["dump"][..], &many[..]].concat(),
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_qtrace"))
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Read one byte, then close the pipe while qtrace is still writing.
        let mut first = [0u8; 1];
        std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut first).unwrap();
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}: {}", args[0], stderr(&o));
        assert_eq!(stderr(&o), "", "{}", args[0]);
    }
}
