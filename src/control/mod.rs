//! Control a running tracer from outside (feature `control`, Linux): a
//! local, owner-only [`Endpoint`] that `qtrace ctl` talks to — status and
//! counters, a snapshot of a circular queue, start/stop of recording,
//! suspend/resume, classes and events on and off, rotation of an online
//! queue — without restarting the program.
//!
//! - **Where**: a Unix stream socket `<dir>/<pid>.<name>.sock`, where `<dir>`
//!   is `$XDG_RUNTIME_DIR/qtrace` when `XDG_RUNTIME_DIR` is set to an
//!   absolute path, else `/tmp/qtrace-<uid>` ([`Endpoint::dir`]). The
//!   directory is created with mode 0700 and refused if it is not a
//!   directory owned by this user with no group or other permission (a
//!   directory someone else made in `/tmp` is never used); the socket gets
//!   mode 0600.
//! - **Who**: every connection's peer credentials (`SO_PEERCRED`) are
//!   checked: only a process of the same user id is served; anyone else
//!   gets a `permission_denied` reply and the connection is closed
//!   ([`Endpoint::refused`] counts them). There is no network listener of
//!   any kind: remote use goes through ssh (`docs/control.md`).
//!   [`Endpoint::bind_with_group`] lets one group in as well: its
//!   directory and socket are that group's (0710, 0660), and a peer whose
//!   effective group id or one of whose supplementary groups is that group
//!   is served (`SO_PEERGROUPS`).
//! - **How**: one thread serves one connection at a time, frame by frame
//!   (FORMAT.md §9: length-prefixed [`Request`]s and [`Reply`]s); a
//!   connection idle for 5 s is closed. Every change goes through the
//!   tracer's existing calls and atomics (route words, gates, the online
//!   queue's task wake-up), so `log_event` costs what it cost.
//! - **Failing to bind** is a [`ConfigError::ControlEndpoint`] that says
//!   what is wrong, never a silent no-op.
//! - **From the setup**: [`Config::with_control`](crate::Config::with_control)
//!   has [`global::install`](crate::global::install) bind the endpoint of the
//!   process-wide tracer (and return that error when it cannot).
//!
//! ```
//! # let _dir = tempfile::tempdir().unwrap(); std::env::set_var("XDG_RUNTIME_DIR", _dir.path());
//! use std::io::{Read, Write};
//! use std::sync::Arc;
//! use qtrace::control::{Endpoint, Reply, Request};
//!
//! let tracer = Arc::new(qtrace::Tracer::new());
//! let endpoint = Endpoint::bind(Arc::clone(&tracer), "doc")?;
//! // What `qtrace ctl PID suspend` sends:
//! let mut s = std::os::unix::net::UnixStream::connect(endpoint.path())?;
//! s.write_all(&Request::Suspend.frame())?;
//! let mut reply = [0u8; 6];
//! s.read_exact(&mut reply)?;
//! assert_eq!(Reply::parse(&reply[4..]), Ok(Reply::Done));
//! assert!(tracer.is_suspended());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod protocol;
mod server;

pub use protocol::{ErrorCode, Reply, Request};

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::queue::config_error::ConfigError;
use crate::router::tracer::Tracer;

/// What the endpoint and its thread share.
#[derive(Debug, Default)]
struct Counters {
    stop: AtomicBool,
    connections: AtomicU64,
    refused: AtomicU64,
    requests: AtomicU64,
    errors: AtomicU64,
}

/// A control endpoint: a local socket, served by a thread of its own, through
/// which `qtrace ctl` (or any client of FORMAT.md §9) controls a tracer.
/// Dropping it stops the thread and removes the socket. See the
/// [module documentation](self).
#[derive(Debug)]
pub struct Endpoint {
    path: PathBuf,
    counters: Arc<Counters>,
    thread: Option<JoinHandle<()>>,
}

fn problem(path: &Path, problem: impl Into<String>, source: Option<std::io::Error>) -> ConfigError {
    ConfigError::ControlEndpoint {
        opened_by: "qtrace::control::Endpoint::bind",
        path: path.to_path_buf(),
        problem: problem.into(),
        source,
    }
}

/// This process's user id.
fn uid() -> u32 {
    rustix::process::getuid().as_raw()
}

impl Endpoint {
    /// The directory this user's endpoints live in: `$XDG_RUNTIME_DIR/qtrace`
    /// when `XDG_RUNTIME_DIR` is an absolute path, else `/tmp/qtrace-<uid>`.
    /// `qtrace ctl list` lists it.
    pub fn dir() -> PathBuf {
        match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
            Some(d) if d.is_absolute() => d.join("qtrace"),
            _ => PathBuf::from(format!("/tmp/qtrace-{}", uid())),
        }
    }

    /// Binds the endpoint `<pid>.<name>.sock` in [`Endpoint::dir`] for
    /// `tracer` (an `Arc<Tracer>`, or the `&'static Tracer` of
    /// [`global`](crate::global)) and starts the thread that serves it.
    /// `name` is what `qtrace ctl NAME …` finds it by: 1 to 32 of
    /// `A-Z a-z 0-9 _ . -`.
    ///
    /// # Errors
    ///
    /// [`ConfigError::ControlEndpoint`] when the name is not valid, the
    /// directory cannot be created or is not safe (not a directory, not
    /// owned by this user, open to its group or others), an endpoint of that
    /// name is already served by this process, or the socket cannot be
    /// bound; [`ConfigError::Io`] when the thread cannot start.
    pub fn bind<T>(tracer: T, name: &str) -> Result<Endpoint, ConfigError>
    where
        T: std::ops::Deref<Target = Tracer> + Send + 'static,
    {
        Endpoint::open(tracer, name, None)
    }

    /// The directory of the endpoints a group is allowed to
    /// ([`Endpoint::bind_with_group`]): `/tmp/qtrace-<uid>-g<gid>`, mode
    /// 0710, owned by this user and group `gid`. (Not under
    /// `XDG_RUNTIME_DIR`: that directory is its user's alone.)
    pub fn group_dir(gid: u32) -> PathBuf {
        PathBuf::from(format!("/tmp/qtrace-{}-g{gid}", uid()))
    }

    /// As [`Endpoint::bind`], and the processes of group `gid` are served
    /// too: the socket `<pid>.<name>.sock` is made in
    /// [`Endpoint::group_dir`] (mode 0710, group `gid`: its members can
    /// reach a socket whose name they know, not list the directory), with
    /// mode 0660 and group `gid`; a peer is served when its user id is this
    /// process's, or when it is a member of `gid` as the kernel recorded it
    /// when it connected: its effective group id (`SO_PEERCRED`) or one of
    /// its supplementary groups (`SO_PEERGROUPS`, Linux 4.13 and later; on
    /// an older kernel a member by a supplementary group is refused and runs
    /// `sg GROUP -c 'qtrace ctl …'`). Anyone else is
    /// refused and counted, as with `bind`. Members reach it by its path
    /// (`qtrace ctl /tmp/qtrace-<uid>-g<gid>/<pid>.<name>.sock status`).
    ///
    /// # Errors
    ///
    /// As [`Endpoint::bind`], and [`ConfigError::ControlEndpoint`] when
    /// the directory or the socket cannot be given group `gid` (this
    /// process is not a member of it), or the directory there is not
    /// exactly this user's, of group `gid`, with no permission for others
    /// and none but search for the group.
    pub fn bind_with_group<T>(tracer: T, name: &str, gid: u32) -> Result<Endpoint, ConfigError>
    where
        T: std::ops::Deref<Target = Tracer> + Send + 'static,
    {
        Endpoint::open(tracer, name, Some(gid))
    }

    fn open<T>(tracer: T, name: &str, group: Option<u32>) -> Result<Endpoint, ConfigError>
    where
        T: std::ops::Deref<Target = Tracer> + Send + 'static,
    {
        let dir = match group {
            None => Endpoint::dir(),
            Some(gid) => Endpoint::group_dir(gid),
        };
        let valid = !name.is_empty()
            && name.len() <= 32
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
        if !valid {
            return Err(problem(
                &dir,
                format!("the name {name:?} is not 1 to 32 of A-Z a-z 0-9 _ . -: give one such as \"server\""),
                None,
            ));
        }
        match group {
            None => safe_dir(&dir)?,
            Some(gid) => safe_group_dir(&dir, gid)?,
        }
        let path = dir.join(format!("{}.{name}.sock", std::process::id()));
        if std::fs::symlink_metadata(&path).is_ok() {
            if UnixStream::connect(&path).is_ok() {
                return Err(problem(
                    &path,
                    "this process already serves an endpoint of that name: drop it first, or give another name",
                    None,
                ));
            }
            // A socket left by a dead process whose pid this one reuses.
            std::fs::remove_file(&path).map_err(|e| {
                problem(
                    &path,
                    "a stale socket of that name cannot be removed: remove it by hand",
                    Some(e),
                )
            })?;
        }
        let listener = UnixListener::bind(&path).map_err(|e| {
            problem(
                &path,
                "the socket cannot be bound: check the directory's free space and permissions",
                Some(e),
            )
        })?;
        let mode = if group.is_some() { 0o660 } else { 0o600 };
        if let Err(e) = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)) {
            let _ = std::fs::remove_file(&path);
            return Err(problem(
                &path,
                format!("the socket's mode cannot be set to {mode:o}"),
                Some(e),
            ));
        }
        if let Some(gid) = group {
            if let Err(e) = std::os::unix::fs::chown(&path, None, Some(gid)) {
                let _ = std::fs::remove_file(&path);
                return Err(problem(
                    &path,
                    format!("the socket cannot be given group {gid}: run the program as a member of that group"),
                    Some(e),
                ));
            }
        }
        let counters = Arc::new(Counters::default());
        let shared = Arc::clone(&counters);
        let name = name.to_string();
        let thread = std::thread::Builder::new()
            .name(format!("qtrace-ctl-{name}"))
            .spawn(move || server::serve(listener, &tracer, &name, group, &shared))
            .map_err(|e| {
                let _ = std::fs::remove_file(&path);
                ConfigError::io("start the control endpoint's thread for", &path, e)
            })?;
        Ok(Endpoint {
            path,
            counters,
            thread: Some(thread),
        })
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Connections accepted from this user (served).
    pub fn connections(&self) -> u64 {
        self.counters.connections.load(Ordering::Relaxed)
    }

    /// Connections refused: their peer was another user (or its credentials
    /// could not be read).
    pub fn refused(&self) -> u64 {
        self.counters.refused.load(Ordering::Relaxed)
    }

    /// Requests answered (successes and errors).
    pub fn requests(&self) -> u64 {
        self.counters.requests.load(Ordering::Relaxed)
    }

    /// Requests answered with an error, bad frames included.
    pub fn errors(&self) -> u64 {
        self.counters.errors.load(Ordering::Relaxed)
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.counters.stop.store(true, Ordering::SeqCst);
        // Wakes the thread's `accept`; it sees the stop flag and ends.
        let _ = UnixStream::connect(&self.path);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Creates `dir` with mode 0700 (and its parent, `$XDG_RUNTIME_DIR`, if
/// missing), or checks that the one there is safe.
fn safe_dir(dir: &Path) -> Result<(), ConfigError> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            return Err(problem(
                dir,
                "the directory cannot be created: set XDG_RUNTIME_DIR to a directory of yours",
                Some(e),
            ))
        }
    }
    let meta = std::fs::symlink_metadata(dir)
        .map_err(|e| problem(dir, "the directory cannot be read", Some(e)))?;
    if !meta.is_dir() {
        return Err(problem(dir, "it is not a directory (a symbolic link or a file): remove it, or set XDG_RUNTIME_DIR to a directory of yours", None));
    }
    if meta.uid() != uid() {
        return Err(problem(
            dir,
            format!("the directory belongs to user {}, not to this process's user {}: remove it, or set XDG_RUNTIME_DIR to a directory of yours", meta.uid(), uid()),
            None,
        ));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(problem(
            dir,
            format!("the directory's mode is {:o}: make it 700 (chmod 700) so that no other user reaches the sockets in it", meta.mode() & 0o777),
            None,
        ));
    }
    Ok(())
}

/// Creates `dir` for group `gid` (mode 0710, group `gid`), or checks that
/// the one there is exactly that: a directory (not a link) of this user,
/// of group `gid`, no permission for others, only search for the group.
fn safe_group_dir(dir: &Path, gid: u32) -> Result<(), ConfigError> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {
            // Made 0700 (or less, by the umask): nobody else reaches it
            // until it has its group, then the group's search bit.
            std::os::unix::fs::chown(dir, None, Some(gid)).map_err(|e| {
                let _ = std::fs::remove_dir(dir);
                problem(
                    dir,
                    format!("the directory cannot be given group {gid}: run the program as a member of that group"),
                    Some(e),
                )
            })?;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o710))
                .map_err(|e| problem(dir, "the directory's mode cannot be set to 710", Some(e)))?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(problem(dir, "the directory cannot be created", Some(e))),
    }
    let meta = std::fs::symlink_metadata(dir)
        .map_err(|e| problem(dir, "the directory cannot be read", Some(e)))?;
    if !meta.is_dir() {
        return Err(problem(
            dir,
            "it is not a directory (a symbolic link or a file): remove it",
            None,
        ));
    }
    if meta.uid() != uid() || meta.gid() != gid {
        return Err(problem(
            dir,
            format!("the directory belongs to user {} and group {}, not to this process's user {} and group {gid}: remove it", meta.uid(), meta.gid(), uid()),
            None,
        ));
    }
    if meta.mode() & 0o077 != 0o010 {
        return Err(problem(
            dir,
            format!("the directory's mode is {:o}: make it 710 (chmod 710) so that the group reaches the sockets in it and no one else does", meta.mode() & 0o777),
            None,
        ));
    }
    Ok(())
}
