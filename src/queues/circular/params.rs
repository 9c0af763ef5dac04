//! The circular queue type and its parameters (capacity, shards, where the
//! rings live), checked when the queue is created.

use super::*;

/// The circular queue type (`"circular"`).
///
/// ```
/// # let _cwd = tempfile::tempdir().unwrap(); std::env::set_current_dir(_cwd.path()).unwrap(); // the queue's file at shutdown: not into the checkout
/// use qtrace::classes::user;
/// use qtrace::queues::{Circular, CircularParams, CircularQueue};
/// use qtrace::storage::RingStorage;
///
/// let tracer = qtrace::Tracer::new();
/// let params = CircularParams::default().with_capacity(4).with_shards(0).with_ring(RingStorage::Memory);
/// assert_eq!((params.capacity(), params.shards(), params.ring()), (4, 0, &RingStorage::Memory));
/// let q = tracer.create_queue::<Circular>(params)?;
/// tracer.assign_class(user::CLASS, q)?;
/// for i in 0..6 {
///     tracer.log_event(user::USER0, [i, 0]);
/// }
/// let circular: &CircularQueue = tracer.queue(q)?.as_circular().unwrap();
/// let kept: Vec<u64> = circular.snapshot_events().iter().skip(1).map(|e| e.args[0]).collect();
/// assert_eq!(kept, [2, 3, 4, 5]); // after a hoops record for the 2 overwritten
/// # Ok::<(), qtrace::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Circular;

/// Parameters of a circular queue.
///
/// ```
/// # let _cwd = tempfile::tempdir().unwrap(); std::env::set_current_dir(_cwd.path()).unwrap(); // the queue's file at shutdown: not into the checkout
/// use qtrace::classes::user;
/// use qtrace::queues::{Circular, CircularParams, CircularQueue};
/// use qtrace::storage::RingStorage;
///
/// let tracer = qtrace::Tracer::new();
/// let params = CircularParams::default().with_capacity(4).with_shards(0).with_ring(RingStorage::Memory);
/// let q = tracer.create_queue::<Circular>(params)?;
/// tracer.assign_class(user::CLASS, q)?;
/// for i in 0..6 {
///     tracer.log_event(user::USER0, [i, 0]);
/// }
/// let circular: &CircularQueue = tracer.queue(q)?.as_circular().unwrap();
/// let kept: Vec<u64> = circular.snapshot_events().iter().skip(1).map(|e| e.args[0]).collect();
/// assert_eq!(kept, [2, 3, 4, 5]); // after a hoops record for the 2 overwritten
/// # Ok::<(), qtrace::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CircularParams {
    capacity: usize,
    shards: usize,
    file: Option<PathBuf>,
    ring: RingStorage,
    compact: bool,
}

impl CircularParams {
    /// Events kept: a power of two (default 8192; checked by
    /// [`Tracer::create_queue`](crate::Tracer::create_queue)).
    pub fn with_capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity;
        self
    }

    /// Single-producer shards: 0 (none: every thread uses the shared
    /// multi-producer ring) or a power of two up to [`CircularParams::MAX_SHARDS`] (default
    /// 16). Each shard holds `capacity` events too (32 bytes each; the
    /// shared ring 64), so the queue's memory is
    /// `capacity × (64 + 32 × shards)` bytes: 4.5 MiB for the defaults,
    /// 512 KiB with 0 shards. Only the newest `capacity` events overall
    /// are kept (see [`CircularQueue`]).
    pub fn with_shards(mut self, shards: usize) -> Self {
        self.shards = shards;
        self
    }

    /// Where `terminate` saves; default `<output_dir>/queue<handle>-circular.qtr`.
    pub fn with_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.file = Some(path.into());
        self
    }

    /// Where the rings live while the program runs: by default a ring file
    /// `<output_dir>/queue<handle>-circular.ring` that survives a crash (see
    /// [`RingStorage`]).
    pub fn with_ring(mut self, ring: RingStorage) -> Self {
        self.ring = ring;
        self
    }

    /// Saves and snapshots (also those of snapshot triggers and of the
    /// control endpoint) in compact chunks (`true`, the default: trace-file
    /// version 2, FORMAT.md 1.11, about 5 bytes an event, encoded when the
    /// file is written, never by the producers) or in 32-byte records
    /// (`false`: version 1, for tools that read the records at fixed
    /// offsets). Every reader of this crate and `qtrace` reads both. The
    /// rings (and their ring file) keep 32-byte slots either way.
    ///
    /// ```
    /// use qtrace::queues::CircularParams;
    ///
    /// assert!(CircularParams::default().compact());
    /// assert!(!CircularParams::default().with_compact(false).compact());
    /// ```
    pub fn with_compact(mut self, compact: bool) -> Self {
        self.compact = compact;
        self
    }

    /// Whether saves and snapshots are compact chunks
    /// ([`with_compact`](Self::with_compact)).
    pub fn compact(&self) -> bool {
        self.compact
    }

    /// Events kept.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Single-producer shards (0: none).
    pub fn shards(&self) -> usize {
        self.shards
    }

    /// The file `terminate` saves to, if one was given (else the default
    /// under the tracer's output directory).
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// Where the rings live while the program runs.
    pub fn ring(&self) -> &RingStorage {
        &self.ring
    }

    /// The largest number of shards of a circular queue.
    ///
    /// ```
    /// # let _cwd = tempfile::tempdir().unwrap(); std::env::set_current_dir(_cwd.path()).unwrap(); // own directory: doc tests run in parallel
    /// use qtrace::queues::CircularParams;
    /// assert_eq!(CircularParams::MAX_SHARDS, 256);
    /// assert_eq!(CircularParams::default().shards(), CircularParams::DEFAULT_SHARDS);
    /// ```
    pub const MAX_SHARDS: usize = 256;
    /// Default number of shards.
    pub const DEFAULT_SHARDS: usize = 16;
}

impl Default for CircularParams {
    fn default() -> Self {
        CircularParams {
            capacity: 8192,
            shards: CircularParams::DEFAULT_SHARDS,
            file: None,
            ring: RingStorage::File,
            compact: true,
        }
    }
}

impl QueueType for Circular {
    type Params = CircularParams;
    const NAME: &'static str = "circular";

    fn create(&self, params: CircularParams, ctx: &QueueContext) -> Result<AnyQueue, ConfigError> {
        let bad = |reason: String| ConfigError::InvalidParameter {
            queue_type: Self::NAME,
            reason,
        };
        if params.shards != 0
            && !(params.shards.is_power_of_two() && params.shards <= CircularParams::MAX_SHARDS)
        {
            return Err(bad(format!(
                "shards {} is not 0 or a power of two up to {}; use 0 (no shards), 1, 2, 4, …, or the default {}",
                params.shards,
                CircularParams::MAX_SHARDS,
                CircularParams::DEFAULT_SHARDS
            )));
        }
        check_capacity(params.capacity).map_err(|e| bad(e.to_string()))?;
        // A queue without shards still has one placeholder shard that no
        // thread can own: every event takes the shared ring, and the hot
        // path needs no separate "no shards" branch.
        let (blocks, shard_capacity) = if params.shards == 0 {
            (1, 1)
        } else {
            (params.shards, params.capacity)
        };
        let header = TraceHeader::for_queue(ctx).to_bytes();
        let layout = RingLayout::circular(
            header.len(),
            params.capacity as u64,
            blocks as u64,
            shard_capacity as u64,
        )
        .ok_or_else(|| bad(format!("capacity {} is too large", params.capacity)))?;
        let mut mem = params.ring.allocate(ctx, &layout, &header, Self::NAME)?;
        let mp_slots = mem.place_slice(layout.slots_at as usize, params.capacity, |_| Slot::new(0));
        let mp = mem.place(
            layout.header_len as usize,
            OverwriteRing::with_slots(mp_slots, None),
        );
        let mut records = (0..blocks)
            .map(|s| {
                let at = layout.records_at as usize + s * shard_capacity * RECORD_BYTES;
                Some(mem.place_slice(at, shard_capacity, |_| Record::new()))
            })
            .collect::<Vec<_>>();
        let owner = if params.shards == 0 { NEVER } else { FREE };
        let shards = mem.place_slice(layout.shards_at as usize, blocks, |s| Shard {
            owner: Padded(AtomicU64::new(owner)),
            ring: ShardRing::with_records(records[s].take().expect("one region per shard")),
        });
        Ok(AnyQueue::CircularQueue(CircularQueue {
            shard_mask: blocks as u64 - 1,
            shards,
            mp,
            capacity: params.capacity,
            delivered: AtomicU64::new(0),
            file: params.file.unwrap_or_else(|| default_path(ctx)),
            ctx: FileContext::new(ctx),
            status: StatusCell::default(),
            saved: std::sync::atomic::AtomicBool::new(false),
            compact: params.compact,
            scratch: parking_lot::Mutex::new(Box::default()),
            mem,
        }))
    }
}
