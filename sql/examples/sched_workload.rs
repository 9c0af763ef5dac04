//! The 100 M-event workload of `qtrace sql`'s benchmark (docs/benchmarks-history.md,
//! "`qtrace sql`"): trace files of a simulated scheduler, one per CPU, for
//! `qtrace analyze` and, converted, for `qtrace sql`.
//!
//! ```text
//! cargo run --release -p qtrace-sql --example sched_workload -- OUT_DIR [EVENTS] [FILES]
//! ```
//!
//! Defaults: 100,000,000 events in 10 files (`cpuN.qtr`, source N). Each
//! CPU runs 100 periodic tasks of its own (task ids N*100 .. N*100+99), one
//! job after the other: `activate`, `schedule`, six `user0` events (the
//! job's work), `endcycle` — 9 events a job. Response times are drawn from
//! a fixed-seed generator (mostly 20-200 µs, one job in 64 up to 5 ms), so
//! every run writes the same files. One file in ten carries a loss (a hoops
//! record inside a job), as a circular queue's file would.

use std::path::PathBuf;

use qtrace::classes::{system, tracer, user, Catalog};
use qtrace::clock::{Clock, ManualClock};
use qtrace::wire::{create_trace_file, TraceHeader};
use qtrace::Event;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let out = PathBuf::from(
        args.next()
            .ok_or("usage: sched_workload OUT_DIR [EVENTS] [FILES]")?,
    );
    let events: u64 = args.next().map_or(Ok(100_000_000), |s| s.parse())?;
    let files: u64 = args.next().map_or(Ok(10), |s| s.parse())?;
    std::fs::create_dir_all(&out)?;
    let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)))
        .with_clock("manual", 1_000_000_000, 0)?;
    let per_file = events / files;
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    for cpu in 0..files {
        let path = out.join(format!("cpu{cpu}.qtr"));
        let mut w = create_trace_file(&path, &header)?;
        let source = cpu as u32;
        let mut t = 1_000 + cpu * 7;
        let mut written = 0;
        let mut job = 0u64;
        while written + 9 <= per_file {
            let task = cpu * 100 + job % 100;
            let r = next();
            let response = if r % 64 == 0 {
                200_000 + r % 4_800_000
            } else {
                20_000 + r % 180_000
            };
            let step = response / 8;
            w.write_event(&Event::new(t, system::ACTIVATE, source, [task, 0]))?;
            w.write_event(&Event::new(t + step, system::SCHEDULE, source, [task, 0]))?;
            for k in 0..6 {
                w.write_event(&Event::new(
                    t + step * (2 + k),
                    user::USER0,
                    source,
                    [job, k],
                ))?;
            }
            if cpu % 10 == 0 && job == 1_000 {
                w.write_event(&Event::new(t + step * 7, tracer::HOOPS, source, [17, 0]))?;
                written += 1;
            }
            w.write_event(&Event::new(
                t + response,
                system::ENDCYCLE,
                source,
                [task, 0],
            ))?;
            written += 9;
            job += 1;
            t += response + 1_000 + next() % 5_000;
        }
        w.finish()?;
        println!("{}: {written} records, {job} jobs", path.display());
    }
    Ok(())
}
