//! The producer side shared by the draining queues (circular-online, UDP): a
//! drop-when-full ring plus the high-water wake-up of the queue's task.
//!
//! The wake-up costs the producer one relaxed load and a compare: the task
//! publishes, after each round, the ring position at which the fill level
//! reaches the high-water mark; the one producer that claims exactly that
//! position wakes the task. The ring only drops when it is full, and the mark
//! is at most the capacity, so a producer always crosses the mark before the
//! queue starts dropping.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::model::combine::Run;
use crate::model::event::Event;
use crate::queue::config_error::ConfigError;
use crate::queue::queue_trait::{QueueCounters, Reservation};
use crate::queues::drained::task::{high_water_events, TaskControl};
use crate::ring::DropRing;

/// A drop-when-full ring and its task's wake-up.
#[derive(Debug)]
pub(crate) struct Feed {
    pub(crate) ring: DropRing,
    /// The position whose claim means "the fill level has reached the mark".
    wake_at: AtomicU64,
    high_water: u64,
    pub(crate) control: Arc<TaskControl>,
}

impl Feed {
    /// A feed of `capacity` events (a power of two) waking its task at
    /// `high_water_percent` % full; with `latching`, a full ring refuses
    /// everything until the task has emptied it ([`DropRing::new_latching`]).
    pub(crate) fn new(
        queue_type: &'static str,
        capacity: usize,
        high_water_percent: u8,
        latching: bool,
    ) -> Result<Self, ConfigError> {
        if !(1..=100).contains(&high_water_percent) {
            return Err(ConfigError::InvalidParameter {
                queue_type,
                reason: format!(
                    "high-water mark {high_water_percent}% is out of range: use 1 to 100 (80 is the usual)"
                ),
            });
        }
        let ring = if latching {
            DropRing::new_latching(capacity)
        } else {
            DropRing::new(capacity)
        };
        let ring = ring.map_err(|e| ConfigError::InvalidParameter {
            queue_type,
            reason: format!("size: {e}"),
        })?;
        let high_water = high_water_events(capacity, high_water_percent) as u64;
        Ok(Feed {
            ring,
            wake_at: AtomicU64::new(high_water - 1),
            high_water,
            control: TaskControl::new(),
        })
    }

    /// The queue's counters, given how many events its task has delivered
    /// (written or sent): nothing is ever overwritten, and what is accepted
    /// but not delivered is still queued.
    pub(crate) fn counters(&self, delivered: u64) -> QueueCounters {
        let accepted = self.ring.accepted().max(delivered);
        QueueCounters {
            accepted,
            dropped: self.ring.dropped(),
            overwritten: 0,
            delivered,
            queued: accepted - delivered,
        }
    }

    /// The high-water mark in events.
    pub(crate) fn high_water(&self) -> u64 {
        self.high_water
    }

    /// Reserves a slot, or counts a drop (the ring is full).
    #[inline]
    pub(crate) fn get(&self) -> Option<Reservation> {
        self.ring.claim().map(Reservation::new)
    }

    /// Publishes the event and wakes the task if this event filled the queue
    /// to its high-water mark.
    #[inline]
    pub(crate) fn post(&self, reservation: Reservation, event: &Event) {
        let pos = reservation.ticket();
        self.ring.commit(pos, event);
        if pos == self.wake_at.load(Ordering::Relaxed) {
            self.control.request_wake();
        }
    }

    /// [`get`](Self::get) then [`post`](Self::post) of the event `make`
    /// gives once a slot is claimed (so the clock is read after the claim,
    /// as there); nothing but the drop count when the ring is full.
    #[inline(always)]
    pub(crate) fn push_words(&self, make: impl FnOnce() -> [u64; 4]) {
        if let Some(reservation) = self.get() {
            self.post(reservation, &Event::from_words(make()));
        }
    }

    /// Records a combine run: its records in consecutive positions
    /// ([`DropRing::claim_run`]), or none of them (counted dropped) when
    /// they do not all fit.
    pub(crate) fn post_run(&self, run: &Run<'_>) -> usize {
        let n = run.len();
        let Some(first) = self.ring.claim_run(n) else {
            return 0;
        };
        let wake = self.wake_at.load(Ordering::Relaxed);
        for i in 0..n {
            self.ring.commit(first + i as u64, &run.record(i));
        }
        if (first..first + n as u64).contains(&wake) {
            self.control.request_wake();
        }
        n
    }

    /// After a drain round: arms the next wake-up and, if the queue is
    /// already past the mark again, asks for another round at once.
    pub(crate) fn rearm(&self) {
        let mark = self.ring.popped() + self.high_water - 1;
        self.wake_at.store(mark, Ordering::Relaxed);
        if self.ring.len() as u64 >= self.high_water {
            self.control.request_wake();
        }
    }
}
