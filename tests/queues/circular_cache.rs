//! The tracer's per-thread cache of circular-queue shards
//! (`queues::producer_cache`): whatever a thread cached, every event still
//! lands in the queue it is routed to now, with the right source, and
//! nothing stale survives a tracer being dropped and another created.
//! Also run under Miri (`scripts/miri.sh`), which would report a dangling
//! cached pointer.

use qtrace::classes::user;
use qtrace::queues::{Circular, CircularParams};
use qtrace::{Config, Event, QueueHandle, Tracer};

fn tracer(tag: &str) -> Tracer {
    let dir = std::env::temp_dir().join(format!("qtrace-cache-{tag}-{}", std::process::id()));
    Tracer::with_config(Config::default().with_output_dir(dir))
}

fn circular(t: &Tracer, capacity: usize, shards: usize) -> QueueHandle {
    t.create_queue::<Circular>(
        CircularParams::default()
            .with_capacity(capacity)
            .with_shards(shards)
            .with_ring(Default::default()),
    )
    .unwrap()
}

/// The user events (not hoops records) in a queue, oldest first.
fn held(t: &Tracer, q: QueueHandle) -> Vec<Event> {
    t.queue(q)
        .unwrap()
        .as_circular()
        .unwrap()
        .snapshot_events()
        .into_iter()
        .filter(|e| e.id != qtrace::classes::tracer::HOOPS)
        .collect()
}

fn args0(events: &[Event]) -> Vec<u64> {
    events.iter().map(|e| e.args[0]).collect()
}

#[test]
fn one_thread_alternating_between_more_circular_queues_than_cache_entries() {
    // Six queues: handles 0 and 4, and 1 and 5, share a cache entry, so
    // alternating between them replaces the entry every time.
    let t = tracer("alternate");
    let queues: Vec<QueueHandle> = (0..6).map(|_| circular(&t, 64, 4)).collect();
    for (i, &q) in queues.iter().enumerate() {
        t.assign_event(user::user(i as u16), q).unwrap();
    }
    t.activate().unwrap();
    for round in 0..5u64 {
        for i in [0, 4, 1, 5, 2, 3] {
            t.log_event(user::user(i), [round * 10 + i as u64, 0]);
        }
    }
    for (i, &q) in queues.iter().enumerate() {
        let want: Vec<u64> = (0..5).map(|round| round * 10 + i as u64).collect();
        assert_eq!(args0(&held(&t, q)), want, "queue {i}");
        assert_eq!(t.counters(q).unwrap().accepted, 5);
    }
}

#[test]
fn rerouting_an_event_moves_it_to_the_new_queue_at_once() {
    let t = tracer("reroute");
    let a = circular(&t, 64, 4);
    let b = circular(&t, 64, 4);
    t.assign_event(user::USER0, a).unwrap();
    t.activate().unwrap();
    t.log_event(user::USER0, [1, 0]);
    t.log_event(user::USER0, [2, 0]);
    t.assign_event(user::USER0, b).unwrap();
    t.log_event(user::USER0, [3, 0]);
    t.assign_event(user::USER0, a).unwrap();
    t.log_event(user::USER0, [4, 0]);
    t.suspend().unwrap();
    t.log_event(user::USER0, [5, 0]);
    t.resume().unwrap();
    t.log_event(user::USER0, [6, 0]);
    assert_eq!(args0(&held(&t, a)), [1, 2, 4, 6]);
    assert_eq!(args0(&held(&t, b)), [3]);
}

#[test]
fn a_new_tracer_never_sees_a_dropped_tracers_shards() {
    // Same thread, same queue handle, same route word, one tracer after the
    // other: the second must log into its own queue (a cache keyed by the
    // route word alone would write into the first tracer's freed shard).
    // (Two rounds under Miri, where creating a tracer takes about 25 s.)
    for round in 0..if cfg!(miri) { 2 } else { 4 } {
        let t = tracer("sequence");
        let q = circular(&t, 16, 2);
        t.assign_class(user::CLASS, q).unwrap();
        t.activate().unwrap();
        for i in 0..3 {
            t.log_event(user::USER0, [round * 100 + i, 0]);
        }
        assert_eq!(
            args0(&held(&t, q)),
            [round * 100, round * 100 + 1, round * 100 + 2]
        );
        assert_eq!(t.counters(q).unwrap().accepted, 3);
        drop(t);
    }
}

#[test]
fn two_live_tracers_with_the_same_routes_stay_apart() {
    let t1 = tracer("twins1");
    let t2 = tracer("twins2");
    let q1 = circular(&t1, 16, 2);
    let q2 = circular(&t2, 16, 2);
    assert_eq!(q1, q2);
    for t in [&t1, &t2] {
        t.assign_event(user::USER0, q1).unwrap();
        t.activate().unwrap();
    }
    for i in 0..4 {
        t1.log_event(user::USER0, [i, 1]);
        t2.log_event(user::USER0, [i, 2]);
    }
    let e1 = held(&t1, q1);
    let e2 = held(&t2, q2);
    assert_eq!(args0(&e1), [0, 1, 2, 3]);
    assert_eq!(args0(&e2), [0, 1, 2, 3]);
    assert!(e1.iter().all(|e| e.args[1] == 1));
    assert!(e2.iter().all(|e| e.args[1] == 2));
}

#[test]
fn the_cached_path_stamps_the_right_source() {
    let t = tracer("source");
    let q = circular(&t, 16, 4);
    t.assign_event(user::USER0, q).unwrap();
    t.activate().unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            // The first event of this thread names its source explicitly, so
            // the cache is filled before `log_event` ever asked for this
            // thread's number: it must still be a real one.
            t.log_event_from(42, user::USER0, [0, 0]);
            t.log_event(user::USER0, [1, 0]);
            let assigned = qtrace::source::current();
            qtrace::source::set_current(7);
            t.log_event(user::USER0, [2, 0]);
            qtrace::source::set_current(u32::MAX); // "assign one for me"
            t.log_event(user::USER0, [3, 0]);
            let reassigned = qtrace::source::current();
            let sources: Vec<u32> = held(&t, q).iter().map(|e| e.source).collect();
            assert_eq!(sources, [42, assigned, 7, reassigned]);
            assert_ne!(assigned, u32::MAX);
            assert_ne!(reassigned, u32::MAX);
            assert_ne!(reassigned, assigned);
        });
    });
}

#[test]
fn threads_beyond_the_shards_and_exited_threads_lose_nothing() {
    // One shard: the first thread owns it, the others use the shared ring;
    // when the owner exits, a later thread inherits the shard.
    let t = tracer("beyond");
    let q = circular(&t, 1024, 1);
    t.assign_class(user::CLASS, q).unwrap();
    t.activate().unwrap();
    for wave in 0..3u64 {
        std::thread::scope(|s| {
            for thread in 0..3u64 {
                let t = &t;
                s.spawn(move || {
                    for i in 0..20 {
                        t.log_event(user::USER0, [wave * 1000 + thread * 100 + i, 0]);
                    }
                });
            }
        });
    }
    let mut got = args0(&held(&t, q));
    got.sort_unstable();
    let mut want: Vec<u64> = (0..3)
        .flat_map(|w| (0..3).flat_map(move |th| (0..20).map(move |i| w * 1000 + th * 100 + i)))
        .collect();
    want.sort_unstable();
    assert_eq!(got, want);
    let c = t.counters(q).unwrap();
    assert_eq!((c.accepted, c.dropped, c.overwritten), (180, 0, 0));
}

#[test]
fn a_class_routed_to_two_queues_by_event() {
    // Per-event routing inside one class: every event keeps its own queue.
    let t = tracer("split");
    let a = circular(&t, 64, 2);
    let b = circular(&t, 64, 2);
    t.assign_class(user::CLASS, a).unwrap();
    t.assign_event(user::user(1), b).unwrap();
    t.activate().unwrap();
    for i in 0..10u64 {
        t.log_event(user::user((i % 2) as u16), [i, 0]);
    }
    assert_eq!(args0(&held(&t, a)), [0, 2, 4, 6, 8]);
    assert_eq!(args0(&held(&t, b)), [1, 3, 5, 7, 9]);
}
