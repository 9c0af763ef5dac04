//! Thread priority: `qtrace recv --live` lowers the view's threads so that
//! on a busy machine the receiver, not the view, gets the CPU (the view
//! then refreshes late; the receiver takes every datagram it can).

/// Puts the calling thread in the idle scheduling class (`SCHED_IDLE`:
/// it runs when the CPU has nothing else to do, with a minimal share
/// otherwise; threads it starts afterwards inherit it). Best effort: a
/// failure changes nothing.
#[cfg(target_os = "linux")]
pub fn lower_this_thread() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid sched_param that outlives the call; pid 0
    // is the calling thread, whose policy alone changes.
    unsafe {
        libc::sched_setscheduler(0, libc::SCHED_IDLE, &param);
    }
}

/// Elsewhere the view runs at the receiver's priority.
#[cfg(not(target_os = "linux"))]
pub fn lower_this_thread() {}
