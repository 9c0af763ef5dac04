//! End-to-end tests of the converters: golden files for a small trace in both
//! formats, JSON validity and B/E nesting, and babeltrace2 reading the CTF
//! output (skipped, with a message, when babeltrace2 is not installed).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use qtrace::classes::{lowlevel, semaphore, system, tracer, user, Catalog, ClassSpec};
use qtrace::export::{self, chrome::ChromeWriter, ctf::CtfWriter, EventSink};
use qtrace::Event;

/// The clock origin of the small trace: 2024-01-01T00:00:00.5Z.
const ORIGIN: u64 = 1_704_067_200_500_000_000;

fn catalog() -> Catalog {
    let mut c = Catalog::builtin();
    c.define(ClassSpec::new("net", "network stack").event(
        "rx",
        "a packet arrived",
        &["len", "port"],
    ))
    .unwrap();
    c
}

/// A small trace: two CPUs scheduling tasks, an interrupt, a semaphore held
/// across a loss, another taken without blocking, user and user-defined
/// events, and two hoops records.
fn small_trace(catalog: &Catalog) -> Vec<Event> {
    let rx = catalog.event_by_name("net:rx").unwrap().id;
    vec![
        Event::new(1_000, system::SCHEDULE, 0, [1, 0]),
        Event::new(1_500, system::SCHEDULE, 1, [2, 0]),
        Event::new(2_000, semaphore::WAIT, 0, [1, 5]),
        Event::new(2_250, lowlevel::INTERRUPT, 1, [14, 0]),
        Event::new(2_600, user::USER0, 1, [77, 0]),
        Event::new(3_000, tracer::HOOPS, u32::MAX, [4, 0]),
        Event::new(3_100, rx, 1, [1500, 80]),
        Event::new(4_000, semaphore::SIGNAL, 0, [1, 5]),
        Event::new(5_000, system::SCHEDULE, 0, [3, 0]),
        Event::new(5_200, semaphore::WAITNB, 0, [3, 6]),
        Event::new(5_300, semaphore::SIGNAL, 0, [3, 6]),
        Event::new(5_500, tracer::HOOPS, u32::MAX, [2, 1]),
        Event::new(6_000, system::SCHEDULE, 1, [1, 0]),
        Event::new(7_000, system::ENDCYCLE, 1, [1, 0]),
    ]
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Compares `got` with the golden file, or rewrites it when QTRACE_BLESS=1.
fn check_golden(name: &str, got: &[u8]) {
    let path = golden_dir().join(name);
    if std::env::var_os("QTRACE_BLESS").is_some() {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, got).unwrap();
        return;
    }
    let want = fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run with QTRACE_BLESS=1 to create it)",
            path.display()
        )
    });
    if got != want.as_slice() {
        panic!(
            "{} differs from the converter's output:\n--- got ---\n{}\n--- want ---\n{}",
            path.display(),
            String::from_utf8_lossy(got),
            String::from_utf8_lossy(&want)
        );
    }
}

fn chrome_json(catalog: &Catalog, events: &[Event]) -> (export::ConvertStats, Vec<u8>) {
    let mut out = Vec::new();
    let stats = export::convert(
        ChromeWriter::new(catalog, ORIGIN, &mut out).unwrap(),
        events.iter().copied(),
    )
    .unwrap();
    (stats, out)
}

#[test]
fn chrome_golden() {
    let catalog = catalog();
    let (stats, out) = chrome_json(&catalog, &small_trace(&catalog));
    assert_eq!(stats.events, 12);
    assert_eq!((stats.hoops, stats.lost), (2, 6));
    check_golden("small.json", &out);
}

/// Parses the JSON and checks, per (pid, tid), that the duration events nest:
/// B/E events form a well-nested sequence (each E closes the innermost open B
/// of the same name, at a time no earlier than it, nothing left open), and any
/// two X events are disjoint or one contains the other. Returns the number of
/// B/E pairs plus X events.
fn assert_nested(json: &[u8]) -> usize {
    let doc: serde_json::Value = serde_json::from_slice(json).expect("the output is JSON");
    let events = doc["traceEvents"]
        .as_array()
        .expect("traceEvents is an array");
    let mut stacks: BTreeMap<(u64, u64), Vec<(String, f64)>> = BTreeMap::new();
    let mut last: BTreeMap<(u64, u64), f64> = BTreeMap::new();
    let mut complete: BTreeMap<(u64, u64), Vec<(u64, u64)>> = BTreeMap::new();
    let mut slices = 0;
    // Exact nanoseconds from "ts" (µs with three decimals).
    let ns = |v: &serde_json::Value| (v.as_f64().unwrap() * 1000.0).round() as u64;
    for e in events {
        let ph = e["ph"].as_str().expect("every event has ph");
        if ph != "B" && ph != "E" && ph != "X" {
            continue;
        }
        let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        if ph == "X" {
            let (ts, dur) = (ns(&e["ts"]), ns(&e["dur"]));
            complete.entry(key).or_default().push((ts, ts + dur));
            slices += 1;
            continue;
        }
        let ts = e["ts"].as_f64().unwrap();
        let name = e["name"].as_str().unwrap().to_string();
        let prev = last.insert(key, ts).unwrap_or(f64::MIN);
        assert!(ts >= prev, "time goes back on {key:?} at {e}");
        let stack = stacks.entry(key).or_default();
        if ph == "B" {
            stack.push((name, ts));
        } else {
            let (open, begin) = stack.pop().unwrap_or_else(|| panic!("E without B: {e}"));
            assert_eq!(open, name, "E closes another slice than the innermost: {e}");
            assert!(ts >= begin);
            slices += 1;
        }
    }
    for (key, stack) in stacks {
        assert!(stack.is_empty(), "{key:?} left open: {stack:?}");
    }
    for (key, mut spans) in complete {
        assert!(!last.contains_key(&key), "X and B/E share {key:?}");
        // Sorted by start, longest first: each span must fit in the innermost
        // enclosing one still open, or start after it ends.
        spans.sort_by_key(|&(b, e)| (b, std::cmp::Reverse(e)));
        let mut open: Vec<(u64, u64)> = Vec::new();
        for (b, e) in spans {
            while open.last().is_some_and(|&(_, oe)| oe <= b) {
                open.pop();
            }
            if let Some(&(ob, oe)) = open.last() {
                assert!(
                    ob <= b && e <= oe,
                    "{key:?}: [{b}, {e}] overlaps [{ob}, {oe}]"
                );
            }
            open.push((b, e));
        }
    }
    slices
}

#[test]
fn chrome_nests_and_names_threads() {
    let catalog = catalog();
    let (stats, out) = chrome_json(&catalog, &small_trace(&catalog));
    // Tasks 1, 2, 3, 1 on the CPUs, irq 14, task 1 holding sem 5, task 3 sem 6.
    assert_eq!(assert_nested(&out), 7);
    assert_eq!(stats.slices, 7);
    let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let threads: Vec<(u64, u64, String)> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| {
            (
                e["pid"].as_u64().unwrap(),
                e["tid"].as_u64().unwrap(),
                e["args"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        threads,
        [
            (1, 0, "source 0".to_string()),
            (1, 1, "source 1".to_string()),
            (2, 1, "task 1 sem 5".to_string()),
            (1, u32::MAX as u64, "tracer".to_string()),
            (2, 2, "task 3 sem 6".to_string()),
        ]
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// Whatever the events (ids, sources, times, unsorted), the JSON parses and
    /// every B/E pair nests.
    #[test]
    fn chrome_always_nests(raw in proptest::collection::vec(
        (0u64..100, 0u16..0x19, 0u32..3, 0u64..3, 0u64..3), 0..60)
    ) {
        let catalog = Catalog::builtin();
        let events: Vec<Event> = raw
            .iter()
            .map(|&(t, id, src, a0, a1)| Event::new(t * 100, qtrace::EventId(id), src, [a0, a1]))
            .collect();
        let (stats, out) = chrome_json(&catalog, &events);
        let pairs = assert_nested(&out);
        proptest::prop_assert_eq!(pairs as u64, stats.slices);
        let hoops = events.iter().filter(|e| e.id == tracer::HOOPS).count() as u64;
        proptest::prop_assert_eq!(stats.events + stats.hoops, events.len() as u64);
        proptest::prop_assert_eq!(stats.hoops, hoops);
    }
}

fn write_ctf(dir: &Path, catalog: &Catalog, events: &[Event]) -> export::ConvertStats {
    let mut w = CtfWriter::create(dir, catalog, ORIGIN).unwrap();
    for e in events {
        w.push(e).unwrap();
    }
    w.finish().unwrap()
}

#[test]
fn ctf_golden() {
    let catalog = catalog();
    let dir = tempfile::tempdir().unwrap();
    let stats = write_ctf(dir.path(), &catalog, &small_trace(&catalog));
    assert_eq!((stats.events, stats.sources, stats.lost), (12, 3, 6));
    let mut names: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["metadata", "stream-0", "stream-1", "stream-tracer"]);
    for name in names {
        check_golden(
            &format!("small.ctf/{name}"),
            &fs::read(dir.path().join(&name)).unwrap(),
        );
    }
}

/// What babeltrace2 says about a CTF directory: (event messages counted by
/// `sink.utils.counter`, lines printed by the default text sink, the `N` of
/// every "Tracer discarded N events" warning). `None` when babeltrace2 is not
/// installed.
fn babeltrace2(dir: &Path) -> Option<(u64, u64, Vec<u64>)> {
    let counter = match Command::new("babeltrace2")
        .arg(dir)
        .arg("--component=sink.utils.counter")
        .output()
    {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => panic!("cannot run babeltrace2: {e}"),
    };
    let stdout = String::from_utf8_lossy(&counter.stdout);
    let stderr = String::from_utf8_lossy(&counter.stderr);
    // babeltrace2 can exit 0 after a failure: check what it printed too.
    assert!(
        counter.status.success() && !stderr.contains("ERROR") && !stderr.contains("CAUSED BY"),
        "babeltrace2 failed on {}:\n{stdout}\n{stderr}",
        dir.display()
    );
    let events = stdout
        .lines()
        .rev() // the counter also prints running totals every 10 000 messages
        .find_map(|l| l.trim().strip_suffix(" Event messages"))
        .unwrap_or_else(|| panic!("no event count in babeltrace2's output:\n{stdout}\n{stderr}"))
        .trim()
        .parse()
        .unwrap();

    let text = Command::new("babeltrace2").arg(dir).output().unwrap();
    let stderr = String::from_utf8_lossy(&text.stderr);
    assert!(
        text.status.success() && !stderr.contains("ERROR"),
        "babeltrace2 failed on {}:\n{stderr}",
        dir.display()
    );
    let lines = text
        .stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .count() as u64;
    let discarded = stderr
        .lines()
        .filter_map(|l| l.split("Tracer discarded ").nth(1))
        .map(|rest| rest.split(' ').next().unwrap().parse().unwrap())
        .collect();
    assert!(
        !stderr.contains("may have discarded"),
        "a loss without a count:\n{stderr}"
    );
    Some((events, lines, discarded))
}

use crate::common::babeltrace2;
use babeltrace2::skip_without_babeltrace2;

#[test]
fn babeltrace2_reads_the_small_trace() {
    let catalog = catalog();
    let dir = tempfile::tempdir().unwrap();
    let stats = write_ctf(dir.path(), &catalog, &small_trace(&catalog));
    let Some((events, lines, discarded)) = babeltrace2(dir.path()) else {
        return skip_without_babeltrace2();
    };
    assert_eq!(events, stats.events);
    assert_eq!(lines, 12);
    assert_eq!(discarded, [4, 2]);
}

#[test]
fn babeltrace2_counts_many_packets_and_losses() {
    // Names that are not TSDL identifiers must still work.
    let mut catalog = Catalog::builtin();
    let odd = catalog
        .define(ClassSpec::new("odd-class", "awkward names").event(
            "ev.1",
            "x",
            &["struct", "9-lives"],
        ))
        .unwrap()
        .event("ev.1")
        .unwrap();
    let mut events = Vec::new();
    let mut lost = Vec::new();
    for i in 0..20_000u64 {
        let id = [system::SCHEDULE, user::USER3, odd, lowlevel::INTERRUPT][(i % 4) as usize];
        events.push(Event::new(i * 10, id, (i % 5) as u32, [i, i * 2]));
        if i % 3_000 == 2_999 {
            let n = i / 1000 + 1;
            lost.push(n);
            events.push(Event::new(i * 10 + 5, tracer::HOOPS, u32::MAX, [n, 0]));
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let options = qtrace::export::ctf::CtfOptions {
        packet_bytes: 4096,
        ..Default::default()
    };
    let mut w = CtfWriter::with_options(dir.path(), &catalog, ORIGIN, options).unwrap();
    for e in &events {
        w.push(e).unwrap();
    }
    let stats = w.finish().unwrap();
    assert!(stats.packets > 100, "{stats:?}");
    assert_eq!(stats.lost, lost.iter().sum::<u64>());
    let Some((count, lines, discarded)) = babeltrace2(dir.path()) else {
        return skip_without_babeltrace2();
    };
    // Hoops records are not events in CTF: they are the discarded counts.
    let qtrace_events = (events.len() - lost.len()) as u64;
    assert_eq!(stats.events, qtrace_events);
    assert_eq!(count, qtrace_events);
    assert_eq!(lines, qtrace_events);
    assert_eq!(discarded, lost);
}

#[test]
fn babeltrace2_reads_timestamps_past_what_it_can_place() {
    // Corrupt input can hold any 64-bit time. babeltrace2 keeps times as
    // signed ns since the epoch and refused the whole stream ("Failed to index
    // CTF stream file") when one was later than that; such times are now
    // lowered to the latest time it can place and counted as clamped (the
    // value is checked by the unit test ctf::tests::max_timestamp_*).
    let catalog = Catalog::builtin();
    let events = [
        Event::new(10, system::SCHEDULE, 1, [1, 0]),
        Event::new(u64::MAX - 5, system::SCHEDULE, 1, [2, 0]),
        Event::new(u64::MAX, system::SCHEDULE, 1, [3, 0]),
    ];
    let dir = tempfile::tempdir().unwrap();
    let stats = write_ctf(dir.path(), &catalog, &events);
    assert_eq!((stats.events, stats.clamped), (3, 2));
    let Some((count, lines, discarded)) = babeltrace2(dir.path()) else {
        return skip_without_babeltrace2();
    };
    assert_eq!((count, lines, discarded), (3, 3, vec![]));
    // An origin past what a reader can place keeps the trace readable too.
    let dir = tempfile::tempdir().unwrap();
    let mut w = CtfWriter::create(dir.path(), &catalog, u64::MAX).unwrap();
    w.push(&events[0]).unwrap();
    w.push(&events[2]).unwrap();
    assert_eq!(w.finish().unwrap().clamped, 1);
    assert_eq!(babeltrace2(dir.path()).map(|b| b.0), Some(2));
}
