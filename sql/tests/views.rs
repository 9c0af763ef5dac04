//! The ready views' figures equal `qtrace analyze`'s (the library's
//! `Analyzer`): on generated schedules here (every rule: FIFO jobs and
//! unmatched endcycles, preemption against blocking, migration between
//! sources, losses inside measures, interrupts, semaphore pairs, equal
//! times), and on the main job's trace in cli/tests/sql (through the
//! command).

use std::collections::BTreeMap;

use duckdb::params;
use qtrace::analysis::{AnalysisOptions, Analyzer, Report, Summary};
use qtrace::classes::{lowlevel, semaphore, system, tracer, user, Catalog};
use qtrace::clock::{Clock, ManualClock};
use qtrace::wire::{create_trace_file, TraceHeader};
use qtrace::{Event, EventId};
use qtrace_sql::{Engine, Options};

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A random schedule of `n` records on a few tasks, sources, semaphores and
/// interrupt lines, times never going back (some equal).
fn schedule(rng: &mut Rng, n: usize) -> Vec<Event> {
    let mut t = 1_000;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        t += match rng.below(10) {
            0 => 0,
            1..=6 => rng.below(800),
            _ => rng.below(20_000),
        };
        let task = 1 + rng.below(5);
        let source = rng.below(3) as u32;
        let sem = 1 + rng.below(2);
        let (id, args) = match rng.below(100) {
            0..=14 => (system::ACTIVATE, [task, 0]),
            15..=34 => (system::SCHEDULE, [task, 0]),
            35..=46 => (system::ENDCYCLE, [task, 0]),
            47..=48 => (system::DELAY, [task, 0]),
            49 => (system::SLEEP, [task, 0]),
            50 => (system::DISABLE, [task, 0]),
            51..=57 => (semaphore::WAIT, [task, sem]),
            58..=60 => (semaphore::WAITNB, [task, sem]),
            61..=68 => (semaphore::SIGNAL, [task, sem]),
            69..=78 => (lowlevel::INTERRUPT, [rng.below(2), 0]),
            79..=96 => (user::USER0, [rng.below(1000), 0]),
            _ => (tracer::HOOPS, [1 + rng.below(50), 0]),
        };
        out.push(Event::new(t, id, source, args));
    }
    out
}

/// An engine whose `events` and `losses` tables hold `events` (one run, one
/// host; hoops records go to `losses`, as the Parquet writer puts them).
fn engine(events: &[Event]) -> Engine {
    let engine = Engine::empty(&Options::default()).unwrap();
    let c = engine.connection();
    c.execute_batch(
        "CREATE TABLE events (run VARCHAR, host VARCHAR, sender UINTEGER, seq UBIGINT, \
         time_ns BIGINT, aligned_ns BIGINT, source UINTEGER, event_id USMALLINT, class VARCHAR, \
         event VARCHAR, arg0 UBIGINT, arg1 UBIGINT, flags USMALLINT, queue USMALLINT); \
         CREATE TABLE losses (run VARCHAR, host VARCHAR, sender UINTEGER, seq UBIGINT, \
         time_ns BIGINT, aligned_ns BIGINT, count UBIGINT, kind VARCHAR, queue USMALLINT, \
         accounted UBIGINT);",
    )
    .unwrap();
    {
        let mut ev = c.appender("events").unwrap();
        let mut lo = c.appender("losses").unwrap();
        for (seq, e) in events.iter().enumerate() {
            let (seq, t) = (seq as u64, e.time as i64);
            if e.id == tracer::HOOPS {
                lo.append_row(params![
                    "run0",
                    "h",
                    None::<u32>,
                    seq,
                    t,
                    t,
                    e.args[0],
                    "hoops",
                    0u16,
                    None::<u64>
                ])
                .unwrap();
            } else {
                ev.append_row(params![
                    "run0",
                    "h",
                    None::<u32>,
                    seq,
                    t,
                    t,
                    e.source,
                    e.id.0,
                    "c",
                    "e",
                    e.args[0],
                    e.args[1],
                    0u16,
                    None::<u16>
                ])
                .unwrap();
            }
        }
    }
    engine.create_views().unwrap();
    engine
}

/// An engine over `events` written as a `.qtr` file: `qtrace sql`'s own
/// path, the store writer pairing the jobs (FORMAT.md 7.5a). Keeps the
/// folder alive with the engine.
fn stored_engine(events: &[Event]) -> (Engine, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run0.qtr");
    let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)))
        .with_clock("manual", 1_000_000_000, 0)
        .unwrap();
    let mut w = create_trace_file(&path, &header).unwrap();
    w.write_events(events).unwrap();
    w.finish().unwrap();
    let engine = Engine::open(&[path], &Options::default()).unwrap();
    (engine, dir)
}

/// Whether `response_times` is the stored jobs alone (views.rs,
/// ALL_PAIRED).
fn reads_stored_jobs_only(engine: &Engine) -> bool {
    let sql: String = engine
        .connection()
        .query_row(
            "SELECT sql FROM duckdb_views() WHERE view_name = 'response_times'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    !sql.contains("list_sort")
}

fn analyze(events: &[Event]) -> Report {
    let mut a = Analyzer::new(
        &Catalog::builtin(),
        AnalysisOptions {
            interrupt_max_ns: 1_000,
            latency: None,
        },
    );
    for e in events {
        a.push(e);
    }
    a.finish()
}

/// count, min, mean, p99 (nearest rank), max: analyze's `Summary`.
const SUMMARY: &str = "count(*) FILTER (WHERE NOT lossy), \
    coalesce(min(d) FILTER (WHERE NOT lossy), 0), \
    coalesce(sum(d) FILTER (WHERE NOT lossy) // count(*) FILTER (WHERE NOT lossy), 0), \
    coalesce(list_sort(list(d) FILTER (WHERE NOT lossy))[greatest(1, ceil(count(*) FILTER (WHERE NOT lossy) * 99 / 100)::BIGINT)], 0), \
    coalesce(max(d) FILTER (WHERE NOT lossy), 0), \
    count(*) FILTER (WHERE lossy)";

fn summary(s: &Summary, lossy: u64) -> [u64; 6] {
    [s.count, s.min, s.mean, s.p99, s.max, lossy]
}

/// Rows of `sql` as (key, numbers).
fn rows<const N: usize>(engine: &Engine, sql: &str) -> BTreeMap<u64, [u64; N]> {
    let c = engine.connection();
    let mut stmt = c.prepare(sql).unwrap();
    let mut rows = stmt.query([]).unwrap();
    let mut out = BTreeMap::new();
    while let Some(r) = rows.next().unwrap() {
        let key: u64 = r.get(0).unwrap();
        let mut v = [0u64; N];
        for (i, x) in v.iter_mut().enumerate() {
            *x = r.get::<_, i64>(i + 1).unwrap() as u64;
        }
        out.insert(key, v);
    }
    out
}

/// Every figure of the views that analyze also gives, compared; returns
/// analyze's report.
fn check(events: &[Event]) -> Report {
    let report = analyze(events);
    let engine = engine(events);
    assert!(!reads_stored_jobs_only(&engine));

    let response_sql = format!(
        "SELECT task, {SUMMARY} FROM (SELECT task, response_ns AS d, lossy FROM response_times) GROUP BY task"
    );
    let responses = rows::<6>(&engine, &response_sql);
    // The jobs the store writer paired give the same figures.
    let (stored, _dir) = stored_engine(events);
    assert!(reads_stored_jobs_only(&stored));
    assert_eq!(
        rows::<6>(&stored, &response_sql),
        responses,
        "stored jobs: {events:?}"
    );
    let preempted = rows::<1>(
        &engine,
        "SELECT task, count(*) FROM preemptions GROUP BY task",
    );
    let dispatched = rows::<1>(
        &engine,
        "SELECT task, count(*) FROM slices WHERE kind = 'task' GROUP BY task",
    );
    for (task, t) in &report.tasks {
        let want = summary(&t.response.summary(), t.response_lossy);
        let got = responses.get(task).copied().unwrap_or_default();
        assert_eq!(got, want, "task {task} response times: {events:?}");
        let got = preempted.get(task).map_or(0, |v| v[0]);
        assert_eq!(got, t.preemptions, "task {task} preemptions: {events:?}");
        let got = dispatched.get(task).map_or(0, |v| v[0]);
        assert_eq!(got, t.dispatches, "task {task} dispatches: {events:?}");
    }
    // No task the views know that analyze does not.
    for task in responses.keys().chain(preempted.keys()) {
        assert!(report.tasks.contains_key(task), "task {task}");
    }

    let cpus = rows::<4>(
        &engine,
        "SELECT source, dispatches, busy_ns, idle_ns, lossy_ns FROM cpu_busy",
    );
    let want: BTreeMap<u64, [u64; 4]> = report
        .cpus
        .iter()
        .map(|(s, c)| {
            (
                u64::from(*s),
                [c.dispatches, c.busy_ns, c.idle_ns, c.lossy_ns],
            )
        })
        .collect();
    assert_eq!(cpus, want, "cpu_busy: {events:?}");

    let irqs = rows::<6>(
        &engine,
        &format!(
            "SELECT irq, {SUMMARY} FROM (SELECT irq, end_ns - begin_ns AS d, false AS lossy FROM slices WHERE kind = 'irq') GROUP BY irq"
        ),
    );
    let want: BTreeMap<u64, [u64; 6]> = report
        .interrupts
        .iter()
        .map(|(i, r)| (*i, summary(&r.handler.summary(), 0)))
        .collect();
    assert_eq!(irqs, want, "interrupt handlers: {events:?}");
    report
}

#[test]
fn views_equal_the_analysis_on_generated_schedules() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    // What the schedules exercised, summed: every rule must have been met.
    let mut seen = [0u64; 6];
    for n in [0, 1, 5, 20, 60, 200, 400] {
        for _ in 0..12 {
            let events = schedule(&mut rng, n);
            let r = check(&events);
            for t in r.tasks.values() {
                seen[0] += t.preemptions;
                seen[1] += t.response_lossy;
                seen[2] += t.unmatched;
                seen[3] += t.blocked_waits;
                seen[4] += t.response.len() as u64;
            }
            seen[5] += r.cpus.values().map(|c| c.lossy_ns).sum::<u64>();
        }
    }
    assert!(
        seen.iter().all(|&n| n > 0),
        "preemptions, lossy jobs, unmatched endcycles, blocked waits, jobs, lossy time: {seen:?}"
    );
}

#[test]
fn a_preemption_and_a_blocked_wait_are_told_apart() {
    // Task 1 is activated and runs on source 0; task 2 is dispatched over
    // it: a preemption. Later task 1 waits on a semaphore and task 2 is
    // dispatched: blocked, not preempted. Task 3 runs with no job: no
    // preemption either.
    let s = |t, task| Event::new(t, system::SCHEDULE, 0, [task, 0]);
    let events = [
        Event::new(0, system::ACTIVATE, 0, [1, 0]),
        s(10, 1),
        Event::new(20, system::ACTIVATE, 0, [2, 0]),
        s(30, 2), // preempts 1
        Event::new(40, system::ENDCYCLE, 0, [2, 0]),
        s(50, 1),
        Event::new(60, semaphore::WAIT, 0, [1, 7]),
        s(70, 2), // 1 blocked
        s(80, 3),
        s(90, 1), // 3 had no job
        Event::new(100, system::ENDCYCLE, 0, [1, 0]),
    ];
    check(&events);
    let engine = engine(&events);
    let got = rows::<2>(
        &engine,
        "SELECT time_ns, task, by_task FROM preemptions ORDER BY time_ns",
    );
    assert_eq!(got, BTreeMap::from([(30, [1, 2])]));
}

#[test]
fn semaphore_holds_pair_innermost_first() {
    let w = |t, id: EventId, task| Event::new(t, id, 0, [task, 1]);
    let events = [
        w(10, semaphore::SIGNAL, 5), // nothing open: no slice
        w(20, semaphore::WAIT, 5),
        w(30, semaphore::WAITNB, 5),
        w(40, semaphore::SIGNAL, 5), // closes the waitnb (innermost)
        w(50, semaphore::WAITNB, 5), // never signalled: no slice
        w(60, semaphore::WAIT, 6),   // never signalled: held to the end
        Event::new(90, user::USER0, 0, [0, 0]),
    ];
    let engine = engine(&events);
    let mut stmt = engine
        .connection()
        .prepare(
            "SELECT task, begin_ns, end_ns, blocking, signalled FROM slices \
             WHERE kind = 'semaphore' ORDER BY begin_ns",
        )
        .unwrap();
    let got: Vec<(u64, i64, i64, bool, bool)> = stmt
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        got,
        [
            (5, 20, 90, true, false),
            (5, 30, 40, false, true),
            (6, 60, 90, true, false),
        ]
    );
}

/// The `counters` and `flows` views (FORMAT.md 7.5b) over a `.qtr` file
/// with counters of each kind and flows, converted by the store writer:
/// exact rows.
#[test]
fn counters_and_flows_views_hold_exact_rows() {
    use qtrace::classes::ClassSpec;
    use qtrace::macros::{CounterKind, FlowId};
    let mut catalog = Catalog::builtin();
    let c = catalog
        .define(
            ClassSpec::new("sched", "the scheduler")
                .counter("ready", "tasks ready", CounterKind::U64, "tasks")
                .counter("slack", "budget left", CounterKind::I64, "us")
                .counter("load", "load average", CounterKind::F64, "")
                .flow("packet", "a packet"),
        )
        .unwrap();
    let ev = |n: &str| c.event(n).unwrap();
    let (ready, slack, load) = (ev("ready.counter"), ev("slack.counter"), ev("load.counter"));
    let (b, s, e) = (
        ev("packet.flow_begin"),
        ev("packet.flow_step"),
        ev("packet.flow_end"),
    );
    let (x, y) = (FlowId::new(0, 5), FlowId::new(1, 5));
    let events = [
        Event::new(1_000, ready, 0, [2, 0]),
        Event::new(1_100, slack, 1, [(-40i64) as u64, 0]),
        Event::new(1_200, load, 0, [0.25f64.to_bits(), 0]),
        Event::new(1_300, load, 0, [(-1.5e-300f64).to_bits(), 0]),
        Event::new(1_400, load, 1, [f64::INFINITY.to_bits(), 0]),
        Event::new(1_500, ready, 1, [u64::MAX, 0]),
        Event::new(2_000, e, 2, x.args()), // before any begin: unpaired
        Event::new(2_100, b, 0, x.args()),
        Event::new(2_200, b, 1, y.args()), // same id, another origin
        Event::new(2_300, s, 2, x.args()),
        Event::new(2_400, e, 1, x.args()),
        Event::new(2_500, e, 1, x.args()), // already ended: unpaired
        Event::new(2_600, e, 0, y.args()),
        Event::new(2_700, b, 0, x.args()), // a new instance of (0, 5)
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run0.qtr");
    let header = TraceHeader::new(catalog, &Clock::manual(&ManualClock::new(0)))
        .with_clock("manual", 1_000_000_000, 0)
        .unwrap();
    let mut w = create_trace_file(&path, &header).unwrap();
    w.write_events(&events).unwrap();
    w.finish().unwrap();
    let engine = Engine::open(&[path], &Options::default()).unwrap();
    let conn = engine.connection();

    let mut stmt = conn
        .prepare(
            "SELECT time_ns, source, name, value_u64::VARCHAR, value_i64, value_f64::VARCHAR \
             FROM counters ORDER BY time_ns",
        )
        .unwrap();
    let got: Vec<(i64, u32, String, String, i64, String)> = stmt
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let row =
        |t, s, n: &str, u: &str, i, f: &str| (t, s, n.to_string(), u.to_string(), i, f.to_string());
    assert_eq!(
        got,
        [
            row(1_000, 0, "sched:ready", "2", 2, "1e-323"),
            row(1_100, 1, "sched:slack", "18446744073709551576", -40, "nan"),
            row(
                1_200,
                0,
                "sched:load",
                "4598175219545276416",
                4598175219545276416,
                "0.25"
            ),
            row(
                1_300,
                0,
                "sched:load",
                &(-1.5e-300f64).to_bits().to_string(),
                (-1.5e-300f64).to_bits() as i64,
                "-1.5e-300"
            ),
            row(
                1_400,
                1,
                "sched:load",
                "9218868437227405312",
                9218868437227405312,
                "inf"
            ),
            row(1_500, 1, "sched:ready", "18446744073709551615", -1, "nan"),
        ]
    );
    // Every f64 value reads back bit for bit.
    let bits: Vec<u64> = conn
        .prepare("SELECT value_f64 FROM counters WHERE name = 'sched:load' ORDER BY time_ns")
        .unwrap()
        .query_map([], |r| r.get::<_, f64>(0))
        .unwrap()
        .map(|v| v.unwrap().to_bits())
        .collect();
    assert_eq!(
        bits,
        [
            0.25f64.to_bits(),
            (-1.5e-300f64).to_bits(),
            f64::INFINITY.to_bits()
        ]
    );

    let mut stmt = conn
        .prepare(
            "SELECT time_ns, source, name, phase, origin, flow_id, instance \
             FROM flows ORDER BY time_ns",
        )
        .unwrap();
    type FlowRow = (i64, u32, String, String, u32, u64, Option<u64>);
    let got: Vec<FlowRow> = stmt
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let row = |t, s, p: &str, o, i| (t, s, "sched:packet".to_string(), p.to_string(), o, 5u64, i);
    assert_eq!(
        got,
        [
            row(2_000, 2, "end", 0, None),
            row(2_100, 0, "begin", 0, Some(1)),
            row(2_200, 1, "begin", 1, Some(2)),
            row(2_300, 2, "step", 0, Some(1)),
            row(2_400, 1, "end", 0, Some(1)),
            row(2_500, 1, "end", 0, None),
            row(2_600, 0, "end", 1, Some(2)),
            row(2_700, 0, "begin", 0, Some(3)),
        ]
    );
}

/// On random flow records (few ids, origins and sources; ends before
/// begins, repeated ends, begins of open instances), the `flows` view pairs
/// exactly as the Chrome export does: its non-null instances, in trace
/// order, are the export's `s`/`t`/`f` events and their ids.
#[test]
fn flows_view_pairs_as_the_chrome_export() {
    use qtrace::classes::ClassSpec;
    use qtrace::export::chrome::ChromeWriter;
    use qtrace::macros::{FlowId, FlowPhase};
    let mut catalog = Catalog::builtin();
    catalog
        .define(
            ClassSpec::new("net", "the network")
                .flow("packet", "a packet")
                .flow("call", "a call"),
        )
        .unwrap();
    let flows = [
        catalog.flow("net:packet").unwrap(),
        catalog.flow("net:call").unwrap(),
    ];
    let mut rng = Rng(0x5eed_f10e);
    let mut t = 1_000u64;
    let events: Vec<Event> = (0..3_000)
        .map(|_| {
            t += rng.below(3) * 100; // some equal times
            let flow = flows[rng.below(2) as usize];
            let phase = [FlowPhase::Begin, FlowPhase::Step, FlowPhase::End][rng.below(3) as usize];
            let id = FlowId::new(rng.below(3) as u32, rng.below(4));
            Event::new(t, flow.event(phase), rng.below(4) as u32, id.args())
        })
        .collect();

    let mut out = Vec::new();
    let w = ChromeWriter::new(&catalog, 0, &mut out).unwrap();
    qtrace::export::convert(w, events.iter().copied()).unwrap();
    let text = String::from_utf8(out).unwrap();
    let field = |l: &str, key: &str| -> String {
        let at = l.find(key).unwrap() + key.len();
        l[at..]
            .split([',', '}'])
            .next()
            .unwrap()
            .trim_matches('"')
            .to_string()
    };
    let chrome: Vec<(String, u64)> = text
        .lines()
        .filter(|l| l.contains("\"cat\":\"flow\""))
        .map(|l| {
            let ph = match field(l, "\"ph\":").as_str() {
                "s" => "begin",
                "t" => "step",
                _ => "end",
            };
            (ph.to_string(), field(l, "\"id\":").parse().unwrap())
        })
        .collect();

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run0.qtr");
    let header = TraceHeader::new(catalog, &Clock::manual(&ManualClock::new(0)))
        .with_clock("manual", 1_000_000_000, 0)
        .unwrap();
    let mut w = create_trace_file(&path, &header).unwrap();
    w.write_events(&events).unwrap();
    w.finish().unwrap();
    let engine = Engine::open(&[path], &Options::default()).unwrap();
    let sql: Vec<(String, u64)> = engine
        .connection()
        .prepare(
            "SELECT phase, instance FROM flows WHERE instance IS NOT NULL \
             ORDER BY time_ns, run, seq",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let total: u64 = engine
        .connection()
        .query_row("SELECT count(*) FROM flows", [], |r| r.get(0))
        .unwrap();
    assert_eq!(total, 3_000);
    // Enough of each to mean something.
    assert!(
        chrome.len() > 1_000 && chrome.len() < 3_000,
        "{}",
        chrome.len()
    );
    assert_eq!(sql, chrome);
}

/// `wake_flows`'s rows, in analyze's order: (task, cause, sem, by, irq,
/// from_ns, from_source, to_ns, to_source, latency_ns, lossy).
type WakeRow = (
    u64,
    String,
    Option<u64>,
    Option<u64>,
    Option<u64>,
    i64,
    u32,
    i64,
    u32,
    u64,
    bool,
);

fn wake_rows(engine: &Engine) -> Vec<WakeRow> {
    // Through `run`, as `qtrace sql` queries it: that fills the table.
    let mut out = Vec::new();
    engine
        .run(
            "SELECT count(*) FROM wake_flows",
            qtrace_sql::Printer::new(qtrace_sql::Format::Csv, &mut out),
        )
        .unwrap();
    engine
        .connection()
        .prepare(
            "SELECT task, cause, sem, by_task, irq, from_ns, from_source, to_ns, to_source, \
             latency_ns, lossy FROM wake_flows ORDER BY host, stream, number",
        )
        .unwrap()
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
                r.get(7)?,
                r.get(8)?,
                r.get(9)?,
                r.get(10)?,
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// analyze's wake-up flows as `wake_flows` rows.
fn analyze_wakes(report: &Report) -> Vec<WakeRow> {
    use qtrace::analysis::WakeCause;
    report
        .wake_flows
        .iter()
        .map(|f| {
            let (cause, sem, by, irq) = match f.cause {
                WakeCause::Signal { sem, by } => ("signal", Some(sem), Some(by), None),
                WakeCause::Interrupt { irq } => ("interrupt", None, None, Some(irq)),
            };
            (
                f.task,
                cause.to_string(),
                sem,
                by,
                irq,
                f.from_ns as i64,
                f.from_source,
                f.to_ns as i64,
                f.to_source,
                f.latency_ns(),
                f.lossy,
            )
        })
        .collect()
}

/// Two CPUs: a signal releases a blocked task, interrupts activate tasks
/// (one scheduled, one never, one with a loss between) — the trace of the
/// library's `tests/export/flows.rs` — through `qtrace sql`'s own path (a
/// `.qtr` converted by the store writer).
#[test]
fn wake_flows_hold_the_derived_flows_and_their_latency() {
    let events = vec![
        Event::new(0, system::SCHEDULE, 0, [1, 0]),
        Event::new(100, semaphore::WAIT, 0, [1, 7]),
        Event::new(150, system::SCHEDULE, 0, [2, 0]),
        Event::new(200, system::SCHEDULE, 1, [3, 0]),
        Event::new(300, semaphore::SIGNAL, 1, [3, 7]),
        Event::new(450, system::SCHEDULE, 0, [1, 0]),
        Event::new(500, system::ENDCYCLE, 1, [3, 0]),
        Event::new(1_000, lowlevel::INTERRUPT, 1, [9, 0]),
        Event::new(1_050, system::ACTIVATE, 1, [3, 0]),
        Event::new(1_300, system::SCHEDULE, 1, [3, 0]),
        Event::new(1_400, semaphore::WAIT, 0, [1, 8]),
        Event::new(1_500, semaphore::SIGNAL, 1, [3, 8]),
        Event::new(1_600, semaphore::SIGNAL, 0, [1, 8]),
        Event::new(1_700, lowlevel::INTERRUPT, 0, [9, 0]),
        Event::new(1_750, system::ACTIVATE, 0, [4, 0]),
        Event::new(1_800, lowlevel::INTERRUPT, 1, [5, 0]),
        Event::new(1_810, system::ACTIVATE, 1, [2, 0]),
        Event::new(1_850, tracer::HOOPS, 1, [2, 0]),
        Event::new(1_900, system::SCHEDULE, 1, [2, 0]),
    ];
    let (engine, _dir) = stored_engine(&events);
    let s = |v: &str| v.to_string();
    let want: Vec<WakeRow> = vec![
        (
            1,
            s("signal"),
            Some(7),
            Some(3),
            None,
            300,
            1,
            450,
            0,
            150,
            false,
        ),
        (
            3,
            s("interrupt"),
            None,
            None,
            Some(9),
            1_000,
            1,
            1_300,
            1,
            300,
            false,
        ),
        (
            2,
            s("interrupt"),
            None,
            None,
            Some(5),
            1_800,
            1,
            1_900,
            1,
            100,
            true,
        ),
    ];
    assert_eq!(wake_rows(&engine), want);
    assert_eq!(analyze_wakes(&analyze(&events)), want);
    // A second query reads the same rows (filled once).
    assert_eq!(wake_rows(&engine).len(), 3);
}

/// On generated schedules (signals, interrupts, losses, migrations), the
/// table is analyze's list exactly, and its latencies are analyze's
/// per-task wake-up figures.
#[test]
fn wake_flows_equal_the_analysis_on_generated_schedules() {
    let mut rng = Rng(0x3c6e_f372_fe94_f82b);
    let (mut signals, mut irqs, mut lossy) = (0, 0, 0);
    for n in [0, 1, 20, 200, 400, 800] {
        for _ in 0..6 {
            let events = schedule(&mut rng, n);
            let report = analyze(&events);
            let want = analyze_wakes(&report);
            let got = wake_rows(&engine(&events));
            assert_eq!(got, want, "{events:?}");
            for r in &got {
                signals += (r.1 == "signal") as u64;
                irqs += (r.1 == "interrupt") as u64;
                lossy += r.10 as u64;
            }
            // Per task: count and largest latency of the wakes no loss touched.
            let mut per_task: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
            for r in got.iter().filter(|r| !r.10) {
                let e = per_task.entry(r.0).or_default();
                *e = (e.0 + 1, e.1.max(r.9));
            }
            let figures: BTreeMap<u64, (u64, u64)> = report
                .tasks
                .iter()
                .filter(|(_, t)| !t.wakeups.is_empty())
                .map(|(&id, t)| {
                    let s = t.wakeups.summary();
                    (id, (s.count, s.max))
                })
                .collect();
            assert_eq!(per_task, figures);
        }
    }
    assert!(
        signals > 0 && irqs > 0 && lossy > 0,
        "{signals} {irqs} {lossy}"
    );
}
