//! Two-phase initialisation, as in S.Ha.R.K. (`TRC_init_phase1`,
//! `TRC_init_phase2`), and shutdown.
//!
//! - **Phase 1** ([`Tracer::new`], [`Tracer::with_config`]) builds a
//!   [`Tracer`] with the built-in classes and queue types. Then, still in phase 1: register more queue types, create
//!   queues, define classes, assign events and classes to queues, switch
//!   events and classes on or off. This may allocate.
//! - **Phase 2** ([`Tracer::activate`]) activates every queue: background tasks start,
//!   files and sockets open. Run it once; a second run is
//!   [`ConfigError::Phase2Twice`].
//! - **Shutdown** ([`Tracer::shutdown`]) suspends the tracer, terminates every queue
//!   so it saves or flushes, and reports every queue's counters.
//!
//! # The standard preset
//!
//! [`standard_phase1`] and [`standard_phase2`] are S.Ha.R.K.'s
//! `TRC_init_phase1_standard` / `TRC_init_phase2_standard`: one call each for
//! a tracer that works out of the box.
//!
//! | queue | type     | size | receives                  | file at shutdown                       |
//! |-------|----------|------|---------------------------|----------------------------------------|
//! | 0     | circular | 8192 | the whole system class    | `<output_dir>/queue0-circular.qtr`     |
//! | 1     | fixed    | 8192 | nothing until you say so  | `<output_dir>/queue1-fixed.qtr`        |
//!
//! Everything else — the user, low-level (interrupt) and semaphore classes,
//! and classes you define — is not recorded until you assign it, between the
//! two calls or later: to queue 1 ([`STANDARD_FIXED`]) to keep the first
//! events of a run, to queue 0 ([`STANDARD_CIRCULAR`]) to keep the latest, or
//! to queues you create (circular-online for long runs, UDP to stream). The
//! tracer class (hoops records) is written by the queues themselves, where
//! they lose events. `output_dir` is [`Config::output_dir`]
//! (`$QTRACE_DIR`, or `qtrace-out`).
//!
//! ```
//! use qtrace::classes::{semaphore, system};
//! use qtrace::{init, Config};
//!
//! let dir = std::env::temp_dir().join(format!("qtrace-doc-standard-{}", std::process::id()));
//! let tracer = init::standard_phase1(Config::default().with_output_dir(&dir))?;
//! tracer.assign_class(semaphore::CLASS, init::STANDARD_FIXED)?;
//! init::standard_phase2(&tracer)?;
//! tracer.log_event(system::SCHEDULE, [3, 0]);
//! tracer.log_event(semaphore::WAIT, [3, 1]);
//! let report = tracer.shutdown()?;
//! assert_eq!(report.queues[0].counters.accepted, 1);
//! assert_eq!(report.queues[1].counters.accepted, 1);
//! assert!(dir.join("queue0-circular.qtr").exists());
//! assert!(dir.join("queue1-fixed.qtr").exists());
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), qtrace::Error>(())
//! ```
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
//! use qtrace::{classes::system, queues::Dummy, Config, Tracer};
//!
//! let tracer = Tracer::with_config(Config::default()); // phase 1
//! let q = tracer.create_queue::<Dummy>(()).unwrap();
//! tracer.assign_class(system::CLASS, q).unwrap();
//! tracer.log_event(system::CREATE, [1, 0]); // recorded: assigned before phase 2
//! tracer.activate().unwrap(); // phase 2
//! tracer.log_event(system::ACTIVATE, [1, 0]);
//! let report = tracer.shutdown().unwrap();
//! assert_eq!(report.queues[0].counters.accepted, 2);
//! ```

use crate::classes::system;
use crate::model::handle::QueueHandle;
use crate::queue::config_error::ConfigError;
use crate::queues::{Circular, CircularParams, Fixed, FixedParams};
use crate::router::tracer::{Config, Tracer};

/// Queue 0 of the standard preset: circular, 8192 events, the system class.
pub const STANDARD_CIRCULAR: QueueHandle = QueueHandle(0);
/// Queue 1 of the standard preset: fixed, 8192 events, nothing assigned.
pub const STANDARD_FIXED: QueueHandle = QueueHandle(1);

/// The standard preset, phase 1 (S.Ha.R.K. `TRC_init_phase1_standard`): a
/// tracer with queue 0 circular and queue 1 fixed (8192 events each, saved to
/// `<output_dir>/queue0-circular.qtr` and `queue1-fixed.qtr` at shutdown) and
/// the whole system class routed to queue 0. Assign other classes before
/// [`standard_phase2`] or later (see the [module documentation](self)).
///
/// # Errors
///
/// [`ConfigError`] if a queue cannot be created: a ring file that cannot be
/// created in [`Config::output_dir`] (make the directory writable, or choose
/// another with [`Config::with_output_dir`]), or a ring file left there by a
/// crashed run (recover it with `qtrace recover`, then remove it).
///
/// ```
/// use qtrace::{init, Config};
/// let dir = std::env::temp_dir().join(format!("qtrace-doc-phase1-{}", std::process::id()));
/// let tracer = init::standard_phase1(Config::default().with_output_dir(&dir))?;
/// assert_eq!(tracer.queue_count(), 2);
/// # tracer.shutdown()?;
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), qtrace::Error>(())
/// ```
pub fn standard_phase1(config: Config) -> Result<Tracer, ConfigError> {
    let tracer = Tracer::with_config(config);
    let circular = tracer.create_queue::<Circular>(CircularParams::default())?;
    let fixed = tracer.create_queue::<Fixed>(FixedParams::default())?;
    debug_assert_eq!((circular, fixed), (STANDARD_CIRCULAR, STANDARD_FIXED));
    tracer.assign_class(system::CLASS, circular)?;
    Ok(tracer)
}

/// The standard preset, phase 2 (S.Ha.R.K. `TRC_init_phase2_standard`):
/// activates every queue, including any created after [`standard_phase1`]
/// (the same as [`Tracer::activate`]).
///
/// # Errors
///
/// As [`Tracer::activate`]: [`ConfigError::Phase2Twice`] if the tracer is
/// already active, or the error of the queue that failed to activate (a file
/// or socket it could not open).
pub fn standard_phase2(tracer: &Tracer) -> Result<(), ConfigError> {
    tracer.activate()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classes::{lowlevel, semaphore, user};

    #[test]
    fn standard_preset_routes_the_system_class_to_a_circular_queue_0() {
        let dir = std::env::temp_dir().join(format!("qtrace-standard-{}", std::process::id()));
        let tracer = standard_phase1(Config::default().with_output_dir(&dir)).unwrap();
        assert_eq!(tracer.queue_count(), 2);
        assert!(tracer
            .queue(STANDARD_CIRCULAR)
            .unwrap()
            .as_circular()
            .is_some());
        assert!(tracer.queue(STANDARD_FIXED).unwrap().as_fixed().is_some());
        for id in tracer.catalog().class(system::CLASS).unwrap().events() {
            assert_eq!(tracer.route_of(id).unwrap(), Some(STANDARD_CIRCULAR));
        }
        for id in [user::USER0, lowlevel::INTERRUPT, semaphore::WAIT] {
            assert_eq!(tracer.route_of(id).unwrap(), None);
        }
        standard_phase2(&tracer).unwrap();
        assert!(matches!(
            standard_phase2(&tracer),
            Err(ConfigError::Phase2Twice)
        ));
        for i in 0..10_000u64 {
            tracer.log_event(system::SCHEDULE, [i, 0]);
        }
        tracer.log_event(user::USER0, [1, 0]);
        let report = tracer.shutdown().unwrap();
        let c0 = report.queues[0].counters;
        assert_eq!((c0.accepted, c0.overwritten), (10_000, 10_000 - 8192));
        assert_eq!(report.queues[1].counters.accepted, 0);
        assert!(dir.join("queue0-circular.qtr").exists());
        assert!(dir.join("queue1-fixed.qtr").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
