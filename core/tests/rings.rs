//! The static rings against a reference model: a `VecDeque` of slots
//! (`None` = reserved, not yet posted), capacity `N`. Every sequence of
//! gets, posts (in any order), pushes and takes gives the same events, the
//! same loss deltas and the same counters, and the counters' invariants
//! hold after every step.

use std::collections::VecDeque;

use proptest::prelude::*;
use qtrace_core::ring::{CircularRing, FixedRing, Ring, Taken};
use qtrace_core::{Event, EventId, QueueCounters, Reservation};

const N: usize = 4;

#[derive(Clone, Debug)]
enum Op {
    /// `get` then `post` at once.
    Push,
    /// `get`, keeping the reservation.
    Get,
    /// `post` the held reservation `i % held.len()`.
    Post(usize),
    /// `take` into a buffer of this many events.
    Take(usize),
    /// `abandon_reserved`.
    Abandon,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => Just(Op::Push),
        2 => Just(Op::Get),
        2 => (0usize..8).prop_map(Op::Post),
        1 => (0usize..6).prop_map(Op::Take),
        1 => Just(Op::Abandon),
    ]
}

/// The model: `slots` holds (ticket, event if posted), oldest first.
#[derive(Default)]
struct Model {
    circular: bool,
    slots: VecDeque<(u64, Option<Event>)>,
    next: u64,
    c: QueueCounters,
    overwritten_since: u64,
    dropped_since: u64,
}

impl Model {
    fn get(&mut self) -> Option<u64> {
        if self.circular {
            if self.slots.len() == N {
                self.slots.pop_front();
                self.c.overwritten += 1;
                self.overwritten_since += 1;
            }
        } else if self.next >= N as u64 {
            self.c.dropped += 1;
            self.dropped_since += 1;
            return None;
        }
        let t = self.next;
        self.next += 1;
        self.c.accepted += 1;
        self.slots.push_back((t, None));
        Some(t)
    }

    fn post(&mut self, ticket: u64, e: Event) {
        if let Some(slot) = self.slots.iter_mut().find(|s| s.0 == ticket) {
            slot.1 = Some(e);
        }
    }

    fn take(&mut self, max: usize) -> (Vec<Event>, Taken) {
        let mut out = Vec::new();
        while out.len() < max {
            match self.slots.front() {
                Some((_, Some(e))) => {
                    out.push(*e);
                    self.slots.pop_front();
                    self.c.delivered += 1;
                }
                _ => break,
            }
        }
        let taken = Taken {
            events: out.len(),
            overwritten: std::mem::take(&mut self.overwritten_since),
            dropped: std::mem::take(&mut self.dropped_since),
        };
        (out, taken)
    }

    fn abandon(&mut self) -> u64 {
        let mut n = 0;
        while let Some((_, None)) = self.slots.front() {
            self.slots.pop_front();
            self.c.overwritten += 1;
            self.overwritten_since += 1;
            n += 1;
        }
        n
    }

    fn counters(&self) -> QueueCounters {
        QueueCounters {
            queued: self.slots.len() as u64,
            ..self.c
        }
    }
}

fn run(ring: &dyn Ring, circular: bool, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut model = Model {
        circular,
        ..Model::default()
    };
    let mut held: Vec<(Reservation, u64)> = Vec::new();
    let mut time = 0u64;
    let mut event = || {
        time += 1;
        Event::new(time, EventId(0x04), 1, [time, !time])
    };
    for op in ops {
        match op {
            Op::Push => {
                let e = event();
                let accepted = ring.push(&e);
                let t = model.get();
                prop_assert_eq!(accepted, t.is_some());
                if let Some(t) = t {
                    model.post(t, e);
                }
            }
            Op::Get => {
                let r = ring.get();
                let t = model.get();
                prop_assert_eq!(r.as_ref().map(Reservation::ticket), t);
                if let (Some(r), Some(t)) = (r, t) {
                    held.push((r, t));
                }
            }
            Op::Post(i) => {
                if !held.is_empty() {
                    let (r, t) = held.remove(i % held.len());
                    let e = event();
                    ring.post(r, &e);
                    model.post(t, e);
                }
            }
            Op::Take(max) => {
                let mut buf = vec![Event::ZERO; *max];
                let taken = ring.take(&mut buf);
                let (want, want_taken) = model.take(*max);
                prop_assert_eq!(taken, want_taken);
                prop_assert_eq!(&buf[..taken.events], &want[..]);
            }
            Op::Abandon => {
                prop_assert_eq!(ring.abandon_reserved(), model.abandon());
            }
        }
        let c = ring.counters();
        prop_assert_eq!(c, model.counters());
        prop_assert!(c.is_consistent(), "{:?}", c);
    }
    Ok(())
}

fn config() -> ProptestConfig {
    ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 512 })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn circular_ring_matches_the_model(ops in prop::collection::vec(op(), 0..48)) {
        run(&CircularRing::<N>::new(), true, &ops)?;
    }

    #[test]
    fn fixed_ring_matches_the_model(ops in prop::collection::vec(op(), 0..48)) {
        run(&FixedRing::<N>::new(), false, &ops)?;
    }
}

#[test]
fn circular_ring_ignores_a_post_for_an_overwritten_slot() {
    let ring = CircularRing::<2>::new();
    let late = ring.get().unwrap();
    for t in 1..=3 {
        ring.push(&Event::new(t, EventId(0x04), 0, [t, 0]));
    }
    // The held ticket was evicted (counted overwritten): its post is ignored
    // and does not clobber the newer event in its slot.
    ring.post(late, &Event::new(99, EventId(0x04), 0, [99, 0]));
    let mut out = [Event::ZERO; 4];
    let taken = ring.take(&mut out);
    assert_eq!(
        taken,
        Taken {
            events: 2,
            overwritten: 2,
            dropped: 0
        }
    );
    assert_eq!((out[0].time, out[1].time), (2, 3));
    let c = ring.counters();
    assert_eq!(
        (c.accepted, c.overwritten, c.delivered, c.queued),
        (4, 2, 2, 0)
    );
}
