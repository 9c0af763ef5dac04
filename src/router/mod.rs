//! The router: the [`Tracer`](tracer::Tracer) (routing tables, masks, the hot
//! path, the queues' lifecycle), the registry of queue types and routes
//! (`registry.rs`), the save of the queues' contents when the program
//! panics (`panic_save.rs`), and what a tracer does in a forked child
//! (`fork.rs`).

pub(crate) mod fork;
pub(crate) mod panic_save;
pub(crate) mod registry;
pub mod scope;
pub(crate) mod tracer;
