//! The reference corpus's workload (BENCHMARKS.md, "Sizes on disk"):
//! one generator that `examples/corpus` writes to disk and
//! `benches/decode.rs` reads from memory (it includes this file by path).
//!
//! A small system on **4 CPUs** (the records' sources 0–3) running 8 tasks,
//! stamped with the **monotonic clock** as it is generated, each step a short
//! loop of real work first, so the time deltas are those of a running
//! program (they vary from run to run; the records' ids, sources and
//! arguments do not: the steps follow a fixed pseudo-random sequence). Of
//! every 32 steps, on the CPU the step picks:
//!
//! - 17 are **task switches**: `system:endcycle` of the running task, then
//!   `system:schedule` of the next (2 records);
//! - 2 a **timer interrupt** (`lowlevel:interrupt`, line 0) waking a task
//!   (`system:activate`), 1 a **network interrupt** (line 5) waking the
//!   server task 7;
//! - 3 **semaphore waits**, 3 **signals** (`semaphore:wait`, `signal`: the
//!   task and one of 3 semaphores);
//! - 3 **messages with arguments**: `app:msg_send` (to task, bytes) and,
//!   for 2 of them, `app:msg_recv` (from task, bytes) on the receiver's CPU;
//! - 2 the **counter** `app:ready` (the ready queue's length, 0–8);
//! - 1 a **string**, `app:note`: a line such as `task 3: job 1234 done in
//!   417 us` (20–40 bytes), a combine run of 3 or 4 records (FORMAT.md 1.8).
//!
//! [`generate`] returns exactly the records asked for (the last step cut
//! to fit, a string run never cut).
#![allow(dead_code)]

use std::hint::black_box;

use qtrace::classes::{lowlevel, semaphore, system, Catalog};
use qtrace::clock::Clock;
use qtrace::combine::Run;
use qtrace::Event;

qtrace::classes! {
    /// The corpus's application class.
    static CATALOG;

    /// The simulated application's own events.
    mod app: "the corpus's application" {
        event MSG_SEND = "msg_send": "a task sent a message" (to, bytes);
        event MSG_RECV = "msg_recv": "a task received a message" (from, bytes);
        event NOTE = "note": "a line of text" (arg);
        /// The ready queue's length.
        counter READY = "ready": "jobs in the ready queue" (u64, jobs);
    }
}

/// CPUs: the records' sources.
pub const CPUS: u32 = 4;
/// Tasks (0–7; 7 is the network server).
pub const TASKS: u64 = 8;

/// The catalog of the corpus's files: the built-in classes and `app`.
pub fn catalog() -> Catalog {
    let mut catalog = Catalog::builtin();
    catalog
        .define_static(&CATALOG)
        .expect("the app class fits the built-in catalog");
    catalog
}

/// `n` records of the workload, stamped by `clock` as they are made.
pub fn generate(clock: &Clock, n: usize) -> Vec<Event> {
    let mut out = Vec::with_capacity(n + 8);
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut running = [0u64, 1, 2, 3];
    let mut ready = 3u64;
    let mut jobs = 0u64;
    let mut note = String::new();
    while out.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Real work: the delta to the previous record is a program's.
        let work = 50 + (x >> 8) % 400;
        let mut acc = 0u64;
        for i in 0..work {
            acc = acc.wrapping_mul(31).wrapping_add(i);
        }
        black_box(acc);
        let cpu = ((x >> 20) % CPUS as u64) as u32;
        let task = running[cpu as usize];
        let other = (x >> 24) % TASKS;
        let t = clock.now();
        match x % 32 {
            0 | 1 => {
                out.push(Event::new(t, lowlevel::INTERRUPT, cpu, [0, 0]));
                out.push(Event::new(clock.now(), system::ACTIVATE, cpu, [other, 0]));
            }
            2 => {
                out.push(Event::new(t, lowlevel::INTERRUPT, cpu, [5, 0]));
                out.push(Event::new(clock.now(), system::ACTIVATE, cpu, [7, 0]));
            }
            3..=5 => out.push(Event::new(t, semaphore::WAIT, cpu, [task, (x >> 40) % 3])),
            6..=8 => out.push(Event::new(t, semaphore::SIGNAL, cpu, [task, (x >> 40) % 3])),
            9..=11 => {
                let bytes = 16 + (x >> 32) % 1500;
                out.push(Event::new(t, app::MSG_SEND.id(), cpu, [other, bytes]));
                if x % 32 != 11 {
                    let to = (other % CPUS as u64) as u32;
                    out.push(Event::new(
                        clock.now(),
                        app::MSG_RECV.id(),
                        to,
                        [task, bytes],
                    ));
                }
            }
            12 | 13 => {
                ready = (ready + (x >> 36) % 3).saturating_sub(1).min(TASKS);
                let (id, args) = (app::READY.id(), app::READY.args(ready));
                out.push(Event::new(t, id, cpu, args));
            }
            14 => {
                note.clear();
                use std::fmt::Write;
                let _ = write!(
                    note,
                    "task {task}: job {jobs} done in {} us",
                    (x >> 44) % 2000
                );
                let run = Run::new(t, app::NOTE.id(), cpu, 0, note.as_bytes());
                if out.len() + run.len() > n {
                    // Never a cut run: a switch's records fill the rest.
                    out.push(Event::new(t, system::ENDCYCLE, cpu, [task, 0]));
                    continue;
                }
                out.extend((0..run.len()).map(|i| run.record(i)));
            }
            _ => {
                jobs += 1;
                out.push(Event::new(t, system::ENDCYCLE, cpu, [task, 0]));
                let next = (task + 1 + (x >> 28) % 3) % TASKS;
                running[cpu as usize] = next;
                out.push(Event::new(clock.now(), system::SCHEDULE, cpu, [next, 0]));
            }
        }
    }
    out.truncate(n);
    out
}

/// The events logged among `records`, as `qtrace stats` counts them: a
/// string's combine run is one event (its continuation records, flagged
/// combine (0x4000) without begin (0x2000), FORMAT.md 1.8, are not).
pub fn logged_events(records: &[Event]) -> usize {
    records
        .iter()
        .filter(|e| e.flags & 0x6000 != 0x4000)
        .count()
}
