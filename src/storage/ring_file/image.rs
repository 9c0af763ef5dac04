//! A ring file read back after a crash ([`RingImage`]): every length and
//! offset checked against the file, both byte orders, never a panic
//! ([`RingFileError`] when the bytes are not a ring file).

use super::*;

/// Why a ring file cannot be read.
///
/// ```
/// use qtrace::storage::RingImage;
/// let e = RingImage::parse(&[0u8; 16]).unwrap_err();
/// assert!(!e.to_string().is_empty());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RingFileError {
    /// The file does not start with the ring file's magic bytes (`qtrRING\0`).
    NotARingFile,
    /// A version this code does not read.
    Version(u32),
    /// The order mark is neither byte order.
    ByteOrder(u32),
    /// A header field is out of range or inconsistent.
    Header(&'static str),
    /// The file is shorter than its layout.
    Truncated {
        /// Bytes the layout needs.
        needed: u64,
        /// Bytes present.
        present: u64,
    },
    /// The embedded trace header does not parse.
    TraceHeader(String),
}

impl std::fmt::Display for RingFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RingFileError::NotARingFile => write!(
                f,
                "not a qtrace ring file (no \"qtrRING\" magic): pass the .ring file a fixed or circular queue keeps, not a trace"
            ),
            RingFileError::Version(v) => write!(
                f,
                "ring file version {v} is not supported (this qtrace reads version {VERSION}): use the qtrace that wrote it"
            ),
            RingFileError::ByteOrder(m) => write!(f, "ring file byte-order mark {m:#010x} is corrupt"),
            RingFileError::Header(what) => write!(f, "ring file header is corrupt: {what}"),
            RingFileError::Truncated { needed, present } => write!(
                f,
                "ring file is cut short: its layout needs {needed} bytes, the file has {present}"
            ),
            RingFileError::TraceHeader(e) => write!(f, "ring file's trace header is corrupt: {e}"),
        }
    }
}

impl std::error::Error for RingFileError {}

/// One ring's contents as found in a ring file.
///
/// ```
/// use qtrace::classes::user;
/// use qtrace::queues::{Circular, CircularParams};
/// use qtrace::storage::{self, RingImage, RingStorage};
///
/// let dir = std::env::temp_dir().join(format!("qtrace-doc-recover-{}", std::process::id()));
/// let ring = dir.join("q.ring");
/// let tracer = qtrace::Tracer::new();
/// let params = CircularParams {
///     capacity: 64,
///     shards: 0,
///     ring: RingStorage::FileAt(ring.clone()),
///     ..Default::default()
/// };
/// let q = tracer.create_queue::<Circular>(params)?;
/// tracer.assign_class(user::CLASS, q)?;
/// tracer.log_event(user::USER0, [7, 0]);
/// // While the program runs (or after it died), the ring file holds the events.
/// let rec = storage::recover_file(&ring)?;
/// assert_eq!((rec.counts.attempts, rec.counts.recovered), (1, 1));
/// assert_eq!(rec.events.iter().filter(|e| e.id == user::USER0).count(), 1);
/// let image = RingImage::parse(&std::fs::read(&ring)?)?;
/// assert_eq!(image.rings[0].records.len(), 1);
/// storage::write_trace(&rec, dir.join("recovered.qtr"))?;
/// # tracer.shutdown()?;
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RingContents {
    /// Readable records, by ticket.
    pub records: Vec<(u64, Event)>,
    /// Tickets whose slot was being written when the process stopped: the
    /// record is unreadable (it would be torn) and is marked, not shown.
    pub unreadable: Vec<u64>,
    /// Every attempt of this ring (tickets handed out).
    pub attempts: u64,
    /// Attempts refused (the ring was busy or full).
    pub dropped: u64,
}

/// A ring file, parsed: what a recovery needs.
///
/// ```
/// use qtrace::classes::user;
/// use qtrace::queues::{Circular, CircularParams};
/// use qtrace::storage::{self, RingImage, RingStorage};
///
/// let dir = std::env::temp_dir().join(format!("qtrace-doc-recover-{}", std::process::id()));
/// let ring = dir.join("q.ring");
/// let tracer = qtrace::Tracer::new();
/// let params = CircularParams {
///     capacity: 64,
///     shards: 0,
///     ring: RingStorage::FileAt(ring.clone()),
///     ..Default::default()
/// };
/// let q = tracer.create_queue::<Circular>(params)?;
/// tracer.assign_class(user::CLASS, q)?;
/// tracer.log_event(user::USER0, [7, 0]);
/// // While the program runs (or after it died), the ring file holds the events.
/// let rec = storage::recover_file(&ring)?;
/// assert_eq!((rec.counts.attempts, rec.counts.recovered), (1, 1));
/// assert_eq!(rec.events.iter().filter(|e| e.id == user::USER0).count(), 1);
/// let image = RingImage::parse(&std::fs::read(&ring)?)?;
/// assert_eq!(image.rings[0].records.len(), 1);
/// storage::write_trace(&rec, dir.join("recovered.qtr"))?;
/// # tracer.shutdown()?;
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct RingImage {
    /// The layout declared by the header (validated against the file).
    pub(crate) layout: RingLayout,
    /// The queue handle that wrote it.
    pub queue: u16,
    /// The writer's process id.
    pub process_id: u32,
    /// The queue's trace header (catalog, clock).
    pub trace_header: TraceHeader,
    /// The rings: for a circular queue the shared ring then each shard in
    /// use; for a fixed queue its one ring.
    pub rings: Vec<RingContents>,
}

/// Reads integers of the writer's byte order from checked offsets.
struct Bytes<'a> {
    b: &'a [u8],
    swap: bool,
}

impl Bytes<'_> {
    fn u32(&self, at: u64) -> Option<u32> {
        let at = usize::try_from(at).ok()?;
        let v = u32::from_ne_bytes(self.b.get(at..at.checked_add(4)?)?.try_into().ok()?);
        Some(if self.swap { v.swap_bytes() } else { v })
    }
    fn u64(&self, at: u64) -> Option<u64> {
        let at = usize::try_from(at).ok()?;
        let v = u64::from_ne_bytes(self.b.get(at..at.checked_add(8)?)?.try_into().ok()?);
        Some(if self.swap { v.swap_bytes() } else { v })
    }
    fn words(&self, at: u64) -> Option<[u64; 4]> {
        Some([
            self.u64(at)?,
            self.u64(at + 8)?,
            self.u64(at + 16)?,
            self.u64(at + 24)?,
        ])
    }
}

// Sequence words of the circular queue's shared ring (see `ring/overwrite.rs`):
// `(ticket + 1) << 2 | state`.
const MP_STATE_MASK: u64 = 0b11;
const MP_COMMITTED: u64 = 0;
const MP_BUSY: u64 = 1;
const MP_CONSUMED: u64 = 2;
// Sequence words of the fixed queue's slots (see `fixed.rs`).
const FIXED_EMPTY: u64 = 0;
const FIXED_COMMITTED: u64 = 1;
const FIXED_SAVED: u64 = 2;

impl RingImage {
    /// Parses a ring file's bytes. Slots in an impossible state (a
    /// sequence word that names another slot, an unknown state) are
    /// counted unreadable, like a slot being written.
    ///
    /// # Errors
    ///
    /// [`RingFileError`] when the bytes are not a ring file this version
    /// reads, or are cut short.
    ///
    /// ```
    /// use qtrace::classes::user;
    /// use qtrace::queues::{Circular, CircularParams};
    /// use qtrace::storage::{self, RingImage, RingStorage};
    ///
    /// let dir = std::env::temp_dir().join(format!("qtrace-doc-recover-{}", std::process::id()));
    /// let ring = dir.join("q.ring");
    /// let tracer = qtrace::Tracer::new();
    /// let params = CircularParams {
    ///     capacity: 64,
    ///     shards: 0,
    ///     ring: RingStorage::FileAt(ring.clone()),
    ///     ..Default::default()
    /// };
    /// let q = tracer.create_queue::<Circular>(params)?;
    /// tracer.assign_class(user::CLASS, q)?;
    /// tracer.log_event(user::USER0, [7, 0]);
    /// // While the program runs (or after it died), the ring file holds the events.
    /// let rec = storage::recover_file(&ring)?;
    /// assert_eq!((rec.counts.attempts, rec.counts.recovered), (1, 1));
    /// assert_eq!(rec.events.iter().filter(|e| e.id == user::USER0).count(), 1);
    /// let image = RingImage::parse(&std::fs::read(&ring)?)?;
    /// assert_eq!(image.rings[0].records.len(), 1);
    /// storage::write_trace(&rec, dir.join("recovered.qtr"))?;
    /// # tracer.shutdown()?;
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn parse(b: &[u8]) -> Result<RingImage, RingFileError> {
        if b.len() < HEADER_FIXED_LEN || b[0..8] != MAGIC {
            return Err(RingFileError::NotARingFile);
        }
        let mark = u32::from_ne_bytes(b[12..16].try_into().expect("4 bytes"));
        let swap = match mark {
            ORDER_MARK => false,
            m if m.swap_bytes() == ORDER_MARK => true,
            m => return Err(RingFileError::ByteOrder(m)),
        };
        let r = Bytes { b, swap };
        let field = |at: u64| r.u64(at).expect("inside the fixed header");
        let version = r.u32(8).expect("inside the fixed header");
        if version != VERSION {
            return Err(RingFileError::Version(version));
        }
        let kind = r.u32(16).expect("inside the fixed header");
        let queue = r.u32(20).expect("inside the fixed header");
        let capacity = field(24);
        let shard_blocks = field(32);
        let shard_capacity = field(40);
        let header_len = field(48);
        let trace_len = field(56);
        let process_id = r.u32(72).expect("inside the fixed header");
        if capacity == 0 || capacity > MAX_CAPACITY {
            return Err(RingFileError::Header("capacity out of range"));
        }
        let queue = u16::try_from(queue).map_err(|_| RingFileError::Header("queue handle"))?;
        let trace_len =
            usize::try_from(trace_len).map_err(|_| RingFileError::Header("trace header length"))?;
        let layout = match kind {
            KIND_CIRCULAR => {
                if shard_blocks == 0 || shard_blocks > MAX_SHARD_BLOCKS {
                    return Err(RingFileError::Header("shard count out of range"));
                }
                if shard_capacity == 0 || shard_capacity > capacity {
                    return Err(RingFileError::Header("shard capacity out of range"));
                }
                RingLayout::circular(trace_len, capacity, shard_blocks, shard_capacity)
            }
            KIND_FIXED => RingLayout::fixed(trace_len, capacity),
            _ => return Err(RingFileError::Header("unknown queue kind")),
        }
        .ok_or(RingFileError::Header("layout overflows"))?;
        if layout.header_len != header_len {
            return Err(RingFileError::Header(
                "header length disagrees with the trace header length",
            ));
        }
        if (b.len() as u64) < layout.file_len {
            return Err(RingFileError::Truncated {
                needed: layout.file_len,
                present: b.len() as u64,
            });
        }
        let th = &b[HEADER_FIXED_LEN..HEADER_FIXED_LEN + trace_len];
        let (trace_header, _) =
            TraceHeader::decode(th).map_err(|e| RingFileError::TraceHeader(e.to_string()))?;
        // From here on every offset is inside `file_len <= b.len()`.
        let rings = match kind {
            KIND_CIRCULAR => circular_rings(&r, &layout),
            _ => vec![fixed_ring(&r, &layout)],
        };
        Ok(RingImage {
            layout,
            queue,
            process_id,
            trace_header,
            rings,
        })
    }
}

fn circular_rings(r: &Bytes<'_>, l: &RingLayout) -> Vec<RingContents> {
    let in_file = "offsets checked against the file length";
    let ctl = l.header_len;
    let mut mp = RingContents {
        attempts: r.u64(ctl + TAIL_AT as u64).expect(in_file),
        dropped: r.u64(ctl + DROPPED_AT as u64).expect(in_file),
        ..Default::default()
    };
    let mask = l.capacity - 1;
    for i in 0..l.capacity {
        let at = l.slots_at + i * SLOT_BYTES as u64;
        let seq = r.u64(at).expect(in_file);
        if seq == 0 {
            continue; // never written
        }
        let Some(ticket) = (seq >> 2).checked_sub(1) else {
            continue; // no ticket: corrupt, and nothing to place
        };
        let state = seq & MP_STATE_MASK;
        if ticket & mask != i || ticket >= mp.attempts || state == MP_BUSY || state == 3 {
            mp.unreadable
                .push(ticket.min(mp.attempts.saturating_sub(1)));
            continue;
        }
        debug_assert!(state == MP_COMMITTED || state == MP_CONSUMED);
        let words = r.words(at + 8).expect(in_file);
        mp.records.push((ticket, Event::from_words(words)));
    }
    mp.records.sort_by_key(|(t, _)| *t);
    mp.unreadable.sort_unstable();
    mp.unreadable.dedup();
    // More unreadable tickets than missing ones would make the counts
    // inconsistent: only a corrupt file has them.
    let missing = mp
        .attempts
        .saturating_sub(mp.dropped)
        .saturating_sub(mp.records.len() as u64);
    mp.unreadable
        .truncate(missing.min(mp.unreadable.len() as u64) as usize);
    let mut rings = vec![mp];
    for s in 0..l.shard_blocks {
        let at = l.shards_at + s * SHARD_BYTES as u64;
        let owner = r.u64(at + OWNER_AT as u64).expect(in_file);
        let claimed = r.u64(at + CLAIMED_AT as u64).expect(in_file);
        let committed = r.u64(at + COMMITTED_AT as u64).expect(in_file);
        if owner == 0 || owner == u64::MAX || claimed == 0 {
            continue; // never used (or the placeholder of a queue without shards)
        }
        let cap = l.shard_capacity;
        // The producer stores `claimed` before a record and `committed`
        // after it, so `committed <= claimed <= committed + 1`; a record is
        // readable when its slot was not being overwritten.
        let committed = committed.min(claimed);
        let lo = claimed
            .saturating_sub(cap)
            .max(committed.saturating_sub(cap));
        let base = l.records_at + s * l.shard_capacity * RECORD_BYTES as u64;
        let mut ring = RingContents {
            attempts: claimed,
            ..Default::default()
        };
        for t in lo..committed {
            let words = r
                .words(base + (t % cap) * RECORD_BYTES as u64)
                .expect(in_file);
            ring.records.push((t, Event::from_words(words)));
        }
        // The ticket claimed but not committed: being written at the crash
        // (at most one in a well-formed file; more is corruption, counted
        // as an ordinary gap).
        if claimed > committed {
            ring.unreadable.push(committed.max(lo));
        }
        rings.push(ring);
    }
    rings
}

fn fixed_ring(r: &Bytes<'_>, l: &RingLayout) -> RingContents {
    let in_file = "offsets checked against the file length";
    let tail = r.u64(l.header_len + TAIL_AT as u64).expect(in_file);
    let filled = tail.min(l.capacity);
    let mut ring = RingContents {
        attempts: tail,
        dropped: tail - filled,
        ..Default::default()
    };
    for i in 0..filled {
        let at = l.slots_at + i * SLOT_BYTES as u64;
        match r.u64(at).expect(in_file) {
            FIXED_COMMITTED | FIXED_SAVED => {
                let words = r.words(at + 8).expect(in_file);
                ring.records.push((i, Event::from_words(words)));
            }
            FIXED_EMPTY => ring.unreadable.push(i),
            _ => ring.unreadable.push(i),
        }
    }
    ring
}
