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
            {"name": "qtrace:queue.fill (queue 0)", "count": 3, "nan": 0, "min": 0.0, "mean": 16.0 / 3.0, "max": 16.0},
            {"name": "qtrace:queue.lost (queue 0)", "count": 3, "nan": 0, "min": 24.0, "mean": 24.0, "max": 24.0},
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
    let c = |n: &str, v| (format!("qtrace:queue.{n} (queue 0)"), v);
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
            "counter qtrace:queue.fill (queue 0)  source 4294967295  value 0 events  recent █▁▁  min 0 max 16",
            "counter qtrace:queue.lost (queue 0)  source 4294967295  value 24 events  recent ▁▁▁  min 24 max 24",
        ],
        "{out}"
    );
}

/// Two online queues' files read together (FORMAT.md 1.3.4, *One series
/// per queue*): queue 0 sampled (16, 24), (0, 24), (0, 24) and queue 1
/// (5, 0), (0, 0), (0, 0), all from the tracer's source. Each queue's
/// samples are a series of their own, `qtrace:S (queue N)`: four rows in
/// `analyze`, four Chrome `C` series, four Perfetto counter tracks (read
/// back with Perfetto's protos), four `plot` lanes. (`live` follows one
/// file: its rows per queue are `counters_of_two_queues_are_two_rows` in
/// `cli/src/commands/live/tests.rs`.)
#[test]
fn queue_counters_of_two_queues_are_two_series() {
    use crate::common::perfetto_decode::decode;
    use crate::common::queue_counters_file::two_queues_files;

    let dir = tempfile::tempdir().unwrap();
    let [a, b] = two_queues_files(dir.path());
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_qtrace"))
            .args(args)
            .arg(&a)
            .arg(&b)
            .output()
            .unwrap();
        let err = String::from_utf8(o.stderr).unwrap();
        assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
        String::from_utf8(o.stdout).unwrap()
    };
    let series = [
        ("fill (queue 0)", [16, 0, 0]),
        ("fill (queue 1)", [5, 0, 0]),
        ("lost (queue 0)", [24, 24, 24]),
        ("lost (queue 1)", [0, 0, 0]),
    ];

    let v: serde_json::Value = serde_json::from_str(&run(&["analyze", "--json"])).unwrap();
    assert_eq!(
        (&v["events"], &v["lost"]),
        (&serde_json::json!(16 + 5 + 12), &serde_json::json!(24))
    );
    assert_eq!(
        v["counters"],
        serde_json::json!([
            {"name": "qtrace:queue.fill (queue 0)", "count": 3, "nan": 0, "min": 0.0, "mean": 16.0 / 3.0, "max": 16.0},
            {"name": "qtrace:queue.fill (queue 1)", "count": 3, "nan": 0, "min": 0.0, "mean": 5.0 / 3.0, "max": 5.0},
            {"name": "qtrace:queue.lost (queue 0)", "count": 3, "nan": 0, "min": 24.0, "mean": 24.0, "max": 24.0},
            {"name": "qtrace:queue.lost (queue 1)", "count": 3, "nan": 0, "min": 0.0, "mean": 0.0, "max": 0.0},
        ])
    );

    // Chrome: the `C` lines of each series, in order, their times left out
    // (the two queues' tasks sample at times of their own).
    let json = dir.path().join("c.json");
    run(&["convert", "--to", "chrome", "--out", json.to_str().unwrap()]);
    let text = std::fs::read_to_string(&json).unwrap();
    let lines: Vec<String> = text
        .lines()
        .filter(|l| l.contains("\"ph\":\"C\""))
        .map(|l| {
            let l = l.trim_end_matches(',');
            let ts = l.find("\"ts\":").unwrap();
            let end = ts + l[ts..].find(',').unwrap();
            format!("{}\"ts\":T{}", &l[..ts], &l[end..])
        })
        .collect();
    for (name, values) in series {
        let got: Vec<&String> = lines
            .iter()
            .filter(|l| l.contains(&format!("\"qtrace:queue.{name}\"")))
            .collect();
        let want: Vec<String> = values
            .iter()
            .map(|v| format!("{{\"ph\":\"C\",\"name\":\"qtrace:queue.{name}\",\"cat\":\"counter\",\"id\":\"4294967295\",\"ts\":T,\"pid\":1,\"tid\":4294967295,\"args\":{{\"events\":{v}}}}}"))
            .collect();
        assert_eq!(got, want.iter().collect::<Vec<_>>(), "{text}");
    }
    assert_eq!(lines.len(), 12, "{text}");

    // Perfetto: four counter tracks under the tracer's track, three values
    // each.
    let pftrace = dir.path().join("t.pftrace");
    run(&[
        "convert",
        "--to",
        "perfetto",
        "--out",
        pftrace.to_str().unwrap(),
    ]);
    if let Some(got) = decode(&pftrace, false) {
        let counters = got["counters"].as_array().unwrap();
        let labels: std::collections::BTreeSet<&str> = counters
            .iter()
            .map(|c| c[1].as_str().unwrap())
            .filter(|l| l.contains("qtrace:"))
            .collect();
        assert_eq!(
            labels.into_iter().collect::<Vec<_>>(),
            series
                .iter()
                .map(|(n, _)| format!("tracer/qtrace:queue.{n}"))
                .collect::<Vec<_>>(),
            "{got}"
        );
        for (name, values) in series {
            let label = format!("tracer/qtrace:queue.{name}");
            let track: Vec<i64> = counters
                .iter()
                .filter(|c| c[1] == label.as_str())
                .map(|c| c[2].as_i64().unwrap())
                .collect();
            assert_eq!(track, values, "{label}");
            assert_eq!(got["counter_units"][&label], "events", "{label}");
        }
    }

    // plot: a lane per series, labelled with its name, three records each.
    let svg = dir.path().join("t.svg");
    run(&["plot", "--out", svg.to_str().unwrap()]);
    let svg = std::fs::read_to_string(&svg).unwrap();
    let lanes: Vec<&str> = svg
        .lines()
        .filter(|l| l.starts_with(" <path class=\"step\"") || l.contains("class=\"step\""))
        .filter_map(|l| l.split("<title>").nth(1)?.split("</title>").next())
        .collect();
    assert_eq!(
        lanes,
        series
            .iter()
            .map(|(n, _)| format!("qtrace:queue.{n} on source 4294967295: 3 records"))
            .collect::<Vec<_>>(),
        "{svg}"
    );
}
