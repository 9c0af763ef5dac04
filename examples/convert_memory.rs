//! Converts a synthetic trace of N events (generated on the fly, never held in
//! memory) to CTF or Chrome JSON and prints the process's peak resident memory,
//! to show that conversion runs in bounded memory.
//!
//! ```text
//! cargo run --release --example convert_memory -- ctf 1000000 /tmp/qtrace-ctf
//! cargo run --release --example convert_memory -- chrome 1000000 /tmp/qtrace.json
//! cargo run --release --example convert_memory -- perfetto 1000000 /tmp/qtrace.pftrace
//! cargo run --release --example convert_memory -- perfetto-plain 1000000 /tmp/plain.pftrace
//! ```
//!
//! `qtr` instead of a format writes the same workload as a qtrace trace file,
//! to measure `qtrace convert` itself:
//!
//! ```text
//! cargo run --release --example convert_memory -- qtr 1000000 /tmp/big.qtr
//! /usr/bin/time -v target/release/qtrace convert --to ctf /tmp/big.qtr --out /tmp/big-ctf
//! ```

use std::fs::File;
use std::time::Instant;

use qtrace::classes::{lowlevel, semaphore, system, tracer, user, Catalog};
use qtrace::clock::{Clock, ManualClock};
use qtrace::export::{self, chrome::ChromeWriter, ctf::CtfWriter, perfetto::PerfettoWriter};
use qtrace::wire::{create_trace_file, TraceHeader};
use qtrace::Event;

/// A busy 4-CPU workload: context switches, interrupts, semaphore waits and
/// signals, user events, and a loss every 100 000 events.
fn workload(n: u64) -> impl Iterator<Item = Event> {
    (0..n).map(|i| {
        let time = i * 50;
        let cpu = (i % 4) as u32;
        let task = (i / 4) % 16;
        if i % 100_000 == 99_999 {
            return Event::new(time, tracer::HOOPS, u32::MAX, [i / 100_000 + 1, 0]);
        }
        match i % 10 {
            0 => Event::new(time, system::SCHEDULE, cpu, [task, 0]),
            3 => Event::new(time, lowlevel::INTERRUPT, cpu, [i % 7, 0]),
            5 => Event::new(time, semaphore::WAIT, cpu, [task, i % 3]),
            8 => Event::new(time, semaphore::SIGNAL, cpu, [task, i % 3]),
            _ => Event::new(time, user::USER0, cpu, [i, 0]),
        }
    })
}

/// Peak resident set size of this process, in KiB (Linux).
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Size of the output: a file's, or the sum of a directory's files (CTF).
fn out_bytes(path: &std::path::Path) -> u64 {
    match std::fs::read_dir(path) {
        Ok(dir) => dir
            .filter_map(|e| e.ok()?.metadata().ok())
            .map(|m| m.len())
            .sum(),
        Err(_) => std::fs::metadata(path).map_or(0, |m| m.len()),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: convert_memory ctf|chrome|perfetto|perfetto-plain|qtr EVENTS OUT");
        std::process::exit(2);
    }
    let n: u64 = args[2].parse()?;
    let out = std::path::Path::new(&args[3]);
    let catalog = Catalog::builtin();
    let start = Instant::now();
    let stats = match args[1].as_str() {
        "ctf" => export::convert(CtfWriter::create(out, &catalog, 0)?, workload(n))?,
        "chrome" => export::convert(
            ChromeWriter::new(&catalog, 0, File::create(out)?)?,
            workload(n),
        )?,
        "perfetto" => export::convert(
            PerfettoWriter::new(&catalog, 0, File::create(out)?)?,
            workload(n),
        )?,
        // The same packets, not compressed.
        "perfetto-plain" => export::convert(
            PerfettoWriter::new(&catalog, 0, File::create(out)?)?.with_compression(false),
            workload(n),
        )?,
        "qtr" => {
            let header = TraceHeader::new(catalog, &Clock::manual(&ManualClock::new(0)));
            let mut w = create_trace_file(out, &header)?;
            let mut stats = export::ConvertStats::default();
            for e in workload(n) {
                w.write_event(&e)?;
                stats.events += 1;
                if e.id == tracer::HOOPS {
                    stats.lost += e.args[0];
                }
            }
            w.finish()?;
            stats
        }
        other => {
            return Err(format!(
                "unknown format {other}: use ctf, chrome, perfetto, perfetto-plain or qtr"
            )
            .into())
        }
    };
    let bytes = out_bytes(out);
    println!(
        "{} {} events ({} lost) in {:.2?}; {} bytes ({:.1} bytes an event); peak RSS {} KiB",
        args[1],
        stats.events,
        stats.lost,
        start.elapsed(),
        bytes,
        bytes as f64 / (stats.events + stats.hoops).max(1) as f64,
        peak_rss_kib().map_or("?".to_string(), |k| k.to_string())
    );
    Ok(())
}
