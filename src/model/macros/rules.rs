//! The `macro_rules!` of [`crate::macros`]: `classes!`, `event!`, `scope!`
//! and their hidden helpers, exported at the crate root.

/// Declares classes, their events and scopes once, checked at compile time,
/// and yields typed constants and a static catalog (see the [`macros`
/// module](crate::macros) for the grammar and what it yields).
///
/// ```
/// qtrace::classes! {
///     pub static CATALOG;
///     /// The motor controller.
///     pub mod motor: "the motor controller" {
///         event STEP = "step": "one step" (position);
///         scope MOVE = "move": "a move to a target" (target);
///     }
/// }
/// assert_eq!(motor::CLASS, qtrace::ClassId::FIRST_USER_DEFINED);
/// assert_eq!(motor::STEP.id(), qtrace::EventId(0x17));
/// assert_eq!(motor::MOVE.begin(), qtrace::EventId(0x18));
/// assert_eq!(motor::LAST, qtrace::EventId(0x19));
/// assert_eq!(CATALOG.event_count(), 0x1a);
/// ```
#[macro_export]
macro_rules! classes {
    (
        $(#[$cmeta:meta])* $cvis:vis static $catalog:ident;
        $(
            $(#[$mmeta:meta])* $mvis:vis mod $class:ident : $cdesc:literal {
                $(
                    $(#[$emeta:meta])*
                    $kind:ident $EV:ident = $ename:literal : $edesc:literal ( $($arg:ident),* $(,)? );
                )+
            }
        )+
    ) => {
        $crate::__qtrace_classes! {
            [] []
            $(
                {
                    $(#[$mmeta])* $mvis mod $class : $cdesc {
                        $( $(#[$emeta])* $kind $EV = $ename : $edesc ( $($arg),* ); )+
                    }
                }
            )+
        }

        $(#[$cmeta])*
        $cvis static $catalog: $crate::macros::StaticCatalog = {
            const CLASSES: &[$crate::macros::__private::BuiltinClass] = &[$($class::INFO),+];
            $crate::macros::StaticCatalog::new(CLASSES)
        };
    };
}

/// One class module of `classes!` at a time, with the number of classes
/// (`+ 1` per class) and the kinds of the entries before it, so that each
/// module computes its own ids without naming its siblings (a declaration
/// inside a function body works too); not part of the API.
#[doc(hidden)]
#[macro_export]
macro_rules! __qtrace_classes {
    ([$($idx:tt)*] [$($pk:ident)*]) => {};
    (
        [$($idx:tt)*] [$($pk:ident)*]
        {
            $(#[$mmeta:meta])* $mvis:vis mod $class:ident : $cdesc:literal {
                $( $(#[$emeta:meta])* $kind:ident $EV:ident = $ename:literal : $edesc:literal ( $($arg:ident),* ); )+
            }
        }
        $($rest:tt)*
    ) => {
        $(#[$mmeta])*
        #[allow(non_upper_case_globals)]
        $mvis mod $class {
            use $crate::macros::__private as __q;

            #[doc(hidden)]
            #[allow(non_camel_case_types, dead_code, clippy::upper_case_acronyms)]
            #[derive(Clone, Copy)]
            enum __Index { $($EV),+ }

            #[doc(hidden)]
            const __WIDTHS: &[u16] = &[$($crate::__qtrace_width!($kind)),+];

            /// How many events the class has (a scope counts two).
            pub const COUNT: u16 = __q::sum(__WIDTHS, __WIDTHS.len());
            /// The class number.
            pub const CLASS: __q::ClassId =
                __q::ClassId(__q::ClassId::FIRST_USER_DEFINED.0 $($idx)*);
            /// The first event of the class.
            pub const FIRST: __q::EventId = __q::EventId(
                __q::EventId::FIRST_USER_DEFINED.0 $(+ $crate::__qtrace_width!($pk))*,
            );
            /// The last event of the class.
            pub const LAST: __q::EventId = __q::EventId(FIRST.0 + COUNT - 1);

            $(
                $(#[$emeta])*
                pub const $EV: $crate::__qtrace_type!($kind, $($arg)*) = <$crate::__qtrace_type!($kind, $($arg)*)>::__new(
                    __q::EventId(FIRST.0 + __q::sum(__WIDTHS, __Index::$EV as usize)),
                );
            )+

            #[doc(hidden)]
            const __EVENTS: [__q::BuiltinEvent; COUNT as usize] = {
                let mut t = [__q::EMPTY; COUNT as usize];
                $(
                    $crate::__qtrace_fill!(
                        t, $kind, __q::sum(__WIDTHS, __Index::$EV as usize) as usize,
                        FIRST.0 + __q::sum(__WIDTHS, __Index::$EV as usize),
                        $ename, $edesc, [$(stringify!($arg)),*]
                    );
                )+
                t
            };

            /// The class as the catalog holds it.
            pub const INFO: __q::BuiltinClass = __q::BuiltinClass {
                id: CLASS,
                name: stringify!($class),
                description: $cdesc,
                events: &__EVENTS,
            };
        }

        $crate::__qtrace_classes! { [$($idx)* + 1] [$($pk)* $($kind)+] $($rest)* }
    };
}

/// How many events an entry of `classes!` is; not part of the API.
#[doc(hidden)]
#[macro_export]
macro_rules! __qtrace_width {
    (event) => {
        1u16
    };
    (scope) => {
        2u16
    };
    (counter) => {
        1u16
    };
    (flow) => {
        3u16
    };
    ($other:ident) => {
        ::core::compile_error!(concat!(
            "qtrace::classes!: an entry starts with `event`, `scope`, `counter` or `flow`, not `",
            stringify!($other),
            "`"
        ))
    };
}

/// The constant type of an entry of `classes!`; not part of the API.
#[doc(hidden)]
#[macro_export]
macro_rules! __qtrace_type {
    (event, ) => { $crate::macros::StaticEvent<0> };
    (event, $a:ident) => { $crate::macros::StaticEvent<1> };
    (event, $a:ident $b:ident) => { $crate::macros::StaticEvent<2> };
    (scope, ) => { $crate::macros::StaticScope<0> };
    (scope, $a:ident) => { $crate::macros::StaticScope<1> };
    (scope, $a:ident $b:ident) => { $crate::macros::StaticScope<2> };
    (counter, u64 $($unit:ident)?) => { $crate::macros::StaticCounter<u64> };
    (counter, i64 $($unit:ident)?) => { $crate::macros::StaticCounter<i64> };
    (counter, f64 $($unit:ident)?) => { $crate::macros::StaticCounter<f64> };
    (counter, $($a:ident)*) => {
        ::core::compile_error!(concat!(
            "qtrace::classes!: a counter is declared (KIND) or (KIND, unit), KIND one of u64, i64, f64: (",
            stringify!($($a),*),
            ")"
        ))
    };
    (flow, ) => { $crate::macros::StaticFlow };
    (flow, $($a:ident)*) => {
        ::core::compile_error!(concat!(
            "qtrace::classes!: a flow is declared with no argument names, `()` (its events carry the flow id and origin): (",
            stringify!($($a),*),
            ")"
        ))
    };
    ($kind:ident, $($a:ident)*) => {
        ::core::compile_error!(concat!(
            "qtrace::classes!: an event or scope has at most two arguments (a record carries two 64-bit words): (",
            stringify!($($a),*),
            ")"
        ))
    };
}

/// Fills the table entries of one `classes!` entry; not part of the API.
#[doc(hidden)]
#[macro_export]
macro_rules! __qtrace_fill {
    ($t:ident, event, $at:expr, $id:expr, $name:literal, $desc:literal, [$($arg:expr),*]) => {
        $t[$at] = $crate::macros::__private::BuiltinEvent::new($crate::EventId($id), $name, $desc, &[$($arg),*]);
    };
    ($t:ident, scope, $at:expr, $id:expr, $name:literal, $desc:literal, [$($arg:expr),*]) => {
        $t[$at] = $crate::macros::__private::BuiltinEvent::new(
            $crate::EventId($id),
            concat!($name, ".begin"),
            $desc,
            &[$($arg),*],
        );
        $t[$at + 1] = $crate::macros::__private::BuiltinEvent::new(
            $crate::EventId($id + 1),
            concat!($name, ".end"),
            concat!("end: ", $desc),
            &["code"],
        );
    };
    ($t:ident, counter, $at:expr, $id:expr, $name:literal, $desc:literal, [$($arg:expr),*]) => {
        $t[$at] = $crate::macros::__private::BuiltinEvent::new(
            $crate::EventId($id),
            concat!($name, ".counter"),
            $desc,
            &[$($arg),*],
        );
    };
    ($t:ident, flow, $at:expr, $id:expr, $name:literal, $desc:literal, [$($arg:expr),*]) => {
        $t[$at] = $crate::macros::__private::BuiltinEvent::new(
            $crate::EventId($id),
            concat!($name, ".flow_begin"),
            $desc,
            &$crate::macros::__private::FLOW_ARGS,
        );
        $t[$at + 1] = $crate::macros::__private::BuiltinEvent::new(
            $crate::EventId($id + 1),
            concat!($name, ".flow_step"),
            concat!("step: ", $desc),
            &$crate::macros::__private::FLOW_ARGS,
        );
        $t[$at + 2] = $crate::macros::__private::BuiltinEvent::new(
            $crate::EventId($id + 2),
            concat!($name, ".flow_end"),
            concat!("end: ", $desc),
            &$crate::macros::__private::FLOW_ARGS,
        );
    };
    ($t:ident, $other:ident, $($rest:tt)*) => {};
}

/// Logs an event declared by [`classes!`](crate::classes!):
/// `event!(TRACER, EVENT, ARG, ...)` expands to exactly
/// `TRACER.log_event(EVENT.id(), [ARG as u64, ...])` (missing arguments are
/// 0), so it costs what [`Tracer::log_event`](crate::Tracer::log_event)
/// costs. `TRACER` is anything with a `log_event(EventId, [u64; 2])`
/// method: a [`Tracer`](crate::Tracer), a reference or an `Arc` to one, or
/// [`global::Global`](crate::setup::global::Global), the process-wide tracer.
/// The number of arguments must match the event's argument names, or the
/// program does not compile (see [`StaticEvent`](crate::macros::StaticEvent)); each is cast with `as u64`.
///
/// ```
/// qtrace::classes! {
///     pub static CATALOG;
///     pub mod net: "network stack" {
///         event RX = "rx": "a packet was received" (len, port);
///     }
/// }
/// use qtrace::global::Global;
/// qtrace::event!(Global, net::RX, 1500, 80u16); // a no-op: nothing installed
///
/// let tracer = qtrace::Tracer::new();
/// tracer.define_classes(&CATALOG)?;
/// qtrace::event!(&tracer, net::RX, 1500, 80u16);
/// # Ok::<(), qtrace::Error>(())
/// ```
#[macro_export]
macro_rules! event {
    ($tracer:expr, $event:expr $(,)?) => {
        $tracer.log_event($crate::macros::StaticEvent::<0>::id($event), [0, 0])
    };
    ($tracer:expr, $event:expr, $a:expr $(,)?) => {
        $tracer.log_event(
            $crate::macros::StaticEvent::<1>::id($event),
            [($a) as u64, 0],
        )
    };
    ($tracer:expr, $event:expr, $a:expr, $b:expr $(,)?) => {
        $tracer.log_event(
            $crate::macros::StaticEvent::<2>::id($event),
            [($a) as u64, ($b) as u64],
        )
    };
    ($tracer:expr, $event:expr, $($rest:expr),+ $(,)?) => {
        ::core::compile_error!("qtrace::event!: an event has at most two arguments")
    };
}

/// Opens a scope declared by [`classes!`](crate::classes!): logs
/// `NAME.begin` with the arguments given now and returns a
/// [`ScopeGuard`](crate::scope::ScopeGuard) guard that logs `NAME.end` with its code
/// (0, or what [`ScopeGuard::end_with`](crate::scope::ScopeGuard::end_with) set) when
/// it is dropped. `scope!(TRACER, SCOPE, ARG, ...)` expands to
/// `TRACER.scope(SCOPE.begin(), SCOPE.end(), [ARG as u64, ...])`; `TRACER`
/// is a [`Tracer`](crate::Tracer) (or a reference or `Arc` to one) or
/// [`global::Global`](crate::setup::global::Global). Scopes nest. The number of
/// arguments must match the scope's argument names (see [`StaticScope`](crate::macros::StaticScope)).
///
/// ```
/// qtrace::classes! {
///     pub static CATALOG;
///     pub mod db: "database" {
///         scope QUERY = "query": "one query" (table);
///     }
/// }
/// let tracer = qtrace::Tracer::new();
/// tracer.define_classes(&CATALOG)?;
/// let query = qtrace::scope!(tracer, db::QUERY, 3);
/// query.end_with(404); // query.end [404, 0]
/// # Ok::<(), qtrace::Error>(())
/// ```
///
/// ```compile_fail
/// qtrace::classes! {
///     pub static CATALOG;
///     pub mod db: "database" {
///         scope QUERY = "query": "one query" (table);
///     }
/// }
/// let tracer = qtrace::Tracer::new();
/// let _q = qtrace::scope!(tracer, db::QUERY); // expected `StaticScope<0>`, found `StaticScope<1>`
/// ```
#[macro_export]
macro_rules! scope {
    ($tracer:expr, $scope:expr $(,)?) => {{
        let scope = $crate::macros::StaticScope::<0>::begin($scope);
        $tracer.scope(scope, $crate::macros::StaticScope::<0>::end($scope), [0, 0])
    }};
    ($tracer:expr, $scope:expr, $a:expr $(,)?) => {{
        let scope = $crate::macros::StaticScope::<1>::begin($scope);
        $tracer.scope(
            scope,
            $crate::macros::StaticScope::<1>::end($scope),
            [($a) as u64, 0],
        )
    }};
    ($tracer:expr, $scope:expr, $a:expr, $b:expr $(,)?) => {{
        let scope = $crate::macros::StaticScope::<2>::begin($scope);
        $tracer.scope(
            scope,
            $crate::macros::StaticScope::<2>::end($scope),
            [($a) as u64, ($b) as u64],
        )
    }};
    ($tracer:expr, $scope:expr, $($rest:expr),+ $(,)?) => {
        ::core::compile_error!("qtrace::scope!: a scope has at most two begin arguments")
    };
}
