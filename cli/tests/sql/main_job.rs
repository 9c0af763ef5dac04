//! The views equal `qtrace analyze` on the main job's trace
//! (`examples/standard_init.rs`: two CPUs, nine tasks, interrupts,
//! semaphores, and a circular queue that overwrote events, so losses fall
//! inside measures).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::common::main_job::standard_init;

fn qtrace() -> Command {
    Command::new(env!("CARGO_BIN_EXE_qtrace"))
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run qtrace");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// `query`'s rows (as CSV: numbers only), keyed by their first column.
fn rows(inputs: &[PathBuf], query: &str) -> BTreeMap<u64, Vec<String>> {
    let text = run(qtrace()
        .arg("sql")
        // Not kept in the user's cache: every run converts again.
        .arg("--no-cache")
        .args(["--format", "csv"])
        .args(inputs)
        .arg(query));
    text.lines()
        .skip(1)
        .map(|l| {
            let mut values = l.split(',').map(str::to_string);
            let key = values.next().and_then(|k| k.parse().ok()).expect("a key");
            (key, values.collect())
        })
        .collect()
}

/// A number of analyze's JSON as the engine prints it.
fn text(v: &Value) -> String {
    v.to_string()
}

/// count, min, mean, p99 (nearest rank), max: analyze's summary.
const SUMMARY: &str = "count(*) FILTER (WHERE NOT lossy) AS count, \
    coalesce(min(d) FILTER (WHERE NOT lossy), 0) AS min_ns, \
    coalesce(sum(d) FILTER (WHERE NOT lossy) // count(*) FILTER (WHERE NOT lossy), 0) AS mean_ns, \
    coalesce(list_sort(list(d) FILTER (WHERE NOT lossy))[greatest(1, ceil(count(*) FILTER (WHERE NOT lossy) * 99 / 100)::BIGINT)], 0) AS p99_ns, \
    coalesce(max(d) FILTER (WHERE NOT lossy), 0) AS max_ns, \
    count(*) FILTER (WHERE lossy) AS lossy";

fn summary(s: &Value, lossy: &Value) -> Vec<String> {
    ["count", "min_ns", "mean_ns", "p99_ns", "max_ns"]
        .iter()
        .map(|k| text(&s[k]))
        .chain([text(lossy)])
        .collect()
}

fn check(inputs: &[PathBuf], analysis: &Value) {
    let responses = rows(
        inputs,
        &format!("SELECT task, {SUMMARY} FROM (SELECT task, response_ns AS d, lossy FROM response_times) GROUP BY task"),
    );
    let preempted = rows(
        inputs,
        "SELECT task, count(*) FROM preemptions GROUP BY task",
    );
    let dispatched = rows(
        inputs,
        "SELECT task, count(*) FROM slices WHERE kind = 'task' GROUP BY task",
    );
    let tasks = analysis["tasks"].as_array().expect("tasks");
    assert_eq!(tasks.len(), 9, "the main job's nine tasks");
    for t in tasks {
        let id = t["task"].as_u64().unwrap();
        let want = summary(&t["response"], &t["response_lossy"]);
        // A task with no job ended has no row: analyze's summary is zeros.
        let got = responses
            .get(&id)
            .cloned()
            .unwrap_or_else(|| vec!["0".to_string(); 6]);
        assert_eq!(got, want, "task {id} response times");
        let n =
            |m: &BTreeMap<u64, Vec<String>>| m.get(&id).map_or(0, |v| v[0].parse::<u64>().unwrap());
        assert_eq!(
            n(&preempted),
            t["preemptions"].as_u64().unwrap(),
            "task {id} preemptions"
        );
        assert_eq!(
            n(&dispatched),
            t["dispatches"].as_u64().unwrap(),
            "task {id} dispatches"
        );
    }
    assert!(responses.len() >= 8, "{responses:?}");

    let cpus = rows(
        inputs,
        "SELECT source, dispatches, busy_ns, idle_ns, lossy_ns, utilisation_pct FROM cpu_busy",
    );
    let want: BTreeMap<u64, Vec<String>> = analysis["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let v = [
                "dispatches",
                "busy_ns",
                "idle_ns",
                "lossy_ns",
                "utilisation_pct",
            ]
            .iter()
            .map(|k| text(&c[k]))
            .collect();
            (c["source"].as_u64().unwrap(), v)
        })
        .collect();
    assert_eq!(cpus, want, "cpu_busy");
    // The circular queue's overwrites usually spoil some CPU time, but where
    // they fall depends on the run's timing (a run whose overwrites all fell
    // outside CPU measures failed here): the equality above is the check,
    // and sql/tests/views.rs exercises the loss rule on generated schedules.
    if cpus.values().all(|v| v[3] == "0") {
        eprintln!("note: no overwrite fell inside a CPU measure in this run");
    }

    let irqs = rows(
        inputs,
        &format!("SELECT irq, {SUMMARY} FROM (SELECT irq, end_ns - begin_ns AS d, false AS lossy FROM slices WHERE kind = 'irq') GROUP BY irq"),
    );
    let want: BTreeMap<u64, Vec<String>> = analysis["interrupts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let mut v = vec![text(&i["count"])];
            v.extend(summary(&i["handler"], &Value::from(0))[1..].iter().cloned());
            (i["irq"].as_u64().unwrap(), v)
        })
        .collect();
    assert_eq!(irqs.len(), 2, "the timer and network interrupt lines");
    assert_eq!(irqs, want, "interrupt handlers");

    // wake_flows: per task woken, its wake-up latencies as analyze sums
    // them up, and one row per wake followed by a schedule.
    let wakes = rows(
        inputs,
        &format!("SELECT task, {SUMMARY}, count(*) AS flows FROM (SELECT task, latency_ns AS d, lossy FROM wake_flows) GROUP BY task"),
    );
    let woken = analysis["wakeups"]
        .as_array()
        .expect("the interrupts wake tasks");
    for w in woken {
        let id = w["task"].as_u64().unwrap();
        let mut want = summary(&w["latency"], &w["lossy"]);
        let n = |k: &str| w[k].as_u64().unwrap();
        let scheduled = n("by_signal") + n("by_irq") - n("unscheduled");
        want.push(scheduled.to_string());
        let got = wakes
            .get(&id)
            .cloned()
            .unwrap_or_else(|| vec!["0".to_string(); 7]);
        assert_eq!(got, want, "task {id} wake-ups");
    }
    // No task in the table that analyze did not find woken.
    assert!(
        wakes
            .keys()
            .all(|&id| woken.iter().any(|w| w["task"].as_u64() == Some(id))),
        "{wakes:?}"
    );

    // The events and losses tables hold what analyze counted (no loss in a
    // run: no losses row, a sum of 0, not NULL).
    let totals = rows(
        inputs,
        "SELECT 0, (SELECT count(*) FROM events), (SELECT count(*) FROM losses), (SELECT coalesce(sum(count), 0) FROM losses)",
    );
    assert_eq!(
        totals[&0],
        [&analysis["events"], &analysis["hoops"], &analysis["lost"]].map(text),
        "events, hoops records, events lost"
    );
}

#[test]
fn the_views_equal_analyze_on_the_main_job_as_a_store_and_as_trace_files() {
    let dir = tempfile::tempdir().unwrap();
    let traces = dir.path().join("traces");
    run(Command::new(standard_init()).arg(&traces));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&traces)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "qtr"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 3, "{files:?}");

    let analysis: Value =
        serde_json::from_str(&run(qtrace().args(["analyze", "--json"]).args(&files))).unwrap();
    let store = dir.path().join("store");
    run(qtrace()
        .args(["convert", "--to", "parquet", "--out"])
        .arg(&store)
        .args(&files));

    check(&[store], &analysis);
    check(&files, &analysis);
}
