//! Flows (FORMAT.md 1.3.3): what passes from one place of a program to
//! another (a request from a thread to a worker, a message from a CPU to
//! another). A flow `S` is three events, `S.flow_begin`, `S.flow_step` and
//! `S.flow_end`, each with the two argument names `flow` and `origin`: a
//! record's `arg0` is the flow's id and its `arg1` the *origin*, the source
//! that began it. One instance of a flow is the pair (origin, id), so ids
//! that many sources (threads, CPUs, senders) choose on their own never
//! collide. Only names say so: the class table's bytes and the 32-byte
//! record are unchanged.
//!
//! ```
//! use qtrace_core::classes::flow::{FlowId, FlowPhase, StaticFlow};
//! use qtrace_core::EventId;
//!
//! let f = StaticFlow::__new(EventId(0x17));
//! assert_eq!((f.begin(), f.step(), f.end()), (EventId(0x17), EventId(0x18), EventId(0x19)));
//! let id = FlowId::new(3, 42); // begun by source 3, its id 42
//! assert_eq!(id.args(), [42, 3]);
//! assert_eq!(FlowId::from_args([42, 3]), id);
//! assert_eq!(FlowPhase::from_name("req.flow_step"), Some(("req", FlowPhase::Step)));
//! assert_eq!(FlowPhase::from_name(".flow_end"), None);
//! ```

use crate::EventId;

/// The argument names of every flow event: the id, then the origin.
pub const FLOW_ARGS: [&str; 2] = ["flow", "origin"];

/// The three events of a flow, in the order `classes!` numbers them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FlowPhase {
    /// `S.flow_begin`: the flow starts here.
    Begin,
    /// `S.flow_step`: the flow passes here (any number of times).
    Step,
    /// `S.flow_end`: the flow ends here.
    End,
}

impl FlowPhase {
    /// The event name's suffix: `.flow_begin`, `.flow_step` or `.flow_end`.
    pub const fn suffix(self) -> &'static str {
        match self {
            FlowPhase::Begin => ".flow_begin",
            FlowPhase::Step => ".flow_step",
            FlowPhase::End => ".flow_end",
        }
    }

    /// The stem and phase an event name says (`S.flow_begin` → `(S,
    /// Begin)`; the stem is not empty); `None` for any other name.
    pub fn from_name(name: &str) -> Option<(&str, Self)> {
        [FlowPhase::Begin, FlowPhase::Step, FlowPhase::End]
            .into_iter()
            .find_map(|p| {
                let stem = name.strip_suffix(p.suffix())?;
                (!stem.is_empty()).then_some((stem, p))
            })
    }
}

/// One instance of a flow: the source that began it and the id it chose.
/// Pass it along with what flows (a request, a message) so that the step
/// and end records name the same instance wherever they are logged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowId {
    /// The source (thread, CPU) that began the flow: the id's namespace.
    pub origin: u32,
    /// The id, chosen by the origin (unique among its open flows).
    pub id: u64,
}

impl FlowId {
    /// The instance `id` of source `origin`.
    pub const fn new(origin: u32, id: u64) -> Self {
        FlowId { origin, id }
    }

    /// A flow record's arguments: `[id, origin]`.
    #[inline(always)]
    pub const fn args(self) -> [u64; 2] {
        [self.id, self.origin as u64]
    }

    /// The instance a flow record's arguments name (an `origin` past
    /// `u32::MAX` keeps its low 32 bits).
    pub const fn from_args(args: [u64; 2]) -> Self {
        FlowId {
            origin: args[1] as u32,
            id: args[0],
        }
    }
}

/// A flow declared by `qtrace::classes!` (`flow NAME = "name":
/// "description" ();`): three consecutive events, `NAME.flow_begin`,
/// `NAME.flow_step` and `NAME.flow_end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StaticFlow {
    begin: EventId,
}

impl StaticFlow {
    /// Used by `qtrace::classes!` and catalogs that checked the names; not
    /// part of the API.
    #[doc(hidden)]
    pub const fn __new(begin: EventId) -> Self {
        StaticFlow { begin }
    }

    /// The `NAME.flow_begin` event.
    #[inline(always)]
    pub const fn begin(self) -> EventId {
        self.begin
    }

    /// The `NAME.flow_step` event (the next number).
    #[inline(always)]
    pub const fn step(self) -> EventId {
        EventId(self.begin.0 + 1)
    }

    /// The `NAME.flow_end` event (the number after the step).
    #[inline(always)]
    pub const fn end(self) -> EventId {
        EventId(self.begin.0 + 2)
    }

    /// The event of `phase`.
    #[inline(always)]
    pub const fn event(self, phase: FlowPhase) -> EventId {
        match phase {
            FlowPhase::Begin => self.begin(),
            FlowPhase::Step => self.step(),
            FlowPhase::End => self.end(),
        }
    }
}

/// What woke a task, in a flow the analysis derives from the built-in
/// classes (no flow event is logged for it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WakeCause {
    /// A `semaphore:signal` of task `by` on semaphore `sem` released it.
    Signal {
        /// The semaphore.
        sem: u64,
        /// The task that signalled.
        by: u64,
    },
    /// Interrupt `irq`'s handler activated it (`system:activate`).
    Interrupt {
        /// The interrupt number.
        irq: u64,
    },
}

/// A derived flow: from what woke a task to its next `system:schedule`.
/// Its wake-up latency is `to_ns - from_ns`.
///
/// ```
/// use qtrace_core::classes::flow::{WakeCause, WakeFlow};
///
/// let f = WakeFlow {
///     task: 4,
///     cause: WakeCause::Interrupt { irq: 9 },
///     from_ns: 1_000,
///     from_source: 0,
///     to_ns: 1_250,
///     to_source: 1,
///     lossy: false,
/// };
/// assert_eq!(f.latency_ns(), 250);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WakeFlow {
    /// The task woken.
    pub task: u64,
    /// What woke it.
    pub cause: WakeCause,
    /// The time of the signal, or of the interrupt.
    pub from_ns: u64,
    /// The source that logged the signal or the interrupt.
    pub from_source: u32,
    /// The time of the task's next `system:schedule`.
    pub to_ns: u64,
    /// The source it was scheduled on.
    pub to_source: u32,
    /// Whether events were lost between the two (its latency is then left
    /// out of the figures).
    pub lossy: bool,
}

impl WakeFlow {
    /// The wake-up latency: schedule time minus wake time (0 if the times
    /// go back).
    pub const fn latency_ns(&self) -> u64 {
        self.to_ns.saturating_sub(self.from_ns)
    }
}
