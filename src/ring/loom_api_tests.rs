//! Model checks of the rings' API with loom (moved from `tests/loom_ring.rs`),
//! complementing the unit models in `loom_tests.rs`: a reader that *consumes* (and restores)
//! while producers write and wrap, and a drop ring drained while two
//! producers wrap it. Run with `scripts/loom.sh` (or
//! `RUSTFLAGS="--cfg loom" cargo test --release --lib loom`).

use super::{DropRing, OverwriteRing, Ticketed};
use crate::{Event, EventId};
use loom::sync::Arc;
use loom::thread;

fn ev(producer: u64, seq: u64) -> Event {
    Event::new(seq, EventId(0x0b), producer as u32, [producer, seq])
}

/// A record read back is one that was written whole.
fn intact(e: &Event) {
    assert_eq!(e.source as u64, e.args[0], "torn record {e:?}");
    assert_eq!(e.time, e.args[1], "torn record {e:?}");
}

fn in_producer_order(events: &[Event]) {
    for p in 0..2 {
        let mine: Vec<u64> = events
            .iter()
            .filter(|e| e.args[0] == p)
            .map(|e| e.time)
            .collect();
        assert!(mine.windows(2).all(|w| w[0] < w[1]), "{mine:?}");
    }
}

/// Two producers wrap a 2-slot circular ring while the reader consumes:
/// nothing is delivered twice, nothing torn, and after the producers are
/// done the counters balance exactly.
#[test]
fn overwrite_ring_consumed_while_two_producers_wrap() {
    loom::model(|| {
        let ring = Arc::new(OverwriteRing::new(2).unwrap());
        let producers: Vec<_> = (0..2u64)
            .map(|p| {
                let ring = Arc::clone(&ring);
                thread::spawn(move || (0..2).filter(|&s| ring.push(&ev(p, s))).count() as u64)
            })
            .collect();
        let mut got: Vec<Ticketed> = ring.consume();
        let stored: u64 = producers.into_iter().map(|h| h.join().unwrap()).sum();
        got.extend(ring.consume());
        let mut tickets: Vec<u64> = got.iter().map(|r| r.ticket).collect();
        tickets.sort_unstable();
        tickets.dedup();
        assert_eq!(tickets.len(), got.len(), "a record delivered twice");
        got.sort_by_key(|r| r.ticket);
        let events: Vec<Event> = got.iter().map(|r| r.event).collect();
        events.iter().for_each(intact);
        in_producer_order(&events);
        let c = ring.counters();
        assert_eq!(c.accepted, stored);
        assert_eq!(c.accepted + c.dropped, 4);
        assert_eq!(c.delivered, got.len() as u64);
        assert_eq!(c.queued, 0);
        assert_eq!(c.accepted, c.delivered + c.overwritten + c.queued);
    });
}

/// A failed save gives its records back (`restore`) while a producer keeps
/// writing: what is restored is delivered later exactly once, what was
/// overwritten in between is counted as overwritten.
#[test]
fn overwrite_ring_restore_races_a_producer() {
    loom::model(|| {
        let ring = Arc::new(OverwriteRing::new(2).unwrap());
        ring.push(&ev(0, 0));
        let producer = {
            let ring = Arc::clone(&ring);
            thread::spawn(move || (1..3).filter(|&s| ring.push(&ev(0, s))).count() as u64)
        };
        let taken = ring.consume();
        let restored = ring.restore(&taken);
        assert!(restored <= taken.len() as u64);
        let stored = 1 + producer.join().unwrap();
        let last = ring.consume();
        last.iter().for_each(|r| intact(&r.event));
        let c = ring.counters();
        assert_eq!(c.accepted, stored);
        assert_eq!(c.accepted + c.dropped, 3);
        assert_eq!(
            c.delivered,
            taken.len() as u64 - restored + last.len() as u64
        );
        assert_eq!(c.queued, 0);
        assert_eq!(c.accepted, c.delivered + c.overwritten + c.queued);
    });
}

/// Two producers push three events each through a 2-slot drop ring while
/// the consumer pops: the ring wraps several times, every accepted event
/// comes out once, in each producer's order, and drops are counted exactly.
#[test]
fn drop_ring_two_producers_wrap_while_drained() {
    loom::model(|| {
        let ring = Arc::new(DropRing::new(2).unwrap());
        let producers: Vec<_> = (0..2u64)
            .map(|p| {
                let ring = Arc::clone(&ring);
                thread::spawn(move || (0..3).filter(|&s| ring.push(&ev(p, s))).count() as u64)
            })
            .collect();
        let mut seen = Vec::new();
        for _ in 0..2 {
            if let Some(e) = ring.pop() {
                seen.push(e);
            }
        }
        let accepted: u64 = producers.into_iter().map(|h| h.join().unwrap()).sum();
        while let Some(e) = ring.pop() {
            seen.push(e);
        }
        seen.iter().for_each(intact);
        in_producer_order(&seen);
        assert_eq!(seen.len() as u64, accepted);
        let c = ring.counters();
        assert_eq!((c.accepted, c.delivered, c.queued), (accepted, accepted, 0));
        assert_eq!(c.accepted + c.dropped, 6);
        assert!(ring.is_empty());
    });
}
