//! Rewrites trace files compact (file version 2, FORMAT.md 1.11) and prints
//! their sizes before and after, in bytes an event, having checked that the
//! compact file reads back exactly as the original (same records, same
//! verdict), and the reading rate of both through `TraceReader` (best of 5
//! rounds, from memory, one core). Writes nothing to disk: the compact bytes
//! stay in memory.
//!
//! ```text
//! cargo run --release --example standard_init
//! cargo run --release --example compact_files -- qtrace-out/*.qtr
//! ```

use qtrace::reader::{Completeness, TraceReader};
use qtrace::wire::TraceWriter;
use qtrace::Event;
use std::time::Instant;

/// The best of 5 rounds of reading `bytes` whole, in M records/s.
fn rate(bytes: &[u8], records: usize) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        let n = TraceReader::new(bytes).map(|r| r.filter(Result::is_ok).count());
        std::hint::black_box(n.ok());
        best = best.min(t.elapsed().as_secs_f64());
    }
    records as f64 / best / 1e6
}

/// Every record of a file and its verdict.
fn read(bytes: &[u8]) -> Result<(Vec<Event>, Option<Completeness>), Box<dyn std::error::Error>> {
    let mut reader = TraceReader::new(bytes)?;
    let events = reader.by_ref().collect::<Result<Vec<_>, _>>()?;
    Ok((events, reader.completeness()))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!(
        "file\trecords\tbytes\tB/record\tcompact bytes\tB/record\tsmaller\tread M/s\tcompact read M/s"
    );
    for path in std::env::args().skip(1) {
        let bytes = std::fs::read(&path)?;
        let reader = TraceReader::new(&bytes[..])?;
        let header = reader.header().clone();
        let h = reader.header_len() as usize;
        let (events, verdict) = read(&bytes)?;
        let mut w = TraceWriter::new(Vec::new(), &header.with_compact(true))?;
        w.write_events(&events)?;
        let compact = match verdict {
            Some(Completeness::Complete(close)) => w.finish_with_close(close.time, close.totals)?,
            _ => w.finish()?,
        };
        let back = read(&compact)?;
        if back != (events.clone(), verdict) {
            return Err(format!("{path}: the compact file does not read back the same").into());
        }
        // Bytes after the header, close run included, over the records
        // yielded (the close run is not one).
        let n = events.len().max(1) as f64;
        let (before, after) = (bytes.len() - h, compact.len() - h);
        println!(
            "{path}\t{}\t{before}\t{:.2}\t{after}\t{:.2}\t{:.1}x\t{:.0}\t{:.0}",
            events.len(),
            before as f64 / n,
            after as f64 / n,
            before as f64 / after.max(1) as f64,
            rate(&bytes, events.len()),
            rate(&compact, events.len()),
        );
    }
    Ok(())
}
