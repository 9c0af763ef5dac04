//! Compile-time events: [`classes!`](crate::classes!) declares classes,
//! events, scopes, their names, descriptions and argument names once, checked
//! at compile time; [`event!`](crate::event!) and [`scope!`](crate::scope!)
//! log them at the cost of the hand-written call.
//!
//! ```
//! use qtrace::queues::Dummy;
//! use qtrace::Tracer;
//!
//! qtrace::classes! {
//!     /// Every class of this program.
//!     pub static CATALOG;
//!
//!     /// The network stack.
//!     pub mod net: "network stack" {
//!         /// A packet arrived.
//!         event RX = "rx": "a packet was received" (len, port);
//!         event DROP = "drop": "a packet was dropped" ();
//!         /// One request served: `request.begin` (conn), `request.end` (code).
//!         scope REQUEST = "request": "one request served" (conn);
//!     }
//! }
//!
//! let tracer = Tracer::new();
//! tracer.define_classes(&CATALOG)?; // the ids fixed at compile time
//! let q = tracer.create_queue::<Dummy>(())?;
//! tracer.assign_class(net::CLASS, q)?;
//! tracer.activate()?;
//!
//! let (len, port) = (1500u32, 80u16);
//! qtrace::event!(tracer, net::RX, len, port); // tracer.log_event(rx, [1500, 80])
//! qtrace::event!(tracer, net::DROP);
//! {
//!     let _request = qtrace::scope!(tracer, net::REQUEST, 7); // request.begin [7, 0]
//!     qtrace::event!(tracer, net::RX, 40, 443);
//! } // request.end [0, 0]
//! assert_eq!(tracer.counters(q)?.accepted, 5);
//! assert_eq!(tracer.catalog().event_name(net::RX.id()), Some("rx"));
//! # Ok::<(), qtrace::Error>(())
//! ```
//!
//! # What `classes!` yields
//!
//! ```text
//! qtrace::classes! {
//!     VIS static CATALOG;                      // a StaticCatalog of every class below
//!     VIS mod CLASS_NAME: "description" {      // a module; the class is named CLASS_NAME
//!         event CONST = "name": "description" (arg, ...);   // 0 to 2 argument names
//!         scope CONST = "name": "description" (arg, ...);   // 0 to 2 begin arguments
//!         counter CONST = "name": "description" (KIND, unit); // KIND: u64, i64 or f64; unit optional
//!         flow CONST = "name": "description" ();             // no argument names
//!     }
//!     ...
//! }
//! ```
//!
//! - `CATALOG`: a `static` [`StaticCatalog`] of the five built-in classes and
//!   these; hand it to [`Tracer::define_classes`](crate::Tracer::define_classes).
//! - per class module: `CLASS` (its [`ClassId`](crate::ClassId)), `FIRST` and `LAST` (its first
//!   and last [`EventId`]), `INFO` (its [`BuiltinClass`](qtrace_core::classes::BuiltinClass)) and, per entry, a
//!   constant: a [`StaticEvent<N>`](StaticEvent) for an `event`, a [`StaticScope<N>`](StaticScope) for
//!   a `scope`, where `N` is the number of argument names; a
//!   [`StaticCounter<KIND>`](StaticCounter) for a `counter`, one event
//!   `NAME.counter` with the argument names `KIND` and `unit` (FORMAT.md
//!   1.3.2, "Counters"), logged with [`Tracer::log_counter`](crate::Tracer::log_counter);
//!   a [`StaticFlow`] for a `flow`, three events `NAME.flow_begin`, `NAME.flow_step` and
//!   `NAME.flow_end` with the argument names `flow` and `origin` (FORMAT.md 1.3.3, "Flows"),
//!   logged with [`Tracer::flow_begin`](crate::Tracer::flow_begin) and its kin.
//!
//! Classes are numbered from [`ClassId::FIRST_USER_DEFINED`](crate::ClassId::FIRST_USER_DEFINED) (5) in the
//! order written, and their events consecutively from
//! [`EventId::FIRST_USER_DEFINED`] (0x17): a `scope` is two events,
//! `NAME.begin` (the argument names given) then `NAME.end` (one argument,
//! `code`), which is how every reader pairs them (FORMAT.md 1.3.1,
//! "Scopes"). Ids are given by position, so two entries can never share one.
//!
//! Everything FORMAT.md 1.3 requires of a class table is checked while the
//! program compiles ([`StaticCatalog::new`]): names of 1–64 bytes of
//! `[A-Za-z0-9_.-]`, one-line descriptions of at most 256 bytes, unique
//! class names (the built-in ones included), unique event names within a
//! class, at most two unique argument names. A duplicate event name does not
//! compile:
//!
//! ```compile_fail
//! qtrace::classes! {
//!     pub static CATALOG;
//!     pub mod net: "network stack" {
//!         event RX = "rx": "a packet was received" (len);
//!         event RX2 = "rx": "the same name again" (len);
//!     }
//! }
//! ```
//!
//! nor does a constant declared twice (two entries for one id):
//!
//! ```compile_fail
//! qtrace::classes! {
//!     pub static CATALOG;
//!     pub mod net: "network stack" {
//!         event RX = "rx": "a packet was received" (len);
//!         event RX = "rx2": "another event under the same constant" (len);
//!     }
//! }
//! ```
//!
//! nor three arguments:
//!
//! ```compile_fail
//! qtrace::classes! {
//!     pub static CATALOG;
//!     pub mod net: "network stack" {
//!         event RX = "rx": "a packet was received" (len, port, vlan);
//!     }
//! }
//! ```

use crate::EventId;
/// The static catalog [`classes!`](crate::classes!) yields, which
/// [`Tracer::define_classes`](crate::Tracer::define_classes) takes (the
/// no_std core's type).
#[doc(no_inline)]
pub use qtrace_core::StaticCatalog;

/// A counter declared by [`classes!`](crate::classes!) (`counter NAME =
/// "name": "description" (KIND, unit);`, KIND one of `u64`, `i64`, `f64`):
/// one event `name.counter` whose values are `KIND`s (FORMAT.md 1.3.2); log
/// a value with [`Tracer::log_counter`](crate::Tracer::log_counter) (the
/// no_std core's type, as are its [`CounterKind`] and [`CounterValue`]).
///
/// ```
/// qtrace::classes! {
///     pub static CATALOG;
///     pub mod sched: "the scheduler" {
///         counter READY = "ready": "tasks ready to run" (u64, tasks);
///         counter LOAD = "load": "the load average" (f64);
///     }
/// }
/// let tracer = qtrace::Tracer::new();
/// tracer.define_classes(&CATALOG)?;
/// tracer.log_counter(sched::READY, 3); // ready.counter [3, 0]
/// tracer.log_counter(sched::LOAD, 0.5); // load.counter [0.5f64.to_bits(), 0]
/// let catalog = tracer.catalog();
/// assert_eq!(catalog.event_name(sched::READY.id()), Some("ready.counter"));
/// assert_eq!(catalog.counter_of(sched::READY.id()), Some((qtrace::macros::CounterKind::U64, "tasks")));
/// # Ok::<(), qtrace::Error>(())
/// ```
///
/// A counter without a kind, or of another kind, does not compile:
///
/// ```compile_fail
/// qtrace::classes! {
///     pub static CATALOG;
///     pub mod sched: "the scheduler" {
///         counter READY = "ready": "tasks ready to run" (u32, tasks);
///     }
/// }
/// ```
#[doc(no_inline)]
pub use qtrace_core::classes::counter::{CounterKind, CounterValue, StaticCounter};

/// A flow declared by [`classes!`](crate::classes!) (`flow NAME = "name":
/// "description" ();`): three consecutive events `name.flow_begin`,
/// `name.flow_step` and `name.flow_end` whose records carry a flow id and
/// its origin, a [`FlowId`] (FORMAT.md 1.3.3); log them with
/// [`Tracer::flow_begin`](crate::Tracer::flow_begin),
/// [`flow_step`](crate::Tracer::flow_step) and
/// [`flow_end`](crate::Tracer::flow_end) (the no_std core's types, as is
/// [`FlowPhase`]).
///
/// ```
/// qtrace::classes! {
///     pub static CATALOG;
///     pub mod rpc: "remote calls" {
///         flow CALL = "call": "a call from a client to a server" ();
///     }
/// }
/// let tracer = qtrace::Tracer::new();
/// tracer.define_classes(&CATALOG)?;
/// let call = tracer.flow_begin(rpc::CALL, 7); // call.flow_begin [7, this thread's source]
/// tracer.flow_step(rpc::CALL, call); // wherever it passes
/// tracer.flow_end(rpc::CALL, call); // call.flow_end [7, the same origin]
/// let catalog = tracer.catalog();
/// assert_eq!(catalog.event_name(rpc::CALL.end()), Some("call.flow_end"));
/// assert_eq!(catalog.event(rpc::CALL.step()).unwrap().args, ["flow", "origin"]);
/// assert_eq!(catalog.flow("rpc:call"), Some(rpc::CALL));
/// # Ok::<(), qtrace::Error>(())
/// ```
///
/// A flow names no arguments of its own:
///
/// ```compile_fail
/// qtrace::classes! {
///     pub static CATALOG;
///     pub mod rpc: "remote calls" {
///         flow CALL = "call": "a call" (port);
///     }
/// }
/// ```
#[doc(no_inline)]
pub use qtrace_core::classes::flow::{FlowId, FlowPhase, StaticFlow};

/// An event declared by [`classes!`](crate::classes!) with `N` argument
/// names: [`event!`](crate::event!) takes exactly `N` arguments for it, or
/// the program does not compile.
///
/// ```
/// qtrace::classes! {
///     pub static CATALOG;
///     pub mod disk: "block device" {
///         event READ = "read": "a block was read" (block, bytes);
///     }
/// }
/// let read: qtrace::macros::StaticEvent<2> = disk::READ;
/// assert_eq!(read.id(), qtrace::EventId::FIRST_USER_DEFINED);
/// ```
///
/// A wrong number of arguments is a compile error:
///
/// ```compile_fail
/// qtrace::classes! {
///     pub static CATALOG;
///     pub mod disk: "block device" {
///         event READ = "read": "a block was read" (block, bytes);
///     }
/// }
/// let tracer = qtrace::Tracer::new();
/// qtrace::event!(tracer, disk::READ, 7); // expected `StaticEvent<2>`, found `StaticEvent<1>`
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StaticEvent<const N: usize> {
    id: EventId,
}

impl<const N: usize> StaticEvent<N> {
    /// Used by [`classes!`](crate::classes!); not part of the API (the
    /// macro is what ties `N` to the catalog).
    #[doc(hidden)]
    pub const fn __new(id: EventId) -> Self {
        StaticEvent { id }
    }

    /// The event number.
    #[inline(always)]
    pub const fn id(self) -> EventId {
        self.id
    }
}

/// A scope declared by [`classes!`](crate::classes!): two consecutive
/// events, `NAME.begin` with `N` argument names and `NAME.end` with one
/// (`code`). [`scope!`](crate::scope!) takes exactly `N` arguments for it.
///
/// ```
/// qtrace::classes! {
///     pub static CATALOG;
///     pub mod db: "database" {
///         scope QUERY = "query": "one query" (table);
///     }
/// }
/// assert_eq!(db::QUERY.end().0, db::QUERY.begin().0 + 1);
/// assert_eq!(CATALOG.user_classes()[0].events[1].name, "query.end");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StaticScope<const N: usize> {
    begin: EventId,
}

impl<const N: usize> StaticScope<N> {
    /// Used by [`classes!`](crate::classes!); not part of the API.
    #[doc(hidden)]
    pub const fn __new(begin: EventId) -> Self {
        StaticScope { begin }
    }

    /// The `NAME.begin` event.
    #[inline(always)]
    pub const fn begin(self) -> EventId {
        self.begin
    }

    /// The `NAME.end` event (the next number).
    #[inline(always)]
    pub const fn end(self) -> EventId {
        EventId(self.begin.0 + 1)
    }
}

/// What `classes!` expands to; not part of the API.
// Hidden, and not a compatibility path: a macro's expansion runs in the
// user's crate, so what it names must be public; the core's types have their
// one documented path in `qtrace_core::classes`.
#[doc(hidden)]
pub mod __private {
    pub use super::{StaticCatalog, StaticCounter, StaticEvent, StaticFlow, StaticScope};
    pub use crate::ClassId;
    pub use crate::EventId;
    pub use qtrace_core::classes::flow::FLOW_ARGS;
    pub use qtrace_core::classes::{BuiltinClass, BuiltinEvent};

    /// The sum of `widths[..n]`.
    pub const fn sum(widths: &[u16], n: usize) -> u16 {
        let mut s = 0;
        let mut i = 0;
        while i < n && i < widths.len() {
            s += widths[i];
            i += 1;
        }
        s
    }

    /// A placeholder entry, overwritten by the macro.
    pub const EMPTY: BuiltinEvent = BuiltinEvent::new(EventId(0), "", "", &[]);
}

// The `macro_rules!` definitions live in a private child module: a
// `#[macro_export]` macro's one path is the crate root (`qtrace::classes!`),
// and rustdoc would list macros defined here a second time under `macros`.
mod rules;
