//! `qtrace stats` over several files: the text total line counts the
//! unclosed-stream marks (FORMAT.md 1.5) of all files, in `dump`'s words,
//! as `--json`'s total does. Before, the text total left them out.

use std::path::PathBuf;
use std::process::Command;

use qtrace::classes::{user, Catalog};
use qtrace::clock::{Clock, ManualClock};
use qtrace::wire::unclosed_mark;
use qtrace::wire::{create_trace_file, QueueTotals, TraceHeader};
use qtrace::Event;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("qtrace-stats-total-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A closed file of `events` user0 events followed by one unclosed-stream
/// mark per sender of `senders` (as `qtrace recv` writes them).
fn write(path: &std::path::Path, events: u64, senders: &[u32]) {
    let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)))
        .with_close_run(true);
    let mut w = create_trace_file(path, &header).unwrap();
    for i in 0..events {
        w.write_event(&Event::new(10 + i, user::USER0, 1, [i, 0]))
            .unwrap();
    }
    for &s in senders {
        w.write_event(&unclosed_mark(10 + events, s, events))
            .unwrap();
    }
    let totals = QueueTotals {
        accepted: events,
        dropped: 0,
        overwritten: 0,
        delivered: events,
    };
    w.finish_with_close(20 + events, totals).unwrap();
}

fn stats(args: &[&str], files: &[PathBuf]) -> (Option<i32>, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .arg("stats")
        .args(args)
        .args(files)
        .output()
        .unwrap();
    (o.status.code(), String::from_utf8(o.stdout).unwrap())
}

#[test]
fn the_text_total_counts_unclosed_streams_of_every_file() {
    let d = dir("unclosed");
    let files = [d.join("a.qtr"), d.join("b.qtr"), d.join("c.qtr")];
    write(&files[0], 3, &[7]);
    write(&files[1], 2, &[8, 9]);
    write(&files[2], 1, &[]);
    let (code, text) = stats(&[], &files);
    assert_eq!(code, Some(3), "unclosed streams exit 3: {text}");
    let total = text.lines().last().unwrap();
    assert_eq!(
        total,
        "total: 6 events, 0 lost in 0 hoops records, 3 files (3 complete, 0 cut short or damaged, 0 unknown); \
         3 sender streams ended without a close (events after the last datagram of each lost without a count)"
    );
    // The same count as the JSON total.
    let (_, json) = stats(&["--json"], &files);
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["total"]["unclosed_streams"], 3);
    // Files without marks keep the total line as it was.
    let (code, text) = stats(
        &[],
        &files[2..]
            .iter()
            .chain(&files[2..])
            .cloned()
            .collect::<Vec<_>>(),
    );
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(
        text.lines().last().unwrap(),
        "total: 2 events, 0 lost in 0 hoops records, 2 files (2 complete, 0 cut short or damaged, 0 unknown)"
    );
    std::fs::remove_dir_all(&d).unwrap();
}
