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
use std::sync::atomic::{AtomicU32, Ordering};

/// The source number `u32::MAX` is reserved: "assign one". It is also
/// [`TRACER_SOURCE`](crate::model::event::TRACER_SOURCE), the tracer's own source
/// in files: a thread never logs under it, so the two meanings never meet.
const UNSET: u32 = u32::MAX;
/// `CURRENT` before a number is assigned (its low half is not 0, so no
/// assigned number looks like it).
const UNSET_WORD: u64 = u64::MAX;

thread_local! {
    /// `source << 32`: the form a record's second word wants it in (see
    /// [`crate::Event::to_words`]), so the tracer's hot path just `or`s the
    /// event id in.
    static CURRENT: Cell<u64> = const { Cell::new(UNSET_WORD) };
}

static NEXT: AtomicU32 = AtomicU32::new(0);

/// This thread's source number.
#[inline(always)]
pub fn current() -> u32 {
    CURRENT.with(|c| {
        let v = c.get();
        if v != UNSET_WORD {
            (v >> 32) as u32
        } else {
            assign(c)
        }
    })
}

/// This thread's source number shifted left by 32 (the low half 0), read
/// without checking that it was assigned: for the tracer's cached path,
/// which is only taken by a thread that has called [`current`] before (and
/// [`set_current`] never stores the unassigned mark), so the number is
/// always assigned there.
#[inline(always)]
pub(crate) fn current_word_assigned() -> u64 {
    CURRENT.with(|c| c.get())
}

#[cold]
#[inline(never)]
fn assign(cell: &Cell<u64>) -> u32 {
    let v = NEXT.fetch_add(1, Ordering::Relaxed) % UNSET;
    cell.set((v as u64) << 32);
    v
}

/// Declares this thread's source number (for example its CPU). `u32::MAX` is
/// reserved and means "assign one for me".
pub fn set_current(source: u32) {
    CURRENT.with(|c| {
        if source == UNSET {
            // Assigned now rather than on the next log: the number in this
            // thread's slot is then always a real one (see
            // `current_word_assigned`).
            assign(c);
        } else {
            c.set((source as u64) << 32);
        }
    });
}
