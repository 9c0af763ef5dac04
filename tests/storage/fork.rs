//! Issue 23, item 5: `fork()` with a live tracer, with a real fork.
//!
//! The decision (RELIABILITY.md, "fork"): a tracer belongs to the process
//! that created it. In a forked child an inherited tracer records nothing
//! (its routes are cleared by a `pthread_atfork` handler before `fork`
//! returns), refuses configuration and `shutdown` with a typed error, and
//! its drop, like a panic in the child, leaves the parent's queues, files and
//! tasks alone. A new tracer in the child works, but not over the parent's
//! live ring files.
//!
//! The test runs its own binary again with only `child_process` (so the
//! fork happens with no other test's threads around), which forks and
//! checks the child's side; the parent side is checked here afterwards.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use qtrace::classes::{tracer::HOOPS, user};
use qtrace::queues::{Circular, CircularParams, Fixed, FixedParams, Online, OnlineParams};
use qtrace::reader::{Completeness, TraceReader};
use qtrace::storage::RingStorage;
use qtrace::{Config, ConfigError, Tracer};

const PARENT_EVENTS: u64 = 100;
const CHILD_MARK: u64 = 1_000_000;

/// The values (argument 0) of the user events of a trace file, and whether
/// it is complete.
fn values(path: &Path) -> (Vec<u64>, bool) {
    let mut r = TraceReader::open(path).unwrap();
    let v = r
        .by_ref()
        .map(|e| e.unwrap())
        .filter(|e| e.id != HOOPS && e.id.0 >= user::USER0.0 && e.id.0 <= user::USER3.0)
        .map(|e| e.args[0])
        .collect();
    (
        v,
        matches!(r.completeness(), Some(Completeness::Complete(_))),
    )
}

/// Everything the child checks; a failed check panics (caught, exit 1).
fn in_child(t: &Tracer, dir: &Path) {
    assert!(t.is_inherited());
    // Logging is a no-op: no route is live.
    for i in 0..1000 {
        for id in [user::USER0, user::USER1, user::USER2, user::USER3] {
            assert!(!t.is_enabled(id));
            t.log_event(id, [CHILD_MARK + i, 0]);
        }
    }
    t.log_str(user::USER0, "from the child");
    // Configuration and shutdown are refused, with the reason.
    let e = t.resume().unwrap_err();
    assert!(matches!(e, ConfigError::InheritedAcrossFork { .. }), "{e}");
    assert!(
        e.to_string().contains("build a new Tracer in the child"),
        "{e}"
    );
    assert!(t.trace_class(user::CLASS).is_err());
    assert!(t.name_thread("child").is_err());
    let e = t.shutdown().unwrap_err();
    assert!(
        matches!(
            e,
            ConfigError::InheritedAcrossFork {
                operation: "shut down",
                ..
            }
        ),
        "{e}"
    );
    // A panic in the child does not save the parent's heap queue (the
    // panic hook skips inherited tracers).
    let saved = std::fs::metadata(dir.join("queue3-circular.qtr"))
        .unwrap()
        .len();
    let _ = std::panic::catch_unwind(|| panic!("a panic in the child"));
    assert_eq!(
        std::fs::metadata(dir.join("queue3-circular.qtr"))
            .unwrap()
            .len(),
        saved
    );
    // A new tracer over the parent's directory cannot take its live ring.
    let same = Tracer::with_config(Config::default().with_output_dir(dir));
    let e = same
        .create_queue::<Circular>(CircularParams::default())
        .unwrap_err();
    assert!(e.to_string().contains("live ring of process"), "{e}");
    assert!(dir.join("queue0-circular.ring").exists());
    drop(same);
    // A new tracer with its own directory traces the child.
    let own = Tracer::with_config(Config::default().with_output_dir(dir.join("child")));
    let q = own
        .create_queue::<Circular>(CircularParams::default())
        .unwrap();
    own.assign_class(user::CLASS, q).unwrap();
    own.activate().unwrap();
    for i in 0..10 {
        own.log_event(user::USER0, [CHILD_MARK + i, 0]);
    }
    let report = own.shutdown().unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.queues[0].counters.delivered, 10);
}

/// The forking process (run by `a_forked_child_…` only).
#[test]
fn child_process() {
    let Ok(dir) = std::env::var("QTRACE_FORK_DIR") else {
        return; // run by the parent test only
    };
    let dir = PathBuf::from(dir);
    let t = Tracer::with_config(Config::default().with_output_dir(&dir));
    let circ = t
        .create_queue::<Circular>(CircularParams::default())
        .unwrap();
    let fixed = t.create_queue::<Fixed>(FixedParams::default()).unwrap();
    let online = t
        .create_queue::<Online>(OnlineParams::default().with_file(dir.join("online.qtr")))
        .unwrap();
    let heap = t
        .create_queue::<Circular>(CircularParams::default().with_ring(RingStorage::Memory))
        .unwrap();
    t.assign_event(user::USER0, circ).unwrap();
    t.assign_event(user::USER1, fixed).unwrap();
    t.assign_event(user::USER2, online).unwrap();
    t.assign_event(user::USER3, heap).unwrap();
    t.activate().unwrap();
    for i in 0..PARENT_EVENTS / 2 {
        for id in [user::USER0, user::USER1, user::USER2, user::USER3] {
            t.log_event(id, [i, 0]);
        }
    }
    // SAFETY: `fork` has no preconditions; the child runs only the checks
    // below and leaves with `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| in_child(&t, &dir)));
        let code = match ok {
            Ok(()) => {
                // The inherited tracer's drop: no save, no join, no removal.
                drop(t);
                0
            }
            Err(_) => 1,
        };
        // SAFETY: ends the child without running the parent's exit hooks.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: waits for the child just forked.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the child's checks failed (status {status:#x})"
    );
    assert!(!t.is_inherited());
    // The parent goes on: its ring files are still its own, its online
    // task still runs.
    assert!(dir.join("queue0-circular.ring").exists());
    for i in PARENT_EVENTS / 2..PARENT_EVENTS {
        for id in [user::USER0, user::USER1, user::USER2, user::USER3] {
            t.log_event(id, [i, 0]);
        }
    }
    let report = t.shutdown().unwrap();
    assert!(report.is_clean(), "{report:?}");
    for q in &report.queues {
        assert_eq!(q.counters.accepted, PARENT_EVENTS, "{q:?}");
        assert_eq!(q.counters.delivered, PARENT_EVENTS, "{q:?}");
    }
    println!("QTRACE-FORK-PARENT-OK");
}

#[test]
fn a_forked_child_records_nothing_into_the_parents_queues_and_overwrites_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let child_test = match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::child_process"),
        None => "child_process".to_owned(),
    };
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &child_test, "--nocapture", "--test-threads=1"])
        .env("QTRACE_FORK_DIR", dir.path())
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("QTRACE-FORK-PARENT-OK"),
        "{stdout}"
    );
    // Every parent file holds exactly the parent's events, in order, and is
    // complete; none of the child's.
    let want: Vec<u64> = (0..PARENT_EVENTS).collect();
    for name in [
        "queue0-circular.qtr",
        "queue1-fixed.qtr",
        "online.qtr",
        "queue3-circular.qtr",
    ] {
        let (v, complete) = values(&dir.path().join(name));
        assert_eq!(v, want, "{name}");
        assert!(complete, "{name}");
    }
    // The clean shutdown removed the parent's ring files; none was moved
    // aside (no `-pid` copies).
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".ring"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // The child's own tracer saved its own file.
    let (v, complete) = values(&dir.path().join("child/queue0-circular.qtr"));
    assert_eq!(v, (CHILD_MARK..CHILD_MARK + 10).collect::<Vec<_>>());
    assert!(complete);
}
