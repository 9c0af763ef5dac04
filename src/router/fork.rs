//! What a tracer does across `fork()`: it belongs to the process that
//! created it. In a forked child every inherited tracer is *detached*: a
//! `pthread_atfork` child handler unroutes all its events before `fork`
//! returns in the child (so the child never writes the parent's shared ring
//! files), its configuration calls and `shutdown` are
//! [`ConfigError::InheritedAcrossFork`](crate::ConfigError::InheritedAcrossFork),
//! and dropping it in the child leaves the parent's queues, files and tasks
//! alone (nothing saved, no ring file removed, no thread joined). A child
//! that wants a trace builds its own [`Tracer`](crate::Tracer).
//!
//! The handler runs in the child right after `fork`, where only async-signal
//! -safe work is allowed: it takes no lock and allocates nothing. It walks a
//! list of the live tracers' route tables, which is lock-free: nodes are
//! pushed with a compare-and-swap and never freed (a dropped tracer empties
//! its node, which a later tracer reuses), so at most as many nodes exist as
//! tracers ever lived at once.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};

/// Routes per tracer (one per possible event id).
const ROUTES: usize = 1 << 16;

/// One live tracer's route table, or null when free.
pub(crate) struct Node {
    routes: AtomicPtr<AtomicU64>,
    next: *const Node,
}

// SAFETY: `next` is written once before the node is published and never
// changed; `routes` is an atomic.
unsafe impl Sync for Node {}

static HEAD: AtomicPtr<Node> = AtomicPtr::new(std::ptr::null_mut());
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Lists `routes` (a tracer's table of [`ROUTES`] routes, which must stay
/// allocated until [`forget`] is called with the node returned) so that a
/// forked child unroutes it; installs the fork handler the first time.
pub(crate) fn register(routes: &[AtomicU64; ROUTES]) -> &'static Node {
    install();
    let ptr = routes.as_ptr().cast_mut();
    let mut at = HEAD.load(Ordering::Acquire);
    while !at.is_null() {
        // SAFETY: nodes are leaked, never freed.
        let node = unsafe { &*at };
        if node
            .routes
            .compare_exchange(
                std::ptr::null_mut(),
                ptr,
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .is_ok()
        {
            return node;
        }
        at = node.next.cast_mut();
    }
    // Leaked (never freed), and every access goes through this one raw
    // pointer (a `&mut` next to it would invalidate it: Stacked Borrows).
    let new: *mut Node = Box::into_raw(Box::new(Node {
        routes: AtomicPtr::new(ptr),
        next: std::ptr::null(),
    }));
    let mut head = HEAD.load(Ordering::Acquire);
    loop {
        // SAFETY: `new` is valid (just allocated) and only this thread knows
        // it until the compare-exchange below publishes it.
        unsafe { (*new).next = head };
        match HEAD.compare_exchange(head, new, Ordering::AcqRel, Ordering::Acquire) {
            // SAFETY: the node is never freed; from now on it is only read
            // (its `routes` is an atomic).
            Ok(_) => return unsafe { &*new },
            Err(now) => head = now,
        }
    }
}

/// Unlists a tracer's table (before it is freed).
pub(crate) fn forget(node: &Node) {
    node.routes.store(std::ptr::null_mut(), Ordering::SeqCst);
}

#[cfg(all(target_os = "linux", not(any(miri, loom))))]
fn install() {
    if INSTALLED.swap(true, Ordering::AcqRel) {
        return;
    }
    // SAFETY: registers a plain `extern "C"` function with no arguments,
    // which stays valid for the life of the process.
    let r = unsafe { libc::pthread_atfork(None, None, Some(in_child)) };
    debug_assert_eq!(r, 0, "pthread_atfork");
}

/// Elsewhere (and under Miri and loom): no handler; a child's configuration
/// calls are still refused and its drop still leaves the parent's queues.
#[cfg(not(all(target_os = "linux", not(any(miri, loom)))))]
fn install() {
    INSTALLED.store(true, Ordering::Relaxed);
}

/// Runs in the child right after `fork`: every listed route table is
/// zeroed, so every event is masked out there (no lock, no allocation).
#[cfg(all(target_os = "linux", not(any(miri, loom))))]
extern "C" fn in_child() {
    let mut at = HEAD.load(Ordering::Acquire);
    while !at.is_null() {
        // SAFETY: nodes are leaked, never freed.
        let node = unsafe { &*at };
        let routes = node.routes.load(Ordering::Acquire);
        if !routes.is_null() {
            for i in 0..ROUTES {
                // SAFETY: a listed table holds `ROUTES` words and is
                // unlisted before it is freed; in the child no other
                // thread runs, so it cannot be freed meanwhile.
                let word = unsafe { &*routes.add(i) };
                // Only live words are written: a page of unrouted events
                // is read, not copied (the child's pages are copy-on-write).
                if word.load(Ordering::Relaxed) != 0 {
                    word.store(0, Ordering::Relaxed);
                }
            }
        }
        at = node.next.cast_mut();
    }
}
