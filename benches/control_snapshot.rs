//! A snapshot of a 1 M-event ring through the control endpoint (issue 36:
//! "answers in < 100 ms"). A circular queue of 2^20 events
//! (`RingStorage::Memory`) is filled and wrapped; the endpoint is bound; then
//! each round sends `snapshot PATH` through the real socket, as `qtrace ctl
//! … snapshot PATH` does (connect, one request frame, read the reply), and
//! times it from `connect` to the reply's last byte. The file (the whole
//! ring as a trace) is written by the endpoint's thread into a fresh
//! directory under `$TMPDIR` and removed, untimed, after each request.
//!
//! Every round runs three cases, in a rotating order:
//! - `quiet`: nothing else logs;
//! - `paced`: a producer thread logs into the queue meanwhile, 1000 events
//!   then a 1 ms sleep (at most 1 M events/s, a busy program's rate);
//! - `flat-out`: a producer thread logs into the queue as fast as it can
//!   (it overwrites the ring several times during the snapshot, so the file
//!   holds fewer events and more hoops records: the report gives both).
//!
//! The report gives, per case, the least, median and greatest time and the
//! records of the last file, and for `quiet` the process's CPU time per
//! snapshot (user and system: the snapshot's own cost, which a loaded host
//! does not inflate as it does the wall time). Nothing is asserted about
//! time.
//!
//! Run: `cargo bench -p qtrace-benches --features control --bench
//! control_snapshot` (`QTRACE_SNAPSHOT_ROUNDS` sets the rounds, default
//! 20; `TMPDIR=/dev/shm` writes the files to tmpfs).

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use qtrace::classes::user;
use qtrace::control::{Endpoint, Reply, Request};
use qtrace::queues::{Circular, CircularParams};
use qtrace::storage::RingStorage;
use qtrace::Tracer;

/// The ring's capacity: 2^20 events.
const RING: usize = 1 << 20;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Case {
    Quiet,
    Paced,
    FlatOut,
}

const CASES: [Case; 3] = [Case::Quiet, Case::Paced, Case::FlatOut];

impl Case {
    fn name(self) -> &'static str {
        match self {
            Case::Quiet => "quiet",
            Case::Paced => "paced",
            Case::FlatOut => "flat-out",
        }
    }
}

/// A producer thread logging `USER0` into the queue until stopped; returns
/// the events it logged.
struct Producer {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<u64>,
}

impl Producer {
    fn start(tracer: &Arc<Tracer>, paced: bool) -> Producer {
        let stop = Arc::new(AtomicBool::new(false));
        let started = Arc::new(AtomicBool::new(false));
        let thread = {
            let (tracer, stop, started) =
                (Arc::clone(tracer), Arc::clone(&stop), Arc::clone(&started));
            std::thread::spawn(move || {
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..1000 {
                        tracer.log_event(user::USER0, [i, 1]);
                        i += 1;
                    }
                    started.store(true, Ordering::Release);
                    if paced {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                i
            })
        };
        while !started.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
        Producer { stop, thread }
    }

    fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("the producer ends")
    }
}

/// One `snapshot` request through the socket: its time and the records the
/// reply says were written.
fn snapshot(endpoint: &Path, queue: u16, path: &Path) -> (Duration, u64) {
    let request = Request::Snapshot {
        queue: Some(queue),
        path: path.to_str().expect("a UTF-8 temporary path").into(),
    }
    .frame();
    let started = Instant::now();
    let mut s = UnixStream::connect(endpoint).expect("connect to the endpoint");
    s.write_all(&request).expect("send the request");
    let mut len = [0u8; 4];
    s.read_exact(&mut len).expect("a reply");
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut body).expect("its body");
    let took = started.elapsed();
    match Reply::parse(&body) {
        Ok(Reply::Snapshot(n)) => (took, n),
        other => panic!("the endpoint answered {other:?}"),
    }
}

/// The process's CPU time so far (user and system, all threads): in the
/// `quiet` case, what the snapshot itself costs the endpoint's thread (and
/// the kernel for it), whatever else the machine runs.
fn process_cpu() -> Duration {
    let mut u = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `u` is a valid, writable rusage; getrusage only writes it.
    let r = unsafe { libc::getrusage(libc::RUSAGE_SELF, u.as_mut_ptr()) };
    assert_eq!(r, 0, "getrusage");
    // SAFETY: zeroed is a valid rusage, and getrusage filled it.
    let u = unsafe { u.assume_init() };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn main() {
    // `cargo bench` passes `--bench` (and `cargo test --benches` nothing
    // useful): run only when asked to benchmark.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let rounds: usize = std::env::var("QTRACE_SNAPSHOT_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);

    let tracer = Arc::new(Tracer::new());
    let q = tracer
        .create_queue::<Circular>(
            CircularParams::default()
                .with_capacity(RING)
                .with_ring(RingStorage::Memory),
        )
        .expect("create the queue");
    tracer.assign_class(user::CLASS, q).expect("route user");
    tracer.activate().expect("activate");
    // A full ring, and some overwritten.
    for i in 0..RING as u64 + 1000 {
        tracer.log_event(user::USER0, [i, 0]);
    }
    let endpoint =
        Endpoint::bind(Arc::clone(&tracer), "bench-snapshot").expect("bind the endpoint");
    let dir: PathBuf =
        std::env::temp_dir().join(format!("qtrace-bench-snapshot-{}", std::process::id()));
    std::fs::create_dir(&dir).expect("a directory for the snapshots");

    println!(
        "control_snapshot: {RING}-event circular ring, {rounds} rounds, files in {}, load {} at start, {}",
        dir.display(),
        load_average(),
        cpu_model()
    );
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); CASES.len()];
    let mut records = [0u64; 3];
    let mut logged = [0u64; 3];
    let mut cpu_quiet: Vec<Duration> = Vec::new();
    let counter = AtomicU64::new(0);
    for round in 0..rounds {
        for k in 0..CASES.len() {
            let c = (round + k) % CASES.len();
            let case = CASES[c];
            let path = dir.join(format!(
                "snap-{}.qtr",
                counter.fetch_add(1, Ordering::Relaxed)
            ));
            let producer = match case {
                Case::Quiet => None,
                Case::Paced => Some(Producer::start(&tracer, true)),
                Case::FlatOut => Some(Producer::start(&tracer, false)),
            };
            let cpu = process_cpu();
            let (took, n) = snapshot(endpoint.path(), q.0, &path);
            if case == Case::Quiet {
                cpu_quiet.push(process_cpu() - cpu);
            }
            if let Some(p) = producer {
                logged[c] += p.stop();
            }
            times[c].push(took);
            records[c] = n;
            std::fs::remove_file(&path).expect("remove the snapshot");
        }
    }
    std::fs::remove_dir(&dir).expect("remove the directory");
    for (c, case) in CASES.iter().enumerate() {
        let t = &mut times[c];
        t.sort();
        let n = t.len();
        println!(
            "  {:<8}: least {:7.1} ms, median {:7.1} ms, greatest {:7.1} ms; last file {} records{}",
            case.name(),
            ms(t[0]),
            ms(t[n / 2]),
            ms(t[n - 1]),
            records[c],
            if *case == Case::Quiet {
                String::new()
            } else {
                format!(", producer logged {} events in all", logged[c])
            }
        );
    }
    cpu_quiet.sort();
    let n = cpu_quiet.len();
    println!(
        "  quiet CPU time (the process's user + system, the snapshot's own cost): least {:.1} ms, median {:.1} ms, greatest {:.1} ms",
        ms(cpu_quiet[0]),
        ms(cpu_quiet[n / 2]),
        ms(cpu_quiet[n - 1])
    );
    println!("load {} at end", load_average());
}
