//! The [`Tracer`]: the registry behind a lock for configuration, and a
//! lock-free hot path for logging.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use crate::classes::Catalog;
use crate::model::clock::Clock;
use crate::model::event::EventId;
use crate::model::handle::QueueHandle;
use crate::queue::config_error::ConfigError;
use crate::queue::queue_trait::{Queue, QueueCounters, QueueStatus};
use crate::queues::AnyQueue;
use crate::queues::{Circular, Dummy, Fixed, Online, Udp};
use crate::router::registry::{Phase, Registry};
use std::sync::atomic::{AtomicU64, Ordering};

mod config;
mod lifecycle;
mod logging;
mod report;
mod routing;
mod triggers;

pub use config::Config;
pub use report::{QueueReport, ShutdownReport};

/// A tracer: queues, routing and masks, and the `log_event` hot path.
///
/// Every method takes `&self`, so a tracer can be shared between threads (in
/// an `Arc`, or process-wide with [`crate::setup::global::install`]). Configuration
/// calls take a lock; [`Tracer::log_event`] never does.
///
/// Lifecycle (see [`crate::init`]): phase 1 — [`Tracer::new`], then
/// register types, create queues, define classes, assign and enable; phase 2 —
/// [`Tracer::activate`]; then log; then [`Tracer::shutdown`].
///
/// Routing rules: an event is recorded when it is assigned to a queue, it and
/// its class are enabled (both are, by default), and the tracer is neither
/// suspended nor shut down. A later assignment replaces an earlier one, whether
/// it was made for the event or for its whole class.
///
/// ```
/// use qtrace::classes::user;
/// use qtrace::queues::Dummy;
/// use std::sync::Arc;
///
/// let tracer = Arc::new(qtrace::Tracer::new());
/// let q = tracer.create_queue::<Dummy>(())?;
/// tracer.assign_class(user::CLASS, q)?;
/// tracer.activate()?;
/// let threads: Vec<_> = (0..2)
///     .map(|t| {
///         let tracer = Arc::clone(&tracer);
///         std::thread::spawn(move || tracer.log_event(user::USER0, [t, 0]))
///     })
///     .collect();
/// threads.into_iter().for_each(|t| t.join().unwrap());
/// assert_eq!(tracer.shutdown()?.queues[0].counters.accepted, 2);
/// # Ok::<(), qtrace::Error>(())
/// ```
pub struct Tracer {
    /// One route per possible event id: the only thing a masked-out event
    /// reads. 65536 entries, so a `u16` id needs no bounds check. A route
    /// is `key_base + route word` (`LIVE | queue index`, see `route` in
    /// `routing.rs`), or 0: the route word and the key of its queue in each
    /// thread's producer cache in one load (512 KiB a tracer; as 32-bit
    /// words, the key's add and a register kept for `key_base` cost the
    /// circular hot path 2 instructions).
    routes: Box<[AtomicU64; 1 << 16]>,
    /// Queues by handle; 256 entries, so a `u8` index needs no bounds check.
    queues: Box<[OnceLock<AnyQueue>; 256]>,
    clock: Clock,
    output_dir: PathBuf,
    /// Boxed so that `Tracer` holds no interior mutability inline (it is
    /// `Freeze`): the compiler may then treat a `&Tracer` as read-only and
    /// keep `routes`, `queues` and the clock's fields in registers across a
    /// loop of `log_event` calls.
    registry: Box<Mutex<Registry>>,
    /// `serial << 32`, where `serial` is this tracer's number in the process
    /// (1, 2, …, never reused); `key_base | route word` names one of its
    /// queues for good, the key of each thread's shard cache
    /// (`queues::producer_cache`). 0 when the serial does not fit in 32 bits:
    /// then the cache is not used.
    key_base: u64,
    /// [`Config::save_on_panic`].
    save_on_panic: bool,
}

/// A tracer dropped without [`Tracer::shutdown`] shuts down as
/// `shutdown()` would (every queue saves or flushes what it holds, files
/// are written, ring files of a clean save are removed); the report is
/// discarded. Call `shutdown()` to see it and its errors.
///
/// In a forked child, a tracer inherited from the parent is dropped without
/// touching the parent's queues: nothing is saved, no ring file is removed,
/// no task is stopped (the child's copy of the queues is leaked; the files
/// and tasks are the parent's).
impl Drop for Tracer {
    fn drop(&mut self) {
        // `get_mut`: no lock taken (in a forked child, a thread of the
        // parent may have held it).
        let (owner_pid, fork_node) = {
            let r = self.registry.get_mut();
            (r.owner_pid, r.fork_node)
        };
        if owner_pid != std::process::id() {
            let empty: Box<[OnceLock<AnyQueue>]> = (0..256).map(|_| OnceLock::new()).collect();
            let empty: Box<[OnceLock<AnyQueue>; 256]> = empty.try_into().expect("256 queues");
            std::mem::forget(std::mem::replace(&mut self.queues, empty));
            crate::router::fork::forget(fork_node);
            return;
        }
        crate::router::panic_save::deregister(&self.queues);
        let phase = self.registry.lock().phase;
        if phase != Phase::ShutDown {
            let _ = self.shutdown();
        }
        crate::router::fork::forget(fork_node);
    }
}

// The queue table's stride is a power of two: indexing it is one shift on
// the hot path (see `AnyQueue`'s alignment).
#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<OnceLock<AnyQueue>>().is_power_of_two());

/// The next tracer's serial number.
static NEXT_SERIAL: AtomicU64 = AtomicU64::new(1);

impl std::fmt::Debug for Tracer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let r = self.registry.lock();
        f.debug_struct("Tracer")
            .field("phase", &r.phase)
            .field("suspended", &r.suspended)
            .field("queues", &r.queue_types)
            .field("clock", &self.clock.kind())
            .finish()
    }
}

impl Default for Tracer {
    fn default() -> Self {
        Tracer::new()
    }
}

impl Tracer {
    /// Phase 1 begins: a tracer with the default [`Config`], the built-in
    /// classes, and the built-in queue types registered.
    ///
    /// ```
    /// let tracer = qtrace::Tracer::new();
    /// assert_eq!(tracer.phase(), qtrace::Phase::Configuring);
    /// assert_eq!(tracer.queue_count(), 0);
    /// assert!(tracer.queue_type_names().contains(&"circular"));
    /// ```
    pub fn new() -> Self {
        Tracer::with_config(Config::default())
    }

    /// Phase 1 begins with `config`.
    ///
    /// ```
    /// use qtrace::clock::{Clock, ManualClock};
    /// use qtrace::{Config, Tracer};
    ///
    /// let time = ManualClock::new(1_000);
    /// let tracer = Tracer::with_config(Config::default().with_clock(Clock::manual(&time)));
    /// assert_eq!(tracer.clock().now(), 1_000);
    /// ```
    pub fn with_config(config: Config) -> Self {
        let routes: Box<[AtomicU64]> = (0..1 << 16).map(|_| AtomicU64::new(0)).collect();
        let queues: Box<[OnceLock<AnyQueue>]> = (0..256).map(|_| OnceLock::new()).collect();
        let routes: Box<[AtomicU64; 1 << 16]> = routes.try_into().expect("65536 routes");
        let fork_node = crate::router::fork::register(&routes);
        #[cfg_attr(not(all(feature = "control", target_os = "linux")), allow(unused_mut))]
        let mut tracer = Tracer {
            routes,
            queues: queues.try_into().expect("256 queues"),
            clock: config.clock,
            output_dir: config.output_dir,
            registry: Box::new(Mutex::new(Registry::new(Catalog::builtin(), fork_node))),
            key_base: match NEXT_SERIAL.fetch_add(1, Ordering::Relaxed) {
                serial @ 1..=0xffff_ffff => serial << 32,
                // Four billion tracers later: correct, just uncached.
                _ => 0,
            },
            save_on_panic: config.save_on_panic,
        };
        #[cfg(all(feature = "control", target_os = "linux"))]
        {
            tracer.registry.get_mut().control = config.control.map(|n| (n, config.control_group));
        }
        tracer.register_builtin_types().expect("fresh tracer");
        tracer
    }

    /// Registers every built-in queue type (the types [`AnyQueue`] has a
    /// variant for).
    fn register_builtin_types(&self) -> Result<(), ConfigError> {
        self.register_queue_type(Dummy)?;
        self.register_queue_type(Fixed)?;
        self.register_queue_type(Circular)?;
        self.register_queue_type(Online)?;
        self.register_queue_type(Udp)?;
        Ok(())
    }

    // ----- inspection ---------------------------------------------------------

    /// Whether this tracer was inherited across `fork()`: created by another
    /// process (the parent) than the one calling. An inherited tracer records
    /// nothing, refuses configuration calls and `shutdown`
    /// ([`ConfigError::InheritedAcrossFork`]), and its drop leaves the
    /// parent's queues, files and tasks alone. Build a new tracer in the
    /// child to trace it.
    ///
    /// ```
    /// let tracer = qtrace::Tracer::new();
    /// assert!(!tracer.is_inherited()); // this process made it
    /// ```
    pub fn is_inherited(&self) -> bool {
        self.registry.lock().owner_pid != std::process::id()
    }

    /// [`Config::control`] and [`Config::control_group`]: the endpoint
    /// `global::install` opens.
    #[cfg(all(feature = "control", target_os = "linux"))]
    pub(crate) fn control_name(&self) -> Option<(String, Option<u32>)> {
        self.registry.lock().control.clone()
    }

    /// The lifecycle phase.
    pub fn phase(&self) -> Phase {
        self.registry.lock().phase
    }

    /// Whether the tracer is suspended.
    pub fn is_suspended(&self) -> bool {
        self.registry.lock().suspended
    }

    /// The names recorded at run time ([`Tracer::name_source`],
    /// [`Tracer::name_thread`], [`Tracer::name_task`],
    /// [`Tracer::name_event`]), the newest per subject, which every trace
    /// file a fixed or circular queue saves carries at its start.
    pub fn recorded_names(&self) -> Arc<crate::model::combine::RecordedNames> {
        Arc::clone(&self.registry.lock().names)
    }

    /// Every class and event this tracer knows.
    pub fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&self.registry.lock().catalog)
    }

    /// The clock events are stamped with.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Where queues put files by default.
    pub fn output_dir(&self) -> &std::path::Path {
        &self.output_dir
    }

    /// How many queues exist.
    pub fn queue_count(&self) -> usize {
        self.registry.lock().queue_types.len()
    }

    /// The queue an event is routed to, if any.
    ///
    /// # Errors
    ///
    /// [`ConfigError::EventOutOfRange`] if the catalog does not define `id`.
    pub fn route_of(&self, id: EventId) -> Result<Option<QueueHandle>, ConfigError> {
        let r = self.registry.lock();
        r.check_event(id)?;
        Ok(r.queue_of(id))
    }

    /// A queue, to call its own methods (a circular queue's snapshot, say).
    ///
    /// # Errors
    ///
    /// [`ConfigError::BadQueueHandle`] if `handle` is not one that
    /// [`Tracer::create_queue`] returned.
    pub fn queue(&self, handle: QueueHandle) -> Result<&AnyQueue, ConfigError> {
        self.registry.lock().check_queue(handle)?;
        Ok(self.queues[handle.index()]
            .get()
            .expect("created queues are set"))
    }

    /// A queue's counters so far.
    ///
    /// # Errors
    ///
    /// [`ConfigError::BadQueueHandle`] if `handle` is not one that
    /// [`Tracer::create_queue`] returned.
    pub fn counters(&self, handle: QueueHandle) -> Result<QueueCounters, ConfigError> {
        self.queue(handle).map(|q| q.counters())
    }

    /// A queue's health and files.
    ///
    /// # Errors
    ///
    /// [`ConfigError::BadQueueHandle`] if `handle` is not one that
    /// [`Tracer::create_queue`] returned.
    pub fn status(&self, handle: QueueHandle) -> Result<QueueStatus, ConfigError> {
        self.queue(handle).map(|q| q.status())
    }
}

/// Runs a hook; its own errors pass through, a panic becomes [`ConfigError::Hook`].
fn run_hook(
    handle: QueueHandle,
    hook: &'static str,
    f: impl FnOnce() -> Result<(), ConfigError>,
) -> Result<(), ConfigError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(panic) => Err(ConfigError::Hook {
            queue: handle,
            hook,
            message: panic_message(&panic),
        }),
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        format!("panicked: {s}")
    } else if let Some(s) = panic.downcast_ref::<String>() {
        format!("panicked: {s}")
    } else {
        "panicked".to_string()
    }
}
