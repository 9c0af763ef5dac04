//! Where an event came from: a small number per thread (or a CPU number the
//! program declares), stored in every record's `source` field.
//!
//! By default each thread gets the next number (0, 1, 2, …) the first time it
//! logs. A kernel, simulator or runtime that knows better — the CPU a thread is
//! pinned to, a simulated core — declares it with [`set_current`].
//!
//! ```
//! qtrace::source::set_current(7);
//! assert_eq!(qtrace::source::current(), 7);
//! ```

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

const UNSET: u32 = u32::MAX;

thread_local! {
    static CURRENT: Cell<u32> = const { Cell::new(UNSET) };
}

static NEXT: AtomicU32 = AtomicU32::new(0);

/// This thread's source number.
#[inline(always)]
pub fn current() -> u32 {
    CURRENT.with(|c| {
        let v = c.get();
        if v != UNSET {
            v
        } else {
            assign(c)
        }
    })
}

#[cold]
#[inline(never)]
fn assign(cell: &Cell<u32>) -> u32 {
    let v = NEXT.fetch_add(1, Ordering::Relaxed) % UNSET;
    cell.set(v);
    v
}

thread_local! {
    static TOKEN: Cell<u64> = const { Cell::new(0) };
}

static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);

/// A number unique to this thread for the life of the process (1, 2, 3, …
/// in the order threads first ask; never 0 and never reused, unlike a
/// source number, which a program may give to several threads). The
/// circular queue uses it to own a single-producer shard.
#[inline(always)]
pub(crate) fn thread_token() -> u64 {
    TOKEN.with(|c| {
        let v = c.get();
        if v != 0 {
            v
        } else {
            assign_token(c)
        }
    })
}

#[cold]
#[inline(never)]
fn assign_token(cell: &Cell<u64>) -> u64 {
    // A u64 counter does not wrap in the life of any process.
    let v = NEXT_TOKEN.fetch_add(1, Ordering::Relaxed);
    cell.set(v);
    v
}

/// Declares this thread's source number (for example its CPU). `u32::MAX` is
/// reserved and means "assign one for me".
pub fn set_current(source: u32) {
    CURRENT.with(|c| c.set(source));
}
