//! The conversion cache: `.qtr` inputs converted once to the Parquet
//! tables and kept, so the next query over the same files starts at once.
//!
//! An entry is a folder named by a hash of the inputs' identity — for each
//! file in the order given: its absolute path, device, inode, size and
//! modification time, and the version of the converter. A file that is
//! written again (a new size or time) is a new entry; the old one ages out.
//! The entry holds the store's tables, the notes of its conversion (damaged
//! or cut inputs, said again on every use) and `inputs.txt`, the identity
//! itself: a hit needs it equal, so a hash collision is a miss, never a
//! wrong answer.
//!
//! An entry is converted into `.building-<key>-<pid>` and renamed into place
//! when complete: a killed conversion never leaves a half entry (its folder
//! is removed by the next use of the cache a day later, when no conversion
//! can still be writing it). After each new entry the oldest entries (by
//! last use) are removed until the whole cache is within its limit; an
//! entry larger than the limit is not kept.

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::engine::InputsEnd;

/// Where converted `.qtr` inputs are kept, and how much of the disk they
/// may take (the whole folder, in bytes).
///
/// ```
/// use qtrace_sql::Cache;
/// let c = Cache::new("/tmp/qtrace-sql-cache");
/// assert_eq!(c.max_bytes, Cache::DEFAULT_MAX_BYTES);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cache {
    /// The cache's folder (created when first used).
    pub dir: PathBuf,
    /// The most bytes the folder keeps; older entries are removed past it.
    pub max_bytes: u64,
}

impl Cache {
    /// The default limit: 4 GiB (at 4–7 bytes an event in Parquet, some
    /// 600 M events of traces).
    pub const DEFAULT_MAX_BYTES: u64 = 4 << 30;

    /// A cache in `dir` with the default limit.
    pub fn new(dir: impl Into<PathBuf>) -> Cache {
        Cache {
            dir: dir.into(),
            max_bytes: Cache::DEFAULT_MAX_BYTES,
        }
    }

    /// The user's cache folder: `$XDG_CACHE_HOME/qtrace/sql`, else
    /// `$HOME/.cache/qtrace/sql`; `None` when neither variable is set (then
    /// `qtrace sql` converts into a scratch folder removed on exit).
    pub fn user_dir() -> Option<PathBuf> {
        let base = match std::env::var_os("XDG_CACHE_HOME") {
            Some(x) if Path::new(&x).is_absolute() => PathBuf::from(x),
            _ => PathBuf::from(std::env::var_os("HOME").filter(|h| !h.is_empty())?).join(".cache"),
        };
        Some(base.join("qtrace").join("sql"))
    }
}

/// One entry's identity: the text written to `inputs.txt`, and its folder
/// name.
pub(crate) struct Key {
    pub(crate) identity: String,
    pub(crate) name: String,
}

/// The identity of `traces` (in order), or the I/O error of a file that
/// cannot be examined.
pub(crate) fn key(traces: &[PathBuf]) -> io::Result<Key> {
    let mut identity = format!(
        "qtrace-sql conversion cache 1; qtrace-store {}\n",
        env!("CARGO_PKG_VERSION")
    );
    for p in traces {
        let abs = fs::canonicalize(p)?;
        let m = fs::metadata(&abs)?;
        let mtime = m
            .modified()?
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        let (dev, ino) = dev_ino(&m);
        let _ = writeln!(
            identity,
            "{}\t{dev}\t{ino}\t{}\t{}.{:09}",
            abs.display(),
            m.len(),
            mtime.as_secs(),
            mtime.subsec_nanos()
        );
    }
    // Two FNV-1a hashes with different offsets: 128 bits of name. A
    // collision is caught by comparing `identity` anyway.
    let name = format!(
        "{:016x}{:016x}",
        fnv1a(0xcbf2_9ce4_8422_2325, identity.as_bytes()),
        fnv1a(0x6c62_272e_07bb_0142, identity.as_bytes())
    );
    Ok(Key { identity, name })
}

#[cfg(unix)]
fn dev_ino(m: &fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (m.dev(), m.ino())
}

#[cfg(not(unix))]
fn dev_ino(_: &fs::Metadata) -> (u64, u64) {
    (0, 0)
}

fn fnv1a(offset: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(offset, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

const IDENTITY: &str = "inputs.txt";
const NOTES: &str = "notes.txt";
/// How the inputs ended ([`InputsEnd::word`]): an entry without it (made by
/// an older qtrace) is a miss, converted again.
const END: &str = "end.txt";

/// A complete entry for `key`: its folder and its notes, marked as used
/// now; `None` on a miss.
pub(crate) fn lookup(cache: &Cache, key: &Key) -> Option<(PathBuf, Vec<String>, InputsEnd)> {
    let dir = cache.dir.join(&key.name);
    let identity = fs::read_to_string(dir.join(IDENTITY)).ok()?;
    if identity != key.identity {
        return None;
    }
    let end = InputsEnd::from_word(fs::read_to_string(dir.join(END)).ok()?.trim())?;
    let notes = fs::read_to_string(dir.join(NOTES)).unwrap_or_default();
    // Last use, for the eviction order: the identity file's time.
    if let Ok(f) = fs::File::options().append(true).open(dir.join(IDENTITY)) {
        let _ = f.set_modified(SystemTime::now());
    }
    Some((dir, notes.lines().map(str::to_owned).collect(), end))
}

/// A folder to convert `key`'s entry into (removed first if a run of this
/// process left it).
pub(crate) fn building(cache: &Cache, key: &Key) -> io::Result<PathBuf> {
    fs::create_dir_all(&cache.dir)?;
    let dir = cache
        .dir
        .join(format!(".building-{}-{}", key.name, std::process::id()));
    if dir.exists() {
        fs::remove_dir_all(&dir)?;
    }
    Ok(dir)
}

/// Completes the entry converted in `building`: writes its notes and
/// identity, renames it into place, then trims the cache to its limit.
/// Returns the entry's folder, or `None` when the entry alone is over the
/// limit (it is left in `building` for this query; the caller removes it).
pub(crate) fn commit(
    cache: &Cache,
    key: &Key,
    building: &Path,
    notes: &[String],
    end: InputsEnd,
) -> io::Result<Option<PathBuf>> {
    let size = folder_size(building);
    if size > cache.max_bytes {
        return Ok(None);
    }
    let mut text = notes.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    fs::write(building.join(NOTES), text)?;
    fs::write(building.join(END), end.word())?;
    // The identity last: an entry without it is never a hit.
    fs::write(building.join(IDENTITY), &key.identity)?;
    let dir = cache.dir.join(&key.name);
    if dir.exists() {
        // Another process (or an entry with a colliding name) got there
        // first: this one replaces it.
        fs::remove_dir_all(&dir)?;
    }
    fs::rename(building, &dir)?;
    trim(cache, &dir)?;
    Ok(Some(dir))
}

/// Removes the least recently used entries until the cache is within its
/// limit (never `keep`), and building folders a day old.
fn trim(cache: &Cache, keep: &Path) -> io::Result<()> {
    let mut entries = Vec::new();
    let mut total = 0u64;
    let now = SystemTime::now();
    for e in fs::read_dir(&cache.dir)?.flatten() {
        let path = e.path();
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(".building-") {
            let age = e
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| now.duration_since(t).ok());
            if age.is_some_and(|a| a > Duration::from_secs(24 * 3600)) {
                let _ = fs::remove_dir_all(&path);
            }
            continue;
        }
        if name.starts_with('.') || !path.is_dir() {
            continue;
        }
        let used = fs::metadata(path.join(IDENTITY))
            .and_then(|m| m.modified())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let size = folder_size(&path);
        total += size;
        entries.push((used, size, path));
    }
    entries.sort();
    for (_, size, path) in entries {
        if total <= cache.max_bytes {
            break;
        }
        if path == keep {
            continue;
        }
        fs::remove_dir_all(&path)?;
        total -= size;
    }
    Ok(())
}

/// Bytes of the files under `dir`, at any depth.
fn folder_size(dir: &Path) -> u64 {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => folder_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache_with(max: u64) -> (tempfile::TempDir, Cache) {
        let t = tempfile::tempdir().unwrap();
        let c = Cache {
            dir: t.path().join("cache"),
            max_bytes: max,
        };
        (t, c)
    }

    fn entry(cache: &Cache, input: &Path, bytes: usize) -> Option<PathBuf> {
        let k = key(&[input.to_path_buf()]).unwrap();
        let b = building(cache, &k).unwrap();
        fs::create_dir_all(b.join("events")).unwrap();
        fs::write(b.join("events/part.parquet"), vec![0u8; bytes]).unwrap();
        let r = commit(cache, &k, &b, &["a note".into()], InputsEnd::Cut).unwrap();
        if r.is_none() {
            fs::remove_dir_all(&b).unwrap();
        }
        r
    }

    #[test]
    fn a_committed_entry_is_a_hit_with_its_notes_until_the_file_changes() {
        let (t, c) = cache_with(1 << 20);
        let input = t.path().join("a.qtr");
        fs::write(&input, b"one").unwrap();
        let k = key(std::slice::from_ref(&input)).unwrap();
        assert!(lookup(&c, &k).is_none());
        let dir = entry(&c, &input, 100).unwrap();
        let (hit, notes, end) = lookup(&c, &k).unwrap();
        assert_eq!(
            (hit, notes, end),
            (dir.clone(), vec!["a note".to_string()], InputsEnd::Cut)
        );
        // An entry that does not say how its inputs ended (an older
        // qtrace's) is a miss: converted again, never taken as whole.
        fs::remove_file(dir.join(END)).unwrap();
        assert!(lookup(&c, &k).is_none());
        fs::write(dir.join(END), "cut").unwrap();
        // Written again (another size): another key, a miss.
        fs::write(&input, b"longer").unwrap();
        let k2 = key(std::slice::from_ref(&input)).unwrap();
        assert_ne!(k.name, k2.name);
        assert!(lookup(&c, &k2).is_none());
        // The order of inputs is part of the identity.
        let other = t.path().join("b.qtr");
        fs::write(&other, b"two").unwrap();
        let ab = key(&[input.clone(), other.clone()]).unwrap();
        let ba = key(&[other, input]).unwrap();
        assert_ne!(ab.name, ba.name);
    }

    #[test]
    fn an_entry_whose_identity_differs_is_a_miss() {
        let (t, c) = cache_with(1 << 20);
        let input = t.path().join("a.qtr");
        fs::write(&input, b"one").unwrap();
        let dir = entry(&c, &input, 10).unwrap();
        fs::write(dir.join(IDENTITY), "something else").unwrap();
        assert!(lookup(&c, &key(&[input]).unwrap()).is_none());
    }

    #[test]
    fn the_least_recently_used_entries_go_first_and_an_oversized_one_is_not_kept() {
        let (t, c) = cache_with(2_500);
        let inputs: Vec<PathBuf> = (0..3)
            .map(|i| {
                let p = t.path().join(format!("{i}.qtr"));
                fs::write(&p, vec![b'x'; i + 1]).unwrap();
                p
            })
            .collect();
        let d0 = entry(&c, &inputs[0], 1_000).unwrap();
        let d1 = entry(&c, &inputs[1], 1_000).unwrap();
        // Entry 0 used after entry 1: entry 1 is the oldest by use.
        let old = SystemTime::now() - Duration::from_secs(60);
        fs::File::options()
            .append(true)
            .open(d1.join(IDENTITY))
            .unwrap()
            .set_modified(old)
            .unwrap();
        let d2 = entry(&c, &inputs[2], 1_000).unwrap();
        assert!(d0.exists() && d2.exists());
        assert!(!d1.exists(), "the least recently used entry is removed");
        // Larger than the whole limit: not kept, nothing else removed.
        let big = t.path().join("big.qtr");
        fs::write(&big, b"big").unwrap();
        assert!(entry(&c, &big, 3_000).is_none());
        assert!(d0.exists() && d2.exists());
        let names: Vec<_> = fs::read_dir(&c.dir).unwrap().flatten().collect();
        assert_eq!(names.len(), 2, "no building folder is left");
    }
}
