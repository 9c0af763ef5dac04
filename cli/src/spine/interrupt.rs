//! Ctrl-C (SIGINT) as a flag that long-running subcommands poll (`recv`,
//! `dump --follow`, `live`), so they stop cleanly: files written, summaries
//! printed.

pub use imp::{happened, install};

/// Ctrl-C: a flag set by a signal handler, polled by a thread.
#[cfg(target_os = "linux")]
mod imp {
    use std::sync::atomic::{AtomicBool, Ordering};

    static INTERRUPTED: AtomicBool = AtomicBool::new(false);

    extern "C" fn on_interrupt(_signal: libc::c_int) {
        INTERRUPTED.store(true, Ordering::SeqCst);
    }

    /// Routes SIGINT to the flag; `false` if the handler could not be set.
    pub fn install() -> bool {
        let handler: extern "C" fn(libc::c_int) = on_interrupt;
        // SAFETY: the handler only stores to an atomic, which is
        // async-signal-safe, and stays valid for the life of the process.
        let previous = unsafe { libc::signal(libc::SIGINT, handler as libc::sighandler_t) };
        previous != libc::SIG_ERR
    }

    /// Whether SIGINT arrived.
    pub fn happened() -> bool {
        INTERRUPTED.load(Ordering::SeqCst)
    }
}

/// Elsewhere Ctrl-C ends the process (the file keeps the records written,
/// and reads as cut short); use --duration, --count or Enter.
#[cfg(not(target_os = "linux"))]
mod imp {
    pub fn install() -> bool {
        false
    }
    pub fn happened() -> bool {
        false
    }
}
