//! What the benches share: the event count per iteration, the queue
//! capacity, the event they log, a tracer set up for one case, the thread
//! CPU clock they time with, and their settings from the environment. (Each bench uses a part of it.)
#![allow(dead_code)]

use std::time::Duration;

use qtrace::classes::user;
use qtrace::{EventId, Tracer};

/// Events logged per iteration (per thread in `threads`).
pub const EVENTS: u64 = 1 << 16;
/// Records every queue and ring holds (qtrace's default, as S.Ha.R.K.'s).
pub const CAPACITY: usize = 8192;
/// The bit a route word uses for "recorded" (mirrors qtrace's hot path).
pub const LIVE: u32 = 1 << 31;
/// The event every single-thread case logs.
pub const ID: EventId = user::USER0;

/// A tracer with one queue of type `T`, the user class routed to it, phase 2
/// done; `enabled = false` masks [`ID`] out. Files (none are written by the
/// benches' queues) would go to `<tmp>/qtrace-bench-<bench>`.
pub fn tracer_with<T: qtrace::queues::QueueType>(
    bench: &str,
    params: T::Params,
    enabled: bool,
) -> Tracer {
    let tracer = Tracer::with_config(
        qtrace::Config::default()
            .with_output_dir(std::env::temp_dir().join(format!("qtrace-bench-{bench}"))),
    );
    let q = tracer.create_queue::<T>(params).expect("create queue");
    tracer.assign_class(user::CLASS, q).expect("assign");
    if !enabled {
        tracer.notrace_event(ID).expect("mask");
    }
    tracer.activate().expect("activate");
    tracer
}

/// This thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`): time spent
/// descheduled on a shared machine is not charged to the case running.
pub fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant
    // every Linux kernel since 2.6.12 supports.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// A setting from the environment variable `name`, or `default` when it is
/// unset or does not parse.
pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
