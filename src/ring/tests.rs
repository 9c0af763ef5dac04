//! Unit tests of both rings.

use super::*;
use crate::model::event::Event;
use crate::sync::Ordering;
use crate::EventId;
use capacity::BadCapacity;

fn ev(i: u64) -> Event {
    Event::new(i, EventId(0x0b), 7, [i, !i])
}

#[test]
fn capacity_must_be_power_of_two() {
    assert!(check_capacity(1).is_ok());
    assert!(check_capacity(8192).is_ok());
    assert_eq!(
        check_capacity(1000),
        Err(BadCapacity {
            requested: 1000,
            below: 512,
            above: 1024,
            min: 1
        })
    );
    assert_eq!(
        DropRing::new(1).unwrap_err().to_string(),
        "capacity 1 is not a power of two between 2 and 2^32; use 2"
    );
    assert!(DropRing::new(2).is_ok());
    assert!(matches!(OverwriteRing::new(3), Err(RingError::Capacity(_))));
    assert_eq!(check_capacity(0).unwrap_err().above, 1);
    assert_eq!(
        check_capacity(1000).unwrap_err().to_string(),
        "capacity 1000 is not a power of two between 1 and 2^32; use 512 or 1024"
    );
}

#[test]
fn refused_allocation_is_an_error() {
    // More bytes than an allocation may span: refused without allocating.
    let n = usize::MAX / 32;
    let e = slots(n, |_| 0).unwrap_err();
    assert_eq!(
        e,
        RingError::OutOfMemory {
            capacity: n,
            bytes: usize::MAX
        }
    );
    assert!(e.to_string().ends_with("choose a smaller capacity"));
}

#[test]
fn overwrite_keeps_last_n_in_order() {
    let ring = OverwriteRing::new(8).unwrap();
    for i in 0..21 {
        assert!(ring.push(&ev(i)));
    }
    let got: Vec<Ticketed> = ring.read();
    assert_eq!(
        got.iter().map(|r| r.ticket).collect::<Vec<_>>(),
        (13..21).collect::<Vec<_>>()
    );
    assert!(got.iter().all(|r| r.event == ev(r.ticket)));
    assert_eq!(
        ring.counters(),
        RingCounters {
            accepted: 21,
            dropped: 0,
            overwritten: 13,
            delivered: 0,
            queued: 8
        }
    );
}

#[test]
fn consume_marks_delivered_and_later_overwrites_are_not_losses() {
    let ring = OverwriteRing::new(4).unwrap();
    for i in 0..6 {
        ring.push(&ev(i));
    }
    assert_eq!(ring.consume().len(), 4);
    assert!(ring.consume().is_empty());
    let again = ring.consume();
    assert_eq!(ring.restore(&again), 0);
    for i in 6..9 {
        ring.push(&ev(i));
    }
    assert_eq!(
        ring.counters(),
        RingCounters {
            accepted: 9,
            dropped: 0,
            overwritten: 2,
            delivered: 4,
            queued: 3
        }
    );
}

#[test]
fn restore_undoes_consume() {
    let ring = OverwriteRing::new(4).unwrap();
    for i in 0..3 {
        ring.push(&ev(i));
    }
    let taken = ring.consume();
    assert_eq!(ring.counters().delivered, 3);
    assert_eq!(ring.restore(&taken), 3);
    assert_eq!(ring.counters().delivered, 0);
    assert_eq!(ring.counters().queued, 3);
    assert_eq!(ring.read(), taken);
}

#[test]
fn busy_slot_drops_lapping_producer() {
    let ring = OverwriteRing::new(2).unwrap();
    let stalled = ring.claim().unwrap(); // ticket 0, slot 0 busy
    assert!(ring.push(&ev(1))); // slot 1
    assert!(!ring.push(&ev(2))); // slot 0 busy: dropped
    assert!(ring.push(&ev(3))); // slot 1 overwritten
    ring.commit(stalled, &ev(0));
    let got: Vec<u64> = ring.read().iter().map(|r| r.ticket).collect();
    assert_eq!(got, [0, 3]);
    assert_eq!(
        ring.counters(),
        RingCounters {
            accepted: 3,
            dropped: 1,
            overwritten: 1,
            delivered: 0,
            queued: 2
        }
    );
}

#[test]
fn lapped_producer_drops_instead_of_overwriting_newer() {
    let ring = OverwriteRing::new(1).unwrap();
    // Simulate a producer that took ticket 0 and stalled before its CAS:
    // take the ticket by hand.
    let t0 = ring.tail.fetch_add(1, Ordering::Relaxed);
    assert!(ring.push(&ev(1)));
    // The stalled producer now resumes its claim of ticket 0: refused.
    assert_eq!(ring.claim_ticket(t0), None);
    assert_eq!(ring.read()[0].ticket, 1);
    assert_eq!(ring.read()[0].event, ev(1));
    let c = ring.counters();
    assert_eq!((c.accepted, c.dropped, c.queued), (1, 1, 1));
}

#[test]
fn read_skips_a_record_being_written() {
    let ring = OverwriteRing::new(4).unwrap();
    ring.push(&ev(0));
    let t = ring.claim().unwrap();
    assert_eq!(ring.read().len(), 1);
    ring.commit(t, &ev(1));
    assert_eq!(ring.read().len(), 2);
}

#[test]
fn runs_claim_consecutive_slots_or_none() {
    let ring = DropRing::new(8).unwrap();
    assert_eq!(ring.claim_run(5), Some(0));
    for p in 0..5 {
        ring.commit(p, &ev(p));
    }
    assert_eq!(ring.claim_run(4), None); // 3 free
    assert_eq!(ring.dropped(), 4);
    assert_eq!(ring.claim_run(9), None); // more than the capacity
    assert_eq!(ring.dropped(), 13);
    assert_eq!(ring.pop().unwrap().time, 0);
    assert_eq!(ring.claim_run(4), Some(5));
    assert_eq!(ring.accepted(), 9);
    let latched = DropRing::new_latching(4).unwrap();
    assert_eq!(latched.claim_run(5), None);
    assert_eq!(latched.claim_run(1), None); // latched shut
    assert_eq!(latched.dropped(), 6);

    let ring = OverwriteRing::new(4).unwrap();
    assert_eq!(ring.push_run(3, ev_at), 3);
    assert_eq!(ring.push_run(3, |i| ev_at(10 + i)), 3);
    let kept: Vec<u64> = ring.read().iter().map(|r| r.event.time).collect();
    assert_eq!(kept, [2, 10, 11, 12]);
}

fn ev_at(i: usize) -> Event {
    ev(i as u64)
}

#[test]
fn drop_ring_fifo_drop_and_refill() {
    let ring = DropRing::new(4).unwrap();
    for i in 0..6 {
        ring.push(&ev(i));
    }
    assert_eq!((ring.accepted(), ring.dropped(), ring.len()), (4, 2, 4));
    assert_eq!(ring.pop(), Some(ev(0)));
    assert!(ring.push(&ev(6)));
    let mut out = vec![];
    assert_eq!(ring.pop_batch(&mut out, 2), 2);
    assert_eq!(out, [ev(1), ev(2)]);
    let mut rest = vec![];
    assert_eq!(ring.drain(usize::MAX, |e| rest.push(e.time)), 2);
    assert_eq!(rest, [3, 6]);
    assert_eq!(ring.pop(), None);
    assert_eq!(
        ring.counters(),
        RingCounters {
            accepted: 5,
            dropped: 2,
            overwritten: 0,
            delivered: 5,
            queued: 0
        }
    );
}

#[test]
fn drop_ring_stops_at_uncommitted_record() {
    let ring = DropRing::new(4).unwrap();
    let p = ring.claim().unwrap();
    ring.push(&ev(1));
    assert_eq!(ring.pop(), None);
    assert_eq!(ring.len(), 2);
    ring.commit(p, &ev(0));
    assert_eq!(ring.pop(), Some(ev(0)));
    assert_eq!(ring.pop(), Some(ev(1)));
}

/// `drain` takes a batch with one compare-and-swap of the head: with two
/// producers and two consumers racing on a small ring, every accepted
/// record comes out exactly once and each consumer sees each producer's
/// records in order.
#[test]
fn drop_ring_two_consumers_drain_every_record_once() {
    use std::sync::Arc;
    // Fewer under Miri, which runs the four threads some 1,000 times slower.
    const PER: u64 = if cfg!(miri) { 500 } else { 20_000 };
    let ring = Arc::new(DropRing::new(64).unwrap());
    let producers: Vec<_> = (0..2u64)
        .map(|p| {
            let ring = Arc::clone(&ring);
            std::thread::spawn(move || {
                (0..PER)
                    .filter(|&i| ring.push(&Event::new(i, EventId(0x0b), p as u32, [p, i])))
                    .count() as u64
            })
        })
        .collect();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let consumers: Vec<_> = (0..2)
        .map(|_| {
            let (ring, done) = (Arc::clone(&ring), Arc::clone(&done));
            std::thread::spawn(move || {
                let mut seen = Vec::new();
                loop {
                    let finished = done.load(std::sync::atomic::Ordering::Acquire);
                    if ring.drain(7, |e| seen.push(*e)) == 0 {
                        if finished {
                            return seen;
                        }
                        std::thread::yield_now();
                    }
                }
            })
        })
        .collect();
    let accepted: u64 = producers.into_iter().map(|h| h.join().unwrap()).sum();
    done.store(true, std::sync::atomic::Ordering::Release);
    let mut all = Vec::new();
    for c in consumers {
        let seen = c.join().unwrap();
        for p in 0..2u64 {
            let times: Vec<u64> = seen
                .iter()
                .filter(|e| e.args[0] == p)
                .map(|e| e.time)
                .collect();
            assert!(times.windows(2).all(|w| w[0] < w[1]), "out of order");
        }
        all.extend(seen.iter().map(|e| (e.args[0], e.time, e.args[1])));
    }
    ring.drain(usize::MAX, |e| all.push((e.args[0], e.time, e.args[1])));
    assert!(all.iter().all(|&(_, t, i)| t == i), "a torn record");
    let n = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), n, "a record taken twice");
    assert_eq!(n as u64, accepted);
    let c = ring.counters();
    assert_eq!((c.accepted, c.delivered, c.queued), (accepted, accepted, 0));
    assert_eq!(c.accepted + c.dropped, 2 * PER);
}

#[test]
fn drop_ring_many_laps() {
    let ring = DropRing::new(2).unwrap();
    for i in 0..1000 {
        assert!(ring.push(&ev(i)));
        assert_eq!(ring.pop(), Some(ev(i)));
    }
    assert_eq!(ring.counters().delivered, 1000);
}

/// The module's example (was a doc test on the then public ring).
#[test]
fn drop_ring_drops_and_counts_when_full() {
    let ring = DropRing::new(4).unwrap();
    for i in 0..6 {
        ring.push(&Event::new(i, EventId(0x0b), 0, [i, 0]));
    }
    assert_eq!(ring.accepted(), 4);
    assert_eq!(ring.dropped(), 2); // the drainer writes a hoops record for these
    let mut out = Vec::new();
    assert_eq!(ring.pop_batch(&mut out, 16), 4);
    assert_eq!(out.iter().map(|e| e.time).collect::<Vec<_>>(), [0, 1, 2, 3]);
    assert_eq!(ring.popped(), 4);
    assert!(ring.is_empty());
}

/// (Was the doc example of `OverwriteRing` while it was public.)
#[test]
fn overwrite_ring_keeps_the_last_and_counts() {
    let ring = OverwriteRing::new(4).unwrap();
    for i in 0..6u64 {
        if let Some(t) = ring.claim() {
            ring.commit(t, &Event::new(i, EventId(0x0b), 0, [i, 0]));
        }
    }
    let kept: Vec<u64> = ring.read().iter().map(|r| r.ticket).collect();
    assert_eq!(kept, [2, 3, 4, 5]);
    let c = ring.counters();
    assert_eq!(
        (c.accepted, c.dropped, c.overwritten, c.queued),
        (6, 0, 2, 4)
    );
}

/// (Was the doc example of `DropRing::new_latching` while it was public.)
#[test]
fn latching_drop_ring_refuses_until_reopened() {
    let ring = DropRing::new_latching(2).unwrap();
    let ev = |t| Event::new(t, EventId(0x0b), 0, [t, 0]);
    assert!(ring.push(&ev(0)) && ring.push(&ev(1)));
    assert!(!ring.push(&ev(2))); // full: latched
    assert_eq!(ring.pop().unwrap().time, 0);
    assert!(!ring.push(&ev(3))); // still latched, though there is room
    assert_eq!(ring.pop().unwrap().time, 1);
    assert_eq!(ring.reopen(), Some(2)); // empty: 2 drops, mark them here
    assert!(ring.push(&ev(4)));
    assert_eq!(ring.reopen(), None); // not latched
}
