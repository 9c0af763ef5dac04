//! Issue 12, item 4: disk faults are marked in the file and never burn CPU.
//!
//! - A writer that always fails is tried once per period whatever the
//!   producers do (the write attempts are counted exactly).
//! - A disk that stays full (a 64 KiB tmpfs; root only) still yields a
//!   complete file whose hoops records add up to everything not in it.
//! - A trace file deleted or replaced while written is detected and
//!   re-created, starting with a hoops record for what went with it.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use qtrace::classes::{tracer::HOOPS, user};
use qtrace::queue::Queue;
use qtrace::queues::{Online, OnlineParams};
use qtrace::reader::{Completeness, TraceReader};
use qtrace::{Config, Event, Tracer};
use qtrace_core::layout::header::FIXED_LEN;

use crate::common::tmpfs;
use tmpfs::{is_root, Tmpfs};

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("qtrace-disk-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < Duration::from_secs(30), "timed out: {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn read(path: &Path) -> (Vec<Event>, Completeness) {
    let mut r = TraceReader::open(path).unwrap();
    let events = r.by_ref().map(Result::unwrap).collect();
    (events, r.completeness().unwrap())
}

/// Takes the header, then fails every write, counting the attempts.
struct FullDisk {
    attempts: Arc<AtomicU64>,
    header_done: bool,
}

impl Write for FullDisk {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if !self.header_done && buf.len() >= FIXED_LEN {
            self.header_done = true;
            return Ok(buf.len());
        }
        self.attempts.fetch_add(1, Ordering::SeqCst);
        Err(io::Error::from_raw_os_error(28)) // ENOSPC
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_failing_writer_is_retried_once_per_period_whatever_producers_do() {
    let attempts = Arc::new(AtomicU64::new(0));
    let t = Arc::new(Tracer::new());
    let q = t
        .create_queue::<Online>(
            OnlineParams::default()
                .with_capacity(65536)
                .with_high_water_percent(50)
                .with_period(Duration::from_secs(3600))
                .with_writer(FullDisk {
                    attempts: Arc::clone(&attempts),
                    header_done: false,
                }),
        )
        .unwrap();
    t.assign_class(user::CLASS, q).unwrap();
    t.activate().unwrap();
    // Reach the high-water mark: the task wakes and its write fails. The
    // queue then still holds more than its mark (a round takes one 2048-event
    // batch before writing): a task that re-armed its wake-up after a failed
    // round would run again at once, and again (the spin of issue 12).
    for i in 0..40_000 {
        t.log_event(user::USER0, [i, 0]);
    }
    wait_until("the first failed write", || {
        attempts.load(Ordering::SeqCst) == 1
    });
    // Two producers hammer the full queue: every high-water crossing and
    // every drop would re-run a task that does not back off.
    let producers: Vec<_> = (0..2)
        .map(|_| {
            let t = Arc::clone(&t);
            std::thread::spawn(move || {
                for i in 0..200_000 {
                    t.log_event(user::USER0, [i, 0]);
                }
            })
        })
        .collect();
    for p in producers {
        p.join().unwrap();
    }
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        attempts.load(Ordering::SeqCst),
        1,
        "no retry before the period"
    );
    let c = t.counters(q).unwrap();
    assert_eq!(c.accepted + c.dropped, 440_000);
    assert_eq!(c.delivered, 0);
    let report = t.shutdown().unwrap();
    // At shutdown: three last tries of the drain, then one of the close run.
    assert_eq!(attempts.load(Ordering::SeqCst), 5);
    let status = &report.queues[0].status;
    assert_eq!(status.io_errors, 5);
    assert!(status.files.is_empty(), "a writer is not a file");
    assert!(
        status
            .last_error
            .as_deref()
            .unwrap()
            .contains("could not be written"),
        "{status:?}"
    );
}

#[test]
fn a_disk_that_stays_full_still_yields_a_complete_file_stating_its_loss() {
    full_disk(true);
}

#[test]
fn a_disk_that_stays_full_still_yields_a_complete_32_byte_file() {
    full_disk(false);
}

/// A disk that stays full, with compact chunks (the default: a chunk torn
/// by the full disk is cut off at shutdown) or 32-byte records.
fn full_disk(compact: bool) {
    if !is_root() {
        eprintln!("skipped: mounting a small tmpfs needs root");
        return;
    }
    let d = dir(if compact { "tmpfs" } else { "tmpfs32" });
    let Some(_fs) = Tmpfs::mount(&d, "64k") else {
        eprintln!("skipped: cannot mount a tmpfs here");
        return;
    };
    let path = d.join("full.qtr");
    let t = Tracer::with_config(Config::default().with_output_dir(&d));
    let q = t
        .create_queue::<Online>(
            OnlineParams::default()
                .with_file(&path)
                .with_capacity(1024)
                .with_period(Duration::from_millis(20))
                .with_compact(compact),
        )
        .unwrap();
    t.assign_class(user::CLASS, q).unwrap();
    t.activate().unwrap();
    let started = Instant::now();
    let mut logged = 0u64;
    // 64 KiB hold at most 2048 records: log far more, for a second.
    while started.elapsed() < Duration::from_secs(1) {
        for _ in 0..1000 {
            t.log_event(user::USER0, [logged, 0]);
            logged += 1;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    let elapsed = started.elapsed();
    let failed_while_running = t.queue(q).unwrap().status().io_errors;
    let report = t.shutdown().unwrap();
    let entry = &report.queues[0];
    let c = entry.counters;
    assert_eq!(c.accepted + c.dropped, logged);
    assert!(c.is_consistent(), "{c:?}");
    assert!(c.delivered < logged / 2, "the disk was full: {c:?}");
    assert!(!report.is_clean());
    // At most one failed attempt per 20 ms period while running.
    let periods = elapsed.as_millis() as u64 / 20 + 2;
    assert!(
        failed_while_running <= periods,
        "{failed_while_running} failures in {periods} periods"
    );
    // The file: complete, its events exactly the delivered ones, in order,
    // and its hoops records add up to every event not in it.
    let (events, end) = read(&path);
    let header = TraceReader::open(&path).unwrap().header().clone();
    assert_eq!(header.is_compact(), compact);
    let close = match end {
        Completeness::Complete(close) => close,
        other => panic!("{other:?}; status {:?}", entry.status),
    };
    let values: Vec<u64> = events
        .iter()
        .filter(|e| e.id == user::USER0)
        .map(|e| e.args[0])
        .collect();
    let stated: u64 = events
        .iter()
        .filter(|e| e.id == HOOPS)
        .map(|e| e.args[0])
        .sum();
    assert_eq!(values.len() as u64, c.delivered);
    assert!(values.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(stated, logged - c.delivered, "hoops add up to the loss");
    assert_eq!(stated, c.dropped + c.queued);
    assert_eq!(
        (
            close.totals.accepted,
            close.totals.dropped,
            close.totals.delivered
        ),
        (c.accepted, c.dropped, c.delivered)
    );
    assert_eq!(close.lost, stated);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_trace_file_deleted_or_replaced_while_written_is_recreated_with_its_loss() {
    recreated(true);
}

#[test]
fn a_32_byte_trace_file_deleted_or_replaced_while_written_is_recreated() {
    recreated(false);
}

/// A file deleted, then replaced, while written: re-created in the same
/// form (compact, the default, or 32-byte records).
fn recreated(compact: bool) {
    let d = dir(if compact { "deleted" } else { "deleted32" });
    let path = d.join("online.qtr");
    let t = Tracer::with_config(Config::default().with_output_dir(&d));
    let q = t
        .create_queue::<Online>(
            OnlineParams::default()
                .with_file(&path)
                .with_capacity(1024)
                .with_period(Duration::from_millis(5))
                .with_compact(compact),
        )
        .unwrap();
    t.assign_class(user::CLASS, q).unwrap();
    t.activate().unwrap();
    let online = || t.queue(q).unwrap().as_online().unwrap().files_replaced();
    for i in 0..100 {
        t.log_event(user::USER0, [i, 0]);
    }
    wait_until("100 delivered", || t.counters(q).unwrap().delivered == 100);
    // Deleted.
    std::fs::remove_file(&path).unwrap();
    wait_until("the deletion is seen", || online() == 1);
    for i in 100..130 {
        t.log_event(user::USER0, [i, 0]);
    }
    wait_until("30 more delivered", || {
        let c = t.counters(q).unwrap();
        c.delivered == 30 && c.queued == 0
    });
    let c = t.counters(q).unwrap();
    assert_eq!((c.accepted, c.delivered, c.overwritten), (130, 30, 100));
    let status = t.queue(q).unwrap().status();
    assert_eq!(status.files, std::slice::from_ref(&path));
    assert_eq!(status.io_errors, 1);
    assert!(
        status.last_error.as_deref().unwrap().contains(
            "deleted or replaced while being written: the 100 events written to it are lost"
        ),
        "{status:?}"
    );
    // Replaced: another file renamed over it.
    let other = d.join("other");
    std::fs::write(&other, b"not a trace").unwrap();
    std::fs::rename(&other, &path).unwrap();
    wait_until("the replacement is seen", || online() == 2);
    for i in 130..140 {
        t.log_event(user::USER0, [i, 0]);
    }
    let report = t.shutdown().unwrap();
    let c = report.queues[0].counters;
    assert_eq!(
        (c.accepted, c.delivered, c.overwritten, c.queued),
        (140, 10, 130, 0)
    );
    assert_eq!(report.total_lost(), 130);
    assert!(!report.is_clean());
    // The room reserved past the end was given back at close.
    let m = std::fs::metadata(&path).unwrap();
    assert!(
        std::os::unix::fs::MetadataExt::blocks(&m) * 512 <= m.len().div_ceil(4096) * 4096,
        "{} blocks for {} bytes",
        std::os::unix::fs::MetadataExt::blocks(&m),
        m.len()
    );
    let (events, end) = read(&path);
    let header = TraceReader::open(&path).unwrap().header().clone();
    assert_eq!(header.is_compact(), compact);
    // The hoops record first (the first file's 100 events and the 30 of the
    // second, all lost with their inodes), then the 10 events.
    assert_eq!(events[0].id, HOOPS);
    assert_eq!(events[0].args, [130, 0]);
    let values: Vec<u64> = events[1..].iter().map(|e| e.args[0]).collect();
    assert_eq!(values, (130..140).collect::<Vec<_>>());
    match end {
        Completeness::Complete(close) => {
            assert_eq!((close.records, close.lost), (11, 130));
            assert_eq!(close.totals.overwritten, 130);
        }
        other => panic!("{other:?}"),
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// The drain task's CPU time (utime + stime, in clock ticks) from
/// `/proc/self/task/*/stat`.
fn task_cpu() -> Option<u64> {
    for entry in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let p = entry.path();
        let Ok(comm) = std::fs::read_to_string(p.join("comm")) else {
            continue;
        };
        // Thread names are cut to 15 bytes: "qtrace-online-q".
        if comm.trim().starts_with("qtrace-online") {
            let stat = std::fs::read_to_string(p.join("stat")).ok()?;
            let rest = &stat[stat.rfind(')')? + 2..];
            let f: Vec<&str> = rest.split(' ').collect();
            // utime and stime: fields 14 and 15 of the line.
            return Some(f[11].parse::<u64>().ok()? + f[12].parse::<u64>().ok()?);
        }
    }
    None
}

/// Two producers log flat out into `q` for `secs`; prints the drain task's
/// CPU and `attempts()` failed writes per second.
fn measure(t: &Arc<Tracer>, q: qtrace::QueueHandle, what: &str, attempts: impl Fn() -> u64) {
    // Let the task start (it names itself when it runs).
    std::thread::sleep(Duration::from_millis(50));
    // SAFETY: `sysconf` has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let before = task_cpu().expect("the task thread");
    let a0 = attempts();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let producers: Vec<_> = (0..2)
        .map(|_| {
            let (t, stop) = (Arc::clone(t), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    t.log_event(user::USER0, [i, 0]);
                    i += 1;
                }
            })
        })
        .collect();
    let secs = 5.0;
    std::thread::sleep(Duration::from_secs_f64(secs));
    let after = task_cpu().expect("the task thread");
    let a1 = attempts();
    stop.store(true, Ordering::Relaxed);
    for p in producers {
        p.join().unwrap();
    }
    let c = t.counters(q).unwrap();
    println!(
        "{what}: task CPU {:.2} % of a core over {secs} s ({} ticks of {:.0} ms); {} failed write attempts ({:.1}/s); {} events logged",
        (after - before) as f64 / ticks / secs * 100.0,
        after - before,
        1000.0 / ticks,
        a1 - a0,
        (a1 - a0) as f64 / secs,
        c.attempts()
    );
}

/// Not a pass/fail test (time is not asserted): measures the online task's
/// CPU while the disk stays full and two producers hammer the queue, with a
/// failing writer and (as root) a full 64 KiB tmpfs.
/// `cargo test --test storage -- --ignored --nocapture disk_faults::measure`.
#[test]
#[ignore]
fn measure_task_cpu_while_the_disk_is_full() {
    let attempts = Arc::new(AtomicU64::new(0));
    let t = Arc::new(Tracer::new());
    let q = t
        .create_queue::<Online>(
            OnlineParams::default()
                .with_capacity(65536)
                .with_period(Duration::from_millis(50))
                .with_writer(FullDisk {
                    attempts: Arc::clone(&attempts),
                    header_done: false,
                }),
        )
        .unwrap();
    t.assign_class(user::CLASS, q).unwrap();
    t.activate().unwrap();
    measure(&t, q, "failing writer, 50 ms period", || {
        attempts.load(Ordering::SeqCst)
    });
    t.shutdown().unwrap();

    if !is_root() {
        eprintln!("skipped the tmpfs case: mounting needs root");
        return;
    }
    let d = dir("measure");
    let Some(_fs) = Tmpfs::mount(&d, "64k") else {
        eprintln!("skipped the tmpfs case: cannot mount a tmpfs here");
        return;
    };
    let t = Arc::new(Tracer::new());
    let q = t
        .create_queue::<Online>(
            OnlineParams::default()
                .with_file(d.join("full.qtr"))
                .with_capacity(65536)
                .with_period(Duration::from_millis(50)),
        )
        .unwrap();
    t.assign_class(user::CLASS, q).unwrap();
    t.activate().unwrap();
    measure(&t, q, "full 64 KiB tmpfs, 50 ms period", || {
        t.queue(q).unwrap().status().io_errors
    });
    t.shutdown().unwrap();
}
