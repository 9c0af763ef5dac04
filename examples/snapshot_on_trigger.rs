//! A flight recorder with snapshots on trigger: four worker threads log
//! requests into a circular queue; a request slower than 900 µs logs an
//! error event (`USER7`), and each error saves the last 2000 events to a
//! new file (`queue0-circular-snap-0001.qtr`, …) from the trigger's task
//! while the workers keep logging, at most one file per 20 ms and 10
//! files; the rest are counted suppressed. A second event logged with
//! each error (`USER6`: an event has one trigger) stops recording for good
//! at the 50th; the snapshot trigger still sees later errors (triggers see
//! their events whether recording is on or off) and counts them.
//!
//! Run: `cargo run --release --example snapshot_on_trigger [dir]`, then
//! `qtrace dump <dir>/queue0-circular-snap-0001.qtr`.

use std::time::Duration;

use qtrace::classes::user;
use qtrace::filters::{Scope, Snapshot, Trigger, TriggerQueue};
use qtrace::queues::{Circular, CircularParams};
use qtrace::{Config, Tracer};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "qtrace-out".into());
    let tracer = Tracer::with_config(Config::default().with_output_dir(&dir));
    let q = tracer.create_queue::<Circular>(CircularParams::default().with_capacity(1 << 16))?;
    tracer.assign_class(user::CLASS, q)?;
    let snap = Snapshot::new(q, 2000)
        .min_interval(Duration::from_millis(20))
        .max_files(Some(10));
    let t = tracer.add_trigger(user::USER7, Trigger::snapshot(snap))?;
    tracer.add_trigger(user::USER6, Trigger::stop(Scope::Global).after(50))?;
    tracer.activate()?;

    std::thread::scope(|s| {
        for worker in 0..4u64 {
            let tracer = &tracer;
            s.spawn(move || {
                let mut x = worker + 1;
                for request in 0..20_000u64 {
                    // A made-up latency: mostly short, now and then long.
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let micros = if x % 1000 == 0 {
                        900 + x % 300
                    } else {
                        x % 200
                    };
                    tracer.log_event(user::USER0, [request, micros]);
                    if micros > 900 {
                        tracer.log_event(user::USER7, [request, micros]);
                        tracer.log_event(user::USER6, [request, micros]);
                    }
                    if request % 64 == 0 {
                        std::thread::sleep(Duration::from_micros(100));
                    }
                }
            });
        }
    });

    let report = tracer.shutdown()?;
    let trigger = tracer.queue(t)?.as_custom::<TriggerQueue>().unwrap();
    println!(
        "errors {}, snapshots written {}, suppressed {} (rate limit), files:",
        trigger.fired(),
        trigger.written(),
        report.snapshots_suppressed()
    );
    for f in &report.queues[t.index()].status.files {
        println!("  {}", f.display());
    }
    Ok(())
}
