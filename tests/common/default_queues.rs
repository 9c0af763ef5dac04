//! Fixed and circular queues with every parameter but the capacity at its
//! default (files `<output_dir>/queue<handle>-<type>.qtr`, ring files next
//! to them), for tests (each uses this file as `common::…`).

use qtrace::classes::user;
use qtrace::queues::{Circular, CircularParams, Fixed, FixedParams};
use qtrace::{QueueHandle, Tracer};

/// A fixed queue of `capacity` records.
pub fn fixed_queue(t: &Tracer, capacity: usize) -> QueueHandle {
    t.create_queue::<Fixed>(FixedParams::default().with_capacity(capacity))
        .unwrap()
}

/// A fixed queue of `capacity` records saving 32-byte records
/// (`with_compact(false)`), for tests that cut its file at record offsets.
pub fn fixed_queue_32(t: &Tracer, capacity: usize) -> QueueHandle {
    t.create_queue::<Fixed>(
        FixedParams::default()
            .with_capacity(capacity)
            .with_compact(false),
    )
    .unwrap()
}

/// A circular queue of `capacity` records.
pub fn circular_queue(t: &Tracer, capacity: usize) -> QueueHandle {
    t.create_queue::<Circular>(CircularParams::default().with_capacity(capacity))
        .unwrap()
}

/// A circular queue of `circular` records taking `user0` and a fixed queue
/// of `fixed` records taking `user1`; not activated. Returns (circular,
/// fixed).
pub fn circular_and_fixed(t: &Tracer, circular: usize, fixed: usize) -> (QueueHandle, QueueHandle) {
    let c = circular_queue(t, circular);
    let f = fixed_queue(t, fixed);
    t.assign_event(user::USER0, c).unwrap();
    t.assign_event(user::USER1, f).unwrap();
    (c, f)
}
