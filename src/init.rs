//! Two-phase initialisation, as in S.Ha.R.K. (`TRC_init_phase1`,
//! `TRC_init_phase2`), and shutdown.
//!
//! - **Phase 1** ([`phase1`]) builds a [`Tracer`] with the built-in classes and
//!   queue types. Then, still in phase 1: register more queue types, create
//!   queues, define classes, assign events and classes to queues, switch
//!   events and classes on or off. This may allocate.
//! - **Phase 2** ([`phase2`]) activates every queue: background tasks start,
//!   files and sockets open. Run it once; a second run is
//!   [`Error::Phase2Twice`].
//! - **Shutdown** ([`shutdown`]) suspends the tracer, terminates every queue
//!   so it saves or flushes, and reports every queue's counters.
//!
//! # Events logged between phase 1 and phase 2
//!
//! An event logged after it has been assigned to a queue is recorded into that
//! queue at once, even before phase 2: the queue's memory exists from its
//! creation. Memory queues (fixed, circular) simply hold it. Queues that
//! drain in the background (online, UDP) hold it in their buffer until their
//! task starts at phase 2; if the buffer fills first, the excess is dropped and
//! counted like any other drop, and the loss is written into the trace. So
//! start-up events are kept, and nothing is lost silently. Events that are not
//! assigned to a queue are not recorded, in any phase.
//!
//! ```
//! use qtrace::{init, classes::system, queues::Dummy, Config};
//!
//! let tracer = init::phase1(Config::default());
//! let q = tracer.create_queue::<Dummy>(()).unwrap();
//! tracer.assign_class(system::CLASS, q).unwrap();
//! tracer.log_event(system::CREATE, [1, 0]); // recorded: assigned before phase 2
//! init::phase2(&tracer).unwrap();
//! tracer.log_event(system::ACTIVATE, [1, 0]);
//! let report = init::shutdown(&tracer).unwrap();
//! assert_eq!(report.queues[0].counters.accepted, 2);
//! ```

use crate::error::Error;
use crate::tracer::{Config, ShutdownReport, Tracer};

/// Phase 1: a tracer with the built-in classes and queue types registered.
pub fn phase1(config: Config) -> Tracer {
    Tracer::with_config(config)
}

/// Phase 2: activates every queue ([`Tracer::activate`]).
pub fn phase2(tracer: &Tracer) -> Result<(), Error> {
    tracer.activate()
}

/// Suspends, terminates every queue, and reports ([`Tracer::shutdown`]).
pub fn shutdown(tracer: &Tracer) -> Result<ShutdownReport, Error> {
    tracer.shutdown()
}
