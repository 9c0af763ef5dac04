//! A trace whose `arg0` pages take every path of the Parquet writer's
//! integer pages (FORMAT.md 7.2): 200,000 user events, the first 131,072
//! a counter between small numbers (two DELTA_BINARY_PACKED pages of about
//! 18 bits a value), the rest scattered 64-bit values (a PLAIN page of
//! 524,288 bytes zstd does not halve: stored; then a short PLAIN page,
//! compressed). `arg1` repeats 0, 1, 2 (delta-packed, compressed).

use std::path::Path;

use qtrace::classes::{user, Catalog};
use qtrace::clock::{Clock, ManualClock};
use qtrace::wire::{create_trace_file, TraceHeader};
use qtrace::Event;

/// Events in the trace.
pub const EVENTS: u64 = 200_000;

/// The events' arguments, in order.
pub fn args() -> Vec<[u64; 2]> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..EVENTS)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let arg0 = match i {
                ..131_072 if i % 10 < 6 => i,
                ..131_072 => i % 7,
                _ => x,
            };
            [arg0, i % 3]
        })
        .collect()
}

/// Writes the trace to `path`.
pub fn write(path: &Path) {
    let catalog = Catalog::builtin();
    let header = TraceHeader::new(catalog, &Clock::manual(&ManualClock::new(0)));
    let mut w = create_trace_file(path, &header).unwrap();
    for (i, a) in args().into_iter().enumerate() {
        let i = i as u64;
        w.write_event(&Event::new(i * 50, user::USER0, (i % 4) as u32, a))
            .unwrap();
    }
    w.finish().unwrap();
}

/// Count, then sum, min and max of `arg0`, then the sum of `arg1`, as
/// decimal strings (sums beyond 64 bits).
pub fn figures() -> [String; 5] {
    let a = args();
    let sum0: u128 = a.iter().map(|v| u128::from(v[0])).sum();
    let sum1: u128 = a.iter().map(|v| u128::from(v[1])).sum();
    let min = a.iter().map(|v| v[0]).min().unwrap();
    let max = a.iter().map(|v| v[0]).max().unwrap();
    [a.len() as u128, sum0, min.into(), max.into(), sum1].map(|v| v.to_string())
}
