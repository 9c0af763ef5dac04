//! The online queue type and its parameters (where it writes, its capacity,
//! period and high-water mark), checked when the queue is created.

use super::chunks::Rotation;
use super::{IoState, OnlineQueue, Shared};
use crate::queue::config_error::ConfigError;
use crate::queue::queue_trait::QueueContext;
use crate::queues::drained::feed::Feed;
use crate::queues::drained::lifecycle::{Lifecycle, TaskNames};
use crate::queues::{AnyQueue, QueueType};
use parking_lot::Mutex;
use std::fmt;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

/// The circular-online queue type. Parameters: [`OnlineParams`].
///
/// ```
/// # let _cwd = tempfile::tempdir().unwrap(); std::env::set_current_dir(_cwd.path()).unwrap(); // own directory: doc tests run in parallel
/// use qtrace::classes::user;
/// use qtrace::queues::{Online, OnlineParams, OnlineQueue};
///
/// let dir = std::env::temp_dir().join(format!("qtrace-doc-online-{}", std::process::id()));
/// let tracer = qtrace::Tracer::new();
/// let q = tracer.create_queue::<Online>(
///     OnlineParams::default().with_capacity(1024).with_file(dir.join("online.qtr")),
/// )?;
/// tracer.assign_class(user::CLASS, q)?;
/// tracer.activate()?;
/// tracer.log_event(user::USER0, [1, 0]);
/// let online: &OnlineQueue = tracer.queue(q)?.as_online().unwrap();
/// assert_eq!(online.capacity(), 1024);
/// let report = tracer.shutdown()?;
/// assert_eq!(report.queues[0].counters.accepted, 1);
/// assert!(dir.join("online.qtr").exists());
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), qtrace::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Online;

/// Where an online queue writes.
pub(super) enum Target {
    /// `<output_dir>/queue<handle>-online.qtr`.
    Default,
    /// A file path.
    File(PathBuf),
    /// Any writer (a pipe, a socket, a test double); the trace header is
    /// written to it first.
    Writer(Box<dyn Write + Send>),
}

/// Parameters of an [`Online`] queue, a builder (`with_*`; the getters read
/// a value back). `Default` gives S.Ha.R.K.'s values: 8192 events, a 500 ms
/// period, and QNX's 80 % high-water mark.
///
/// ```
/// # let _cwd = tempfile::tempdir().unwrap(); std::env::set_current_dir(_cwd.path()).unwrap(); // own directory: doc tests run in parallel
/// use std::time::Duration;
/// use qtrace::queues::OnlineParams;
///
/// let params = OnlineParams::default()
///     .with_capacity(1024)
///     .with_period(Duration::from_millis(100))
///     .with_file("trace/online.qtr");
/// assert_eq!(params.capacity(), 1024);
/// assert_eq!(params.period(), Duration::from_millis(100));
/// assert_eq!(params.high_water_percent(), 80);
/// ```
#[non_exhaustive]
pub struct OnlineParams {
    target: Target,
    /// Capacity in events (a power of two).
    pub(crate) capacity: usize,
    /// How often the task drains the queue.
    pub(crate) period: Duration,
    /// Fill level, in percent of `capacity` (1–100), at which the task is woken
    /// before its period ends.
    pub(crate) high_water_percent: u8,
    /// Chunk bounds and retention (off by default: one growing file).
    pub(crate) rotation: Rotation,
    /// The file's records are compact chunks (FORMAT.md 1.11).
    pub(crate) compact: bool,
    /// The task samples the queue's fill level and losses into the file
    /// (FORMAT.md 1.3.4).
    pub(crate) queue_counters: bool,
}

impl Default for OnlineParams {
    fn default() -> Self {
        OnlineParams {
            target: Target::Default,
            capacity: 8192,
            period: Duration::from_millis(500),
            high_water_percent: 80,
            rotation: Rotation::default(),
            compact: true,
            queue_counters: false,
        }
    }
}

impl fmt::Debug for OnlineParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let target = match &self.target {
            Target::Default => "default file".to_string(),
            Target::File(p) => p.display().to_string(),
            Target::Writer(_) => "custom writer".to_string(),
        };
        f.debug_struct("OnlineParams")
            .field("target", &target)
            .field("capacity", &self.capacity)
            .field("period", &self.period)
            .field("high_water_percent", &self.high_water_percent)
            .field("rotation", &self.rotation)
            .field("compact", &self.compact)
            .field("queue_counters", &self.queue_counters)
            .finish()
    }
}

impl OnlineParams {
    /// Writes to `path` (its directory is created) instead of the default
    /// `<output_dir>/queue<handle>-online.qtr`.
    pub fn with_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.target = Target::File(path.into());
        self
    }

    /// Writes the trace (header, then records) to `writer` instead of a file.
    pub fn with_writer(mut self, writer: impl Write + Send + 'static) -> Self {
        self.target = Target::Writer(Box::new(writer));
        self
    }

    /// Writes compact chunks (`true`, the default: trace-file version 2,
    /// FORMAT.md 1.11, about 5 bytes an event, encoded by the drain task,
    /// never by the producers) or 32-byte records (`false`: version 1, for
    /// tools that read the records at fixed offsets). Every reader of this
    /// crate and `qtrace` reads both; so do the rotated chunks.
    ///
    /// ```
    /// use qtrace::queues::OnlineParams;
    ///
    /// assert!(OnlineParams::default().compact());
    /// assert!(!OnlineParams::default().with_compact(false).compact());
    /// ```
    pub fn with_compact(mut self, compact: bool) -> Self {
        self.compact = compact;
        self
    }

    /// Whether the file's records are compact chunks
    /// ([`with_compact`](Self::with_compact)).
    pub fn compact(&self) -> bool {
        self.compact
    }

    /// Has the drain task sample, at the start of each round, the queue's
    /// fill level and its losses so far into the file as the counters
    /// `qtrace:queue.fill` and `qtrace:queue.lost`, as
    /// [`UdpParams::with_queue_counters`](crate::queues::UdpParams::with_queue_counters)
    /// does for a stream (FORMAT.md 1.3.4: the class `qtrace` is added to
    /// the catalog of the file's header, and of every chunk's; its records
    /// come from source `TRACER_SOURCE`, each sample right after the
    /// events that were queued when it was taken). They are records of the
    /// file (the close run's record count holds them), never the queue's
    /// events (its counters and the close run's `delivered` leave them
    /// out). Off by default; producers pay nothing either way. Activation
    /// fails if the catalog already has a class named `qtrace`.
    ///
    /// ```
    /// use qtrace::classes::user;
    /// use qtrace::queues::{Online, OnlineParams};
    /// use qtrace::reader::TraceReader;
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("run.qtr");
    /// let tracer = qtrace::Tracer::new();
    /// let q = tracer.create_queue::<Online>(
    ///     OnlineParams::default()
    ///         .with_file(&path)
    ///         .with_capacity(16)
    ///         .with_queue_counters(true),
    /// )?;
    /// tracer.assign_class(user::CLASS, q)?;
    /// for i in 0..40 {
    ///     tracer.log_event(user::USER0, [i, 0]); // 16 queued, 24 dropped
    /// }
    /// tracer.activate()?;
    /// let report = tracer.shutdown()?;
    /// let c = report.queues[0].counters;
    /// assert_eq!((c.accepted, c.dropped, c.delivered), (16, 24, 16));
    ///
    /// let mut reader = TraceReader::open(&path)?;
    /// let fill = reader.catalog().counter::<u64>("qtrace:queue.fill").unwrap().id();
    /// let lost = reader.catalog().counter::<u64>("qtrace:queue.lost").unwrap().id();
    /// let mut samples = Vec::new();
    /// for e in &mut reader {
    ///     let e = e?;
    ///     if e.id == fill || e.id == lost {
    ///         samples.push(e.args[0]);
    ///     }
    /// }
    /// // The first sample: 16 queued, 24 lost; then 0 queued, 24 lost.
    /// assert_eq!(samples[..4], [16, 24, 0, 24]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_queue_counters(mut self, on: bool) -> Self {
        self.queue_counters = on;
        self
    }

    /// Whether the task samples the queue's own counters into the file
    /// ([`with_queue_counters`](Self::with_queue_counters)).
    pub fn queue_counters(&self) -> bool {
        self.queue_counters
    }

    /// Holds `capacity` events (a power of two), in `capacity × 64` bytes
    /// (a record and its sequence word in a cache line of its own, an event).
    pub fn with_capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity;
        self
    }

    /// Drains every `period`.
    pub fn with_period(mut self, period: Duration) -> Self {
        self.period = period;
        self
    }

    /// Wakes the task early at `percent` % full.
    pub fn with_high_water_percent(mut self, percent: u8) -> Self {
        self.high_water_percent = percent;
        self
    }

    /// Cuts the file into chunks, as LTTng's session rotation does: each
    /// chunk is a complete trace file of its own (header, the names
    /// prologue, records, close run), named `<stem>.<n>.<ext>` beside the
    /// queue's file (`queue0-online.000001.qtr`, `…000002.qtr`, …; a new
    /// run goes on after the highest number found there, never over a
    /// previous run's chunks). The drain closes a chunk and opens the next
    /// one when the next record would take it past `max_bytes` (the close
    /// run included), or at its first round after the chunk's first record
    /// was written `max_age` ago (an empty chunk stays open). `None` leaves
    /// that bound off;
    /// with both `None` (the default) the queue writes one growing file.
    /// A queue given a writer ([`with_writer`](Self::with_writer)) cannot
    /// rotate: creating it fails. See FORMAT.md 1.10 and RELIABILITY.md.
    ///
    /// ```
    /// use qtrace::classes::user;
    /// use qtrace::queues::{Online, OnlineParams};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let tracer = qtrace::Tracer::new();
    /// let q = tracer.create_queue::<Online>(
    ///     OnlineParams::default()
    ///         .with_file(dir.path().join("run.qtr"))
    ///         .with_capacity(32768)
    ///         .with_rotation(Some(8 * 1024), None) // chunks of at most 8 KiB
    ///         .with_retention(Some(2), None),      // the newest 2 kept
    /// )?;
    /// tracer.assign_class(user::CLASS, q)?;
    /// tracer.activate()?;
    /// for i in 0..20_000 {
    ///     tracer.log_event(user::USER0, [i, 0]);
    /// }
    /// let report = tracer.shutdown()?;
    /// // Compact records of 2 bytes or more (40 KB at least): 5 chunks or
    /// // more, the newest 2 kept, oldest first.
    /// let files = &report.queues[0].status.files;
    /// let names: Vec<_> = files.iter().map(|f| f.file_name().unwrap().to_str().unwrap()).collect();
    /// assert_eq!(names.len(), 2);
    /// assert!(names[1] > names[0] && names[0] > "run.000003.qtr");
    /// // Every event accepted; those in deleted chunks count as overwritten.
    /// let c = report.queues[0].counters;
    /// assert_eq!((c.accepted, c.delivered + c.overwritten), (20_000, 20_000));
    /// # Ok::<(), qtrace::Error>(())
    /// ```
    pub fn with_rotation(mut self, max_bytes: Option<u64>, max_age: Option<Duration>) -> Self {
        self.rotation.max_bytes = max_bytes;
        self.rotation.max_age = max_age;
        self
    }

    /// Keeps, of the chunks ([`with_rotation`](Self::with_rotation)), at
    /// most `max_chunks` (the open chunk counted) whose closed chunks
    /// total at most `max_bytes`: after each rotation the drain deletes the
    /// oldest closed chunks, whole, until both hold (the open chunk is never
    /// deleted). The events they held count as `overwritten`, and the
    /// numbering of the chunks kept shows where chunks are missing.
    pub fn with_retention(mut self, max_chunks: Option<usize>, max_bytes: Option<u64>) -> Self {
        self.rotation.keep_chunks = max_chunks;
        self.rotation.keep_bytes = max_bytes;
        self
    }

    /// Capacity in events (a power of two; default 8192).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// How often the task drains the queue (default 500 ms).
    pub fn period(&self) -> Duration {
        self.period
    }

    /// Fill level, in percent of the capacity (1–100), at which the task is
    /// woken before its period ends (default 80).
    pub fn high_water_percent(&self) -> u8 {
        self.high_water_percent
    }
}

impl QueueType for Online {
    type Params = OnlineParams;
    const NAME: &'static str = "online";

    fn create(&self, params: OnlineParams, ctx: &QueueContext) -> Result<AnyQueue, ConfigError> {
        if params.period.is_zero() {
            return Err(ConfigError::InvalidParameter {
                queue_type: Self::NAME,
                reason: "period is zero: give the drain task a period such as 500 ms".into(),
            });
        }
        if let Some(reason) = params.rotation.problem() {
            return Err(ConfigError::InvalidParameter {
                queue_type: Self::NAME,
                reason: reason.into(),
            });
        }
        if params.rotation.on() && matches!(params.target, Target::Writer(_)) {
            return Err(ConfigError::InvalidParameter {
                queue_type: Self::NAME,
                reason: "OnlineParams::with_rotation needs a file to cut into chunks, and this queue writes to a writer: give OnlineParams::with_file (or no target) instead of OnlineParams::with_writer".into(),
            });
        }
        let feed = Feed::new(Self::NAME, params.capacity, params.high_water_percent, true)?;
        let path = match &params.target {
            Target::Default => Some(ctx.output_dir.join(format!(
                "queue{}-{}.qtr",
                ctx.handle,
                Self::NAME
            ))),
            Target::File(p) => Some(p.clone()),
            Target::Writer(_) => None,
        };
        let lifecycle = Lifecycle::new(
            params.target,
            TaskNames {
                thread: "qtrace-online",
                start: "start the online queue's drain thread",
                finish: "finish the online queue's drain task (it panicked) for",
                panicked: "drain task panicked",
            },
            params.period,
            Arc::clone(&feed.control),
        );
        Ok(AnyQueue::OnlineQueue(OnlineQueue {
            shared: Arc::new(Shared {
                feed,
                delivered: AtomicU64::new(0),
                lost_with_file: AtomicU64::new(0),
                retired: AtomicU64::new(0),
                rotate_requested: std::sync::atomic::AtomicBool::new(false),
                io: Mutex::new(IoState::default()),
            }),
            path,
            period: params.period,
            rotation: params.rotation,
            compact: params.compact,
            queue_counters: params.queue_counters,
            lifecycle,
        }))
    }
}
