//! Event classes: the five built-in S.Ha.R.K. classes, one module each, and
//! classes that users define at phase 1 with a [`ClassSpec`].
//!
//! A [`Catalog`] is the table of every class and event a tracer knows, with
//! names, one-line descriptions and argument names. It is what trace files
//! embed so that they describe themselves, and what readers use to name events.
//! Finding the class of an event is an index into a table: O(1).
//!
//! ```
//! use qtrace::classes::{Catalog, ClassSpec, system};
//!
//! let mut catalog = Catalog::builtin();
//! assert_eq!(catalog.event(system::SCHEDULE).unwrap().name, "schedule");
//!
//! let net = catalog
//!     .define(
//!         ClassSpec::new("net", "network stack")
//!             .event("rx", "a packet was received", &["len", "port"])
//!             .event("tx", "a packet was sent", &["len", "port"]),
//!     )
//!     .unwrap();
//! let rx = net.event("rx").unwrap();
//! assert_eq!(rx, qtrace::EventId::FIRST_USER_DEFINED);
//! assert_eq!(catalog.class_of(rx), Some(net.id));
//! assert_eq!(catalog.class(net.id).unwrap().name, "net");
//! ```

pub mod lowlevel;
pub mod semaphore;
pub mod system;
pub mod tracer;
pub mod user;

mod error;
// Scope pairing: what the views (export, analysis) draw scopes with.
#[cfg(any(feature = "export", feature = "analysis", test))]
// (Each view uses part of it: with one of them off, the rest is unused.)
#[cfg_attr(not(all(feature = "export", feature = "analysis")), allow(dead_code))]
pub(crate) mod scopes;
// Counters (FORMAT.md 1.3.2), for the same views.
#[cfg(any(feature = "export", feature = "analysis", test))]
#[cfg_attr(not(all(feature = "export", feature = "analysis")), allow(dead_code))]
pub(crate) mod counters;
// Flows (FORMAT.md 1.3.3), for the same views.
#[cfg(any(feature = "export", feature = "analysis", test))]
#[cfg_attr(not(all(feature = "export", feature = "analysis")), allow(dead_code))]
pub(crate) mod flows;
pub use error::CatalogError;

use crate::{ClassId, EventId};

pub use qtrace_core::classes::{MAX_ARGS, MAX_DESCRIPTION_LEN, MAX_NAME_LEN};

/// One event's description: number, class, name, one line of text, and the
/// names of the arguments it uses (0 to 2).
///
/// ```
/// use qtrace::classes::{system, Catalog};
///
/// let catalog = Catalog::builtin();
/// let info = catalog.event(system::SCHEDULE).unwrap();
/// assert_eq!((info.id, info.class), (system::SCHEDULE, system::CLASS));
/// assert_eq!(info.name, "schedule");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventInfo {
    /// The event number.
    pub id: EventId,
    /// The class it belongs to.
    pub class: ClassId,
    /// Short name, such as `schedule`.
    pub name: String,
    /// One-line description.
    pub description: String,
    /// Names of the arguments in `args[0]`, `args[1]` (unused slots are absent).
    pub args: Vec<String>,
}

/// One class's description. Its events are numbered consecutively.
///
/// ```
/// use qtrace::classes::{user, Catalog};
///
/// let catalog = Catalog::builtin();
/// let info = catalog.class(user::CLASS).unwrap();
/// assert_eq!(info.name, "user");
/// assert_eq!(info.event_count, 8);
/// assert!(info.contains(user::USER7));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassInfo {
    /// The class number.
    pub id: ClassId,
    /// Short name, such as `system`.
    pub name: String,
    /// One-line description.
    pub description: String,
    /// The first event of the class.
    pub first_event: EventId,
    /// How many events the class has.
    pub event_count: u16,
}

impl ClassInfo {
    /// The events of this class, in order.
    pub fn events(&self) -> impl Iterator<Item = EventId> {
        let first = self.first_event.0;
        (first..first + self.event_count).map(EventId)
    }

    /// Whether `id` belongs to this class.
    pub fn contains(&self, id: EventId) -> bool {
        id.0 >= self.first_event.0 && id.0 < self.first_event.0 + self.event_count
    }
}

/// The description of a user-defined class, built at phase 1 and handed to
/// [`Catalog::define`] (or [`Tracer::define_class`](crate::Tracer::define_class)).
///
/// Names are ASCII identifiers-like strings of at most [`MAX_NAME_LEN`] bytes;
/// each event has at most [`MAX_ARGS`] named arguments.
///
/// ```
/// use qtrace::classes::ClassSpec;
///
/// let spec = ClassSpec::new("net", "network stack")
///     .event("rx", "a packet arrived", &["len", "port"])
///     .event("tx", "a packet left", &["len", "port"]);
/// let tracer = qtrace::Tracer::new();
/// let net = tracer.define_class(spec)?;
/// assert!(net.event("tx").is_some());
/// # Ok::<(), qtrace::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct ClassSpec {
    name: String,
    description: String,
    events: Vec<(String, String, Vec<String>)>,
}

impl ClassSpec {
    /// Starts a class with a name and a one-line description.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        ClassSpec {
            name: name.into(),
            description: description.into(),
            events: Vec::new(),
        }
    }

    /// Adds an event with its one-line description and argument names (0–2).
    pub fn event(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        args: &[&str],
    ) -> Self {
        self.events.push((
            name.into(),
            description.into(),
            args.iter().map(|s| s.to_string()).collect(),
        ));
        self
    }
}

impl ClassSpec {
    /// Adds a counter (FORMAT.md 1.3.2): one event `NAME.counter` whose
    /// argument names are the kind (`u64`, `i64`, `f64`) and the unit (none
    /// when `unit` is empty). Log its values with
    /// [`Tracer::log_counter`](crate::Tracer::log_counter), after
    /// [`Catalog::counter`] found it.
    ///
    /// ```
    /// use qtrace::classes::{Catalog, ClassSpec};
    /// use qtrace::macros::CounterKind;
    ///
    /// let mut catalog = Catalog::builtin();
    /// let cpu = catalog.define(ClassSpec::new("cpu", "the CPUs").counter("freq", "clock", CounterKind::F64, "MHz"))?;
    /// let freq = cpu.event("freq.counter").unwrap();
    /// assert_eq!(catalog.event(freq).unwrap().args, ["f64", "MHz"]);
    /// assert_eq!(catalog.counter_of(freq), Some((CounterKind::F64, "MHz")));
    /// # Ok::<(), qtrace::classes::CatalogError>(())
    /// ```
    pub fn counter(
        self,
        name: &str,
        description: impl Into<String>,
        kind: qtrace_core::classes::counter::CounterKind,
        unit: &str,
    ) -> Self {
        let name = format!("{name}{}", qtrace_core::classes::counter::COUNTER_SUFFIX);
        if unit.is_empty() {
            self.event(name, description, &[kind.name()])
        } else {
            self.event(name, description, &[kind.name(), unit])
        }
    }
}

impl ClassSpec {
    /// Adds a flow (FORMAT.md 1.3.3): three events `NAME.flow_begin`,
    /// `NAME.flow_step` and `NAME.flow_end`, each with the argument names
    /// `flow` and `origin`. Log them with
    /// [`Tracer::flow_begin`](crate::Tracer::flow_begin) and its kin, after
    /// [`Catalog::flow`] found it.
    ///
    /// ```
    /// use qtrace::classes::{Catalog, ClassSpec};
    /// use qtrace::macros::FlowPhase;
    ///
    /// let mut catalog = Catalog::builtin();
    /// let net = catalog.define(ClassSpec::new("net", "the network").flow("packet", "a packet"))?;
    /// let flow = catalog.flow("net:packet").unwrap();
    /// assert_eq!(net.event("packet.flow_step"), Some(flow.step()));
    /// assert_eq!(catalog.flow_of(flow.end()), Some(("packet", FlowPhase::End)));
    /// # Ok::<(), qtrace::classes::CatalogError>(())
    /// ```
    pub fn flow(self, name: &str, description: &str) -> Self {
        use qtrace_core::classes::flow::{FlowPhase, FLOW_ARGS};
        self.event(
            format!("{name}{}", FlowPhase::Begin.suffix()),
            description.to_string(),
            &FLOW_ARGS,
        )
        .event(
            format!("{name}{}", FlowPhase::Step.suffix()),
            format!("step: {description}"),
            &FLOW_ARGS,
        )
        .event(
            format!("{name}{}", FlowPhase::End.suffix()),
            format!("end: {description}"),
            &FLOW_ARGS,
        )
    }
}

/// What [`Catalog::define`] hands back: the class number and its events' numbers.
///
/// ```
/// use qtrace::classes::ClassSpec;
///
/// let tracer = qtrace::Tracer::new();
/// let net: qtrace::classes::DefinedClass =
///     tracer.define_class(ClassSpec::new("net", "network").event("rx", "received", &[]))?;
/// assert_eq!(net.id, qtrace::ClassId::FIRST_USER_DEFINED);
/// assert_eq!(net.event("rx"), Some(qtrace::EventId::FIRST_USER_DEFINED));
/// assert_eq!(net.event("nope"), None);
/// # Ok::<(), qtrace::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DefinedClass {
    /// The class number.
    pub id: ClassId,
    /// `(name, id)` of every event, in definition order.
    pub events: Vec<(String, EventId)>,
}

impl DefinedClass {
    /// The id of the event called `name`.
    pub fn event(&self, name: &str) -> Option<EventId> {
        self.events
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, id)| *id)
    }
}

/// Checks a name: non-empty, at most [`MAX_NAME_LEN`] bytes, `[A-Za-z0-9_.-]`.
pub(crate) fn validate_name(what: &'static str, name: &str) -> Result<(), CatalogError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.');
    if ok {
        Ok(())
    } else {
        Err(CatalogError::InvalidName {
            what,
            name: name.to_string(),
        })
    }
}

/// Checks a description: at most [`MAX_DESCRIPTION_LEN`] bytes, one line.
pub(crate) fn validate_description(name: &str, text: &str) -> Result<(), CatalogError> {
    if text.len() <= MAX_DESCRIPTION_LEN && !text.contains(['\n', '\r']) {
        Ok(())
    } else {
        Err(CatalogError::InvalidDescription {
            name: name.to_string(),
        })
    }
}

/// The table of every class and event a tracer (or a trace file) knows.
///
/// ```
/// use qtrace::classes::Catalog;
///
/// let catalog = qtrace::Tracer::new().catalog();
/// assert_eq!(catalog.event_count(), Catalog::builtin().event_count());
/// assert_eq!(catalog.class_by_name("system").unwrap().id, qtrace::ClassId::SYSTEM);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Catalog {
    classes: Vec<ClassInfo>,
    /// Indexed by event number: dense, so lookups are O(1).
    events: Vec<EventInfo>,
}

impl Default for Catalog {
    fn default() -> Self {
        Catalog::builtin()
    }
}

impl Catalog {
    /// The five built-in classes and their 23 events, numbered as in S.Ha.R.K.
    ///
    /// ```
    /// use qtrace::classes::{system, Catalog};
    ///
    /// let catalog = Catalog::builtin();
    /// assert_eq!(catalog.class_of(system::SCHEDULE), Some(system::CLASS));
    /// assert_eq!(catalog.event_name(system::SCHEDULE), Some("schedule"));
    /// ```
    pub fn builtin() -> Self {
        let mut catalog = Catalog {
            classes: Vec::new(),
            events: Vec::new(),
        };
        for class in &qtrace_core::classes::BUILTIN {
            let (id, events) = (class.id, class.events);
            catalog.classes.push(ClassInfo {
                id,
                name: class.name.to_string(),
                description: class.description.to_string(),
                first_event: events[0].id,
                event_count: events.len() as u16,
            });
            for e in events {
                debug_assert_eq!(e.id.0 as usize, catalog.events.len());
                catalog.events.push(EventInfo {
                    id: e.id,
                    class: id,
                    name: e.name.to_string(),
                    description: e.description.to_string(),
                    args: e.args.iter().map(|s| s.to_string()).collect(),
                });
            }
        }
        catalog
    }

    /// Builds a catalog from explicit tables (what a trace file's header holds),
    /// checking that it is consistent: classes numbered 0, 1, 2, …; each class's
    /// events consecutive, in class order, starting at event 0; names valid.
    ///
    /// # Errors
    ///
    /// [`CatalogError::InconsistentCatalog`] if the tables are out of order or
    /// do not fit each other (the message says where);
    /// [`CatalogError::InvalidName`] for an invalid class or event name.
    ///
    /// ```
    /// use qtrace::classes::Catalog;
    ///
    /// let builtin = Catalog::builtin();
    /// let copy = Catalog::from_parts(builtin.classes().to_vec(), builtin.events().to_vec())?;
    /// assert_eq!(copy.event_count(), builtin.event_count());
    /// # Ok::<(), qtrace::classes::CatalogError>(())
    /// ```
    pub fn from_parts(
        classes: Vec<ClassInfo>,
        events: Vec<EventInfo>,
    ) -> Result<Self, CatalogError> {
        let mut next_event = 0u32;
        for (i, c) in classes.iter().enumerate() {
            if c.id.0 as usize != i || c.first_event.0 as u32 != next_event {
                return Err(CatalogError::InconsistentCatalog {
                    reason: format!("class {} ({}) is out of order", c.id, c.name),
                });
            }
            validate_name("class", &c.name)?;
            next_event += c.event_count as u32;
        }
        if next_event as usize != events.len() || events.len() > EventId::MAX_EVENTS {
            return Err(CatalogError::InconsistentCatalog {
                reason: format!(
                    "the classes cover {next_event} events but the table lists {}",
                    events.len()
                ),
            });
        }
        if classes.len() > ClassId::MAX_CLASSES {
            return Err(CatalogError::InconsistentCatalog {
                reason: format!(
                    "{} classes (at most {})",
                    classes.len(),
                    ClassId::MAX_CLASSES
                ),
            });
        }
        for (i, e) in events.iter().enumerate() {
            let class_ok = classes
                .get(e.class.0 as usize)
                .is_some_and(|c| c.contains(e.id));
            if e.id.0 as usize != i || !class_ok || e.args.len() > MAX_ARGS {
                return Err(CatalogError::InconsistentCatalog {
                    reason: format!("event {} ({}) does not fit its class", e.id, e.name),
                });
            }
            validate_name("event", &e.name)?;
        }
        Ok(Catalog { classes, events })
    }

    /// Adds a user-defined class; its events are numbered after every event
    /// defined so far.
    ///
    /// # Errors
    ///
    /// [`CatalogError::InvalidName`], [`CatalogError::InvalidDescription`],
    /// [`CatalogError::DuplicateName`], [`CatalogError::EmptyClass`],
    /// [`CatalogError::TooManyClasses`], [`CatalogError::TooManyEvents`] or
    /// [`CatalogError::TooManyArgs`]: the message names the offending name or
    /// limit.
    ///
    /// ```
    /// use qtrace::classes::{Catalog, ClassSpec};
    ///
    /// let mut catalog = Catalog::builtin();
    /// let disk = catalog.define(ClassSpec::new("disk", "block device").event("read", "a read", &["block"]))?;
    /// assert_eq!(catalog.class(disk.id).unwrap().name, "disk");
    /// // The same name twice is an error.
    /// assert!(catalog.define(ClassSpec::new("disk", "again").event("x", "", &[])).is_err());
    /// # Ok::<(), qtrace::classes::CatalogError>(())
    /// ```
    pub fn define(&mut self, spec: ClassSpec) -> Result<DefinedClass, CatalogError> {
        validate_name("class", &spec.name)?;
        validate_description(&spec.name, &spec.description)?;
        if self.classes.iter().any(|c| c.name == spec.name) {
            return Err(CatalogError::DuplicateName {
                what: "class",
                name: spec.name,
            });
        }
        if spec.events.is_empty() {
            return Err(CatalogError::EmptyClass { name: spec.name });
        }
        if self.classes.len() >= ClassId::MAX_CLASSES {
            return Err(CatalogError::TooManyClasses {
                max: ClassId::MAX_CLASSES,
            });
        }
        if self.events.len() + spec.events.len() > EventId::MAX_EVENTS {
            return Err(CatalogError::TooManyEvents {
                max: EventId::MAX_EVENTS,
            });
        }
        for (i, (name, description, args)) in spec.events.iter().enumerate() {
            validate_name("event", name)?;
            validate_description(name, description)?;
            if spec.events[..i].iter().any(|(n, _, _)| n == name) {
                return Err(CatalogError::DuplicateName {
                    what: "event",
                    name: name.clone(),
                });
            }
            if args.len() > MAX_ARGS {
                return Err(CatalogError::TooManyArgs {
                    event: name.clone(),
                    max: MAX_ARGS,
                });
            }
            for (k, a) in args.iter().enumerate() {
                validate_name("argument", a)?;
                if args[..k].contains(a) {
                    return Err(CatalogError::DuplicateName {
                        what: "argument",
                        name: a.clone(),
                    });
                }
            }
        }
        let id = ClassId(self.classes.len() as u16);
        let first = EventId(self.events.len() as u16);
        let mut defined = DefinedClass {
            id,
            events: Vec::with_capacity(spec.events.len()),
        };
        for (name, description, args) in spec.events {
            let eid = EventId(self.events.len() as u16);
            defined.events.push((name.clone(), eid));
            self.events.push(EventInfo {
                id: eid,
                class: id,
                name,
                description,
                args,
            });
        }
        self.classes.push(ClassInfo {
            id,
            name: spec.name,
            description: spec.description,
            first_event: first,
            event_count: defined.events.len() as u16,
        });
        Ok(defined)
    }

    /// Adds the user classes of `catalog` (declared by
    /// [`classes!`](crate::classes!)) with the ids they were given at compile
    /// time. A class already defined identically is left as it is, so
    /// defining one catalog twice is harmless; nothing is added on error.
    ///
    /// ```
    /// use qtrace::classes::{Catalog, ClassSpec};
    /// qtrace::classes! {
    ///     pub static CATALOG;
    ///     pub mod net: "network stack" {
    ///         event RX = "rx": "a packet was received" (len);
    ///     }
    /// }
    /// let mut catalog = Catalog::builtin();
    /// catalog.define_static(&CATALOG)?;
    /// catalog.define_static(&CATALOG)?; // the same again: nothing changes
    /// assert_eq!(catalog.event_name(net::RX.id()), Some("rx"));
    ///
    /// // Id 5 taken by a run-time class first: a typed error.
    /// let mut other = Catalog::builtin();
    /// other.define(ClassSpec::new("disk", "block device").event("read", "", &[]))?;
    /// assert!(other.define_static(&CATALOG).is_err());
    /// # Ok::<(), qtrace::classes::CatalogError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`CatalogError::IdTaken`] when a class's id is already another
    /// class, or the same class with other events, names, descriptions or
    /// argument names.
    pub fn define_static(
        &mut self,
        catalog: &qtrace_core::StaticCatalog,
    ) -> Result<(), CatalogError> {
        let mut next = self.clone();
        for class in catalog.user_classes() {
            let index = class.id.0 as usize;
            if let Some(existing) = next.classes.get(index) {
                let same = existing.name == class.name
                    && existing.description == class.description
                    && existing.event_count as usize == class.events.len()
                    && class.events.iter().all(|e| {
                        next.event(e.id).is_some_and(|have| {
                            have.class == class.id
                                && have.name == e.name
                                && have.description == e.description
                                && have
                                    .args
                                    .iter()
                                    .map(String::as_str)
                                    .eq(e.args.iter().copied())
                        })
                    });
                if same {
                    continue;
                }
                return Err(CatalogError::IdTaken {
                    name: class.name.to_string(),
                    id: class.id,
                    taken_by: existing.name.clone(),
                });
            }
            // `StaticCatalog::new` numbered the classes from 5 and their
            // events from 0x17 consecutively, so a class not yet defined is
            // the next one, its first event the next event.
            let mut spec = ClassSpec::new(class.name, class.description);
            for e in class.events {
                spec = spec.event(e.name, e.description, e.args);
            }
            let defined = next.define(spec)?;
            if defined.id != class.id
                || defined.events.first().map(|e| e.1) != Some(class.events[0].id)
            {
                return Err(CatalogError::InconsistentCatalog {
                    reason: format!("class {} does not follow the classes before it", class.name),
                });
            }
        }
        *self = next;
        Ok(())
    }

    /// Every class, in number order.
    pub fn classes(&self) -> &[ClassInfo] {
        &self.classes
    }

    /// Every event, in number order.
    pub fn events(&self) -> &[EventInfo] {
        &self.events
    }

    /// How many events are defined (ids `0..len`).
    pub fn event_count(&self) -> usize {
        self.events.len()
    }

    /// The description of an event, if it exists.
    pub fn event(&self, id: EventId) -> Option<&EventInfo> {
        self.events.get(id.0 as usize)
    }

    /// The description of a class, if it exists.
    pub fn class(&self, id: ClassId) -> Option<&ClassInfo> {
        self.classes.get(id.0 as usize)
    }

    /// The class of an event (O(1)), as S.Ha.R.K.'s `event_class`.
    pub fn class_of(&self, id: EventId) -> Option<ClassId> {
        self.event(id).map(|e| e.class)
    }

    /// The name of an event, as S.Ha.R.K.'s `event_name`.
    pub fn event_name(&self, id: EventId) -> Option<&str> {
        self.event(id).map(|e| e.name.as_str())
    }

    /// The kind and unit (`""` for none) of a counter event (FORMAT.md
    /// 1.3.2: its name ends in `.counter`, its first argument name is a
    /// kind); `None` for any other event.
    pub fn counter_of(
        &self,
        id: EventId,
    ) -> Option<(qtrace_core::classes::counter::CounterKind, &str)> {
        let e = self.event(id)?;
        if !e
            .name
            .ends_with(qtrace_core::classes::counter::COUNTER_SUFFIX)
            || e.name.len() == qtrace_core::classes::counter::COUNTER_SUFFIX.len()
        {
            return None;
        }
        qtrace_core::classes::counter::CounterKind::from_arg_names(&e.args)
    }

    /// The counter `class:name` (its event `name.counter`), if the catalog
    /// has it with values of type `T`; log with
    /// [`Tracer::log_counter`](crate::Tracer::log_counter).
    pub fn counter<T: qtrace_core::classes::counter::CounterValue>(
        &self,
        name: &str,
    ) -> Option<qtrace_core::classes::counter::StaticCounter<T>> {
        let (class, stem) = name.split_once(':')?;
        let full = format!(
            "{class}:{stem}{}",
            qtrace_core::classes::counter::COUNTER_SUFFIX
        );
        let id = self.event_by_name(&full)?.id;
        let (kind, _) = self.counter_of(id)?;
        (kind == T::KIND).then(|| qtrace_core::classes::counter::StaticCounter::__new(id))
    }

    /// The stem `S` and phase of a flow event (FORMAT.md 1.3.3: its name is
    /// `S.flow_begin`, `S.flow_step` or `S.flow_end`, its argument names
    /// `flow` and `origin`); `None` for any other event.
    pub fn flow_of(&self, id: EventId) -> Option<(&str, qtrace_core::classes::flow::FlowPhase)> {
        let e = self.event(id)?;
        if e.args != qtrace_core::classes::flow::FLOW_ARGS {
            return None;
        }
        qtrace_core::classes::flow::FlowPhase::from_name(&e.name)
    }

    /// The flow `class:name`, if the catalog has its three events at
    /// consecutive numbers (as [`ClassSpec::flow`] and `classes!` declare
    /// them); log with [`Tracer::flow_begin`](crate::Tracer::flow_begin).
    pub fn flow(&self, name: &str) -> Option<qtrace_core::classes::flow::StaticFlow> {
        use qtrace_core::classes::flow::{FlowPhase, StaticFlow};
        let id = |p: FlowPhase| {
            let e = self.event_by_name(&format!("{name}{}", p.suffix()))?.id;
            (self.flow_of(e)?.1 == p).then_some(e)
        };
        let begin = id(FlowPhase::Begin)?;
        let flow = StaticFlow::__new(begin);
        (id(FlowPhase::Step)? == flow.step() && id(FlowPhase::End)? == flow.end()).then_some(flow)
    }

    /// Finds a class by name.
    pub fn class_by_name(&self, name: &str) -> Option<&ClassInfo> {
        self.classes.iter().find(|c| c.name == name)
    }

    /// Finds an event by name (`name` or `class:name`; the first match wins for
    /// a bare name).
    pub fn event_by_name(&self, name: &str) -> Option<&EventInfo> {
        if let Some((class, event)) = name.split_once(':') {
            let c = self.class_by_name(class)?;
            return c
                .events()
                .filter_map(|id| self.event(id))
                .find(|e| e.name == event);
        }
        self.events.iter().find(|e| e.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_numbering_matches_shark() {
        let c = Catalog::builtin();
        assert_eq!(c.event_count(), 0x17);
        let names: Vec<_> = c.events().iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "reserved",
                "hoops",
                "create",
                "activate",
                "schedule",
                "delay",
                "sleep",
                "endcycle",
                "destroy",
                "intactivation",
                "disable",
                "user0",
                "user1",
                "user2",
                "user3",
                "user4",
                "user5",
                "user6",
                "user7",
                "interrupt",
                "wait",
                "waitnb",
                "signal"
            ]
        );
        for e in c.events() {
            assert_eq!(
                qtrace_core::classes::builtin_class_of(e.id),
                Some(e.class),
                "{}",
                e.name
            );
            assert!(!e.description.is_empty());
        }
        assert_eq!(qtrace_core::classes::builtin_class_of(EventId(0x17)), None);
        assert_eq!(c.class_of(EventId(0x17)), None);
    }

    #[test]
    fn user_classes_number_after_builtins() {
        let mut c = Catalog::builtin();
        let a = c
            .define(
                ClassSpec::new("a", "first")
                    .event("x", "x", &[])
                    .event("y", "y", &["v"]),
            )
            .unwrap();
        let b = c
            .define(ClassSpec::new("b", "second").event("z", "z", &["p", "q"]))
            .unwrap();
        assert_eq!(a.id, ClassId::FIRST_USER_DEFINED);
        assert_eq!(a.event("x"), Some(EventId(0x17)));
        assert_eq!(a.event("y"), Some(EventId(0x18)));
        assert_eq!(b.id, ClassId(6));
        assert_eq!(b.event("z"), Some(EventId(0x19)));
        assert_eq!(c.class_of(EventId(0x19)), Some(ClassId(6)));
        assert_eq!(c.event_by_name("b:z").unwrap().id, EventId(0x19));
        // The result is a consistent catalog.
        let copy = Catalog::from_parts(c.classes().to_vec(), c.events().to_vec()).unwrap();
        assert_eq!(copy, c);
    }

    #[test]
    fn bad_specs_are_typed_errors() {
        let mut c = Catalog::builtin();
        let dup = c.define(ClassSpec::new("system", "again").event("x", "x", &[]));
        assert!(matches!(
            dup,
            Err(CatalogError::DuplicateName { what: "class", .. })
        ));
        let empty = c.define(ClassSpec::new("e", "no events"));
        assert!(matches!(empty, Err(CatalogError::EmptyClass { .. })));
        let args = c.define(ClassSpec::new("t", "t").event("x", "x", &["a", "b", "c"]));
        assert!(matches!(args, Err(CatalogError::TooManyArgs { .. })));
        let name = c.define(ClassSpec::new("has space", "t").event("x", "x", &[]));
        assert!(matches!(name, Err(CatalogError::InvalidName { .. })));
        let dup_ev = c.define(
            ClassSpec::new("d", "t")
                .event("x", "x", &[])
                .event("x", "x", &[]),
        );
        assert!(matches!(
            dup_ev,
            Err(CatalogError::DuplicateName { what: "event", .. })
        ));
        // Nothing was added by the failed attempts.
        assert_eq!(c, Catalog::builtin());
    }
}
