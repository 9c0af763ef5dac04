//! The router: the [`Tracer`](tracer::Tracer) (routing tables, masks, the hot
//! path, the queues' lifecycle), the registry of queue types and routes
//! (`registry.rs`), and the save of the queues' contents when the program
//! panics (`panic_save.rs`).

pub(crate) mod panic_save;
pub(crate) mod registry;
pub mod scope;
pub(crate) mod tracer;
