//! Three senders on one host (issue #34): each logs its own tasks' jobs with
//! its own response times, and the three streams interleave on one address.
//! The views pair per stream (`stream` = the received run), so
//! `response_times` equals each sender's own jobs exactly — both its stored
//! path (the store's `jobs` table) and its derived path (paired from
//! `events` by the views) — and equals what each sender logged.

use std::collections::BTreeMap;
use std::time::Duration;

use qtrace::classes::system;
use qtrace::clock::{Clock, ManualClock};
use qtrace::queues::{DatagramsPerPeriod, Udp, UdpParams};
use qtrace::receiver::{Receiver, ReceiverConfig, RunLimit};
use qtrace::{Config, Tracer};
use qtrace_sql::{Engine, Format, Options, Printer, VIEWS_SQL};
use qtrace_store::{Store, StoreConfig};

const SENDERS: u64 = 3;
const JOBS: u64 = 600;

/// Sender `k`'s response time of its task `task`'s job `j`, in ns: each
/// sender its own, so that pairing one sender's activate with another's
/// endcycle shows.
fn response(k: u64, task: u64, j: u64) -> u64 {
    1_000 * (k + 1) * task + 37 * ((j * (k + 3)) % 11)
}

/// Sender `k`: jobs of tasks 1 and 2, activated every 10 µs of its clock
/// (the three clocks start together: their rows interleave in time).
fn sender(to: std::net::SocketAddr, k: u64) {
    let clock = ManualClock::new(0);
    let tracer = Tracer::with_config(Config::default().with_clock(Clock::manual(&clock)));
    let q = tracer
        .create_queue::<Udp>(
            UdpParams::to(to)
                .with_period(Duration::from_millis(2))
                .with_datagrams_per_period(DatagramsPerPeriod::All)
                .with_sender_id(700 + k as u32),
        )
        .unwrap();
    tracer.assign_class(system::CLASS, q).unwrap();
    tracer.activate().unwrap();
    // (time, is activate, task) in time order.
    let mut steps = Vec::new();
    for j in 0..JOBS {
        for task in [1, 2] {
            let t = 10_000 * j + 100 * task + 7 * k;
            steps.push((t, true, task));
            steps.push((t + response(k, task, j), false, task));
        }
    }
    steps.sort();
    for (i, (t, act, task)) in steps.into_iter().enumerate() {
        clock.set(t);
        let id = if act {
            system::ACTIVATE
        } else {
            system::ENDCYCLE
        };
        tracer.log_event(id, [task, 0]);
        if i % 200 == 199 {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    tracer.shutdown().unwrap();
}

fn csv(engine: &Engine, sql: &str) -> String {
    let mut out = Vec::new();
    engine
        .run(sql, Printer::new(Format::Csv, &mut out))
        .unwrap();
    String::from_utf8(out).unwrap()
}

/// Per sender and task: jobs, lossy jobs, sum, min and max of the response
/// times (the query's rows, sender first).
fn figures(engine: &Engine, sql: &str) -> BTreeMap<(u64, u64), [u64; 5]> {
    let text = csv(engine, sql);
    text.lines()
        .skip(1)
        .map(|line| {
            let v: Vec<u64> = line.split(',').map(|x| x.parse().unwrap()).collect();
            ((v[0], v[1]), [v[2], v[3], v[4], v[5], v[6]])
        })
        .collect()
}

const PER_STREAM: &str = "SELECT s.sender, r.task, count(*), count(*) FILTER (WHERE r.lossy), \
    sum(r.response_ns), min(r.response_ns), max(r.response_ns) \
    FROM response_times r JOIN (SELECT DISTINCT run, sender FROM streams) s ON s.run = r.stream \
    GROUP BY ALL ORDER BY ALL";

const STORED: &str = "SELECT sender, task, count(*), count(*) FILTER (WHERE lossy), \
    sum(time_ns - activated_ns), min(time_ns - activated_ns), max(time_ns - activated_ns) \
    FROM jobs GROUP BY ALL ORDER BY ALL";

#[test]
fn three_senders_on_one_host_are_paired_per_stream() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let mut receiver =
        Receiver::bind_with("127.0.0.1:0".parse().unwrap(), ReceiverConfig::default()).unwrap();
    let to = receiver.local_addr();
    let senders: Vec<_> = (0..SENDERS)
        .map(|k| std::thread::spawn(move || sender(to, k)))
        .collect();
    let mut store = Store::open(&root, StoreConfig::default()).unwrap();
    let logged = JOBS * 4;
    let limit = RunLimit::events(logged * SENDERS).or_after(Duration::from_secs(60));
    let summary = receiver.run_streams(limit, &mut store).unwrap();
    for s in senders {
        s.join().unwrap();
    }
    store.finish(&summary).unwrap();
    assert_eq!(summary.senders.len(), SENDERS as usize, "{summary}");
    for s in &summary.senders {
        assert_eq!(s.events + s.lost(), logged, "{summary}");
    }

    let engine = Engine::open(std::slice::from_ref(&root), &Options::default()).unwrap();
    assert_eq!(
        csv(&engine, "SELECT count(DISTINCT host) AS hosts FROM events"),
        "hosts\n1\n"
    );
    let stored = figures(&engine, STORED);
    assert_eq!(stored.len(), (SENDERS * 2) as usize, "{stored:?}");
    // Stored path: every stream paired by the store.
    assert_eq!(figures(&engine, PER_STREAM), stored);
    // Derived path: the views pair the events themselves.
    engine
        .connection()
        .execute_batch(&format!(
            "SET VARIABLE qtrace_jobs_stored = false; {VIEWS_SQL}"
        ))
        .unwrap();
    assert_eq!(
        csv(
            &engine,
            "SELECT count(*) AS paired FROM qtrace_paired_streams"
        ),
        "paired\n0\n"
    );
    assert_eq!(figures(&engine, PER_STREAM), stored);
    // And what each sender logged, where it lost nothing.
    for s in &summary.senders {
        if s.lost() != 0 {
            eprintln!(
                "sender {} lost {}: its figures not checked against the log",
                s.sender,
                s.lost()
            );
            continue;
        }
        let k = u64::from(s.sender - 700);
        for task in [1, 2] {
            let r: Vec<u64> = (0..JOBS).map(|j| response(k, task, j)).collect();
            let want = [
                JOBS,
                0,
                r.iter().sum(),
                *r.iter().min().unwrap(),
                *r.iter().max().unwrap(),
            ];
            assert_eq!(
                stored[&(u64::from(s.sender), task)],
                want,
                "sender {k} task {task}"
            );
        }
    }
}
