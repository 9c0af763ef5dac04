//! The process-wide tracer: a no-op before install, installed once, and a
//! second install is a typed error; a forked child inherits it detached.
//! (Its own test binary: global state.)

use qtrace::classes::user;
use qtrace::queues::Dummy;
use qtrace::{global, ConfigError, Tracer};

#[test]
fn install_once() {
    assert!(global::get().is_none());
    // Before install: a cheap no-op, no panic.
    qtrace::log_event(user::USER0, [1, 0]);

    let t = Tracer::new();
    let q = t.create_queue::<Dummy>(()).unwrap();
    t.assign_class(user::CLASS, q).unwrap();
    t.activate().unwrap();
    let installed = global::install(t).unwrap();
    assert!(std::ptr::eq(installed, global::get().unwrap()));

    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                for i in 0..1000 {
                    qtrace::log_event(user::USER1, [i, 0]);
                }
            });
        }
    });
    assert_eq!(installed.counters(q).unwrap().accepted, 2000);

    let second = global::install(Tracer::new()).unwrap_err();
    assert!(matches!(second, ConfigError::GlobalAlreadyInstalled));
    assert!(second.to_string().contains("already installed"));
    // The first tracer is still the one in place.
    assert!(std::ptr::eq(installed, global::get().unwrap()));

    // A forked child inherits the process-wide tracer detached (issue 23):
    // its events are not recorded, and shutdown there is refused.
    // SAFETY: `fork` has no preconditions; the child runs the checks below
    // and leaves with `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let ok = std::panic::catch_unwind(|| {
            let t = global::get().unwrap();
            assert!(t.is_inherited());
            for i in 0..100 {
                qtrace::log_event(user::USER1, [i, 0]);
            }
            assert_eq!(t.counters(q).unwrap().accepted, 2000);
            assert!(matches!(
                t.shutdown(),
                Err(ConfigError::InheritedAcrossFork { .. })
            ));
        });
        // SAFETY: ends the child without running the parent's exit hooks.
        unsafe { libc::_exit(if ok.is_ok() { 0 } else { 1 }) };
    }
    let mut status = 0;
    // SAFETY: waits for the child just forked.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the child's checks failed (status {status:#x})"
    );
    assert!(!installed.is_inherited());
    let report = installed.shutdown().unwrap();
    assert_eq!(report.queues[0].counters.accepted, 2000);
}
