//! Tracers for the routing tests (`tests/model/filters.rs`, `tests/model/triggers.rs`
//! use this file as `common::…`): files in a directory of the test's own,
//! nothing saved on a panic, fixed queues on the heap.

use qtrace::queues::{Fixed, FixedParams};
use qtrace::storage::RingStorage;
use qtrace::{Config, QueueHandle, Tracer};

/// A tracer made from `config` whose files go to a directory of its own
/// (removed when the returned guard drops) and that saves nothing on a
/// panic.
pub fn tracer_with(config: Config) -> (Tracer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let config = config.with_output_dir(dir.path()).with_save_on_panic(false);
    (Tracer::with_config(config), dir)
}

/// [`tracer_with`] the default configuration.
pub fn tracer() -> (Tracer, tempfile::TempDir) {
    tracer_with(Config::default())
}

/// A fixed queue of `capacity` records on the heap (no ring file).
pub fn memory_fixed(tracer: &Tracer, capacity: usize) -> QueueHandle {
    tracer
        .create_queue::<Fixed>(
            FixedParams::default()
                .with_capacity(capacity)
                .with_ring(RingStorage::Memory),
        )
        .unwrap()
}
