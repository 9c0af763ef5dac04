//! A drained queue's own counters (FORMAT.md 1.3.4): its fill level and
//! its losses so far, sampled by its task at the start of each round and
//! sent (UDP) or written (online) as counter records of the reserved class
//! `qtrace`. Never the producers': `log_event` and the queue's get/post are
//! unchanged.
//!
//! A sample goes into the stream or file right after the events that were
//! in the ring when it was taken (they were logged before it), so the
//! records stay in time order. The UDP task places it with
//! `drain_sampled`; the online drainer with `Sample::due` and
//! `Sample::drained`, as it places hoops records and holds combine runs
//! whole.

use std::sync::Arc;

use qtrace_core::classes::counter::CounterKind;

use crate::classes::{Catalog, ClassSpec};
use crate::clock::Clock;
use crate::model::event::TRACER_SOURCE;
use crate::queue::config_error::ConfigError;
use crate::queue::queue_trait::QueueContext;
use crate::ring::DropRing;
use crate::{Event, EventId};

/// The reserved class of the queue counters.
pub(crate) const CLASS_NAME: &str = "qtrace";

/// Records in one sample: fill, then losses.
pub(crate) const SAMPLE_RECORDS: usize = 2;

/// The counters' events and the clock that stamps them.
#[derive(Debug)]
pub(crate) struct QueueCounterIds {
    fill: EventId,
    lost: EventId,
    clock: Clock,
    /// The sampling queue's handle: every sample's `arg1`, so readers keep
    /// the series of several queues apart (FORMAT.md 1.3.4).
    queue: u64,
}

/// `ctx` with the queue counters' class added to its catalog (after every
/// event the tracer defined: the tracer never logs these ids), and their
/// ids. A class named `qtrace` already defined is an error, which names
/// `off`, the call that turns the counters off.
pub(crate) fn with_queue_counters(
    ctx: &QueueContext,
    queue_type: &'static str,
    off: &'static str,
) -> Result<(QueueContext, QueueCounterIds), ConfigError> {
    let mut catalog: Catalog = (*ctx.catalog).clone();
    let class = catalog
        .define(
            ClassSpec::new(CLASS_NAME, "the tracer's own counters")
                .counter(
                    "queue.fill",
                    "events in the queue when its task sampled it",
                    CounterKind::U64,
                    "events",
                )
                .counter(
                    "queue.lost",
                    "events the queue dropped so far (full)",
                    CounterKind::U64,
                    "events",
                ),
        )
        .map_err(|e| ConfigError::InvalidParameter {
            queue_type,
            reason: format!(
                "the queue counters need the class name `{CLASS_NAME}` (reserved for them), which the catalog cannot take ({e}): rename that class, or turn the counters off ({off})"
            ),
        })?;
    let (Some(fill), Some(lost)) = (
        class.event("queue.fill.counter"),
        class.event("queue.lost.counter"),
    ) else {
        unreachable!("the class was just defined with both counters");
    };
    let ids = QueueCounterIds {
        fill,
        lost,
        clock: ctx.clock.clone(),
        queue: u64::from(ctx.handle.0),
    };
    let ctx = QueueContext {
        catalog: Arc::new(catalog),
        ..ctx.clone()
    };
    Ok((ctx, ids))
}

/// A sample waiting for its place in the stream.
#[derive(Debug)]
pub(crate) struct Sample {
    /// Events still to drain before it (those in the ring when taken).
    after: usize,
    records: [Event; SAMPLE_RECORDS],
}

impl Sample {
    /// Whether every event queued when it was taken is drained: it goes
    /// in next.
    pub(crate) fn due(&self) -> bool {
        self.after == 0
    }

    /// Events still to drain before it.
    pub(crate) fn after(&self) -> usize {
        self.after
    }

    /// `n` more events drained.
    pub(crate) fn drained(&mut self, n: usize) {
        self.after = self.after.saturating_sub(n);
    }

    /// Its records: fill, then losses.
    pub(crate) fn records(&self) -> &[Event; SAMPLE_RECORDS] {
        &self.records
    }
}

impl QueueCounterIds {
    /// Samples `ring` now: its fill level and drop total.
    pub(crate) fn sample(&self, ring: &DropRing) -> Sample {
        let fill = ring.len();
        let lost = ring.dropped();
        let t = self.clock.now();
        Sample {
            after: fill,
            records: [
                Event::new(t, self.fill, TRACER_SOURCE, [fill as u64, self.queue]),
                Event::new(t, self.lost, TRACER_SOURCE, [lost, self.queue]),
            ],
        }
    }
}

/// Drains at most `max` events of `ring` into `push`, `room` records in
/// all; a due `sample` goes in (and is taken) once the events before it
/// are drained, if room for it is left. Returns the events drained and the
/// sample records pushed.
pub(crate) fn drain_sampled(
    ring: &DropRing,
    sample: &mut Option<Sample>,
    mut room: usize,
    mut max: usize,
    mut push: impl FnMut(&Event) -> bool,
) -> (usize, usize) {
    let (mut drained, mut pushed) = (0, 0);
    loop {
        if let Some(s) = sample {
            if s.after == 0 && room >= SAMPLE_RECORDS {
                for r in &s.records {
                    push(r);
                }
                room -= SAMPLE_RECORDS;
                pushed += SAMPLE_RECORDS;
                *sample = None;
            }
        }
        let limit = match sample {
            Some(s) => s.after.min(room).min(max),
            None => room.min(max),
        };
        if limit == 0 {
            return (drained, pushed);
        }
        let n = ring.drain(limit, |e| {
            push(e);
        });
        drained += n;
        room -= n;
        max -= n;
        match sample {
            Some(s) => s.after -= n,
            None => return (drained, pushed),
        }
        if n < limit {
            return (drained, pushed);
        }
    }
}
