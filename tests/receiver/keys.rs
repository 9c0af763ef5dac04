//! Keyed datagrams over real sockets on 127.0.0.1 (issue #24): a forger
//! without the key changes nothing, captured datagrams replayed are
//! rejected and counted, a sender with a wrong key is told apart from
//! noise, two keys live at once lose nothing; and without a key, counters
//! going backwards and datagrams after a close are refused and counted.
//!
//! Every test binds to 127.0.0.1 with ports the system chooses, and is
//! bounded in datagrams and time.

use std::net::{SocketAddr, UdpSocket};
use std::thread;
use std::time::Duration;

use qtrace::classes::user;
use qtrace::queues::{DatagramsPerPeriod, UdpParams};
use qtrace::reader::TraceReader;
use qtrace::receiver::{
    Receiver, ReceiverConfig, ReceiverSummary, RejectionCounts, RunLimit, Stopper,
};
use qtrace::wire::datagram::{encode_close, encode_events, keyed, CloseCounts};
use qtrace::wire::DatagramKey;
use qtrace::Event;
use tempfile::TempDir;

use crate::common::loopback::loopback;
use crate::common::udp_sender::{log_paced, udp_tracer};

pub(crate) fn key(byte: u8) -> DatagramKey {
    DatagramKey::from_bytes([byte; 32])
}

type Run = thread::JoinHandle<(ReceiverSummary, Vec<Event>)>;

/// A receiver on 127.0.0.1 holding `keys` (none: unkeyed), running in a
/// thread until `events` are accounted for, it is stopped, or 20 s pass:
/// its address, its stopper and the thread, which returns the summary and
/// the user events of its file.
fn receiver(keys: Vec<DatagramKey>, events: u64, dir: &TempDir) -> (SocketAddr, Stopper, Run) {
    let config = ReceiverConfig {
        keys,
        ..ReceiverConfig::default()
    };
    let receiver = Receiver::bind_with(loopback(), config).unwrap();
    let addr = receiver.local_addr();
    let stop = receiver.stopper();
    let path = dir.path().join("received.qtr");
    let handle = thread::spawn(move || {
        let limit = RunLimit::events(events).or_after(Duration::from_secs(20));
        let summary = receiver.run(&path, limit).unwrap();
        let events = TraceReader::open(&path)
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.id == user::USER0)
            .collect();
        (summary, events)
    });
    (addr, stop, handle)
}

fn params(to: SocketAddr, sender: u32) -> UdpParams {
    UdpParams::to(to)
        .with_sender_id(sender)
        .with_period(Duration::from_millis(1))
        .with_datagrams_per_period(DatagramsPerPeriod::All)
}

/// Streams `user0 [i, 0]` for i in `0..n` from sender `id` keyed with `k`.
pub(crate) fn stream(to: SocketAddr, id: u32, k: Option<DatagramKey>, n: u64) {
    let mut p = params(to, id);
    if let Some(k) = k {
        p = p.with_key(k);
    }
    let (tracer, _) = udp_tracer(p);
    log_paced(&tracer, 0, n, 40);
    tracer.shutdown().unwrap();
}

fn assert_exact(events: &[Event], n: u64) {
    let values: Vec<u64> = events.iter().map(|e| e.args[0]).collect();
    assert_eq!(values, (0..n).collect::<Vec<_>>());
}

/// A version 1 events datagram of sender `id` with `n` events `user0`.
pub(crate) fn plain(id: u32, seq: u64, dropped: u64, first: u64, n: u64) -> Vec<u8> {
    let events: Vec<Event> = (first..first + n)
        .map(|i| Event::new(i, user::USER0, 0, [i, 0]))
        .collect();
    let mut buf = [0u8; 1472];
    let (len, _) = encode_events(&mut buf, id, seq, dropped, first, &events).unwrap();
    buf[..len].to_vec()
}

/// The same, keyed with `k` and `session`.
pub(crate) fn sealed(k: &DatagramKey, session: u64, mut bytes: Vec<u8>) -> Vec<u8> {
    let len = bytes.len();
    bytes.resize(len + keyed::KEYED_OVERHEAD, 0);
    let len = keyed::seal(k, session, &mut bytes, len).unwrap();
    bytes.truncate(len);
    bytes
}

pub(crate) fn forger() -> UdpSocket {
    UdpSocket::bind(loopback()).unwrap()
}

#[test]
fn a_forger_without_the_key_changes_nothing() {
    const N: u64 = 20_000;
    let dirs = tempfile::tempdir().unwrap();
    let real = key(1);
    let (to, _, rx) = receiver(vec![real.clone()], N, &dirs);
    // The forgers, as sender 500 (the real sender's id) from other ports:
    // unkeyed, keyed with another key, keyed with the real key's id and a
    // made-up tag — each a stream start and a datagram that would end it.
    let (unkeyed, other_key, made_up, noise) = (forger(), forger(), forger(), forger());
    let forging = {
        thread::spawn(move || {
            let wrong = key(2);
            let real_id = key(1).id();
            let mut sent = 0;
            while sent < 50 {
                let seq = sent;
                let fake = plain(500, seq, 1_000_000, 0, 3);
                unkeyed.send_to(&fake, to).unwrap();
                other_key
                    .send_to(&sealed(&wrong, u64::MAX, fake.clone()), to)
                    .unwrap();
                // The key id is in every datagram: the forger knows it,
                // not the key.
                let mut tagged = sealed(&wrong, u64::MAX, fake);
                tagged[14..16].copy_from_slice(&real_id.to_be_bytes());
                made_up.send_to(&tagged, to).unwrap();
                noise.send_to(b"GET / HTTP/1.1\r\n\r\n", to).unwrap();
                sent += 1;
                thread::sleep(Duration::from_millis(2));
            }
        })
    };
    stream(to, 500, Some(real.clone()), N);
    forging.join().unwrap();
    let (summary, events) = rx.join().unwrap();
    // The real stream, exactly: one stream, its names, every event.
    assert_eq!(summary.senders.len(), 1, "{summary}");
    let s = &summary.senders[0];
    assert_eq!(
        (s.sender, s.key_id, s.events, s.lost(), s.closed, s.logged),
        (500, Some(real.id()), N, 0, true, Some(N)),
        "{summary}"
    );
    assert_eq!(s.queue, Some((0, "udp".to_string())), "{summary}");
    assert_eq!((s.duplicates, s.invalid, s.late), (0, 0, 0));
    assert_exact(&events, N);
    // Every forged datagram rejected and counted where it came from.
    let by_kind = |c: RejectionCounts| {
        (
            c.unkeyed,
            c.unknown_key,
            c.bad_tag,
            c.replayed,
            c.counters_backwards,
            c.after_close,
        )
    };
    assert_eq!(summary.rejected.len(), 3, "{summary}");
    assert_eq!(by_kind(summary.rejected[0].counts), (50, 0, 0, 0, 0, 0));
    assert_eq!(by_kind(summary.rejected[1].counts), (0, 50, 0, 0, 0, 0));
    assert_eq!(by_kind(summary.rejected[2].counts), (0, 0, 50, 0, 0, 0));
    // The noise is noise, not a rejection.
    assert_eq!(summary.invalid.not_qtrace, 50);
    assert_eq!(summary.invalid.rejected.total(), 150);
    let text = summary.to_string();
    assert!(
        text.contains("rejected 50 datagrams from")
            && text.contains("50 keyed with a key this receiver does not hold")
            && text.contains("50 bad tag (forged or altered, or a wrong key)"),
        "{text}"
    );
}

#[test]
fn captured_datagrams_replayed_are_rejected_and_counted() {
    const N: u64 = 3_000;
    let k = key(7);
    // Capture a whole keyed stream.
    let capture = UdpSocket::bind(loopback()).unwrap();
    capture
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let at = capture.local_addr().unwrap();
    stream(at, 9, Some(k.clone()), N);
    let mut captured = Vec::new();
    let mut buf = [0u8; 65536];
    while let Ok(n) = capture.recv(&mut buf) {
        captured.push(buf[..n].to_vec());
    }
    assert!(captured.len() > 3, "{} datagrams", captured.len());
    let dirs = tempfile::tempdir().unwrap();
    let (to, stop, rx) = receiver(vec![k.clone()], u64::MAX, &dirs);
    let sender = forger();
    for d in &captured {
        sender.send_to(d, to).unwrap();
        thread::sleep(Duration::from_micros(200));
    }
    // The same bytes again, from another port, and once more a while later.
    let replayer = forger();
    for d in &captured {
        replayer.send_to(d, to).unwrap();
        thread::sleep(Duration::from_micros(200));
    }
    // An older session of the same sender: a replay too.
    let older = sealed(&k, 1, plain(9, 0, 0, 0, 2));
    replayer.send_to(&older, to).unwrap();
    thread::sleep(Duration::from_millis(200));
    stop.stop();
    let (summary, events) = rx.join().unwrap();
    assert_eq!(summary.senders.len(), 1, "{summary}");
    let s = &summary.senders[0];
    // The three close copies were sent once each: all three accepted.
    assert_eq!(
        (s.events, s.lost(), s.closed, s.datagrams, s.duplicates),
        (N, 0, true, captured.len() as u64, 0),
        "{summary}"
    );
    assert_exact(&events, N);
    assert_eq!(summary.rejected.len(), 1, "{summary}");
    assert_eq!(summary.rejected[0].addr, replayer.local_addr().unwrap());
    assert_eq!(
        summary.rejected[0].counts.replayed,
        captured.len() as u64 + 1
    );
    assert_eq!(
        summary.rejected[0].counts.total(),
        captured.len() as u64 + 1
    );
}

#[test]
fn two_keys_live_at_once_lose_nothing() {
    const N: u64 = 5_000;
    let dirs = tempfile::tempdir().unwrap();
    let (old, new) = (key(11), key(12));
    let (to, _, rx) = receiver(vec![old.clone(), new.clone()], 3 * N, &dirs);
    // One sender on the old key, one moved to the new key, and the first
    // restarted on the new key: all at once.
    let a = thread::spawn(move || stream(to, 21, Some(key(11)), N));
    let b = thread::spawn(move || stream(to, 22, Some(key(12)), N));
    a.join().unwrap();
    stream(to, 21, Some(key(12)), N);
    b.join().unwrap();
    let (summary, events) = rx.join().unwrap();
    assert_eq!(summary.senders.len(), 3, "{summary}");
    let mut got: Vec<(u32, Option<u16>, u64, u64, bool)> = summary
        .senders
        .iter()
        .map(|s| (s.sender, s.key_id, s.events, s.lost(), s.closed))
        .collect();
    got.sort();
    let mut want = vec![
        (21, Some(old.id()), N, 0, true),
        (21, Some(new.id()), N, 0, true),
        (22, Some(new.id()), N, 0, true),
    ];
    want.sort();
    assert_eq!(got, want, "{summary}");
    assert_eq!(events.len() as u64, 3 * N);
    assert_eq!(summary.invalid.total(), 0, "{summary}");
}

#[test]
fn without_a_key_counters_going_backwards_and_events_after_a_close_are_refused() {
    let dirs = tempfile::tempdir().unwrap();
    let (to, stop, rx) = receiver(Vec::new(), u64::MAX, &dirs);
    let real = forger();
    let send = |d: &[u8]| {
        real.send_to(d, to).unwrap();
        thread::sleep(Duration::from_millis(5));
    };
    send(&plain(5, 0, 0, 0, 2));
    send(&plain(5, 1, 10, 2, 2));
    // Backwards: the first event behind what came before, then the drops.
    send(&plain(5, 2, 10, 1, 2));
    send(&plain(5, 2, 4, 4, 2));
    send(&plain(5, 2, 10, 4, 2));
    // A close whose counts contradict its header: 5 logged, 6 sent + 10 dropped.
    let close = |logged| {
        let mut buf = [0u8; 56];
        let counts = CloseCounts { logged, unsent: 0 };
        encode_close(&mut buf, 5, 3, 10, 6, counts).unwrap();
        buf
    };
    send(&close(5));
    send(&close(16));
    // After the close: events claimed lost, never believed.
    send(&plain(5, 4, 10, 6, 3));
    send(&plain(5, 9, 10, 20, 1));
    thread::sleep(Duration::from_millis(100));
    stop.stop();
    let (summary, events) = rx.join().unwrap();
    assert_eq!(summary.senders.len(), 1, "{summary}");
    let s = &summary.senders[0];
    assert_eq!(
        (
            s.events,
            s.sender_dropped,
            s.lost_events,
            s.closed,
            s.logged
        ),
        (6, 10, 0, true, Some(16)),
        "{summary}"
    );
    assert_eq!(s.accounted(), 16);
    assert_eq!(events.len(), 6);
    let c = summary.rejected[0].counts;
    assert_eq!(
        (c.counters_backwards, c.after_close, c.total()),
        (3, 2, 5),
        "{summary}"
    );
}

/// With one slot that any new sender may take (idle limit 0), forged and
/// replayed datagrams of another sender id neither take nor park it, and
/// the real stream's account does not move.
#[test]
fn a_rejected_datagram_never_takes_a_slot_nor_moves_a_count() {
    use qtrace::receiver::ReceiverCore;
    let k = key(3);
    let config = ReceiverConfig {
        max_senders: 1,
        idle_datagrams: 0,
        keys: vec![k.clone()],
        ..ReceiverConfig::default()
    };
    let mut core = ReceiverCore::new(config);
    let real: SocketAddr = "127.0.0.1:40000".parse().unwrap();
    let forger: SocketAddr = "127.0.0.1:40001".parse().unwrap();
    let mut out = Vec::new();
    let first = sealed(&k, 100, plain(1, 0, 0, 0, 2));
    core.handle(real, &first, &mut |e| out.push(*e));
    core.handle(real, &sealed(&k, 100, plain(1, 1, 0, 2, 2)), &mut |e| {
        out.push(*e)
    });
    let before = (core.summary().senders, out.len());
    // Another sender id: forged (wrong key, and the right id with a wrong
    // tag), then a replay of the real sender's first datagram and one of
    // an older session of it.
    let wrong = sealed(&key(4), 100, plain(2, 0, 0, 0, 5));
    let mut made_up = wrong.clone();
    made_up[14..16].copy_from_slice(&k.id().to_be_bytes());
    for d in [
        &wrong,
        &made_up,
        &first,
        &sealed(&k, 99, plain(1, 0, 0, 0, 2)),
    ] {
        core.handle(forger, d, &mut |e| out.push(*e));
    }
    let after = core.summary();
    assert_eq!((after.senders, out.len()), before);
    assert_eq!(after.refused, []);
    let c = after.rejected[0].counts;
    assert_eq!(
        (after.rejected[0].addr, c.unknown_key, c.bad_tag, c.replayed),
        (forger, 1, 1, 2)
    );
    // A new keyed sender with the key does take the idle slot.
    core.handle(forger, &sealed(&k, 5, plain(2, 0, 0, 0, 1)), &mut |e| {
        out.push(*e)
    });
    assert_eq!(core.summary().senders.len(), 2);
}
