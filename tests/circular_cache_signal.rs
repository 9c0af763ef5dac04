//! A signal handler that logs into another circular queue than the code it
//! interrupts (what `CircularQueue`'s docs allow) must not make the
//! interrupted thread's per-thread shard cache (`queues::producer_cache`)
//! name one queue's shard under another queue's key: every event still
//! lands in the queue it is routed to. (A mixed-up entry could also point a
//! live tracer's key at a dropped tracer's shard.)
#![cfg(target_os = "linux")]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use qtrace::classes::user;
use qtrace::queues::{Circular, CircularParams};
use qtrace::{Config, QueueHandle, Tracer};

static TRACER: OnceLock<Tracer> = OnceLock::new();
/// Events the handler logged.
static HANDLED: AtomicU64 = AtomicU64::new(0);
/// Set while the logging thread is ready for signals.
static ARMED: AtomicBool = AtomicBool::new(false);

/// The handler's queue (the main loop uses queues 0..4).
const HANDLER_QUEUE: u16 = 4;

extern "C" fn on_signal(_: libc::c_int) {
    if !ARMED.load(Ordering::Relaxed) {
        return;
    }
    if let Some(t) = TRACER.get() {
        let n = HANDLED.fetch_add(1, Ordering::Relaxed);
        t.log_event(user::user(HANDLER_QUEUE), [n, HANDLER_QUEUE as u64]);
    }
}

#[test]
fn a_signal_handler_logging_into_another_queue_never_misroutes_events() {
    let dir = std::env::temp_dir().join(format!("qtrace-cache-signal-{}", std::process::id()));
    let t = Tracer::with_config(Config::default().with_output_dir(dir));
    let queues: Vec<QueueHandle> = (0..=HANDLER_QUEUE)
        .map(|_| {
            t.create_queue::<Circular>(
                CircularParams::default()
                    .with_capacity(64)
                    .with_shards(1)
                    .with_ring(Default::default()),
            )
            .unwrap()
        })
        .collect();
    for (i, &q) in queues.iter().enumerate() {
        t.assign_event(user::user(i as u16), q).unwrap();
    }
    t.activate().unwrap();
    assert!(TRACER.set(t).is_ok());
    let t = TRACER.get().unwrap();

    // SAFETY: a plain C handler for SIGUSR1, installed before any is sent.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        assert_eq!(
            libc::sigaction(libc::SIGUSR1, &action, std::ptr::null_mut()),
            0
        );
    }

    let done = &AtomicBool::new(false);
    let logged = std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel();
        let logger = s.spawn(move || {
            // SAFETY: `pthread_self` has no preconditions.
            tx.send(unsafe { libc::pthread_self() }).unwrap();
            // Own a shard of every queue (and a source number) before the
            // first signal, so the handler takes no lock.
            for i in 0..=HANDLER_QUEUE {
                t.log_event(user::user(i), [u64::MAX, i as u64]);
            }
            ARMED.store(true, Ordering::SeqCst);
            let start = Instant::now();
            let mut per_queue = [1u64; HANDLER_QUEUE as usize];
            let mut n = 0u64;
            // Round robin over four queues: every event moves an entry to
            // the front of the cache, and each signal adds a fifth queue.
            while HANDLED.load(Ordering::Relaxed) < 20_000
                && start.elapsed() < Duration::from_secs(5)
            {
                for i in 0..HANDLER_QUEUE {
                    t.log_event(user::user(i), [n, i as u64]);
                    per_queue[i as usize] += 1;
                    n += 1;
                }
            }
            ARMED.store(false, Ordering::SeqCst);
            done.store(true, Ordering::SeqCst);
            per_queue
        });
        let target = rx.recv().unwrap();
        while !done.load(Ordering::SeqCst) {
            // SAFETY: `target` is alive until `done` is set (the scope
            // joins it after this loop).
            unsafe { libc::pthread_kill(target, libc::SIGUSR1) };
            std::thread::sleep(Duration::from_micros(20));
        }
        logger.join().unwrap()
    });

    let handled = HANDLED.load(Ordering::SeqCst);
    assert!(handled > 0, "no signal was handled");
    let mut want = logged.to_vec();
    want.push(1 + handled);
    for (i, &q) in queues.iter().enumerate() {
        let events = t.queue(q).unwrap().as_circular().unwrap().snapshot_events();
        let strays = events
            .iter()
            .filter(|e| e.id != qtrace::classes::tracer::HOOPS && e.args[1] != i as u64)
            .count();
        assert_eq!(strays, 0, "queue {i} holds another queue's events");
        assert_eq!(
            t.counters(q).unwrap().accepted,
            want[i],
            "queue {i} (handler events: {handled})"
        );
    }
}
