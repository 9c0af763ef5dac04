//! Disk space reserved ahead of a trace file being written, so that a disk
//! that fills up still takes the file's final hoops record and close run.
//!
//! On Linux the room is allocated with `fallocate(FALLOC_FL_KEEP_SIZE)`:
//! blocks past the end of the file, not counted in its length (a reader sees
//! nothing of them), which later writes at the end of the file use without
//! asking the file system for more. A writer keeps at least [`RESERVE_LEN`]
//! bytes allocated past what it has written: before a write that would reach
//! into them it extends the allocation to cover the write, the reserve and a
//! chunk ahead (the online queue: 1 MiB, so one call per MiB written); when
//! the disk is full that extension fails and the write is not made, so the
//! reserve is never eaten by events. At close the room left past the end is
//! given back ([`release`]: a truncation to the file's own length). Where `fallocate` is unsupported (another OS, a file system
//! without it), nothing is reserved and writes go ahead as they would.

use std::fs::File;
use std::io;

/// Bytes kept allocated past the end of the written data: one page, room
/// for the final hoops record and the close run (4 records, 128 bytes) with
/// a margin for file systems that allocate in 4 KiB blocks.
pub(crate) const RESERVE_LEN: u64 = 4096;

/// What [`reserve`] achieved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reserved {
    /// `offset .. offset + len` is allocated.
    Yes,
    /// The file system or OS cannot reserve: nothing was done.
    Unsupported,
}

/// Allocates `offset .. offset + len` of `file` without changing its
/// length. An error (`ENOSPC` when the disk is full) means the room is not
/// there.
#[cfg(target_os = "linux")]
pub(crate) fn reserve(file: &File, offset: u64, len: u64) -> io::Result<Reserved> {
    use std::os::fd::AsRawFd;
    if !file.metadata()?.is_file() {
        // A device or a pipe: no blocks to reserve.
        return Ok(Reserved::Unsupported);
    }
    let (Ok(off), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    };
    loop {
        // SAFETY: `fallocate` takes a file descriptor and integers; the
        // descriptor is open for as long as `file` is borrowed, and no memory
        // is passed.
        let r = unsafe { libc::fallocate(file.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, off, len) };
        if r == 0 {
            return Ok(Reserved::Yes);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS) => return Ok(Reserved::Unsupported),
            _ => return Err(e),
        }
    }
}

/// Frees the blocks [`reserve`] allocated past `len`, the end of the written
/// data: truncating a file to its own length gives back the blocks allocated
/// beyond it (ext4, tmpfs, xfs). Best effort: a failure leaves the room
/// allocated until the file is deleted.
pub(crate) fn release(file: &File, len: u64) {
    let _ = file.set_len(len);
}

/// Allocates nothing: reservation is implemented on Linux only.
#[cfg(not(target_os = "linux"))]
pub(crate) fn reserve(_file: &File, _offset: u64, _len: u64) -> io::Result<Reserved> {
    Ok(Reserved::Unsupported)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn reserving_allocates_blocks_without_changing_the_length() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.qtr");
        let file = File::create(&path).unwrap();
        match reserve(&file, 0, 1 << 20).unwrap() {
            Reserved::Yes => {
                let m = std::fs::metadata(&path).unwrap();
                assert_eq!(m.len(), 0);
                assert!(m.blocks() * 512 >= 1 << 20, "{} blocks", m.blocks());
            }
            Reserved::Unsupported => eprintln!("fallocate unsupported here: nothing to check"),
        }
        release(&file, 0);
        let m = std::fs::metadata(&path).unwrap();
        assert_eq!((m.len(), m.blocks()), (0, 0), "released");
    }
}
