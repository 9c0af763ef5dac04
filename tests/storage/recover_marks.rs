//! A slot being written when the process stops is recovered as a marked
//! hoops record, never as a record, in each kind of ring: the circular
//! queue's shared ring (`shards: 0`), a shard, and the fixed queue. The
//! "crash" is a reservation never posted, then the tracer leaked.

use qtrace::classes::{tracer::HOOPS, user};
use qtrace::clock::{Clock, ManualClock};
use qtrace::queue::Queue;
use qtrace::queues::{Circular, CircularParams, Fixed, FixedParams};
use qtrace::storage;
use qtrace::storage::{RecoveryCounts, UNREADABLE};
use qtrace::{Config, Event, QueueHandle, Tracer};

fn leaked_tracer(dir: &std::path::Path, clock: &ManualClock) -> &'static Tracer {
    Box::leak(Box::new(Tracer::with_config(
        Config::default()
            .with_output_dir(dir)
            .with_clock(Clock::manual(clock)),
    )))
}

fn summary(events: &[Event]) -> Vec<(bool, u64)> {
    // (is a hoops record, args[0]) in file order, marks as (true, 1) with the flag checked.
    events
        .iter()
        .map(|e| {
            if e.id == HOOPS {
                (
                    true,
                    e.args[0] | if e.flags == UNREADABLE { 1 << 32 } else { 0 },
                )
            } else {
                (false, e.args[0])
            }
        })
        .collect()
}

const MARK: u64 = 1 | 1 << 32;

#[test]
fn shared_ring_shard_and_fixed_mark_the_slot_being_written() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(0);
    let t = leaked_tracer(dir.path(), &clock);
    let shared = t
        .create_queue::<Circular>(CircularParams::default().with_capacity(4).with_shards(0))
        .unwrap();
    let sharded = t
        .create_queue::<Circular>(CircularParams::default().with_capacity(4).with_shards(1))
        .unwrap();
    let fixed = t
        .create_queue::<Fixed>(FixedParams::default().with_capacity(4))
        .unwrap();
    t.assign_event(user::USER0, shared).unwrap();
    t.assign_event(user::USER1, sharded).unwrap();
    t.assign_event(user::USER2, fixed).unwrap();
    t.activate().unwrap();
    for i in 0..3 {
        clock.advance(10);
        t.log_event(user::USER0, [i, 0]);
        t.log_event(user::USER1, [i, 0]);
        t.log_event(user::USER2, [i, 0]);
    }
    // Each queue: one reservation taken and never posted (a producer
    // killed between claim and commit), then one more event.
    let mut pending = Vec::new();
    for q in [shared, sharded, fixed] {
        pending.push(t.queue(q).unwrap().get().expect("room"));
    }
    clock.advance(10);
    t.log_event(user::USER0, [4, 0]);
    t.log_event(user::USER2, [4, 0]);
    let ring = |h: QueueHandle, ty: &str| dir.path().join(format!("queue{}-{ty}.ring", h.0));

    // Shared ring (capacity 4): tickets 0, 1, 2 events, 3 being written,
    // 4 is event 4 and overwrote ticket 0.
    let rec = storage::recover_file(ring(shared, "circular")).unwrap();
    assert_eq!(
        summary(&rec.events),
        [(true, 1), (false, 1), (false, 2), (true, MARK), (false, 4)]
    );
    assert_eq!(
        rec.counts,
        RecoveryCounts {
            attempts: 5,
            accepted: 5,
            dropped: 0,
            overwritten: 1,
            unreadable: 1,
            recovered: 3
        }
    );

    // A shard: tickets 0, 1, 2 events, 3 claimed and not committed. Its
    // slot (3 mod 4) held nothing older, so only the mark is lost.
    let rec = storage::recover_file(ring(sharded, "circular")).unwrap();
    assert_eq!(
        summary(&rec.events),
        [(false, 0), (false, 1), (false, 2), (true, MARK)]
    );
    assert_eq!(rec.counts.unreadable, 1);
    assert_eq!(rec.counts.attempts, 4);

    // Fixed (capacity 4): tickets 0, 1, 2 events, 3 being written, the
    // 5th attempt dropped.
    let rec = storage::recover_file(ring(fixed, "fixed")).unwrap();
    assert_eq!(
        summary(&rec.events),
        [(false, 0), (false, 1), (false, 2), (true, MARK), (true, 1)]
    );
    assert_eq!(
        rec.counts,
        RecoveryCounts {
            attempts: 5,
            accepted: 4,
            dropped: 1,
            overwritten: 0,
            unreadable: 1,
            recovered: 3
        }
    );
    drop(pending);
}
