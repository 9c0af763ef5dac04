//! The tracer's per-thread cache of online and UDP queues' feeds (beside the
//! circular shards, `ring::producer_cache`): a thread that logs into more
//! queues than the cache holds, of every kind in turn, still puts each event
//! into the queue it is routed to now, in order, with its source; and a
//! rerouted event leaves a feed it was cached with at once.

use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::time::Duration;

use qtrace::classes::{tracer::HOOPS, user};
use qtrace::queues::{Circular, CircularParams, Online, OnlineParams, Udp, UdpParams};
use qtrace::wire::datagram::{DatagramKind, DatagramView};
use qtrace::{Config, Event, QueueHandle, Tracer};

use crate::common::read_all::read_all;

fn dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("qtrace-feed-cache-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn online(t: &Tracer, file: &Path) -> QueueHandle {
    t.create_queue::<Online>(OnlineParams::default().with_capacity(1024).with_file(file))
        .unwrap()
}

/// `(source, arg0)` of the user events of an online queue's file.
fn logged(file: &Path) -> Vec<(u32, u64)> {
    let (_, events, _) = read_all(file);
    events
        .iter()
        .filter(|e| e.id != HOOPS && e.id.0 >= user::user(0).0)
        .map(|e: &Event| (e.source, e.args[0]))
        .collect()
}

#[test]
fn one_thread_alternating_between_more_queues_than_cache_entries() {
    // Five online queues and two circular ones, more than the cache's four
    // entries, logged into in turn: every event replaces an entry.
    let d = dir("alternate");
    let t = Tracer::with_config(Config::default().with_output_dir(&d));
    let files: Vec<PathBuf> = (0..5).map(|i| d.join(format!("q{i}.qtr"))).collect();
    let onlines: Vec<QueueHandle> = files.iter().map(|f| online(&t, f)).collect();
    let circulars: Vec<QueueHandle> = (0..2)
        .map(|_| {
            t.create_queue::<Circular>(
                CircularParams::default()
                    .with_capacity(64)
                    .with_ring(Default::default()),
            )
            .unwrap()
        })
        .collect();
    let queues: Vec<QueueHandle> = onlines.iter().chain(&circulars).copied().collect();
    for (i, &q) in queues.iter().enumerate() {
        t.assign_event(user::user(i as u16), q).unwrap();
    }
    t.activate().unwrap();
    qtrace::source::set_current(7);
    // Two events a queue in a row (the second finds the entry the first
    // made), one from the thread's source and one given, in either order.
    for round in 0..10u64 {
        for i in [0, 5, 1, 2, 6, 3, 4] {
            let arg = round * 10 + i as u64;
            for half in 0..2 {
                if (round + half) % 2 == 0 {
                    t.log_event(user::user(i), [arg, half]);
                } else {
                    t.log_event_from(40 + i as u32, user::user(i), [arg, half]);
                }
            }
        }
    }
    let report = t.shutdown().unwrap();
    let want = |i: u64| -> Vec<(u32, u64)> {
        (0..10)
            .flat_map(|round| {
                (0..2).map(move |half| {
                    let source = if (round + half) % 2 == 0 {
                        7
                    } else {
                        40 + i as u32
                    };
                    (source, round * 10 + i)
                })
            })
            .collect()
    };
    for (i, file) in files.iter().enumerate() {
        assert_eq!(logged(file), want(i as u64), "online queue {i}");
        assert_eq!(report.queues[i].counters.accepted, 20);
        assert_eq!(report.queues[i].counters.dropped, 0);
    }
    for (j, &q) in circulars.iter().enumerate() {
        assert_eq!(
            report.queues[q.index()].counters.accepted,
            20,
            "circular {j}"
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn rerouting_an_event_leaves_its_cached_feed_at_once() {
    let d = dir("reroute");
    let t = Tracer::with_config(Config::default().with_output_dir(&d));
    let (fa, fb) = (d.join("a.qtr"), d.join("b.qtr"));
    let a = online(&t, &fa);
    let b = online(&t, &fb);
    t.assign_event(user::USER0, a).unwrap();
    t.activate().unwrap();
    qtrace::source::set_current(3);
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
    t.shutdown().unwrap();
    assert_eq!(logged(&fa), [(3, 1), (3, 2), (3, 4), (3, 6)]);
    assert_eq!(logged(&fb), [(3, 3)]);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn udp_events_from_a_cached_feed_arrive_in_order() {
    let receiver = UdpSocket::bind("127.0.0.1:0").unwrap();
    receiver
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let t = Tracer::new();
    let q = t
        .create_queue::<Udp>(UdpParams::to(receiver.local_addr().unwrap()).with_capacity(1024))
        .unwrap();
    t.assign_event(user::USER0, q).unwrap();
    t.activate().unwrap();
    for i in 0..100u64 {
        t.log_event_from(9, user::USER0, [i, 0]);
    }
    let report = t.shutdown().unwrap();
    assert_eq!(report.queues[0].counters.accepted, 100);
    let mut got = Vec::new();
    let mut buf = vec![0u8; 65536];
    while got.len() < 100 {
        let n = receiver.recv(&mut buf).expect("a datagram within 5 s");
        let d = DatagramView::new_checked(&buf[..n]).unwrap();
        if d.kind() != DatagramKind::Events {
            continue;
        }
        got.extend(
            d.events()
                .filter(|e| e.id == user::USER0)
                .map(|e| (e.source, e.args[0])),
        );
    }
    assert_eq!(got, (0..100).map(|i| (9, i)).collect::<Vec<_>>());
}
