//! The online queue's own counters (FORMAT.md 1.3.4) through the command's
//! readers: a file whose queue dropped events and sampled its fill level and
//! losses reads complete in `dump` and `stats`, which count the samples as
//! records, never as losses; `analyze` summarises both counters; the Chrome
//! JSON export draws their values; the Parquet store holds them as `events`
//! rows and the losses once; `live` shows each counter's current value.

use std::path::Path;
use std::process::Command;

use crate::common::queue_counters_file::counters_file;

fn qtrace(args: &[&str], file: &Path) -> (Option<i32>, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(args)
        .arg(file)
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    )
}

/// `dump` shows the samples after the 16 events and the loss, and the file
/// complete with 23 records of which the queue delivered 16; `stats`
/// counts 22 events (16 and the 6 sample records) and 24 lost, once.
#[test]
fn dump_and_stats_count_the_samples_as_records_not_losses() {
    let dir = tempfile::tempdir().unwrap();
    let file = counters_file(dir.path());
    let (code, out, _) = qtrace(&["dump"], &file);
    assert_eq!(code, Some(0), "{out}");
    // The lines without their times (the first column), a logged event's
    // source (the thread that logged it) as `S`.
    let lines: Vec<String> = out
        .lines()
        .map(|l| {
            let words: Vec<&str> = l.split_whitespace().skip(1).collect();
            let source = words[0].parse::<u32>().map_or(words[0], |_| "S");
            [source]
                .into_iter()
                .chain(words[1..].iter().copied())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let mut expected: Vec<String> = (0..16)
        .map(|i| format!("S user user0 value={i} arg1=0"))
        .collect();
    expected.push("[LOST 24 EVENTS] (queue 0)".into());
    for (fill, lost) in [(16, 24), (0, 24), (0, 24)] {
        expected.push(format!(
            "tracer qtrace queue.fill.counter u64={fill} events=0"
        ));
        expected.push(format!(
            "tracer qtrace queue.lost.counter u64={lost} events=0"
        ));
    }
    expected.push("[END: complete; the file holds 23 records; its queue had then accepted 16, dropped 24, overwritten 0, delivered 16]".into());
    assert_eq!(lines, expected);

    let (code, out, _) = qtrace(&["stats", "--json"], &file);
    assert_eq!(code, Some(0), "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let f = &v["files"][0];
    assert_eq!(
        (&f["events"], &f["lost"], &f["hoops"], &f["end"]),
        (
            &serde_json::json!(22),
            &serde_json::json!(24),
            &serde_json::json!(1),
            &serde_json::json!("complete")
        )
    );
    assert_eq!(
        f["close"],
        serde_json::json!({"time": f["close"]["time"], "accepted": 16, "dropped": 24,
            "overwritten": 0, "delivered": 16, "records": 23, "lost": 24})
    );
}

/// `analyze` gives each counter its three samples (fill 16, 0, 0; lost 24
/// each) and the loss once; the Chrome JSON export draws six counter
/// values; the Parquet store takes the samples as `events` rows and the
/// loss as one `losses` row.
#[test]
fn analyze_and_exports_carry_the_samples() {
    let dir = tempfile::tempdir().unwrap();
    let file = counters_file(dir.path());
    let (code, out, _) = qtrace(&["analyze", "--json"], &file);
    assert_eq!(code, Some(0), "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (&v["events"], &v["lost"]),
        (&serde_json::json!(22), &serde_json::json!(24))
    );
    assert_eq!(
        v["counters"],
        serde_json::json!([
            {"name": "qtrace:queue.fill", "count": 3, "nan": 0, "min": 0.0, "mean": 16.0 / 3.0, "max": 16.0},
            {"name": "qtrace:queue.lost", "count": 3, "nan": 0, "min": 24.0, "mean": 24.0, "max": 24.0},
        ])
    );

    let json = dir.path().join("c.json");
    let out = json.to_str().unwrap();
    let (code, _, err) = qtrace(&["convert", "--to", "chrome", "--out", out], &file);
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let counters: Vec<(String, u64)> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "C" && e["name"].as_str().unwrap().starts_with("qtrace:"))
        .map(|e| {
            let name = e["name"].as_str().unwrap().to_string();
            (name, e["args"]["events"].as_u64().unwrap())
        })
        .collect();
    let c = |n: &str, v| (format!("qtrace:queue.{n}"), v);
    assert_eq!(
        counters,
        [
            c("fill", 16),
            c("lost", 24),
            c("fill", 0),
            c("lost", 24),
            c("fill", 0),
            c("lost", 24)
        ]
    );

    let tables = dir.path().join("pq");
    let out = tables.to_str().unwrap();
    let (code, _, err) = qtrace(&["convert", "--to", "parquet", "--out", out], &file);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("22 events (24 lost, in 1 losses rows)"),
        "{err}"
    );
    let streams = crate::common::parquet_rows::table_rows(&tables, "streams");
    let row = &streams[0];
    let got: Vec<&serde_json::Value> = [
        "records",
        "events",
        "lost",
        "accepted",
        "dropped",
        "delivered",
        "verdict",
    ]
    .iter()
    .map(|k| &row[*k])
    .collect();
    let expected = serde_json::json!([23, 22, 24, 16, 24, 16, "complete"]);
    assert_eq!(got, expected.as_array().unwrap().iter().collect::<Vec<_>>());
    let events = crate::common::parquet_rows::table_rows(&tables, "events");
    assert_eq!(events.len(), 22);
}

/// `qtrace live` following the closed file (plain text: not a terminal)
/// shows each counter's current value, its three samples and their range,
/// the 22 events and the 24 lost once, then ends at the file's close.
#[test]
fn live_shows_the_current_value_of_each_queue_counter() {
    let dir = tempfile::tempdir().unwrap();
    let file = counters_file(dir.path());
    let (code, out, err) = qtrace(&["live", "--duration", "30"], &file);
    assert_eq!(code, Some(0), "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].ends_with("22 events, 24 lost"), "{out}");
    let counters: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("counter "))
        .collect();
    assert_eq!(
        counters,
        [
            "counter qtrace:queue.fill  source 4294967295  value 0 events  recent █▁▁  min 0 max 16",
            "counter qtrace:queue.lost  source 4294967295  value 24 events  recent ▁▁▁  min 24 max 24",
        ],
        "{out}"
    );
}
