//! The UDP queue's shutdown deadline (2 s): events it cannot send by then
//! are given up and accounted — counted dropped (never left `queued` in the
//! final report), named in the queue's status (so the report is not clean)
//! and told to the receiver by the close datagram, which marks them lost.
//! Before, they stayed `queued` in the final counters.
//!
//! The receiver is bound on 127.0.0.1 but does not read while the sender
//! runs; it reads what the kernel kept for it afterwards. (A receiver that
//! never reads does not by itself make loopback sends fail: the kernel
//! drops at its full buffer and the sender sees success. What keeps the
//! queue from emptying here is a producer that claimed a slot and never
//! committed it, so the events after it cannot be sent either.)

use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use qtrace::classes::{tracer::HOOPS, user};
use qtrace::queue::Queue;
use qtrace::queues::{DatagramsPerPeriod, Udp, UdpParams};
use qtrace::receiver::{Receiver, RunLimit};
use qtrace::Tracer;

#[test]
fn events_left_at_the_shutdown_deadline_are_dropped_and_marked_lost() {
    let mut receiver = Receiver::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).unwrap();
    let tracer = Tracer::new();
    let q = tracer
        .create_queue::<Udp>(
            UdpParams::to(receiver.local_addr())
                .with_capacity(1024)
                .with_period(Duration::from_millis(5))
                .with_datagrams_per_period(DatagramsPerPeriod::All),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer.activate().unwrap();
    for i in 0..10 {
        tracer.log_event(user::USER0, [i, 0]);
    }
    // A producer claims a slot and never commits it (as one killed between
    // `get` and `post`): it and the 5 events after it cannot be sent.
    let stuck = tracer.queue(q).unwrap().get();
    assert!(stuck.is_some(), "the ring has room");
    for i in 10..15 {
        tracer.log_event(user::USER0, [i, 0]);
    }
    let started = Instant::now();
    let report = tracer.shutdown().unwrap();
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(2) && waited < Duration::from_secs(10),
        "{waited:?}"
    );
    let entry = &report.queues[0];
    let c = entry.counters;
    assert_eq!(
        (c.accepted, c.dropped, c.overwritten, c.delivered, c.queued),
        (10, 6, 0, 10, 0),
        "{c:?}"
    );
    assert!(c.is_consistent());
    assert_eq!(report.total_lost(), 6);
    assert!(!report.is_clean());
    let status = &entry.status;
    assert_eq!(
        status.last_error.as_deref(),
        Some(
            format!(
                "6 events could not be sent to {} within the 2 s shutdown deadline: counted as dropped (UdpStats::abandoned_events), the receiver marks them lost",
                receiver.local_addr()
            )
            .as_str()
        )
    );
    let stats = tracer.queue(q).unwrap().as_udp().unwrap().stats();
    assert_eq!((stats.abandoned_events, stats.events_sent), (6, 10));
    // The receiver now reads what was kept for it: the 10 events sent, then
    // one hoops record of the 6 never sent (from the close datagram).
    let mut events = Vec::new();
    let summary = receiver
        .run_with(RunLimit::duration(Duration::from_millis(500)), &mut |e| {
            events.push(*e)
        })
        .unwrap();
    let values: Vec<u64> = events
        .iter()
        .filter(|e| e.id == user::USER0)
        .map(|e| e.args[0])
        .collect();
    assert_eq!(values, (0..10).collect::<Vec<_>>());
    let hoops: Vec<u64> = events
        .iter()
        .filter(|e| e.id == HOOPS)
        .map(|e| e.args[0])
        .collect();
    assert_eq!(hoops, [6]);
    let sender = &summary.senders[0];
    assert!(sender.closed);
    assert_eq!((sender.events, sender.unsent, sender.lost()), (10, 6, 6));
    assert_eq!(sender.logged, Some(16));
}
