//! `qtrace convert --to perfetto` on two files merged in time order, whole
//! and `--split` in time slices, decoded with Perfetto's own schema (skipped
//! with a message when python3 or the `perfetto` package is missing, unless
//! `QTRACE_REQUIRE_PERFETTO` is set; `scripts/test.sh` installs it) and with
//! the independent decoder of the library's Perfetto tests.

use std::path::Path;
use std::process::{Command, Output};

use qtrace::classes::{system, tracer, user, Catalog};
use qtrace::clock::{Clock, ManualClock};
use qtrace::wire::{create_trace_file, TraceHeader};
use qtrace::Event;
use serde_json::json;

use crate::common::perfetto_decode;
use perfetto_decode::{decode, decode_slices, mini};

use crate::common::success;
use success::assert_success;

/// Runs `qtrace convert --to perfetto EXTRA… INPUTS… --out OUT`.
fn to_perfetto(extra: &[&str], inputs: &[&Path], out: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(["convert", "--to", "perfetto"])
        .args(extra)
        .args(inputs)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap()
}

#[test]
fn cli_converts_merged_files() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, origin: u64, events: &[Event]| {
        let path = dir.path().join(name);
        let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)))
            .with_clock("manual", 1_000_000_000, origin)
            .unwrap();
        let mut w = create_trace_file(&path, &header).unwrap();
        w.write_events(events).unwrap();
        w.finish().unwrap();
        path
    };
    let origin = 1_700_000_000_000_000_000;
    let a = write(
        "a.qtr",
        origin,
        &[
            Event::new(100, system::SCHEDULE, 0, [1, 0]),
            Event::new(300, tracer::HOOPS, u32::MAX, [9, 0]),
        ],
    );
    let b = write(
        "b.qtr",
        origin + 100,
        &[Event::new(100, user::USER1, 1, [11, 0])],
    );
    let out = dir.path().join("out.pftrace");
    let run = to_perfetto(&[], &[&a, &b], &out);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert_eq!(
        stderr.trim(),
        format!(
            "qtrace convert: 2 events (9 lost, in 1 hoops records) from 3 sources into {}",
            out.display()
        )
    );
    let Some(got) = decode(&out, true) else {
        return;
    };
    let times: Vec<u64> = got["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e[0].as_u64().unwrap())
        .collect();
    assert_eq!(times, [100, 200, 300]);
    assert_eq!(got["realtime_origin"], json!(origin));

    // --split: one standalone trace per 150 ns slice (events at 100, 200, 300).
    let run = to_perfetto(&["--split", "150ns"], &[&a, &b], &out);
    assert_success(&run);
    // (slice begins, instants) per part: the schedule at 100 is the begin of
    // `task 1` on source 0 (with `source 0` on task 1's track), the others
    // are instants.
    let mut parts = Vec::new();
    for part in ["out-0000.pftrace", "out-0001.pftrace", "out-0002.pftrace"] {
        let bytes = std::fs::read(dir.path().join(part)).unwrap();
        let (slices, instants, _) = decode_slices(&bytes);
        parts.push((slices.iter().filter(|s| s.3 == 1).count(), instants));
    }
    assert_eq!(parts, [(2, 0), (0, 1), (0, 1)]);
}

/// `--uncompressed` writes the same packets without Perfetto's
/// `compressed_packets` chunks; with `--to chrome` it is a usage error.
#[test]
fn uncompressed_writes_the_same_packets_without_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.qtr");
    let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)));
    let mut w = create_trace_file(&path, &header).unwrap();
    let events: Vec<Event> = (0..5_000u64)
        .map(|i| Event::new(i * 10, user::USER1, (i % 2) as u32, [i, 0]))
        .collect();
    w.write_events(&events).unwrap();
    w.finish().unwrap();
    let convert = |out: &str, extra: &[&str]| {
        let out = dir.path().join(out);
        let run = to_perfetto(extra, &[&path], &out);
        assert_success(&run);
        std::fs::read(out).unwrap()
    };
    let zipped = convert("z.pftrace", &[]);
    let plain = convert("p.pftrace", &["--uncompressed"]);
    let (zipped_packets, chunks) = mini::packets(&zipped);
    let (plain_packets, none) = mini::packets(&plain);
    assert!(chunks >= 1, "the default output is in compressed chunks");
    assert_eq!(none, 0, "--uncompressed writes no chunk");
    assert_eq!(zipped_packets, plain_packets);
    assert!(plain.len() > zipped.len());

    let run = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(["convert", "--to", "chrome", "--uncompressed"])
        .arg(&path)
        .arg("--out")
        .arg(dir.path().join("c.json"))
        .output()
        .unwrap();
    assert!(!run.status.success());
    assert!(
        String::from_utf8_lossy(&run.stderr)
            .contains("--uncompressed applies to --to perfetto only"),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

/// The output is the same bytes on every run, although chunks are encoded
/// per sequence and deflated on worker threads whose timing differs from
/// run to run: a trace of four sources (tasks moving between them, times
/// that tie across sources) spanning dozens of chunks, converted three
/// times, compressed and not.
#[test]
fn the_same_input_gives_the_same_bytes_every_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.qtr");
    let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)));
    let mut w = create_trace_file(&path, &header).unwrap();
    let events: Vec<Event> = (0..200_000u64)
        .map(|i| {
            let source = (i % 4) as u32;
            // Four events a time step: every time ties across the sources.
            let t = i / 4 * 50;
            match i % 7 {
                0 => Event::new(t, system::SCHEDULE, source, [i % 5, 0]),
                _ => Event::new(t, user::USER1, source, [i, i / 3]),
            }
        })
        .collect();
    w.write_events(&events).unwrap();
    w.finish().unwrap();
    for extra in [&[][..], &["--uncompressed"][..]] {
        let runs: Vec<Vec<u8>> = (0..3)
            .map(|k| {
                let out = dir.path().join(format!("p{k}.pftrace"));
                assert_success(&to_perfetto(extra, &[&path], &out));
                std::fs::read(out).unwrap()
            })
            .collect();
        assert!(runs[0] == runs[1] && runs[1] == runs[2], "{extra:?}");
        if extra.is_empty() {
            assert!(mini::chunks(&runs[0]).len() >= 20, "many chunks");
        }
        // Every user1 an instant (the schedules are slice begins).
        let (_, instants, _) = decode_slices(&runs[0]);
        assert_eq!(instants, 200_000 - 28_572);
    }
}

/// `convert` skips its names pass when no name record names a subject used
/// before it (the writer learning names as they come writes the same
/// bytes), and converts again after the names pass when one does: either
/// way the file is the one the library writes given every name in advance.
/// Four layouts of one trace: names first (as a saved file's names
/// prologue), names after the events they name (that first try is
/// dropped), a task named in the middle before it first runs, and no names.
#[test]
fn names_before_or_after_the_events_give_the_file_of_names_known_in_advance() {
    use qtrace::combine::{Names, Run, NAME_SOURCE, NAME_TASK};
    use qtrace::export::{self, perfetto::PerfettoWriter};

    let dir = tempfile::tempdir().unwrap();
    let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)));
    let body: Vec<Event> = (0..20_000u64)
        .map(|i| {
            let source = (i % 2) as u32;
            match i % 5 {
                0 => Event::new(i * 10, system::SCHEDULE, source, [3 + i % 3, 0]),
                _ => Event::new(i * 10, user::USER1, source, [i, 0]),
            }
        })
        .collect();
    let names = |t: u64| {
        let mut records = Vec::new();
        for run in [
            Run::name(t, 0, NAME_SOURCE, 0, b"cpu0"),
            Run::name(t, 1, NAME_TASK, 3, b"idle"),
        ] {
            records.extend((0..run.len()).map(|i| run.record(i)));
        }
        records
    };
    let first: Vec<Event> = names(0).into_iter().chain(body.iter().copied()).collect();
    let mut late = body.clone();
    late.splice(15_000..15_000, names(150_000));
    // A task named in the middle of the trace, before it first runs: no
    // restart needed, the same bytes.
    let mut fresh = body.clone();
    fresh[18_000] = Event::new(180_000, system::SCHEDULE, 0, [9, 0]);
    let run = Run::name(100_000, 1, NAME_TASK, 9, b"fresh");
    fresh.splice(10_000..10_000, (0..run.len()).map(|i| run.record(i)));
    for (layout, records) in [
        ("first", &first),
        ("late", &late),
        ("fresh", &fresh),
        ("none", &body),
    ] {
        let path = dir.path().join(format!("{layout}.qtr"));
        let mut w = create_trace_file(&path, &header).unwrap();
        w.write_events(records).unwrap();
        w.finish().unwrap();
        let base = qtrace::reader::MergedReader::open([&path])
            .unwrap()
            .base_unix_ns();
        for extra in [&[][..], &["--uncompressed"][..]] {
            let out = dir.path().join(format!("{layout}.pftrace"));
            assert_success(&to_perfetto(extra, &[&path], &out));
            let mut want = Vec::new();
            let w = PerfettoWriter::new(&Catalog::builtin(), base, &mut want)
                .unwrap()
                .with_names(Names::gather(records.iter().copied()))
                .with_compression(extra.is_empty());
            export::convert(w, records.iter().copied()).unwrap();
            let got = std::fs::read(&out).unwrap();
            assert!(got == want, "{layout} {extra:?}");
            if (layout == "first" || layout == "late") && !extra.is_empty() {
                // Named from the first track on, also when the name came late.
                assert!(got.windows(11).any(|w| w == b"task 3 idle"), "{layout}");
                assert!(got.windows(13).any(|w| w == b"source 0 cpu0"), "{layout}");
            }
            if layout == "fresh" && !extra.is_empty() {
                assert!(got.windows(12).any(|w| w == b"task 9 fresh"));
            }
        }
    }
}
