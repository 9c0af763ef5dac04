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
    assert_eq!(rows, ["source 0", "source 1", "task 1", "task 2", "task 3"]);
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
