//! qtrace-core traced firmware for QEMU's `mps2-an385` (Cortex-M3), run by
//! `scripts/qemu.sh`.
//!
//! A SysTick interrupt (every 1 ms: 25,000 cycles of the board's 25 MHz
//! system clock) and a main loop act out a tiny scheduler: the interrupt
//! logs the interrupt and activates a task; the main loop schedules it
//! (the context switch), takes and gives a semaphore, runs the job and ends
//! the cycle. Every event goes into one static circular ring of 512 slots.
//! Timestamps are nanoseconds: SysTick wraps plus the current count, times
//! 40 ns a cycle (25 MHz). After 100 ticks (700 events: 188 overwritten)
//! the ring is written to the host over semihosting as a standard qtrace
//! trace file, `qtrace-firmware.qtr` in QEMU's working directory, then the
//! firmware exits through semihosting with status 0 (1 if the file could
//! not be written) — after the streams:
//!
//! Then it streams 100,000 events twice through `qtrace_core::stream::Drain`
//! polled from the main loop every 128 events: over UART0 (QEMU's first
//! `-serial`) with a sink that takes every byte, and over UART1 (the
//! second) with one that takes at most 96 bytes a poll, so whole chunks are
//! dropped and counted. It prints each stream's account over semihosting;
//! `scripts/qemu.sh` checks it against `qtrace recv --serial`.
//!
//! Last, the RTT phase: 100 events a tick from the main loop and one a tick
//! from SysTick, drained from the main loop into an RTT ring in RAM
//! (`qtrace_core::stream::RttRing`, the symbol `_SEGGER_RTT`) that the
//! host reads through QEMU's QMP socket (`qtrace recv --rtt-qmp`) while
//! the firmware runs. The phase lasts until a byte arrives on UART2
//! (QEMU's third `-serial`: the host says it has seen enough), at most
//! `RTT_MAX_EVENTS` events (30 s). The firmware prints its own count, then
//! waits (the host quits QEMU once it has the stream's end frame).
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m::peripheral::{SCB, SYST};
use cortex_m_rt::{entry, exception};
use cortex_m_semihosting::{debug, hprintln, nr, syscall};

use qtrace_core::classes::{lowlevel, semaphore, system, BuiltinClass, BuiltinEvent, ClassId};
use qtrace_core::encode::header::HeaderSpec;
use qtrace_core::ring::CircularRing;
use qtrace_core::stream::{Drain, DrainStats, RttRing, Status};
use qtrace_core::{EventId, StaticCatalog, Tracer};

mod panic_exit {
    use core::panic::PanicInfo;

    #[panic_handler]
    fn panic(_: &PanicInfo) -> ! {
        cortex_m_semihosting::debug::exit(cortex_m_semihosting::debug::EXIT_FAILURE);
        loop {}
    }
}

/// SysTick period in cycles: 1 ms at 25 MHz.
const PERIOD: u32 = 25_000;
/// Nanoseconds per cycle of the 25 MHz system clock.
const NS_PER_CYCLE: u64 = 40;
/// Ticks the run lasts.
const TICKS: u32 = 100;
/// The file written on the host.
const FILE: &str = "qtrace-firmware.qtr\0";

/// The firmware's own class: one event per job run.
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

static RING: CircularRing<512> = CircularRing::new();
static TRACER: Tracer<1> = Tracer::new(&CATALOG, [&RING], now);

/// The streamed phase: its own ring and tracer, drained over a UART.
static STREAM_RING: CircularRing<256> = CircularRing::new();
static STREAM: Tracer<1> = Tracer::new(&CATALOG, [&STREAM_RING], now);
/// Events each UART stream carries.
const STREAMED: u32 = 100_000;
/// The drain is polled after every this many events.
const POLL_EVERY: u32 = 128;
/// UART0 and UART1 of the mps2-an385 (CMSDK APB UART): QEMU's first and
/// second `-serial`.
const UART0: usize = 0x4000_4000;
const UART1: usize = 0x4000_5000;
/// UART2 (QEMU's third `-serial`): a byte received ends the RTT phase.
const UART2: usize = 0x4000_6000;
/// The RTT phase's main-loop events when no byte arrives on UART2: 30 s
/// at 100 a tick (a host that never says stop).
const RTT_MAX_EVENTS: u32 = 3_000_000;

/// The RTT ring the host reads through QMP (FORMAT.md 10.7): 16 KiB of
/// stream (about 2,600 events at 6.3 bytes each: 26 ms at 100 k events/s,
/// what a host may stall without loss), found by its symbol (SEGGER's name, which RTT
/// tools look for).
#[no_mangle]
static _SEGGER_RTT: RttRing<16384> = RttRing::new();
/// Events the main loop logs per 1 ms tick in the RTT phase (the pace; 0:
/// as fast as it can, about 440 k events/s here): 100 (100 k events/s,
/// about 0.63 MB/s), or `QTRACE_RTT_PER_TICK` when the firmware is built.
const RTT_PER_TICK: u32 = match option_env!("QTRACE_RTT_PER_TICK") {
    Some(s) => parse_u32(s),
    None => 100,
};

/// A decimal number (build-time configuration).
const fn parse_u32(s: &str) -> u32 {
    let b = s.as_bytes();
    let mut i = 0;
    let mut n = 0u32;
    while i < b.len() {
        assert!(
            b[i].is_ascii_digit(),
            "QTRACE_RTT_PER_TICK: a decimal number"
        );
        n = n * 10 + (b[i] - b'0') as u32;
        i += 1;
    }
    n
}

/// Whether SysTick logs into the stream tracer (the RTT phase).
static TICK_STREAMS: AtomicBool = AtomicBool::new(false);
/// Events SysTick logged into the stream tracer.
static TICK_STREAMED: AtomicU32 = AtomicU32::new(0);

/// SysTick wraps so far (the interrupt counts them).
static WRAPS: AtomicU32 = AtomicU32::new(0);
/// Ticks the interrupt has logged.
static TICKED: AtomicU32 = AtomicU32::new(0);

/// Nanoseconds since SysTick started: wraps × period + cycles into this
/// period, at 40 ns a cycle. A wrap whose interrupt is still pending counts.
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
    if TICK_STREAMS.load(Ordering::Relaxed) {
        STREAM.log_event(lowlevel::INTERRUPT, 0, [15, 0]);
        TICK_STREAMED.fetch_add(1, Ordering::Relaxed);
    }
    let n = TICKED.load(Ordering::Relaxed);
    if n >= TICKS {
        return;
    }
    // Exception 15 is SysTick.
    TRACER.log_event(lowlevel::INTERRUPT, 0, [15, 0]);
    TRACER.log_event(system::ACTIVATE, 0, [task_of(n), 0]);
    TICKED.store(n + 1, Ordering::Relaxed);
}

fn task_of(tick: u32) -> u64 {
    (tick % 3 + 1) as u64
}

#[entry]
fn main() -> ! {
    let mut cp = cortex_m::Peripherals::take().unwrap();
    for class in [
        ClassId::SYSTEM,
        ClassId::LOWLEVEL,
        ClassId::SEMAPHORE,
        ClassId::FIRST_USER_DEFINED,
    ] {
        TRACER.assign_class(class, 0).unwrap();
    }
    cp.SYST.set_clock_source(SystClkSource::Core);
    cp.SYST.set_reload(PERIOD - 1);
    cp.SYST.clear_current();
    cp.SYST.enable_interrupt();
    cp.SYST.enable_counter();

    // The scheduler: one job per tick, on the main loop's context.
    let mut handled = 0;
    while handled < TICKS {
        if handled == TICKED.load(Ordering::Relaxed) {
            cortex_m::asm::wfi();
            continue;
        }
        let task = task_of(handled);
        TRACER.log_event(system::SCHEDULE, 0, [task, 0]);
        TRACER.log_event(semaphore::WAIT, 0, [task, 1]);
        TRACER.log_event(JOB, 0, [task, handled as u64]);
        TRACER.log_event(semaphore::SIGNAL, 0, [task, 1]);
        TRACER.log_event(system::ENDCYCLE, 0, [task, 0]);
        handled += 1;
    }
    let status = match dump() {
        Some(summary) => {
            hprintln!(
                "firmware: {} events, {} hoops records ({} lost), {} bytes written to {}",
                summary.events,
                summary.hoops,
                summary.lost,
                summary.bytes,
                &FILE[..FILE.len() - 1]
            );
            debug::EXIT_SUCCESS
        }
        None => {
            hprintln!("firmware: could not write {}", &FILE[..FILE.len() - 1]);
            debug::EXIT_FAILURE
        }
    };
    // The streams: every event of the stream tracer over a UART, the
    // drain polled from this loop. UART0 takes every byte (no loss);
    // UART1's sink takes at most 96 bytes a poll of 128 events (a throttled link: whole
    // chunks dropped, counted).
    for class in [
        ClassId::SYSTEM,
        ClassId::SEMAPHORE,
        ClassId::FIRST_USER_DEFINED,
    ] {
        STREAM.assign_class(class, 0).unwrap();
    }
    let fast = stream(UART0, usize::MAX, 1);
    hprintln!(
        "firmware: stream uart0: {} events logged, {} sent, {} dropped ({} chunks), {} frames, {} bytes",
        STREAMED, fast.sent, fast.dropped, fast.chunks_dropped, fast.frames, fast.bytes
    );
    let slow = stream(UART1, 96, 2);
    hprintln!(
        "firmware: stream uart1: {} events logged, {} sent, {} dropped ({} chunks), {} frames, {} bytes",
        STREAMED, slow.sent, slow.dropped, slow.chunks_dropped, slow.frames, slow.bytes
    );
    if status != debug::EXIT_SUCCESS {
        debug::exit(status);
    }
    // The RTT phase. The ring is made findable first (a host may attach
    // before the first frame), then the main loop and SysTick log into the
    // stream tracer, drained into the ring.
    _SEGGER_RTT.init();
    STREAM.assign_class(ClassId::LOWLEVEL, 0).unwrap();
    hprintln!("firmware: rtt: started");
    TICK_STREAMS.store(true, Ordering::Relaxed);
    let write = |b: &[u8]| _SEGGER_RTT.write(b);
    uart_init(UART2);
    // Paced, the phase must last until the host has attached and read:
    // it ends when the host says so on UART2, not after a fixed count a
    // slow host could miss (CI once started its reader after the end).
    let done = |i: u32| i >= RTT_MAX_EVENTS || uart_received(UART2);
    let (rtt, logged) = stream_with(&write, usize::MAX, 3, 64, RTT_PER_TICK, &done, &|| {
        // SysTick stops logging before the close: on one core no handler is
        // half way through once this store is done, so the count is final.
        TICK_STREAMS.store(false, Ordering::Relaxed);
    });
    let ticks = TICK_STREAMED.load(Ordering::Relaxed);
    hprintln!(
        "firmware: stream rtt: {} events logged, {} sent, {} dropped ({} chunks), {} frames, {} bytes; {} of the events from SysTick",
        logged + ticks, rtt.sent, rtt.dropped, rtt.chunks_dropped, rtt.frames, rtt.bytes, ticks
    );
    // The host quits QEMU once it has read the end frame.
    loop {
        cortex_m::asm::wfi();
    }
}

/// Writes the ring to the host file over semihosting, 512 bytes a call.
fn dump() -> Option<qtrace_core::DumpSummary> {
    // SAFETY: SYS_OPEN takes a pointer to a NUL-terminated name, its mode
    // and the name's length without the NUL; FILE is a static string that
    // ends with a NUL.
    let fd = unsafe {
        syscall!(
            OPEN,
            FILE.as_ptr(),
            nr::open::W_TRUNC_BINARY,
            FILE.len() - 1
        )
    };
    if fd == usize::MAX {
        return None;
    }
    let mut buf = [0u8; 512];
    let mut used = 0;
    let mut ok = true;
    let flush = |bytes: &[u8], ok: &mut bool| {
        // SAFETY: SYS_WRITE reads `len` bytes from the pointer, which
        // `bytes` holds; it returns the number of bytes NOT written.
        let left = unsafe { syscall!(WRITE, fd, bytes.as_ptr(), bytes.len()) };
        *ok &= left == 0;
    };
    let spec = HeaderSpec {
        ticks_per_second: 1_000_000_000,
        clock_kind: "systick",
        host: "qemu-mps2-an385",
        ..HeaderSpec::default()
    };
    let summary = TRACER
        .dump(0, &spec, &mut |mut piece: &[u8]| {
            while !piece.is_empty() {
                let n = piece.len().min(buf.len() - used);
                buf[used..used + n].copy_from_slice(&piece[..n]);
                used += n;
                piece = &piece[n..];
                if used == buf.len() {
                    flush(&buf, &mut ok);
                    used = 0;
                }
            }
        })
        .ok()?;
    flush(&buf[..used], &mut ok);
    // SAFETY: SYS_CLOSE takes the handle SYS_OPEN returned.
    let closed = unsafe { syscall!(CLOSE, fd) };
    (ok && closed == 0).then_some(summary)
}

/// Enables the transmitter and the receiver of the CMSDK UART at `base`.
fn uart_init(base: usize) {
    // SAFETY: `base` is a CMSDK APB UART of the mps2-an385 (UART0-UART2);
    // BAUDDIV (0x10) takes any value from 16, CTRL (0x08) bit 0 enables
    // the transmitter, bit 1 the receiver.
    unsafe {
        core::ptr::write_volatile((base + 0x10) as *mut u32, 16);
        core::ptr::write_volatile((base + 0x08) as *mut u32, 3);
    }
}

/// Whether the UART at `base` holds a received byte (STATE bit 1); takes
/// it if so.
fn uart_received(base: usize) -> bool {
    // SAFETY: STATE (0x04) and DATA (0x00) of a CMSDK APB UART; reading
    // DATA takes the byte and clears RXFULL.
    unsafe {
        let full = core::ptr::read_volatile((base + 0x04) as *const u32) & 2 != 0;
        if full {
            core::ptr::read_volatile(base as *const u32);
        }
        full
    }
}

/// Writes what the UART at `base` takes now: until its transmit buffer is
/// full (STATE bit 0). Never waits.
///
/// STATE is read before every byte: the CMSDK APB UART (on silicon and in
/// QEMU's model, hw/char/cmsdk-apb-uart.c) has no FIFO, one holding byte,
/// and a write while TXFULL is set is an overrun that replaces the byte
/// still waiting. QEMU clears TXFULL before the write returns only when its
/// chardev takes the byte at once (a file, `-serial null`); a pty or a
/// socket that blocks keeps it set, so skipping the read would lose bytes.
fn uart_write(base: usize, bytes: &[u8]) -> usize {
    let mut n = 0;
    for &b in bytes {
        // SAFETY: STATE (0x04) and DATA (0x00) of a CMSDK APB UART.
        unsafe {
            if core::ptr::read_volatile((base + 0x04) as *const u32) & 1 != 0 {
                break;
            }
            core::ptr::write_volatile(base as *mut u32, b as u32);
        }
        n += 1;
    }
    n
}

/// Logs `STREAMED` events of the scheduler's pattern into the stream
/// tracer, polling a drain to the UART at `base` (at most `max` bytes a
/// poll) every `POLL_EVERY` events, then closes the stream. `sender` is
/// the stream's sender id.
fn stream(base: usize, max: usize, sender: u32) -> DrainStats {
    uart_init(base);
    let write = |b: &[u8]| uart_write(base, b);
    stream_with(&write, max, sender, 256, 0, &|i| i >= STREAMED, &|| {}).0
}

/// Logs events of the scheduler's pattern into the stream tracer, whole
/// cycles of five until `done(events so far)`, polling a drain into
/// `write` (at most `max` bytes a poll) every `POLL_EVERY` events, then
/// calls `before_close`, closes the stream and polls until the end frame
/// is sent. The catalog goes first and again every `catalog_every` chunks;
/// `sender` is the stream's sender id. With `per_tick` > 0, after every
/// `per_tick` events it waits for the next SysTick (a paced producer).
/// Returns the drain's account and the events logged.
fn stream_with(
    write: &dyn Fn(&[u8]) -> usize,
    max: usize,
    sender: u32,
    catalog_every: u32,
    per_tick: u32,
    done: &dyn Fn(u32) -> bool,
    before_close: &dyn Fn(),
) -> (DrainStats, u32) {
    let spec = HeaderSpec {
        ticks_per_second: 1_000_000_000,
        clock_kind: "systick",
        host: "qemu-mps2-an385",
        ..HeaderSpec::default()
    };
    let mut buf = [0u8; 1024];
    let mut drain = match Drain::new(&STREAM_RING, &CATALOG, spec, sender, &mut buf) {
        Ok(d) => d.catalog_every(catalog_every),
        Err(_) => return (DrainStats::default(), 0),
    };
    // At most `max` bytes a poll.
    let poll = |drain: &mut Drain<'_, StaticCatalog>| {
        let mut budget = max;
        drain.poll(&mut |b: &[u8]| {
            let n = write(&b[..b.len().min(budget)]);
            budget -= n;
            n
        })
    };
    let mut i = 0u32;
    while !(i.is_multiple_of(5) && done(i)) {
        let task = task_of(i / 5);
        match i % 5 {
            0 => STREAM.log_event(system::SCHEDULE, 0, [task, 0]),
            1 => STREAM.log_event(semaphore::WAIT, 0, [task, 1]),
            2 => STREAM.log_event(JOB, 0, [task, (i / 5) as u64]),
            3 => STREAM.log_event(semaphore::SIGNAL, 0, [task, 1]),
            _ => STREAM.log_event(system::ENDCYCLE, 0, [task, 0]),
        }
        i += 1;
        if i.is_multiple_of(POLL_EVERY) {
            poll(&mut drain);
        }
        if per_tick > 0 && i.is_multiple_of(per_tick) {
            let tick = WRAPS.load(Ordering::Relaxed);
            while WRAPS.load(Ordering::Relaxed) == tick {
                cortex_m::asm::wfi();
            }
        }
    }
    before_close();
    drain.close();
    while poll(&mut drain) != Status::Closed {}
    (drain.stats(), i)
}
