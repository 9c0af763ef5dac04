//! The rings under real threads (moved from `tests/queues/queues_ring.rs`): two producers and a drainer that stalls now
//! and then (DropRing), two producers and a concurrent reader (OverwriteRing).
//! Every attempt is counted exactly, nothing read is torn, and each producer's
//! events come out in the order it wrote them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::{DropRing, OverwriteRing};
use crate::{Event, EventId};

const PER_THREAD: u64 = if cfg!(miri) { 200 } else { 1_000_000 };

fn event(thread: u64, seq: u64) -> Event {
    let a = thread << 32 | seq;
    Event::new(
        seq,
        EventId(0x0b),
        thread as u32,
        [a, a.wrapping_mul(0x9e37_79b9_7f4a_7c15)],
    )
}

/// Checks `e` is whole, and returns (thread, seq).
fn check(e: &Event) -> (usize, u64) {
    assert_eq!(
        e.args[1],
        e.args[0].wrapping_mul(0x9e37_79b9_7f4a_7c15),
        "torn: {e:?}"
    );
    let thread = e.args[0] >> 32;
    let seq = e.args[0] & 0xffff_ffff;
    assert_eq!((e.source as u64, e.time), (thread, seq), "torn: {e:?}");
    assert!(thread < 2);
    (thread as usize, seq)
}

#[test]
fn drop_ring_two_producers_and_a_stalling_drainer() {
    let ring = Arc::new(DropRing::new(256).unwrap());
    let done = Arc::new(AtomicBool::new(false));
    let drainer = {
        let ring = Arc::clone(&ring);
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut last = [None::<u64>; 2];
            let mut popped = 0u64;
            let mut batch = Vec::with_capacity(64);
            let mut round = 0u64;
            loop {
                let finished = done.load(Ordering::Acquire);
                batch.clear();
                ring.pop_batch(&mut batch, 64);
                for e in &batch {
                    let (t, seq) = check(e);
                    assert!(last[t].map_or(true, |p| seq > p), "order");
                    last[t] = Some(seq);
                }
                popped += batch.len() as u64;
                round += 1;
                if round % 64 == 0 && !cfg!(miri) {
                    // A stalled drain: producers must drop, not wait.
                    std::thread::sleep(std::time::Duration::from_micros(200));
                }
                if finished && batch.is_empty() {
                    return popped;
                }
            }
        })
    };
    let producers: Vec<_> = (0..2)
        .map(|t| {
            let ring = Arc::clone(&ring);
            std::thread::spawn(move || {
                (0..PER_THREAD).filter(|&s| ring.push(&event(t, s))).count() as u64
            })
        })
        .collect();
    let stored: u64 = producers.into_iter().map(|p| p.join().unwrap()).sum();
    done.store(true, Ordering::Release);
    let popped = drainer.join().unwrap();
    assert_eq!(ring.accepted(), stored);
    assert_eq!(ring.accepted() + ring.dropped(), 2 * PER_THREAD);
    assert_eq!(popped, stored);
    assert_eq!(ring.popped(), popped);
    assert!(ring.is_empty());
    let c = ring.counters();
    assert_eq!((c.delivered, c.queued, c.overwritten), (popped, 0, 0));
}

#[test]
fn overwrite_ring_two_producers_and_a_reader() {
    let ring = Arc::new(OverwriteRing::new(64).unwrap());
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let ring = Arc::clone(&ring);
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut reads = 0u64;
            while !done.load(Ordering::Relaxed) || reads == 0 {
                let records = ring.read();
                let mut last = [None::<u64>; 2];
                for r in &records {
                    let (t, seq) = check(&r.event);
                    assert!(last[t].map_or(true, |p| seq > p), "order");
                    last[t] = Some(seq);
                }
                assert!(records.windows(2).all(|w| w[0].ticket < w[1].ticket));
                reads += 1;
            }
            reads
        })
    };
    let producers: Vec<_> = (0..2)
        .map(|t| {
            let ring = Arc::clone(&ring);
            std::thread::spawn(move || {
                for s in 0..PER_THREAD {
                    ring.push(&event(t, s));
                }
            })
        })
        .collect();
    for p in producers {
        p.join().unwrap();
    }
    done.store(true, Ordering::Relaxed);
    assert!(reader.join().unwrap() > 0);
    let c = ring.counters();
    assert_eq!(c.accepted + c.dropped, 2 * PER_THREAD);
    assert_eq!(c.accepted, c.overwritten + c.queued);
    let kept = ring.consume();
    assert_eq!(kept.len() as u64, c.queued);
    assert!(kept.len() <= 64);
    for r in &kept {
        check(&r.event);
    }
    let c = ring.counters();
    assert_eq!((c.delivered, c.queued), (kept.len() as u64, 0));
    assert_eq!(c.accepted, c.delivered + c.overwritten);
}
