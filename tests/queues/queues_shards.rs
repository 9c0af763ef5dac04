//! The circular queue's per-thread shards: events of several threads (each
//! in its own single-producer shard, or in the shared ring) are merged by
//! time, the newest `capacity` overall are kept, everything else counts as
//! overwritten, and hoops records say exactly how many each ring lost.

use crate::queues_support;

use qtrace::classes::user;
use qtrace::queue::{Queue, QueueCounters};
use qtrace::queues::{AnyQueue, QueueType};
use qtrace::queues::{Circular, CircularParams};
use qtrace::{ConfigError, Event};
use queues_support::{context, hoops, read_trace, scratch};

const HANDLE: u16 = 3;
const NOW: u64 = 777;

fn ev(time: u64, source: u32) -> Event {
    Event::new(time, user::USER0, source, [time, !time])
}

/// Logs events at `times` through the `Queue` trait from a new thread (which
/// then exits; a thread started after it may reuse its token and so its
/// shard).
fn log_from_thread(q: &AnyQueue, source: u32, times: &[u64]) {
    log_from_threads(q, &[(source, times)]);
}

/// Each `(source, times)` logged from its own thread, all threads alive
/// until every one has logged (so each has its own token: its own shard, or
/// the shared ring).
fn log_from_threads(q: &AnyQueue, threads: &[(u32, &[u64])]) {
    let all_logged = std::sync::Barrier::new(threads.len());
    std::thread::scope(|s| {
        for &(source, times) in threads {
            let all_logged = &all_logged;
            s.spawn(move || {
                for &t in times {
                    let r = q.get().expect("a circular queue always has room");
                    q.post(r, &ev(t, source));
                }
                all_logged.wait();
            });
        }
    });
}

fn circular(capacity: usize, shards: usize, tag: &str) -> (AnyQueue, qtrace::queue::QueueContext) {
    let dir = scratch(tag);
    let ctx = context(HANDLE, "circular", &dir, NOW);
    let q = Circular
        .create(
            CircularParams::default()
                .with_capacity(capacity)
                .with_shards(shards)
                .with_ring(Default::default()),
            &ctx,
        )
        .unwrap();
    (q, ctx)
}

fn counters(accepted: u64, overwritten: u64, delivered: u64, queued: u64) -> QueueCounters {
    QueueCounters {
        accepted,
        dropped: 0,
        overwritten,
        delivered,
        queued,
    }
}

#[test]
fn two_threads_merge_by_time_and_keep_the_newest_capacity() {
    // Whichever rings the two threads land in (their own shards, or one in
    // a shard and one in the shared ring), the result is the same; with no
    // shards, both share one ring of 4, which keeps the last 4 logged.
    for shards in [16, 1, 0] {
        let (q, ctx) = circular(4, shards, "shards-merge");
        assert_eq!(q.as_circular().unwrap().shards(), shards);
        if shards > 0 {
            log_from_threads(&q, &[(0, &[0, 2, 4, 6]), (1, &[1, 3, 5, 7])]);
        } else {
            // One after the other, so the shared ring's order is known.
            log_from_thread(&q, 0, &[0, 2, 4, 6]);
            log_from_thread(&q, 1, &[1, 3, 5, 7]);
        }
        let h = |time, lost| hoops(time, lost, HANDLE);
        let expected = if shards > 0 {
            // Each ring lost its two oldest events to the newest-4 cut.
            vec![h(4, 2), ev(4, 0), h(5, 2), ev(5, 1), ev(6, 0), ev(7, 1)]
        } else {
            vec![h(1, 4), ev(1, 1), ev(3, 1), ev(5, 1), ev(7, 1)]
        };
        let c = q.as_circular().unwrap();
        assert_eq!(c.snapshot_events(), expected, "shards {shards}");
        assert_eq!(q.counters(), counters(8, 4, 0, 4));

        q.terminate(&ctx).unwrap();
        let (_, saved) = read_trace(c.file());
        assert_eq!(saved, expected);
        let after = q.counters();
        assert_eq!(after, counters(8, 4, 4, 0));
        assert!(after.is_consistent());

        // Late events: the earlier tickets of that ring are reported lost
        // before them, as for a single ring.
        log_from_thread(&q, 2, &[8]);
        let snap = c.snapshot_events();
        assert_eq!(snap.last(), Some(&ev(8, 2)));
        assert_eq!(q.counters(), counters(9, 4, 4, 1));
        std::fs::remove_dir_all(&ctx.output_dir).ok();
    }
}

#[test]
fn a_save_counts_what_it_leaves_out_as_overwritten() {
    let (q, ctx) = circular(2, 16, "shards-save");
    log_from_threads(&q, &[(0, &[10, 20, 30]), (1, &[15, 25])]);
    // Held: 2 + 2 records, capacity 2: queued is what a save keeps.
    assert_eq!(q.counters(), counters(5, 3, 0, 2));
    q.terminate(&ctx).unwrap();
    let (_, saved) = read_trace(q.as_circular().unwrap().file());
    let h = |time, lost| hoops(time, lost, HANDLE);
    assert_eq!(saved, vec![h(25, 1), ev(25, 1), h(30, 2), ev(30, 0)]);
    assert_eq!(q.counters(), counters(5, 3, 2, 0));
    std::fs::remove_dir_all(&ctx.output_dir).ok();
}

#[test]
fn an_exited_owner_leaves_its_events_and_later_threads_still_log() {
    // One shard: the first thread owns it; after it exits, the next thread
    // takes its token and continues its shard, or (when another thread took
    // the token first) logs into the shared ring. Nothing is lost or mixed up.
    let (q, ctx) = circular(8, 1, "shards-exit");
    log_from_thread(&q, 0, &[10, 20, 30]);
    log_from_thread(&q, 1, &[15, 25]);
    log_from_thread(&q, 2, &[35]);
    let times: Vec<u64> = q
        .as_circular()
        .unwrap()
        .snapshot_events()
        .iter()
        .map(|e| e.time)
        .collect();
    assert_eq!(times, [10, 15, 20, 25, 30, 35]);
    assert_eq!(q.counters(), counters(6, 0, 0, 6));
    std::fs::remove_dir_all(&ctx.output_dir).ok();
}

#[test]
fn shard_counts_must_be_zero_or_a_power_of_two() {
    for bad in [3, 12, 512] {
        let dir = scratch("shards-bad");
        let ctx = context(HANDLE, "circular", &dir, NOW);
        let e = Circular
            .create(CircularParams::default().with_shards(bad), &ctx)
            .unwrap_err();
        assert!(matches!(e, ConfigError::InvalidParameter { .. }), "{e:?}");
        assert!(
            e.to_string().contains(&format!(
                "shards {bad} is not 0 or a power of two up to 256"
            )),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }
    assert_eq!(CircularParams::default().shards(), 16);
}
