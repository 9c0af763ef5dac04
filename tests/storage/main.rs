//! What outlives a crash or a fault: ring files recovered after a killed child,
//! slots being written marked, full and failing disks, every file ending with
//! its close run; ring files on a full disk; a real `fork()`.
//!
//! One test binary, one module per file (tests/README.md is the map).

#[path = "../common/mod.rs"]
mod common;

mod completeness;
mod crash;
mod disk_faults;
mod faults;
mod fork;
mod online_chunks_crash;
mod online_open_full_disk;
mod recover_marks;
mod ring_full_disk;
mod ring_integrity;
mod shared_output_dir;
