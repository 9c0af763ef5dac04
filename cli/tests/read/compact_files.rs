//! Compact trace files (FORMAT.md 1.11, file version 2) through the command:
//! `dump`, `stats`, `analyze` and `convert` print exactly what they print for
//! the same trace in 32-byte records (here: an online queue's rotation
//! chunks, with names, combine runs and a circular queue's losses), and a
//! cut compact file is reported as cut short with the events before the cut.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use qtrace::classes::{system, user};
use qtrace::clock::{Clock, ManualClock};
use qtrace::queues::{Circular, CircularParams, Online, OnlineParams};
use qtrace::reader::{Completeness, TraceReader};
use qtrace::wire::TraceWriter;
use qtrace::{Config, Tracer};

/// `from` rewritten compact at `to`, close run and all.
fn rewrite_compact(from: &Path, to: &Path) {
    rewrite(from, to, true);
}

/// `from` rewritten at `to` in compact chunks or 32-byte records.
fn rewrite(from: &Path, to: &Path, compact: bool) {
    let mut reader = TraceReader::open(from).unwrap();
    let header = reader.header().clone().with_compact(compact);
    let events: Vec<_> = reader.by_ref().map(Result::unwrap).collect();
    let mut w = TraceWriter::new(Vec::new(), &header).unwrap();
    w.write_events(&events).unwrap();
    let bytes = match reader.completeness() {
        Some(Completeness::Complete(c)) => w.finish_with_close(c.time, c.totals).unwrap(),
        other => panic!("{from:?} is not complete: {other:?}"),
    };
    std::fs::write(to, bytes).unwrap();
}

/// A trace of an online queue's rotation chunks and a circular queue's save
/// (which overwrote events: hoops records), written in `dir`.
fn write_trace(dir: &Path) -> Vec<String> {
    let clock = ManualClock::new(0);
    let tracer = Tracer::with_config(
        Config::default()
            .with_clock(Clock::manual(&clock))
            .with_output_dir(dir),
    );
    let online = tracer
        .create_queue::<Online>(
            OnlineParams::default()
                .with_file(dir.join("run.qtr"))
                .with_capacity(4096)
                .with_period(Duration::from_millis(1))
                .with_rotation(Some(8192), None)
                .with_compact(false),
        )
        .unwrap();
    let circular = tracer
        .create_queue::<Circular>(
            CircularParams::default()
                .with_capacity(64)
                .with_compact(false),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, online).unwrap();
    tracer.assign_class(system::CLASS, circular).unwrap();
    tracer.activate().unwrap();
    tracer.name_source(0, "main").unwrap();
    for i in 0..1500u64 {
        clock.set(10 * (i + 1));
        tracer.log_event(user::USER0, [i, i * 3]);
        tracer.log_event(system::SCHEDULE, [i % 5, 0]);
    }
    let report = tracer.shutdown().unwrap();
    let mut files: Vec<PathBuf> = report
        .queues
        .iter()
        .flat_map(|q| q.status.files.clone())
        .collect();
    files.sort();
    assert!(files.len() >= 3, "{files:?}");
    files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

/// Prints of `dump`, `stats` and `analyze` for `files` in `a` and in `b`
/// are identical but for the format version `stats` names (`a`'s files
/// version 1, `b`'s version 2).
fn same_prints(a_dir: &Path, b_dir: &Path, files: &[String]) {
    for args in [
        &["dump"][..],
        &["dump", "--json"],
        &["stats"],
        &["stats", "--json"],
        &["analyze"],
    ] {
        let a = qtrace(a_dir, args, files);
        let b = qtrace(b_dir, args, files);
        assert!(a.status.success(), "{args:?}: {a:?}");
        assert_eq!(a.status.code(), b.status.code(), "{args:?}");
        let (a, b) = (
            String::from_utf8(a.stdout).unwrap(),
            String::from_utf8(b.stdout).unwrap(),
        );
        let versions = (
            a.matches("format v1,").count(),
            b.matches("format v2,").count(),
        );
        assert_eq!(versions.0, versions.1, "{args:?}");
        assert_eq!(a, b.replace("format v2,", "format v1,"), "{args:?}");
        assert!(a.len() > 100, "{args:?}");
    }
}

/// The online queue's own file (compact by default, FORMAT.md 1.11),
/// written by its drain task, prints exactly as the same records rewritten
/// in 32-byte records, and takes less than a quarter of their bytes.
#[test]
fn an_online_queues_compact_file_prints_as_its_32_byte_records() {
    let compact = tempfile::tempdir().unwrap();
    let plain = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(0);
    let tracer = Tracer::with_config(
        Config::default()
            .with_clock(Clock::manual(&clock))
            .with_output_dir(compact.path()),
    );
    let online = tracer
        .create_queue::<Online>(
            OnlineParams::default()
                .with_capacity(256)
                .with_period(Duration::from_millis(1)),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, online).unwrap();
    tracer.activate().unwrap();
    tracer.name_source(0, "main").unwrap();
    for i in 0..5000u64 {
        clock.set(7 * (i + 1));
        tracer.log_event(user::USER0, [i, i * 3]);
        if i % 500 == 0 {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    let report = tracer.shutdown().unwrap();
    assert_eq!(
        report.queues[0].counters.delivered,
        report.queues[0].counters.accepted
    );
    let name = "queue0-online.qtr".to_string();
    let path = compact.path().join(&name);
    let reader = TraceReader::open(&path).unwrap();
    assert!(reader.header().is_compact());
    let h = reader.header_len();
    rewrite(&path, &plain.path().join(&name), false);
    let (a, b) = (
        std::fs::metadata(plain.path().join(&name)).unwrap().len() - h,
        std::fs::metadata(&path).unwrap().len() - h,
    );
    assert!(b * 4 < a, "{b} compact bytes, {a} as 32-byte records");
    same_prints(plain.path(), compact.path(), std::slice::from_ref(&name));
}

fn qtrace(dir: &Path, args: &[&str], files: &[String]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .current_dir(dir)
        .args(args)
        .args(files)
        .output()
        .unwrap()
}

#[test]
fn every_reader_prints_the_same_for_a_compact_file() {
    let plain = tempfile::tempdir().unwrap();
    let compact = tempfile::tempdir().unwrap();
    let files = write_trace(plain.path());
    for f in &files {
        rewrite_compact(&plain.path().join(f), &compact.path().join(f));
        // The records after the header take a quarter of their 32 bytes or less.
        let h = TraceReader::open(plain.path().join(f))
            .unwrap()
            .header_len();
        let (a, b) = (
            std::fs::metadata(plain.path().join(f)).unwrap().len() - h,
            std::fs::metadata(compact.path().join(f)).unwrap().len() - h,
        );
        assert!(b * 4 < a, "{f}: {b} compact bytes, {a} as 32-byte records");
    }
    same_prints(plain.path(), compact.path(), &files);
    let dump = String::from_utf8(qtrace(compact.path(), &["dump"], &files).stdout).unwrap();
    assert!(
        dump.contains("[LOST "),
        "the circular queue's losses: {dump:.400}"
    );
    assert!(
        dump.contains("[NAME source 0 text=\"main\"]"),
        "the names (combine runs): {dump:.400}"
    );
    assert_eq!(dump.matches("[END: complete").count(), files.len());
    for to in ["chrome", "perfetto", "ctf"] {
        let mut out = Vec::new();
        for dir in [plain.path(), compact.path()] {
            let o = qtrace(dir, &["convert", "--to", to, "--out", to], &files);
            assert!(o.status.success(), "{to}: {o:?}");
            let p = dir.join(to);
            out.push(if p.is_dir() {
                let mut all = Vec::new();
                let mut names: Vec<_> = std::fs::read_dir(&p)
                    .unwrap()
                    .map(|e| e.unwrap().path())
                    .collect();
                names.sort();
                for n in names {
                    all.extend(std::fs::read(n).unwrap());
                }
                all
            } else {
                std::fs::read(&p).unwrap()
            });
        }
        assert_eq!(out[0], out[1], "convert --to {to}");
    }
}

#[test]
fn a_cut_compact_file_is_cut_short_with_the_events_before_the_cut() {
    let plain = tempfile::tempdir().unwrap();
    let files = write_trace(plain.path());
    let online = files.iter().find(|f| f.starts_with("run")).unwrap();
    let path = plain.path().join("cut.qtr");
    rewrite_compact(&plain.path().join(online), &path);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
    let out = qtrace(plain.path(), &["dump"], &["cut.qtr".to_string()]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("[END: CUT SHORT"), "{text}");
    // The file's one chunk is cut: nothing of it is read.
    let stats = qtrace(plain.path(), &["stats", "--json"], &["cut.qtr".to_string()]);
    assert_eq!(stats.status.code(), Some(3), "{stats:?}");
}
