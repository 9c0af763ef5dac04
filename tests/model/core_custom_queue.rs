//! A user-defined queue is reachable as its own type, while the tracer runs
//! and after shutdown (`AnyQueue::as_custom`).

use crate::common;

use common::{log, Recorder, RecorderQueue};
use qtrace::classes::user;
use qtrace::queue::{Queue, QueueContext, QueueCounters, Reservation};
use qtrace::queues::{AnyQueue, QueueType};
use qtrace::queues::{Dummy, DummyQueue};
use qtrace::{ConfigError, Event, Tracer};

/// A queue that keeps only the last event's first argument.
struct Last;

struct LastQueue(std::sync::atomic::AtomicU64);

impl QueueType for Last {
    type Params = ();
    const NAME: &'static str = "last";
    fn create(&self, _: (), _: &QueueContext) -> Result<AnyQueue, ConfigError> {
        Ok(AnyQueue::custom(LastQueue(Default::default())))
    }
}

impl Queue for LastQueue {
    fn get(&self) -> Option<Reservation> {
        Some(Reservation::new(0))
    }
    fn post(&self, _: Reservation, event: &Event) {
        self.0
            .store(event.args[0], std::sync::atomic::Ordering::Relaxed);
    }
    fn counters(&self) -> QueueCounters {
        QueueCounters::default()
    }
}

#[test]
fn custom_queues_downcast_to_their_own_type_before_and_after_shutdown() {
    let t = Tracer::new();
    t.register_queue_type(Recorder).unwrap();
    t.register_queue_type(Last).unwrap();
    let events = log();
    let rec = t.create_queue::<Recorder>(events.clone()).unwrap();
    let last = t.create_queue::<Last>(()).unwrap();
    let dummy = t.create_queue::<Dummy>(()).unwrap();
    t.assign_event(user::USER0, rec).unwrap();
    t.assign_event(user::USER1, last).unwrap();
    t.assign_event(user::USER2, dummy).unwrap();
    t.activate().unwrap();
    for i in 0..5 {
        t.log_event(user::USER0, [i, 0]);
        t.log_event(user::USER1, [100 + i, 0]);
        t.log_event(user::USER2, [i, 0]);
    }
    let last_value = |t: &Tracer| {
        t.queue(last)
            .unwrap()
            .as_custom::<LastQueue>()
            .unwrap()
            .0
            .load(std::sync::atomic::Ordering::Relaxed)
    };
    assert_eq!(last_value(&t), 104);

    let report = t.shutdown().unwrap();
    assert!(report.is_clean());
    // After shutdown: the same queues, as their own types.
    assert_eq!(last_value(&t), 104);
    let recorder = t.queue(rec).unwrap().as_custom::<RecorderQueue>().unwrap();
    assert_eq!(recorder.counters().delivered, 5);
    let args: Vec<u64> = events.lock().iter().map(|e| e.args[0]).collect();
    assert_eq!(args, [0, 1, 2, 3, 4]);

    // The wrong type, or a built-in queue, is None.
    assert!(t.queue(rec).unwrap().as_custom::<LastQueue>().is_none());
    assert!(t
        .queue(last)
        .unwrap()
        .as_custom::<RecorderQueue>()
        .is_none());
    assert!(t.queue(dummy).unwrap().as_custom::<DummyQueue>().is_none());
    assert!(t.queue(dummy).unwrap().as_custom::<LastQueue>().is_none());
}
