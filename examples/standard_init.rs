//! The main job: a small real-time system — a scheduler on two CPUs, periodic
//! tasks, a network server woken by interrupts, semaphores — traced with
//! qtrace's standard preset, then shut down, with a summary of what was
//! recorded, where the trace files are and how to read them.
//!
//! ```text
//! cargo run --release --example standard_init [OUTPUT_DIR]
//! ```
//!
//! Files go to `OUTPUT_DIR`, else `$QTRACE_DIR`, else `qtrace-out` (created).
//!
//! Tracing set-up (the standard preset plus three lines):
//! - queue 0, circular (standard): the system class — the last 8192
//!   scheduler events, a flight recorder;
//! - queue 1, fixed (standard): the semaphore and low-level (interrupt)
//!   classes — the first 8192 of them;
//! - queue 2, circular-online: the application's own class `app` (declared
//!   once with `qtrace::classes!`, logged with `qtrace::event!` and a
//!   `qtrace::scope!` around each job) — every application event, drained
//!   to disk while the system runs. Among its events, the counter `app:ready`:
//!   the ready queue's length, logged each time a job enters or leaves it
//!   (a counter track per source in Perfetto).
//!
//! The scheduler and interrupt events are enough for `qtrace analyze` (and
//! the Perfetto and Chrome exports) to derive *wake-up flows*: the network
//! interrupt's handler activates the server, the timer's the periodic
//! tasks, and each flow runs from that activate to the task's next
//! schedule (its wake-up latency). The summary says where to see both.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use qtrace::classes::{lowlevel, semaphore, system};
use qtrace::global::Global;
use qtrace::queues::{Online, OnlineParams};
use qtrace::reader::TraceReader;
use qtrace::ClassId;
use qtrace::{global, init, Config, EventId};

/// How long the simulated system runs.
const RUN_FOR: Duration = Duration::from_millis(2000);
/// Simulated CPUs.
const CPUS: u32 = 2;
/// The timer interrupt period.
const TICK: Duration = Duration::from_millis(1);
/// The network server's task id, activated by the network interrupt.
const NET_SERVER: u16 = 9;
/// Interrupt lines.
const IRQ_TIMER: u64 = 0;
const IRQ_NET: u64 = 5;

qtrace::classes! {
    /// The application's classes, checked at compile time.
    static CATALOG;

    /// The application's own events.
    mod app: "the simulated application" {
        event JOB_DONE = "job_done": "a job finished" (task, job);
        event RESPONSE_US = "response_us": "a job's response time in microseconds" (task, us);
        event DEADLINE_MISS = "deadline_miss": "a job finished late, by microseconds" (task, late_us);
        event PACKET = "packet": "a network packet arrived" (bytes, packet);
        /// A job on a CPU, from its dispatch to its end; code 1: deadline missed.
        scope JOB = "job": "one job on a CPU" (task, job);
        /// The ready queue's length, after a job entered or left it.
        counter READY = "ready": "jobs in the ready queue" (u64, jobs);
    }
}

struct TaskSpec {
    id: u16,
    period: Duration,
    work: Duration,
    semaphore: Option<u64>,
}

const fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}
const fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}

const TASKS: &[TaskSpec] = &[
    TaskSpec {
        id: 1,
        period: ms(2),
        work: us(150),
        semaphore: Some(0),
    },
    TaskSpec {
        id: 2,
        period: ms(3),
        work: us(200),
        semaphore: None,
    },
    TaskSpec {
        id: 3,
        period: ms(4),
        work: us(300),
        semaphore: Some(0),
    },
    TaskSpec {
        id: 4,
        period: ms(5),
        work: us(250),
        semaphore: Some(1),
    },
    TaskSpec {
        id: 5,
        period: ms(6),
        work: us(400),
        semaphore: None,
    },
    TaskSpec {
        id: 6,
        period: ms(8),
        work: us(350),
        semaphore: Some(1),
    },
    TaskSpec {
        id: 7,
        period: ms(10),
        work: us(500),
        semaphore: Some(0),
    },
    TaskSpec {
        id: 8,
        period: ms(12),
        work: us(600),
        semaphore: None,
    },
];

/// One job waiting for a CPU.
struct Job {
    task: u16,
    number: u64,
    released: Instant,
    deadline: Instant,
    last: bool,
}

/// The simulated kernel: a ready queue, two semaphores, counters.
struct Kernel {
    ready: Mutex<VecDeque<Job>>,
    wake: Condvar,
    semaphores: [Mutex<()>; 2],
    /// Whether a job of each task is queued or running (for intactivation).
    busy: [AtomicBool; 16],
    stop: AtomicBool,
    logged: [AtomicU64; 6],
}

impl Kernel {
    /// Logs through the process-wide tracer, as kernel code deep in a
    /// program would, and counts per class for the summary.
    fn log(&self, class: ClassId, id: EventId, args: [u64; 2]) {
        qtrace::log_event(id, args);
        self.logged[class.0 as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts `n` events of `class` logged by the macros.
    fn count(&self, class: ClassId, n: u64) {
        self.logged[class.0 as usize].fetch_add(n, Ordering::Relaxed);
    }

    fn release(&self, job: Job) {
        let mut ready = self.ready.lock().unwrap();
        ready.push_back(job);
        self.ready_length(ready.len());
        drop(ready);
        self.wake.notify_one();
    }

    /// Logs the ready queue's length (under its lock, so values come in
    /// the order they were).
    fn ready_length(&self, n: usize) {
        let (id, args) = (app::READY.id(), app::READY.args(n as u64));
        self.log(app::CLASS, id, args);
    }
}

fn spin(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// The timer and network interrupt handlers: release jobs.
fn interrupts(k: &Kernel, start: Instant) {
    qtrace::source::set_current(100); // "interrupt context"
    let mut next_release: Vec<Instant> = TASKS.iter().map(|_| start).collect();
    let mut jobs: Vec<u64> = vec![0; TASKS.len()];
    let mut tick = 0u64;
    let mut packets = 0u64;
    let end = start + RUN_FOR;
    while Instant::now() < end {
        tick += 1;
        k.log(lowlevel::CLASS, lowlevel::INTERRUPT, [IRQ_TIMER, 0]);
        let now = Instant::now();
        for (i, t) in TASKS.iter().enumerate() {
            if now < next_release[i] {
                continue;
            }
            let released = next_release[i];
            next_release[i] += t.period;
            if k.busy[t.id as usize].swap(true, Ordering::AcqRel) {
                // Still running its previous job: the activation is lost.
                k.log(system::CLASS, system::INTACTIVATION, [t.id as u64, 0]);
                continue;
            }
            k.log(system::CLASS, system::ACTIVATE, [t.id as u64, 0]);
            jobs[i] += 1;
            k.release(Job {
                task: t.id,
                number: jobs[i],
                released,
                deadline: released + t.period,
                last: released + t.period >= end,
            });
        }
        if tick % 7 == 0 {
            packets += 1;
            k.log(lowlevel::CLASS, lowlevel::INTERRUPT, [IRQ_NET, 0]);
            qtrace::event!(Global, app::PACKET, 64 + (packets * 37) % 1400, packets);
            k.count(app::CLASS, 1);
            if !k.busy[NET_SERVER as usize].swap(true, Ordering::AcqRel) {
                k.log(system::CLASS, system::ACTIVATE, [NET_SERVER as u64, 0]);
                k.release(Job {
                    task: NET_SERVER,
                    number: packets,
                    released: Instant::now(),
                    deadline: Instant::now() + ms(7),
                    last: false,
                });
            }
        }
        thread::sleep(TICK.saturating_sub(now.elapsed()));
    }
    k.stop.store(true, Ordering::Release);
    k.wake.notify_all();
}

/// One CPU: takes ready jobs and runs them.
fn cpu(k: &Kernel, cpu: u32) {
    qtrace::source::set_current(cpu);
    loop {
        let job = {
            let mut ready = k.ready.lock().unwrap();
            loop {
                if let Some(j) = ready.pop_front() {
                    k.ready_length(ready.len());
                    break Some(j);
                }
                if k.stop.load(Ordering::Acquire) {
                    break None;
                }
                ready = k.wake.wait_timeout(ready, ms(5)).unwrap().0;
            }
        };
        let Some(job) = job else { return };
        let task = job.task as u64;
        k.log(system::CLASS, system::SCHEDULE, [task, cpu as u64]);
        let mut job_scope = qtrace::scope!(Global, app::JOB, task, job.number);
        k.count(app::CLASS, 2); // its begin now, its end when it drops
        let spec = TASKS.iter().find(|t| t.id == job.task);
        let work = spec.map_or(us(120), |s| s.work);
        spin(work / 2);
        if let Some(sem) = spec.and_then(|s| s.semaphore) {
            let m = &k.semaphores[sem as usize];
            let guard = match m.try_lock() {
                Ok(g) => {
                    k.log(semaphore::CLASS, semaphore::WAITNB, [task, sem]);
                    g
                }
                Err(_) => {
                    k.log(semaphore::CLASS, semaphore::WAIT, [task, sem]);
                    m.lock().unwrap()
                }
            };
            spin(us(30)); // the critical section
            k.log(semaphore::CLASS, semaphore::SIGNAL, [task, sem]);
            drop(guard);
        }
        if job.number % 10 == 0 {
            // Every tenth job waits for a device: the task delays itself.
            k.log(system::CLASS, system::DELAY, [task, 100]);
            thread::sleep(us(100));
            k.log(system::CLASS, system::SCHEDULE, [task, cpu as u64]);
        }
        spin(work / 2);
        let now = Instant::now();
        qtrace::event!(Global, app::JOB_DONE, task, job.number);
        let response = now.duration_since(job.released).as_micros() as u64;
        qtrace::event!(Global, app::RESPONSE_US, task, response);
        k.count(app::CLASS, 2);
        if now > job.deadline {
            let late = now.duration_since(job.deadline).as_micros() as u64;
            qtrace::event!(Global, app::DEADLINE_MISS, task, late);
            k.count(app::CLASS, 1);
            job_scope.set_code(1);
        }
        drop(job_scope);
        if job.task == NET_SERVER {
            k.log(system::CLASS, system::SLEEP, [task, 0]);
        } else if job.last {
            k.log(system::CLASS, system::DESTROY, [task, 0]);
        } else {
            k.log(system::CLASS, system::ENDCYCLE, [task, 0]);
        }
        k.busy[job.task as usize].store(false, Ordering::Release);
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("QTRACE_DIR").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("qtrace-out"));
    std::fs::create_dir_all(&dir)?;

    // Phase 1: the standard preset (queue 0 circular with the system class,
    // queue 1 fixed), plus routes for the other classes.
    let tracer = init::standard_phase1(Config::default().with_output_dir(&dir))?;
    tracer.define_classes(&CATALOG)?;
    tracer.assign_class(semaphore::CLASS, init::STANDARD_FIXED)?;
    tracer.assign_class(lowlevel::CLASS, init::STANDARD_FIXED)?;
    let online = tracer.create_queue::<Online>(OnlineParams::default())?;
    tracer.assign_class(app::CLASS, online)?;
    // Phase 2: queues activate (the online queue's drain task starts).
    init::standard_phase2(&tracer)?;
    let tracer = global::install(tracer)?;

    let kernel = Arc::new(Kernel {
        ready: Mutex::new(VecDeque::new()),
        wake: Condvar::new(),
        semaphores: [Mutex::new(()), Mutex::new(())],
        busy: Default::default(),
        stop: AtomicBool::new(false),
        logged: Default::default(),
    });
    qtrace::source::set_current(CPUS); // the main thread creates the tasks
    for t in TASKS {
        kernel.log(
            system::CLASS,
            system::CREATE,
            [t.id as u64, t.period.as_micros() as u64],
        );
    }
    kernel.log(system::CLASS, system::CREATE, [NET_SERVER as u64, 0]);

    let started = Instant::now();
    let cpus: Vec<_> = (0..CPUS)
        .map(|c| {
            let k = Arc::clone(&kernel);
            thread::spawn(move || cpu(&k, c))
        })
        .collect();
    let k = Arc::clone(&kernel);
    interrupts(&k, started);
    for c in cpus {
        c.join().expect("cpu thread");
    }
    kernel.log(system::CLASS, system::DISABLE, [NET_SERVER as u64, 0]);
    let ran = started.elapsed();

    // Shutdown: queues save (circular, fixed) or finish draining (online).
    let report = tracer.shutdown()?;

    println!(
        "qtrace standard_init: simulated scheduler, {CPUS} CPUs, {} periodic tasks + a network server, {:.2} s",
        TASKS.len(),
        ran.as_secs_f64()
    );
    let catalog = tracer.catalog();
    println!("\nevents logged per class:");
    let mut total = 0;
    for (class, n) in kernel.logged.iter().enumerate() {
        let n = n.load(Ordering::Relaxed);
        total += n;
        if n > 0 {
            let name = &catalog.class(ClassId(class as u16)).expect("defined").name;
            println!("  {name:<10} {n:>8}");
        }
    }
    println!("  {:<10} {total:>8}", "total");

    println!("\nqueues:");
    for q in &report.queues {
        let c = q.counters;
        println!(
            "  {} {:<8} accepted {:>7}  saved {:>6}  overwritten {:>6}  dropped {:>6}{}",
            q.handle,
            q.type_name,
            c.accepted,
            c.delivered,
            c.overwritten,
            c.dropped,
            if c.queued > 0 {
                format!("  never saved {}", c.queued)
            } else {
                String::new()
            }
        );
        if let Some(e) = q.error.as_ref().or(q.status.last_error.as_ref()) {
            println!("      problem: {e}");
        }
    }
    println!(
        "  events lost in total: {} (each loss is marked in its file by a hoops record)",
        report.total_lost()
    );

    println!("\ntrace files:");
    let mut files = Vec::new();
    for q in &report.queues {
        for f in &q.status.files {
            let mut records = 0u64;
            let mut hoops = 0u64;
            let mut lost = 0u64;
            let reader = TraceReader::open(f)?;
            for e in reader {
                let e = e?;
                records += 1;
                if e.id == qtrace::classes::tracer::HOOPS {
                    hoops += 1;
                    lost += e.args[0];
                }
            }
            println!(
                "  {}  {} records, {} hoops records marking {} lost events",
                f.display(),
                records,
                hoops,
                lost
            );
            files.push(f.display().to_string());
        }
    }
    println!("\nread them with:");
    println!(
        "  cargo run --release -p qtrace-cli -- dump {}",
        files.join(" ")
    );
    println!(
        "  cargo run --release -p qtrace-cli -- stats {}",
        files.join(" ")
    );
    println!(
        "  cargo run --release -p qtrace-cli -- convert --to perfetto --out {} {}   # ui.perfetto.dev",
        dir.join("trace.perfetto").display(),
        files.join(" ")
    );
    println!(
        "  cargo run --release -p qtrace-cli -- analyze {}",
        files.join(" ")
    );
    println!(
        "  cargo run --release -p qtrace-cli -- plot --out {} {}   # an SVG timeline",
        dir.join("schedule.svg").display(),
        files.join(" ")
    );
    println!("\nin Perfetto: the counter track app:ready (the ready queue's length) under each");
    println!("source's track, and arrows (flows) from each interrupt handler's activate to the");
    println!("woken task's `task N` slice; `analyze` prints their wake-up latencies, and");
    println!("`qtrace sql` has them as the table wake_flows.");
    if !report.is_clean() {
        return Err("a queue reported a problem (see above)".into());
    }
    Ok(())
}
