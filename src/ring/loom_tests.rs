//! Model checks: `RUSTFLAGS="--cfg loom" cargo test --release --lib loom`.
use super::*;
use crate::model::event::Event;
use crate::EventId;
use loom::sync::Arc;
use loom::thread;

fn ev(thread: u64, seq: u64) -> Event {
    Event::new(seq, EventId(0x0b), thread as u32, [thread, seq])
}

/// A record read back is one that was written (its four words belong
/// together).
fn check(e: &Event) {
    assert_eq!(e.source as u64, e.args[0]);
    assert_eq!(e.time, e.args[1]);
}

#[test]
fn loom_drop_ring_two_producers_and_drain() {
    loom::model(|| {
        let ring = Arc::new(DropRing::new(2).unwrap());
        let producers: Vec<_> = (0..2u64)
            .map(|t| {
                let ring = Arc::clone(&ring);
                thread::spawn(move || {
                    let mut ok = 0u64;
                    for s in 0..2 {
                        ok += ring.push(&ev(t, s)) as u64;
                    }
                    ok
                })
            })
            .collect();
        let mut seen: Vec<Event> = Vec::new();
        ring.pop_batch(&mut seen, 4);
        let accepted: u64 = producers.into_iter().map(|h| h.join().unwrap()).sum();
        ring.pop_batch(&mut seen, 4);
        for e in &seen {
            check(e);
        }
        // Per-producer order is kept.
        for t in 0..2 {
            let mine: Vec<u64> = seen
                .iter()
                .filter(|e| e.args[0] == t)
                .map(|e| e.time)
                .collect();
            assert!(mine.windows(2).all(|w| w[0] < w[1]));
        }
        let c = ring.counters();
        assert_eq!(c.accepted, accepted);
        assert_eq!(c.accepted + c.dropped, 4);
        assert_eq!(c.delivered, seen.len() as u64);
        assert_eq!(c.queued, 0);
    });
}

/// Two consumers drain while a producer pushes: `drain` takes the
/// committed records at the head with one compare-and-swap for all of
/// them, so each record comes out exactly once, whole, and each consumer
/// gets its records in order.
#[test]
fn loom_drop_ring_two_consumers_drain_each_record_once() {
    loom::model(|| {
        let ring = Arc::new(DropRing::new(2).unwrap());
        let producer = {
            let ring = Arc::clone(&ring);
            thread::spawn(move || (0..3).map(|s| ring.push(&ev(0, s)) as u64).sum::<u64>())
        };
        let consumer = {
            let ring = Arc::clone(&ring);
            thread::spawn(move || {
                let mut seen = Vec::new();
                ring.pop_batch(&mut seen, 3);
                seen
            })
        };
        let mut mine = Vec::new();
        ring.pop_batch(&mut mine, 3);
        let accepted = producer.join().unwrap();
        let theirs = consumer.join().unwrap();
        ring.pop_batch(&mut mine, 3);
        for seen in [&mine, &theirs] {
            seen.iter().for_each(check);
            assert!(seen.windows(2).all(|w| w[0].time < w[1].time));
        }
        let mut all: Vec<u64> = mine.iter().chain(&theirs).map(|e| e.time).collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len() as u64, accepted, "a record lost or taken twice");
        assert_eq!(mine.len() + theirs.len(), all.len());
        let c = ring.counters();
        assert_eq!((c.accepted, c.delivered, c.queued), (accepted, accepted, 0));
    });
}

#[test]
fn loom_drop_ring_wraps() {
    loom::model(|| {
        let ring = Arc::new(DropRing::new(2).unwrap());
        let p = {
            let ring = Arc::clone(&ring);
            thread::spawn(move || (0..3).filter(|&s| ring.push(&ev(1, s))).count() as u64)
        };
        let mut seen = Vec::new();
        for _ in 0..3 {
            if let Some(e) = ring.pop() {
                seen.push(e);
            }
        }
        let accepted = p.join().unwrap();
        while let Some(e) = ring.pop() {
            seen.push(e);
        }
        for e in &seen {
            check(e);
        }
        assert!(seen.windows(2).all(|w| w[0].time < w[1].time));
        assert_eq!(seen.len() as u64, accepted);
        assert_eq!(ring.accepted() + ring.dropped(), 3);
    });
}

#[test]
fn loom_overwrite_two_producers_wrap_and_snapshot() {
    overwrite_model(2);
}

#[test]
fn loom_overwrite_single_slot() {
    overwrite_model(1);
}

fn overwrite_model(capacity: usize) {
    loom::model(move || {
        let ring = Arc::new(OverwriteRing::new(capacity).unwrap());
        let producers: Vec<_> = (0..2u64)
            .map(|t| {
                let ring = Arc::clone(&ring);
                thread::spawn(move || {
                    for s in 0..2 {
                        ring.push(&ev(t, s));
                    }
                })
            })
            .collect();
        // A concurrent snapshot never sees a torn record.
        for r in ring.read() {
            check(&r.event);
        }
        for h in producers {
            h.join().unwrap();
        }
        let got = ring.consume();
        for r in &got {
            check(&r.event);
        }
        assert!(got.windows(2).all(|w| w[0].ticket < w[1].ticket));
        for t in 0..2 {
            let mine: Vec<u64> = got
                .iter()
                .filter(|r| r.event.args[0] == t)
                .map(|r| r.event.time)
                .collect();
            assert!(mine.windows(2).all(|w| w[0] < w[1]));
        }
        let c = ring.counters();
        assert_eq!(c.accepted + c.dropped, 4);
        assert_eq!(c.delivered, got.len() as u64);
        assert_eq!(c.accepted, c.delivered + c.overwritten + c.queued);
        assert_eq!(c.queued, 0);
        assert!(got.len() <= capacity);
    });
}
