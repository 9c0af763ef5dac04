//! The store's sums equal the receiver's summary, exactly: datagrams lost
//! in transit, drops reported by senders, streams that end unclosed and one
//! that closes, from four senders into one store, read back with the
//! `parquet` crate's arrow reader.

mod common;
use common::batches;

use std::collections::HashMap;
use std::net::UdpSocket;
use std::time::Duration;

use arrow_array::cast::AsArray;
use arrow_array::types::{UInt32Type, UInt64Type};
use arrow_array::RecordBatch;
use qtrace::classes::user;
use qtrace::queues::{DatagramsPerPeriod, Udp, UdpParams};
use qtrace::receiver::{Receiver, RunLimit};
use qtrace::{Event, Tracer};
use qtrace_core::encode::datagram::{DatagramHeader, DatagramKind};
use qtrace_store::{Store, StoreConfig};

/// An events datagram (FORMAT.md 2): the header, then the records.
fn datagram(
    sender: u32,
    sequence: u64,
    first_event: u64,
    dropped: u64,
    events: &[Event],
) -> Vec<u8> {
    let header = DatagramHeader {
        kind: DatagramKind::Events,
        sender,
        sequence,
        dropped,
        first_event,
    };
    let mut head = [0u8; 40];
    header.emit(events.len() as u16, &mut head);
    let mut bytes = head.to_vec();
    for e in events {
        let mut record = [0u8; 32];
        qtrace_core::encode::record::emit(e, &mut record);
        bytes.extend_from_slice(&record);
    }
    bytes
}

/// A string column's value (dictionary-encoded on disk, read as strings:
/// the files carry no Arrow schema).
fn string(b: &RecordBatch, col: &str, i: usize) -> String {
    b.column_by_name(col)
        .unwrap()
        .as_string::<i32>()
        .value(i)
        .to_string()
}

fn u64_at(b: &RecordBatch, col: &str, i: usize) -> u64 {
    b.column_by_name(col)
        .unwrap()
        .as_primitive::<UInt64Type>()
        .value(i)
}

#[test]
fn sums_over_the_store_equal_the_receivers_summary() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let mut receiver = Receiver::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let to = receiver.local_addr();
    let e = |i: u64| Event::new(i, user::USER0, 0, [i, 0]);
    let five = |d: u64| (0..5).map(|k| e(d * 5 + k)).collect::<Vec<_>>();
    // Sender 1: datagrams 0..10 of 5 events; 3 and 7 never arrive (10
    // events lost in transit); no close.
    let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    for d in (0..10).filter(|d| *d != 3 && *d != 7) {
        a.send_to(&datagram(1, d, d * 5, 0, &five(d)), to).unwrap();
    }
    // Sender 2: 4 datagrams, reporting 4 then 9 drops; no close.
    let b = UdpSocket::bind("127.0.0.1:0").unwrap();
    for (d, dropped) in [(0u64, 0u64), (1, 4), (2, 4), (3, 9)] {
        b.send_to(&datagram(2, d, d * 5, dropped, &five(d)), to)
            .unwrap();
    }
    // Sender 3 from sender 1's socket: another stream of the same address.
    a.send_to(&datagram(3, 0, 0, 0, &five(0)), to).unwrap();
    // A real tracer that closes its stream.
    let tracer = Tracer::new();
    let q = tracer
        .create_queue::<Udp>(
            UdpParams::to(to)
                .with_period(Duration::from_millis(2))
                .with_datagrams_per_period(DatagramsPerPeriod::All),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer.activate().unwrap();
    for i in 0..300 {
        tracer.log_event(user::USER1, [i, 1]);
    }
    tracer.shutdown().unwrap();

    let mut store = Store::open(&root, StoreConfig::default()).unwrap();
    // Every datagram was sent (and is in the socket's buffer) before the
    // receiver runs; sender 1's datagrams after its gaps are held until it
    // stops, so a count would not be reached: a time limit.
    let limit = RunLimit::duration(Duration::from_secs(2));
    let summary = receiver.run_streams(limit, &mut store).unwrap();
    let report = store.finish(&summary).unwrap();
    assert_eq!(summary.senders.len(), 4, "{summary}");

    // Per stream (run), from the tables.
    let mut events: HashMap<String, u64> = HashMap::new();
    let mut hoops: HashMap<String, u64> = HashMap::new();
    let mut unclosed: HashMap<String, (u32, u64)> = HashMap::new();
    for b in batches(&root, "events") {
        for i in 0..b.num_rows() {
            *events.entry(string(&b, "run", i)).or_default() += 1;
        }
    }
    for b in batches(&root, "losses") {
        let sender = b
            .column_by_name("sender")
            .unwrap()
            .as_primitive::<UInt32Type>()
            .clone();
        for i in 0..b.num_rows() {
            let run = string(&b, "run", i);
            match string(&b, "kind", i).as_str() {
                "hoops" => *hoops.entry(run).or_default() += u64_at(&b, "count", i),
                "unclosed" => {
                    let acc = b
                        .column_by_name("accounted")
                        .unwrap()
                        .as_primitive::<UInt64Type>();
                    unclosed.insert(run, (sender.value(i), acc.value(i)));
                }
                k => panic!("unexpected kind {k}"),
            }
        }
    }
    let mut stream_events: HashMap<String, u64> = HashMap::new();
    let mut closed: HashMap<String, String> = HashMap::new();
    for b in batches(&root, "streams") {
        for i in 0..b.num_rows() {
            let run = string(&b, "run", i);
            *stream_events.entry(run.clone()).or_default() += u64_at(&b, "events", i);
            let v = b
                .column_by_name("verdict")
                .unwrap()
                .as_string::<i32>()
                .value(i)
                .to_string();
            if v != "open" {
                closed.insert(run, v);
            }
        }
    }
    for s in &summary.senders {
        let key = format!("{}/{}/", s.addr, s.sender);
        let run = events
            .keys()
            .find(|r| r.starts_with(&key))
            .unwrap_or_else(|| panic!("no run for {key}: {events:?}"))
            .clone();
        assert_eq!(events[&run], s.events, "{run}");
        assert_eq!(stream_events[&run], s.events, "{run}");
        assert_eq!(hoops.get(&run).copied().unwrap_or(0), s.lost(), "{run}");
        if s.closed {
            assert_eq!(closed[&run], "closed");
            assert!(!unclosed.contains_key(&run));
        } else {
            assert_eq!(closed[&run], "unclosed");
            assert_eq!(unclosed[&run], (s.sender, s.accounted()), "{run}");
        }
    }
    let by_sender: HashMap<u32, u64> = summary
        .senders
        .iter()
        .map(|s| (s.sender, s.lost()))
        .collect();
    assert_eq!(by_sender[&1], 10, "two datagrams of 5 lost in transit");
    assert_eq!(by_sender[&2], 9, "9 dropped by the sender");
    assert_eq!(by_sender[&3], 0);
    let total_events: u64 = events.values().sum();
    let total_lost: u64 = hoops.values().sum();
    assert_eq!(total_events, summary.events());
    assert_eq!(
        total_lost,
        summary.lost_events()
            + summary.sender_dropped()
            + summary.senders.iter().map(|s| s.unsent).sum::<u64>()
    );
    assert_eq!((report.events, report.lost), (total_events, total_lost));
}
