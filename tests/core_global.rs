//! The process-wide tracer: a no-op before install, installed once, and a
//! second install is a typed error. (Its own test binary: global state.)

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
    let report = installed.shutdown().unwrap();
    assert_eq!(report.queues[0].counters.accepted, 2000);
}
