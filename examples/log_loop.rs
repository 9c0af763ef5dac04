//! Logs N events in a tight loop, for counting instructions per event with
//! callgrind (`scripts/instructions.sh` runs it twice with different N and
//! divides the difference of the totals by the difference of N, so set-up and
//! shutdown cancel out).
//!
//! ```text
//! cargo run --release --example log_loop -- <events> <case>
//! ```
//!
//! Cases:
//! - `circular`, `fixed`, `dummy`: an enabled event into a queue of that type
//!   (8192 records, the default; the loop wraps the circular queue and fills
//!   the fixed one, whose later events are counted as dropped);
//! - `online`: an enabled event into an online queue of 262,144 records
//!   whose drain task does not run during the count (the producer's
//!   claim and commit of the drop ring; the UDP queue's producer takes the
//!   same path);
//! - `disabled`: a masked-out event (routed to a dummy queue, switched off);
//! - `clock`: only the tracer's clock read (what the budget excludes);
//! - `floor`: clock read + one record stored into a preallocated array;
//! - `circular_macro`: as `circular`, logged with `qtrace::event!` on an
//!   event declared by `qtrace::classes!` (not in `scripts/instructions.sh`'s
//!   checked cases; run `CASES="circular circular_macro"
//!   scripts/instructions.sh` to see that it costs what `circular` costs);
//! - `circular_counter`: as `circular_macro`, a counter value logged with
//!   `Tracer::log_counter` (`CASES="circular circular_counter"
//!   scripts/instructions.sh`: it costs what `circular` costs);
//! - `circular_flow`: as `circular_macro`, a flow begun with
//!   `Tracer::flow_begin` (which also reads the thread's source for the
//!   origin; `CASES="circular circular_flow" scripts/instructions.sh`);
//! - `rtrb`: clock read + one record pushed into an rtrb SPSC ring of 8192
//!   (the consumer side discards everything when it is full), for comparison.
//!
//! Each case's loop is its own `#[inline(never)]` function named `run_<case>`
//! so callgrind can count only inside it (`--toggle-collect`).

use std::hint::black_box;
use std::process::ExitCode;

use qtrace::classes::user;
use qtrace::clock::Clock;
use qtrace::queues::{Circular, CircularParams, Dummy, Fixed, FixedParams, Online, OnlineParams};
use qtrace::{Config, Event, Tracer};

const CAPACITY: usize = 8192;

/// The `online` case's queue: room for every event of a count (its drain
/// task, an hour's period and the high-water mark at 80 % of this, never
/// runs during one, so what is counted is the producer's path alone).
const ONLINE_CAPACITY: usize = 1 << 18;

qtrace::classes! {
    static CATALOG;
    mod bench: "the macro case" {
        event TICK = "tick": "one event of the loop" (i, zero);
        counter LEVEL = "level": "one counter value of the loop" (u64, items);
        flow ITEM = "item": "one flow begun by the loop" ();
    }
}

fn tracer_with<T: qtrace::queues::QueueType>(params: T::Params, enabled: bool) -> Tracer {
    let tracer = Tracer::with_config(
        Config::default().with_output_dir(std::env::temp_dir().join("qtrace-log-loop")),
    );
    let q = tracer.create_queue::<T>(params).expect("create queue");
    tracer.assign_class(user::CLASS, q).expect("assign");
    if !enabled {
        tracer.notrace_event(user::USER0).expect("mask");
    }
    tracer.activate().expect("activate");
    tracer
}

/// Runs `$body` for `$i` in `0..$n`, eight times per loop turn, so the loop's
/// own counter and branch add well under one instruction per event, not 3.
macro_rules! unrolled {
    ($n:expr, |$i:ident| $body:expr) => {{
        let n: u64 = $n;
        let mut base = 0;
        while base + 8 <= n {
            // Written out: the compiler does not unroll a body this large.
            {
                let $i = base;
                $body;
            }
            {
                let $i = base + 1;
                $body;
            }
            {
                let $i = base + 2;
                $body;
            }
            {
                let $i = base + 3;
                $body;
            }
            {
                let $i = base + 4;
                $body;
            }
            {
                let $i = base + 5;
                $body;
            }
            {
                let $i = base + 6;
                $body;
            }
            {
                let $i = base + 7;
                $body;
            }
            base += 8;
        }
        for $i in base..n {
            $body;
        }
    }};
}

#[inline(never)]
fn run_log(tracer: &Tracer, n: u64) {
    unrolled!(n, |i| tracer.log_event(user::USER0, [i, 0]));
}

#[inline(never)]
fn run_macro(tracer: &Tracer, n: u64) {
    unrolled!(n, |i| qtrace::event!(tracer, bench::TICK, i, 0));
}

#[inline(never)]
fn run_counter(tracer: &Tracer, n: u64) {
    unrolled!(n, |i| tracer.log_counter(bench::LEVEL, i));
}

#[inline(never)]
fn run_flow(tracer: &Tracer, n: u64) {
    unrolled!(n, |i| black_box(tracer.flow_begin(bench::ITEM, i)));
}

#[inline(never)]
fn run_clock(clock: &Clock, n: u64) {
    // `black_box` keeps each read (it costs one store to the stack).
    unrolled!(n, |_i| black_box(clock.now()));
}

#[inline(never)]
fn run_floor(clock: &Clock, array: &mut [Event], n: u64) {
    let mask = array.len() - 1;
    unrolled!(n, |i| array[i as usize & mask] =
        Event::new(clock.now(), user::USER0, 0, [i, 0]));
}

#[inline(never)]
fn run_rtrb(clock: &Clock, n: u64) {
    let (mut producer, mut consumer) = rtrb::RingBuffer::<Event>::new(CAPACITY);
    unrolled!(n, |i| {
        let event = Event::new(clock.now(), user::USER0, 0, [i, 0]);
        if let Err(rtrb::PushError::Full(event)) = producer.push(event) {
            let slots = consumer.slots();
            consumer.read_chunk(slots).expect("slots").commit_all();
            producer.push(event).expect("room after draining");
        }
    });
}

fn log(tracer: Tracer, n: u64) {
    run_log(black_box(&tracer), n);
    let report = tracer.shutdown().expect("shutdown");
    let c = report.queues[0].counters;
    println!(
        "accepted {} dropped {} overwritten {} delivered {} queued {}",
        c.accepted, c.dropped, c.overwritten, c.delivered, c.queued
    );
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage =
        "usage: log_loop <events> <circular|circular_macro|circular_counter|circular_flow|circular_mem|fixed|disabled|dummy|online|clock|floor|rtrb>";
    let (Some(n), Some(case)) = (args.first(), args.get(1)) else {
        eprintln!("{usage}");
        return ExitCode::from(2);
    };
    let Ok(n) = n.parse::<u64>() else {
        eprintln!("{usage}: <events> must be a whole number, not {n:?}");
        return ExitCode::from(2);
    };
    match case.as_str() {
        "circular" => log(
            tracer_with::<Circular>(CircularParams::default().with_capacity(CAPACITY), true),
            n,
        ),
        "circular_macro" | "circular_counter" | "circular_flow" => {
            let tracer = Tracer::with_config(
                Config::default().with_output_dir(std::env::temp_dir().join("qtrace-log-loop")),
            );
            tracer.define_classes(&CATALOG).expect("classes");
            let q = tracer
                .create_queue::<Circular>(CircularParams::default().with_capacity(CAPACITY))
                .expect("create queue");
            tracer.assign_class(bench::CLASS, q).expect("assign");
            tracer.activate().expect("activate");
            match case.as_str() {
                "circular_macro" => run_macro(black_box(&tracer), n),
                "circular_counter" => run_counter(black_box(&tracer), n),
                _ => run_flow(black_box(&tracer), n),
            }
            let c = tracer.shutdown().expect("shutdown").queues[0].counters;
            println!("accepted {} overwritten {}", c.accepted, c.overwritten);
        }
        "circular_mem" => log(
            tracer_with::<Circular>(
                CircularParams::default()
                    .with_capacity(CAPACITY)
                    .with_ring(qtrace::storage::RingStorage::Memory),
                true,
            ),
            n,
        ),
        "fixed" => log(
            tracer_with::<Fixed>(FixedParams::default().with_capacity(CAPACITY), true),
            n,
        ),
        "dummy" => log(tracer_with::<Dummy>((), true), n),
        "online" => log(
            tracer_with::<Online>(
                OnlineParams::default()
                    .with_capacity(ONLINE_CAPACITY)
                    .with_period(std::time::Duration::from_secs(3600))
                    .with_writer(std::io::sink()),
                true,
            ),
            n,
        ),
        "disabled" => log(tracer_with::<Dummy>((), false), n),
        "clock" => run_clock(black_box(&Clock::fast()), n),
        "floor" => {
            let mut array = vec![Event::default(); CAPACITY];
            run_floor(black_box(&Clock::fast()), &mut array, n);
            black_box(&array);
        }
        "rtrb" => run_rtrb(black_box(&Clock::fast()), n),
        other => {
            eprintln!("{usage}: unknown case {other:?}");
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}
