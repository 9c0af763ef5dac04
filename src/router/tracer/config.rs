//! [`Config`]: what a tracer is built with (clock, output directory, save on panic).

use std::path::{Path, PathBuf};

use crate::model::clock::Clock;
use crate::queue::config_error::ConfigError;

/// How a tracer is set up. `Default` gives the fast clock and the output
/// directory `$QTRACE_DIR`, or `./qtrace-out` when that is unset.
///
/// ```
/// use qtrace::clock::{Clock, ClockKind};
/// use qtrace::{Config, Tracer};
///
/// let config = Config::default()
///     .with_output_dir(std::env::temp_dir().join("qtrace-doc-config"))
///     .with_clock(Clock::monotonic());
/// let tracer = Tracer::with_config(config);
/// assert_eq!(tracer.clock().kind(), ClockKind::Monotonic);
/// assert!(tracer.output_dir().ends_with("qtrace-doc-config"));
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Config {
    pub(crate) clock: Clock,
    pub(crate) output_dir: PathBuf,
    pub(crate) save_on_panic: bool,
    #[cfg(all(feature = "control", target_os = "linux"))]
    pub(crate) control: Option<String>,
    #[cfg(all(feature = "control", target_os = "linux"))]
    pub(crate) control_group: Option<u32>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            clock: Clock::fast(),
            output_dir: std::env::var_os("QTRACE_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("qtrace-out")),
            save_on_panic: true,
            #[cfg(all(feature = "control", target_os = "linux"))]
            control: None,
            #[cfg(all(feature = "control", target_os = "linux"))]
            control_group: None,
        }
    }
}

impl Config {
    /// The clock read once per recorded event (default [`Clock::fast`]).
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Where queues put their files unless told otherwise (default
    /// `$QTRACE_DIR`, else `qtrace-out`).
    pub fn output_dir(&self) -> &Path {
        &self.output_dir
    }

    /// Whether a panic in any thread saves this tracer's fixed and circular
    /// queues whose rings are on the heap
    /// ([`crate::storage::RingStorage::Memory`]) to their trace files, from a
    /// panic hook installed at phase 2 (chained before the hook that was
    /// there). Default `true`.
    pub fn save_on_panic(&self) -> bool {
        self.save_on_panic
    }

    /// Uses `clock`.
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Turns the panic hook's save on or off (see [`Config::save_on_panic`]).
    pub fn with_save_on_panic(mut self, on: bool) -> Self {
        self.save_on_panic = on;
        self
    }

    /// Uses a clock of `kind` ([`Clock::of_kind`]): the way to ask for the
    /// monotonic clock, or to insist on the TSC, whatever `QTRACE_NO_TSC`
    /// says (which only steers the default, [`Clock::fast`]).
    ///
    /// # Errors
    ///
    /// [`ConfigError::ClockUnavailable`] for [`ClockKind::Manual`](crate::model::clock::ClockKind::Manual)
    /// (use [`Config::with_clock`] with [`Clock::manual`]) or a TSC this
    /// machine cannot use for time.
    ///
    /// ```
    /// use qtrace::clock::ClockKind;
    /// use qtrace::Config;
    /// let config = Config::default().with_clock_kind(ClockKind::Monotonic).unwrap();
    /// assert_eq!(config.clock().kind(), ClockKind::Monotonic);
    /// ```
    pub fn with_clock_kind(
        mut self,
        kind: crate::model::clock::ClockKind,
    ) -> Result<Self, ConfigError> {
        self.clock = Clock::of_kind(kind)?;
        Ok(self)
    }

    /// The name of the control endpoint [`global::install`](crate::global::install)
    /// opens for this tracer ([`Config::with_control`]); `None` (the
    /// default) opens none.
    #[cfg(all(feature = "control", target_os = "linux"))]
    pub fn control(&self) -> Option<&str> {
        self.control.as_deref()
    }

    /// Serves a control endpoint named `name` (feature `control`, Linux)
    /// once the tracer is installed with
    /// [`global::install`](crate::global::install): the socket
    /// `<pid>.<name>.sock` of [`control::Endpoint`](crate::control::Endpoint),
    /// owner-only, that `qtrace ctl NAME …` and `qtrace live --ctl NAME`
    /// reach. Off by default. The endpoint lives as long as the process
    /// (the global tracer does); its socket file stays behind when the
    /// process ends, and the next process of that pid and name replaces it.
    ///
    /// The option is read by `global::install` only, because the endpoint's
    /// thread holds the tracer it serves and a `Tracer` cannot hold its own
    /// endpoint: for a tracer that is not installed (an `Arc<Tracer>`),
    /// call [`Endpoint::bind`](crate::control::Endpoint::bind) instead.
    /// `name` is checked when `install` binds: 1 to 32 of
    /// `A-Z a-z 0-9 _ . -`.
    ///
    /// ```
    /// # let _dir = tempfile::tempdir().unwrap(); std::env::set_var("XDG_RUNTIME_DIR", _dir.path());
    /// use qtrace::{global, Config, Tracer};
    ///
    /// let config = Config::default().with_control("server");
    /// assert_eq!(config.control(), Some("server"));
    /// let tracer = global::install(Tracer::with_config(config))?;
    /// let socket = qtrace::control::Endpoint::dir()
    ///     .join(format!("{}.server.sock", std::process::id()));
    /// assert!(std::os::unix::net::UnixStream::connect(&socket).is_ok());
    /// # let _ = tracer;
    /// # Ok::<(), qtrace::Error>(())
    /// ```
    #[cfg(all(feature = "control", target_os = "linux"))]
    pub fn with_control(mut self, name: impl Into<String>) -> Self {
        self.control = Some(name.into());
        self
    }

    /// The group [`Config::with_control_group`] allows; `None` (the
    /// default): the endpoint serves its own user only.
    #[cfg(all(feature = "control", target_os = "linux"))]
    pub fn control_group(&self) -> Option<u32> {
        self.control_group
    }

    /// Lets the processes of group `gid` use the endpoint of
    /// [`Config::with_control`] too: `global::install` binds it with
    /// [`Endpoint::bind_with_group`](crate::control::Endpoint::bind_with_group)
    /// (a 0710 directory and a 0660 socket of that group, in
    /// [`Endpoint::group_dir`](crate::control::Endpoint::group_dir), and a
    /// peer served when its effective group or one of its supplementary
    /// groups is `gid`). Without
    /// `with_control` it opens nothing.
    #[cfg(all(feature = "control", target_os = "linux"))]
    pub fn with_control_group(mut self, gid: u32) -> Self {
        self.control_group = Some(gid);
        self
    }

    /// Puts files in `dir`.
    pub fn with_output_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.output_dir = dir.into();
        self
    }
}
