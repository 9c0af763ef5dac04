//! The UDP queue streaming to the receiver over loopback: a million events
//! with no loss when the sender keeps up, exact accounting when it cannot,
//! no receiver at all, user-defined events named at the far end.
//!
//! Every test binds to 127.0.0.1 (or ::1) with ports chosen by the system and
//! bounds its running time.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::thread;
use std::time::{Duration, Instant};

use qtrace::classes::{tracer::HOOPS, user, ClassSpec};
use qtrace::queues::{DatagramsPerPeriod, Udp, UdpParams};
use qtrace::reader::{Completeness, TraceReader};
use qtrace::receiver::{Receiver, ReceiverSummary, RunLimit};
use qtrace::wire::unclosed_stream;
use qtrace::wire::TraceHeader;
use qtrace::{Config, Event, Tracer};

const SCALE: u64 = if cfg!(miri) { 1000 } else { 1 };

fn loopback() -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, 0))
}

fn out_file(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("qtrace-udp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir.join("received.qtr")
}

/// The header and records of a received file, which must be complete: it
/// ends with a close run (not returned) that agrees with its records.
/// The file's header, its events and hoops records, and its unclosed-stream
/// marks as (sender, events accounted) (FORMAT.md 1.5), checking that it is
/// complete.
fn read_trace(path: &PathBuf) -> (TraceHeader, Vec<Event>, Vec<(u32, u64)>) {
    let mut reader = TraceReader::open(path).unwrap();
    let header = reader.header().clone();
    let (marks, events): (Vec<Event>, Vec<Event>) = reader
        .by_ref()
        .map(|e| e.unwrap())
        .partition(|e| unclosed_stream(e).is_some());
    let marks = marks.iter().filter_map(unclosed_stream).collect();
    assert!(
        matches!(reader.completeness(), Some(Completeness::Complete(_))),
        "{:?}",
        reader.completeness()
    );
    (header, events, marks)
}

fn wait_until(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < limit, "timed out waiting until {what}");
        thread::sleep(Duration::from_micros(200));
    }
}

/// Starts a receiver on loopback writing to `path`, stopping after `events`
/// events or `limit`; returns its address, progress and thread.
fn start_receiver(
    bind: SocketAddr,
    path: PathBuf,
    limit: RunLimit,
) -> (
    SocketAddr,
    std::sync::Arc<qtrace::receiver::Progress>,
    qtrace::receiver::Stopper,
    thread::JoinHandle<ReceiverSummary>,
) {
    let receiver = Receiver::bind(bind).unwrap();
    let addr = receiver.local_addr();
    let progress = receiver.progress();
    let stopper = receiver.stopper();
    let join = thread::spawn(move || receiver.run(&path, limit).unwrap());
    (addr, progress, stopper, join)
}

#[test]
fn a_million_events_over_loopback_with_the_sender_keeping_up() {
    stream_keeping_up("million", 1_000_000 / SCALE, true, true);
}

#[test]
fn a_million_32_byte_records_with_segmentation_offload() {
    stream_keeping_up("million-32", 1_000_000 / SCALE, true, false);
}

#[test]
fn without_segmentation_offload_one_datagram_per_call_loses_nothing() {
    stream_keeping_up("no-gso", 100_000 / SCALE, false, false);
}

#[test]
fn compact_datagrams_one_a_call_without_segmentation_offload() {
    stream_keeping_up("no-gso-compact", 100_000 / SCALE, false, true);
}

/// `compact`: datagrams of version 3 (FORMAT.md 2.7), padded to equal
/// lengths for segmentation offload when it is on; else 32-byte records.
fn stream_keeping_up(name: &str, total: u64, offload: bool, compact: bool) {
    let path = out_file(name);
    let (addr, progress, _stop, rx) = start_receiver(
        loopback(),
        path.clone(),
        RunLimit::events(total).or_after(Duration::from_secs(120)),
    );
    let tracer = Tracer::new();
    let q = tracer
        .create_queue::<Udp>(
            UdpParams::to(addr)
                .with_capacity(1 << 16)
                .with_period(Duration::from_millis(1))
                .with_datagrams_per_period(DatagramsPerPeriod::All)
                .with_high_water_percent(25)
                .with_segmentation_offload(offload)
                .with_compact(compact),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer.activate().unwrap();
    // Keeping up: the producer never runs more than 16384 events (about
    // 370 datagrams, well within the receiver's socket buffer) ahead of what
    // the receiver has taken in.
    let window = 16_384;
    let t = Instant::now();
    for i in 0..total {
        if i % 4096 == 0 {
            wait_until("the receiver catches up", Duration::from_secs(60), || {
                progress.events() + window >= i
            });
        }
        tracer.log_event(user::USER0, [i, 0]);
    }
    let summary = rx.join().unwrap();
    let elapsed = t.elapsed();
    let report = tracer.shutdown().unwrap();
    let c = report.queues[0].counters;
    assert_eq!((c.accepted, c.dropped, c.delivered), (total, 0, total));
    assert_eq!(summary.senders.len(), 1);
    let s = &summary.senders[0];
    assert_eq!(s.events, total);
    assert_eq!(
        (
            s.lost_datagrams,
            s.duplicates,
            s.reordered,
            s.invalid,
            s.sender_dropped
        ),
        (0, 0, 0, 0, 0)
    );
    assert!(s.has_catalog);
    assert_eq!(summary.invalid.total(), 0);
    let (header, events, marks) = read_trace(&path);
    // The receiver stopped at the count, before the sender's close: the
    // stream is marked unclosed, with every event accounted.
    assert!(!s.closed);
    assert_eq!(marks, [(s.sender, total)]);
    assert_eq!(header.queue().map(|(h, t)| (h.0, t)), Some((0, "udp")));
    assert_eq!(events.len() as u64, total);
    assert!(events.iter().all(|e| e.id == user::USER0));
    // All of them, in order.
    assert!(events
        .iter()
        .enumerate()
        .all(|(i, e)| e.args[0] == i as u64));
    let stats = tracer.queue(q).unwrap().as_udp().unwrap().stats();
    // Full datagrams of 44 records (a few short ones when the queue ran
    // dry); compact, at most 692 (2 bytes a record in 1,384).
    let most = if compact { 692 } else { 44 };
    assert!(stats.event_datagrams >= total / most, "{stats:?}");
    assert_eq!(stats.events_sent, total);
    // All but what went out at shutdown, after the receiver stopped: the
    // catalog once more (one datagram: the header fits one) and the close.
    assert_eq!(
        s.datagrams + 1,
        stats.event_datagrams + stats.catalog_datagrams
    );
    assert_eq!(stats.close_datagrams, 3);
    eprintln!(
        "{total} events over loopback in {:.3} s: {:.0} events/s",
        elapsed.as_secs_f64(),
        total as f64 / elapsed.as_secs_f64()
    );
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn an_overloaded_sender_reports_its_losses_exactly() {
    let total = 50_000 / SCALE;
    let path = out_file("overload");
    let (addr, progress, stop, rx) = start_receiver(
        loopback(),
        path.clone(),
        RunLimit::duration(Duration::from_secs(120)),
    );
    let tracer = Tracer::new();
    // A small queue, a slow period, one datagram per period (S.Ha.R.K.'s
    // setting): far too little for what is logged.
    let q = tracer
        .create_queue::<Udp>(
            UdpParams::to(addr)
                .with_capacity(256)
                .with_period(Duration::from_millis(20))
                .with_high_water_percent(100),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer.activate().unwrap();
    for i in 0..total {
        tracer.log_event(user::USER0, [i, 0]);
        if i % 5000 == 0 {
            thread::sleep(Duration::from_millis(30));
        }
    }
    let report = tracer.shutdown().unwrap();
    let c = report.queues[0].counters;
    assert_eq!(c.accepted + c.dropped, total);
    assert!(c.dropped > total / 2, "{c:?}");
    assert_eq!(c.delivered, c.accepted);
    // The final datagram carries the final drop count.
    wait_until("everything arrived", Duration::from_secs(60), || {
        progress.events() + progress.sender_dropped() == total
    });
    stop.stop();
    let summary = rx.join().unwrap();
    let s = &summary.senders[0];
    // Received + reported loss = logged, exactly.
    assert_eq!(s.events + s.sender_dropped, total);
    assert_eq!(s.accounted(), total);
    assert_eq!(s.events, c.accepted);
    assert_eq!(s.sender_dropped, c.dropped);
    assert_eq!((s.lost_datagrams, s.lost_events), (0, 0));
    // The file holds the events and hoops records adding up to the drops.
    let (_, events, marks) = read_trace(&path);
    assert_eq!(marks, [], "the stream closed");
    let hoops: u64 = events
        .iter()
        .filter(|e| e.id == HOOPS)
        .map(|e| {
            assert_eq!(e.args[1], 0, "names the sender's queue");
            e.args[0]
        })
        .sum();
    let kept: Vec<u64> = events
        .iter()
        .filter(|e| e.id != HOOPS)
        .map(|e| e.args[0])
        .collect();
    assert_eq!(hoops, c.dropped);
    assert_eq!(kept.len() as u64, c.accepted);
    assert!(kept.windows(2).all(|w| w[0] < w[1]), "in order");
    // Every hoops record comes after the events that preceded its loss: the
    // losses marked so far never exceed the gaps seen so far.
    let (mut marked, mut missing, mut prev) = (0u64, 0u64, None::<u64>);
    for e in &events {
        if e.id == HOOPS {
            marked += e.args[0];
        } else {
            missing += e.args[0] - prev.map_or(0, |p| p + 1);
            prev = Some(e.args[0]);
            assert!(marked <= missing, "a hoops record before its loss");
        }
    }
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn no_receiver_the_sender_keeps_going_and_counts() {
    // A port nobody listens on: bind, note the port, close.
    let port = std::net::UdpSocket::bind(loopback())
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let tracer = Tracer::new();
    let q = tracer
        .create_queue::<Udp>(
            UdpParams::to(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
                .with_period(Duration::from_millis(1))
                .with_datagrams_per_period(DatagramsPerPeriod::All)
                .with_capacity(1024),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer.activate().unwrap();
    for round in 0..20u64 {
        for i in 0..100 {
            tracer.log_event(user::USER0, [round * 100 + i, 0]);
        }
        thread::sleep(Duration::from_millis(2));
    }
    let report = tracer.shutdown().unwrap();
    let r = &report.queues[0];
    assert_eq!(r.counters.accepted + r.counters.dropped, 2000);
    assert_eq!(r.counters.queued, 0);
    assert!(r.error.is_none());
    #[cfg(target_os = "linux")]
    {
        assert!(r.status.io_errors > 0, "{r:?}");
        let msg = r.status.last_error.as_deref().unwrap();
        assert!(msg.contains("refused"), "{msg}");
    }
}

#[test]
fn ipv6_user_classes_and_the_catalog_reach_the_receiver() {
    let Ok(probe) = std::net::UdpSocket::bind(SocketAddr::from((Ipv6Addr::LOCALHOST, 0))) else {
        eprintln!("no IPv6 loopback here: skipped");
        return;
    };
    drop(probe);
    let path = out_file("ipv6");
    let (addr, _progress, _stop, rx) = start_receiver(
        SocketAddr::from((Ipv6Addr::LOCALHOST, 0)),
        path.clone(),
        RunLimit::events(10).or_after(Duration::from_secs(60)),
    );
    let tracer = Tracer::with_config(Config::default());
    let net = tracer
        .define_class(ClassSpec::new("net", "network").event("rx", "received", &["len", "port"]))
        .unwrap();
    let rx_event = net.event("rx").unwrap();
    let q = tracer
        .create_queue::<Udp>(
            UdpParams::to(addr)
                .with_period(Duration::from_millis(2))
                .with_sender_id(0xfeed),
        )
        .unwrap();
    tracer.assign_event(rx_event, q).unwrap();
    tracer.activate().unwrap();
    for i in 0..10 {
        tracer.log_event(rx_event, [1500, i]);
    }
    let summary = rx.join().unwrap();
    tracer.shutdown().unwrap();
    let s = &summary.senders[0];
    assert_eq!(s.sender, 0xfeed);
    assert!(s.addr.is_ipv6());
    assert_eq!(s.events, 10);
    let (header, events, marks) = read_trace(&path);
    // The receiver stopped at 10 events, before the sender's close.
    assert_eq!(marks, [(0xfeed, 10)]);
    assert_eq!(header.catalog().event_name(rx_event), Some("rx"));
    assert_eq!(
        events.iter().map(|e| e.args[1]).collect::<Vec<_>>(),
        (0..10).collect::<Vec<_>>()
    );
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn bad_udp_parameters_are_typed_errors() {
    let tracer = Tracer::new();
    let remote = SocketAddr::from((Ipv4Addr::LOCALHOST, 9));
    for p in [
        UdpParams::to(remote).with_capacity(100),
        UdpParams::to(remote).with_period(Duration::ZERO),
        UdpParams::to(remote).with_max_datagram_len(10),
        UdpParams::to(remote).with_max_datagram_len(70_000),
        UdpParams::to(remote).with_datagrams_per_period(DatagramsPerPeriod::Limit(0)),
        UdpParams::to(remote).with_local(SocketAddr::from((Ipv6Addr::LOCALHOST, 0))),
        UdpParams::to(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))),
    ] {
        let e = tracer.create_queue::<Udp>(p).unwrap_err();
        assert!(
            matches!(e, qtrace::ConfigError::InvalidParameter { .. }),
            "{e}"
        );
    }
}

#[test]
fn two_senders_at_once_are_kept_apart_and_in_order() {
    let per_sender = 20_000 / SCALE;
    let path = out_file("two");
    let (addr, progress, _stop, rx) = start_receiver(
        loopback(),
        path.clone(),
        RunLimit::events(2 * per_sender).or_after(Duration::from_secs(60)),
    );
    let senders: Vec<_> = (0..2u64)
        .map(|s| {
            thread::spawn({
                let progress = std::sync::Arc::clone(&progress);
                move || {
                    let tracer = Tracer::new();
                    let q = tracer
                        .create_queue::<Udp>(
                            UdpParams::to(addr)
                                .with_capacity(1 << 14)
                                .with_period(Duration::from_millis(1))
                                .with_datagrams_per_period(DatagramsPerPeriod::All)
                                .with_sender_id(100 + s as u32),
                        )
                        .unwrap();
                    tracer.assign_class(user::CLASS, q).unwrap();
                    tracer.activate().unwrap();
                    for i in 0..per_sender {
                        if i % 1024 == 0 {
                            wait_until("the receiver catches up", Duration::from_secs(60), || {
                                progress.events() + 8192 >= 2 * i
                            });
                        }
                        tracer.log_event(user::USER0, [s, i]);
                    }
                    tracer.shutdown().unwrap().queues[0].counters
                }
            })
        })
        .collect();
    for s in senders {
        let c = s.join().unwrap();
        assert_eq!((c.accepted, c.dropped), (per_sender, 0));
    }
    let summary = rx.join().unwrap();
    assert_eq!(summary.senders.len(), 2);
    let mut ids: Vec<u32> = summary.senders.iter().map(|s| s.sender).collect();
    ids.sort();
    assert_eq!(ids, [100, 101]);
    for s in &summary.senders {
        assert_eq!(
            (s.events, s.lost_datagrams, s.sender_dropped),
            (per_sender, 0, 0)
        );
    }
    let (header, events, marks) = read_trace(&path);
    let closed: Vec<bool> = summary.senders.iter().map(|s| s.closed).collect();
    assert_eq!(
        marks,
        summary
            .senders
            .iter()
            .filter(|s| !s.closed)
            .map(|s| (s.sender, s.accounted()))
            .collect::<Vec<_>>(),
        "one mark per stream that ended without a close ({closed:?})"
    );
    // Two senders: the merged file is not tied to one queue.
    assert_eq!(header.queue(), None);
    for s in 0..2 {
        let mine: Vec<u64> = events
            .iter()
            .filter(|e| e.args[0] == s)
            .map(|e| e.args[1])
            .collect();
        assert_eq!(
            mine,
            (0..per_sender).collect::<Vec<_>>(),
            "sender {s} in order"
        );
    }
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn datagrams_per_period_limits_each_round_and_shutdown_sends_the_rest() {
    let path = out_file("limit");
    let (addr, _progress, _stop, rx) = start_receiver(
        loopback(),
        path.clone(),
        RunLimit::events(450).or_after(Duration::from_secs(60)),
    );
    let tracer = Tracer::new();
    let q = tracer
        .create_queue::<Udp>(
            UdpParams::to(addr)
                .with_capacity(1024)
                .with_period(Duration::from_secs(3600))
                .with_high_water_percent(100)
                .with_datagrams_per_period(DatagramsPerPeriod::Limit(2))
                .with_compact(false),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    for i in 0..450 {
        tracer.log_event(user::USER0, [i, 0]);
    }
    tracer.activate().unwrap();
    let udp = || tracer.queue(q).unwrap().as_udp().unwrap().stats();
    wait_until("the first round", Duration::from_secs(30), || {
        udp().event_datagrams == 2
    });
    thread::sleep(Duration::from_millis(50));
    // One round (at start), two datagrams of 44 records, plus the catalog.
    let s = udp();
    assert_eq!((s.event_datagrams, s.events_sent), (2, 88));
    assert!(s.catalog_datagrams >= 1);
    assert_eq!(tracer.counters(q).unwrap().queued, 362);
    let report = tracer.shutdown().unwrap();
    assert_eq!(report.queues[0].counters.delivered, 450);
    // The rest at shutdown: 8 full datagrams and one of 10 records.
    let s = udp();
    assert_eq!((s.event_datagrams, s.events_sent), (11, 450));
    let summary = rx.join().unwrap();
    assert_eq!(summary.events(), 450);
    // At the 450th event the receiver waited for the close (RunLimit::events):
    // every events and catalog datagram, then the first close datagram, which
    // ended the wait. Its two copies usually come after the receiver stopped,
    // but a batch read (`recvmmsg`) that found all three at once counts them
    // too: one CI run counted 16 = 11 + 2 + 3.
    let before_close = 11 + s.catalog_datagrams;
    let datagrams = summary.senders[0].datagrams;
    assert!(
        (before_close + 1..=before_close + 3).contains(&datagrams),
        "{datagrams} datagrams: {before_close} before the close, then 1 to 3 copies of it"
    );
    assert!(summary.senders[0].closed);
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

/// The UDP queue's real datagrams, some removed, two swapped and one
/// repeated on the way to a receiver core: the first-event fields the queue
/// writes let the receiver account for every event logged, exactly, with a
/// hoops record in the place of each gap.
#[test]
fn datagrams_lost_on_the_way_are_counted_exactly_from_the_queues_own_datagrams() {
    use qtrace::receiver::{ReceiverConfig, ReceiverCore};
    use qtrace::wire::datagram::{DatagramKind, DatagramView};

    let sink = std::net::UdpSocket::bind(loopback()).unwrap();
    sink.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let tracer = Tracer::new();
    let q = tracer
        .create_queue::<Udp>(
            UdpParams::to(sink.local_addr().unwrap())
                .with_capacity(64)
                // 5 records per datagram (32-byte ones: the compact
                // stream's test is below).
                .with_max_datagram_len(40 + 5 * 32)
                .with_compact(false)
                .with_period(Duration::from_secs(3600))
                .with_high_water_percent(100)
                .with_datagrams_per_period(DatagramsPerPeriod::All),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    // 100 events into 64 slots before the task starts: 36 dropped, 64 sent
    // in 13 datagrams (12 of 5, one of 4).
    for i in 0..100u64 {
        tracer.log_event(user::USER0, [i, 0]);
    }
    tracer.activate().unwrap();
    let c = tracer.shutdown().unwrap().queues[0].counters;
    assert_eq!((c.accepted, c.dropped), (64, 36));
    let mut got = Vec::new();
    let mut buf = vec![0u8; 65536];
    while let Ok(n) = sink.recv(&mut buf) {
        got.push(buf[..n].to_vec());
    }
    let events: Vec<&Vec<u8>> = got
        .iter()
        .filter(|d| DatagramView::new_checked(&d[..]).unwrap().kind() == DatagramKind::Events)
        .collect();
    assert_eq!(events.len(), 13);
    let firsts: Vec<u64> = events
        .iter()
        .map(|d| {
            DatagramView::new_checked(&d[..])
                .unwrap()
                .header()
                .first_event
        })
        .collect();
    assert_eq!(firsts, (0..13).map(|i| i * 5).collect::<Vec<_>>());
    // Lose events datagrams 2, 3 (10 events) and 7 (5), swap 9 and 10, repeat
    // 11; the catalog's first copy arrives first, its last copy and the
    // three close datagrams last.
    let kind = |d: &Vec<u8>| DatagramView::new_checked(&d[..]).unwrap().kind();
    let split = got
        .iter()
        .position(|d| kind(d) == DatagramKind::Events)
        .unwrap();
    let mut order: Vec<&Vec<u8>> = got[..split].iter().collect();
    for i in [0usize, 1, 4, 5, 6, 8, 10, 9, 11, 11, 12] {
        order.push(events[i]);
    }
    let last = got
        .iter()
        .rposition(|d| kind(d) == DatagramKind::Events)
        .unwrap();
    order.extend(&got[last + 1..]);
    assert_eq!(
        got[last + 1..]
            .iter()
            .filter(|d| kind(d) == DatagramKind::Close)
            .count(),
        3
    );
    let mut core = ReceiverCore::new(ReceiverConfig::default());
    let mut out = Vec::new();
    let from = SocketAddr::from((Ipv4Addr::LOCALHOST, 9));
    for d in order {
        core.handle(from, d, &mut |e| out.push(*e));
    }
    core.finish(&mut |e| out.push(*e));
    let s = &core.summary().senders[0];
    assert_eq!((s.events, s.lost_events, s.sender_dropped), (49, 15, 36));
    assert_eq!(s.accounted(), 100);
    assert_eq!((s.closed, s.logged), (true, Some(100)));
    assert_eq!((s.lost_datagrams, s.duplicates, s.reordered), (3, 1, 1));
    // The received events are the queue's first 64 (the last 36 were
    // dropped), less the lost ones; each gap is one hoops record in place,
    // and the drops one record at the end.
    let stream: Vec<(bool, u64)> = out.iter().map(|e| (e.id == HOOPS, e.args[0])).collect();
    let mut expected: Vec<(bool, u64)> = (0..10).map(|i| (false, i)).collect();
    expected.push((true, 10));
    expected.extend((20..35).map(|i| (false, i)));
    expected.push((true, 5));
    expected.extend((40..64).map(|i| (false, i)));
    expected.push((true, 36));
    assert_eq!(stream, expected);
}

/// Segmentation offload with compact datagrams (FORMAT.md 2.7, "Padding"):
/// 16,384 events queued before the task starts go out in batches of
/// equally long datagrams, each a chunk padded with zero bytes to the full
/// 1,472 but the last of a batch; every one passes the checks, and a
/// receiver core gets the 16,384 events in order. Without offload no
/// datagram is padded.
#[test]
fn compact_datagrams_are_padded_to_one_length_for_segmentation_offload() {
    for offload in [true, false] {
        let (datagrams, padding) = compact_wire(offload, None);
        // 1,472-byte datagrams hold 290-360 of these events: 45-57 of them.
        let full = datagrams.iter().filter(|d| d.len() == 1472).count();
        if offload && cfg!(target_os = "linux") {
            assert!(full >= 40, "{full} of {} full", datagrams.len());
            assert!(padding.iter().all(|&p| p < 39), "{padding:?}");
            assert!(padding.iter().any(|&p| p > 0), "{padding:?}");
        } else {
            assert!(padding.iter().all(|&p| p == 0), "{padding:?}");
        }
    }
}

/// The same keyed (version 4): the padding sits between the chunk and the
/// tag, covered by it; a receiver holding the key takes every datagram.
#[cfg(feature = "keys")]
#[test]
fn keyed_compact_datagrams_are_padded_under_their_tag() {
    let key = qtrace::wire::DatagramKey::from_bytes([7; 32]);
    let (datagrams, padding) = compact_wire(true, Some(key));
    let full = datagrams.iter().filter(|d| d.len() == 1472).count();
    if cfg!(target_os = "linux") {
        assert!(full >= 40, "{full} of {} full", datagrams.len());
        assert!(padding.iter().any(|&p| p > 0), "{padding:?}");
    }
    assert!(padding.iter().all(|&p| p < 39), "{padding:?}");
}

/// A datagram key (there are none without the feature for keys).
#[cfg(feature = "keys")]
type Key = qtrace::wire::DatagramKey;
#[cfg(not(feature = "keys"))]
type Key = ();

/// The events datagrams of a compact UDP queue (capacity 16,384, all of it
/// logged before the task starts, keyed with `key` if given) as a socket
/// receives them, checked by a receiver core (holding the key), and the
/// padding bytes after each one's chunk (before the tag, keyed).
fn compact_wire(offload: bool, key: Option<Key>) -> (Vec<Vec<u8>>, Vec<usize>) {
    use qtrace::receiver::{ReceiverConfig, ReceiverCore};
    use qtrace::wire::datagram::DatagramKind;
    use qtrace_core::compact::Chunk;

    let total = 16_384u64;
    let sink = std::net::UdpSocket::bind(loopback()).unwrap();
    sink.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let tracer = Tracer::new();
    #[allow(unused_mut)]
    let mut params = UdpParams::to(sink.local_addr().unwrap())
        .with_capacity(total as usize)
        .with_segmentation_offload(offload)
        .with_period(Duration::from_secs(3600))
        .with_high_water_percent(100)
        .with_datagrams_per_period(DatagramsPerPeriod::All);
    #[allow(unused_mut)]
    let mut config = ReceiverConfig::default();
    #[cfg(feature = "keys")]
    if let Some(key) = &key {
        params = params.with_key(key.clone());
        config.keys = vec![key.clone()];
    }
    let q = tracer.create_queue::<Udp>(params).unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    for i in 0..total {
        tracer.log_event(user::USER0, [i, i % 7]);
    }
    tracer.activate().unwrap();
    let c = tracer.shutdown().unwrap().queues[0].counters;
    assert_eq!((c.accepted, c.dropped), (total, 0));
    let mut got = Vec::new();
    let mut buf = vec![0u8; 65536];
    while let Ok(n) = sink.recv(&mut buf) {
        got.push(buf[..n].to_vec());
    }
    let mut core = ReceiverCore::new(config);
    let mut out = Vec::new();
    let from = SocketAddr::from((Ipv4Addr::LOCALHOST, 9));
    for d in &got {
        core.handle(from, d, &mut |e| out.push(*e));
    }
    core.finish(&mut |e| out.push(*e));
    assert_eq!(core.summary().invalid.total(), 0);
    let s = &core.summary().senders[0];
    assert_eq!((s.events, s.lost_events, s.invalid), (total, 0, 0));
    let args: Vec<u64> = out
        .iter()
        .filter(|e| e.id == user::USER0)
        .map(|e| e.args[0])
        .collect();
    assert_eq!(args, (0..total).collect::<Vec<_>>());
    // The kind byte (6): a keyed datagram is viewed only after its tag.
    let events: Vec<Vec<u8>> = got
        .into_iter()
        .filter(|d| d[6] == DatagramKind::Events as u8)
        .collect();
    // Keyed (FORMAT.md 2.6): the session at 40-47, the chunk from 48, the
    // 16-byte tag at the end.
    let keyed = key.is_some();
    let (start, tag) = if keyed { (48, 16) } else { (40, 0) };
    let padding = events
        .iter()
        .map(|d| {
            let end = start + Chunk::new_checked(&d[start..]).unwrap().len();
            assert!(d[end..d.len() - tag].iter().all(|&b| b == 0));
            d.len() - tag - end
        })
        .collect();
    (events, padding)
}

/// The queue's own counters (FORMAT.md 1.3.4): 40 events logged into a
/// queue of 16 before its task starts, so 24 dropped; the task's first
/// sample says 16 queued and 24 lost, every later one 0 queued and 24
/// lost; the samples come after the events that were queued, and they are
/// not the queue's events (its counters hold).
#[test]
fn queue_counters_sample_fill_and_exact_losses() {
    queue_counters(true);
}

/// The same in 32-byte-record datagrams.
#[test]
fn queue_counters_in_32_byte_records() {
    queue_counters(false);
}

fn queue_counters(compact: bool) {
    use qtrace::macros::CounterKind;
    let path = out_file(&format!("queue-counters-{compact}"));
    let (addr, _progress, stop, rx) = start_receiver(
        loopback(),
        path.clone(),
        RunLimit::duration(Duration::from_secs(60)),
    );
    let tracer = Tracer::new();
    let q = tracer
        .create_queue::<Udp>(
            UdpParams::to(addr)
                .with_capacity(16)
                .with_period(Duration::from_millis(20))
                .with_datagrams_per_period(DatagramsPerPeriod::All)
                .with_compact(compact)
                .with_queue_counters(true),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    for i in 0..40 {
        tracer.log_event(user::USER0, [i, 0]);
    }
    tracer.activate().unwrap();
    let report = tracer.shutdown().unwrap();
    let c = report.queues[0].counters;
    assert_eq!((c.accepted, c.dropped, c.delivered), (16, 24, 16));
    stop.stop();
    let summary = rx.join().unwrap();
    let (header, events, marks) = read_trace(&path);
    assert_eq!(marks, [], "the stream closed");
    let catalog = header.catalog();
    let fill = catalog.counter::<u64>("qtrace:queue.fill").unwrap().id();
    let lost = catalog.counter::<u64>("qtrace:queue.lost").unwrap().id();
    assert_eq!(catalog.counter_of(fill), Some((CounterKind::U64, "events")));
    assert_eq!(catalog.counter_of(lost), Some((CounterKind::U64, "events")));
    let series = |id| -> Vec<u64> {
        events
            .iter()
            .filter(|e| e.id == id)
            .map(|e| {
                assert_eq!(e.source, qtrace::TRACER_SOURCE);
                e.args[0]
            })
            .collect()
    };
    let (fills, losses) = (series(fill), series(lost));
    // A sample per round: at least the two of its shutdown (it stops once
    // two rounds found nothing), and one per round before if it ran any.
    assert!(fills.len() >= 2, "{fills:?}");
    assert_eq!(fills[0], 16);
    assert!(fills[1..].iter().all(|&f| f == 0), "{fills:?}");
    assert_eq!(losses, vec![24; fills.len()]);
    assert_eq!(*losses.last().unwrap(), c.dropped);
    // The first sample follows the 16 events queued when it was taken.
    let first = events.iter().position(|e| e.id == fill).unwrap();
    let kept: Vec<u64> = events[..first]
        .iter()
        .filter(|e| e.id == user::USER0)
        .map(|e| e.args[0])
        .collect();
    assert_eq!(kept, (0..16).collect::<Vec<_>>());
    assert_eq!(events[first + 1].id, lost);
    // The receiver counts the samples as the sender's records, and its
    // account closes: 40 logged + the samples = received + dropped.
    let s = &summary.senders[0];
    let samples = 2 * fills.len() as u64;
    assert_eq!(s.events, 16 + samples);
    assert_eq!(s.sender_dropped, 24);
    assert_eq!(s.logged, Some(40 + samples));
    assert!(s.closed);
    let hoops: u64 = events
        .iter()
        .filter(|e| e.id == HOOPS)
        .map(|e| e.args[0])
        .sum();
    assert_eq!(hoops, 24);
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

/// Two UDP queues of one program streaming to one receiver (FORMAT.md
/// 1.3.4, *One series per queue*), after a queue of another type took the
/// first handle: the received file holds both senders' samples, from the
/// tracer's source, and each sample's `arg1` is exactly the handle the
/// library gave the queue that took it (never 0 here): the first sample
/// of each says the events it had queued (3 and 5), every later one 0; none
/// lost.
#[test]
fn queue_counters_of_two_queues_carry_their_handles() {
    use qtrace::queues::Dummy;
    let path = out_file("queue-counters-handles");
    let (addr, _progress, stop, rx) = start_receiver(
        loopback(),
        path.clone(),
        RunLimit::duration(Duration::from_secs(60)),
    );
    let tracer = Tracer::new();
    let first = tracer.create_queue::<Dummy>(()).unwrap();
    let udp = || {
        tracer
            .create_queue::<Udp>(
                UdpParams::to(addr)
                    .with_capacity(16)
                    .with_period(Duration::from_millis(20))
                    .with_datagrams_per_period(DatagramsPerPeriod::All)
                    .with_queue_counters(true),
            )
            .unwrap()
    };
    let (a, b) = (udp(), udp());
    assert!(first != a && a != b && first != b);
    assert!(a.0 != 0 && b.0 != 0, "{a} {b}");
    let queues = [(a, user::USER0, 3u64), (b, user::USER1, 5)];
    for (q, id, n) in queues {
        tracer.assign_event(id, q).unwrap();
        for i in 0..n {
            tracer.log_event(id, [i, 0]);
        }
    }
    tracer.activate().unwrap();
    tracer.shutdown().unwrap();
    stop.stop();
    let summary = rx.join().unwrap();
    assert_eq!(summary.senders.len(), 2);
    let (header, events, marks) = read_trace(&path);
    assert_eq!(marks, [], "both streams closed");
    let catalog = header.catalog();
    let fill = catalog.counter::<u64>("qtrace:queue.fill").unwrap().id();
    let lost = catalog.counter::<u64>("qtrace:queue.lost").unwrap().id();
    for e in events.iter().filter(|e| e.id == fill || e.id == lost) {
        assert_eq!(e.source, qtrace::TRACER_SOURCE);
        assert!(
            e.args[1] == u64::from(a.0) || e.args[1] == u64::from(b.0),
            "{e:?}"
        );
    }
    for (q, _, n) in queues {
        let series = |id| -> Vec<u64> {
            events
                .iter()
                .filter(|e| e.id == id && e.args[1] == u64::from(q.0))
                .map(|e| e.args[0])
                .collect()
        };
        let (fills, losses) = (series(fill), series(lost));
        // A sample per round: at least the two of its shutdown.
        assert!(fills.len() >= 2, "queue {q}: {fills:?}");
        assert_eq!(fills[0], n, "queue {q}");
        assert!(fills[1..].iter().all(|&f| f == 0), "queue {q}: {fills:?}");
        assert_eq!(losses, vec![0; fills.len()], "queue {q}");
    }
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

/// Without `with_queue_counters` the stream has no `qtrace` class; a
/// catalog that already has one makes activation fail, saying why.
#[test]
fn queue_counters_are_opt_in_and_their_class_name_is_reserved() {
    let receiver = std::net::UdpSocket::bind(loopback()).unwrap();
    let tracer = Tracer::new();
    tracer
        .define_class(ClassSpec::new("qtrace", "mine").event("x", "x", &[]))
        .unwrap();
    tracer
        .create_queue::<Udp>(
            UdpParams::to(receiver.local_addr().unwrap()).with_queue_counters(true),
        )
        .unwrap();
    let err = tracer.activate().unwrap_err().to_string();
    assert!(
        err.contains("the queue counters need the class name `qtrace`"),
        "{err}"
    );
    assert!(!UdpParams::default().queue_counters());
}
