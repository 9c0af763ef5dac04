//! Scopes: a guard that logs a begin event when it is made and its end event
//! when it is dropped, so a span of code shows as a slice in `analyze`, the
//! Perfetto and the Chrome exports.
//!
//! A scope is a pair of events of one class named `NAME.begin` and
//! `NAME.end` (FORMAT.md 1.3.1): [`classes!`](crate::classes!) declares both
//! with one `scope` entry, and a run-time
//! [`ClassSpec`](crate::classes::ClassSpec) may name two events so. The
//! begin event carries the caller's arguments; the end event carries a
//! *code* in argument 0 (0 unless [`ScopeGuard::end_with`] or [`ScopeGuard::set_code`]
//! set one) and 0 in argument 1. The duration is not logged: it is the
//! difference of the two records' times, which every reader has, and
//! logging it would cost a second clock read. Readers pair a `NAME.end` with
//! the innermost open `NAME.begin` of the same source (thread), so scopes
//! nest.
//!
//! ```
//! # let _cwd = tempfile::tempdir().unwrap(); std::env::set_current_dir(_cwd.path()).unwrap(); // own directory: doc tests run in parallel
//! use qtrace::clock::{Clock, ManualClock};
//! use qtrace::queues::{Fixed, FixedParams};
//! use qtrace::{Config, Event, Tracer};
//!
//! qtrace::classes! {
//!     pub static CATALOG;
//!     pub mod app: "the application" {
//!         scope LOAD = "load": "loading a file" (file);
//!     }
//! }
//!
//! let time = ManualClock::new(100);
//! let tracer = Tracer::with_config(Config::default().with_clock(Clock::manual(&time)));
//! tracer.define_classes(&CATALOG)?;
//! let q = tracer.create_queue::<Fixed>(FixedParams::default().with_capacity(8))?;
//! tracer.assign_class(app::CLASS, q)?;
//! tracer.activate()?;
//! {
//!     let load = tracer.scope(app::LOAD.begin(), app::LOAD.end(), [7, 0]);
//!     time.advance(250);
//!     load.end_with(2);
//! }
//! let events: Vec<Event> = tracer.queue(q)?.as_fixed().unwrap().snapshot_events();
//! assert_eq!(
//!     events.iter().map(|e| (e.time, e.id, e.args)).collect::<Vec<_>>(),
//!     [(100, app::LOAD.begin(), [7, 0]), (350, app::LOAD.end(), [2, 0])]
//! );
//! # Ok::<(), qtrace::Error>(())
//! ```

use crate::{EventId, Tracer};

/// An open scope: it logs its end event (argument 0: its code) when dropped.
/// Made by [`Tracer::scope`] or [`scope!`](crate::scope!); 24 bytes, no
/// allocation. Bind it to a named variable (`let _load = …`): `let _ = …`
/// drops it at once.
///
/// ```
/// qtrace::classes! {
///     pub static CATALOG;
///     pub mod app: "the application" {
///         scope PARSE = "parse": "parsing the input" ();
///     }
/// }
/// let tracer = qtrace::Tracer::new();
/// tracer.define_classes(&CATALOG)?;
/// let mut parse = qtrace::scope!(tracer, app::PARSE);
/// parse.set_code(1); // failed so far
/// parse.set_code(0); // it worked after all
/// drop(parse); // parse.end [0, 0]
/// # Ok::<(), qtrace::Error>(())
/// ```
#[must_use = "a scope ends when its guard is dropped: bind it with `let _name = ...`"]
#[derive(Debug)]
pub struct ScopeGuard<'a> {
    tracer: Option<&'a Tracer>,
    end: EventId,
    code: u64,
}

impl<'a> ScopeGuard<'a> {
    /// A scope whose begin was logged (or not) by the caller; it logs `end`
    /// into `tracer` (if any) when dropped.
    #[inline(always)]
    pub(crate) fn open(tracer: Option<&'a Tracer>, end: EventId) -> Self {
        ScopeGuard {
            tracer,
            end,
            code: 0,
        }
    }

    /// Sets the code the end event will carry (argument 0).
    #[inline(always)]
    pub fn set_code(&mut self, code: u64) {
        self.code = code;
    }

    /// Ends the scope now, its end event carrying `code`.
    #[inline(always)]
    pub fn end_with(mut self, code: u64) {
        self.code = code;
    }

    /// The code the end event will carry.
    pub fn code(&self) -> u64 {
        self.code
    }
}

impl Drop for ScopeGuard<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        if let Some(tracer) = self.tracer {
            tracer.log_event(self.end, [self.code, 0]);
        }
    }
}

impl Tracer {
    /// Opens a scope: logs `begin` with `args` now, and `end` with the
    /// guard's code (`[code, 0]`) when the returned guard is dropped. Pass
    /// the two events of a `NAME.begin` / `NAME.end` pair (what
    /// [`classes!`](crate::classes!) declares for a `scope`; or two events
    /// so named in a run-time class), so that readers draw a slice. Each
    /// event costs what [`Tracer::log_event`] costs; the guard allocates
    /// nothing.
    ///
    /// ```
    /// use qtrace::classes::ClassSpec;
    /// let tracer = qtrace::Tracer::new();
    /// let c = tracer.define_class(
    ///     ClassSpec::new("job", "jobs")
    ///         .event("run.begin", "a job runs", &["job"])
    ///         .event("run.end", "a job ran", &["code"]),
    /// )?;
    /// let (begin, end) = (c.event("run.begin").unwrap(), c.event("run.end").unwrap());
    /// {
    ///     let _run = tracer.scope(begin, end, [42, 0]);
    ///     // … the job …
    /// }
    /// # Ok::<(), qtrace::ConfigError>(())
    /// ```
    #[inline(always)]
    pub fn scope(&self, begin: EventId, end: EventId, args: [u64; 2]) -> ScopeGuard<'_> {
        self.log_event(begin, args);
        ScopeGuard::open(Some(self), end)
    }
}
