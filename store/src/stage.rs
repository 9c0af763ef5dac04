//! A conversion's stage folder (FORMAT.md 7.1, "Converted files"): every
//! table is written into `.<name>.converting-<pid>` beside the output
//! folder `<name>`, which is renamed into place once every part is whole,
//! so the tables appear together or not at all. The converting process
//! holds an exclusive `flock` on the stage folder from its creation until
//! it ends: a later conversion into the same output removes every stage
//! folder it can lock (its process is gone, however it ended — a lock dies
//! with its holder, unlike a process id, which is reused) and leaves those
//! it cannot (a conversion still running).

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::error::StoreError;
use crate::part::sync_dir;

/// The stage folder of a conversion in progress, locked.
pub(crate) struct Stage {
    /// The stage folder.
    path: PathBuf,
    /// The output folder it becomes.
    out: PathBuf,
    /// The open stage folder, locked while this lives (and, after the
    /// rename, the output folder: released when the conversion returns).
    _lock: Option<File>,
}

/// The stage folders' prefix for an output folder named `name`.
fn prefix(name: &str) -> String {
    format!(".{name}.converting-")
}

impl Stage {
    /// Checks that `out` is absent or an empty folder, removes the stage
    /// folders of killed conversions into it (returned), and creates and
    /// locks this conversion's own.
    ///
    /// # Errors
    /// [`StoreError::Target`] when `out` holds anything (re-running a
    /// conversion into its own output would duplicate every row) or has no
    /// name; [`StoreError::Io`] when a folder cannot be read, created or
    /// removed.
    pub(crate) fn begin(out: &Path) -> Result<(Stage, Vec<PathBuf>), StoreError> {
        let name = out
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| {
                StoreError::Target(format!(
                    "{}: name the output folder itself (such as tables), not a path ending in .. or /",
                    out.display()
                ))
            })?;
        match std::fs::read_dir(out) {
            Ok(mut entries) => {
                if entries.next().is_some() {
                    return Err(StoreError::Target(format!(
                        "{} is not empty: a conversion writes its tables into a new or empty folder, so that running it again never doubles its rows; remove the folder (rm -r {}) or give another --out",
                        out.display(),
                        out.display()
                    )));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
                return Err(StoreError::Target(format!(
                    "{} is a file, not a folder: give a new folder to --out",
                    out.display()
                )))
            }
            Err(e) => return Err(StoreError::io("read the folder", out, e)),
        }
        let parent = match out.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&parent)
            .map_err(|e| StoreError::io("create the folder", &parent, e))?;
        let cleaned = clean(&parent, &name)?;
        let path = parent.join(format!("{}{}", prefix(&name), std::process::id()));
        // A folder of this name left by a killed process of the same id
        // was removed above (it could be locked).
        std::fs::create_dir(&path).map_err(|e| StoreError::io("create the folder", &path, e))?;
        let lock = lock(&path);
        if let Some(Err(e)) = &lock {
            if e.kind() != std::io::ErrorKind::Unsupported {
                let _ = std::fs::remove_dir_all(&path);
                return Err(StoreError::Target(format!(
                    "{}: another conversion holds this stage folder ({e})",
                    path.display()
                )));
            }
        }
        let stage = Stage {
            path,
            out: out.to_path_buf(),
            _lock: lock.and_then(Result::ok),
        };
        Ok((stage, cleaned))
    }

    /// The stage folder.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Renames the stage folder (its parts fsynced and renamed into it, its
    /// table folders synced here) to the output folder and syncs their
    /// parent; `out` must still be absent or empty. The lock is released
    /// when `self` drops.
    ///
    /// # Errors
    /// [`StoreError::Io`] when a sync or the rename fails (the stage folder
    /// stays: the next conversion removes it).
    pub(crate) fn commit(&self) -> Result<(), StoreError> {
        for table in crate::schema::Table::ALL {
            let dir = self.path.join(table.name());
            if dir.is_dir() {
                sync_dir(&dir)?;
            }
        }
        sync_dir(&self.path)?;
        std::fs::rename(&self.path, &self.out)
            .map_err(|e| StoreError::io("rename the converted tables to", &self.out, e))?;
        sync_dir(
            self.out
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new(".")),
        )
    }

    /// Removes the stage folder (a conversion that failed).
    pub(crate) fn abandon(&self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Opens and locks `dir` (None where folders cannot be opened as files).
fn lock(dir: &Path) -> Option<std::io::Result<File>> {
    let f = File::open(dir).ok()?;
    Some(match f.try_lock() {
        Ok(()) => Ok(f),
        Err(std::fs::TryLockError::WouldBlock) => {
            Err(std::io::Error::from(std::io::ErrorKind::WouldBlock))
        }
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    })
}

/// Removes the stage folders for `name` in `parent` whose conversion has
/// ended (their lock can be taken); returns them.
fn clean(parent: &Path, name: &str) -> Result<Vec<PathBuf>, StoreError> {
    let prefix = prefix(name);
    let entries =
        std::fs::read_dir(parent).map_err(|e| StoreError::io("read the folder", parent, e))?;
    let mut cleaned = Vec::new();
    for entry in entries.flatten() {
        let file = entry.file_name();
        let Some(rest) = file.to_str().and_then(|f| f.strip_prefix(&prefix)) else {
            continue;
        };
        if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        match lock(&path) {
            // Held: a conversion is writing it.
            Some(Err(e)) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Some(Err(e)) if e.kind() != std::io::ErrorKind::Unsupported => {
                return Err(StoreError::io("lock the folder", &path, e))
            }
            _ => {}
        }
        std::fs::remove_dir_all(&path)
            .map_err(|e| StoreError::io("remove the folder", &path, e))?;
        cleaned.push(path);
    }
    cleaned.sort();
    Ok(cleaned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_locked_stage_stays_and_an_unlocked_one_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("tables");
        let dead = dir.path().join(".tables.converting-1");
        std::fs::create_dir_all(dead.join("events")).unwrap();
        std::fs::write(dead.join("events/part-0.parquet"), b"x").unwrap();
        let (stage, cleaned) = Stage::begin(&out).unwrap();
        assert_eq!(cleaned, vec![dead.clone()]);
        assert!(!dead.exists());
        // While this conversion runs, its stage is locked: a second one
        // into the same output leaves it.
        let held = stage.path().to_path_buf();
        assert!(clean(dir.path(), "tables").unwrap().is_empty());
        assert!(held.is_dir());
        // Once its process is gone (here: its lock dropped), it is removed.
        drop(stage);
        assert_eq!(clean(dir.path(), "tables").unwrap(), vec![held.clone()]);
        assert!(!held.exists());
    }

    #[test]
    fn a_non_empty_output_is_refused_and_an_empty_one_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("tables");
        std::fs::create_dir(&out).unwrap();
        let (stage, cleaned) = Stage::begin(&out).unwrap();
        assert!(cleaned.is_empty());
        std::fs::create_dir(stage.path().join("events")).unwrap();
        stage.commit().unwrap();
        assert!(out.join("events").is_dir());
        assert!(!stage.path().exists());
        drop(stage);
        match Stage::begin(&out) {
            Err(StoreError::Target(why)) => {
                assert!(
                    why.contains("is not empty") && why.contains("rm -r"),
                    "{why}"
                )
            }
            other => panic!("{:?}", other.map(|(s, _)| s.path().to_path_buf())),
        }
    }
}
