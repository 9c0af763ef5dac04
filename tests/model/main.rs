//! The tracer's model: events, classes and routing, compile-time classes
//! (`classes!`, `event!`, scopes), errors and their messages,
//! filters and triggers, catalogs, the clock, the no_std core.
//!
//! One test binary, one module per file (tests/README.md is the map).

#[path = "../common/mod.rs"]
mod common;

mod catalog_at_activate;
mod clock_drift;
mod core_custom_queue;
mod core_dump;
mod core_errors;
mod core_foreign_ids;
mod core_model;
mod core_routing;
mod error_layers;
mod error_messages;
mod filters;
mod macros;
mod readme_params;
mod triggers;
