//! `qtrace analyze` and `qtrace plot` on the small hand-built trace of the
//! library's `tests/export/analysis.rs` (shared from `tests/common/analysis_trace.rs`;
//! its figures are worked out by hand there): the command's tables, JSON and
//! SVG carry the same figures.

use qtrace::classes::Catalog;

use crate::common::analysis_trace;
use analysis_trace::trace;

use crate::common::success;
use success::assert_success;

fn trace_file(dir: &std::path::Path) -> std::path::PathBuf {
    use qtrace::clock::{Clock, ManualClock};
    use qtrace::wire::{create_trace_file, TraceHeader};
    let path = dir.join("t.qtr");
    let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)));
    let mut w = create_trace_file(&path, &header).unwrap();
    w.write_events(&trace()).unwrap();
    w.finish().unwrap();
    path
}

fn run(args: &[&str], file: &std::path::Path) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .arg("analyze")
        .args(args)
        .arg(file)
        .output()
        .unwrap();
    assert_success(&out);
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn cli_json_has_the_same_figures() {
    let dir = tempfile::tempdir().unwrap();
    let file = trace_file(dir.path());
    let out = run(&["--json", "--from", "activate", "--to", "endcycle"], &file);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (v["events"].as_u64(), v["lost"].as_u64()),
        (Some(16), Some(4))
    );
    let t1 = &v["tasks"][0];
    assert_eq!(t1["task"], 1);
    assert_eq!(t1["cpu_ns"], 350);
    assert_eq!(t1["preemptions"], 1);
    assert_eq!(t1["blocked_ns"], 250);
    assert_eq!(t1["response_lossy"], 1);
    let t2 = &v["tasks"][1];
    assert_eq!(
        t2["response"],
        serde_json::json!({"count": 2, "min_ns": 150, "mean_ns": 160, "p99_ns": 170, "max_ns": 170})
    );
    assert_eq!(v["cpus"][0]["utilisation_pct"], 75.0);
    assert_eq!(v["cpus"][1]["lossy_ns"], 740);
    assert_eq!(v["interrupts"][0]["handler"]["max_ns"], 50);
    let l = &v["latency"];
    assert_eq!(
        (l["from"].as_str(), l["to"].as_str(), l["by"].as_str()),
        (Some("activate"), Some("endcycle"), Some("task"))
    );
    assert_eq!(l["summary"]["count"], 2);
    assert_eq!(l["lossy"], 1);
    assert_eq!(
        l["histogram"],
        serde_json::json!([{"below_ns": 256, "count": 2}])
    );
}

#[test]
fn cli_text_tables_say_what_a_loss_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let file = trace_file(dir.path());
    let out = run(&["--from", "system:activate", "--to", "0x07"], &file);
    assert!(
        out.starts_with("span 1000ns (16 events, 4 lost in 1 hoops records)\n"),
        "{out}"
    );
    assert!(out.contains("left out of the figures"), "{out}");
    let task2 = out
        .lines()
        .find(|l| l.trim_start().starts_with("2 "))
        .unwrap();
    assert_eq!(
        task2.split_whitespace().collect::<Vec<_>>(),
        [
            "2", "2", "2", "250ns", "0", "2", "150ns", "160ns", "170ns", "170ns", "0", "0", "0ns",
            "0"
        ]
    );
    assert!(
        out.contains("latency activate -> endcycle (by task)"),
        "{out}"
    );
    assert!(out.contains("2 intervals: min 150ns mean 160ns p99 170ns max 170ns  (1 left out: events lost during them)"), "{out}");
}

#[test]
fn cli_rejects_an_unknown_event_or_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = trace_file(dir.path());
    for (args, msg) in [
        (
            vec!["--from", "nope", "--to", "endcycle"],
            "no event \"nope\"",
        ),
        (
            vec!["--from", "activate", "--to", "interrupt", "--by", "task"],
            "--by task",
        ),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_qtrace"))
            .arg("analyze")
            .args(&args)
            .arg(&file)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains(msg));
    }
}

/// `qtrace plot` of the same trace: rows, bars, markers, read back from the SVG.
#[test]
fn cli_plot_draws_rows_spans_and_losses() {
    let dir = tempfile::tempdir().unwrap();
    let file = trace_file(dir.path());
    let svg_path = dir.path().join("t.svg");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(["plot", "--width", "1000", "--out"])
        .arg(&svg_path)
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("16 events (4 lost) from 2 sources"),
        "{stderr}"
    );
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert!(svg.trim_end().ends_with("</svg>"));
    // Rows: sources first, then tasks in order.
    let rows: Vec<&str> = svg
        .split("<g class=\"row\">")
        .skip(1)
        .map(|r| {
            let text = r.split("\">").nth(1).unwrap();
            text.split('<').next().unwrap()
        })
        .collect();
    assert_eq!(rows, ["CPU 0", "CPU 1", "task 1", "task 2", "task 3"]);
    let titles = |class: &str| -> Vec<String> {
        svg.split(&format!("<rect class=\"{class}\""))
            .skip(1)
            .map(|r| {
                r.split("<title>")
                    .nth(1)
                    .unwrap()
                    .split("</title>")
                    .next()
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    // 1 ns = 1 px: every span is wide enough to stay apart.
    assert_eq!(
        titles("run"),
        [
            // source 0
            "task 1 100..350 ns",
            "task 2 350..450 ns",
            "task 1 500..600 ns",
            "task 2 600..750 ns",
            "task 1 800..1000 ns",
            // source 1
            "task 3 200..260 ns",
            // task rows
            "task 1 100..350 ns",
            "task 1 500..600 ns",
            "task 1 800..1000 ns",
            "task 2 350..450 ns",
            "task 2 600..750 ns",
            "task 3 200..260 ns",
        ]
    );
    assert_eq!(titles("irq"), ["irq 5 400..450 ns"]);
    assert_eq!(titles("blocked"), ["blocked on a semaphore 550..800 ns"]);
    assert_eq!(svg.matches("class=\"activate\"").count(), 3);
    assert!(svg.contains("<title>4 events lost at 900 ns</title>"));
    assert!(svg.contains(">4 lost</text>"));
    // Axis: 100 ns steps from 0 to 1000.
    assert_eq!(svg.matches("class=\"tick\"").count(), 11);
    assert!(svg.contains(">500ns</text>"));
}

fn write_trace(dir: &std::path::Path, name: &str, events: &[qtrace::Event]) -> std::path::PathBuf {
    use qtrace::clock::{Clock, ManualClock};
    use qtrace::wire::{create_trace_file, TraceHeader};
    let path = dir.join(name);
    let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)));
    let mut w = create_trace_file(&path, &header).unwrap();
    w.write_events(events).unwrap();
    w.finish().unwrap();
    path
}

fn qtrace(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(args)
        .output()
        .unwrap()
}

/// Issue 25 item 3: rows named for what their source does, a legend, loss
/// labels that never overlap.
#[test]
fn plot_names_rows_by_what_they_do_has_a_legend_and_spaces_loss_labels() {
    use qtrace::classes::{lowlevel, system, tracer};
    use qtrace::Event;
    // Failed before: rows "source 0" and "source 100", no legend, and two
    // labels "3 lost" and "4 lost" 5 pixels apart.
    let dir = tempfile::tempdir().unwrap();
    let file = write_trace(
        dir.path(),
        "t.qtr",
        &[
            Event::new(0, system::SCHEDULE, 0, [1, 0]),
            Event::new(100, lowlevel::INTERRUPT, 100, [3, 0]),
            Event::new(300, lowlevel::INTERRUPT, 100, [9, 0]),
            Event::new(500, tracer::HOOPS, u32::MAX, [3, 0]),
            Event::new(505, tracer::HOOPS, u32::MAX, [4, 0]),
            Event::new(900, tracer::HOOPS, u32::MAX, [2, 0]),
            Event::new(1_000, system::ENDCYCLE, 0, [1, 0]),
        ],
    );
    let svg_path = dir.path().join("t.svg");
    let o = qtrace(&[
        "plot",
        "--width",
        "1000",
        "-o",
        svg_path.to_str().unwrap(),
        file.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    let rows: Vec<&str> = svg
        .split("<g class=\"row\">")
        .skip(1)
        .map(|r| r.split("\">").nth(1).unwrap().split('<').next().unwrap())
        .collect();
    assert_eq!(rows, ["CPU 0", "irq 3,9", "task 1"]);
    assert!(
        svg.contains(">irq 3,9<title>source 100</title></text>"),
        "{svg}"
    );
    // Three loss lines; the two 5 px apart share one label with their sum.
    assert_eq!(svg.matches("<g class=\"loss\">").count(), 3);
    let labels: Vec<&str> = svg
        .split("<text class=\"loss-label\"")
        .skip(1)
        .map(|l| l.split('>').nth(1).unwrap().split('<').next().unwrap())
        .collect();
    assert_eq!(labels, ["7 lost", "2 lost"]);
    // The legend names every colour and mark.
    let legend = svg.split("<g class=\"legend\">").nth(1).unwrap();
    let kinds: Vec<&str> = legend
        .split("data-kind=\"")
        .skip(1)
        .map(|k| k.split('"').next().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["run", "run mixed", "blocked", "irq", "activate", "loss"]
    );
    assert!(
        legend.contains(">interrupt (up to 1000 ns)</text>"),
        "{legend}"
    );
}

/// Issue 25 item 3: a window without events is an error that says where the
/// events are; times in messages are in the units given; the summary counts
/// the window.
#[test]
fn plot_of_an_empty_window_fails_in_the_units_given() {
    use qtrace::classes::system;
    use qtrace::Event;
    // Failed before: exit 0 with a blank picture and "3 events", and
    // "--to 3000 is before --from 5000".
    let dir = tempfile::tempdir().unwrap();
    let file = write_trace(
        dir.path(),
        "t.qtr",
        &[
            Event::new(1_000, system::SCHEDULE, 0, [1, 0]),
            Event::new(2_000, system::SCHEDULE, 0, [2, 0]),
            Event::new(9_000, system::SCHEDULE, 0, [1, 0]),
        ],
    );
    let svg = dir.path().join("t.svg");
    let plot = |extra: &[&str]| {
        let mut args = vec!["plot", "-o", svg.to_str().unwrap(), file.to_str().unwrap()];
        args.extend_from_slice(extra);
        let o = qtrace(&args);
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (code, err) = plot(&["--from", "3us", "--to", "8us"]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(
        err.trim_end(),
        "qtrace plot: no events between 3us and 8us: the events lie between 0.000001000 s and 0.000009000 s; choose --from/--to inside it"
    );
    assert!(!svg.exists());
    let (code, err) = plot(&["--from", "5us", "--to", "3us"]);
    assert_eq!(code, Some(2));
    assert_eq!(
        err.trim_end(),
        "qtrace plot: --to 3us is before --from 5us: give a later --to"
    );
    let (code, err) = plot(&["--from", "0.5ms"]);
    assert_eq!(code, Some(2));
    assert_eq!(
        err.trim_end(),
        "qtrace plot: --from 0.5ms is after the last event (at 0.000009000 s): give an earlier --from"
    );
    let (code, err) = plot(&["--from", "1.5us", "--to", "2.5us"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("qtrace plot: 1 events (0 lost) from 1 sources"),
        "{err}"
    );
}

/// Issue 25 item 4: the latency's events are `--latency-from/--latency-to`
/// (`--from/--to` still work; a time there is refused with the reason); a
/// latency without intervals says when `--by any` is needed; a handler time
/// at the `--irq-max` cap is marked.
#[test]
fn analyze_names_its_latency_flags_hints_by_any_and_marks_the_irq_cap() {
    use qtrace::classes::{lowlevel, system};
    use qtrace::Event;
    let dir = tempfile::tempdir().unwrap();
    let file = write_trace(
        dir.path(),
        "t.qtr",
        &[
            Event::new(100, lowlevel::INTERRUPT, 100, [3, 0]),
            Event::new(150, system::SCHEDULE, 0, [1, 0]),
            Event::new(5_100, lowlevel::INTERRUPT, 100, [3, 0]),
            Event::new(5_180, system::SCHEDULE, 0, [2, 0]),
            Event::new(9_000, system::ENDCYCLE, 0, [2, 0]),
        ],
    );
    let f = file.to_str().unwrap();
    // Failed before: "0 intervals" and nothing more.
    let out = run(&["--from", "interrupt", "--to", "schedule"], &file);
    assert!(
        out.contains("latency interrupt -> schedule (by source)\n  0 intervals"),
        "{out}"
    );
    assert!(
        out.contains("  no end (schedule) followed a start (interrupt) with the same source: when the two come from different sources (an interrupt and a CPU's scheduler), pair them with --by any\n"),
        "{out}"
    );
    let new = run(
        &[
            "--latency-from",
            "interrupt",
            "--latency-to",
            "schedule",
            "--by",
            "any",
        ],
        &file,
    );
    assert!(
        new.contains("  2 intervals: min 50ns mean 65ns p99 80ns max 80ns"),
        "{new}"
    );
    assert!(!new.contains("pair them with --by any"), "{new}");
    // The handler ends at the source's next event (none here: the cap).
    // Failed before: "1000ns" shown as if measured.
    let irq_line = out
        .lines()
        .skip_while(|l| !l.starts_with("interrupts"))
        .nth(2)
        .unwrap();
    assert_eq!(
        irq_line,
        "     3        2   224719.1  1000ns*  1000ns*  1000ns*  1000ns*"
    );
    assert!(
        out.contains("  * = the --irq-max cap (1000ns): a handler ends at the next event of its source or at the cap; a time marked * is the cap, not a measurement\n"),
        "{out}"
    );
    let v: serde_json::Value = serde_json::from_str(&run(&["--json"], &file)).unwrap();
    assert_eq!(v["irq_max_ns"], 1000);
    assert_eq!(v["interrupts"][0]["max_is_cap"], true);
    // A time where an event is expected: refused, with the reason.
    // Failed before: `no event "3ms" in the trace`.
    let o = qtrace(&["analyze", "--from", "3ms", "--to", "schedule", f]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(
            "\"3ms\" is a time, not an event: --latency-from/--latency-to (also spelled --from/--to here) name the latency's two events"
        ),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Every field `analyze --json` prints (with a latency) is documented in
/// docs/command.md's "analyze --json", and none is null, as it says.
#[test]
fn every_analyze_json_field_is_documented_and_none_is_null() {
    fn walk(v: &serde_json::Value, keys: &mut std::collections::BTreeSet<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    assert!(!x.is_null(), "{k} is null");
                    keys.insert(k.clone());
                    walk(x, keys);
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, keys)),
            _ => {}
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let file = trace_file(dir.path());
    let out = run(
        &[
            "--json",
            "--latency-from",
            "activate",
            "--latency-to",
            "endcycle",
        ],
        &file,
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let mut keys = std::collections::BTreeSet::new();
    walk(&v, &mut keys);
    assert!(keys.len() >= 40, "{keys:?}");
    let doc = include_str!("../../../docs/command.md");
    let start = doc.find("### `analyze --json`").expect("the section");
    let section = &doc[start..];
    let section = &section[..section.find("From Rust,").unwrap()];
    let missing: Vec<&String> = keys
        .iter()
        .filter(|k| !section.contains(&format!("`{k}`")) && !section.contains(&format!("\"{k}\"")))
        .collect();
    assert!(missing.is_empty(), "undocumented: {missing:?}");
}

/// A trace of two counters: `sched:ready` (u64, tasks) on sources 0 and 1,
/// `sched:load` (f64) with a NaN.
fn counter_file(dir: &std::path::Path) -> std::path::PathBuf {
    use qtrace::classes::ClassSpec;
    use qtrace::clock::{Clock, ManualClock};
    use qtrace::macros::CounterKind;
    use qtrace::wire::{create_trace_file, TraceHeader};
    let mut catalog = Catalog::builtin();
    let c = catalog
        .define(
            ClassSpec::new("sched", "the scheduler")
                .counter("ready", "tasks ready", CounterKind::U64, "tasks")
                .counter("load", "load average", CounterKind::F64, ""),
        )
        .unwrap();
    let (ready, load) = (
        c.event("ready.counter").unwrap(),
        c.event("load.counter").unwrap(),
    );
    let events = [
        qtrace::Event::new(100, ready, 0, [2, 0]),
        qtrace::Event::new(200, ready, 1, [5, 0]),
        qtrace::Event::new(300, load, 0, [0.5f64.to_bits(), 0]),
        qtrace::Event::new(400, ready, 0, [1, 0]),
        qtrace::Event::new(500, load, 0, [f64::NAN.to_bits(), 0]),
    ];
    let path = dir.join("c.qtr");
    let header = TraceHeader::new(catalog, &Clock::manual(&ManualClock::new(0)));
    let mut w = create_trace_file(&path, &header).unwrap();
    w.write_events(&events).unwrap();
    w.finish().unwrap();
    path
}

/// Counters (FORMAT.md 1.3.2): min, mean and max per counter, every source
/// together, in the text table and in `--json`.
#[test]
fn analyze_reports_min_mean_max_per_counter() {
    let dir = tempfile::tempdir().unwrap();
    let path = counter_file(dir.path());
    let text = run(&[], &path);
    let table = &text[text.find("\ncounters\n").expect("a counters table")..];
    assert_eq!(
        table,
        "\ncounters\n\
         counter                     count          min         mean          max\n\
         sched:load                      1          0.5        0.500          0.5\n  \
         1 NaN values of sched:load left out\n\
         sched:ready                     3            1        2.667            5\n"
    );
    let v: serde_json::Value = serde_json::from_str(&run(&["--json"], &path)).unwrap();
    assert_eq!(
        v["counters"],
        serde_json::json!([
            {"name": "sched:load", "count": 1, "nan": 1, "min": 0.5, "mean": 0.5, "max": 0.5},
            {"name": "sched:ready", "count": 3, "nan": 0, "min": 1.0, "mean": 8.0 / 3.0, "max": 5.0},
        ])
    );
}

/// `qtrace plot` draws a lane per counter and source, with its range.
#[test]
fn plot_draws_a_lane_per_counter_and_source() {
    let dir = tempfile::tempdir().unwrap();
    let path = counter_file(dir.path());
    let svg_path = dir.path().join("c.svg");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(["plot", "--width", "400", "--out"])
        .arg(&svg_path)
        .arg(&path)
        .output()
        .unwrap();
    assert_success(&out);
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    let lanes: Vec<(String, String)> = svg
        .split("<g class=\"counter\">")
        .skip(1)
        .map(|l| {
            let name = l.split("\">").nth(1).unwrap().split('<').next().unwrap();
            let range = l.split("text-anchor=\"end\">").nth(1).unwrap();
            (
                name.to_string(),
                range.split('<').next().unwrap().to_string(),
            )
        })
        .collect();
    let lane = |n: &str, r: &str| (n.to_string(), r.to_string());
    assert_eq!(
        lanes,
        [
            lane("sched:ready", "min 1, max 2 (tasks)"),
            lane("sched:ready", "min 5, max 5 (tasks)"),
            lane("sched:load", "min 0.5, max 0.5"),
        ]
    );
    assert_eq!(svg.matches("<title>source 1</title>").count(), 1);
}

#[test]
fn analyze_reports_wake_up_latency_per_task() {
    use qtrace::classes::{lowlevel, semaphore, system, tracer};
    use qtrace::clock::{Clock, ManualClock};
    use qtrace::wire::{create_trace_file, TraceHeader};
    use qtrace::Event;
    // The trace of tests/export/flows.rs's `wake_trace`: a signal releases
    // task 1 (150 ns), irq 9 wakes task 3 (300 ns) and task 4 (never
    // scheduled), irq 5 wakes task 2 with a loss between.
    let events = [
        Event::new(0, system::SCHEDULE, 0, [1, 0]),
        Event::new(100, semaphore::WAIT, 0, [1, 7]),
        Event::new(150, system::SCHEDULE, 0, [2, 0]),
        Event::new(200, system::SCHEDULE, 1, [3, 0]),
        Event::new(300, semaphore::SIGNAL, 1, [3, 7]),
        Event::new(450, system::SCHEDULE, 0, [1, 0]),
        Event::new(500, system::ENDCYCLE, 1, [3, 0]),
        Event::new(1_000, lowlevel::INTERRUPT, 1, [9, 0]),
        Event::new(1_050, system::ACTIVATE, 1, [3, 0]),
        Event::new(1_300, system::SCHEDULE, 1, [3, 0]),
        Event::new(1_400, semaphore::WAIT, 0, [1, 8]),
        Event::new(1_500, semaphore::SIGNAL, 1, [3, 8]),
        Event::new(1_600, semaphore::SIGNAL, 0, [1, 8]),
        Event::new(1_700, lowlevel::INTERRUPT, 0, [9, 0]),
        Event::new(1_750, system::ACTIVATE, 0, [4, 0]),
        Event::new(1_800, lowlevel::INTERRUPT, 1, [5, 0]),
        Event::new(1_810, system::ACTIVATE, 1, [2, 0]),
        Event::new(1_850, tracer::HOOPS, 1, [2, 0]),
        Event::new(1_900, system::SCHEDULE, 1, [2, 0]),
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.qtr");
    let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)));
    let mut w = create_trace_file(&path, &header).unwrap();
    w.write_events(&events).unwrap();
    w.finish().unwrap();

    let text = run(&[], &path);
    let at = text.find("\nwake-ups").expect("a wake-ups table");
    let table = &text[at..];
    let table = &table[..table[1..].find("\n\n").map_or(table.len(), |i| i + 2)];
    assert_eq!(
        table,
        "\nwake-ups (wake to next schedule)\n\
         task       by sem   by irq  unsched      min     mean      p99      max\n\
         1               1        0        0    150ns    150ns    150ns    150ns\n\
         2               0        1        0        -        -        -        -  (1 left out: events lost during them)\n\
         3               0        1        0    300ns    300ns    300ns    300ns\n\
         4               0        1        1        -        -        -        -\n"
    );
    let v: serde_json::Value = serde_json::from_str(&run(&["--json"], &path)).unwrap();
    let none = serde_json::json!({"count": 0, "min_ns": 0, "mean_ns": 0, "p99_ns": 0, "max_ns": 0});
    assert_eq!(
        v["wakeups"],
        serde_json::json!([
            {"task": 1, "by_signal": 1, "by_irq": 0, "unscheduled": 0, "lossy": 0,
             "latency": {"count": 1, "min_ns": 150, "mean_ns": 150, "p99_ns": 150, "max_ns": 150}},
            {"task": 2, "by_signal": 0, "by_irq": 1, "unscheduled": 0, "lossy": 1, "latency": none},
            {"task": 3, "by_signal": 0, "by_irq": 1, "unscheduled": 0, "lossy": 0,
             "latency": {"count": 1, "min_ns": 300, "mean_ns": 300, "p99_ns": 300, "max_ns": 300}},
            {"task": 4, "by_signal": 0, "by_irq": 1, "unscheduled": 1, "lossy": 0, "latency": none},
        ])
    );
}
