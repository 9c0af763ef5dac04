//! Two threads log at once into a small circular queue and a small fixed
//! queue through the tracer (with a third thread taking flight-recorder
//! snapshots of the circular one meanwhile): every attempt is accounted for
//! exactly, every record read back is one that was written (never torn), and
//! each thread's events stay in the order it logged them.

use crate::queues_support;

use std::sync::Arc;

use qtrace::classes::{tracer::HOOPS, user};
use qtrace::clock::Clock;
use qtrace::queues::{Circular, CircularParams, Fixed, FixedParams};
use qtrace::{Config, Event, EventId, Tracer};
use queues_support::{hoops_total, read_trace, scratch};

const THREADS: u64 = 2;
const PER_THREAD: u64 = if cfg!(miri) { 300 } else { 1_000_000 };
const CIRCULAR_CAP: usize = if cfg!(miri) { 16 } else { 1024 };
const FIXED_CAP: usize = if cfg!(miri) { 50 } else { 10_000 };

/// The default (fast) clock, writing into `dir`; under Miri, which cannot
/// read the TSC, the monotonic clock.
fn config(dir: &std::path::Path) -> Config {
    if cfg!(miri) {
        Config::default()
            .with_clock(Clock::monotonic())
            .with_output_dir(dir)
    } else {
        Config::default().with_output_dir(dir)
    }
}

/// `args[0]` = thread << 32 | sequence; `args[1]` a check word derived from
/// it, so a record mixing two writes is detected.
fn args(thread: u64, seq: u64) -> [u64; 2] {
    let a = thread << 32 | seq;
    [a, check_word(a)]
}

fn check_word(a: u64) -> u64 {
    a.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5555_5555_5555_5555
}

/// Checks every record (hoops records aside) is intact and each thread's
/// sequence numbers increase; returns how many records there are per thread.
fn check(events: &[Event], id: EventId) -> [u64; THREADS as usize] {
    let mut last: [Option<u64>; THREADS as usize] = [None; THREADS as usize];
    let mut count = [0u64; THREADS as usize];
    for e in events.iter().filter(|e| e.id != HOOPS) {
        assert_eq!(e.id, id);
        assert_eq!(e.args[1], check_word(e.args[0]), "torn record {e:?}");
        let thread = e.args[0] >> 32;
        let seq = e.args[0] & 0xffff_ffff;
        assert!(thread < THREADS && seq < PER_THREAD, "{e:?}");
        assert_eq!(e.source as u64, thread, "{e:?}");
        let t = thread as usize;
        if let Some(prev) = last[t] {
            assert!(seq > prev, "thread {thread}: {seq} after {prev}");
        }
        last[t] = Some(seq);
        count[t] += 1;
    }
    count
}

#[test]
fn two_threads_into_small_circular_and_fixed_queues() {
    let dir = scratch("threads");
    let tracer = Arc::new(Tracer::with_config(config(&dir)));
    let circular = tracer
        .create_queue::<Circular>(CircularParams::default().with_capacity(CIRCULAR_CAP))
        .unwrap();
    let fixed = tracer
        .create_queue::<Fixed>(
            FixedParams::default()
                .with_capacity(FIXED_CAP)
                .with_ring(Default::default()),
        )
        .unwrap();
    tracer.assign_event(user::USER0, circular).unwrap();
    tracer.assign_event(user::USER1, fixed).unwrap();
    tracer.activate().unwrap();

    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let snapshotter = {
        let tracer = Arc::clone(&tracer);
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut snapshots = 0u64;
            while !done.load(std::sync::atomic::Ordering::Relaxed) || snapshots == 0 {
                let events = tracer
                    .queue(circular)
                    .unwrap()
                    .as_circular()
                    .unwrap()
                    .snapshot_events();
                check(&events, user::USER0);
                snapshots += 1;
            }
            snapshots
        })
    };
    let producers: Vec<_> = (0..THREADS)
        .map(|thread| {
            let tracer = Arc::clone(&tracer);
            std::thread::spawn(move || {
                for seq in 0..PER_THREAD {
                    tracer.log_event_from(thread as u32, user::USER0, args(thread, seq));
                    tracer.log_event_from(thread as u32, user::USER1, args(thread, seq));
                }
            })
        })
        .collect();
    for p in producers {
        p.join().unwrap();
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(snapshotter.join().unwrap() > 0);

    let report = tracer.shutdown().unwrap();
    assert!(report.is_clean(), "{report:?}");
    let total = THREADS * PER_THREAD;

    // Circular: every attempt accepted or dropped; the saved file holds the
    // newest events plus hoops records that add up to everything else.
    let c = report.queues[0].counters;
    assert_eq!(c.accepted + c.dropped, total);
    assert!(c.is_consistent(), "{c:?}");
    assert_eq!(c.queued, 0);
    let (_, saved) = read_trace(&dir.join("queue0-circular.qtr"));
    let per_thread = check(&saved, user::USER0);
    let kept: u64 = per_thread.iter().sum();
    assert_eq!(kept, c.delivered);
    assert!(kept <= CIRCULAR_CAP as u64);
    assert_eq!(hoops_total(&saved), total - kept);
    assert_eq!(c.dropped + c.overwritten, total - kept);
    assert!(saved[0].id == HOOPS, "the leading hoops record");

    // Fixed: exactly the first FIXED_CAP attempts kept, the rest dropped and
    // reported by the trailing hoops record.
    let f = report.queues[1].counters;
    assert_eq!(f.accepted, FIXED_CAP as u64);
    assert_eq!(f.dropped, total - FIXED_CAP as u64);
    assert_eq!(f.delivered, FIXED_CAP as u64);
    assert!(f.is_consistent(), "{f:?}");
    let (_, saved) = read_trace(&dir.join("queue1-fixed.qtr"));
    let per_thread = check(&saved, user::USER1);
    assert_eq!(per_thread.iter().sum::<u64>(), FIXED_CAP as u64);
    assert_eq!(saved.len(), FIXED_CAP + 1);
    assert_eq!(saved.last().unwrap().id, HOOPS);
    assert_eq!(hoops_total(&saved), total - FIXED_CAP as u64);
    // The first events of each thread are the ones kept: every thread's kept
    // sequence numbers are 0..n.
    for (t, n) in per_thread.iter().enumerate() {
        let seqs: Vec<u64> = saved
            .iter()
            .filter(|e| e.id != HOOPS && e.args[0] >> 32 == t as u64)
            .map(|e| e.args[0] & 0xffff_ffff)
            .collect();
        assert_eq!(seqs, (0..*n).collect::<Vec<_>>());
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn shutdown_while_two_threads_log() {
    let dir = scratch("threads-shutdown");
    let tracer = Arc::new(Tracer::with_config(config(&dir)));
    let circular = tracer
        .create_queue::<Circular>(CircularParams::default().with_capacity(64))
        .unwrap();
    let fixed = tracer
        .create_queue::<Fixed>(
            FixedParams::default()
                .with_capacity(100_000)
                .with_ring(Default::default()),
        )
        .unwrap();
    tracer.assign_event(user::USER0, circular).unwrap();
    tracer.assign_event(user::USER1, fixed).unwrap();
    tracer.activate().unwrap();
    let started = Arc::new(std::sync::Barrier::new(3));
    let producers: Vec<_> = (0..THREADS)
        .map(|thread| {
            let tracer = Arc::clone(&tracer);
            let started = Arc::clone(&started);
            std::thread::spawn(move || {
                started.wait();
                for seq in 0..PER_THREAD / 4 {
                    tracer.log_event_from(thread as u32, user::USER0, args(thread, seq));
                    tracer.log_event_from(thread as u32, user::USER1, args(thread, seq));
                }
            })
        })
        .collect();
    started.wait();
    std::thread::sleep(std::time::Duration::from_millis(if cfg!(miri) {
        0
    } else {
        5
    }));
    let report = tracer.shutdown().unwrap();
    assert!(report.is_clean(), "{report:?}");
    for p in producers {
        p.join().unwrap();
    }
    for (q, id, name) in [
        (circular, user::USER0, "queue0-circular.qtr"),
        (fixed, user::USER1, "queue1-fixed.qtr"),
    ] {
        // Once every producer is out, the counters balance exactly and the
        // file holds only whole records, each thread's in order.
        let c = tracer.counters(q).unwrap();
        assert!(c.is_consistent(), "{c:?}");
        assert!(c.attempts() <= THREADS * PER_THREAD / 4);
        let (_, saved) = read_trace(&dir.join(name));
        let kept: u64 = check(&saved, id).iter().sum();
        assert_eq!(kept, c.delivered, "{c:?}");
        // Records and hoops account for every attempt made before the save.
        assert!(kept + hoops_total(&saved) <= c.attempts());
    }
    std::fs::remove_dir_all(&dir).ok();
}
