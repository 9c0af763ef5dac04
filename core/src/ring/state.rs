//! The state both rings share: slots, tickets and counters.

use crate::{Event, QueueCounters};

use super::Taken;

/// Tickets 0, 1, 2, … are handed out by `get`; ticket `t` lives in slot
/// `t % N` and is posted when `posted[t % N] == t + 1`. Tickets
/// `tail..head` are queued (posted or not yet).
pub(super) struct State<const N: usize> {
    slots: [Event; N],
    posted: [u64; N],
    pub(super) head: u64,
    pub(super) tail: u64,
    accepted: u64,
    pub(super) dropped: u64,
    overwritten: u64,
    delivered: u64,
    overwritten_taken: u64,
    dropped_taken: u64,
}

impl<const N: usize> State<N> {
    pub(super) const fn new() -> Self {
        assert!(N > 0, "a ring holds at least one event");
        State {
            slots: [Event::ZERO; N],
            posted: [0; N],
            head: 0,
            tail: 0,
            accepted: 0,
            dropped: 0,
            overwritten: 0,
            delivered: 0,
            overwritten_taken: 0,
            dropped_taken: 0,
        }
    }

    /// Hands out the next ticket (the caller checked there is room or
    /// evicted).
    #[inline]
    pub(super) fn claim(&mut self) -> u64 {
        let t = self.head;
        self.head += 1;
        self.accepted += 1;
        t
    }

    /// Counts one event refused.
    #[inline]
    pub(super) fn drop_one(&mut self) {
        self.dropped += 1;
    }

    /// Evicts the oldest queued ticket (counted overwritten).
    #[inline]
    pub(super) fn evict_oldest(&mut self) {
        self.tail += 1;
        self.overwritten += 1;
    }

    #[inline]
    pub(super) fn post(&mut self, ticket: u64, event: &Event) {
        // A ticket below the tail was evicted (and counted) before its post;
        // one at or past the head was never handed out.
        if ticket < self.tail || ticket >= self.head {
            return;
        }
        let i = (ticket % N as u64) as usize;
        self.slots[i] = *event;
        self.posted[i] = ticket + 1;
    }

    pub(super) fn counters(&self) -> QueueCounters {
        QueueCounters {
            accepted: self.accepted,
            dropped: self.dropped,
            overwritten: self.overwritten,
            delivered: self.delivered,
            queued: self.head - self.tail,
        }
    }

    /// Gives up the oldest queued tickets that were reserved but not
    /// posted (up to the first posted one): counted overwritten, so a later
    /// `post` for them is ignored. Returns how many.
    pub(super) fn abandon_reserved(&mut self) -> u64 {
        let mut n = 0;
        while self.tail < self.head {
            let i = (self.tail % N as u64) as usize;
            if self.posted[i] == self.tail + 1 {
                break;
            }
            self.tail += 1;
            self.overwritten += 1;
            n += 1;
        }
        n
    }

    pub(super) fn take(&mut self, out: &mut [Event]) -> Taken {
        // The queued tickets that fit, the tail and count moved once.
        let queued = self.head - self.tail;
        let want = (out.len() as u64).min(queued) as usize;
        let mut n = 0;
        for slot in &mut out[..want] {
            let t = self.tail + n as u64;
            let i = (t % N as u64) as usize;
            if self.posted[i] != t + 1 {
                break;
            }
            *slot = self.slots[i];
            self.posted[i] = 0;
            n += 1;
        }
        self.tail += n as u64;
        self.delivered += n as u64;
        let taken = Taken {
            events: n,
            overwritten: self.overwritten - self.overwritten_taken,
            dropped: self.dropped - self.dropped_taken,
        };
        self.overwritten_taken = self.overwritten;
        self.dropped_taken = self.dropped;
        taken
    }
}
