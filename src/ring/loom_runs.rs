//! Model checks of combine runs on the rings (`OverwriteRing::push_run`,
//! `DropRing::claim_run`): several records reserved together while another
//! producer and a reader race them. Run with `scripts/loom.sh` (or
//! `RUSTFLAGS="--cfg loom" cargo test --release --lib loom`).

use super::{DropRing, OverwriteRing};
use crate::model::event::Event;
use crate::EventId;
use loom::sync::Arc;
use loom::thread;

/// Record `i` of producer `p`'s run.
fn ev(p: u64, i: u64) -> Event {
    Event::new(i, EventId(0x0b), p as u32, [p, i])
}

/// A record read back is one that was written whole.
fn intact(e: &Event) {
    assert_eq!(e.source as u64, e.args[0], "torn record {e:?}");
    assert_eq!(e.time, e.args[1], "torn record {e:?}");
}

/// Two producers each push a run of 2 records into a 4-slot circular ring
/// while a reader takes a snapshot: no torn record, each run's records on
/// consecutive tickets (a record that could not be stored is a counted
/// drop, never a record out of place), and the counters balance.
#[test]
fn loom_overwrite_ring_runs_from_two_producers() {
    loom::model(|| {
        let ring = Arc::new(OverwriteRing::new(4).unwrap());
        let producers: Vec<_> = (0..2u64)
            .map(|p| {
                let ring = Arc::clone(&ring);
                thread::spawn(move || ring.push_run(2, |i| ev(p, i as u64)) as u64)
            })
            .collect();
        for r in ring.read() {
            intact(&r.event);
        }
        let stored: u64 = producers.into_iter().map(|h| h.join().unwrap()).sum();
        let got = ring.consume();
        got.iter().for_each(|r| intact(&r.event));
        for p in 0..2 {
            let mine: Vec<(u64, u64)> = got
                .iter()
                .filter(|r| r.event.args[0] == p)
                .map(|r| (r.ticket, r.event.args[1]))
                .collect();
            if let [(t0, 0), (t1, 1)] = mine[..] {
                assert_eq!(t1, t0 + 1, "a run's records are not consecutive");
            }
        }
        let c = ring.counters();
        assert_eq!(c.accepted, stored);
        assert_eq!(c.accepted + c.dropped, 4);
        assert_eq!(c.delivered, got.len() as u64);
        assert_eq!(c.accepted, c.delivered + c.overwritten + c.queued);
        assert_eq!(c.queued, 0);
    });
}

/// Two producers each claim a run of 2 positions in a 2-slot drop ring
/// (`claim_run`, then commit each) while the consumer pops: a run is
/// accepted whole or dropped whole (counted), its records come out
/// together and in order, and every accepted record comes out once.
#[test]
fn loom_drop_ring_runs_all_or_nothing() {
    loom::model(|| {
        let ring = Arc::new(DropRing::new(2).unwrap());
        let producers: Vec<_> = (0..2u64)
            .map(|p| {
                let ring = Arc::clone(&ring);
                thread::spawn(move || match ring.claim_run(2) {
                    Some(pos) => {
                        for i in 0..2 {
                            ring.commit(pos + i, &ev(p, i));
                        }
                        2
                    }
                    None => 0u64,
                })
            })
            .collect();
        let mut seen = Vec::new();
        ring.pop_batch(&mut seen, 2);
        let accepted: u64 = producers.into_iter().map(|h| h.join().unwrap()).sum();
        ring.pop_batch(&mut seen, 4);
        seen.iter().for_each(intact);
        assert_eq!(seen.len() as u64, accepted);
        // Runs do not interleave: records come in (p, 0), (p, 1) pairs.
        for pair in seen.chunks(2) {
            assert_eq!(pair.len(), 2);
            assert_eq!(pair[0].args[0], pair[1].args[0]);
            assert_eq!((pair[0].args[1], pair[1].args[1]), (0, 1));
        }
        let c = ring.counters();
        assert_eq!((c.accepted, c.delivered, c.queued), (accepted, accepted, 0));
        assert_eq!(c.accepted + c.dropped, 4);
    });
}
