//! What the scheduler did, computed from the model's own events: per task,
//! per CPU (source), per interrupt, and latencies between any two events.
//!
//! Feed an [`Analyzer`] the events of a run in time order (merged files: see
//! [`MergedReader`](crate::reader::MergedReader)) and [`Analyzer::finish`] it into a
//! [`Report`]. The analysis reads the built-in classes as S.Ha.R.K. defines
//! them:
//!
//! - a task **runs** on a source (CPU) from its `system:schedule` on that
//!   source until the next `system:schedule` on the same source, or until the
//!   task itself logs `endcycle`, `delay`, `sleep`, `disable` or `destroy`,
//!   whichever comes first; a source on which no task runs is **idle**;
//! - a task is **preempted** when another task is scheduled on its source
//!   while its current job (since `activate`) has not ended (`endcycle`);
//! - a job's **response time** runs from its `activate` to its `endcycle`
//!   (activations that arrive while jobs are pending queue, first in first
//!   out);
//! - a task is **blocked on a semaphore** from its `semaphore:wait` until it
//!   is scheduled again, if it lost its source in between (a wait that did
//!   not block costs nothing);
//! - an **interrupt** is handled from its `lowlevel:interrupt` until the next
//!   event of the same source, at most [`AnalysisOptions::interrupt_max_ns`]
//!   (as the exports draw it);
//! - a **scope** runs from an `S.begin` to the `S.end` that closes it on the
//!   same source (FORMAT.md 1.3.1, as the exports draw it): per scope
//!   (`class:S`), how many ended, their durations, how many ended with a
//!   non-zero code, and how many ended without their end event;
//! - a **wake-up flow** runs from what woke a task to the task's next
//!   `system:schedule` (on any source), and its length is the task's
//!   *wake-up latency*. Two causes are derived, with no event of their own:
//!   - a `semaphore:signal` on semaphore S releases the task that has
//!     waited longest on S (`semaphore:wait`) and is blocked there: it lost
//!     its source since its wait and has not been scheduled again (the
//!     signalling task itself is never released by its own signal);
//!   - an interrupt wakes every task `system:activate`d on the interrupt's
//!     source after it, before that source's next `system:schedule` and at
//!     most [`AnalysisOptions::interrupt_max_ns`] after the interrupt.
//!
//!   A task that is running (on a source) is not woken, and a task already
//!   woken keeps its first wake until it is scheduled.
//!
//! # Losses
//!
//! A measured interval (a running span, a job, a blocked span, a latency)
//! during which the trace says events were lost (a hoops record with a time
//! inside it) may be wrong: it is *not* added to the figures; it is counted
//! apart (`lossy`) so that the report shows how many measures a loss spoiled,
//! never an average over them.
//!
//! ```
//! use qtrace::analysis::{AnalysisOptions, Analyzer};
//! use qtrace::classes::{system, Catalog};
//! use qtrace::Event;
//!
//! let catalog = Catalog::builtin();
//! let mut a = Analyzer::new(&catalog, AnalysisOptions::default());
//! for e in [
//!     Event::new(0, system::ACTIVATE, 0, [1, 0]),
//!     Event::new(100, system::SCHEDULE, 0, [1, 0]),
//!     Event::new(400, system::ENDCYCLE, 0, [1, 0]),
//! ] {
//!     a.push(&e);
//! }
//! let report = a.finish();
//! let task = &report.tasks[&1];
//! assert_eq!((task.activations, task.cpu_ns, task.response.summary().max), (1, 300, 400));
//! ```
//!
//! In this folder: what to look for (`options.rs`), the state machine
//! (`analyzer.rs`), what it found (`report.rs`) and the samples and their
//! summaries (`summary.rs`).

mod analyzer;
mod id_map;
mod id_set;
mod options;
mod report;
mod summary;

use std::collections::{BTreeMap, HashMap, VecDeque};

#[cfg(feature = "export")]
pub(crate) use analyzer::measured;
pub use analyzer::Analyzer;
pub use options::{AnalysisOptions, LatencySpec, MatchKey};
/// A derived wake-up flow and its cause ([`Report::wake_flows`]; the no_std
/// core's types).
#[doc(no_inline)]
pub use qtrace_core::classes::flow::{WakeCause, WakeFlow};
pub use report::{CpuReport, IrqReport, LatencyReport, Report, ScopeReport, TaskReport};
pub use summary::{Samples, Summary};

use crate::classes::scopes::{ScopeTable, ScopeTracker, Step};
use crate::classes::{lowlevel, semaphore, system, tracer, Catalog};

/// Most scopes open at once on one source that the analysis follows.
const MAX_SCOPE_DEPTH: usize = 256;
use crate::{Event, EventId};

/// Maps keyed by task, source and interrupt numbers, looked up on every
/// event: FxHash (one multiplication) instead of SipHash's rounds. Keys come
/// from the trace, so a hostile trace could make a map slow, never wrong.
type BuildIdHasher = rustc_hash::FxBuildHasher;

/// Most sources with a pending interrupt that [`Analyzer`] lists apart from
/// its map of sources (see `Analyzer::irq_sources`).
const IRQ_LIST: usize = 8;

/// Most activations waiting for their `endcycle`, per task (past this the
/// oldest is dropped and counted in [`TaskReport::unmatched`]).
const MAX_PENDING: usize = 4096;

/// Most wake-up flows [`Report::wake_flows`] lists.
const MAX_WAKE_FLOWS: usize = 1 << 20;
