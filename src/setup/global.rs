//! The process-wide tracer: installed once, then reachable from anywhere
//! without passing a handle. Before it is installed, logging to it is a no-op
//! that costs one load and a branch.
//!
//! ```
//! use qtrace::{global, classes::user, Tracer};
//!
//! qtrace::log_event(user::USER0, [1, 0]); // nothing installed yet: a no-op
//!
//! let tracer = Tracer::new();
//! let q = tracer.create_queue::<qtrace::queues::Dummy>(()).unwrap();
//! tracer.assign_class(user::CLASS, q).unwrap();
//! tracer.activate().unwrap();
//! let tracer = global::install(tracer).unwrap();
//!
//! qtrace::log_event(user::USER0, [2, 0]);
//! assert_eq!(tracer.counters(q).unwrap().accepted, 1);
//! // A second install is a typed error.
//! assert!(global::install(Tracer::new()).is_err());
//! ```

use std::sync::OnceLock;

use crate::queue::config_error::ConfigError;
use crate::{EventId, Tracer};

static GLOBAL: OnceLock<Tracer> = OnceLock::new();

/// Installs `tracer` as the process-wide tracer and returns it. It lives until
/// the process ends; call [`Tracer::shutdown`] on it to save its queues.
/// When its [`Config`](crate::Config) asked for a control endpoint
/// (`Config::with_control`, feature `control`, Linux), `install` binds it
/// and starts its thread: it serves until the process ends.
///
/// # Errors
///
/// [`ConfigError::GlobalAlreadyInstalled`] if a tracer is already installed
/// (the tracer passed is dropped): install one tracer, once, at start-up.
///
/// `ConfigError::ControlEndpoint` (feature `control`) if the endpoint of
/// `Config::with_control` cannot be bound (a name that is not valid, an
/// unsafe directory, a socket that cannot be made: the message says which,
/// and what to do). The tracer **is installed** all the same, without the
/// endpoint: [`get`] returns it, so a program that can run without the
/// endpoint reports the error and goes on
/// (`install(t).or_else(|e| { eprintln!("{e}"); get().ok_or(e) })`), and
/// one that cannot returns it. Nothing is retried, nothing is silent.
///
/// ```
/// let tracer = qtrace::global::install(qtrace::Tracer::new())?;
/// assert!(std::ptr::eq(tracer, qtrace::global::get().unwrap()));
/// # Ok::<(), qtrace::Error>(())
/// ```
pub fn install(tracer: Tracer) -> Result<&'static Tracer, ConfigError> {
    let mut tracer = Some(tracer);
    let installed = GLOBAL.get_or_init(|| tracer.take().expect("taken once"));
    if tracer.is_some() {
        return Err(ConfigError::GlobalAlreadyInstalled);
    }
    #[cfg(all(feature = "control", target_os = "linux"))]
    open_control(installed)?;
    Ok(installed)
}

/// The endpoint of `Config::with_control`, once `install` has bound it:
/// never dropped, as the tracer it serves is never dropped.
#[cfg(all(feature = "control", target_os = "linux"))]
static ENDPOINT: OnceLock<crate::control::Endpoint> = OnceLock::new();

/// Binds the endpoint `Config::with_control` asked for, if it did.
#[cfg(all(feature = "control", target_os = "linux"))]
fn open_control(tracer: &'static Tracer) -> Result<(), ConfigError> {
    let Some((name, group)) = tracer.control_name() else {
        return Ok(());
    };
    let bound = match group {
        None => crate::control::Endpoint::bind(tracer, &name),
        Some(gid) => crate::control::Endpoint::bind_with_group(tracer, &name, gid),
    };
    match bound {
        Ok(endpoint) => {
            // `install` gets here once: GLOBAL is set once.
            let _ = ENDPOINT.set(endpoint);
            Ok(())
        }
        Err(ConfigError::ControlEndpoint {
            path,
            problem,
            source,
            ..
        }) => Err(ConfigError::ControlEndpoint {
            opened_by: "qtrace::global::install (Config::with_control)",
            path,
            problem: format!(
                "{problem}; the tracer is installed without its endpoint (qtrace::global::get returns it): fix this, or leave out Config::with_control to run without one"
            ),
            source,
        }),
        Err(e) => Err(e),
    }
}

/// The process-wide tracer, if installed.
///
/// ```
/// // Nothing is installed in this program: logging to it is a no-op.
/// assert!(qtrace::global::get().is_none());
/// ```
#[inline(always)]
pub fn get() -> Option<&'static Tracer> {
    GLOBAL.get()
}

/// The root's [`crate::log_event`] (one public path: `qtrace::log_event`).
pub(crate) mod entry {
    use crate::EventId;

    /// Logs to the process-wide tracer ([`crate::global::install`]); a
    /// no-op, one load and a branch, before it is installed.
    ///
    /// ```
    /// use qtrace::classes::user;
    /// qtrace::log_event(user::USER0, [1, 0]); // nothing installed: a no-op
    /// assert!(qtrace::global::get().is_none());
    /// ```
    #[inline(always)]
    pub fn log_event(id: EventId, args: [u64; 2]) {
        if let Some(tracer) = super::GLOBAL.get() {
            tracer.log_event(id, args);
        }
    }
}

/// The process-wide tracer as a value, for [`event!`](crate::event!) and
/// [`scope!`](crate::scope!): `qtrace::event!(Global, net::RX, len, port)`
/// is `qtrace::log_event(net::RX.id(), [len as u64, port as u64])`. Before
/// [`install`], logging to it is a no-op and a scope logs nothing.
///
/// ```
/// use qtrace::global::Global;
/// qtrace::classes! {
///     pub static CATALOG;
///     pub mod app: "the application" {
///         event TICK = "tick": "a tick" (n);
///         scope WORK = "work": "a unit of work" ();
///     }
/// }
/// qtrace::event!(Global, app::TICK, 1); // nothing installed: a no-op
/// let _work = qtrace::scope!(Global, app::WORK);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Global;

impl Global {
    /// [`crate::log_event`] (the process-wide tracer's [`Tracer::log_event`]).
    #[inline(always)]
    pub fn log_event(self, id: EventId, args: [u64; 2]) {
        entry::log_event(id, args);
    }

    /// [`Tracer::log_counter`] on the process-wide tracer (a no-op before
    /// [`install`]).
    #[inline(always)]
    pub fn log_counter<T: qtrace_core::classes::counter::CounterValue>(
        self,
        counter: qtrace_core::classes::counter::StaticCounter<T>,
        value: T,
    ) {
        entry::log_event(counter.id(), counter.args(value));
    }

    /// [`Tracer::flow_begin`] on the process-wide tracer: logs the begin
    /// (a no-op before [`install`]) and returns the instance, whose origin
    /// is this thread's source either way.
    #[inline(always)]
    pub fn flow_begin(
        self,
        flow: qtrace_core::classes::flow::StaticFlow,
        id: u64,
    ) -> qtrace_core::classes::flow::FlowId {
        let f = qtrace_core::classes::flow::FlowId::new(crate::model::source::current(), id);
        entry::log_event(flow.begin(), f.args());
        f
    }

    /// [`Tracer::flow_step`] on the process-wide tracer (a no-op before
    /// [`install`]).
    #[inline(always)]
    pub fn flow_step(
        self,
        flow: qtrace_core::classes::flow::StaticFlow,
        f: qtrace_core::classes::flow::FlowId,
    ) {
        entry::log_event(flow.step(), f.args());
    }

    /// [`Tracer::flow_end`] on the process-wide tracer (a no-op before
    /// [`install`]).
    #[inline(always)]
    pub fn flow_end(
        self,
        flow: qtrace_core::classes::flow::StaticFlow,
        f: qtrace_core::classes::flow::FlowId,
    ) {
        entry::log_event(flow.end(), f.args());
    }

    /// [`Tracer::scope`] on the process-wide tracer; before [`install`] it
    /// logs nothing, at the begin or at the end.
    #[inline(always)]
    pub fn scope(
        self,
        begin: EventId,
        end: EventId,
        args: [u64; 2],
    ) -> crate::router::scope::ScopeGuard<'static> {
        match get() {
            Some(tracer) => tracer.scope(begin, end, args),
            None => crate::router::scope::ScopeGuard::open(None, end),
        }
    }
}
