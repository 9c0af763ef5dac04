//! The core's error: what the tracer's configuration calls (queue types,
//! handles, routing, phases, queue parameters, the clock, queue hooks) can
//! fail with. It wraps the model's [`CatalogError`] (from
//! [`Tracer::define_class`](crate::Tracer::define_class)) and an I/O failure
//! of a queue that writes files, and imports only model modules (ids, the
//! catalog's error, the clock's error, [`IoError`]).

use std::fmt;
use std::io;
use std::path::PathBuf;

use crate::classes::CatalogError;
use crate::model::clock::ClockUnavailable;
use crate::model::event::EventId;
use crate::model::handle::QueueHandle;
use crate::model::io_error::IoError;
use crate::ClassId;

/// What went wrong configuring or running a tracer, and what to do about it
/// (the `Display` text says both). The hot path (`log_event`) never returns
/// an error: it records, or counts a loss.
///
/// `?` turns it into the crate-level [`Error`](crate::Error):
/// [`ConfigError::Catalog`] becomes [`Error::Catalog`](crate::Error::Catalog),
/// [`ConfigError::Io`] [`Error::Io`](crate::Error::Io), the others
/// [`Error::Config`](crate::Error::Config).
///
/// ```
/// use qtrace::queues::Dummy;
/// use qtrace::{ConfigError, Tracer};
/// let tracer = Tracer::new();
/// tracer.create_queue::<Dummy>(())?;
/// tracer.activate()?;
/// match tracer.create_queue::<Dummy>(()) {
///     Err(ConfigError::AfterPhase2 { operation }) => assert_eq!(operation, "create a queue"),
///     other => panic!("{other:?}"),
/// }
/// # Ok::<(), qtrace::Error>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum ConfigError {
    /// A queue was created with a type that was never registered.
    UnknownQueueType {
        /// The type's name ([`QueueType::NAME`](crate::queues::QueueType::NAME)).
        name: &'static str,
        /// The Rust type ([`std::any::type_name`] of the type passed to
        /// `create_queue`), so the message can say what to register.
        rust_type: &'static str,
    },
    /// A queue type was registered twice.
    QueueTypeAlreadyRegistered {
        /// The type's name.
        name: &'static str,
    },
    /// A queue handle that no `create_queue` returned.
    BadQueueHandle {
        /// The handle passed.
        handle: QueueHandle,
        /// How many queues exist (valid handles are 0 to `queues - 1`).
        queues: usize,
    },
    /// More queues than the tracer can route to.
    TooManyQueues {
        /// The limit.
        max: usize,
    },
    /// An event number that the tracer's catalog does not define.
    EventOutOfRange {
        /// The event passed.
        id: EventId,
        /// How many events are defined (valid ids are 0 to `defined - 1`).
        defined: usize,
    },
    /// A class number that the tracer's catalog does not define.
    ClassOutOfRange {
        /// The class passed.
        id: ClassId,
        /// How many classes are defined (valid ids are 0 to `defined - 1`).
        defined: usize,
    },
    /// A filter was asked for an event (or a class none of whose events)
    /// is assigned to a queue: a filter forwards to the event's queue.
    FilterWithoutRoute {
        /// The event (the class's first event for `filter_class`).
        id: EventId,
    },
    /// A configuration call after `shutdown`.
    AfterShutdown {
        /// What was attempted.
        operation: &'static str,
    },
    /// A phase-1-only call (create a queue, define a class, register a type)
    /// after phase 2.
    AfterPhase2 {
        /// What was attempted.
        operation: &'static str,
    },
    /// Phase 2 was asked for a second time.
    Phase2Twice,
    /// The process-wide tracer is already installed.
    GlobalAlreadyInstalled,
    /// A queue parameter is out of range.
    InvalidParameter {
        /// The queue type.
        queue_type: &'static str,
        /// What is wrong and what is allowed.
        reason: String,
    },
    /// A clock of the requested kind cannot be built on this machine
    /// (`Config::with_clock_kind`; `Clock::of_kind` returns the
    /// [`ClockUnavailable`] inside).
    ClockUnavailable(ClockUnavailable),
    /// A queue's `activate` or `terminate` hook failed or panicked.
    Hook {
        /// The queue.
        queue: QueueHandle,
        /// "activate" or "terminate".
        hook: &'static str,
        /// What the hook said.
        message: String,
    },
    // ----- triggers (`queues::trigger`) -----
    /// A snapshot trigger ([`Trigger::snapshot`](crate::filters::Trigger::snapshot))
    /// names a queue that is not circular: only a circular queue holds the
    /// last N events.
    SnapshotNeedsCircular {
        /// The queue named in [`Snapshot::queue`](crate::filters::Snapshot::queue).
        queue: QueueHandle,
        /// Its type's name.
        type_name: &'static str,
    },
    /// A snapshot trigger asks for no events, or for more than its circular
    /// queue holds.
    SnapshotSize {
        /// [`Snapshot::last`](crate::filters::Snapshot::last) as given.
        last: usize,
        /// The circular queue's capacity.
        capacity: usize,
    },
    /// [`Tracer::add_trigger`](crate::Tracer::add_trigger) on an event that
    /// already has a trigger.
    TriggerExists {
        /// The event.
        id: EventId,
        /// The queue handle of its trigger.
        trigger: QueueHandle,
    },
    /// A start or stop trigger's [`Scope::Queue`](crate::filters::Scope::Queue)
    /// names a queue that only forwards events (a filter, a gate or a
    /// trigger), not one that records them.
    TriggerScopeNotRecording {
        /// The queue named.
        queue: QueueHandle,
        /// Its type's name.
        type_name: &'static str,
    },
    /// A tracer inherited across `fork()` was asked to change or shut down
    /// in the child: it belongs to the parent, whose queues, files and tasks
    /// the child must not touch (see
    /// [`Tracer::is_inherited`](crate::Tracer::is_inherited)).
    InheritedAcrossFork {
        /// What was asked.
        operation: &'static str,
        /// The process that created the tracer.
        owner: u32,
        /// This process.
        pid: u32,
    },
    /// A class specification that cannot be defined
    /// ([`Tracer::define_class`](crate::Tracer::define_class)).
    Catalog(CatalogError),
    /// A queue's file (or socket, or task) could not be created, written or
    /// read: what the queue was doing, on which file.
    Io(IoError),
    /// The control endpoint could not be bound
    /// (`qtrace::control::Endpoint::bind`, or `qtrace::global::install` for
    /// `Config::with_control`; feature `control`): its name is not valid,
    /// or its directory or socket is unsafe or cannot be made. The message
    /// says what is wrong and what to do; `source()` is the operating
    /// system's error, if there was one.
    #[cfg(feature = "control")]
    ControlEndpoint {
        /// The call that bound it: `"qtrace::control::Endpoint::bind"` or
        /// `"qtrace::global::install (Config::with_control)"`.
        opened_by: &'static str,
        /// The directory or socket concerned.
        path: PathBuf,
        /// What is wrong and what to do.
        problem: String,
        /// The operating system's error.
        source: Option<io::Error>,
    },
}

impl ConfigError {
    /// An I/O error on `path` while doing `action`.
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        ConfigError::Io(IoError::new(action, path, source))
    }
}

impl From<CatalogError> for ConfigError {
    fn from(e: CatalogError) -> Self {
        ConfigError::Catalog(e)
    }
}

impl From<ClockUnavailable> for ConfigError {
    fn from(e: ClockUnavailable) -> Self {
        ConfigError::ClockUnavailable(e)
    }
}

impl From<IoError> for ConfigError {
    fn from(e: IoError) -> Self {
        ConfigError::Io(e)
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ConfigError::*;
        match self {
            UnknownQueueType { name, rust_type } => {
                let short = short_type_name(rust_type);
                write!(
                    f,
                    "queue type `{name}` (Rust type `{short}`) is not registered: in phase 1, before creating queues of it, register a value of that type, as in tracer.register_queue_type({short})"
                )
            }
            QueueTypeAlreadyRegistered { name } => write!(
                f,
                "queue type `{name}` is already registered: register each type once (built-in types are registered by Tracer::new)"
            ),
            BadQueueHandle { handle, queues } => match queues {
                0 => write!(f, "queue handle {handle} does not exist: no queue has been created yet; create one with Tracer::create_queue first"),
                1 => write!(f, "queue handle {handle} does not exist: the only queue is 0 (the value Tracer::create_queue returned)"),
                _ => write!(f, "queue handle {handle} does not exist: valid handles are 0 to {} (the values Tracer::create_queue returned)", queues - 1),
            },
            TooManyQueues { max } => write!(
                f,
                "a tracer routes to at most {max} queues: route more events to each queue instead of creating more"
            ),
            EventOutOfRange { id, defined } => write!(
                f,
                "event {id} is not defined: this tracer knows events 0x0000 to {:#06x}; define new events with Tracer::define_class in phase 1",
                defined.saturating_sub(1)
            ),
            ClassOutOfRange { id, defined } => write!(
                f,
                "class {id} is not defined: this tracer knows classes 0 to {}; define new classes with Tracer::define_class in phase 1",
                defined.saturating_sub(1)
            ),
            FilterWithoutRoute { id } => write!(
                f,
                "cannot filter event {}: it is assigned to no queue; call Tracer::assign_event or Tracer::assign_class first, then Tracer::filter_event or Tracer::filter_class",
                id.0
            ),
            AfterShutdown { operation } => write!(
                f,
                "cannot {operation}: the tracer has been shut down; build a new Tracer to trace again"
            ),
            AfterPhase2 { operation } => write!(
                f,
                "cannot {operation} after phase 2: do it in phase 1, before Tracer::activate"
            ),
            Phase2Twice => write!(
                f,
                "phase 2 has already run: queues are activated once; call it once per tracer"
            ),
            GlobalAlreadyInstalled => write!(
                f,
                "the process-wide tracer is already installed: install once at start-up, then reach it with qtrace::global::get() (or keep the reference install returned)"
            ),
            InvalidParameter { queue_type, reason } => {
                write!(f, "invalid parameter for the queue type `{queue_type}`: {reason}")
            }
            ClockUnavailable(e) => write!(f, "{e}"),
            Hook { queue, hook, message } => {
                write!(f, "the {hook} hook of queue {queue} failed: {message}")
            }
            SnapshotNeedsCircular { queue, type_name } => write!(
                f,
                "cannot snapshot queue {queue} on a trigger: it is a `{type_name}` queue, and only a circular queue keeps the last N events; give Snapshot::new the handle of a queue made with Tracer::create_queue::<Circular>"
            ),
            SnapshotSize { last, capacity } => write!(
                f,
                "a snapshot of the last {last} events: use Snapshot::new(queue, last) with last from 1 to the circular queue's capacity, {capacity}"
            ),
            TriggerExists { id, trigger } => write!(
                f,
                "event {} already has a trigger (queue {trigger}): remove it with Tracer::remove_trigger before adding another",
                id.0
            ),
            TriggerScopeNotRecording { queue, type_name } => write!(
                f,
                "Scope::Queue({queue}) names a `{type_name}` queue, which only forwards events: name the queue that records them (the handle Tracer::create_queue returned)"
            ),
            InheritedAcrossFork { operation, owner, pid } => write!(
                f,
                "cannot {operation}: this tracer belongs to process {owner} and this process ({pid}) is a fork of it; in a forked child an inherited tracer records nothing and leaves the parent's queues, files and tasks alone; build a new Tracer in the child, with its own output directory (Config::with_output_dir), to trace it"
            ),
            Catalog(e) => write!(f, "{e}"),
            Io(e) => write!(f, "{e}"),
            #[cfg(feature = "control")]
            ControlEndpoint {
                opened_by,
                path,
                problem,
                ..
            } => write!(
                f,
                "{opened_by} cannot bind the control endpoint at {}: {problem}",
                path.display()
            ),
        }
    }
}

/// `my_crate::queues::Refuser` → `Refuser`; `a::Wrap<b::Inner>` →
/// `Wrap<b::Inner>` (the path of the outer type is dropped, its generic
/// arguments are kept).
fn short_type_name(full: &str) -> &str {
    let outer_end = full.find('<').unwrap_or(full.len());
    let start = full[..outer_end].rfind("::").map_or(0, |i| i + 2);
    &full[start..]
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            // Transparent too: the chain goes on with the OS error.
            ConfigError::Io(e) => e.source(),
            // Transparent wrappers: the text is the inner error's, so the
            // chain continues with the inner error's own source.
            ConfigError::Catalog(e) => e.source(),
            ConfigError::ClockUnavailable(e) => e.source(),
            #[cfg(feature = "control")]
            ConfigError::ControlEndpoint {
                source: Some(e), ..
            } => Some(e),
            _ => None,
        }
    }
}
