//! The memory a fixed or circular queue keeps its rings in: zeroed memory
//! on the heap, or a shared mapping of a *ring file* (FORMAT.md section 6)
//! that outlives the process.
//!
//! Both kinds hold the same layout ([`crate::storage::ring_file`]) and the same ring
//! code runs on both: a ring's control words (tickets, indices, owners) and
//! its records are placed in the region, and the queue reaches them through
//! plain pointers ([`Region`], [`Placed`]), exactly as it reached a `Box`
//! before. So a file-backed queue runs the same instructions as a heap one;
//! only where the stores land differs. The kernel keeps a shared file
//! mapping's pages when the process dies however it dies (SIGKILL, abort, a
//! segfault), so every store a producer made is in the file.
//!
//! Under Miri and loom the file kind falls back to the heap (neither can
//! map a file): the ring code is the same, only the memory's origin is not
//! checked there.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::path::Path;
use std::ptr::NonNull;

/// The granularity of a region's length and alignment.
pub(crate) const PAGE: usize = 4096;

/// Zeroed, page-aligned memory: heap or a shared file mapping.
pub(crate) struct Backing {
    base: NonNull<u8>,
    len: usize,
    kind: Kind,
}

enum Kind {
    Heap(Layout),
    #[cfg(not(any(miri, loom)))]
    File {
        // Owns the mapping `base` points into; never moved out.
        _map: memmap2::MmapMut,
        path: std::path::PathBuf,
        // The file mapped, to tell it from another file at `path` later.
        file: std::fs::File,
    },
}

impl std::fmt::Debug for Backing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backing")
            .field("len", &self.len)
            .field("file", &self.path())
            .finish()
    }
}

// SAFETY: the region is plain memory; every word the queues share in it is
// an atomic (placed there by `place`/`place_slice`), so sharing the region
// between threads is as safe as sharing those atomics.
unsafe impl Send for Backing {}
// SAFETY: as for `Send`.
unsafe impl Sync for Backing {}

/// Rounds `n` up to a multiple of `to` (a power of two).
pub(crate) const fn round_up(n: usize, to: usize) -> usize {
    (n + to - 1) & !(to - 1)
}

impl Backing {
    /// `len` zeroed bytes on the heap (rounded up to a page); `None` when the
    /// allocator refuses.
    pub(crate) fn heap(len: usize) -> Option<Backing> {
        let len = round_up(len.max(1).checked_add(PAGE)? - PAGE, PAGE);
        let layout = Layout::from_size_align(len, PAGE).ok()?;
        // SAFETY: `layout` has a non-zero size.
        let base = NonNull::new(unsafe { alloc_zeroed(layout) })?;
        Some(Backing {
            base,
            len,
            kind: Kind::Heap(layout),
        })
    }

    /// Creates `path`, which must not exist, sizes it to `len` bytes (rounded
    /// up to a page, all zero) with every block allocated on the disk
    /// ([`allocate_blocks`]), and maps it shared, read-write.
    ///
    /// # Errors
    ///
    /// `StorageFull` (ENOSPC) or `QuotaExceeded` when the file system has no
    /// room for the whole file: the file is removed and nothing is mapped, so
    /// a full disk is this error and never a SIGBUS at the first store.
    ///
    /// `AlreadyExists` when `path` exists: it was created since the caller
    /// moved a previous file aside, by another live queue using the same
    /// path. Never truncating it means two queues never share one mapping.
    #[cfg(not(any(miri, loom)))]
    pub(crate) fn file(path: &Path, len: usize) -> std::io::Result<Backing> {
        let len = round_up(len.max(1), PAGE);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)?;
        if let Err(e) = allocate_blocks(&file, len as u64) {
            // Leave no sparse file behind: the queue is not created.
            drop(file);
            let _ = std::fs::remove_file(path);
            return Err(e);
        }
        // SAFETY: the file was just created (not opened: `create_new`) by
        // this process and is only ever accessed through this mapping (plain bytes before the
        // rings are placed, atomics after). Another process that truncates
        // it while mapped would make accesses fault (SIGBUS); a ring file is
        // private to the queue that made it, as documented in FORMAT.md.
        let mut map = unsafe { memmap2::MmapOptions::new().len(len).map_mut(&file)? };
        let base = NonNull::new(map.as_mut_ptr()).expect("a mapping is never at address 0");
        Ok(Backing {
            base,
            len,
            kind: Kind::File {
                _map: map,
                path: path.to_path_buf(),
                file,
            },
        })
    }

    /// Under Miri and loom: heap memory standing in for the file.
    #[cfg(any(miri, loom))]
    pub(crate) fn file(_path: &Path, len: usize) -> std::io::Result<Backing> {
        Backing::heap(len).ok_or_else(|| std::io::Error::other("out of memory"))
    }

    /// The ring file, if this region is one.
    pub(crate) fn path(&self) -> Option<&Path> {
        match &self.kind {
            Kind::Heap(_) => None,
            #[cfg(not(any(miri, loom)))]
            Kind::File { path, .. } => Some(path),
        }
    }

    /// The region's length in bytes.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Copies `bytes` to `offset` (the ring file's header, before any ring
    /// is shared).
    pub(crate) fn write_bytes(&mut self, offset: usize, bytes: &[u8]) {
        assert!(offset <= self.len && bytes.len() <= self.len - offset);
        // SAFETY: in bounds (checked above); `&mut self` means no ring placed
        // in the region is shared yet, and the header bytes are never placed
        // values.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                self.base.as_ptr().add(offset),
                bytes.len(),
            )
        }
    }

    /// Moves `value` to `offset` and returns where it now lives.
    ///
    /// # Panics
    ///
    /// When `offset` is misaligned for `T` or the value does not fit (a
    /// layout bug, never input-dependent).
    pub(crate) fn place<T>(&mut self, offset: usize, value: T) -> Placed<T> {
        let ptr = self.slot_ptr::<T>(offset, 1);
        // SAFETY: `slot_ptr` checked bounds and alignment; the bytes there
        // are not yet a placed value (each offset is placed once).
        unsafe { ptr.as_ptr().write(value) };
        Placed(ptr)
    }

    /// Places `n` values `make(0), make(1), …` from `offset` on.
    pub(crate) fn place_slice<T>(
        &mut self,
        offset: usize,
        n: usize,
        mut make: impl FnMut(usize) -> T,
    ) -> Region<T> {
        let ptr = self.slot_ptr::<T>(offset, n);
        for i in 0..n {
            // SAFETY: `i < n` and `slot_ptr` checked that `n` values fit.
            unsafe { ptr.as_ptr().add(i).write(make(i)) };
        }
        Region { ptr, len: n }
    }

    fn slot_ptr<T>(&self, offset: usize, n: usize) -> NonNull<T> {
        let bytes = std::mem::size_of::<T>()
            .checked_mul(n)
            .expect("region size overflows");
        assert!(
            offset % std::mem::align_of::<T>() == 0,
            "misaligned placement"
        );
        assert!(
            offset <= self.len && bytes <= self.len - offset,
            "placement out of the region"
        );
        // SAFETY: in bounds (checked above), so the pointer stays inside the
        // allocation or mapping.
        unsafe { NonNull::new_unchecked(self.base.as_ptr().add(offset).cast()) }
    }

    /// Removes the ring file (after a clean save made it redundant). The
    /// mapping stays valid until the region is dropped.
    /// Only the file this region maps: if another file took its name
    /// meanwhile (a second queue with the same ring file path moved this one
    /// aside), that one is left alone.
    pub(crate) fn remove_file(&self) -> std::io::Result<()> {
        match &self.kind {
            Kind::Heap(_) => Ok(()),
            #[cfg(not(any(miri, loom)))]
            Kind::File { path, file, .. } => {
                if same_file(file, path)? {
                    std::fs::remove_file(path)
                } else {
                    Ok(())
                }
            }
        }
    }
}

/// Gives the new, empty `file` a length of `len` bytes with every block
/// allocated, so that stores through a shared mapping of it never need the
/// file system to find room (a store into a hole of a full file system is a
/// SIGBUS, not an error). `fallocate` where the file system has it (ext4,
/// xfs, btrfs, tmpfs); else zeros written through `write` (whose errors are
/// returned), then the length set.
#[cfg(not(any(miri, loom)))]
fn allocate_blocks(file: &std::fs::File, len: u64) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let size = libc::off_t::try_from(len)
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
        loop {
            // SAFETY: `fallocate` takes a descriptor and integers; the
            // descriptor is open while `file` is borrowed; no memory is passed.
            if unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, size) } == 0 {
                return Ok(());
            }
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS) => break, // write zeros
                _ => return Err(e),
            }
        }
    }
    use std::io::Write;
    let zeros = [0u8; 64 * 1024];
    let mut w = file;
    let mut left = len;
    while left > 0 {
        let n = left.min(zeros.len() as u64) as usize;
        w.write_all(&zeros[..n])?;
        left -= n as u64;
    }
    // Blocks written this way are only sure to be there once the file
    // system has them: `sync_data` reports a delayed allocation failure.
    file.sync_data()?;
    file.set_len(len)
}

/// Whether `path` names the file `file` is open on.
#[cfg(all(unix, not(any(miri, loom))))]
fn same_file(file: &std::fs::File, path: &Path) -> std::io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let (a, b) = (file.metadata()?, std::fs::metadata(path)?);
    Ok(a.dev() == b.dev() && a.ino() == b.ino())
}

/// Whether `path` names the file `file` is open on (by length and time where
/// the platform gives no inode).
#[cfg(all(not(unix), not(any(miri, loom))))]
fn same_file(file: &std::fs::File, path: &Path) -> std::io::Result<bool> {
    let (a, b) = (file.metadata()?, std::fs::metadata(path)?);
    Ok(a.len() == b.len() && a.modified().ok() == b.modified().ok())
}

impl Drop for Backing {
    fn drop(&mut self) {
        match &self.kind {
            // SAFETY: `base` came from `alloc_zeroed(layout)` and is freed
            // once, here.
            Kind::Heap(layout) => unsafe { dealloc(self.base.as_ptr(), *layout) },
            #[cfg(not(any(miri, loom)))]
            Kind::File { .. } => {} // the mapping unmaps itself
        }
    }
}

/// A value placed in a [`Backing`]: a pointer that derefs like a `Box`,
/// without owning (the queue holding it also holds the region, which lives
/// as long as the queue).
pub(crate) struct Placed<T>(NonNull<T>);

impl<T> std::ops::Deref for Placed<T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        // SAFETY: placed by `Backing::place` in a region its holder keeps
        // alive for as long as it keeps this pointer; only shared references
        // are ever made.
        unsafe { self.0.as_ref() }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Placed<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

impl<T> Placed<T> {
    /// Drops the value in place (from the holder's `Drop`, before the
    /// region goes).
    ///
    /// # Safety
    ///
    /// Called once, and the value is not used afterwards.
    pub(crate) unsafe fn drop_in_place(&mut self) {
        // SAFETY: by the caller's contract.
        unsafe { std::ptr::drop_in_place(self.0.as_ptr()) }
    }
}

// SAFETY: a `Placed<T>` gives only `&T`, like `&T` itself.
unsafe impl<T: Sync> Send for Placed<T> {}
// SAFETY: as for `Send`.
unsafe impl<T: Sync> Sync for Placed<T> {}

/// A slice placed in a [`Backing`]: derefs like a `Box<[T]>` (a pointer and
/// a length, so indexing costs what it cost on the heap), without owning.
pub(crate) struct Region<T> {
    ptr: NonNull<T>,
    len: usize,
}

impl<T> std::ops::Deref for Region<T> {
    type Target = [T];
    #[inline(always)]
    fn deref(&self) -> &[T] {
        // SAFETY: `len` values placed by `Backing::place_slice` in a region
        // its holder keeps alive for as long as it keeps this pointer; only
        // shared references are ever made.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Region<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Region({} items)", self.len)
    }
}

impl<T> Region<T> {
    /// Calls `touch` on one element in every page the slice spans (at
    /// least), so that page faults happen when this is called (phase 2)
    /// rather than on the hot path. `touch` must leave the element as it
    /// was (an atomic add of 0), as producers may be running.
    pub(crate) fn fault_in(&self, touch: impl Fn(&T)) {
        let step = (PAGE / std::mem::size_of::<T>().max(1)).max(1);
        for item in self.iter().step_by(step) {
            touch(item);
        }
    }

    /// Drops the values in place (from the holder's `Drop`).
    ///
    /// # Safety
    ///
    /// Called once, and the values are not used afterwards.
    pub(crate) unsafe fn drop_in_place(&mut self) {
        // SAFETY: by the caller's contract.
        unsafe {
            std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(
                self.ptr.as_ptr(),
                self.len,
            ))
        }
    }
}

// SAFETY: a `Region<T>` gives only `&[T]`, like `&[T]` itself.
unsafe impl<T: Sync> Send for Region<T> {}
// SAFETY: as for `Send`.
unsafe impl<T: Sync> Sync for Region<T> {}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn heap_region_places_values_and_slices() {
        let mut b = Backing::heap(100).unwrap();
        assert_eq!(b.len(), PAGE);
        b.write_bytes(0, b"abc");
        let one = b.place(64, AtomicU64::new(7));
        let many = b.place_slice(128, 4, |i| AtomicU64::new(i as u64));
        one.fetch_add(1, Ordering::Relaxed);
        many[3].store(9, Ordering::Relaxed);
        let touched = std::cell::Cell::new(0);
        many.fault_in(|a| {
            a.fetch_add(0, Ordering::Relaxed);
            touched.set(touched.get() + 1);
        });
        assert_eq!(touched.get(), 1); // 4 words: one page
        assert_eq!(one.load(Ordering::Relaxed), 8);
        assert_eq!(
            many.iter()
                .map(|a| a.load(Ordering::Relaxed))
                .collect::<Vec<_>>(),
            [0, 1, 2, 9]
        );
        assert!(b.path().is_none());
    }

    #[test]
    #[should_panic(expected = "placement out of the region")]
    fn placement_past_the_end_panics() {
        let mut b = Backing::heap(PAGE).unwrap();
        b.place_slice(PAGE - 8, 2, |_| 0u64);
    }

    #[cfg(not(miri))]
    #[test]
    fn a_file_region_never_opens_an_existing_file() {
        // Another live queue's ring file at the same path must not be
        // truncated and shared: creating the region is refused instead.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.ring");
        let first = Backing::file(&path, 10).unwrap();
        let Err(e) = Backing::file(&path, 10) else {
            panic!("a second region at the same path");
        };
        assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), first.len as u64);
    }

    #[cfg(not(miri))]
    #[test]
    fn file_region_keeps_stores_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.ring");
        {
            let mut b = Backing::file(&path, 10).unwrap();
            let w = b.place(8, AtomicU64::new(0));
            w.store(0x1122_3344_5566_7788, Ordering::Relaxed);
            assert_eq!(b.path(), Some(path.as_path()));
        }
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len(), PAGE);
        assert_eq!(
            u64::from_ne_bytes(bytes[8..16].try_into().unwrap()),
            0x1122_3344_5566_7788
        );
    }
}
