//! `qtrace sql`: finds the `qtrace-sql` executable (the engine, built with
//! the feature `sql`) and DuckDB's library, then runs `qtrace-sql` with the
//! same arguments (on Unix it replaces this process, so its exit status and
//! signals are the command's). `qtrace` itself never links DuckDB: every
//! other subcommand starts and runs the same with or without SQL.
//!
//! Where they are looked for, in order:
//!
//! - `qtrace-sql`: beside this executable, then each folder of `PATH`;
//! - DuckDB's library (`libduckdb.so`; `libduckdb.dylib` on macOS): (1)
//!   `QTRACE_DUCKDB_LIB`, the library file or the folder holding it; (2)
//!   beside this executable, then in `../lib` from it; (3) each folder of
//!   `LD_LIBRARY_PATH` (`DYLD_LIBRARY_PATH` on macOS), then the loader's
//!   default folders ([`DEFAULT_DIRS`]).
//!
//! The folder found is put first on `qtrace-sql`'s library path. When
//! either is missing: a message saying what was looked for, where, and how
//! to get it, and exit status 4 ([`Exit::Unavailable`]).

pub mod args;

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;

pub use args::SqlArgs;

use crate::spine::Exit;

/// The engine's executable name.
const ENGINE: &str = if cfg!(windows) {
    "qtrace-sql.exe"
} else {
    "qtrace-sql"
};

/// DuckDB's library file name.
const LIB: &str = if cfg!(target_os = "macos") {
    "libduckdb.dylib"
} else {
    "libduckdb.so"
};

/// The loader's search-path variable.
const LIB_PATH: &str = if cfg!(target_os = "macos") {
    "DYLD_LIBRARY_PATH"
} else {
    "LD_LIBRARY_PATH"
};

/// The variable naming DuckDB's library (file or folder).
const LIB_VAR: &str = "QTRACE_DUCKDB_LIB";

/// The loader's default folders, searched after `LD_LIBRARY_PATH`.
#[cfg(target_os = "macos")]
const DEFAULT_DIRS: &[&str] = &["/usr/local/lib", "/opt/homebrew/lib", "/usr/lib"];
/// The loader's default folders, searched after `LD_LIBRARY_PATH`: those
/// of glibc on Debian, Ubuntu, Fedora and Arch (multiarch, lib64, lib).
#[cfg(not(target_os = "macos"))]
const DEFAULT_DIRS: &[&str] = &[
    "/usr/local/lib",
    #[cfg(target_arch = "x86_64")]
    "/lib/x86_64-linux-gnu",
    #[cfg(target_arch = "x86_64")]
    "/usr/lib/x86_64-linux-gnu",
    #[cfg(target_arch = "aarch64")]
    "/lib/aarch64-linux-gnu",
    #[cfg(target_arch = "aarch64")]
    "/usr/lib/aarch64-linux-gnu",
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
];

/// How to get both parts, printed when one is missing.
const HOW: &str = "\
qtrace sql: to get it: `cargo install qtrace-cli --features sql` (installs qtrace and
qtrace-sql side by side; DUCKDB_LIB_DIR must name DuckDB's library folder at build time);
from a checkout, `eval \"$(scripts/duckdb-lib.sh)\"` fetches the library into
target/duckdb/1.5.6/ and prints DUCKDB_LIB_DIR; or take the library from DuckDB 1.5.6's
release for your platform (libduckdb-linux-amd64.zip on Linux x86_64, at
https://github.com/duckdb/duckdb/releases) and put it beside qtrace, in ../lib from it,
or name it with QTRACE_DUCKDB_LIB=FILE-OR-FOLDER.";

/// Runs `qtrace sql`: `args` were checked by clap; `raw` are the command
/// line's arguments after `sql`, passed to `qtrace-sql` as they are.
pub fn run(_args: SqlArgs, raw: Vec<OsString>) -> Exit {
    let here = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf));
    let engine = match find_engine(here.as_deref()) {
        Ok(p) => p,
        Err(looked) => {
            eprintln!(
                "qtrace sql: this qtrace has no SQL engine: {ENGINE} is not beside it nor on PATH \
                 (looked in: {looked})"
            );
            eprintln!("{HOW}");
            return Exit::Unavailable;
        }
    };
    let lib_dir = match find_lib(here.as_deref()) {
        Ok(d) => d,
        Err(looked) => {
            eprintln!("qtrace sql: DuckDB's library ({LIB}) is not found (looked in: {looked})");
            eprintln!("{HOW}");
            return Exit::Unavailable;
        }
    };
    let mut path = std::env::split_paths(&std::env::var_os(LIB_PATH).unwrap_or_default())
        .filter(|p| !p.as_os_str().is_empty())
        .collect::<Vec<_>>();
    path.insert(0, lib_dir);
    let mut command = Command::new(&engine);
    command.args(raw);
    if let Ok(joined) = std::env::join_paths(path) {
        command.env(LIB_PATH, joined);
    }
    spawn(command, &engine)
}

/// Replaces this process with `command` (Unix): its status and signals are
/// the command's.
#[cfg(unix)]
fn spawn(mut command: Command, engine: &Path) -> Exit {
    use std::os::unix::process::CommandExt;
    let e = command.exec();
    eprintln!("qtrace sql: cannot run {}: {e}", engine.display());
    Exit::Unavailable
}

/// Runs `command` and returns with its status.
#[cfg(not(unix))]
fn spawn(mut command: Command, engine: &Path) -> Exit {
    match command.status() {
        Ok(s) => std::process::exit(s.code().unwrap_or(1)),
        Err(e) => {
            eprintln!("qtrace sql: cannot run {}: {e}", engine.display());
            Exit::Unavailable
        }
    }
}

/// `qtrace-sql` beside `here`, then on `PATH`; or the folders looked in.
fn find_engine(here: Option<&Path>) -> Result<PathBuf, String> {
    let mut looked = Vec::new();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = here
        .map(Path::to_path_buf)
        .into_iter()
        .chain(std::env::split_paths(&path).filter(|p| !p.as_os_str().is_empty()));
    for dir in dirs {
        let candidate = dir.join(ENGINE);
        if candidate.is_file() {
            return Ok(candidate);
        }
        looked.push(dir.display().to_string());
    }
    Err(if looked.is_empty() {
        "nowhere: no executable folder and an empty PATH".to_owned()
    } else {
        looked.join(", ")
    })
}

/// The folder holding DuckDB's library, in the documented order; or where
/// it was looked for.
fn find_lib(here: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(named) = std::env::var_os(LIB_VAR).filter(|v| !v.is_empty()) {
        return named_lib(&named);
    }
    // The places in order, each with the words that name it in the message.
    let mut groups: Vec<(String, Vec<PathBuf>)> = Vec::new();
    if let Some(here) = here {
        groups.push((
            "beside qtrace".to_owned(),
            vec![here.to_path_buf(), here.join("..").join("lib")],
        ));
    }
    let env_dirs = std::env::var_os(LIB_PATH).unwrap_or_default();
    let env_dirs: Vec<PathBuf> = std::env::split_paths(&env_dirs)
        .filter(|p| !p.as_os_str().is_empty())
        .collect();
    groups.push((LIB_PATH.to_owned(), env_dirs));
    groups.push((
        "the loader's default folders".to_owned(),
        DEFAULT_DIRS.iter().map(PathBuf::from).collect(),
    ));
    for (_, dirs) in &groups {
        if let Some(dir) = dirs.iter().find(|d| d.join(LIB).is_file()) {
            return Ok(dir.clone());
        }
    }
    let looked: Vec<String> = groups
        .iter()
        .map(|(what, dirs)| {
            if dirs.is_empty() {
                format!("{what} (not set)")
            } else {
                let dirs: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
                format!("{what}: {}", dirs.join(", "))
            }
        })
        .collect();
    Err(format!("{LIB_VAR} (not set); {}", looked.join("; ")))
}

/// The folder `QTRACE_DUCKDB_LIB` names: the folder itself, or the library
/// file's folder (the file must be named as the loader looks for it).
fn named_lib(named: &OsStr) -> Result<PathBuf, String> {
    let path = PathBuf::from(named);
    if path.is_dir() {
        if path.join(LIB).is_file() {
            return Ok(path.canonicalize().unwrap_or(path));
        }
        return Err(format!(
            "{LIB_VAR}={}, a folder without {LIB}",
            path.display()
        ));
    }
    if path.is_file() {
        if path.file_name() == Some(OsStr::new(LIB)) {
            if let Some(dir) = path.parent() {
                let dir = if dir.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    dir
                };
                return Ok(dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()));
            }
        }
        return Err(format!(
            "{LIB_VAR}={}: the file must be named {LIB} (the name the loader looks for)",
            path.display()
        ));
    }
    Err(format!(
        "{LIB_VAR}={}, which does not exist",
        path.display()
    ))
}
