//! The fixed and circular queues against a `VecDeque` reference model: for
//! random capacities and random sequences of logging, snapshots and a
//! shutdown (followed by late logging), they keep exactly what the model
//! keeps, save exactly the model's events (with hoops records where the
//! model lost events), and their counters match the model's.

use crate::queues_support;

use std::collections::VecDeque;

use proptest::prelude::*;
use qtrace::classes::user;
use qtrace::queue::{Queue, QueueCounters};
use qtrace::queues::{AnyQueue, QueueType};
use qtrace::queues::{Circular, CircularParams, Fixed, FixedParams};
use qtrace::Event;
use queues_support::{context, hoops, read_trace, scratch};

const HANDLE: u16 = 5;
/// The manual clock's reading (used for a hoops record with no event to
/// take its time from).
const NOW: u64 = 1_000_000;

#[derive(Clone, Debug)]
enum Op {
    Log(u16),
    Snapshot,
    Shutdown,
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            6 => (1u16..40).prop_map(Op::Log),
            2 => Just(Op::Snapshot),
            1 => Just(Op::Shutdown),
        ],
        0..24,
    )
}

fn event(ticket: u64) -> Event {
    Event::new(ticket * 3 + 1, user::USER0, 9, [ticket, !ticket])
}

/// The model: what a queue holds, as (ticket, saved) pairs.
#[derive(Default)]
struct Model {
    cap: usize,
    circular: bool,
    held: VecDeque<(u64, bool)>,
    attempts: u64,
    dropped: u64,
    overwritten: u64,
    delivered: u64,
}

impl Model {
    fn log(&mut self) {
        let t = self.attempts;
        self.attempts += 1;
        if self.held.len() == self.cap {
            if !self.circular {
                self.dropped += 1;
                return;
            }
            let (_, saved) = self.held.pop_front().unwrap();
            if !saved {
                self.overwritten += 1;
            }
        }
        self.held.push_back((t, false));
    }

    fn counters(&self) -> QueueCounters {
        let queued = self.held.iter().filter(|(_, s)| !s).count() as u64;
        QueueCounters {
            accepted: self.attempts - self.dropped,
            dropped: self.dropped,
            overwritten: self.overwritten,
            delivered: self.delivered,
            queued,
        }
    }

    /// What a trace ending at the newest event (`end = None`) or at ticket
    /// `end` holds: the unsaved events in order, with a hoops record before them for
    /// every earlier ticket, and one after them up to `end`.
    fn trace(&self, end: Option<u64>) -> Vec<Event> {
        let unsaved: Vec<u64> = self
            .held
            .iter()
            .filter(|(_, s)| !s)
            .map(|(t, _)| *t)
            .collect();
        let mut out = Vec::new();
        let mut next = 0;
        for &t in &unsaved {
            // Single-threaded, the unsaved tickets are consecutive.
            assert!(next == 0 || t == next);
            if t > next {
                out.push(hoops(event(t).time, t - next, HANDLE));
            }
            out.push(event(t));
            next = t + 1;
        }
        let end = end.unwrap_or(next);
        if end > next {
            let time = unsaved.last().map_or(NOW, |&t| event(t).time);
            out.push(hoops(time, end - next, HANDLE));
        }
        out
    }

    fn save(&mut self) -> Vec<Event> {
        let out = self.trace(Some(self.attempts));
        for (_, saved) in self.held.iter_mut() {
            if !*saved {
                *saved = true;
                self.delivered += 1;
            }
        }
        out
    }
}

fn snapshot(q: &AnyQueue) -> Vec<Event> {
    match (q.as_circular(), q.as_fixed()) {
        (Some(c), _) => c.snapshot_events(),
        (_, Some(f)) => f.snapshot_events(),
        _ => unreachable!(),
    }
}

fn run(queue: AnyQueue, mut model: Model, ops: Vec<Op>, ctx: qtrace::queue::QueueContext) {
    let file = ctx
        .output_dir
        .join(format!("queue{HANDLE}-{}.qtr", ctx.type_name));
    let mut shut = false;
    for op in ops {
        match op {
            Op::Log(n) => {
                for _ in 0..n {
                    let t = model.attempts;
                    if let Some(r) = queue.get() {
                        queue.post(r, &event(t));
                    }
                    model.log();
                }
            }
            Op::Snapshot => {
                // A circular snapshot ends at its newest event; a fixed one
                // also reports the drops so far.
                let end = (!model.circular).then_some(model.attempts);
                assert_eq!(snapshot(&queue), model.trace(end));
            }
            Op::Shutdown if !shut => {
                shut = true;
                queue.terminate(&ctx).unwrap();
                let (header, saved) = read_trace(&file);
                assert_eq!(header.queue().map(|(h, _)| h.0), Some(HANDLE));
                assert_eq!(saved, model.save());
                assert_eq!(queue.status().files, std::slice::from_ref(&file));
            }
            Op::Shutdown => {}
        }
        let c = queue.counters();
        assert_eq!(c, model.counters());
        assert!(c.is_consistent());
    }
    std::fs::remove_dir_all(&ctx.output_dir).ok();
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 256 },
        ..ProptestConfig::default()
    })]

    #[test]
    fn circular_matches_model(log2 in 0u32..6, ops in ops()) {
        let cap = 1usize << log2;
        let dir = scratch("model-circular");
        let ctx = context(HANDLE, "circular", &dir, NOW);
        let q = Circular.create(CircularParams::default().with_capacity(cap), &ctx).unwrap();
        run(q, Model { cap, circular: true, ..Model::default() }, ops, ctx);
    }

    #[test]
    fn fixed_matches_model(cap in 1usize..40, ops in ops()) {
        let dir = scratch("model-fixed");
        let ctx = context(HANDLE, "fixed", &dir, NOW);
        let q = Fixed.create(FixedParams::default().with_capacity(cap).with_ring(Default::default()), &ctx).unwrap();
        run(q, Model { cap, circular: false, ..Model::default() }, ops, ctx);
    }
}
