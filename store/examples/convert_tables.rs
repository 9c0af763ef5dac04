//! `qtrace_store::convert` alone (what `qtrace convert --to parquet` runs),
//! for profiling the writer without building the command: converts the
//! trace files given into the folder given, and prints the events, the
//! bytes on disk of the parts and the CPU-free wall time.
//!
//! ```text
//! cargo run --release -p qtrace-store --example convert_tables -- OUT TRACE...
//! ```

use std::path::PathBuf;
use std::time::Instant;

use qtrace::reader::TraceReader;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args_os().skip(1);
    let out = PathBuf::from(args.next().ok_or("usage: convert_tables OUT TRACE...")?);
    let mut inputs = Vec::new();
    for a in args {
        let path = PathBuf::from(a);
        let reader = TraceReader::open(&path)?;
        inputs.push((path, reader));
    }
    let start = Instant::now();
    let report = qtrace_store::convert(inputs, &out, &mut |_| {})?;
    let wall = start.elapsed().as_secs_f64();
    let bytes: u64 = report.parts.iter().map(|(_, s)| s).sum();
    println!(
        "{} events, {} bytes ({:.3} bytes an event), {:.3} s wall ({:.2} M events/s)",
        report.events,
        bytes,
        bytes as f64 / report.events.max(1) as f64,
        wall,
        report.events as f64 / wall / 1e6
    );
    Ok(())
}
