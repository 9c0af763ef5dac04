//! Thread priority: `qtrace recv --live` lowers the view's threads so that
//! on a busy machine the receiver, not the view, gets the CPU.

/// Lowers the calling thread's scheduling priority (nice +10; threads it
/// starts afterwards inherit it). Best effort: a failure changes nothing.
#[cfg(target_os = "linux")]
pub fn lower_this_thread() {
    // SAFETY: gettid and setpriority take no pointers; setpriority on the
    // caller's own thread id changes only that thread's nice value.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 10);
    }
}

/// Elsewhere the view runs at the receiver's priority.
#[cfg(not(target_os = "linux"))]
pub fn lower_this_thread() {}
