//! The recording outlives the crash: a child process logs at full speed
//! from 2 threads into a file-backed circular queue (capacity `CIRC`) and a
//! file-backed fixed queue (capacity `FIXED`), and dies at a random moment —
//! SIGKILL, `abort()`, SIGSEGV, or a panic in a non-main thread (with a previous
//! panic hook that aborts, as `panic = "abort"` would). The parent recovers
//! the ring files and checks, every run:
//!
//! - every recovered event is one the child logged (USER0/USER1, `args =
//!   [thread, counter]`), each thread's counters consecutive and in order;
//! - circular: the recovered events are the newest `CIRC` readable ones by
//!   time, each thread's a suffix ending at its last committed event; at
//!   least `CIRC - 2` of the last `CIRC` events logged are recovered (the
//!   bound reached is printed);
//! - fixed: each thread's events are its first ones, from counter 0;
//! - every slot being written at the crash is a marked hoops record, and no
//!   other record is missing without a hoops record: the hoops add up to
//!   `attempts - recovered`, `attempts = accepted + dropped` and `accepted =
//!   recovered + overwritten + unreadable` exactly;
//! - the two queues' attempt counts agree (each thread logs into the
//!   circular queue, then the fixed one: they differ by at most one per
//!   thread).
//!
//! In the panic case the child also has a heap-backed circular and fixed
//! queue: the tracer's panic hook must have saved them (their trace files
//! exist, with valid events in per-thread order).
//!
//! The child is this test binary (tests/storage/) run again with only the
//! `crash::child_process` entry and `QTRACE_CRASH_CHILD` set (the entry does
//! nothing otherwise).

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use qtrace::classes::{tracer::HOOPS, user};
use qtrace::queues::{Circular, CircularParams, Fixed, FixedParams};
use qtrace::reader::Completeness;
use qtrace::storage;
use qtrace::storage::RingImage;
use qtrace::storage::RingStorage;
use qtrace::storage::{RecoveryCounts, UNREADABLE};
use qtrace::{Config, Event, Tracer};

use crate::common::child_test::spawn_ready;

const CIRC: usize = 4096;
const FIXED: usize = 1 << 16;
const RUNS: usize = 20;
const READY: &str = "QTRACE-CRASH-CHILD-READY";

/// The child: set up, say ready, start the 2 loggers, then die as told.
#[test]
fn child_process() {
    let Ok(mode) = std::env::var("QTRACE_CRASH_CHILD") else {
        return; // run by the parent tests only
    };
    let dir = std::env::var("QTRACE_CRASH_DIR").expect("dir");
    let delay = Duration::from_micros(
        std::env::var("QTRACE_CRASH_DELAY_US")
            .expect("delay")
            .parse()
            .expect("number"),
    );
    if mode == "panic" {
        // As under panic = "abort": the process dies with the panic. The
        // tracer's hook, installed at activate, runs before this one.
        std::panic::set_hook(Box::new(|_| std::process::abort()));
    }
    let tracer = Box::leak(Box::new(Tracer::with_config(
        Config::default().with_output_dir(&dir),
    )));
    let circ = tracer
        .create_queue::<Circular>(CircularParams::default().with_capacity(CIRC))
        .unwrap();
    let fixed = tracer
        .create_queue::<Fixed>(FixedParams::default().with_capacity(FIXED))
        .unwrap();
    tracer.assign_event(user::USER0, circ).unwrap();
    tracer.assign_event(user::USER1, fixed).unwrap();
    let heap = mode == "panic";
    if heap {
        let c = tracer
            .create_queue::<Circular>(
                CircularParams::default()
                    .with_capacity(CIRC)
                    .with_ring(RingStorage::Memory),
            )
            .unwrap();
        let f = tracer
            .create_queue::<Fixed>(
                FixedParams::default()
                    .with_capacity(FIXED)
                    .with_ring(RingStorage::Memory),
            )
            .unwrap();
        tracer.assign_event(user::USER2, c).unwrap();
        tracer.assign_event(user::USER3, f).unwrap();
    }
    tracer.activate().unwrap();
    let tracer: &'static Tracer = tracer;
    println!("{READY}");
    let start = Instant::now();
    for t in 1..=2u64 {
        let mode = mode.clone();
        std::thread::spawn(move || {
            let mut i = 0u64;
            loop {
                tracer.log_event(user::USER0, [t, i]);
                tracer.log_event(user::USER1, [t, i]);
                if heap {
                    tracer.log_event(user::USER2, [t, i]);
                    tracer.log_event(user::USER3, [t, i]);
                }
                i += 1;
                if t == 2 && mode == "panic" && i % 256 == 0 && start.elapsed() >= delay {
                    panic!("the traced program fails");
                }
            }
        });
    }
    match mode.as_str() {
        "abort" => {
            std::thread::sleep(delay);
            std::process::abort();
        }
        "segv" => {
            std::thread::sleep(delay);
            // Death by SIGSEGV's default action, as after a wild pointer
            // access (std's handler, there for stack overflows, restores the
            // default and lets the access fault again; here it is restored
            // first, as the access itself would be undefined behaviour).
            // SAFETY: setting a signal's default action and raising it are
            // sound at any point.
            unsafe {
                libc::signal(libc::SIGSEGV, libc::SIG_DFL);
                libc::raise(libc::SIGSEGV);
            }
            unreachable!("SIGSEGV kills the process");
        }
        _ => std::thread::sleep(Duration::from_secs(60)), // until killed or aborted
    }
}

/// A small xorshift generator (seeded from the clock; the seed is printed).
struct Rng(u64);

impl Rng {
    fn new() -> Self {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
            | 1;
        println!("seed {seed}");
        Rng(seed)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Runs one child in `mode`, makes it die after `delay_us`, returns its
/// output directory's path holder.
fn run_child(mode: &str, delay_us: u64) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let delay = delay_us.to_string();
    let (mut child, _lines) = spawn_ready(
        module_path!(),
        "child_process",
        &[
            ("QTRACE_CRASH_CHILD", mode.as_ref()),
            ("QTRACE_CRASH_DIR", dir.path().as_os_str()),
            ("QTRACE_CRASH_DELAY_US", delay.as_ref()),
        ],
        Stdio::null(),
        READY,
    );
    if mode == "kill" {
        std::thread::sleep(Duration::from_micros(delay_us));
        child.kill().unwrap(); // SIGKILL
    }
    let status = child.wait().unwrap();
    assert!(!status.success(), "the child must die: {status:?}");
    dir
}

fn lost(events: &[Event]) -> u64 {
    events
        .iter()
        .filter(|e| e.id == HOOPS)
        .map(|e| e.args[0])
        .sum()
}

/// Writes the recovered trace and reads it back: the same records, and a
/// complete file whose close run carries the counters.
fn check_written(rec: &storage::Recovered, path: &Path) {
    storage::write_trace(rec, path).unwrap();
    let mut r = qtrace::reader::TraceReader::open(path).unwrap();
    let back: Vec<Event> = r.by_ref().map(|e| e.unwrap()).collect();
    assert_eq!(back, rec.events);
    match r.completeness() {
        Some(Completeness::Complete(close)) => {
            let c = rec.counts;
            assert_eq!(close.totals.accepted, c.accepted);
            assert_eq!(close.totals.dropped, c.dropped);
            assert_eq!(close.totals.overwritten, c.overwritten + c.unreadable);
            assert_eq!(close.totals.delivered, c.recovered);
            assert_eq!(close.lost, c.lost());
        }
        other => panic!("recovered trace not complete: {other:?}"),
    }
}

fn check_equations(c: &RecoveryCounts, events: &[Event]) {
    assert_eq!(c.attempts, c.accepted + c.dropped, "{c:?}");
    assert_eq!(
        c.accepted,
        c.recovered + c.overwritten + c.unreadable,
        "{c:?}"
    );
    assert_eq!(lost(events), c.attempts - c.recovered, "{c:?}");
    assert_eq!(
        events.iter().filter(|e| e.id != HOOPS).count() as u64,
        c.recovered
    );
    assert_eq!(
        events.iter().filter(|e| e.flags == UNREADABLE).count() as u64,
        c.unreadable
    );
}

/// Per thread (args[0] = 1 or 2): the counters in file order.
fn per_thread(events: &[Event], id: qtrace::EventId) -> [Vec<u64>; 2] {
    let mut out = [Vec::new(), Vec::new()];
    for e in events.iter().filter(|e| e.id != HOOPS) {
        assert_eq!(e.id, id, "an event the child never logged: {e:?}");
        assert!(matches!(e.args[0], 1 | 2), "bad thread in {e:?}");
        out[e.args[0] as usize - 1].push(e.args[1]);
    }
    out
}

fn consecutive(v: &[u64]) -> bool {
    v.windows(2).all(|w| w[1] == w[0] + 1)
}

/// Checks the circular ring file; returns (attempts, recovered of the last
/// `CIRC` logged).
fn check_circular(path: &Path) -> (u64, u64) {
    let bytes = std::fs::read(path).unwrap();
    let image = RingImage::parse(&bytes).unwrap();
    let rec = storage::recover_bytes(&bytes).unwrap();
    check_equations(&rec.counts, &rec.events);
    check_written(&rec, &path.with_extension("qtr"));
    // Time order.
    assert!(rec.events.windows(2).all(|w| w[0].time <= w[1].time));
    let threads = per_thread(&rec.events, user::USER0);
    // Each thread logs into its own shard: ring i+1's tickets are its
    // counters. Find each thread's shard by its records.
    let shards: Vec<_> = image.rings[1..].to_vec();
    assert_eq!(image.rings[0].attempts, 0, "no thread used the shared ring");
    assert!(shards.len() <= 2);
    let mut torn_in_last = 0;
    let mut readable: Vec<(u64, bool)> = Vec::new(); // (time, recovered?)
    let kept: std::collections::HashSet<(u64, u64)> = rec
        .events
        .iter()
        .filter(|e| e.id != HOOPS)
        .map(|e| (e.args[0], e.args[1]))
        .collect();
    for ring in &shards {
        assert!(ring.unreadable.len() <= 1);
        torn_in_last += ring.unreadable.len() as u64;
        let Some(t) = ring.records.first().map(|(_, e)| e.args[0]) else {
            continue; // killed during its first event
        };
        let mine = &threads[t as usize - 1];
        assert!(consecutive(mine), "thread {t}: {mine:?}");
        for (ticket, e) in &ring.records {
            assert_eq!((e.args[0], e.args[1]), (t, *ticket), "ticket = counter");
            readable.push((e.time, kept.contains(&(t, *ticket))));
        }
        // A thread's recovered events end at its last committed one.
        let last = ring.records.last().unwrap().0;
        // (None when the other thread logged all of the newest CIRC.)
        if let Some(&mine_last) = mine.last() {
            assert_eq!(mine_last, last);
        }
    }
    // The kept ones are the newest readable by time.
    readable.sort_unstable();
    let n_kept = readable.iter().filter(|r| r.1).count();
    assert_eq!(n_kept as u64, rec.counts.recovered);
    assert!(readable[readable.len() - n_kept..].iter().all(|r| r.1));
    let attempts = rec.counts.attempts;
    // Of the last CIRC events logged (the torn ones being the newest of
    // their thread), how many were recovered.
    let last_n = (CIRC as u64).min(attempts);
    let recovered_of_last = last_n - torn_in_last.min(last_n);
    assert_eq!(rec.counts.recovered, readable.len().min(CIRC) as u64);
    if attempts >= CIRC as u64 {
        assert!(recovered_of_last >= CIRC as u64 - 2);
    }
    (attempts, recovered_of_last)
}

/// Checks the fixed ring file; returns its attempts.
fn check_fixed(path: &Path) -> u64 {
    let rec = storage::recover_file(path).unwrap();
    let c = rec.counts;
    check_equations(&c, &rec.events);
    check_written(&rec, &path.with_extension("qtr"));
    assert_eq!(c.overwritten, 0);
    assert_eq!(c.accepted, c.attempts.min(FIXED as u64));
    assert!(c.unreadable <= 2, "{c:?}");
    for (t, mine) in per_thread(&rec.events, user::USER1).iter().enumerate() {
        assert!(
            mine.is_empty() || (mine[0] == 0 && consecutive(mine)),
            "thread {}: not its first events in order",
            t + 1
        );
    }
    c.attempts
}

/// A heap queue's trace saved by the panic hook: events valid, in order.
fn check_panic_save(path: &Path, id: qtrace::EventId) {
    let events: Vec<Event> = qtrace::reader::TraceReader::open(path)
        .unwrap_or_else(|e| panic!("the panic hook did not save {}: {e}", path.display()))
        .map(|e| e.unwrap())
        .collect();
    let threads = per_thread(&events, id);
    assert!(threads.iter().any(|t| !t.is_empty()));
    for mine in &threads {
        assert!(mine.windows(2).all(|w| w[0] < w[1]));
    }
}

fn crash_runs(mode: &str, max_delay_us: u64) {
    let mut rng = Rng::new();
    let mut worst = u64::MAX;
    let mut full = 0;
    let t0 = Instant::now();
    for _ in 0..RUNS {
        let delay = rng.below(max_delay_us);
        let dir = run_child(mode, delay);
        let (circ_attempts, of_last) = check_circular(&dir.path().join("queue0-circular.ring"));
        let fixed_attempts = check_fixed(&dir.path().join("queue1-fixed.ring"));
        assert!(
            fixed_attempts <= circ_attempts && circ_attempts <= fixed_attempts + 2,
            "circular {circ_attempts}, fixed {fixed_attempts}"
        );
        if circ_attempts >= CIRC as u64 {
            worst = worst.min(of_last);
            full += 1;
        }
        if mode == "panic" {
            check_panic_save(&dir.path().join("queue2-circular.qtr"), user::USER2);
            check_panic_save(&dir.path().join("queue3-fixed.qtr"), user::USER3);
        }
    }
    println!(
        "{mode}: {RUNS} runs in {:?}; {full} with the ring full: at least {worst} of the last {CIRC} recovered",
        t0.elapsed()
    );
    assert!(full > 0, "no run filled the ring: raise the delays");
}

#[test]
fn sigkill_at_a_random_moment() {
    crash_runs("kill", 20_000);
}

#[test]
fn abort_at_a_random_moment() {
    crash_runs("abort", 20_000);
}

#[test]
fn segfault_at_a_random_moment() {
    crash_runs("segv", 20_000);
}

#[test]
fn panic_in_a_non_main_thread() {
    crash_runs("panic", 20_000);
}
