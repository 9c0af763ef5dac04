//! Scratch directories for tests (each uses this file as `common::…`):
//! `qtrace-<prefix>-<name>-<pid>` under the system's temporary directory, so
//! the library's and the command's tests, and two test runs, never share one.

use std::path::PathBuf;

/// The path `qtrace-<prefix>-<name>-<pid>` in the temporary directory, with
/// whatever an earlier run left there removed; not created (a tracer's
/// output directory is created by the tracer).
pub fn fresh_dir(prefix: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("qtrace-{prefix}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// [`fresh_dir`], created.
pub fn created_dir(prefix: &str, name: &str) -> PathBuf {
    let d = fresh_dir(prefix, name);
    std::fs::create_dir_all(&d).unwrap();
    d
}
