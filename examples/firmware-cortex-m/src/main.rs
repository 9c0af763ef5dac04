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
//! not be written).
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU32, Ordering};

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m::peripheral::{SCB, SYST};
use cortex_m_rt::{entry, exception};
use cortex_m_semihosting::{debug, hprintln, nr, syscall};

use qtrace_core::classes::{lowlevel, semaphore, system, BuiltinClass, BuiltinEvent, ClassId};
use qtrace_core::encode::header::HeaderSpec;
use qtrace_core::ring::CircularRing;
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
    cp.SYST.disable_interrupt();

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
    debug::exit(status);
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
