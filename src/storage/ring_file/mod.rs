//! The ring file's layout (FORMAT.md section 6): where a fixed or circular
//! queue keeps its rings when they must outlive the process, and the
//! checked parse of such a file after a crash.
//!
//! The queues place their control words and records at the offsets
//! computed here ([`RingLayout`]); [`RingImage::parse`] reads them back
//! from the file's bytes in safe code, validating every length and offset
//! against the file (a ring file is untrusted input: it may be cut, from
//! another machine, or not a ring file at all), and never panics.
//!
//! Integers in the ring file are in the byte order of the machine that
//! wrote it (the rings are live memory); the header's order mark says which,
//! and the parse reads both orders.
//!
//! In this folder: the layout, its constants and [`RingStorage`] (`mod.rs`),
//! the checked parse (`image.rs`), the checks of the records' own words
//! (`records.rs`).

use crate::model::event::Event;
use crate::ring::backing::PAGE;
use crate::wire::TraceHeader;

/// The first 8 bytes of a ring file.
pub(crate) const MAGIC: [u8; 8] = *b"qtrRING\0";
/// The ring file version this code writes (it also reads version 1, which
/// has no header checksum).
pub(crate) const VERSION: u32 = 2;
/// The oldest ring file version this code reads.
pub(crate) const VERSION_MIN: u32 = 1;
/// Offset of the header checksum (version 2): FNV-1a 64 of the fixed
/// header (this field as zeros) and the trace header, in the writer's order.
pub(crate) const CHECKSUM_AT: usize = 80;
/// Written as a native `u32`: reads as this value in the writer's order.
pub(crate) const ORDER_MARK: u32 = 0x0102_0304;
/// `kind` of a circular queue's ring file.
pub(crate) const KIND_CIRCULAR: u32 = 1;
/// `kind` of a fixed queue's ring file.
pub(crate) const KIND_FIXED: u32 = 2;
/// Bytes of the fixed part of the header (the trace header follows).
pub(crate) const HEADER_FIXED_LEN: usize = 128;
// The ring's memory layout, which this file maps byte for byte.
pub(crate) use crate::ring::layout::{
    CLAIMED_AT, COMMITTED_AT, CTL_BYTES, DROPPED_AT, OWNER_AT, RECORD_BYTES, SHARD_BYTES,
    SLOT_BYTES, TAIL_AT,
};

/// Where a fixed or circular queue keeps its rings.
///
/// The default is [`RingStorage::File`]: a flight recorder exists for the
/// moment the program dies, and only a ring kept in a file survives a
/// SIGKILL, an `abort`, a segfault or a panic that does not unwind. It costs
/// the same per event (the same code writes the same layout; see
/// BENCHMARKS.md) and a file of the queue's size, which a clean shutdown
/// removes after saving the trace. [`RingStorage::Memory`] keeps the rings
/// on the heap: then only a clean shutdown, a dropped tracer or the panic
/// hook ([`crate::Config::save_on_panic`]) saves them.
///
/// ```
/// # let _cwd = tempfile::tempdir().unwrap(); std::env::set_current_dir(_cwd.path()).unwrap(); // the queue's file at shutdown: not into the checkout
/// use qtrace::queues::{Fixed, FixedParams};
/// use qtrace::storage::RingStorage;
///
/// let tracer = qtrace::Tracer::new();
/// // On the heap: no file, saved only by a clean shutdown, a drop or the panic hook.
/// let q = tracer.create_queue::<Fixed>(FixedParams::default().with_ring(RingStorage::Memory))?;
/// assert_eq!(tracer.queue(q)?.as_fixed().unwrap().ring_file(), None);
/// # Ok::<(), qtrace::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum RingStorage {
    /// In a ring file at `<output_dir>/queue<handle>-<type>.ring` (the
    /// directory is created if needed). A ring file already there (left by
    /// a process that did not shut down) is kept, renamed
    /// `queue<handle>-<type>-pid<P>.ring` after the process that wrote it.
    /// Two live queues must not share a ring file path (two tracers with the
    /// same output directory and handles). In one process the second would
    /// move the first's file aside as if it were left by a crash, and it
    /// would stay there after a clean shutdown; a ring file that another
    /// live process has mapped (a parent after `fork`, another program) is
    /// refused instead (Linux). The blocks of a ring file are allocated
    /// when it is created: a file system without room for it is an error of
    /// `create_queue` (naming the path and the size), never a SIGBUS later.
    #[default]
    File,
    /// In a ring file at this path.
    FileAt(std::path::PathBuf),
    /// On the heap: lost if the process dies without shutting down.
    Memory,
}

impl RingStorage {
    /// The ring file for the queue `ctx` describes, if any.
    pub(crate) fn path(
        &self,
        ctx: &crate::queue::queue_trait::QueueContext,
    ) -> Option<std::path::PathBuf> {
        match self {
            RingStorage::File => Some(
                ctx.output_dir
                    .join(format!("queue{}-{}.ring", ctx.handle, ctx.type_name)),
            ),
            RingStorage::FileAt(p) => Some(p.clone()),
            RingStorage::Memory => None,
        }
    }

    /// The region for a queue whose ring file has `layout` and starts with
    /// `header`: a new ring file (or heap memory), the header written.
    pub(crate) fn allocate(
        &self,
        ctx: &crate::queue::queue_trait::QueueContext,
        layout: &RingLayout,
        header: &[u8],
        queue_type: &'static str,
    ) -> Result<crate::ring::backing::Backing, crate::queue::config_error::ConfigError> {
        use crate::ring::backing::Backing;
        let len = usize::try_from(layout.file_len).unwrap_or(usize::MAX);
        let mut mem = match self.path(ctx) {
            None => Backing::heap(len).ok_or_else(|| crate::queue::config_error::ConfigError::InvalidParameter {
                queue_type,
                reason: format!(
                    "cannot allocate {len} bytes for the rings: choose a smaller capacity or fewer shards"
                ),
            })?,
            Some(path) => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(|e| {
                        crate::queue::config_error::ConfigError::io("create ring file directory", dir, hint(e, len))
                    })?;
                }
                keep_previous(&path)?;
                Backing::file(&path, len).map_err(|e| {
                    crate::queue::config_error::ConfigError::io("create ring file", &path, hint(e, len))
                })?
            }
        };
        mem.write_bytes(0, &layout.header_bytes(ctx.handle.0, header));
        Ok(mem)
    }
}

/// Whether `e` says the file system (or the user's quota) has no room.
fn no_space(e: &std::io::Error) -> bool {
    #[cfg(target_os = "linux")]
    return matches!(e.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT));
    #[cfg(not(target_os = "linux"))]
    return e.raw_os_error() == Some(28); // ENOSPC on every Unix
}

/// `e` with what the user can do about a ring file of `len` bytes that
/// cannot be made.
fn hint(e: std::io::Error, len: usize) -> std::io::Error {
    if no_space(&e) {
        return std::io::Error::new(
            e.kind(),
            format!(
                "{e}: the ring file needs {len} bytes ({:.1} MiB) on its file system and they are not free; free that much space, give the tracer a directory on another file system (Config::with_output_dir) or the queue its own ring file (`ring: RingStorage::FileAt(path)`), choose a smaller capacity or fewer shards, or keep the rings on the heap (`ring: RingStorage::Memory`)",
                len as f64 / (1024.0 * 1024.0)
            ),
        );
    }
    if e.kind() == std::io::ErrorKind::AlreadyExists {
        return std::io::Error::new(
            e.kind(),
            format!(
                "{e}: another live queue uses this ring file (two tracers with the same output directory and queue handles?); give each tracer its own directory (Config::with_output_dir) or the queue its own ring file (`ring: RingStorage::FileAt(path)`)"
            ),
        );
    }
    std::io::Error::new(
        e.kind(),
        format!(
            "{e}; give the tracer a writable directory (Config::with_output_dir), the queue a writable ring file (`ring: RingStorage::FileAt(path)`), or keep its rings on the heap (`ring: RingStorage::Memory`)"
        ),
    )
}

/// A ring file already at `path` was left by a process that did not shut
/// down: it is the only record of that crash, so it is moved aside to
/// `<stem>-pid<P>.ring` (`P` its writer's process id, from its header; a
/// `-N` suffix if that name is taken), never overwritten.
fn keep_previous(path: &std::path::Path) -> Result<(), crate::queue::config_error::ConfigError> {
    use std::io::Read;
    let mut head = [0u8; HEADER_FIXED_LEN];
    let n = match std::fs::File::open(path) {
        Ok(mut f) => f.read(&mut head).unwrap_or(0),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(crate::queue::config_error::ConfigError::io(
                "open the previous ring file",
                path,
                e,
            ))
        }
    };
    let pid = if n >= 76 && head[0..8] == MAGIC {
        u32::from_ne_bytes(head[72..76].try_into().expect("4 bytes"))
    } else {
        0
    };
    if pid != 0 && pid != std::process::id() && mapped_by(pid, path) {
        // Not a crash's leftover: the live ring of another process (a
        // parent after `fork`, or another program with the same output
        // directory). Moving it aside would let two processes save to the
        // same names; refuse instead.
        return Err(crate::queue::config_error::ConfigError::io(
            "create ring file",
            path,
            std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                format!(
                    "the ring file is the live ring of process {pid}, which has it mapped; give this tracer its own directory (Config::with_output_dir) or the queue its own ring file (`ring: RingStorage::FileAt(path)`)"
                ),
            ),
        ));
    }
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut target = path.with_file_name(format!("{stem}-pid{pid}.ring"));
    let mut k = 1;
    while target.exists() {
        target = path.with_file_name(format!("{stem}-pid{pid}-{k}.ring"));
        k += 1;
    }
    match std::fs::rename(path, &target) {
        // Moved aside meanwhile by another queue being created.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        r => r.map_err(|e| {
            crate::queue::config_error::ConfigError::io(
                "move the previous ring file aside",
                path,
                e,
            )
        }),
    }
}

/// Whether process `pid` is alive and has the file at `path` mapped (its
/// `/proc/<pid>/maps` lists the file's device and inode): a live ring, never
/// a crash's leftover, whatever process now holds that number.
#[cfg(target_os = "linux")]
pub(crate) fn mapped_by(pid: u32, path: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
        return false;
    };
    let (major, minor) = (libc::major(meta.dev()), libc::minor(meta.dev()));
    let ino = meta.ino().to_string();
    maps.lines().any(|l| {
        // address perms offset dev inode path
        let mut f = l.split_whitespace().skip(3);
        let (Some(dev), Some(inode)) = (f.next(), f.next()) else {
            return false;
        };
        inode == ino
            && dev
                .split_once(':')
                .and_then(|(a, b)| {
                    Some((
                        u32::from_str_radix(a, 16).ok()?,
                        u32::from_str_radix(b, 16).ok()?,
                    ))
                })
                .is_some_and(|(a, b)| a == major && b == minor)
    })
}

/// Elsewhere no process's mappings can be read: a ring file left at the
/// path is always taken for a crash's leftover (FORMAT.md 6.3).
#[cfg(not(target_os = "linux"))]
pub(crate) fn mapped_by(_pid: u32, _path: &std::path::Path) -> bool {
    false
}

/// The largest capacity a ring file may declare (as [`crate::ring::MAX_CAPACITY`]).
const MAX_CAPACITY: u64 = 1 << 32;
/// The most shard blocks a ring file may declare.
const MAX_SHARD_BLOCKS: u64 = 256;

/// `n` rounded up to a page, `None` on overflow.
fn page_up(n: usize) -> Option<u64> {
    let up = n.checked_add(PAGE - 1)? & !(PAGE - 1);
    u64::try_from(up).ok()
}

/// Where everything is in a ring file of a given shape (all offsets in
/// bytes from the start of the file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RingLayout {
    /// [`KIND_CIRCULAR`] or [`KIND_FIXED`].
    pub(crate) kind: u32,
    /// Events the queue keeps.
    pub(crate) capacity: u64,
    /// Shard control blocks (circular; 0 for fixed).
    pub(crate) shard_blocks: u64,
    /// Records per shard.
    pub(crate) shard_capacity: u64,
    /// The header's length (a multiple of a page): the control block's offset.
    pub(crate) header_len: u64,
    /// The slots of the shared ring or the fixed queue.
    pub(crate) slots_at: u64,
    /// The shard control blocks.
    pub(crate) shards_at: u64,
    /// The shard records (shard `s`'s record `i` at
    /// `records_at + (s × shard_capacity + i) × 32`).
    pub(crate) records_at: u64,
    /// The file's length.
    pub(crate) file_len: u64,
}

impl RingLayout {
    /// A circular queue's layout; `None` if it overflows.
    pub(crate) fn circular(
        trace_header_len: usize,
        capacity: u64,
        shard_blocks: u64,
        shard_capacity: u64,
    ) -> Option<RingLayout> {
        let header_len = page_up(HEADER_FIXED_LEN.checked_add(trace_header_len)?)?;
        let slots_at = header_len.checked_add(CTL_BYTES as u64)?;
        // Shard blocks are 128-byte aligned (a capacity of 1 ends the slots
        // at a 64-byte boundary).
        let shards_at = slots_at
            .checked_add(capacity.checked_mul(SLOT_BYTES as u64)?)?
            .checked_add(127)?
            & !127;
        // Shard records start on a page, as a heap allocation of their size
        // would.
        let records_at = shards_at
            .checked_add(shard_blocks.checked_mul(SHARD_BYTES as u64)?)?
            .checked_add(PAGE as u64 - 1)?
            & !(PAGE as u64 - 1);
        let records = shard_blocks
            .checked_mul(shard_capacity)?
            .checked_mul(RECORD_BYTES as u64)?;
        let end = records_at.checked_add(records)?;
        Some(RingLayout {
            kind: KIND_CIRCULAR,
            capacity,
            shard_blocks,
            shard_capacity,
            header_len,
            slots_at,
            shards_at,
            records_at,
            file_len: end.checked_add(PAGE as u64 - 1)? & !(PAGE as u64 - 1),
        })
    }

    /// A fixed queue's layout; `None` if it overflows.
    pub(crate) fn fixed(trace_header_len: usize, capacity: u64) -> Option<RingLayout> {
        let header_len = page_up(HEADER_FIXED_LEN.checked_add(trace_header_len)?)?;
        let slots_at = header_len.checked_add(CTL_BYTES as u64)?;
        let end = slots_at.checked_add(capacity.checked_mul(SLOT_BYTES as u64)?)?;
        Some(RingLayout {
            kind: KIND_FIXED,
            capacity,
            shard_blocks: 0,
            shard_capacity: 0,
            header_len,
            slots_at,
            shards_at: end,
            records_at: end,
            file_len: end.checked_add(PAGE as u64 - 1)? & !(PAGE as u64 - 1),
        })
    }

    /// The header's fixed part followed by `trace_header` (the ordinary
    /// trace file header of the queue, which a recovered trace starts
    /// with), in this machine's byte order.
    pub(crate) fn header_bytes(&self, queue: u16, trace_header: &[u8]) -> Vec<u8> {
        let mut h = vec![0u8; HEADER_FIXED_LEN];
        h[0..8].copy_from_slice(&MAGIC);
        h[8..12].copy_from_slice(&VERSION.to_ne_bytes());
        h[12..16].copy_from_slice(&ORDER_MARK.to_ne_bytes());
        h[16..20].copy_from_slice(&self.kind.to_ne_bytes());
        h[20..24].copy_from_slice(&(queue as u32).to_ne_bytes());
        for (at, v) in [
            (24, self.capacity),
            (32, self.shard_blocks),
            (40, self.shard_capacity),
            (48, self.header_len),
            (56, trace_header.len() as u64),
            (64, self.file_len),
        ] {
            h[at..at + 8].copy_from_slice(&v.to_ne_bytes());
        }
        h[72..76].copy_from_slice(&std::process::id().to_ne_bytes());
        h.extend_from_slice(trace_header);
        let sum = header_checksum(&h);
        h[CHECKSUM_AT..CHECKSUM_AT + 8].copy_from_slice(&sum.to_ne_bytes());
        h
    }
}

/// The header checksum of `header` (the 128-byte fixed part followed by the
/// trace header): FNV-1a 64 over every byte, the checksum field read as
/// zeros. Written once when the file is created, never on the hot path.
pub(crate) fn header_checksum(header: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (i, &b) in header.iter().enumerate() {
        let b = if (CHECKSUM_AT..CHECKSUM_AT + 8).contains(&i) {
            0
        } else {
            b
        };
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

mod image;
mod records;

pub use image::{Damage, DamageKind, RingContents, RingFileError, RingImage};

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn layouts_are_page_aligned_and_ordered() {
        let l = RingLayout::circular(100, 8, 2, 8).unwrap();
        assert_eq!(l.header_len, 4096);
        assert_eq!(l.slots_at, 4096 + 512);
        assert_eq!(l.shards_at, 4096 + 512 + 8 * 64);
        assert_eq!(l.records_at, 8192); // rounded up to a page
        assert_eq!(l.file_len, 12288);
        let f = RingLayout::fixed(5000, 3).unwrap();
        assert_eq!((f.header_len, f.slots_at, f.file_len), (8192, 8704, 12288));
        assert!(RingLayout::circular(0, u64::MAX, 1, 1).is_none());
        // One slot: the shard blocks still start 128-aligned.
        let one = RingLayout::circular(0, 1, 1, 1).unwrap();
        assert_eq!(one.shards_at, 4096 + 512 + 128);
    }

    #[test]
    fn bad_bytes_are_errors_not_panics() {
        assert_eq!(
            RingImage::parse(b"").unwrap_err(),
            RingFileError::NotARingFile
        );
        assert_eq!(
            RingImage::parse(&[0u8; 200]).unwrap_err(),
            RingFileError::NotARingFile
        );
        let l = RingLayout::fixed(0, 4).unwrap();
        let mut h = l.header_bytes(0, &[]);
        // version 9
        h[8..12].copy_from_slice(&9u32.to_ne_bytes());
        assert_eq!(RingImage::parse(&h).unwrap_err(), RingFileError::Version(9));
        let mut h = l.header_bytes(0, &[]);
        h[12..16].copy_from_slice(&7u32.to_ne_bytes());
        assert_eq!(
            RingImage::parse(&h).unwrap_err(),
            RingFileError::ByteOrder(7)
        );
        let h = l.header_bytes(0, &[]);
        assert_eq!(
            RingImage::parse(&h).unwrap_err(),
            RingFileError::Truncated {
                needed: 8192,
                present: 128
            }
        );
        let mut h = l.header_bytes(0, &[]);
        h.resize(8192, 0);
        assert!(matches!(
            RingImage::parse(&h).unwrap_err(),
            RingFileError::TraceHeader(_)
        ));
        let mut h = l.header_bytes(0, &[]);
        h[24..32].copy_from_slice(&0u64.to_ne_bytes());
        assert_eq!(
            RingImage::parse(&h).unwrap_err(),
            RingFileError::Header {
                offset: 24,
                what: "capacity out of range (1 to 2^32)"
            }
        );
    }

    #[test]
    fn garbage_rings_never_panic_and_stay_bounded() {
        let th = crate::wire::TraceHeader::new(
            crate::classes::Catalog::builtin(),
            &crate::model::clock::Clock::manual(&crate::model::clock::ManualClock::new(0)),
        )
        .to_bytes();
        for kind in [KIND_CIRCULAR, KIND_FIXED] {
            let l = if kind == KIND_CIRCULAR {
                RingLayout::circular(th.len(), 8, 2, 8).unwrap()
            } else {
                RingLayout::fixed(th.len(), 8).unwrap()
            };
            let mut file = l.header_bytes(0, &th);
            file.resize(l.file_len as usize, 0);
            let body = l.header_len as usize;
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            for round in 0..if cfg!(miri) { 4 } else { 200 } {
                let mut f = file.clone();
                for w in f[body..].chunks_exact_mut(8) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    // Small values half the time, so states and tickets
                    // look plausible.
                    let v = if round % 2 == 0 { x % 40 } else { x };
                    w.copy_from_slice(&v.to_ne_bytes());
                }
                let img = RingImage::parse(&f).unwrap();
                let rec = crate::storage::recover::recover_bytes(&f).unwrap();
                assert!(rec.counts.recovered <= rec.counts.attempts);
                for r in &img.rings {
                    assert!(r.records.len() as u64 <= r.attempts);
                    assert!(r.unreadable.len() <= 8);
                }
            }
        }
    }

    #[test]
    fn any_prefix_or_byte_flip_of_a_header_never_panics() {
        let th = crate::wire::TraceHeader::new(
            crate::classes::Catalog::builtin(),
            &crate::model::clock::Clock::manual(&crate::model::clock::ManualClock::new(0)),
        )
        .to_bytes();
        let l = RingLayout::circular(th.len(), 4, 2, 4).unwrap();
        let mut file = l.header_bytes(3, &th);
        file.resize(l.file_len as usize, 0);
        let img = RingImage::parse(&file).unwrap();
        assert_eq!((img.queue, img.rings.len()), (3, 1));
        for n in (0..file.len()).step_by(if cfg!(miri) { 1021 } else { 61 }) {
            let _ = RingImage::parse(&file[..n]);
        }
        for i in (0..HEADER_FIXED_LEN).step_by(if cfg!(miri) { 13 } else { 1 }) {
            let mut f = file.clone();
            f[i] ^= 0xff;
            let _ = RingImage::parse(&f);
        }
    }
}
