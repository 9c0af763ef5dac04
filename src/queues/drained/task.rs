//! The background task of a draining queue (circular-online, UDP): one
//! thread per queue, run every period, woken early when its queue crosses a
//! high-water mark, stopped cleanly at terminate.
//!
//! Each queue owns its [`TaskControl`]: its own stop flag (S.Ha.R.K. shared one
//! static "must go down" flag between every circular queue; here stopping one
//! queue's task never touches another's), its own wake-up request flag and
//! its thread handle.
//!
//! Producers never block on the task. A producer that finds the queue has just
//! crossed its high-water mark calls [`TaskControl::request_wake`], which costs
//! one relaxed load while a wake-up is already pending, and otherwise one swap
//! and one `Thread::unpark` (a futex wake, no lock held by the task).
//!
//! The task itself never logs events: a queue's task draining into the queue
//! it drains would feed itself (S.Ha.R.K.'s online task could be traced into
//! its own queue).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use crate::queue::config_error::ConfigError;
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

/// The shared state between a queue's producers, its task and its owner.
#[derive(Debug, Default)]
pub(crate) struct TaskControl {
    stop: AtomicBool,
    wake_requested: AtomicBool,
    thread: OnceLock<Thread>,
}

impl TaskControl {
    /// A control block for a task not started yet.
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(TaskControl::default())
    }

    /// Asks the task to run now instead of at its next period. Never blocks.
    /// Before the task is started this only records the request.
    #[inline]
    pub(crate) fn request_wake(&self) {
        if self.wake_requested.load(Ordering::Relaxed) {
            return;
        }
        self.wake_slow();
    }

    #[cold]
    #[inline(never)]
    fn wake_slow(&self) {
        if !self.wake_requested.swap(true, Ordering::AcqRel) {
            if let Some(t) = self.thread.get() {
                t.unpark();
            }
        }
    }

    /// Whether a stop was asked for.
    pub(crate) fn stop_requested(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    fn take_wake(&self) -> bool {
        self.wake_requested.swap(false, Ordering::AcqRel)
    }
}

/// What a task does each period and once at the end.
pub(crate) trait Work: Send + 'static {
    /// One round: drain, write, send. Must not block for long.
    fn run_once(&mut self);
    /// After the stop request: drain what is left, flush, close.
    fn finish(&mut self);
    /// Whether the last round failed and the next must wait for the period
    /// whatever wake-ups arrive (a failing disk is retried at most once per
    /// period). Wake-up requests made meanwhile stay pending (so producers
    /// pay one relaxed load, no unpark) and are served at the period.
    fn backing_off(&self) -> bool {
        false
    }
}

/// A running task: its control block and thread.
#[derive(Debug)]
pub(crate) struct Task {
    control: Arc<TaskControl>,
    join: Option<JoinHandle<()>>,
}

impl Task {
    /// Starts `work` on a new thread named `name`, run every `period` and
    /// whenever [`TaskControl::request_wake`] is called.
    pub(crate) fn spawn<W: Work>(
        name: String,
        period: Duration,
        control: Arc<TaskControl>,
        mut work: W,
    ) -> std::io::Result<Task> {
        let c = Arc::clone(&control);
        let join = thread::Builder::new().name(name).spawn(move || {
            let _ = c.thread.set(thread::current());
            let mut deadline = Instant::now() + period;
            while !c.stop_requested() {
                // A request made before or during this round makes the park
                // below return at once (unpark's token), so none is missed.
                c.take_wake();
                work.run_once();
                let backoff = work.backing_off();
                loop {
                    if c.stop_requested() || (!backoff && c.wake_requested.load(Ordering::Acquire))
                    {
                        break;
                    }
                    let now = Instant::now();
                    if now >= deadline {
                        deadline += period;
                        if deadline <= now {
                            // Fell behind (a long round): restart the schedule.
                            deadline = now + period;
                        }
                        break;
                    }
                    thread::park_timeout(deadline - now);
                }
            }
            work.finish();
        })?;
        Ok(Task {
            control,
            join: Some(join),
        })
    }

    /// [`Task::spawn`] for a queue: a thread that cannot start is an
    /// [`ConfigError::Io`] saying `action`.
    pub(crate) fn start<W: Work>(
        action: &'static str,
        name: String,
        period: Duration,
        control: Arc<TaskControl>,
        work: W,
    ) -> Result<Task, ConfigError> {
        Task::spawn(name, period, control, work).map_err(|source| {
            ConfigError::Io(crate::model::io_error::IoError::without_path(
                action, source,
            ))
        })
    }

    /// [`Task::stop`] for a queue's terminate hook: a task that panicked is an
    /// [`ConfigError::Io`] saying `action` (on `path`, if any) with `why`.
    pub(crate) fn finish(
        &mut self,
        action: &'static str,
        path: Option<PathBuf>,
        why: &'static str,
    ) -> Result<(), ConfigError> {
        if self.stop() {
            Ok(())
        } else {
            Err(ConfigError::Io(crate::model::io_error::IoError {
                path,
                action,
                source: std::io::Error::other(why),
            }))
        }
    }

    /// Asks the task to stop, wakes it and waits until it has finished its
    /// last round. Returns `false` if the task panicked.
    pub(crate) fn stop(&mut self) -> bool {
        let Some(join) = self.join.take() else {
            return true;
        };
        self.control.stop.store(true, Ordering::Release);
        join.thread().unpark();
        join.join().is_ok()
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The high-water mark in events for a queue of `capacity` at `percent`
/// (1–100), at least 1.
pub(crate) fn high_water_events(capacity: usize, percent: u8) -> usize {
    ((capacity as u128 * percent as u128) / 100).max(1) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::mpsc;

    struct Counting {
        rounds: Arc<AtomicUsize>,
        finished: Arc<AtomicBool>,
        tx: mpsc::Sender<usize>,
    }

    impl Work for Counting {
        fn run_once(&mut self) {
            let n = self.rounds.fetch_add(1, Ordering::SeqCst) + 1;
            let _ = self.tx.send(n);
        }
        fn finish(&mut self) {
            self.finished.store(true, Ordering::SeqCst);
        }
    }

    fn start(
        period: Duration,
    ) -> (
        Task,
        Arc<TaskControl>,
        Arc<AtomicUsize>,
        Arc<AtomicBool>,
        mpsc::Receiver<usize>,
    ) {
        let control = TaskControl::new();
        let rounds = Arc::new(AtomicUsize::new(0));
        let finished = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let task = Task::spawn(
            "test-task".into(),
            period,
            Arc::clone(&control),
            Counting {
                rounds: Arc::clone(&rounds),
                finished: Arc::clone(&finished),
                tx,
            },
        )
        .unwrap();
        (task, control, rounds, finished, rx)
    }

    #[test]
    fn wake_request_runs_a_round_long_before_the_period() {
        let (mut task, control, _rounds, finished, rx) = start(Duration::from_secs(3600));
        // The first round runs at start.
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), 1);
        control.request_wake();
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), 2);
        control.request_wake();
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), 3);
        assert!(task.stop());
        assert!(finished.load(Ordering::SeqCst));
    }

    #[test]
    fn stop_ends_a_task_sleeping_for_an_hour() {
        let (mut task, _control, rounds, finished, rx) = start(Duration::from_secs(3600));
        rx.recv_timeout(Duration::from_secs(10)).unwrap();
        let t = Instant::now();
        assert!(task.stop());
        assert!(t.elapsed() < Duration::from_secs(60));
        assert!(finished.load(Ordering::SeqCst));
        assert_eq!(rounds.load(Ordering::SeqCst), 1);
        // Stopping twice is harmless.
        assert!(task.stop());
    }

    #[test]
    fn periodic_rounds_happen_without_requests() {
        let (mut task, _control, _rounds, _finished, rx) = start(Duration::from_millis(1));
        for expected in 1..=5 {
            assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), expected);
        }
        assert!(task.stop());
    }

    #[test]
    fn each_task_has_its_own_stop_flag() {
        let (mut a, _ca, _ra, fa, rxa) = start(Duration::from_millis(1));
        let (mut b, cb, rb, fb, rxb) = start(Duration::from_secs(3600));
        rxa.recv_timeout(Duration::from_secs(10)).unwrap();
        rxb.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(a.stop());
        assert!(fa.load(Ordering::SeqCst));
        // b is still running and still answers wake-ups.
        assert!(!fb.load(Ordering::SeqCst));
        assert!(!cb.stop_requested());
        let before = rb.load(Ordering::SeqCst);
        cb.request_wake();
        assert_eq!(
            rxb.recv_timeout(Duration::from_secs(10)).unwrap(),
            before + 1
        );
        assert!(b.stop());
        assert!(fb.load(Ordering::SeqCst));
    }

    /// Fails every round and counts them.
    struct Failing {
        rounds: Arc<AtomicUsize>,
    }

    impl Work for Failing {
        fn run_once(&mut self) {
            self.rounds.fetch_add(1, Ordering::SeqCst);
        }
        fn finish(&mut self) {}
        fn backing_off(&self) -> bool {
            true
        }
    }

    #[test]
    fn a_backing_off_task_ignores_wake_ups_until_its_period() {
        let control = TaskControl::new();
        let rounds = Arc::new(AtomicUsize::new(0));
        let mut task = Task::spawn(
            "test-backoff".into(),
            Duration::from_secs(3600),
            Arc::clone(&control),
            Failing {
                rounds: Arc::clone(&rounds),
            },
        )
        .unwrap();
        while rounds.load(Ordering::SeqCst) == 0 {
            thread::sleep(Duration::from_millis(1));
        }
        for _ in 0..10_000 {
            control.request_wake();
        }
        thread::sleep(Duration::from_millis(200));
        // Only the first round: every wake-up waits for the (hour-long) period.
        assert_eq!(rounds.load(Ordering::SeqCst), 1);
        assert!(control.wake_requested.load(Ordering::SeqCst));
        assert!(task.stop());
        assert_eq!(rounds.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn high_water_mark_rounds_down_and_is_never_zero() {
        assert_eq!(high_water_events(8192, 80), 6553);
        assert_eq!(high_water_events(10, 80), 8);
        assert_eq!(high_water_events(1, 80), 1);
        assert_eq!(high_water_events(4, 100), 4);
    }
}
