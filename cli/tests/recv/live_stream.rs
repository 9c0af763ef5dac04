//! The known workload the live tests stream: two periodic tasks on two
//! CPUs on a manual clock (so every figure is exact), after a burst that
//! overflows the sender's queue and a payload longer than the queue (so
//! there is always a loss to show).

use std::net::SocketAddr;
use std::thread;
use std::time::Duration;

use qtrace::classes::{system, user};
use qtrace::clock::{Clock, ManualClock};
use qtrace::combine::{MAX_PAYLOAD, MAX_RECORDS};
use qtrace::queues::{DatagramsPerPeriod, Udp, UdpParams};
use qtrace::{Config, ShutdownReport, Tracer};

/// Cycles of the workload: 1 ms apart, from 1 ms.
pub const CYCLES: u64 = 100;

/// Events of the burst at time 0 (the queue holds [`CAPACITY`]).
pub const BURST: u64 = 3000;

/// The sender queue's capacity.
pub const CAPACITY: usize = 256;

/// Records of the payload logged after the burst: a run of
/// [`MAX_RECORDS`] (257) never fits a queue of [`CAPACITY`] (256), so it is
/// dropped whatever the sending thread does. The burst alone may lose
/// nothing: on a loaded machine the woken sending thread can keep pace
/// with it (it did once in CI), and then the stream had no loss to show.
pub const UNFIT: u64 = MAX_RECORDS as u64;

/// Records the workload logs: what the sender's counters add up to
/// (accepted plus dropped).
pub const RECORDS: u64 = BURST + UNFIT + 6 * CYCLES;

/// Logs the workload into `tracer` (on `clock`), pausing `pause` after each
/// cycle: task 1 on CPU 0 runs 0–300 µs of each cycle, task 2 on CPU 1
/// 100–600 µs; each is activated when it starts and ends its cycle when it
/// stops (response times 300 µs and 500 µs).
pub fn log_cycles(tracer: &Tracer, clock: &ManualClock, pause: Duration) {
    for k in 0..CYCLES {
        let base = (k + 1) * 1_000_000;
        clock.set(base);
        tracer.log_event_from(0, system::ACTIVATE, [1, 0]);
        tracer.log_event_from(0, system::SCHEDULE, [1, 0]);
        clock.set(base + 100_000);
        tracer.log_event_from(1, system::ACTIVATE, [2, 0]);
        tracer.log_event_from(1, system::SCHEDULE, [2, 0]);
        clock.set(base + 300_000);
        tracer.log_event_from(0, system::ENDCYCLE, [1, 0]);
        clock.set(base + 600_000);
        tracer.log_event_from(1, system::ENDCYCLE, [2, 0]);
        thread::sleep(pause);
    }
}

/// Streams the workload to `to` from a UDP queue: the burst (user events
/// at time 0, more than the queue holds: some are dropped, counted and
/// reported) and a payload run longer than the queue (always dropped,
/// [`UNFIT`] records), then the cycles, paced by `pause`, then the close. The
/// sender's report says what it delivered and dropped.
pub fn stream(to: SocketAddr, pause: Duration) -> ShutdownReport {
    let clock = ManualClock::new(0);
    let tracer = Tracer::with_config(Config::default().with_clock(Clock::manual(&clock)));
    let q = tracer
        .create_queue::<Udp>(
            UdpParams::to(to)
                .with_capacity(CAPACITY)
                .with_period(Duration::from_millis(5))
                // One datagram (44 events) per period: the burst cannot be
                // sent as fast as it is logged, whatever the machine.
                .with_datagrams_per_period(DatagramsPerPeriod::Limit(1)),
        )
        .unwrap();
    tracer.assign_class(system::CLASS, q).unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer.activate().unwrap();
    for i in 0..BURST {
        tracer.log_event_from(0, user::USER0, [i, 0]);
    }
    tracer.log_bytes(user::USER1, &[0x51; MAX_PAYLOAD]);
    // The queue drains and reopens: none of the cycles' events is dropped.
    thread::sleep(Duration::from_millis(100));
    log_cycles(&tracer, &clock, pause);
    tracer.shutdown().unwrap()
}

/// The figures the view must show for the workload, whatever was dropped
/// of the burst: the task rows (task, CPU share, activations, response
/// p50, p99, max, preemptions, blocked) and CPU rows.
///
/// The trace spans 0 to 100.6 ms; task 1 ran 30 ms of it (29.8 %), task 2
/// 50 ms (49.7 %). The loss (a hoops record at time 0) spoils each CPU's
/// first idle span (the analysis leaves it out): CPU 0 is busy 30 of
/// 99.6 ms measured (30.1 %), CPU 1 50 of 99.5 ms (50.2 %).
pub const TASK_ROWS: [[&str; 8]; 2] = [
    [
        "2", "49.7%", "100", "500.0us", "500.0us", "500.0us", "0", "0ns",
    ],
    [
        "1", "29.8%", "100", "300.0us", "300.0us", "300.0us", "0", "0ns",
    ],
];

/// See [`TASK_ROWS`]: (CPU, busy).
pub const CPU_ROWS: [(u32, &str); 2] = [(0, "30.1%"), (1, "50.2%")];
