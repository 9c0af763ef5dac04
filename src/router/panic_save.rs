//! The panic hook: when any thread panics, every live tracer's fixed and
//! circular queues whose rings are on the heap ([`RingStorage::Memory`])
//! are saved to their trace files, before the previous hook runs (it is
//! chained, not replaced). Queues kept in a ring file need no saving: the
//! file already holds them.
//!
//! A tracer registers here at phase 2 unless [`crate::Config::save_on_panic`]
//! is off, and leaves at shutdown or drop. The hook writes snapshots
//! ([`CircularQueue::snapshot`], [`FixedQueue::snapshot`]): counters do not
//! change, and a later shutdown (if the program survives the panic)
//! overwrites the file with the complete save.
//!
//! [`RingStorage::Memory`]: crate::storage::RingStorage::Memory
//! [`CircularQueue::snapshot`]: crate::queues::CircularQueue::snapshot
//! [`FixedQueue::snapshot`]: crate::queues::FixedQueue::snapshot

use std::cell::Cell;
use std::sync::{Once, OnceLock};

use parking_lot::Mutex;

use crate::queues::AnyQueue;

/// A registered tracer's queue table.
/// A registered tracer's queue table, and the process that registered it
/// (a forked child does not save its parent's queues).
struct Entry(*const [OnceLock<AnyQueue>; 256], u32);

// SAFETY: the table is `Sync` (`OnceLock<AnyQueue>` is, since every queue is
// `Send + Sync`); the pointer is only dereferenced under `TRACERS`' lock
// while its tracer is registered, and a tracer deregisters (taking the same
// lock) before its table is freed.
unsafe impl Send for Entry {}

static TRACERS: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
static INSTALL: Once = Once::new();

thread_local! {
    /// Set while this thread runs the hook: a panic inside it (a nested
    /// panic) does not save again (and does not wait for the lock it holds).
    static IN_HOOK: Cell<bool> = const { Cell::new(false) };
}

/// Registers a tracer's queue table (installing the hook on first use).
///
/// The table must stay at its address until [`deregister`] is called with
/// it (a tracer's table is boxed, so it does not move with the tracer).
pub(crate) fn register(queues: &[OnceLock<AnyQueue>; 256]) {
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            save_all();
            previous(info);
        }));
    });
    let ptr = queues as *const _;
    let mut list = TRACERS.lock();
    if !list.iter().any(|e| e.0 == ptr) {
        list.push(Entry(ptr, std::process::id()));
    }
}

/// Removes a tracer's queue table; waits for a hook saving it to finish.
pub(crate) fn deregister(queues: &[OnceLock<AnyQueue>; 256]) {
    let ptr = queues as *const _;
    TRACERS.lock().retain(|e| e.0 != ptr);
}

/// Saves the heap-backed fixed and circular queues of every registered
/// tracer. Errors are recorded in each queue's status (the hook cannot
/// return them).
fn save_all() {
    if IN_HOOK.try_with(|f| f.replace(true)).unwrap_or(true) {
        return;
    }
    {
        let list = TRACERS.lock();
        let pid = std::process::id();
        // A forked child's inherited tracers are the parent's to save.
        for entry in list.iter().filter(|e| e.1 == pid) {
            // SAFETY: see `Entry`: registered, so the table is alive while
            // the lock is held.
            let table = unsafe { &*entry.0 };
            for queue in table.iter().filter_map(OnceLock::get) {
                match queue {
                    AnyQueue::CircularQueue(q) if q.ring_file().is_none() => {
                        let _ = q.snapshot(q.file());
                    }
                    AnyQueue::FixedQueue(q) if q.ring_file().is_none() => {
                        let _ = q.snapshot(q.file());
                    }
                    _ => {}
                }
            }
        }
    }
    let _ = IN_HOOK.try_with(|f| f.set(false));
}
