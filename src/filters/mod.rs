//! Filters, gates and triggers: queues that sit in front of another queue
//! and decide, per event, whether it goes on (`filter.rs`), whether the
//! queue behind is open (`gate.rs`), or what an event sets off — start,
//! stop, snapshot (`trigger.rs`; the snapshot's request and the task that
//! writes it, `snapshot.rs`).

pub(crate) mod filter;
pub(crate) mod gate;
pub(crate) mod snapshot;
pub(crate) mod trigger;

pub use filter::{Filter, FilterQueue};
pub use gate::GateQueue;
pub use snapshot::Snapshot;
pub use trigger::{Action, Scope, Trigger, TriggerQueue};
