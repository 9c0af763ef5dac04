//! Rotation of the online queue's file into chunks (FORMAT.md 1.10): the
//! bounds, the chunk names (`<stem>.<n>.<ext>`, `n` from 000001), and the
//! first number free at a path.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// When the drain closes a chunk and which closed chunks it keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Rotation {
    /// A chunk is at most this many bytes (see `Drainer::room`).
    pub(crate) max_bytes: Option<u64>,
    /// A chunk holding records is closed once it is this old.
    pub(crate) max_age: Option<Duration>,
    /// At most this many chunks exist, the open one counted.
    pub(crate) keep_chunks: Option<usize>,
    /// The closed chunks kept total at most this many bytes.
    pub(crate) keep_bytes: Option<u64>,
}

impl Rotation {
    /// Whether the file is cut into chunks at all.
    pub(crate) fn on(&self) -> bool {
        self.max_bytes.is_some() || self.max_age.is_some()
    }

    /// Why these bounds cannot work, if they cannot.
    pub(crate) fn problem(&self) -> Option<&'static str> {
        if self.max_bytes == Some(0) {
            return Some("the chunk size given to OnlineParams::with_rotation is 0: give a size such as 64 MiB");
        }
        if self.max_age.is_some_and(|a| a.is_zero()) {
            return Some(
                "the chunk age given to OnlineParams::with_rotation is zero: give one such as 60 s, or None",
            );
        }
        if self.keep_chunks == Some(0) {
            return Some(
                "OnlineParams::with_retention keeps 0 chunks: the open chunk is always kept, give at least 1",
            );
        }
        if (self.keep_chunks.is_some() || self.keep_bytes.is_some()) && !self.on() {
            return Some("OnlineParams::with_retention without OnlineParams::with_rotation: there are no chunks to delete; give a chunk size or age too");
        }
        None
    }
}

/// The path of chunk `n` of the file `base`: `dir/stem.000042.ext` (six
/// digits at least, so that a shell's sorted glob is in chunk order up to
/// 999999), or `dir/stem.000042` when `base` has no extension.
pub(crate) fn chunk_path(base: &Path, n: u64) -> PathBuf {
    let stem = base.file_stem().unwrap_or_default().to_string_lossy();
    let name = match base.extension() {
        Some(ext) => format!("{stem}.{n:06}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{n:06}"),
    };
    base.with_file_name(name)
}

/// The chunk number of `name` as a chunk of `base`, if it is one.
fn chunk_number(base: &Path, name: &str) -> Option<u64> {
    let stem = base.file_stem()?.to_str()?;
    let rest = name.strip_prefix(stem)?.strip_prefix('.')?;
    let digits = match base.extension() {
        Some(ext) => rest.strip_suffix(ext.to_str()?)?.strip_suffix('.')?,
        None => rest,
    };
    if digits.len() < 6 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The first chunk number of a new run at `base`: one past the highest
/// chunk found there (a previous run's chunks are never overwritten), or 1.
pub(crate) fn first_free(base: &Path) -> u64 {
    let dir = match base.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(d) => d.to_path_buf(),
        None => PathBuf::from("."),
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 1;
    };
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| chunk_number(base, e.file_name().to_str()?))
        .max()
        .map_or(1, |n| n.saturating_add(1))
}

/// A closed chunk still on disk.
pub(super) struct ClosedChunk {
    pub(super) path: PathBuf,
    pub(super) bytes: u64,
    pub(super) events: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_names_round_trip_and_skip_other_files() {
        let base = Path::new("/t/run.a.qtr");
        assert_eq!(chunk_path(base, 7), Path::new("/t/run.a.000007.qtr"));
        assert_eq!(chunk_path(base, 1234567), Path::new("/t/run.a.1234567.qtr"));
        assert_eq!(chunk_number(base, "run.a.000007.qtr"), Some(7));
        assert_eq!(chunk_number(base, "run.a.1234567.qtr"), Some(1234567));
        assert_eq!(chunk_number(base, "run.a.qtr"), None);
        assert_eq!(chunk_number(base, "run.a.0007.qtr"), None);
        assert_eq!(chunk_number(base, "run.a.000007.qtr.tmp"), None);
        assert_eq!(chunk_number(base, "run.b.000007.qtr"), None);
        let bare = Path::new("t/trace");
        assert_eq!(chunk_path(bare, 3), Path::new("t/trace.000003"));
        assert_eq!(chunk_number(bare, "trace.000003"), Some(3));
    }
}
