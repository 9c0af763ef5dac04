//! Outputs written beside their final path and renamed there once whole, so
//! a conversion that fails or is killed never leaves a partial file (or CTF
//! directory) at the path the user named.
//!
//! Each output `DIR/NAME` is written as `DIR/.NAME.partial-PID` (PID: this
//! process). [`Staged::commit`] syncs and renames every one over its final
//! path; an error return drops the [`Staged`], which removes them. A
//! conversion killed outright leaves only `.NAME.partial-PID` behind, a
//! name no reader mistakes for the output; the next run to the same `NAME`
//! removes those whose process is gone (Linux: no `/proc/PID`) and says so.

use std::fs::File;
use std::path::{Path, PathBuf};

/// The outputs of one command, each written beside its final path.
#[derive(Debug, Default)]
pub struct Staged {
    /// (where it is written, where it goes).
    moves: Vec<(PathBuf, PathBuf)>,
}

/// `DIR/.NAME.partial-PID` for `DIR/NAME`.
pub fn partial_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".to_string());
    path.with_file_name(format!(".{name}.partial-{}", std::process::id()))
}

/// The `.NAME.partial-PID` beside `path` left by processes that are gone.
/// Only where a process can be looked up (Linux's `/proc`): elsewhere none,
/// never one of a conversion still running.
fn stale_partials(path: &Path) -> Vec<PathBuf> {
    if !cfg!(target_os = "linux") || !Path::new("/proc/self").exists() {
        return Vec::new();
    }
    let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return Vec::new();
    };
    let prefix = format!(".{name}.partial-");
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let file = e.file_name().to_string_lossy().into_owned();
            let pid: u32 = file.strip_prefix(&prefix)?.parse().ok()?;
            let gone = pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists();
            gone.then(|| e.path())
        })
        .collect()
}

impl Staged {
    /// Nothing staged yet.
    pub fn new() -> Self {
        Staged::default()
    }

    /// Where to write the output that goes to `path` (registered: removed
    /// unless committed).
    /// A device or a pipe (`--out /dev/null`, a FIFO) is written in place:
    /// a file renamed over it would replace the device node (as root,
    /// `/dev/null` itself) — there is no partial file to hide there anyway.
    pub fn beside(&mut self, path: &Path) -> PathBuf {
        if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
            return path.to_path_buf();
        }
        let tmp = partial_path(path);
        remove(&tmp);
        for stale in stale_partials(path) {
            remove(&stale);
            eprintln!(
                "qtrace: removed {}: the partial output of an earlier run that is gone (killed?)",
                stale.display()
            );
        }
        self.moves.push((tmp.clone(), path.to_path_buf()));
        tmp
    }

    /// Creates the file beside `path` ([`Staged::beside`]).
    ///
    /// # Errors
    /// [`qtrace::Error::Io`] naming the file.
    pub fn create(&mut self, path: &Path) -> Result<File, qtrace::Error> {
        let tmp = self.beside(path);
        File::create(&tmp).map_err(|e| qtrace::Error::io("create", &tmp, e))
    }

    /// Syncs every output and renames it over its final path.
    ///
    /// # Errors
    /// [`qtrace::Error::Io`] naming the path that could not be synced or
    /// renamed (the outputs not yet renamed are removed).
    pub fn commit(mut self) -> Result<(), qtrace::Error> {
        for (tmp, _) in &self.moves {
            sync(tmp).map_err(|e| qtrace::Error::io("sync", tmp, e))?;
        }
        while !self.moves.is_empty() {
            let (tmp, path) = self.moves.remove(0);
            if let Err(e) = std::fs::rename(&tmp, &path) {
                remove(&tmp);
                return Err(qtrace::Error::io("rename the finished output to", &path, e));
            }
        }
        Ok(())
    }
}

impl Drop for Staged {
    /// Removes what was not committed.
    fn drop(&mut self) {
        for (tmp, _) in &self.moves {
            remove(tmp);
        }
    }
}

/// Removes a file or a directory tree, if there.
fn remove(path: &Path) {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => {
            let _ = std::fs::remove_dir_all(path);
        }
        Ok(_) => {
            let _ = std::fs::remove_file(path);
        }
        Err(_) => {}
    }
}

/// Syncs a file, or every file of a directory and the directory.
fn sync(path: &Path) -> std::io::Result<()> {
    if path.is_dir() {
        for entry in std::fs::read_dir(path)? {
            sync(&entry?.path())?;
        }
    }
    File::open(path)?.sync_all()
}
