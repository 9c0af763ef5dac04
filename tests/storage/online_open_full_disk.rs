//! An online queue whose trace file cannot be given its reserved room (the
//! disk is full: a 64 KiB tmpfs filled up; root only) leaves no empty trace
//! file behind: at activation phase 2 fails with the error; when the file
//! is re-created after it was deleted while written, the attempt fails and
//! is counted. Before the fix, `File::create` had made the file and it
//! stayed, empty, in both cases.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use qtrace::classes::user;
use qtrace::queues::{Online, OnlineParams};
use qtrace::{Config, Tracer};

use crate::common::tmpfs;
use tmpfs::{is_root, Tmpfs};

/// Writes a file in `dir` until the file system refuses (`ENOSPC`).
fn fill(dir: &Path) {
    let mut filler = std::fs::File::create(dir.join("filler")).unwrap();
    let block = [0u8; 4096];
    let mut written = 0usize;
    loop {
        match filler.write(&block) {
            Ok(0) => break,
            Ok(n) => written += n,
            Err(e) => {
                assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{e}");
                break;
            }
        }
        assert!(written <= 1 << 20, "a 64 KiB tmpfs took {written} bytes");
    }
}

#[test]
fn a_failed_reservation_at_activation_leaves_no_trace_file() {
    if !is_root() {
        eprintln!("skipped: mounting a small tmpfs needs root");
        return;
    }
    let d = std::env::temp_dir().join(format!("qtrace-open-full-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let Some(fs) = Tmpfs::mount(&d, "64k") else {
        eprintln!("skipped: cannot mount a tmpfs here");
        return;
    };
    fill(&d);
    let path = d.join("trace.qtr");
    let t = Tracer::with_config(Config::default().with_output_dir(&d));
    let q = t
        .create_queue::<Online>(OnlineParams::default().with_file(&path))
        .unwrap();
    t.assign_class(user::CLASS, q).unwrap();
    let err = t.activate().unwrap_err().to_string();
    assert!(
        err.contains("reserve room at the end of trace file"),
        "{err}"
    );
    assert!(
        !path.exists(),
        "a failed activation left {} behind",
        path.display()
    );
    // The only file on the disk is the filler.
    let names: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["filler"]);
    drop(t);
    drop(fs);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_failed_re_creation_leaves_no_trace_file() {
    if !is_root() {
        eprintln!("skipped: mounting a small tmpfs needs root");
        return;
    }
    let d = std::env::temp_dir().join(format!("qtrace-recreate-full-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let Some(fs) = Tmpfs::mount(&d, "64k") else {
        eprintln!("skipped: cannot mount a tmpfs here");
        return;
    };
    let path = d.join("trace.qtr");
    let t = Tracer::with_config(Config::default().with_output_dir(&d));
    let q = t
        .create_queue::<Online>(
            OnlineParams::default()
                .with_file(&path)
                .with_capacity(1024)
                .with_period(Duration::from_millis(5)),
        )
        .unwrap();
    t.assign_class(user::CLASS, q).unwrap();
    t.activate().unwrap();
    for i in 0..10 {
        t.log_event(user::USER0, [i, 0]);
    }
    let started = Instant::now();
    while t.counters(q).unwrap().delivered < 10 {
        assert!(started.elapsed() < Duration::from_secs(30), "not written");
        std::thread::sleep(Duration::from_millis(1));
    }
    // The disk fills up, then the trace file is deleted (its blocks stay
    // taken while the queue holds it open): re-creating it cannot reserve.
    fill(&d);
    std::fs::remove_file(&path).unwrap();
    let started = Instant::now();
    while t.status(q).unwrap().io_errors == 0 {
        assert!(started.elapsed() < Duration::from_secs(30), "not seen");
        std::thread::sleep(Duration::from_millis(1));
    }
    let report = t.shutdown().unwrap();
    let status = &report.queues[0].status;
    assert!(
        status
            .last_error
            .as_deref()
            .is_some_and(|e| e.starts_with("re-create ")
                && e.contains("(deleted or replaced while written)")),
        "{status:?}"
    );
    assert!(!report.is_clean());
    assert!(
        !path.exists(),
        "a failed re-creation left {} behind",
        path.display()
    );
    drop(fs);
    let _ = std::fs::remove_dir_all(&d);
}

/// Opening fails on a device (`/dev/full` takes no header): the device is
/// not a trace file the queue created, so it is never removed (any user).
#[cfg(target_os = "linux")]
#[test]
fn a_device_that_fails_at_activation_is_not_removed() {
    use std::os::unix::fs::FileTypeExt;
    let full = Path::new("/dev/full");
    if !std::fs::symlink_metadata(full).is_ok_and(|m| m.file_type().is_char_device()) {
        eprintln!("skipped: no /dev/full character device here");
        return;
    }
    let t = Tracer::new();
    t.create_queue::<Online>(OnlineParams::default().with_file(full))
        .unwrap();
    let err = t.activate().unwrap_err().to_string();
    assert!(err.contains("/dev/full"), "{err}");
    let kind = std::fs::symlink_metadata(full).map(|m| m.file_type().is_char_device());
    assert!(kind.is_ok_and(|c| c), "/dev/full was removed or replaced");
}
