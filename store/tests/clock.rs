//! The clock facts of the `streams` table on one machine (issue #34): two
//! real UDP-queue senders on the default clock, one of them shifted 3 s
//! ahead (`Clock::shifted`), into a receiver that stalls 150 ms every
//! 40 datagrams (datagrams pile up in its socket meanwhile). One clock, so
//! the drift must be about 0, the offset −shift, and the bound small: the
//! delays are measured from the kernel's arrival times, not from when the
//! stalled receiver got round to a datagram (before, the same stalls tilted
//! the line to the +1000 ppm clamp and made the bound seconds).

mod common;
use common::batches;

use std::time::Duration;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type, UInt32Type};
use arrow_array::Array;
use qtrace::classes::user;
use qtrace::clock::Clock;
use qtrace::queues::{DatagramsPerPeriod, Udp, UdpParams};
use qtrace::receiver::{Receiver, ReceiverConfig, RunLimit, SenderSummary, StreamId, StreamSink};
use qtrace::wire::TraceHeader;
use qtrace::{Config, Event, Tracer};
use qtrace_store::{Store, StoreConfig};

/// Events per sender: 2,000 a second for 4 s.
const EVENTS: u64 = 8_000;
/// |drift| asserted on one clock: a tenth of the clamp (the measured
/// figures are printed; noise over 4 s of stream is a few ppm).
const DRIFT_PPM: f64 = 100.0;
/// Bound asserted: 2 ms (the median of the quickest datagram per window
/// above the line; measured tens of µs).
const BOUND_NS: i64 = 2_000_000;
/// |offset + shift| asserted: 5 ms, as store/tests/fleet.rs.
const OFFSET_NS: i64 = 5_000_000;

/// The store behind a receiver that is not scheduled for 150 ms every 40
/// datagrams.
struct Stalling {
    store: Store,
    ticks: u64,
}

impl StreamSink for Stalling {
    fn stream(&mut self, id: &StreamId, header: Option<&TraceHeader>) {
        self.store.stream(id, header)
    }
    fn arrival(&mut self, unix_ns: i64) {
        self.store.arrival(unix_ns)
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
        self.ticks += 1;
        if self.ticks.is_multiple_of(40) {
            std::thread::sleep(Duration::from_millis(150));
        }
        self.store.tick()
    }
}

fn sender(to: std::net::SocketAddr, id: u32, shift_ns: i64) {
    let clock = Clock::fast().shifted(shift_ns);
    let tracer = Tracer::with_config(Config::default().with_clock(clock));
    let q = tracer
        .create_queue::<Udp>(
            UdpParams::to(to)
                .with_capacity(1 << 14)
                .with_period(Duration::from_millis(2))
                .with_datagrams_per_period(DatagramsPerPeriod::All)
                .with_sender_id(id),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer.activate().unwrap();
    for i in 0..EVENTS {
        tracer.log_event(user::USER0, [i, id as u64]);
        if i % 10 == 9 {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let report = tracer.shutdown().unwrap();
    assert_eq!(report.queues[0].counters.dropped, 0);
}

#[test]
fn one_clock_shows_no_drift_a_small_bound_and_the_shift_as_offset() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let mut receiver =
        Receiver::bind_with("127.0.0.1:0".parse().unwrap(), ReceiverConfig::default()).unwrap();
    let to = receiver.local_addr();
    let shifts = [(1u32, 0i64), (2, 3_000_000_000)];
    let senders: Vec<_> = shifts
        .iter()
        .map(|&(id, shift)| std::thread::spawn(move || sender(to, id, shift)))
        .collect();
    let mut sink = Stalling {
        store: Store::open(&root, StoreConfig::default()).unwrap(),
        ticks: 0,
    };
    let limit = RunLimit::events(EVENTS * shifts.len() as u64).or_after(Duration::from_secs(10));
    let summary = receiver.run_streams(limit, &mut sink).unwrap();
    for s in senders {
        s.join().unwrap();
    }
    assert_eq!(summary.events(), EVENTS * shifts.len() as u64, "{summary}");
    sink.store.finish(&summary).unwrap();

    let mut seen = 0;
    for b in batches(&root, "streams") {
        let sender = b
            .column_by_name("sender")
            .unwrap()
            .as_primitive::<UInt32Type>();
        let verdict = b.column_by_name("verdict").unwrap().as_string::<i32>();
        let col = |n: &str| {
            b.column_by_name(n)
                .unwrap()
                .as_primitive::<Int64Type>()
                .clone()
        };
        let (offset, bound) = (col("clock_offset_ns"), col("clock_offset_bound_ns"));
        let drift = b
            .column_by_name("clock_drift_ppm")
            .unwrap()
            .as_primitive::<Float64Type>();
        for i in 0..b.num_rows() {
            if verdict.value(i) != "closed" {
                continue;
            }
            let shift = shifts.iter().find(|s| s.0 == sender.value(i)).unwrap().1;
            let (o, bd, d) = (offset.value(i), bound.value(i), drift.value(i));
            eprintln!(
                "sender {}: offset + shift {} ns, bound {bd} ns, drift {d:.2} ppm",
                sender.value(i),
                o + shift
            );
            assert!(offset.is_valid(i) && bound.is_valid(i) && drift.is_valid(i));
            assert!(
                (o + shift).abs() < OFFSET_NS,
                "offset {o} for shift {shift}"
            );
            assert!((0..BOUND_NS).contains(&bd), "bound {bd}");
            assert!(d.abs() < DRIFT_PPM, "drift {d}");
            seen += 1;
        }
    }
    assert_eq!(seen, shifts.len());
}
