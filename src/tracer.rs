//! The [`Tracer`]: the registry behind a lock for configuration, and a
//! lock-free hot path for logging.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use crate::classes::{Catalog, ClassId, ClassSpec, DefinedClass};
use crate::clock::Clock;
use crate::combine::{self, Run};
use crate::config_error::ConfigError;
use crate::event::{Event, EventId};
use crate::handle::{QueueHandle, LIVE, QUEUE_MASK};
use crate::queue_trait::{Queue, QueueContext, QueueCounters, QueueStatus};
use crate::queues::{producer_cache, AnyQueue, CircularQueue, Filter, FilterQueue, QueueType};
use crate::queues::{Circular, Dummy, Fixed, Online, Udp};
use crate::registry::{Phase, Registry};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

mod triggers;

/// How a tracer is set up. `Default` gives the fast clock and the output
/// directory `$QTRACE_DIR`, or `./qtrace-out` when that is unset.
#[derive(Clone, Debug)]
pub struct Config {
    /// The clock read once per recorded event.
    pub clock: Clock,
    /// Where queues put their files unless told otherwise.
    pub output_dir: PathBuf,
    /// Whether a panic in any thread saves this tracer's fixed and circular
    /// queues whose rings are on the heap
    /// ([`crate::queues::RingStorage::Memory`]) to their trace files, from a
    /// panic hook installed at phase 2 (chained before the hook that was
    /// there). Default `true`.
    pub save_on_panic: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            clock: Clock::fast(),
            output_dir: std::env::var_os("QTRACE_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("qtrace-out")),
            save_on_panic: true,
        }
    }
}

impl Config {
    /// Uses `clock`.
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Turns the panic hook's save on or off (see [`Config::save_on_panic`]).
    pub fn with_save_on_panic(mut self, on: bool) -> Self {
        self.save_on_panic = on;
        self
    }

    /// Uses a clock of `kind` ([`Clock::of_kind`]): the way to ask for the
    /// monotonic clock, or to insist on the TSC, whatever `QTRACE_NO_TSC`
    /// says (which only steers the default, [`Clock::fast`]).
    ///
    /// # Errors
    ///
    /// [`ConfigError::ClockUnavailable`] for [`ClockKind::Manual`](crate::clock::ClockKind::Manual)
    /// (use [`Config::with_clock`] with [`Clock::manual`]) or a TSC this
    /// machine cannot use for time.
    ///
    /// ```
    /// use qtrace::clock::ClockKind;
    /// use qtrace::Config;
    /// let config = Config::default().with_clock_kind(ClockKind::Monotonic).unwrap();
    /// assert_eq!(config.clock.kind(), ClockKind::Monotonic);
    /// ```
    pub fn with_clock_kind(mut self, kind: crate::clock::ClockKind) -> Result<Self, ConfigError> {
        self.clock = Clock::of_kind(kind)?;
        Ok(self)
    }

    /// Puts files in `dir`.
    pub fn with_output_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.output_dir = dir.into();
        self
    }
}

/// One queue's account at shutdown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueReport {
    /// The queue's handle.
    pub handle: QueueHandle,
    /// Its type's name.
    pub type_name: &'static str,
    /// Its final counters.
    pub counters: QueueCounters,
    /// Its health and files.
    pub status: QueueStatus,
    /// What went wrong in its terminate hook, if anything.
    pub error: Option<String>,
}

/// What [`Tracer::shutdown`] reports: every queue's account, in handle order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShutdownReport {
    /// One entry per queue.
    pub queues: Vec<QueueReport>,
}

impl ShutdownReport {
    /// Events lost by every queue together (dropped + overwritten).
    pub fn total_lost(&self) -> u64 {
        self.queues.iter().map(|q| q.counters.lost()).sum()
    }

    /// Snapshots on trigger suppressed by their rate limits, over every
    /// trigger queue ([`QueueStatus::snapshots_suppressed`]).
    pub fn snapshots_suppressed(&self) -> u64 {
        self.queues
            .iter()
            .map(|q| q.status.snapshots_suppressed)
            .sum()
    }

    /// Whether every terminate hook succeeded and no queue saw an I/O error.
    pub fn is_clean(&self) -> bool {
        self.queues
            .iter()
            .all(|q| q.error.is_none() && q.status.is_healthy())
    }
}

/// A tracer: queues, routing and masks, and the `log_event` hot path.
///
/// Every method takes `&self`, so a tracer can be shared between threads (in
/// an `Arc`, or process-wide with [`crate::global::install`]). Configuration
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
pub struct Tracer {
    /// One word per possible event id (`LIVE | queue index`, or 0): the only
    /// thing a masked-out event reads. 65536 entries, so a `u16` id needs no
    /// bounds check.
    routes: Box<[AtomicU32; 1 << 16]>,
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
impl Drop for Tracer {
    fn drop(&mut self) {
        crate::panic_save::deregister(&self.queues);
        let phase = self.registry.lock().phase;
        if phase != Phase::ShutDown {
            let _ = self.shutdown();
        }
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
    pub fn new() -> Self {
        Tracer::with_config(Config::default())
    }

    /// Phase 1 begins with `config`.
    pub fn with_config(config: Config) -> Self {
        let routes: Box<[AtomicU32]> = (0..1 << 16).map(|_| AtomicU32::new(0)).collect();
        let queues: Box<[OnceLock<AnyQueue>]> = (0..256).map(|_| OnceLock::new()).collect();
        let tracer = Tracer {
            routes: routes.try_into().expect("65536 routes"),
            queues: queues.try_into().expect("256 queues"),
            clock: config.clock,
            output_dir: config.output_dir,
            registry: Box::new(Mutex::new(Registry::new(Catalog::builtin()))),
            key_base: match NEXT_SERIAL.fetch_add(1, Ordering::Relaxed) {
                serial @ 1..=0xffff_ffff => serial << 32,
                // Four billion tracers later: correct, just uncached.
                _ => 0,
            },
            save_on_panic: config.save_on_panic,
        };
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

    // ----- the hot path -------------------------------------------------------

    /// Records `id` with its two arguments, from this thread's source
    /// ([`crate::source::current`]). Never waits for the queue or for other
    /// logging threads, and never allocates per event; a masked-out event
    /// costs one relaxed load and a branch. Once per thread, the first event
    /// into a circular queue gets the thread's token: a short lock on the
    /// token pool, and the registration of the thread-exit hook that gives
    /// the token back (which may allocate). Log once from a thread before
    /// relying on its signal handlers logging.
    #[inline(always)]
    pub fn log_event(&self, id: EventId, args: [u64; 2]) {
        let word = self.routes[id.0 as usize].load(Ordering::Relaxed);
        if word & LIVE == 0 {
            return;
        }
        self.record(word, None, id, args);
    }

    /// Records `id` as coming from `source` (a CPU or thread number the caller
    /// knows).
    #[inline(always)]
    pub fn log_event_from(&self, source: u32, id: EventId, args: [u64; 2]) {
        let word = self.routes[id.0 as usize].load(Ordering::Relaxed);
        if word & LIVE == 0 {
            return;
        }
        self.record(word, Some(source), id, args);
    }

    /// Whether `id` would be recorded now (one relaxed load): lets a caller
    /// skip computing expensive arguments.
    #[inline(always)]
    pub fn is_enabled(&self, id: EventId) -> bool {
        self.routes[id.0 as usize].load(Ordering::Relaxed) & LIVE != 0
    }

    // ----- variable payloads (combine runs) ----------------------------------

    /// Records `text` attached to event `id` (argument 0), as a combine run
    /// ([`crate::combine`]): `1 + ⌈len / 16⌉` consecutive records reserved
    /// together in the event's queue. Up to [`combine::MAX_PAYLOAD`] (4096)
    /// bytes are stored; a longer text is cut there, and readers show the
    /// cut and the length logged. Never blocks and never allocates; a
    /// masked-out event costs one relaxed load and a branch, as for
    /// [`Tracer::log_event`]. Queues count each record of the run (a run
    /// with no room is dropped and counted record by record).
    ///
    /// ```
    /// use qtrace::classes::user;
    /// use qtrace::combine::{Assembler, Item};
    /// use qtrace::queues::{Fixed, FixedParams};
    /// use qtrace::Tracer;
    ///
    /// let tracer = Tracer::new();
    /// let q = tracer.create_queue::<Fixed>(FixedParams { capacity: 64, ..Default::default() })?;
    /// tracer.assign_event(user::USER0, q)?;
    /// tracer.log_str(user::USER0, "worker-3 took request 42");
    /// let records = tracer.queue(q)?.as_fixed().unwrap().snapshot_events();
    /// assert_eq!(records.len(), 3); // 24 bytes: the begin record and two more
    /// let mut texts = Vec::new();
    /// let mut asm = Assembler::new();
    /// for e in records {
    ///     asm.push(e, &mut |item| if let Item::Payload(p) = item { texts.push(p.text().into_owned()) });
    /// }
    /// assert_eq!(texts, ["worker-3 took request 42"]);
    /// # Ok::<(), qtrace::Error>(())
    /// ```
    #[inline]
    pub fn log_str(&self, id: EventId, text: &str) {
        self.log_event_bytes(id, 0, text.as_bytes());
    }

    /// Records `bytes` attached to event `id`: [`Tracer::log_str`] for
    /// bytes that need not be text.
    #[inline]
    pub fn log_bytes(&self, id: EventId, bytes: &[u8]) {
        self.log_event_bytes(id, 0, bytes);
    }

    /// Records event `id` with its first argument `arg` and `text` attached
    /// (a fixed-size event with a string): one combine run whose begin
    /// record carries `arg`. See [`Tracer::log_str`].
    #[inline]
    pub fn log_event_str(&self, id: EventId, arg: u64, text: &str) {
        self.log_event_bytes(id, arg, text.as_bytes());
    }

    /// [`Tracer::log_event_str`] with bytes.
    #[inline]
    pub fn log_event_bytes(&self, id: EventId, arg: u64, bytes: &[u8]) {
        let word = self.routes[id.0 as usize].load(Ordering::Relaxed);
        if word & LIVE == 0 {
            return;
        }
        self.record_run(word, id, arg, bytes);
    }

    #[inline(never)]
    fn record_run(&self, word: u32, id: EventId, arg: u64, bytes: &[u8]) {
        if let Some(queue) = self.queues[(word & QUEUE_MASK) as usize].get() {
            let source = crate::source::current();
            queue.post_run(&Run::new(self.clock.now(), id, source, arg, bytes));
        }
    }

    /// Names a source (a thread or CPU number, the records' `source`):
    /// `dump`, CTF and Chrome exports show the name. The name is recorded
    /// into every queue of the tracer now (a name record,
    /// [`combine::NAME_SOURCE`]), so each file carries it; a circular queue
    /// may later overwrite it like any record — name again after a long
    /// time if that matters. Recorded even while the tracer is suspended
    /// (names are not events). A name longer than
    /// [`combine::MAX_PAYLOAD`] bytes is cut.
    ///
    /// # Errors
    ///
    /// [`ConfigError::AfterShutdown`] once the tracer is shut down.
    pub fn name_source(&self, source: u32, name: &str) -> Result<(), ConfigError> {
        self.record_name(source, combine::NAME_SOURCE, source as u64, name)
    }

    /// Names this thread's source ([`crate::source::current`]) and returns
    /// its number; see [`Tracer::name_source`].
    ///
    /// # Errors
    ///
    /// [`ConfigError::AfterShutdown`] once the tracer is shut down.
    pub fn name_thread(&self, name: &str) -> Result<u32, ConfigError> {
        let source = crate::source::current();
        self.name_source(source, name).map(|()| source)
    }

    /// Names a task id (the task argument of the system class's events,
    /// S.Ha.R.K.'s task numbers, or any task number of the program); see
    /// [`Tracer::name_source`]. The id is kept to 56 bits.
    ///
    /// # Errors
    ///
    /// [`ConfigError::AfterShutdown`] once the tracer is shut down.
    pub fn name_task(&self, task: u64, name: &str) -> Result<(), ConfigError> {
        self.record_name(crate::source::current(), combine::NAME_TASK, task, name)
    }

    /// Names an event id at run time ([`combine::NAME_EVENT_ID`]): readers
    /// show `name` for the records of `id` (the `tracing` bridge names its
    /// callsite events so). See [`Tracer::name_source`].
    ///
    /// # Errors
    ///
    /// [`ConfigError::AfterShutdown`] once the tracer is shut down.
    pub fn name_event(&self, id: EventId, name: &str) -> Result<(), ConfigError> {
        self.record_name(
            crate::source::current(),
            combine::NAME_EVENT_ID,
            id.0 as u64,
            name,
        )
    }

    fn record_name(
        &self,
        source: u32,
        kind: u8,
        subject: u64,
        name: &str,
    ) -> Result<(), ConfigError> {
        let r = self.registry.lock();
        r.require_running("record a name")?;
        let run = Run::name(self.clock.now(), source, kind, subject, name.as_bytes());
        for queue in self.queues[..r.queue_types.len()]
            .iter()
            .filter_map(|q| q.get())
            // Filter, gate and trigger queues forward to a queue that gets
            // the name itself.
            .filter(|q| !crate::queues::trigger::forwards(q))
        {
            queue.post_run(&run);
        }
        Ok(())
    }

    /// Records an event routed by `word`; `source` is `None` for this
    /// thread's source number.
    #[inline(always)]
    fn record(&self, word: u32, source: Option<u32>, id: EventId, args: [u64; 2]) {
        // The common case, an event into a circular queue where this thread
        // owns a shard: its key checked against this thread's newest cache
        // entry (read twice, see `producer_cache::newest`), then plain
        // stores into the shard.
        let key = producer_cache::key(self.key_base, word);
        if let (true, ring) = producer_cache::newest(key) {
            // SAFETY: a hit's ring belongs to a queue of the tracer whose
            // serial is in `key`, i.e. `self`, which is held for the ring's
            // whole use (see `producer_cache::newest`).
            let ring = unsafe { &*ring };
            // A cached thread has called `source::current` (in
            // `record_circular`), so its number is assigned.
            let source_word = match source {
                Some(s) => (s as u64) << 32,
                None => crate::source::current_word_assigned(),
            };
            let id_word = Event::id_word(id, source_word);
            ring.push_words(|| [self.clock.now(), id_word, args[0], args[1]]);
            return;
        }
        let source = source.unwrap_or_else(crate::source::current);
        // A route word names a queue only after that queue was stored, and
        // `OnceLock::get` synchronises with the store, so `None` is only seen
        // for a route being written concurrently with its queue's creation.
        if let Some(queue) = self.queues[(word & QUEUE_MASK) as usize].get() {
            // One match on the queue's kind, then `get` and `post` of that
            // kind inlined together (matching in `get` and again in `post`
            // would cost a second dispatch per event).
            match queue {
                AnyQueue::CircularQueue(q) => self.record_circular(q, key, source, id, args),
                AnyQueue::FixedQueue(q) => self.record_into(q, source, id, args),
                AnyQueue::DummyQueue(q) => self.record_into(q, source, id, args),
                AnyQueue::OnlineQueue(q) => self.record_into(q, source, id, args),
                AnyQueue::UdpQueue(q) => self.record_into(q, source, id, args),
                AnyQueue::DynQueue(q) => self.record_into(q, source, id, args),
            }
        }
    }

    /// A circular-queue event whose queue is not the newest in this
    /// thread's cache: one this thread logged into before (found in the
    /// cache's older entries), the first into this queue from this thread
    /// (which then caches its shard), or one from a thread without a shard
    /// (into the shared ring).
    #[inline(never)]
    fn record_circular(
        &self,
        queue: &CircularQueue,
        key: u64,
        source: u32,
        id: EventId,
        args: [u64; 2],
    ) {
        let make = || Event::new(self.clock.now(), id, source, args);
        // SAFETY: as in `record`.
        if let Some(ring) = unsafe { producer_cache::lookup_older(key) } {
            return ring.push_with(make);
        }
        match queue.producer_shard() {
            Some(ring) => {
                // The cached path reads the source number unchecked: make
                // sure this thread has one (`log_event_from` did not ask).
                crate::source::current();
                producer_cache::fill(key, ring);
                ring.push_with(make);
            }
            None => queue.log_shared(make),
        }
    }

    #[inline(always)]
    fn record_into<Q: Queue + ?Sized>(&self, queue: &Q, source: u32, id: EventId, args: [u64; 2]) {
        if let Some(reservation) = queue.get() {
            let event = Event::new(self.clock.now(), id, source, args);
            queue.post(reservation, &event);
        }
    }

    // ----- phase 1 ------------------------------------------------------------

    /// Registers a queue type (S.Ha.R.K. `trc_register_queue_type`). The
    /// built-in types are registered by [`Tracer::new`].
    ///
    /// Hooks (create, activate, terminate) run with the tracer's configuration
    /// lock held: they must not call back into the tracer.
    pub fn register_queue_type<T: QueueType>(&self, queue_type: T) -> Result<(), ConfigError> {
        self.registry.lock().register_type(queue_type)
    }

    /// Names of the registered queue types, sorted.
    pub fn queue_type_names(&self) -> Vec<&'static str> {
        self.registry.lock().type_names()
    }

    /// Creates a queue of the registered type `T` (S.Ha.R.K.
    /// `trc_create_queue`). Handles are 0, 1, 2, … in creation order.
    pub fn create_queue<T: QueueType>(
        &self,
        params: T::Params,
    ) -> Result<QueueHandle, ConfigError> {
        let mut r = self.registry.lock();
        r.require_phase1("create a queue")?;
        let queue_type = r.queue_type::<T>()?;
        let index = r.queue_types.len();
        if index >= QueueHandle::MAX_QUEUES {
            return Err(ConfigError::TooManyQueues {
                max: QueueHandle::MAX_QUEUES,
            });
        }
        let handle = QueueHandle(index as u16);
        let ctx = self.context(&r, handle, T::NAME);
        let queue = catch_unwind(AssertUnwindSafe(|| queue_type.create(params, &ctx))).map_err(
            |panic| ConfigError::Hook {
                queue: handle,
                hook: "create",
                message: panic_message(&panic),
            },
        )??;
        if self.queues[index].set(queue).is_err() {
            unreachable!("queue slots are filled in order under the lock");
        }
        r.queue_types.push(T::NAME);
        r.activated.push(false);
        self.gate_if_global(&mut r, handle)?;
        Ok(handle)
    }

    /// Defines a user class; its events are numbered after every event known
    /// so far. Phase 1 only, so every file a queue writes lists it.
    pub fn define_class(&self, spec: ClassSpec) -> Result<DefinedClass, ConfigError> {
        let mut r = self.registry.lock();
        r.require_phase1("define a class")?;
        let mut catalog = (*r.catalog).clone();
        let defined = catalog.define(spec)?;
        r.set_catalog(catalog);
        Ok(defined)
    }

    /// Defines the classes a [`classes!`](crate::classes!) declaration
    /// made, with the ids fixed at compile time (call it before any
    /// [`define_class`](Tracer::define_class)). Defining the same catalog
    /// again does nothing. Phase 1 only.
    ///
    /// ```
    /// qtrace::classes! {
    ///     pub static CATALOG;
    ///     pub mod net: "network stack" {
    ///         event RX = "rx": "a packet was received" (len, port);
    ///     }
    /// }
    /// let tracer = qtrace::Tracer::new();
    /// tracer.define_classes(&CATALOG)?;
    /// assert_eq!(tracer.catalog().class(net::CLASS).unwrap().name, "net");
    /// # Ok::<(), qtrace::ConfigError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ConfigError::AfterPhase2`] or [`ConfigError::AfterShutdown`] after phase 1;
    /// [`ConfigError::Catalog`] with
    /// [`CatalogError::IdTaken`](crate::classes::CatalogError::IdTaken) when
    /// a class's id is already another class (a run-time class defined
    /// first) or the same class described differently.
    pub fn define_classes(&self, catalog: &qtrace_core::StaticCatalog) -> Result<(), ConfigError> {
        let mut r = self.registry.lock();
        r.require_phase1("define classes")?;
        let mut next = (*r.catalog).clone();
        next.define_static(catalog)?;
        if next != *r.catalog {
            r.set_catalog(next);
        }
        Ok(())
    }

    // ----- routing and masks (any time before shutdown) -------------------------

    /// Routes one event to a queue (S.Ha.R.K. `trc_assign_event_to_queue`).
    pub fn assign_event(&self, id: EventId, queue: QueueHandle) -> Result<(), ConfigError> {
        let mut r = self.registry.lock();
        r.require_running("assign an event")?;
        r.check_event(id)?;
        r.check_queue(queue)?;
        r.assign(id, queue);
        self.publish(&r, id);
        Ok(())
    }

    /// Routes every event of a class to a queue (S.Ha.R.K.
    /// `trc_assign_class_to_queue`); the same as assigning each of its events.
    pub fn assign_class(&self, class: ClassId, queue: QueueHandle) -> Result<(), ConfigError> {
        let mut r = self.registry.lock();
        r.require_running("assign a class")?;
        let events = r.class_events(class)?;
        r.check_queue(queue)?;
        for id in events {
            r.assign(EventId(id), queue);
            self.publish(&r, EventId(id));
        }
        Ok(())
    }

    /// Routes `id` through a [`Filter`] that decides, per event, whether it
    /// is recorded into the queue `id` is assigned to; returns the filter's
    /// queue handle (a [`FilterQueue`], see [`crate::queues::filter`] for its
    /// counters and what a panicking handler does). A filter takes a queue
    /// slot of its own, for good (the tracer holds at most
    /// [`QueueHandle::MAX_QUEUES`] queues). Events without a filter pay
    /// nothing for filters. A second filter replaces the first;
    /// [`Tracer::assign_event`] or [`Tracer::assign_class`] re-routes the
    /// event and removes its filter; [`Tracer::unfilter_event`] removes it.
    /// Any time before shutdown.
    ///
    /// ```
    /// use qtrace::classes::user;
    /// use qtrace::queues::{Filter, Fixed, FixedParams};
    /// use qtrace::Tracer;
    ///
    /// let tracer = Tracer::new();
    /// let q = tracer.create_queue::<Fixed>(FixedParams { capacity: 16, ..Default::default() })?;
    /// tracer.assign_event(user::USER0, q)?;
    /// tracer.filter_event(user::USER0, Filter::arg(0, 10..=19))?;
    /// for a in [5, 12, 30, 19] {
    ///     tracer.log_event(user::USER0, [a, 0]);
    /// }
    /// let kept: Vec<u64> = tracer.queue(q)?.as_fixed().unwrap()
    ///     .snapshot_events().iter().map(|e| e.args[0]).collect();
    /// assert_eq!(kept, [12, 19]);
    /// # Ok::<(), qtrace::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ConfigError::EventOutOfRange`]; [`ConfigError::FilterWithoutRoute`] when `id`
    /// is assigned to no queue; [`ConfigError::InvalidParameter`] for
    /// [`Filter::arg`] with an index other than 0 or 1;
    /// [`ConfigError::TooManyQueues`]; [`ConfigError::AfterShutdown`].
    pub fn filter_event(&self, id: EventId, filter: Filter) -> Result<QueueHandle, ConfigError> {
        let mut r = self.registry.lock();
        r.require_running("filter an event")?;
        r.check_event(id)?;
        filter.validate()?;
        let target = r
            .queue_of(id)
            .ok_or(ConfigError::FilterWithoutRoute { id })?;
        let handle = self.create_filter(&mut r, filter, target)?;
        r.set_filter(id, Some(handle));
        self.publish(&r, id);
        Ok(handle)
    }

    /// Routes every event of `class` that is assigned to a queue through
    /// `filter` ([`Tracer::filter_event`] for each, sharing one filter queue
    /// per queue the class's events go to); returns the filter queues'
    /// handles, in the order of the events' queues' first appearance.
    ///
    /// # Errors
    ///
    /// As [`Tracer::filter_event`], with [`ConfigError::ClassOutOfRange`], and
    /// [`ConfigError::FilterWithoutRoute`] (naming the class's first event) when
    /// none of its events is assigned.
    pub fn filter_class(
        &self,
        class: ClassId,
        filter: Filter,
    ) -> Result<Vec<QueueHandle>, ConfigError> {
        let mut r = self.registry.lock();
        r.require_running("filter a class")?;
        let events = r.class_events(class)?;
        filter.validate()?;
        let mut made: Vec<(QueueHandle, QueueHandle)> = Vec::new();
        for id in events.clone().map(EventId) {
            let Some(target) = r.queue_of(id) else {
                continue;
            };
            let handle = match made.iter().find(|(t, _)| *t == target) {
                Some(&(_, h)) => h,
                None => {
                    let h = self.create_filter(&mut r, filter.clone(), target)?;
                    made.push((target, h));
                    h
                }
            };
            r.set_filter(id, Some(handle));
            self.publish(&r, id);
        }
        if made.is_empty() {
            return Err(ConfigError::FilterWithoutRoute {
                id: EventId(events.start),
            });
        }
        Ok(made.into_iter().map(|(_, h)| h).collect())
    }

    /// Removes `id`'s filter: its events go straight to its queue again.
    /// Removing no filter is harmless. The filter queue stays (with its
    /// counters) and is reported at shutdown.
    ///
    /// # Errors
    ///
    /// [`ConfigError::EventOutOfRange`]; [`ConfigError::AfterShutdown`].
    pub fn unfilter_event(&self, id: EventId) -> Result<(), ConfigError> {
        let mut r = self.registry.lock();
        r.require_running("unfilter an event")?;
        r.check_event(id)?;
        r.set_filter(id, None);
        self.publish(&r, id);
        Ok(())
    }

    /// Removes the filter of every event of `class`.
    ///
    /// # Errors
    ///
    /// [`ConfigError::ClassOutOfRange`]; [`ConfigError::AfterShutdown`].
    pub fn unfilter_class(&self, class: ClassId) -> Result<(), ConfigError> {
        let mut r = self.registry.lock();
        r.require_running("unfilter a class")?;
        for id in r.class_events(class)? {
            r.set_filter(EventId(id), None);
            self.publish(&r, EventId(id));
        }
        Ok(())
    }

    /// The filter queue an event is routed through, if any.
    ///
    /// # Errors
    ///
    /// [`ConfigError::EventOutOfRange`].
    pub fn filter_of(&self, id: EventId) -> Result<Option<QueueHandle>, ConfigError> {
        let r = self.registry.lock();
        r.check_event(id)?;
        Ok(r.filter_of(id))
    }

    /// Stores a new filter queue forwarding to `target`.
    fn create_filter(
        &self,
        r: &mut Registry,
        filter: Filter,
        target: QueueHandle,
    ) -> Result<QueueHandle, ConfigError> {
        let index = r.queue_types.len();
        if index >= QueueHandle::MAX_QUEUES {
            return Err(ConfigError::TooManyQueues {
                max: QueueHandle::MAX_QUEUES,
            });
        }
        // Filters forward to a real queue, never to another filter.
        let target = self.queues[target.index()]
            .get()
            .expect("created queues are set");
        // SAFETY: `target` is in `self.queues`, a box never moved whose
        // slots are set once and never cleared; the filter queue goes into
        // the same table, so it never outlives its target.
        let queue = unsafe { FilterQueue::new(filter, target) };
        if self.queues[index].set(AnyQueue::custom(queue)).is_err() {
            unreachable!("queue slots are filled in order under the lock");
        }
        r.queue_types.push(FilterQueue::NAME);
        // A filter has no activate hook.
        r.activated.push(r.phase != Phase::Configuring);
        Ok(QueueHandle(index as u16))
    }

    /// Switches one event on (S.Ha.R.K. `trc_trace_event`).
    pub fn trace_event(&self, id: EventId) -> Result<(), ConfigError> {
        self.set_event(id, true)
    }

    /// Switches one event off (S.Ha.R.K. `trc_notrace_event`).
    pub fn notrace_event(&self, id: EventId) -> Result<(), ConfigError> {
        self.set_event(id, false)
    }

    /// Switches a class on (S.Ha.R.K. `trc_trace_class`). Events switched off
    /// one by one stay off.
    pub fn trace_class(&self, class: ClassId) -> Result<(), ConfigError> {
        self.set_class(class, true)
    }

    /// Switches a whole class off (S.Ha.R.K. `trc_notrace_class`).
    pub fn notrace_class(&self, class: ClassId) -> Result<(), ConfigError> {
        self.set_class(class, false)
    }

    fn set_event(&self, id: EventId, on: bool) -> Result<(), ConfigError> {
        let mut r = self.registry.lock();
        r.require_running(if on {
            "enable an event"
        } else {
            "disable an event"
        })?;
        r.check_event(id)?;
        r.set_event_on(id, on);
        self.publish(&r, id);
        Ok(())
    }

    fn set_class(&self, class: ClassId, on: bool) -> Result<(), ConfigError> {
        let mut r = self.registry.lock();
        r.require_running(if on {
            "enable a class"
        } else {
            "disable a class"
        })?;
        let events = r.class_events(class)?;
        r.set_class_on(class, on);
        for id in events {
            self.publish(&r, EventId(id));
        }
        Ok(())
    }

    /// Stops recording everything (S.Ha.R.K. `trc_suspend`); routing and masks
    /// are kept. Suspending twice is harmless.
    pub fn suspend(&self) -> Result<(), ConfigError> {
        let mut r = self.registry.lock();
        r.require_running("suspend the tracer")?;
        r.suspended = true;
        self.publish_all(&r);
        Ok(())
    }

    /// Records again after [`Tracer::suspend`] (S.Ha.R.K. `trc_resume`).
    pub fn resume(&self) -> Result<(), ConfigError> {
        let mut r = self.registry.lock();
        r.require_running("resume the tracer")?;
        r.suspended = false;
        self.publish_all(&r);
        Ok(())
    }

    fn publish(&self, r: &Registry, id: EventId) {
        // Forwarding queues first, so the route never leads to a stale one.
        triggers::rewire(r, &self.queues[..], id);
        self.routes[id.0 as usize].store(r.route_word(id), Ordering::Relaxed);
    }

    fn publish_all(&self, r: &Registry) {
        for i in 0..r.catalog.event_count() {
            self.publish(r, EventId(i as u16));
        }
    }

    // ----- phase 2 and shutdown ----------------------------------------------

    /// Phase 2: activates every queue in handle order (starts tasks, opens
    /// files and sockets). A second call is [`ConfigError::Phase2Twice`]. If a
    /// queue fails to activate, the error is returned, the queues before it stay
    /// active, and a later call activates the rest.
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
            crate::panic_save::register(&self.queues);
        }
        Ok(())
    }

    /// Suspends the tracer, terminates every queue in handle order (so each
    /// saves or flushes what it holds) and reports every queue's counters.
    /// Before any queue terminates, snapshot triggers write the snapshot
    /// still pending, if any ([`crate::queues::trigger`]).
    /// Logging afterwards is a no-op; configuration calls are
    /// [`ConfigError::AfterShutdown`]. A failing terminate hook is reported in its
    /// queue's entry and does not stop the others.
    ///
    /// A tracer dropped without this call runs it from its `Drop` (for every
    /// queue type alike) and discards the report.
    pub fn shutdown(&self) -> Result<ShutdownReport, ConfigError> {
        let mut r = self.registry.lock();
        r.require_running("shut down")?;
        r.phase = Phase::ShutDown;
        // No panic hook writes the files while terminate does.
        crate::panic_save::deregister(&self.queues);
        self.publish_all(&r);
        // Snapshots still pending are written while every queue still
        // holds its events.
        crate::queues::trigger::stop_tasks(&self.queues[..r.queue_types.len()]);
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

    fn context(&self, r: &Registry, handle: QueueHandle, type_name: &'static str) -> QueueContext {
        QueueContext {
            handle,
            type_name,
            output_dir: self.output_dir.clone(),
            catalog: Arc::clone(&r.catalog),
            clock: self.clock.clone(),
        }
    }

    // ----- inspection ---------------------------------------------------------

    /// The lifecycle phase.
    pub fn phase(&self) -> Phase {
        self.registry.lock().phase
    }

    /// Whether the tracer is suspended.
    pub fn is_suspended(&self) -> bool {
        self.registry.lock().suspended
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
    pub fn route_of(&self, id: EventId) -> Result<Option<QueueHandle>, ConfigError> {
        let r = self.registry.lock();
        r.check_event(id)?;
        Ok(r.queue_of(id))
    }

    /// A queue, to call its own methods (a circular queue's snapshot, say).
    pub fn queue(&self, handle: QueueHandle) -> Result<&AnyQueue, ConfigError> {
        self.registry.lock().check_queue(handle)?;
        Ok(self.queues[handle.index()]
            .get()
            .expect("created queues are set"))
    }

    /// A queue's counters so far.
    pub fn counters(&self, handle: QueueHandle) -> Result<QueueCounters, ConfigError> {
        self.queue(handle).map(|q| q.counters())
    }

    /// A queue's health and files.
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
