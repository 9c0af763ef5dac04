//! Writes the **reference corpus** (BENCHMARKS.md, "Sizes on disk"),
//! on which the README's and BENCHMARKS.md's sizes and rates are measured:
//! EVENTS records (default 1,000,000) of a real-clock workload, written to
//! DIR twice, `corpus-compact.qtr` (file version 2, the default of online and
//! received files, FORMAT.md 1.11) and `corpus-32.qtr` (version 1, 32-byte
//! records), the same records in each, each ended by its close run. Prints
//! the records, the events (`qtrace stats`'s count: a string's combine run of
//! 3–4 records is one event), the sources and the files' bytes a record
//! (after the header).
//!
//! ```text
//! cargo run --release --example corpus -- DIR [EVENTS]
//! benches/corpus.sh        # the corpus in a temporary folder, every size and rate on it
//! ```
//!
//! The workload (`workload.rs`, which `benches/decode.rs` reads in memory
//! too): task switches over 4 CPUs (the sources), timer and network
//! interrupts waking tasks, semaphore waits and signals, messages with
//! arguments, a counter and short strings, stamped with the monotonic clock
//! while each step does a little real work. Its shape — every record's id,
//! source and arguments — is the same on every run; its times are the
//! clock's, so they and the compact file's size vary a little from run to
//! run.

use std::collections::BTreeSet;
use std::path::PathBuf;

use qtrace::clock::Clock;
use qtrace::wire::{create_trace_file, QueueTotals, TraceHeader};

mod workload;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(dir), events, None) = (args.next(), args.next(), args.next()) else {
        eprintln!("usage: corpus DIR [EVENTS]");
        std::process::exit(2);
    };
    let n: usize = match events {
        Some(e) => e.parse().map_err(|_| format!("EVENTS: not a count: {e}"))?,
        None => 1_000_000,
    };
    let dir = PathBuf::from(dir);
    std::fs::create_dir_all(&dir)?;
    let clock = Clock::monotonic();
    let events = workload::generate(&clock, n);
    let header = TraceHeader::new(workload::catalog(), &clock).with_close_run(true);
    let sources: BTreeSet<u32> = events.iter().map(|e| e.source).collect();
    println!(
        "{} records, {} events (a string's run counts once), {} sources",
        events.len(),
        workload::logged_events(&events),
        sources.len()
    );
    // The close run as a queue that took and wrote every record states it.
    let totals = QueueTotals {
        accepted: events.len() as u64,
        delivered: events.len() as u64,
        ..QueueTotals::default()
    };
    let end = clock.now();
    for (name, compact) in [("corpus-compact.qtr", true), ("corpus-32.qtr", false)] {
        let path = dir.join(name);
        let header = header.clone().with_compact(compact);
        let mut w = create_trace_file(&path, &header)?;
        w.write_events(&events)?;
        w.finish_with_close(end, totals)?;
        let bytes = std::fs::metadata(&path)?.len();
        let head = qtrace::reader::TraceReader::open(&path)?.header_len();
        println!(
            "{}: {bytes} bytes, {:.2} bytes a record after the header",
            path.display(),
            (bytes - head) as f64 / events.len().max(1) as f64
        );
    }
    Ok(())
}
