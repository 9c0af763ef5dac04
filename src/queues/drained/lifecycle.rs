//! The lifecycle both drained queues share: created in phase 1 with what
//! their task will need (`P`), a task started at activation, the task
//! finished at shutdown — or, for a queue never activated, its work built and
//! finished in place at shutdown, so what was logged since phase 1 is still
//! written or sent.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::queue::config_error::ConfigError;
use crate::queues::drained::task::{Task, TaskControl, Work};

enum State<P> {
    Created(P),
    Running(Task),
    Done,
}

/// Names a drained queue's task in thread names and errors.
pub(crate) struct TaskNames {
    /// The thread's name prefix (`qtrace-online`): the queue's handle follows.
    pub(crate) thread: &'static str,
    /// The action of a failed start ("start the online queue's drain thread").
    pub(crate) start: &'static str,
    /// The action of a task that panicked ("finish the UDP queue's send task").
    pub(crate) finish: &'static str,
    /// Why, for that error ("send task panicked").
    pub(crate) panicked: &'static str,
}

/// A drained queue's task, from phase 1 to shutdown.
pub(crate) struct Lifecycle<P> {
    state: Mutex<State<P>>,
    names: TaskNames,
    period: Duration,
    control: Arc<TaskControl>,
}

/// What activation does when the work cannot be built: the error, and what
/// to keep for a later phase 2 to try again (`None`: nothing can be retried).
pub(crate) type OpenFailure<P> = (ConfigError, Option<P>);

impl<P> Lifecycle<P> {
    /// Created in phase 1 with `pending`, the task's `period` and the feed's
    /// task control (the producers' wake-up).
    pub(crate) fn new(
        pending: P,
        names: TaskNames,
        period: Duration,
        control: Arc<TaskControl>,
    ) -> Self {
        Lifecycle {
            state: Mutex::new(State::Created(pending)),
            names,
            period,
            control,
        }
    }

    /// Phase 2: builds the work from what phase 1 left (`open`) and starts
    /// its task, for the queue with `handle`. A second activation does
    /// nothing. If `open` fails, what it hands back is kept for another try.
    ///
    /// # Errors
    ///
    /// What `open` returns, or [`ConfigError::Io`] when the thread cannot
    /// start.
    pub(crate) fn activate<W: Work>(
        &self,
        handle: impl std::fmt::Display,
        open: impl FnOnce(P) -> Result<W, OpenFailure<P>>,
    ) -> Result<(), ConfigError> {
        let mut state = self.state.lock();
        let pending = match std::mem::replace(&mut *state, State::Done) {
            State::Created(p) => p,
            other => {
                *state = other;
                return Ok(());
            }
        };
        let work = match open(pending) {
            Ok(work) => work,
            Err((e, retry)) => {
                if let Some(p) = retry {
                    *state = State::Created(p);
                }
                return Err(e);
            }
        };
        let task = Task::start(
            self.names.start,
            format!("{}-q{handle}", self.names.thread),
            self.period,
            Arc::clone(&self.control),
            work,
        )?;
        *state = State::Running(task);
        Ok(())
    }

    /// Shutdown: finishes the running task (its last round and close), or,
    /// if the queue was never activated, builds the work with `open` and
    /// finishes it here. A second call does nothing.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Io`] (on `path`, if any) when the task panicked, or
    /// what `open` returns.
    pub(crate) fn terminate<W: Work>(
        &self,
        path: Option<PathBuf>,
        open: impl FnOnce(P) -> Result<W, ConfigError>,
    ) -> Result<(), ConfigError> {
        let mut state = self.state.lock();
        match std::mem::replace(&mut *state, State::Done) {
            State::Running(mut task) => task.finish(self.names.finish, path, self.names.panicked),
            State::Created(pending) => {
                open(pending)?.finish();
                Ok(())
            }
            State::Done => Ok(()),
        }
    }
}
