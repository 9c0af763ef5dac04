//! Issue 23, item 1: a ring file reserves its blocks when it is created, so
//! a full disk is a typed error of `create_queue` (naming the path, the size
//! and what to do) and never a SIGBUS at the first store; once created, a
//! ring keeps working when the disk fills up afterwards. Real tmpfs mounts of
//! a few MiB (root only: skipped with a message otherwise).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use qtrace::classes::user;
use qtrace::queues::{Circular, CircularParams, Fixed, FixedParams};
use qtrace::storage::{recover_file, RingStorage};
use qtrace::{Config, ConfigError, Tracer};

use crate::common::tmpfs::{is_root, Tmpfs};

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("qtrace-ringfull-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A tmpfs of `size` at a fresh directory, or `None` (with a message) when
/// this process cannot mount one.
fn small_fs(name: &str, size: &str) -> Option<(PathBuf, Tmpfs)> {
    if !is_root() {
        eprintln!("skipped: mounting a small tmpfs needs root");
        return None;
    }
    let d = dir(name);
    let Some(fs) = Tmpfs::mount(&d, size) else {
        eprintln!("skipped: cannot mount a tmpfs here");
        return None;
    };
    Some((d, fs))
}

/// Fills the file system of `d` with a file of `bytes` bytes (written, so
/// its blocks are taken).
fn filler(d: &Path, bytes: usize) {
    std::fs::write(d.join("filler"), vec![1u8; bytes]).unwrap();
}

/// Asserts `e` is the full-disk error for `path`, naming its size and what
/// to do, and that nothing was left at `path`.
fn assert_full_disk_error(e: ConfigError, path: &Path, bytes: u64) {
    let text = e.to_string();
    let ConfigError::Io(io) = e else {
        panic!("not an I/O error: {text}")
    };
    // `ErrorKind::StorageFull` (named from Rust 1.83 on; the MSRV is 1.80).
    assert_eq!(format!("{:?}", io.source.kind()), "StorageFull", "{text}");
    assert_eq!(io.path.as_deref(), Some(path), "{text}");
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(text.contains(&format!("needs {bytes} bytes")), "{text}");
    assert!(text.contains("free that much space"), "{text}");
    assert!(text.contains("RingStorage::Memory"), "{text}");
    assert!(!path.exists(), "a sparse ring file was left behind");
}

#[test]
fn a_default_circular_queue_on_a_1_mib_disk_is_an_error_not_sigbus() {
    let Some((d, _fs)) = small_fs("1m", "1m") else {
        return;
    };
    let t = Tracer::with_config(Config::default().with_output_dir(&d));
    let e = t
        .create_queue::<Circular>(CircularParams::default())
        .unwrap_err();
    let path = d.join("queue0-circular.ring");
    // The default circular ring's file: 4.5 MiB.
    let bytes = 4_730_880;
    assert_full_disk_error(e, &path, bytes);
    // The tracer goes on: a heap queue works, and so does shutdown.
    let q = t
        .create_queue::<Circular>(CircularParams::default().with_ring(RingStorage::Memory))
        .unwrap();
    t.assign_class(user::CLASS, q).unwrap();
    t.activate().unwrap();
    t.log_event(user::USER0, [1, 2]);
    t.shutdown().unwrap();
}

#[test]
fn a_ring_larger_than_the_free_space_is_an_error_fixed_and_circular() {
    // 8 MiB with 2 MiB free: the default circular ring (4.5 MiB) and a
    // 3 MiB fixed ring do not fit; a 1 MiB fixed ring does.
    let Some((d, _fs)) = small_fs("2free", "8m") else {
        return;
    };
    filler(&d, 6 << 20);
    let t = Tracer::with_config(Config::default().with_output_dir(&d));
    let e = t
        .create_queue::<Circular>(CircularParams::default())
        .unwrap_err();
    assert_full_disk_error(e, &d.join("queue0-circular.ring"), 4_730_880);
    let big = d.join("big.ring");
    let e = t
        .create_queue::<Fixed>(
            FixedParams::default()
                .with_capacity(3 << 20 >> 6)
                .with_ring(RingStorage::FileAt(big.clone())),
        )
        .unwrap_err();
    let len = e
        .to_string()
        .split("needs ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse::<u64>().ok())
        .expect("the size in the message");
    assert!(len > 3 << 20, "{len}");
    assert_full_disk_error(e, &big, len);
    let small = d.join("small.ring");
    let q = t
        .create_queue::<Fixed>(
            FixedParams::default()
                .with_capacity(16_384)
                .with_ring(RingStorage::FileAt(small.clone())),
        )
        .unwrap();
    let m = std::fs::metadata(&small).unwrap();
    assert!(m.blocks() * 512 >= m.len(), "every block allocated: {m:?}");
    t.assign_class(user::CLASS, q).unwrap();
    t.activate().unwrap();
    t.log_event(user::USER0, [7, 0]);
    assert_eq!(recover_file(&small).unwrap().counts.recovered, 1);
    drop(t);
}

#[test]
fn a_ring_created_before_the_disk_fills_keeps_every_event() {
    // The ring file's blocks are taken at creation: a disk filled up
    // afterwards (by anyone) cannot make a store into the mapping fault.
    let Some((d, _fs)) = small_fs("after", "6m") else {
        return;
    };
    let ring = d.join("q.ring");
    let t = Tracer::with_config(Config::default().with_output_dir(&d));
    let q = t
        .create_queue::<Circular>(
            CircularParams::default().with_ring(RingStorage::FileAt(ring.clone())),
        )
        .unwrap();
    let m = std::fs::metadata(&ring).unwrap();
    assert_eq!(m.len(), 4_730_880);
    assert!(m.blocks() * 512 >= m.len(), "every block allocated: {m:?}");
    t.assign_class(user::CLASS, q).unwrap();
    t.activate().unwrap();
    // Now the disk is full: a filler takes every block left.
    let err = std::fs::write(d.join("filler"), vec![1u8; 2 << 20]).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENOSPC));
    // Twice the capacity, so every slot of every shard is written.
    for i in 0..16_384u64 {
        t.log_event(user::USER0, [i, 0]);
    }
    let rec = recover_file(&ring).unwrap();
    assert_eq!(rec.counts.attempts, 16_384);
    assert_eq!(
        rec.events.iter().filter(|e| e.id == user::USER0).count(),
        8192
    );
    // Room again for the trace a clean shutdown saves.
    std::fs::remove_file(d.join("filler")).ok();
    drop(t);
}
