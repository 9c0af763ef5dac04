//! The producer's and the drain's cost on the MCU, counted in instructions
//! under QEMU: `scripts/firmware-cost.sh` runs this on the mps2-an385 with
//! `-icount shift=0`, where virtual time advances exactly 1 ns per
//! instruction executed, so the firmware's own clock (SysTick, 40 ns a
//! cycle of the 25 MHz clock, as in `main.rs`) reads instructions, to 40.
//! QEMU's TCG does not model cycles (no pipeline, no wait states, no DWT
//! cycle counter): these are instructions of the thumbv7m code, not cycles
//! of a real Cortex-M3.
//!
//! Each case runs its loop for `N1` and for `N2` events (after one warm-up
//! run of `N1`) and reports (time(N2) - time(N1)) / (N2 - N1), so the
//! set-up, the clock reads around the loop and a drain's first catalog
//! cancel out. A loop logs the example's five-event pattern (schedule,
//! wait, job, signal, endcycle: five `log_event` calls a turn, as in its
//! main loop), and the loop alone is measured and subtracted. Printed
//! over semihosting, one `cost:` line a figure; then the firmware exits
//! with status 0. Without `-icount shift=0` the figures are nanoseconds of
//! QEMU's virtual clock, which follows the host's: meaningless.
//!
//! Last, where the drain's instructions go: `case_pieces` redoes its work
//! from the same public pieces, one more at each level (the ring's `take`,
//! the compact encoding, the CRC-32, COBS, the copy into the sink), so each
//! piece is the difference of two levels and the drain's rest what its
//! polls cost beyond all five.
#![no_std]
#![no_main]

use core::hint::black_box;
use core::sync::atomic::{AtomicU32, Ordering};

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m::peripheral::{SCB, SYST};
use cortex_m_rt::{entry, exception};
use cortex_m_semihosting::{debug, hprintln};

use qtrace_core::classes::{semaphore, system, BuiltinClass, BuiltinEvent, ClassId};
use qtrace_core::compact::{ChunkEncoder, ChunkHeader};
use qtrace_core::encode::header::HeaderSpec;
use qtrace_core::ring::{CircularRing, Ring};
use qtrace_core::stream::{
    encode_frame, max_encoded_len, Crc32, Drain, FrameKind, RttRing, Status, CRC_LEN,
    MAX_CHUNK_EVENTS,
};
use qtrace_core::{Event, EventId, StaticCatalog, Tracer};

mod panic_exit {
    use core::panic::PanicInfo;

    #[panic_handler]
    fn panic(_: &PanicInfo) -> ! {
        cortex_m_semihosting::debug::exit(cortex_m_semihosting::debug::EXIT_FAILURE);
        loop {}
    }
}

/// SysTick period in cycles: 1 ms at 25 MHz (as in `main.rs`).
const PERIOD: u32 = 25_000;
/// Nanoseconds per cycle of the 25 MHz system clock.
const NS_PER_CYCLE: u64 = 40;

/// Events of the short and the long run, multiples of 5 (the pattern) and
/// of 128 (a poll). N2 - N1 = 163,840 events: 1,280 chunks of 128, in
/// which a drain sends its catalog again exactly 5 times (every 256
/// chunks), as often as in a long stream.
const N1: u32 = 10_240;
const N2: u32 = N1 + 163_840;
/// The drain is polled after every this many events (as in `main.rs`).
const POLL_EVERY: u32 = 128;

/// The example's catalog: the built-in classes and one of its own.
const JOB: EventId = EventId::FIRST_USER_DEFINED;
static CLASSES: [BuiltinClass; 1] = [BuiltinClass {
    id: ClassId::FIRST_USER_DEFINED,
    name: "app",
    description: "the firmware's own events",
    events: &[BuiltinEvent::new(
        JOB,
        "job",
        "a task ran its job",
        &["task", "tick"],
    )],
}];
static CATALOG: StaticCatalog = StaticCatalog::new(&CLASSES);

/// A ring dumped at the end (no streaming): 256 slots, overwritten.
static RING: CircularRing<256> = CircularRing::new();
static TRACER: Tracer<1> = Tracer::new(&CATALOG, [&RING], now);
/// A tracer whose classes are never assigned: every event masked out.
static OFF_RING: CircularRing<16> = CircularRing::new();
static OFF: Tracer<1> = Tracer::new(&CATALOG, [&OFF_RING], now);
/// The streamed ring (as in `main.rs`), drained into an RTT ring or UART0.
static STREAM_RING: CircularRing<256> = CircularRing::new();
static STREAM: Tracer<1> = Tracer::new(&CATALOG, [&STREAM_RING], now);
#[no_mangle]
static _SEGGER_RTT: RttRing<16384> = RttRing::new();
/// UART0 of the mps2-an385 (CMSDK APB UART): QEMU's first `-serial`.
const UART0: usize = 0x4000_4000;

/// SysTick wraps so far.
static WRAPS: AtomicU32 = AtomicU32::new(0);

/// Nanoseconds since SysTick started (`main.rs`'s clock): wraps times the
/// period plus the cycles into this period, 40 ns a cycle; a wrap whose
/// interrupt is still pending counts.
fn now() -> u64 {
    critical_section::with(|_| {
        let mut wraps = WRAPS.load(Ordering::Relaxed) as u64;
        let mut current = SYST::get_current();
        if SCB::is_pendst_pending() {
            wraps += 1;
            current = SYST::get_current();
        }
        let cycles = wraps * PERIOD as u64 + (PERIOD - 1 - current) as u64;
        cycles * NS_PER_CYCLE
    })
}

#[exception]
fn SysTick() {
    WRAPS.fetch_add(1, Ordering::Relaxed);
}

/// Logs one cycle `c` of the example's pattern (five events, as its main
/// loop logs them) through `log`.
#[inline(always)]
fn cycle(c: u32, log: &mut impl FnMut(EventId, [u64; 2])) {
    let task = (c % 3 + 1) as u64;
    log(system::SCHEDULE, [task, 0]);
    log(semaphore::WAIT, [task, 1]);
    log(JOB, [task, c as u64]);
    log(semaphore::SIGNAL, [task, 1]);
    log(system::ENDCYCLE, [task, 0]);
}

/// Time (ns, = instructions) of each part a case measures.
#[derive(Clone, Copy, Default)]
struct Parts {
    /// The whole loop.
    total: u64,
    /// The drain's polls alone (the streamed cases).
    polls: u64,
}

/// The loop alone (its counter and the task, no event): the baseline.
#[inline(never)]
fn case_loop(n: u32) -> Parts {
    let t0 = now();
    for c in 0..n / 5 {
        black_box((c % 3 + 1) as u64);
    }
    Parts {
        total: now() - t0,
        polls: 0,
    }
}

/// The clock read alone, stored, in place of each event.
#[inline(never)]
fn case_clock(n: u32) -> Parts {
    let t0 = now();
    for c in 0..n / 5 {
        black_box((c % 3 + 1) as u64);
        for _ in 0..5 {
            black_box(now());
        }
    }
    Parts {
        total: now() - t0,
        polls: 0,
    }
}

/// `log_event` into `tracer`, no drain.
#[inline(never)]
fn case_log(tracer: &Tracer<1>, n: u32) -> Parts {
    let t0 = now();
    for c in 0..n / 5 {
        cycle(c, &mut |id, args| tracer.log_event(id, 0, args));
    }
    Parts {
        total: now() - t0,
        polls: 0,
    }
}

/// `log_event` into the stream ring, a drain polled every `POLL_EVERY`
/// events into `write` (which takes every byte); with `time_polls`, the
/// polls are timed apart (two clock reads more a poll: that run's total is
/// not used). Ends with the stream closed and the end frame sent.
#[inline(never)]
fn case_stream(write: &dyn Fn(&[u8]) -> usize, time_polls: bool, n: u32) -> Parts {
    let spec = HeaderSpec {
        ticks_per_second: 1_000_000_000,
        clock_kind: "systick",
        host: "qemu-mps2-an385",
        ..HeaderSpec::default()
    };
    let mut buf = [0u8; 1024];
    let Ok(drain) = Drain::new(&STREAM_RING, &CATALOG, spec, 1, &mut buf) else {
        return Parts::default();
    };
    let mut drain = drain.catalog_every(256);
    let mut sink = |b: &[u8]| write(b);
    let mut polls = 0;
    let t0 = now();
    for c in 0..n / 5 {
        cycle(c, &mut |id, args| STREAM.log_event(id, 0, args));
        // Every POLL_EVERY events (their count, 5c + 5, passes a multiple).
        if (5 * c + 5) % POLL_EVERY < 5 {
            if time_polls {
                let p0 = now();
                drain.poll(&mut sink);
                polls += now() - p0;
            } else {
                drain.poll(&mut sink);
            }
        }
    }
    let total = now() - t0;
    drain.close();
    while drain.poll(&mut sink) != Status::Closed {}
    Parts { total, polls }
}

/// How far a piecewise drain goes (each level does the ones before).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    /// `Ring::take`, 8 events a call (the drain's batch), discarded.
    Take,
    /// And `ChunkEncoder::push` into a chunk of the drain's size, finished
    /// and started again when full (the compact encoding, the header).
    Encode,
    /// And the CRC-32 of each full chunk (its kind byte and bytes).
    Crc,
    /// And `encode_frame` (the CRC and COBS) in place of the CRC alone.
    Cobs,
    /// And the frame written into the sink.
    Write,
}

/// The chunk area of the drain's 1,024-byte buffer (`Drain::new`'s rule):
/// the largest chunk whose COBS frame, two delimiters, fits in the rest.
const fn chunk_len(total: usize) -> usize {
    let mut c = total / 2;
    while c + max_encoded_len(c + 1 + CRC_LEN) + 2 > total {
        c -= 1;
    }
    c
}
const BUF_LEN: usize = 1024;
const CHUNK_LEN: usize = chunk_len(BUF_LEN);

/// The drain's work up to `level`, done by hand from the same public
/// pieces, polled as `case_stream` polls; the polls are timed. Chunks
/// fill as the drain's do (no catalog, no sequence numbers).
#[inline(never)]
fn case_pieces(level: Level, write: &dyn Fn(&[u8]) -> usize, n: u32) -> Parts {
    let mut chunk = [0u8; CHUNK_LEN];
    let mut wire = [0u8; BUF_LEN - CHUNK_LEN];
    let mut batch = [Event::ZERO; 8];
    let mut enc = ChunkEncoder::new(&mut chunk, ChunkHeader::default()).ok();
    let frame = |enc: &mut Option<ChunkEncoder<'_>>, wire: &mut [u8]| {
        let Some(e) = enc.take() else { return };
        let (len, buf) = e.finish_into_buffer();
        if level >= Level::Cobs {
            if let Some(w) = encode_frame(FrameKind::Chunk, &buf[..len], wire) {
                if level >= Level::Write {
                    let mut at = 0;
                    while at < w {
                        at += write(&wire[at..w]);
                    }
                }
            }
        } else if level >= Level::Crc {
            let mut crc = Crc32::new();
            crc.update(&[FrameKind::Chunk as u8]);
            crc.update(&buf[..len]);
            black_box(crc.value());
        }
        *enc = ChunkEncoder::new(buf, ChunkHeader::default()).ok();
    };
    let mut polls = 0;
    let t0 = now();
    for c in 0..n / 5 {
        cycle(c, &mut |id, args| STREAM.log_event(id, 0, args));
        if (5 * c + 5) % POLL_EVERY < 5 {
            let p0 = now();
            loop {
                let taken = STREAM_RING.take(&mut batch);
                if taken.events == 0 {
                    break;
                }
                if level == Level::Take {
                    black_box(&batch);
                    continue;
                }
                let mut i = 0;
                while i < taken.events {
                    let Some(e) = enc.as_mut() else { break };
                    let room = MAX_CHUNK_EVENTS.saturating_sub(usize::from(e.count()));
                    i += e.push_all(&batch[i..taken.events.min(i + room)]);
                    if i < taken.events {
                        frame(&mut enc, &mut wire);
                    }
                }
            }
            polls += now() - p0;
        }
    }
    let total = now() - t0;
    // Leave the ring empty for the next case.
    while STREAM_RING.take(&mut batch).events != 0 {}
    Parts { total, polls }
}

/// Per-event cost of a case, in hundredths of an instruction: the warm-up
/// run, then N1 and N2 events.
fn measure(case: &dyn Fn(u32) -> Parts) -> (u64, u64) {
    case(N1);
    let a = case(N1);
    let b = case(N2);
    let per =
        |x: u64, y: u64| (y.saturating_sub(x) * 100 + (N2 - N1) as u64 / 2) / (N2 - N1) as u64;
    (per(a.total, b.total), per(a.polls, b.polls))
}

/// `12.34` from hundredths.
struct Hundredths(u64);
impl core::fmt::Display for Hundredths {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}.{:02}", self.0 / 100, self.0 % 100)
    }
}

/// Writes what UART0 takes now (`main.rs`'s sink, whose comment says why
/// STATE is read before each byte: no FIFO, one holding byte): never waits.
fn uart_write(bytes: &[u8]) -> usize {
    let mut n = 0;
    for &b in bytes {
        // SAFETY: STATE (0x04) and DATA (0x00) of the CMSDK APB UART0.
        unsafe {
            if core::ptr::read_volatile((UART0 + 0x04) as *const u32) & 1 != 0 {
                break;
            }
            core::ptr::write_volatile(UART0 as *mut u32, b as u32);
        }
        n += 1;
    }
    n
}

#[entry]
fn main() -> ! {
    let mut cp = cortex_m::Peripherals::take().unwrap();
    for class in [
        ClassId::SYSTEM,
        ClassId::SEMAPHORE,
        ClassId::FIRST_USER_DEFINED,
    ] {
        TRACER.assign_class(class, 0).unwrap();
        STREAM.assign_class(class, 0).unwrap();
    }
    // SAFETY: BAUDDIV (0x10) takes any value from 16, CTRL (0x08) bit 0
    // enables the transmitter (UART0 of the mps2-an385).
    unsafe {
        core::ptr::write_volatile((UART0 + 0x10) as *mut u32, 16);
        core::ptr::write_volatile((UART0 + 0x08) as *mut u32, 1);
    }
    cp.SYST.set_clock_source(SystClkSource::Core);
    cp.SYST.set_reload(PERIOD - 1);
    cp.SYST.clear_current();
    cp.SYST.enable_interrupt();
    cp.SYST.enable_counter();

    // The method's check: cortex_m::asm::delay(c) runs c + 1 turns of a
    // two-instruction loop (subs, bne): 2.00 an event if 1 ns = 1 instruction.
    let (delay, _) = measure(&|n| {
        let t0 = now();
        cortex_m::asm::delay(n);
        Parts {
            total: now() - t0,
            polls: 0,
        }
    });
    let (base, _) = measure(&case_loop);
    let (clock, _) = measure(&case_clock);
    let (off, _) = measure(&|n| case_log(&OFF, n));
    let (ring, _) = measure(&|n| case_log(&TRACER, n));
    let rtt_write = |b: &[u8]| _SEGGER_RTT.write(b);
    let (rtt, _) = measure(&|n| case_stream(&rtt_write, false, n));
    let (_, rtt_polls) = measure(&|n| case_stream(&rtt_write, true, n));
    let (uart, _) = measure(&|n| case_stream(&uart_write, false, n));
    let (_, uart_polls) = measure(&|n| case_stream(&uart_write, true, n));
    let mut pieces = [0u64; 5];
    for (slot, level) in pieces.iter_mut().zip([
        Level::Take,
        Level::Encode,
        Level::Crc,
        Level::Cobs,
        Level::Write,
    ]) {
        *slot = measure(&|n| case_pieces(level, &rtt_write, n)).1;
    }
    let (_, uart_pieces) = measure(&|n| case_pieces(Level::Write, &uart_write, n));
    let net = |x: u64| Hundredths(x.saturating_sub(base));
    hprintln!(
        "cost: check: asm::delay {} instructions a turn (2.00 expected: 1 ns of virtual time = 1 instruction)",
        Hundredths(delay)
    );
    hprintln!(
        "cost: the loop alone (its counter, the task): {} instructions/event (subtracted below)",
        Hundredths(base)
    );
    hprintln!(
        "cost: the clock read (SysTick, critical section): {}",
        net(clock)
    );
    hprintln!("cost: log_event masked out: {}", net(off));
    hprintln!(
        "cost: log_event into a CircularRing (no streaming): {} (clock included)",
        net(ring)
    );
    for (sink, total, polls) in [("an RttRing", rtt, rtt_polls), ("UART0", uart, uart_polls)] {
        hprintln!(
            "cost: streaming into {}: {} an event: log_event {}, the drain's polls {}",
            sink,
            net(total),
            net(total.saturating_sub(polls)),
            Hundredths(polls)
        );
    }
    let step =
        |i: usize| Hundredths(pieces[i].saturating_sub(if i == 0 { 0 } else { pieces[i - 1] }));
    hprintln!(
        "cost: the drain's pieces, an event (polls timed, cumulative {} {} {} {} {}): ring take {}, compact encoding {}, CRC-32 {}, COBS {}, copy into the RttRing {} (into UART0 {}), the drain's own rest {}",
        Hundredths(pieces[0]),
        Hundredths(pieces[1]),
        Hundredths(pieces[2]),
        Hundredths(pieces[3]),
        Hundredths(pieces[4]),
        step(0),
        step(1),
        step(2),
        step(3),
        step(4),
        Hundredths(uart_pieces.saturating_sub(pieces[3])),
        Hundredths(rtt_polls.saturating_sub(pieces[4])),
    );
    debug::exit(debug::EXIT_SUCCESS);
    loop {
        cortex_m::asm::wfi();
    }
}
