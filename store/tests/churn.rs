//! Sender churn into one store (issue #34 item 1): 1,100 sender ids, more
//! than the sender table (16) and the parked senders (1,024) hold, each
//! sending a few datagrams in turn and a close. Each sender is one stream,
//! its events are rows or losses exactly (the losses are exactly the
//! events of its refused datagrams: no phantom loss), the summary and the
//! store tell the same totals, and the store never holds more stream
//! states than the receiver tracks and parks.

mod common;
use common::{batches, datagrams};

use std::collections::HashMap;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

use arrow_array::cast::AsArray;
use arrow_array::types::{UInt32Type, UInt64Type};
use arrow_array::Array;
use qtrace::receiver::{
    Receiver, ReceiverConfig, RunLimit, SenderSummary, StreamId, StreamSink, MAX_RETIRED,
};
use qtrace::wire::TraceHeader;
use qtrace::Event;
use qtrace_store::{Store, StoreConfig};

const SENDERS: u32 = 1_100;
const ROUNDS: u64 = 4;
/// Events per datagram.
const PER: u64 = 3;
const MAX_SENDERS: usize = 16;
/// Sender ids: FIRST + k.
const FIRST: u32 = 10_000;

/// The store, watched: the most stream states it held at once.
struct Watch {
    store: Store,
    most: usize,
}

impl StreamSink for Watch {
    fn stream(&mut self, id: &StreamId, header: Option<&TraceHeader>) {
        self.store.stream(id, header);
        self.most = self.most.max(self.store.streams_held());
    }
    fn record(&mut self, e: &Event) {
        self.store.record(e)
    }
    fn records(&mut self, raw: &[u8]) {
        self.store.records(raw)
    }
    fn end(&mut self, id: &StreamId, account: &SenderSummary) {
        self.store.end(id, account)
    }
    fn tick(&mut self) -> bool {
        self.store.tick()
    }
}

fn events(k: u32, round: u64) -> Vec<u8> {
    datagrams::events(FIRST + k, round, round * PER, PER, k as u64)
}

fn close(k: u32) -> Vec<u8> {
    datagrams::close(FIRST + k, ROUNDS, ROUNDS * PER)
}

#[test]
fn churning_senders_are_one_stream_each_and_lose_only_what_was_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let config = ReceiverConfig {
        max_senders: MAX_SENDERS,
        ..ReceiverConfig::default()
    };
    let mut receiver = Receiver::bind_with("127.0.0.1:0".parse().unwrap(), config).unwrap();
    let to = receiver.local_addr();
    let progress = receiver.progress();
    let stop = receiver.stopper();
    let run = std::thread::spawn(move || {
        let mut watch = Watch {
            store: Store::open(&root, StoreConfig::default()).unwrap(),
            most: 0,
        };
        let limit = RunLimit::duration(Duration::from_secs(60));
        let summary = receiver.run_streams(limit, &mut watch).unwrap();
        let most = watch.most;
        let report = watch.store.finish(&summary).unwrap();
        (summary, report, most, root)
    });
    // One socket, every sender id (a sender is known by its id): paced so
    // that the receiver's socket buffer never overflows (no real loss).
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut sent = 0u64;
    let handled = || progress.datagrams() + progress.invalid();
    let deadline = Instant::now() + Duration::from_secs(50);
    let mut send = |bytes: &[u8]| {
        socket.send_to(bytes, to).unwrap();
        sent += 1;
        while sent - handled() > 64 {
            assert!(Instant::now() < deadline, "the receiver stalled");
            std::thread::sleep(Duration::from_micros(200));
        }
    };
    for round in 0..ROUNDS {
        for k in 0..SENDERS {
            send(&events(k, round));
        }
    }
    // Its close three times, as a sender sends it.
    for _ in 0..3 {
        for k in 0..SENDERS {
            send(&close(k));
        }
    }
    while handled() < sent {
        assert!(Instant::now() < deadline, "the receiver stalled");
        std::thread::sleep(Duration::from_millis(1));
    }
    stop.stop();
    let (summary, report, most, root) = run.join().unwrap();
    let logged = SENDERS as u64 * ROUNDS * PER;

    // Bounded: the stream states held are those the receiver tracks and
    // parks, never one per stream seen.
    assert_eq!(most, MAX_SENDERS + MAX_RETIRED);
    // The summary: every datagram handled once, refusals exact, one
    // account per sender (kept or summed), totals whole.
    let refused_events: u64 = summary.refused.iter().map(|r| r.events).sum();
    let refused_datagrams: u64 = summary.refused.iter().map(|r| r.datagrams).sum();
    assert_eq!(summary.invalid.too_many_senders, refused_datagrams);
    // The senders beyond the table and the parked ones (60) are refused
    // while the others still send: all their events datagrams; their
    // closes come when closed senders free slots, and each then counts
    // its refused events lost (a gap before its close).
    let beyond = SENDERS as u64 - (MAX_SENDERS + MAX_RETIRED) as u64;
    assert_eq!(refused_datagrams, beyond * ROUNDS, "{summary}");
    assert_eq!(refused_events, beyond * ROUNDS * PER);
    assert_eq!(summary.refused.len() as u64, beyond);
    assert_eq!(
        summary.senders.len() as u64 + summary.retired_uncounted,
        SENDERS as u64,
        "{summary}"
    );
    // Every event is received or lost to a refusal, and nothing else.
    assert_eq!(summary.events() + refused_events, logged, "{summary}");
    assert_eq!(summary.lost_events(), refused_events, "{summary}");
    assert_eq!(summary.sender_dropped() + summary.unsent(), 0);
    // The store tells the same story.
    assert_eq!(report.events, summary.events());
    assert_eq!(report.lost, refused_events);
    // Per sender: one stream (one final streams row), its rows + its
    // losses = what it logged.
    let mut rows: HashMap<u64, u64> = HashMap::new();
    for b in batches(&root, "events") {
        let arg0 = b
            .column_by_name("arg0")
            .unwrap()
            .as_primitive::<UInt64Type>();
        for i in 0..b.num_rows() {
            *rows.entry(arg0.value(i)).or_default() += 1;
        }
    }
    let mut lost: HashMap<u32, u64> = HashMap::new();
    for b in batches(&root, "losses") {
        let sender = b
            .column_by_name("sender")
            .unwrap()
            .as_primitive::<UInt32Type>();
        let count = b
            .column_by_name("count")
            .unwrap()
            .as_primitive::<UInt64Type>();
        for i in 0..b.num_rows() {
            *lost.entry(sender.value(i)).or_default() += count.value(i);
        }
    }
    let mut finals: HashMap<u32, Vec<String>> = HashMap::new();
    for b in batches(&root, "streams") {
        let sender = b
            .column_by_name("sender")
            .unwrap()
            .as_primitive::<UInt32Type>();
        let verdict = b.column_by_name("verdict").unwrap().as_string::<i32>();
        for i in 0..b.num_rows() {
            if sender.is_valid(i) && verdict.value(i) != "open" {
                finals
                    .entry(sender.value(i))
                    .or_default()
                    .push(verdict.value(i).to_string());
            }
        }
    }
    assert_eq!(finals.len(), SENDERS as usize);
    for k in 0..SENDERS {
        let f = &finals[&(FIRST + k)];
        assert_eq!(f.len(), 1, "sender {k}: {f:?}");
        assert_eq!(f[0], "closed", "sender {k}");
        let got = rows.get(&(k as u64)).copied().unwrap_or(0)
            + lost.get(&(FIRST + k)).copied().unwrap_or(0);
        assert_eq!(got, ROUNDS * PER, "sender {k}");
    }
    eprintln!(
        "most stream states held: {most}; {} of {logged} events received, {refused_events} refused ({refused_datagrams} datagrams)",
        summary.events()
    );
}
