//! Issue 12, item 5, for the command: `qtrace stats`, `dump` and `convert`
//! tell a complete file from a cut one and an old one (written before close
//! runs), with the exit statuses `--help` documents; `dump` prints FORMAT.md's
//! closed example exactly as FORMAT.md shows it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use qtrace::classes::user;
use qtrace::clock::ManualClock;

use crate::common::default_queues;
use crate::common::manual_tracer;
use crate::common::temp_dirs;
use default_queues::fixed_queue_32;
use manual_tracer::manual_tracer as tracer;

fn dir(name: &str) -> PathBuf {
    temp_dirs::fresh_dir("close-cli", name)
}

fn qtrace(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(args)
        .output()
        .expect("run qtrace")
}

#[test]
fn the_cli_tells_complete_cut_and_unknown_files_apart() {
    let d = dir("cli");
    let clock = ManualClock::new(0);
    let t = tracer(&d, &clock);
    let q = fixed_queue_32(&t, 3);
    t.assign_event(user::USER0, q).unwrap();
    t.activate().unwrap();
    for i in 0..5 {
        clock.advance(1000);
        t.log_event(user::USER0, [i, 0]);
    }
    t.shutdown().unwrap();
    let complete = d.join("queue0-fixed.qtr");
    let bytes = std::fs::read(&complete).unwrap();
    // Cut: the close run gone (as after a kill between events and close).
    let cut = d.join("cut.qtr");
    std::fs::write(&cut, &bytes[..bytes.len() - 96]).unwrap();
    // Old: the same records with flag bit 0 cleared and no close run.
    let mut old_bytes = bytes[..bytes.len() - 96].to_vec();
    old_bytes[15] = 0;
    let old = d.join("old.qtr");
    std::fs::write(&old, &old_bytes).unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();

    let o = qtrace(&["stats", "--json", &s(&complete), &s(&cut), &s(&old)]);
    assert_eq!(o.status.code(), Some(3), "a cut file: status 3");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let files = v["files"].as_array().unwrap();
    let row = |i: usize| {
        (
            files[i]["events"].as_u64().unwrap(),
            files[i]["lost"].as_u64().unwrap(),
            files[i]["complete"].clone(),
            files[i]["end"].as_str().unwrap().to_string(),
        )
    };
    assert_eq!(
        row(0),
        (3, 2, serde_json::Value::Bool(true), "complete".into())
    );
    assert_eq!(files[0]["close"]["accepted"], 3);
    assert_eq!(files[0]["close"]["dropped"], 2);
    assert_eq!(files[0]["close"]["delivered"], 3);
    assert_eq!(row(1), (3, 2, serde_json::Value::Bool(false), "cut".into()));
    assert_eq!(files[1]["close"], serde_json::Value::Null);
    assert_eq!(row(2), (3, 2, serde_json::Value::Null, "unknown".into()));
    assert_eq!(v["total"]["complete"], 1);
    assert_eq!(v["total"]["cut"], 1);
    assert_eq!(v["total"]["unknown"], 1);

    // Text: words.
    let o = qtrace(&["stats", &s(&complete)]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(
        out.contains(
            "  end: complete (closed; the file holds 4 records; its queue had then accepted 3, dropped 2, overwritten 0, delivered 3)\n"
        ),
        "{out}"
    );
    let o = qtrace(&["stats", &s(&cut)]);
    assert_eq!(o.status.code(), Some(3));
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(
        out.contains("  end: CUT SHORT: no close record after 4 records; 2 events known lost before the cut, events after it lost without a count\n"),
        "{out}"
    );
    let o = qtrace(&["stats", &s(&old)]);
    assert_eq!(o.status.code(), Some(0), "unknown is not an error");
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(
        out.contains("  end: completeness unknown (written before close records)\n"),
        "{out}"
    );

    // Dump: one END line after the events.
    let o = qtrace(&["dump", &s(&complete)]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 5, "{out}");
    assert_eq!(
        lines[4],
        "         0.000005000  [END: complete; the file holds 4 records; its queue had then accepted 3, dropped 2, overwritten 0, delivered 3]"
    );
    let o = qtrace(&["dump", &s(&cut)]);
    assert_eq!(o.status.code(), Some(3));
    let out = String::from_utf8(o.stdout).unwrap();
    assert_eq!(
        out.lines().last().unwrap(),
        "                      [END: CUT SHORT after 4 records; 2 events known lost before the cut, events after it lost without a count]"
    );
    let o = qtrace(&["dump", "--json", &s(&cut)]);
    let last: serde_json::Value =
        serde_json::from_str(String::from_utf8(o.stdout).unwrap().lines().last().unwrap()).unwrap();
    assert_eq!(last["end"], "cut");
    assert_eq!(last["complete"], false);
    assert_eq!(
        (last["records"].as_u64(), last["lost"].as_u64()),
        (Some(4), Some(2))
    );
    let o = qtrace(&["dump", &s(&old)]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(String::from_utf8(o.stdout).unwrap().lines().count(), 4);

    // Convert: converts the events of a cut file and says so with status 3.
    let chrome = d.join("cut.json");
    let o = qtrace(&["convert", "--to", "chrome", "--out", &s(&chrome), &s(&cut)]);
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(err.contains("CUT SHORT"), "{err}");
    let o = qtrace(&[
        "convert",
        "--to",
        "chrome",
        "--out",
        &s(&chrome),
        &s(&complete),
    ]);
    assert_eq!(o.status.code(), Some(0));

    // Help names the status.
    let o = qtrace(&["stats", "--help"]);
    assert!(String::from_utf8(o.stdout)
        .unwrap()
        .contains("3 when a file is cut short"));
    std::fs::remove_dir_all(&d).unwrap();
}

/// The hex dump after `<!-- example:closed -->` in FORMAT.md, and the text
/// block after the next "prints it as:".
fn closed_example() -> (Vec<u8>, String) {
    let md = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../FORMAT.md")).unwrap();
    let marker = "<!-- example:closed -->";
    let body = &md[md.find(marker).unwrap() + marker.len()..];
    let hex = &body[body.find("```text").unwrap() + 7..];
    let hex = &hex[..hex.find("```").unwrap()];
    let mut bytes = Vec::new();
    for line in hex.lines().filter(|l| !l.trim().is_empty()) {
        let (_, h) = line.split_once(':').unwrap();
        bytes.extend(
            h.split_whitespace()
                .map(|b| u8::from_str_radix(b, 16).unwrap()),
        );
    }
    let text = &body[body.find("prints it as:").unwrap()..];
    let text = &text[text.find("```text").unwrap() + 8..];
    (bytes, text[..text.find("```").unwrap()].to_string())
}

#[test]
fn dump_prints_the_format_md_closed_example_as_documented() {
    let d = dir("example");
    std::fs::create_dir_all(&d).unwrap();
    let (bytes, text) = closed_example();
    let path = d.join("closed.qtr");
    std::fs::write(&path, &bytes).unwrap();
    let o = qtrace(&["dump", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(String::from_utf8(o.stdout).unwrap(), text);
    // Cut anywhere inside the close run: status 3 and a CUT SHORT line,
    // inside a record as at a record boundary (one kind of damage, one
    // status: FORMAT.md, "Exit statuses").
    std::fs::write(&path, &bytes[..bytes.len() - 40]).unwrap();
    for cmd in ["dump", "stats", "analyze"] {
        let o = qtrace(&[cmd, path.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(3), "{cmd}: a cut inside a record");
        let err = String::from_utf8(o.stderr).unwrap();
        assert!(
            err.contains("truncated at byte 248: the record needs 32 bytes but only 24 remain"),
            "{cmd}: {err}"
        );
    }
    let o = qtrace(&["dump", path.to_str().unwrap()]);
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(
        out.lines().last().unwrap().ends_with("[END: CUT SHORT after 3 records; 3 events known lost before the cut, events after it lost without a count]"),
        "{out}"
    );
    let o = qtrace(&["stats", path.to_str().unwrap()]);
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(!out.contains("damaged"), "a cut is not damage: {out}");
    let chrome = d.join("cut.json");
    let o = qtrace(&[
        "convert",
        "--to",
        "chrome",
        "--out",
        chrome.to_str().unwrap(),
        path.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(3));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (v["damaged"].clone(), v["incomplete"].clone()),
        (0.into(), 1.into())
    );
    // A close run whose part 3 disagrees (records = 5, not 2): DAMAGED,
    // exit status 2 for every command that reads it.
    let mut mismatch = bytes.clone();
    mismatch[0x12f] = 5;
    std::fs::write(&path, &mismatch).unwrap();
    for cmd in ["dump", "stats", "analyze"] {
        let o = qtrace(&[cmd, path.to_str().unwrap()]);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{cmd}: a close record that disagrees"
        );
    }
    let o = qtrace(&["dump", path.to_str().unwrap()]);
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(
        out.lines().last().unwrap().contains("[END: DAMAGED"),
        "{out}"
    );
    // Damage (a record size that is not the format's) still exits 2.
    let mut bad = bytes.clone();
    bad[12] ^= 0xff;
    std::fs::write(&path, &bad).unwrap();
    let o = qtrace(&["dump", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    std::fs::write(&path, &bytes[..bytes.len() - 32]).unwrap();
    let o = qtrace(&["dump", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3));
    let out = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    // The two close-run records left are stray control records.
    assert_eq!(lines.len(), 5, "{out}");
    assert!(
        lines[2].contains("[CONTROL RECORD flags=0x8001 args=1,3]"),
        "{out}"
    );
    assert!(
        lines[3].contains("[CONTROL RECORD flags=0x8002 args=0,1]"),
        "{out}"
    );
    assert!(
        lines[4].ends_with("[END: CUT SHORT after 4 records; 3 events known lost before the cut, events after it lost without a count]"),
        "{out}"
    );
    let o = qtrace(&["dump", "--json", path.to_str().unwrap()]);
    let out = String::from_utf8(o.stdout).unwrap();
    let rows: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 5);
    assert_eq!(
        (rows[2]["control"].clone(), rows[2]["flags"].clone()),
        (true.into(), 0x8001.into())
    );
    assert_eq!(rows[1].get("control"), None);
    assert_eq!(rows[4]["end"], "cut");
    std::fs::remove_dir_all(&d).unwrap();
}
