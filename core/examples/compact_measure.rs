//! Bytes an event and nanoseconds an event of the compact stream
//! (FORMAT.md 8): on a real-clock scheduler-like workload generated here,
//! and on trace files given as arguments (e.g. the `qtrace-out/*.qtr` of
//! `cargo run --release --example standard_init`).
//!
//! ```text
//! cargo run --release -p qtrace-core --example compact_measure -- [FILE.qtr ...]
//! ```
//!
//! Each stream is encoded into chunks of 1,448 bytes (a default datagram's
//! payload) and of 65,536 bytes (a file's), decoded back and compared; the
//! bytes an event include the chunk headers.

use std::hint::black_box;
use std::time::Instant;

use qtrace_core::classes::{lowlevel, semaphore, system};
use qtrace_core::compact::{Chunk, ChunkEncoder, ChunkHeader};
use qtrace_core::encode::record;
use qtrace_core::Event;

/// A scheduler-like stream stamped with the monotonic clock: 4 tasks on one
/// CPU, a timer interrupt every ~20 events, semaphore waits and signals,
/// each task's job a short loop of real work.
fn real_clock_workload(n: usize) -> Vec<Event> {
    let origin = Instant::now();
    let now = || origin.elapsed().as_nanos() as u64;
    let mut out = Vec::with_capacity(n);
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut task = 0u64;
    while out.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let work = 50 + (x % 400);
        let mut acc = 0u64;
        for i in 0..work {
            acc = acc.wrapping_mul(31).wrapping_add(i);
        }
        black_box(acc);
        let t = now();
        match x % 20 {
            0 => out.push(Event::new(t, lowlevel::INTERRUPT, 0, [15, 0])),
            1 | 2 => out.push(Event::new(t, semaphore::WAIT, 0, [task, 1 + x % 3])),
            3 | 4 => out.push(Event::new(t, semaphore::SIGNAL, 0, [task, 1 + x % 3])),
            5 => out.push(Event::new(t, system::ACTIVATE, 0, [(task + 1) % 4, 0])),
            _ => {
                out.push(Event::new(t, system::ENDCYCLE, 0, [task, 0]));
                task = (task + 1 + x % 3) % 4;
                out.push(Event::new(now(), system::SCHEDULE, 0, [task, 0]));
            }
        }
    }
    out.truncate(n);
    out
}

/// The records of a trace file (FORMAT.md 1.1, 1.4): header length at
/// byte 16, then 32-byte records.
fn read_qtr(path: &str) -> Vec<Event> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let h = u32::from_be_bytes(bytes[16..20].try_into().unwrap()) as usize;
    bytes[h..]
        .chunks_exact(32)
        .map(|r| record::parse(r.try_into().unwrap()))
        .collect()
}

/// Encodes `events` into chunks of at most `budget` bytes, one after the
/// other in `out`; returns the chunk count.
fn encode(events: &[Event], budget: usize, out: &mut Vec<u8>) -> usize {
    out.clear();
    let mut buf = vec![0u8; budget];
    let mut header = ChunkHeader {
        sender: 1,
        ..ChunkHeader::default()
    };
    let mut enc = ChunkEncoder::new(&mut buf, header).unwrap();
    let mut chunks = 0;
    for e in events {
        if enc.push(e).is_err() {
            let count = enc.count();
            let n = enc.finish();
            out.extend_from_slice(&buf[..n]);
            chunks += 1;
            header = header.following(count, 0);
            enc = ChunkEncoder::new(&mut buf, header).unwrap();
            enc.push(e).unwrap();
        }
    }
    let n = enc.finish();
    out.extend_from_slice(&buf[..n]);
    chunks + 1
}

/// Decodes every chunk of `bytes`; returns the events and a checksum.
fn decode(bytes: &[u8], sink: &mut Vec<Event>) -> u64 {
    sink.clear();
    let mut rest = bytes;
    let mut sum = 0u64;
    while !rest.is_empty() {
        let chunk = Chunk::new_checked(rest).unwrap();
        for r in chunk.records() {
            let e = r.unwrap();
            sum = sum.wrapping_add(e.time ^ e.args[0]);
            sink.push(e);
        }
        rest = &rest[chunk.len()..];
    }
    sum
}

fn measure(name: &str, events: &[Event]) {
    if events.is_empty() {
        println!("{name}: no records");
        return;
    }
    let n = events.len() as f64;
    for budget in [1448usize, 65536] {
        let mut bytes = Vec::new();
        let chunks = encode(events, budget, &mut bytes);
        let mut back = Vec::with_capacity(events.len());
        decode(&bytes, &mut back);
        assert_eq!(back, events, "{name}: round trip");
        // Repeat until at least ~0.3 s of each, best of the rounds.
        let reps = (3_000_000 / events.len()).max(3);
        let mut enc_best = f64::MAX;
        let mut dec_best = f64::MAX;
        for _ in 0..reps {
            let t = Instant::now();
            black_box(encode(black_box(events), budget, &mut bytes));
            enc_best = enc_best.min(t.elapsed().as_nanos() as f64 / n);
            let t = Instant::now();
            black_box(decode(black_box(&bytes), &mut back));
            dec_best = dec_best.min(t.elapsed().as_nanos() as f64 / n);
        }
        println!(
            "{name}: {} records, {chunks} chunks of <= {budget} B: {:.2} B/event \
             (32-byte records: 32.00); encode {enc_best:.2} ns/event, decode {dec_best:.2} ns/event \
             ({:.0} M events/s); chunk headers {:.3} B/event",
            events.len(),
            bytes.len() as f64 / n,
            1e3 / dec_best,
            (48 * chunks) as f64 / n,
        );
    }
}

fn main() {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.to_string())
        })
        .unwrap_or_default();
    println!("{cpu}");
    measure("real-clock workload", &real_clock_workload(1_000_000));
    for path in std::env::args().skip(1) {
        measure(&path, &read_qtr(&path));
    }
}
