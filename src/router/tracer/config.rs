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
}

impl Default for Config {
    fn default() -> Self {
        Config {
            clock: Clock::fast(),
            output_dir: std::env::var_os("QTRACE_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("qtrace-out")),
            save_on_panic: true,
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

    /// Puts files in `dir`.
    pub fn with_output_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.output_dir = dir.into();
        self
    }
}
