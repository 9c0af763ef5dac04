//! Phase 2 and shutdown: suspend and resume, activation of every queue, and
//! the shutdown that terminates them and reports their counters.

use std::sync::Arc;

use super::{run_hook, QueueReport, ShutdownReport, Tracer};
use crate::model::handle::QueueHandle;
use crate::queue::config_error::ConfigError;
use crate::queue::queue_trait::{Queue, QueueContext};
use crate::router::registry::{Phase, Registry};

impl Tracer {
    // ----- phase 2 and shutdown ----------------------------------------------

    /// Phase 2: activates every queue in handle order (starts tasks, opens
    /// files and sockets). A second call is [`ConfigError::Phase2Twice`]. If a
    /// queue fails to activate, the error is returned, the queues before it stay
    /// active, and a later call activates the rest.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Phase2Twice`] on a second call; [`ConfigError::AfterShutdown`]
    /// after [`Tracer::shutdown`]; the error of the first queue whose `activate`
    /// hook failed ([`ConfigError::Hook`], [`ConfigError::Io`]: a file or socket it
    /// could not open; the message says which and what to do).
    ///
    /// ```
    /// let tracer = qtrace::Tracer::new();
    /// let q = tracer.create_queue::<qtrace::queues::Dummy>(())?;
    /// tracer.activate()?;
    /// assert_eq!(tracer.phase(), qtrace::Phase::Active);
    /// assert!(tracer.activate().is_err()); // only once
    /// # let _ = q;
    /// # Ok::<(), qtrace::Error>(())
    /// ```
    pub fn activate(&self) -> Result<(), ConfigError> {
        let mut r = self.registry.lock();
        match r.phase {
            Phase::Configuring => {}
            Phase::Active => return Err(ConfigError::Phase2Twice),
            Phase::ShutDown => {
                return Err(ConfigError::AfterShutdown {
                    operation: "run phase 2",
                })
            }
        }
        for i in 0..r.queue_types.len() {
            if r.activated[i] {
                continue;
            }
            let handle = QueueHandle(i as u16);
            let ctx = self.context(&r, handle, r.queue_types[i]);
            let queue = self.queues[i].get().expect("created queues are set");
            run_hook(handle, "activate", || queue.activate(&ctx))?;
            r.activated[i] = true;
        }
        r.phase = Phase::Active;
        if self.save_on_panic {
            crate::router::panic_save::register(&self.queues);
        }
        Ok(())
    }

    /// Suspends the tracer, terminates every queue in handle order (so each
    /// saves or flushes what it holds) and reports every queue's counters.
    /// Before any queue terminates, snapshot triggers write the snapshot
    /// still pending, if any ([`crate::filters`]).
    /// Logging afterwards is a no-op; configuration calls are
    /// [`ConfigError::AfterShutdown`]. A failing terminate hook is reported in its
    /// queue's entry and does not stop the others.
    ///
    /// A tracer dropped without this call runs it from its `Drop` (for every
    /// queue type alike) and discards the report.
    ///
    /// # Errors
    ///
    /// [`ConfigError::AfterShutdown`] if the tracer was already shut down (the
    /// first call's report is the only one). A queue that fails to save is not an
    /// error of this call: its [`QueueReport`](crate::QueueReport)`::error` says
    /// what failed, and [`ShutdownReport::is_clean`](crate::ShutdownReport::is_clean)
    /// is false.
    ///
    /// ```
    /// use qtrace::classes::user;
    /// use qtrace::queues::Dummy;
    ///
    /// let tracer = qtrace::Tracer::new();
    /// let q = tracer.create_queue::<Dummy>(())?;
    /// tracer.assign_class(user::CLASS, q)?;
    /// tracer.activate()?;
    /// tracer.log_event(user::USER0, [1, 2]);
    /// let report = tracer.shutdown()?;
    /// assert_eq!(report.queues[0].counters.accepted, 1);
    /// assert!(report.is_clean());
    /// tracer.log_event(user::USER0, [3, 4]); // a no-op now
    /// # Ok::<(), qtrace::Error>(())
    /// ```
    pub fn shutdown(&self) -> Result<ShutdownReport, ConfigError> {
        let mut r = self.registry.lock();
        r.require_running("shut down")?;
        r.phase = Phase::ShutDown;
        // No panic hook writes the files while terminate does.
        crate::router::panic_save::deregister(&self.queues);
        self.publish_all(&r);
        // Snapshots still pending are written while every queue still
        // holds its events.
        crate::filters::trigger::stop_tasks(&self.queues[..r.queue_types.len()]);
        let mut report = ShutdownReport::default();
        for i in 0..r.queue_types.len() {
            let handle = QueueHandle(i as u16);
            let ctx = self.context(&r, handle, r.queue_types[i]);
            let queue = self.queues[i].get().expect("created queues are set");
            let error = run_hook(handle, "terminate", || queue.terminate(&ctx))
                .err()
                .map(|e| e.to_string());
            report.queues.push(QueueReport {
                handle,
                type_name: r.queue_types[i],
                counters: queue.counters(),
                status: queue.status(),
                error,
            });
        }
        Ok(report)
    }

    pub(super) fn context(
        &self,
        r: &Registry,
        handle: QueueHandle,
        type_name: &'static str,
    ) -> QueueContext {
        QueueContext {
            handle,
            type_name,
            output_dir: self.output_dir.clone(),
            catalog: Arc::clone(&r.catalog),
            clock: self.clock.clone(),
            names: Arc::clone(&r.names),
        }
    }
}
