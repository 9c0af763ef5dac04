//! A ring file read back after a crash ([`RingImage`]): every length and
//! offset checked against the file, both byte orders, never a panic
//! ([`RingFileError`] when the bytes are not a ring file).

use super::records::{self, Fault};
use super::*;

/// Why a ring file cannot be read at all (FORMAT.md 4.5 lists the checks in
/// order and the byte each names, [`RingFileError::offset`]).
///
/// A ring file that can be read but whose fields disagree is not an error:
/// it is read with its [`Damage`] listed ([`RingImage::damage`]).
///
/// ```
/// use qtrace::storage::{RingFileError, RingImage};
/// let e = RingImage::parse(&[0u8; 16]).unwrap_err();
/// assert_eq!(e, RingFileError::NotARingFile);
/// assert_eq!(e.offset(), 0);
/// assert!(!e.to_string().is_empty());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RingFileError {
    /// The file does not start with the ring file's magic bytes (`qtrRING\0`).
    NotARingFile,
    /// The order mark is neither byte order.
    ByteOrder(u32),
    /// A version this code does not read.
    Version(u32),
    /// A header field is out of range or disagrees with the others.
    Header {
        /// Offset of the field.
        offset: u64,
        /// What is wrong with it.
        what: &'static str,
    },
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

impl RingFileError {
    /// The offset of the byte the error names: 0 (magic), 12 (order mark),
    /// 8 (version), the field's offset, the end of the bytes present (cut
    /// short), 128 (the trace header).
    pub fn offset(&self) -> u64 {
        match self {
            RingFileError::NotARingFile => 0,
            RingFileError::ByteOrder(_) => 12,
            RingFileError::Version(_) => 8,
            RingFileError::Header { offset, .. } => *offset,
            RingFileError::Truncated { present, .. } => *present,
            RingFileError::TraceHeader(_) => HEADER_FIXED_LEN as u64,
        }
    }
}

impl std::fmt::Display for RingFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RingFileError::NotARingFile => write!(
                f,
                "not a qtrace ring file (no \"qtrRING\" magic at offset 0): pass the .ring file a fixed or circular queue keeps, not a trace"
            ),
            RingFileError::Version(v) => write!(
                f,
                "ring file version {v} (offset 8) is not supported (this qtrace reads versions {VERSION_MIN} to {VERSION}): use the qtrace that wrote it"
            ),
            RingFileError::ByteOrder(m) => write!(
                f,
                "ring file byte-order mark {m:#010x} (offset 12) is corrupt: the file is damaged, nothing in it can be read"
            ),
            RingFileError::Header { offset, what } => write!(
                f,
                "ring file header is corrupt at offset {offset}: {what}; the layout cannot be trusted, so no record is read"
            ),
            RingFileError::Truncated { needed, present } => write!(
                f,
                "ring file is cut short: its layout needs {needed} bytes, the file has {present} (copy the whole file)"
            ),
            RingFileError::TraceHeader(e) => write!(f, "ring file's trace header (offset 128) is corrupt: {e}"),
        }
    }
}

impl std::error::Error for RingFileError {}

/// A part of a ring file that disagrees with the rest: the file is read,
/// what can be trusted is recovered, and the result is marked damaged (a
/// recovered trace then has no close run, so it never reads as complete).
///
/// ```
/// use qtrace::storage::{Damage, DamageKind};
/// let d = Damage { offset: 4096, kind: DamageKind::DroppedAboveAttempts { attempts: 3, dropped: 9 } };
/// assert!(d.to_string().contains("offset 4096"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damage {
    /// Offset in the file of the field found wrong.
    pub offset: u64,
    /// What is wrong.
    pub kind: DamageKind,
}

/// What a [`Damage`] found (FORMAT.md 6.4).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DamageKind {
    /// The header's checksum (offset 80) does not match its bytes: the
    /// queue handle, process id or catalog may be wrong.
    HeaderChecksum {
        /// The checksum stored.
        stored: u64,
        /// The checksum of the bytes.
        computed: u64,
    },
    /// A counter beyond any real run (more than 2^55 events, over a year at
    /// a billion events a second): taken from the slots instead (circular
    /// tail, fixed tail) or the shard is skipped (both shard counters).
    CounterOutOfRange {
        /// The counter's value.
        value: u64,
    },
    /// The file is longer than its layout (bytes past it are ignored).
    LongerThanLayout {
        /// The layout's length.
        layout: u64,
    },
    /// The shared ring's drop counter exceeds its attempts (less the
    /// records in place, which were accepted): the drop count is taken as 0.
    DroppedAboveAttempts {
        /// Attempts (the tail, less the records in place when they are the
        /// cause).
        attempts: u64,
        /// The drop counter.
        dropped: u64,
    },
    /// A slot holds a ticket the tail has not handed out: the tail is
    /// taken as the newest ticket in the slots + 1.
    TailBehindSlots {
        /// The tail.
        tail: u64,
        /// The newest ticket in a slot.
        newest: u64,
    },
    /// The tail is past the newest ticket in the slots by more than the
    /// drops and the slots being written can explain: it is taken as the
    /// newest ticket + 1.
    TailAheadOfSlots {
        /// The tail.
        tail: u64,
        /// The newest ticket in a slot.
        newest: u64,
    },
    /// A slot's sequence word is impossible (a ticket of another slot, or
    /// state 3; fixed: a state other than 0, 1, 2): counted unreadable.
    Slot {
        /// The slot's index.
        index: u64,
        /// Its sequence word.
        word: u64,
    },
    /// A fixed queue's slot past the tail holds a record: the tail is taken
    /// as its index + 1.
    FixedBeyondTail {
        /// The slot's index.
        index: u64,
        /// The tail.
        tail: u64,
    },
    /// A shard's counters break `committed <= claimed <= committed + 1`:
    /// the smaller is trusted, and beyond it the records the slots prove
    /// newer (FORMAT.md 6.4: a clock that never steps back).
    ShardCounters {
        /// The shard block's index.
        shard: u64,
        /// Its claimed counter.
        claimed: u64,
        /// Its committed counter.
        committed: u64,
        /// The committed count taken: tickets below it are read.
        taken: u64,
    },
    /// A record's flags are none a tracer writes (FORMAT.md 1.4, 1.8): the
    /// record is left out, marked unreadable and damaged.
    RecordFlags {
        /// The record's ticket in its ring.
        ticket: u64,
        /// The flags read.
        flags: u16,
    },
    /// A shard's record whose time is out of order with its neighbours'
    /// (by ticket, under a clock that never steps back): left out, marked.
    RecordTime {
        /// The record's ticket in its shard.
        ticket: u64,
        /// The time read.
        time: u64,
    },
    /// A combine run's records (FORMAT.md 1.8) of consecutive tickets that
    /// do not link up (index, time, id, source): the record at fault is
    /// left out, marked.
    RunBroken {
        /// The record's ticket in its ring.
        ticket: u64,
        /// Its flags.
        flags: u16,
    },
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "damaged at offset {}: ", self.offset)?;
        match &self.kind {
            DamageKind::HeaderChecksum { stored, computed } => write!(
                f,
                "header checksum {stored:#018x} does not match its bytes ({computed:#018x}): queue, process id or names may be wrong"
            ),
            DamageKind::CounterOutOfRange { value } => write!(
                f,
                "counter {value} is beyond any real run (2^55 events); taken from the slots"
            ),
            DamageKind::LongerThanLayout { layout } => write!(
                f,
                "the file is longer than its layout ({layout} bytes); the rest is ignored"
            ),
            DamageKind::DroppedAboveAttempts { attempts, dropped } => write!(
                f,
                "shared ring drop counter {dropped} exceeds its attempts {attempts}; taken as 0"
            ),
            DamageKind::TailBehindSlots { tail, newest } => write!(
                f,
                "shared ring tail {tail} is behind ticket {newest} found in a slot; taken as {}",
                newest + 1
            ),
            DamageKind::TailAheadOfSlots { tail, newest } => write!(
                f,
                "shared ring tail {tail} is far past the newest ticket in its slots ({newest}); taken as {}",
                newest.wrapping_add(1)
            ),
            DamageKind::Slot { index, word } => write!(
                f,
                "slot {index} holds an impossible sequence word {word:#x}; counted unreadable"
            ),
            DamageKind::FixedBeyondTail { index, tail } => write!(
                f,
                "fixed slot {index} holds a record past the tail {tail}; tail taken as {}",
                index + 1
            ),
            DamageKind::ShardCounters { shard, claimed, committed, taken } => write!(
                f,
                "shard {shard}: claimed {claimed} and committed {committed} disagree (committed <= claimed <= committed + 1); records read up to ticket {taken} (the smaller, and the newer records its slots prove)"
            ),
            DamageKind::RecordFlags { ticket, flags } => write!(
                f,
                "record of ticket {ticket} has flags {flags:#06x}, which no tracer writes; left out, marked unreadable"
            ),
            DamageKind::RecordTime { ticket, time } => write!(
                f,
                "shard record of ticket {ticket} has time {time}, out of order with its neighbours; left out, marked unreadable"
            ),
            DamageKind::RunBroken { ticket, flags } => write!(
                f,
                "record of ticket {ticket} (flags {flags:#06x}) breaks its combine run; left out, marked unreadable"
            ),
        }
    }
}

/// One ring's contents as found in a ring file.
///
/// ```
/// # let _cwd = tempfile::tempdir().unwrap(); std::env::set_current_dir(_cwd.path()).unwrap(); // own directory: doc tests run in parallel
/// use qtrace::classes::user;
/// use qtrace::queues::{Circular, CircularParams};
/// use qtrace::storage::{self, RingImage, RingStorage};
///
/// let dir = std::env::temp_dir().join(format!("qtrace-doc-recover-{}", std::process::id()));
/// let ring = dir.join("q.ring");
/// let tracer = qtrace::Tracer::new();
/// let params = CircularParams::default()
///     .with_capacity(64)
///     .with_shards(0)
///     .with_ring(RingStorage::FileAt(ring.clone()));
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
    /// Tickets whose record failed a check of its words (FORMAT.md 6.4,
    /// listed in [`RingImage::damage`]): left out and marked, as the
    /// unreadable ones.
    pub damaged: Vec<u64>,
    /// Every attempt of this ring (tickets handed out).
    pub attempts: u64,
    /// Attempts refused (the ring was busy or full).
    pub dropped: u64,
}

/// A ring file, parsed: what a recovery needs.
///
/// ```
/// # let _cwd = tempfile::tempdir().unwrap(); std::env::set_current_dir(_cwd.path()).unwrap(); // own directory: doc tests run in parallel
/// use qtrace::classes::user;
/// use qtrace::queues::{Circular, CircularParams};
/// use qtrace::storage::{self, RingImage, RingStorage};
///
/// let dir = std::env::temp_dir().join(format!("qtrace-doc-recover-{}", std::process::id()));
/// let ring = dir.join("q.ring");
/// let tracer = qtrace::Tracer::new();
/// let params = CircularParams::default()
///     .with_capacity(64)
///     .with_shards(0)
///     .with_ring(RingStorage::FileAt(ring.clone()));
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
    /// Every field found to disagree with the others, in file order
    /// (empty for a well-formed file).
    pub damage: Vec<Damage>,
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
    /// counted unreadable, like a slot being written; records that fail a
    /// check of their words (FORMAT.md 6.4, "Records") are left out
    /// ([`RingContents::damaged`]). Both are listed in [`RingImage::damage`].
    ///
    /// # Errors
    ///
    /// [`RingFileError`] when the bytes are not a ring file this version
    /// reads, or are cut short.
    ///
    /// ```
    /// # let _cwd = tempfile::tempdir().unwrap(); std::env::set_current_dir(_cwd.path()).unwrap(); // own directory: doc tests run in parallel
    /// use qtrace::classes::user;
    /// use qtrace::queues::{Circular, CircularParams};
    /// use qtrace::storage::{self, RingImage, RingStorage};
    ///
    /// let dir = std::env::temp_dir().join(format!("qtrace-doc-recover-{}", std::process::id()));
    /// let ring = dir.join("q.ring");
    /// let tracer = qtrace::Tracer::new();
    /// let params = CircularParams::default()
    ///     .with_capacity(64)
    ///     .with_shards(0)
    ///     .with_ring(RingStorage::FileAt(ring.clone()));
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
        let head = Head::check(b)?;
        let layout = head.layout;
        if (b.len() as u64) < layout.file_len {
            return Err(RingFileError::Truncated {
                needed: layout.file_len,
                present: b.len() as u64,
            });
        }
        let mut damage = Vec::new();
        let end = HEADER_FIXED_LEN + head.trace_len;
        if head.version >= 2 {
            let stored = head
                .r
                .u64(CHECKSUM_AT as u64)
                .expect("inside the fixed header");
            let computed = super::header_checksum(&b[..end]);
            if stored != computed {
                damage.push(Damage {
                    offset: CHECKSUM_AT as u64,
                    kind: DamageKind::HeaderChecksum { stored, computed },
                });
            }
        }
        let th = &b[HEADER_FIXED_LEN..end];
        let (trace_header, _) =
            TraceHeader::decode(th).map_err(|e| RingFileError::TraceHeader(e.to_string()))?;
        // From here on every offset is inside `file_len <= b.len()`.
        let tolerance = records::time_tolerance(trace_header.clock_kind());
        let rings = match layout.kind {
            KIND_CIRCULAR => circular_rings(&head.r, &layout, tolerance, &mut damage),
            _ => vec![fixed_ring(&head.r, &layout, &mut damage)],
        };
        if (b.len() as u64) > layout.file_len {
            damage.push(Damage {
                offset: layout.file_len,
                kind: DamageKind::LongerThanLayout {
                    layout: layout.file_len,
                },
            });
        }
        damage.sort_by_key(|d| d.offset);
        Ok(RingImage {
            layout,
            queue: head.queue,
            process_id: head.process_id,
            trace_header,
            rings,
            damage,
        })
    }

    /// The length of the ring file whose first bytes are `head` (at least
    /// the 128-byte fixed header), after checking the magic, byte order,
    /// version and every field of the layout: what a reader must read, and
    /// no more.
    ///
    /// # Errors
    ///
    /// As [`RingImage::parse`], for the checks that need only the fixed header.
    pub(crate) fn layout_len(head: &[u8]) -> Result<u64, RingFileError> {
        Head::check(head).map(|h| h.layout.file_len)
    }
}

/// The fixed header, checked (FORMAT.md 4.5, steps 1 to 11).
struct Head<'a> {
    r: Bytes<'a>,
    version: u32,
    queue: u16,
    process_id: u32,
    trace_len: usize,
    layout: RingLayout,
}

/// The longest trace header a ring file may declare (a catalog of 65,536
/// classes of 256 names is far below it).
const MAX_TRACE_HEADER: u64 = 64 << 20;

impl<'a> Head<'a> {
    fn check(b: &'a [u8]) -> Result<Head<'a>, RingFileError> {
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
        let bad = |offset: u64, what: &'static str| RingFileError::Header { offset, what };
        let field = |at: u64| r.u64(at).expect("inside the fixed header");
        let version = r.u32(8).expect("inside the fixed header");
        if !(VERSION_MIN..=VERSION).contains(&version) {
            return Err(RingFileError::Version(version));
        }
        let kind = r.u32(16).expect("inside the fixed header");
        if kind != KIND_CIRCULAR && kind != KIND_FIXED {
            return Err(bad(16, "unknown queue kind (1 circular, 2 fixed)"));
        }
        let queue = u16::try_from(r.u32(20).expect("inside the fixed header"))
            .map_err(|_| bad(20, "queue handle above 0xffff"))?;
        let capacity = field(24);
        if capacity == 0 || capacity > MAX_CAPACITY {
            return Err(bad(24, "capacity out of range (1 to 2^32)"));
        }
        if kind == KIND_CIRCULAR && !capacity.is_power_of_two() {
            return Err(bad(24, "a circular queue's capacity is a power of two"));
        }
        let shard_blocks = field(32);
        let shard_capacity = field(40);
        if kind == KIND_CIRCULAR {
            if shard_blocks == 0 || shard_blocks > MAX_SHARD_BLOCKS {
                return Err(bad(32, "shard count out of range (1 to 256)"));
            }
            if shard_capacity == 0 || shard_capacity > capacity {
                return Err(bad(40, "shard capacity out of range (1 to the capacity)"));
            }
        } else {
            if shard_blocks != 0 {
                return Err(bad(32, "a fixed queue has no shard blocks"));
            }
            if shard_capacity != 0 {
                return Err(bad(40, "a fixed queue has no shard capacity"));
            }
        }
        let header_len = field(48);
        let trace_len = field(56);
        if trace_len > MAX_TRACE_HEADER {
            return Err(bad(56, "trace header length out of range"));
        }
        let trace_len = trace_len as usize;
        let layout = match kind {
            KIND_CIRCULAR => {
                RingLayout::circular(trace_len, capacity, shard_blocks, shard_capacity)
            }
            _ => RingLayout::fixed(trace_len, capacity),
        }
        .ok_or(bad(24, "layout overflows"))?;
        if layout.header_len != header_len {
            return Err(bad(
                48,
                "body offset disagrees with the trace header length",
            ));
        }
        if field(64) != layout.file_len {
            return Err(bad(64, "file length field disagrees with the layout"));
        }
        Ok(Head {
            version,
            queue,
            process_id: r.u32(72).expect("inside the fixed header"),
            trace_len,
            layout,
            r,
        })
    }
}

/// The largest count a ring file's counter may hold: 2^55 events (over a
/// year at a billion a second). With at most 257 rings, sums of counters
/// cannot overflow.
const MAX_COUNT: u64 = 1 << 55;

/// Moves the tickets of `ring.records` (sorted by ticket) that fail the
/// checks of their words (`records::check`) to `ring.damaged`, each listed
/// in `damage` at the record's word at fault (`at(ticket)` is the offset of
/// a record's first word).
fn check_records(
    ring: &mut RingContents,
    at: impl Fn(u64) -> u64,
    shard: bool,
    tolerance: Option<u64>,
    damage: &mut Vec<Damage>,
) {
    let faults = records::check(&ring.records, shard, tolerance);
    if faults.is_empty() {
        return;
    }
    for &(i, fault) in &faults {
        let (ticket, e) = ring.records[i];
        damage.push(match fault {
            Fault::Flags => Damage {
                offset: at(ticket) + 8,
                kind: DamageKind::RecordFlags {
                    ticket,
                    flags: e.flags,
                },
            },
            Fault::Time => Damage {
                offset: at(ticket),
                kind: DamageKind::RecordTime {
                    ticket,
                    time: e.time,
                },
            },
            Fault::Run => Damage {
                offset: at(ticket) + 8,
                kind: DamageKind::RunBroken {
                    ticket,
                    flags: e.flags,
                },
            },
        });
    }
    let mut bad: Vec<u64> = faults.iter().map(|&(i, _)| ring.records[i].0).collect();
    bad.sort_unstable();
    ring.records.retain(|(t, _)| bad.binary_search(t).is_err());
    ring.damaged = bad;
}

/// The multi-producer ring and the shards of a circular ring file, each
/// checked against the others (a counter that the slots contradict is
/// damage, and the slots decide).
fn circular_rings(
    r: &Bytes<'_>,
    l: &RingLayout,
    tolerance: Option<u64>,
    damage: &mut Vec<Damage>,
) -> Vec<RingContents> {
    let (tail, dropped, tail_out_of_range) = mp_counters(r, l, damage);
    let (found, seen) = mp_slots(r, l, damage);
    let totals = mp_totals(l, tail, dropped, tail_out_of_range, &seen, damage);
    let mut rings = vec![mp_ring(r, l, found, totals, seen.bad, tolerance, damage)];
    rings.extend((0..l.shard_blocks).filter_map(|s| shard_ring(r, l, s, tolerance, damage)));
    rings
}

/// The multi-producer ring's tail and drop counters, and whether the tail
/// was out of range (then 0, to be replaced from the slots); a drop count
/// above the tail is damage and taken as 0.
fn mp_counters(r: &Bytes<'_>, l: &RingLayout, damage: &mut Vec<Damage>) -> (u64, u64, bool) {
    let in_file = "offsets checked against the file length";
    let ctl = l.header_len;
    let mut tail = r.u64(ctl + TAIL_AT as u64).expect(in_file);
    let mut dropped = r.u64(ctl + DROPPED_AT as u64).expect(in_file);
    let tail_out_of_range = tail > MAX_COUNT;
    if tail_out_of_range {
        damage.push(Damage {
            offset: ctl + TAIL_AT as u64,
            kind: DamageKind::CounterOutOfRange { value: tail },
        });
        tail = 0; // replaced by the newest ticket in the slots + 1 below
    }
    if dropped > tail {
        damage.push(Damage {
            offset: ctl + DROPPED_AT as u64,
            kind: DamageKind::DroppedAboveAttempts {
                attempts: tail,
                dropped,
            },
        });
        dropped = 0;
    }
    (tail, dropped, tail_out_of_range)
}

/// The first pass over the multi-producer ring's slots: each written slot's
/// (ticket, state, offset) when its ticket belongs at its index, and the
/// newest such ticket; every other written slot is damage (the count of
/// impossible slots is every `Slot` damage listed so far).
fn mp_slots(
    r: &Bytes<'_>,
    l: &RingLayout,
    damage: &mut Vec<Damage>,
) -> (Vec<(u64, u64, u64)>, Slots) {
    let in_file = "offsets checked against the file length";
    let mask = l.capacity - 1;
    // First pass: the slots' tickets, checked against their index.
    let mut found: Vec<(u64, u64, u64)> = Vec::new(); // (ticket, state, offset)
    let mut newest: Option<u64> = None;
    for i in 0..l.capacity {
        let at = l.slots_at + i * SLOT_BYTES as u64;
        let seq = r.u64(at).expect(in_file);
        if seq == 0 {
            continue; // never written
        }
        let state = seq & MP_STATE_MASK;
        match (seq >> 2).checked_sub(1) {
            Some(ticket) if ticket & mask == i && state != 3 && ticket < MAX_COUNT => {
                newest = Some(newest.map_or(ticket, |n| n.max(ticket)));
                found.push((ticket, state, at));
            }
            _ => damage.push(Damage {
                offset: at,
                kind: DamageKind::Slot {
                    index: i,
                    word: seq,
                },
            }),
        }
    }
    let bad_slots = damage
        .iter()
        .filter(|d| matches!(d.kind, DamageKind::Slot { .. }))
        .count() as u64;
    let seen = Slots {
        newest,
        in_place: found.len() as u64,
        bad: bad_slots,
    };
    (found, seen)
}

/// What the first pass found in the multi-producer ring's slots.
struct Slots {
    /// The newest ticket in a slot where it belongs.
    newest: Option<u64>,
    /// Slots holding a ticket where it belongs.
    in_place: u64,
    /// Written slots found impossible (damage of kind `Slot`).
    bad: u64,
}

/// The multi-producer ring's attempts and drops: the tail and drop
/// counters checked against the slots (a counter they contradict is
/// damage, replaced by what the slots prove).
fn mp_totals(
    l: &RingLayout,
    tail: u64,
    mut dropped: u64,
    tail_out_of_range: bool,
    seen: &Slots,
    damage: &mut Vec<Damage>,
) -> (u64, u64) {
    let ctl = l.header_len;
    let (newest, bad_slots) = (seen.newest, seen.bad);
    // The tail against the slots: every ticket in a slot was handed out,
    // and the tickets after the newest one are drops, slots being written
    // (at most a ring's worth) or slots found impossible.
    let mut attempts = tail;
    if tail_out_of_range {
        attempts = newest.map_or(0, |n| n + 1);
    } else if let Some(n) = newest {
        if n >= tail {
            damage.push(Damage {
                offset: ctl + TAIL_AT as u64,
                kind: DamageKind::TailBehindSlots { tail, newest: n },
            });
            attempts = n + 1;
            dropped = dropped.min(attempts);
        } else if tail - (n + 1) > dropped.saturating_add(l.capacity) {
            damage.push(Damage {
                offset: ctl + TAIL_AT as u64,
                kind: DamageKind::TailAheadOfSlots { tail, newest: n },
            });
            attempts = n + 1;
            dropped = 0;
        }
    } else if tail > dropped.saturating_add(l.capacity).saturating_add(bad_slots) {
        // No slot written, yet more attempts than drops and a ring's worth.
        damage.push(Damage {
            offset: ctl + TAIL_AT as u64,
            kind: DamageKind::TailAheadOfSlots {
                tail,
                newest: u64::MAX,
            },
        });
        attempts = 0;
        dropped = 0;
    }
    // Every slot in place holds an accepted ticket: the drops cannot
    // exceed the attempts left.
    let in_place = seen.in_place;
    if dropped > attempts.saturating_sub(in_place) {
        damage.push(Damage {
            offset: ctl + DROPPED_AT as u64,
            kind: DamageKind::DroppedAboveAttempts {
                attempts: attempts.saturating_sub(in_place),
                dropped,
            },
        });
        dropped = 0;
    }
    (attempts, dropped)
}

/// The multi-producer ring's contents: the records of the slots found in
/// place (checked), the tickets being written at the crash, and, for the
/// impossible slots, as many unreadable tickets as are missing.
fn mp_ring(
    r: &Bytes<'_>,
    l: &RingLayout,
    found: Vec<(u64, u64, u64)>,
    (attempts, dropped): (u64, u64),
    bad_slots: u64,
    tolerance: Option<u64>,
    damage: &mut Vec<Damage>,
) -> RingContents {
    let in_file = "offsets checked against the file length";
    let mask = l.capacity - 1;
    let mut mp = RingContents {
        attempts,
        dropped,
        ..Default::default()
    };
    for (ticket, state, at) in found {
        if state == MP_BUSY {
            mp.unreadable.push(ticket);
            continue;
        }
        debug_assert!(state == MP_COMMITTED || state == MP_CONSUMED);
        let words = r.words(at + 8).expect(in_file);
        mp.records.push((ticket, Event::from_words(words)));
    }
    mp.records.sort_by_key(|(t, _)| *t);
    let slot_at = |t: u64| l.slots_at + (t & mask) * SLOT_BYTES as u64 + 8;
    check_records(&mut mp, slot_at, false, tolerance, damage);
    mp.unreadable.sort_unstable();
    mp.unreadable.dedup();
    // The impossible slots are unreadable tickets too: they stand for the
    // tickets missing after the newest ones in place (a ticket can only
    // be counted once, so no more than are missing).
    let missing = mp
        .attempts
        .saturating_sub(mp.dropped)
        .saturating_sub(mp.records.len() as u64)
        .saturating_sub(mp.unreadable.len() as u64)
        .saturating_sub(mp.damaged.len() as u64);
    let placed: std::collections::BTreeSet<u64> = mp
        .records
        .iter()
        .map(|(t, _)| *t)
        .chain(mp.unreadable.iter().copied())
        .chain(mp.damaged.iter().copied())
        .collect();
    let mut t = mp.attempts;
    let mut extra = bad_slots.min(missing);
    while extra > 0 && t > 0 {
        t -= 1;
        if !placed.contains(&t) {
            mp.unreadable.push(t);
            extra -= 1;
        }
    }
    mp.unreadable.sort_unstable();
    mp
}

/// Shard `s`'s contents, or `None` if it was never used (or its counters
/// are out of range, which is damage). The claimed and committed counters
/// are checked against each other, and against the records they cover.
fn shard_ring(
    r: &Bytes<'_>,
    l: &RingLayout,
    s: u64,
    tolerance: Option<u64>,
    damage: &mut Vec<Damage>,
) -> Option<RingContents> {
    let in_file = "offsets checked against the file length";
    let at = l.shards_at + s * SHARD_BYTES as u64;
    let owner = r.u64(at + OWNER_AT as u64).expect(in_file);
    let claimed = r.u64(at + CLAIMED_AT as u64).expect(in_file);
    let committed = r.u64(at + COMMITTED_AT as u64).expect(in_file);
    if owner == 0 || owner == u64::MAX || (claimed == 0 && committed == 0) {
        return None; // never used (or the placeholder of a queue without shards)
    }
    let cap = l.shard_capacity;
    // The producer stores `claimed` before a record and `committed`
    // after it, so `committed <= claimed <= committed + 1`; a record is
    // readable when its slot was not being overwritten.
    if claimed.min(committed) > MAX_COUNT {
        damage.push(Damage {
            offset: at + CLAIMED_AT as u64,
            kind: DamageKind::CounterOutOfRange {
                value: claimed.min(committed),
            },
        });
        return None;
    }
    let base = l.records_at + s * l.shard_capacity * RECORD_BYTES as u64;
    let record_at = |t: u64| base + (t % cap) * RECORD_BYTES as u64;
    let (claimed, committed) = if committed > claimed || claimed - committed > 1 {
        // The smaller counter, and beyond it the records the slots
        // prove newer (a clock that never steps back).
        let (small, large) = (claimed.min(committed), claimed.max(committed));
        let end = tolerance.map_or(small, |w| {
            records::provable_end(small, large, cap, w, |t| {
                r.words(record_at(t)).expect(in_file)
            })
        });
        // Reaching a `claimed` above `committed`: its last ticket may
        // have been being written.
        let taken = if end == large && claimed > committed {
            (end, end - 1)
        } else {
            (end, end)
        };
        damage.push(Damage {
            offset: at + CLAIMED_AT as u64,
            kind: DamageKind::ShardCounters {
                shard: s,
                claimed,
                committed,
                taken: taken.1,
            },
        });
        taken
    } else {
        (claimed, committed)
    };
    let lo = claimed
        .saturating_sub(cap)
        .max(committed.saturating_sub(cap));
    let mut ring = RingContents {
        attempts: claimed,
        ..Default::default()
    };
    ring.records = (lo..committed)
        .map(|t| (t, Event::from_words(r.words(record_at(t)).expect(in_file))))
        .collect();
    check_records(&mut ring, record_at, true, tolerance, damage);
    // The ticket claimed but not committed: being written at the crash.
    if claimed > committed {
        ring.unreadable.push(committed.max(lo));
    }
    Some(ring)
}

fn fixed_ring(r: &Bytes<'_>, l: &RingLayout, damage: &mut Vec<Damage>) -> RingContents {
    let in_file = "offsets checked against the file length";
    let tail_at = l.header_len + TAIL_AT as u64;
    let mut tail = r.u64(tail_at).expect(in_file);
    if tail > MAX_COUNT {
        damage.push(Damage {
            offset: tail_at,
            kind: DamageKind::CounterOutOfRange { value: tail },
        });
        tail = 0; // replaced by the last written slot + 1 below
    }
    // Slots past the tail must be empty: a record there means the tail is
    // wrong (taken as the last such slot + 1).
    let mut past = None;
    for i in tail.min(l.capacity)..l.capacity {
        let at = l.slots_at + i * SLOT_BYTES as u64;
        if r.u64(at).expect(in_file) != FIXED_EMPTY {
            past = Some(i);
        }
    }
    if let Some(i) = past {
        damage.push(Damage {
            offset: tail_at,
            kind: DamageKind::FixedBeyondTail { index: i, tail },
        });
        tail = i + 1;
    }
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
            word => {
                damage.push(Damage {
                    offset: at,
                    kind: DamageKind::Slot { index: i, word },
                });
                ring.unreadable.push(i);
            }
        }
    }
    let slot_at = |i: u64| l.slots_at + i * SLOT_BYTES as u64 + 8;
    check_records(&mut ring, slot_at, false, None, damage);
    ring
}
