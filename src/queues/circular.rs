//! The circular queue: keeps the last N events, overwriting the oldest and
//! counting every overwrite; saves oldest-first at shutdown; takes snapshots
//! while the program runs (a flight recorder).
//!
//! ```
//! use qtrace::classes::user;
//! use qtrace::queues::{Circular, CircularParams};
//! use qtrace::{Config, Tracer};
//!
//! let dir = std::env::temp_dir().join(format!("qtrace-doc-circular-{}", std::process::id()));
//! let tracer = Tracer::with_config(Config::default().with_output_dir(&dir));
//! let q = tracer.create_queue::<Circular>(CircularParams { capacity: 4, ..Default::default() })?;
//! tracer.assign_event(user::USER0, q)?;
//! tracer.activate()?;
//! for i in 0..10 {
//!     tracer.log_event(user::USER0, [i, 0]);
//! }
//! let circular = tracer.queue(q)?.as_circular().unwrap();
//! let now = circular.snapshot_events();
//! // A hoops record for the 6 overwritten events, then the last 4.
//! assert_eq!(now[0].args, [6, 0]);
//! assert_eq!(now[1..].iter().map(|e| e.args[0]).collect::<Vec<_>>(), [6, 7, 8, 9]);
//! let report = tracer.shutdown()?;
//! assert_eq!(report.queues[0].counters.overwritten, 6);
//! assert_eq!(report.queues[0].status.files, [dir.join("queue0-circular.qtr")]);
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), qtrace::Error>(())
//! ```

use std::path::{Path, PathBuf};

use super::ring::OverwriteRing;
use super::save::{default_path, with_hoops, write_trace, StatusCell};
use crate::error::Error;
use crate::event::Event;
use crate::queue::{
    AnyQueue, Queue, QueueContext, QueueCounters, QueueStatus, QueueType, Reservation,
};

/// The circular queue type (`"circular"`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Circular;

/// Parameters of a circular queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CircularParams {
    /// Events kept: a power of two (default 8192).
    pub capacity: usize,
    /// Where `terminate` saves; default `<output_dir>/queue<handle>-circular.qtr`.
    pub file: Option<PathBuf>,
}

impl Default for CircularParams {
    fn default() -> Self {
        CircularParams {
            capacity: 8192,
            file: None,
        }
    }
}

impl QueueType for Circular {
    type Params = CircularParams;
    const NAME: &'static str = "circular";

    fn create(&self, params: CircularParams, ctx: &QueueContext) -> Result<AnyQueue, Error> {
        let ring = OverwriteRing::new(params.capacity).map_err(|e| Error::InvalidParameter {
            queue_type: Self::NAME,
            reason: e.to_string(),
        })?;
        Ok(AnyQueue::CircularQueue(CircularQueue {
            ring,
            file: params.file.unwrap_or_else(|| default_path(ctx)),
            ctx: ctx.clone(),
            status: StatusCell::default(),
        }))
    }
}

/// A queue that keeps the most recent `capacity` events.
///
/// Many threads log at once without a lock (see
/// [`OverwriteRing`]). A producer that would
/// overwrite a slot another producer is still writing drops its event
/// instead, and counts it; no reader ever sees a torn record.
///
/// Saved files and snapshots hold the events oldest-first, with a hoops
/// record (tracer class, `args = [lost, queue]`) at the start for the events
/// overwritten before the oldest one kept, and wherever events are missing in
/// between.
#[derive(Debug)]
pub struct CircularQueue {
    ring: OverwriteRing,
    file: PathBuf,
    ctx: QueueContext,
    status: StatusCell,
}

impl CircularQueue {
    /// The number of events kept.
    pub fn capacity(&self) -> usize {
        self.ring.capacity()
    }

    /// The file `terminate` saves to.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The current contents, oldest-first, with hoops records for what is
    /// missing (see [`CircularQueue`]), without stopping producers. Events
    /// being written at this instant are left out.
    pub fn snapshot_events(&self) -> Vec<Event> {
        let records = self.ring.read();
        let end = records.last().map_or(0, |r| r.ticket + 1);
        with_hoops(&records, end, self.ctx.handle, || self.ctx.clock.now())
    }

    /// Writes [`CircularQueue::snapshot_events`] to `path` as a trace file
    /// while producers keep logging (flight-recorder use). Returns the number
    /// of records written (events and hoops). The queue's counters do not
    /// change: the events stay in the queue.
    ///
    /// Errors: [`Error::Io`] naming the path (also counted in
    /// [`Queue::status`]).
    pub fn snapshot(&self, path: impl AsRef<Path>) -> Result<u64, Error> {
        let path = path.as_ref();
        let events = self.snapshot_events();
        let result = write_trace(path, &self.ctx, &events).map(|()| events.len() as u64);
        self.status.record(path, result)
    }
}

impl Queue for CircularQueue {
    #[inline(always)]
    fn get(&self) -> Option<Reservation> {
        self.ring.claim().map(Reservation::new)
    }

    #[inline(always)]
    fn post(&self, reservation: Reservation, event: &Event) {
        self.ring.commit(reservation.ticket(), event);
    }

    /// Saves the events oldest-first, with a leading hoops record for the
    /// overwritten ones. On failure the events stay in the queue (counted as
    /// queued, not delivered) and the error is also in [`Queue::status`].
    fn terminate(&self, ctx: &QueueContext) -> Result<(), Error> {
        let records = self.ring.consume();
        let end = self.ring.attempts();
        let events = with_hoops(&records, end, ctx.handle, || ctx.clock.now());
        let result = write_trace(&self.file, ctx, &events);
        if result.is_err() {
            self.ring.restore(&records);
        }
        self.status.record(&self.file, result)
    }

    fn counters(&self) -> QueueCounters {
        let c = self.ring.counters();
        QueueCounters {
            accepted: c.accepted,
            dropped: c.dropped,
            overwritten: c.overwritten,
            delivered: c.delivered,
            queued: c.queued,
        }
    }

    fn status(&self) -> QueueStatus {
        self.status.get()
    }
}
