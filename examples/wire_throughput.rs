//! Measures the trace-file writer and reader and the datagram codec, in MB/s
//! of 32-byte records and events/s.
//!
//! ```text
//! cargo run --release --example wire_throughput [EVENTS]
//! ```
//!
//! The writer and reader run on a file in the system's temporary directory
//! (page cache, so this measures the codec and buffering, not the disk).

use std::time::Instant;

use qtrace::classes::{system, Catalog};
use qtrace::clock::{Clock, ManualClock};
use qtrace::reader::TraceReader;
use qtrace::wire::datagram::{self, DatagramView};
use qtrace::wire::{create_trace_file, TraceHeader};
use qtrace::Event;

fn report(what: &str, events: u64, secs: f64) {
    println!(
        "{what:<28} {:>8.1} M events/s  {:>8.1} MB/s",
        events as f64 / secs / 1e6,
        events as f64 * 32.0 / secs / 1e6
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: u64 = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(10_000_000);
    let events: Vec<Event> = (0..4096u64)
        .map(|i| Event::new(i * 100, system::SCHEDULE, (i % 4) as u32, [i, 0]))
        .collect();
    let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)));
    let path = std::env::temp_dir().join(format!("qtrace-throughput-{}.qtr", std::process::id()));

    let t = Instant::now();
    let mut w = create_trace_file(&path, &header)?;
    let mut written = 0;
    while written < n {
        let k = (n - written).min(events.len() as u64) as usize;
        w.write_events(&events[..k])?;
        written += k as u64;
    }
    w.finish()?;
    report("file write (write_events)", n, t.elapsed().as_secs_f64());

    let t = Instant::now();
    let mut read = 0u64;
    let mut sum = 0u64;
    for e in TraceReader::open(&path)? {
        sum = sum.wrapping_add(e?.args[0]);
        read += 1;
    }
    assert_eq!(read, n);
    report("file read (TraceReader)", n, t.elapsed().as_secs_f64());
    std::fs::remove_file(&path)?;

    let mut buf = [0u8; datagram::DEFAULT_MAX_DATAGRAM_LEN];
    let t = Instant::now();
    let mut encoded = 0u64;
    let mut decoded = 0u64;
    let mut seq = 0;
    while encoded < n {
        let (len, k) = datagram::encode_events(&mut buf, 1, seq, 0, encoded, &events)?;
        let view = DatagramView::new_checked(&buf[..len])?;
        for e in view.events() {
            sum = sum.wrapping_add(e.time);
            decoded += 1;
        }
        encoded += k as u64;
        seq += 1;
    }
    assert_eq!(encoded, decoded);
    report(
        "datagram encode + decode",
        encoded,
        t.elapsed().as_secs_f64(),
    );
    println!("(checksum {sum})");
    Ok(())
}
