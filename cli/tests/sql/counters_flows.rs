//! One trace of counters and flows through every reader (issue 37): the
//! library writes it once ([`trace`]: counters of each kind declared by
//! `classes!` and at run time, on two sources; flows begun with the same id
//! by two sources and ended on each other's; a semaphore signal releasing
//! a task twice and an interrupt waking one), and the same file gives
//! exactly the rows its log predicts in Perfetto (read back with Perfetto's
//! protos by `scripts/check-perfetto.py`), Chrome JSON (`C` and flow
//! events), the Parquet store through `qtrace sql` (the `counters` and
//! `flows` views and the `wake_flows` table, FORMAT.md 7.5b) and `qtrace
//! analyze` (min/mean/max per counter, wake-up latency per task). Every
//! expectation is computed from what the writer logged.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use qtrace::classes::{lowlevel, semaphore, system, ClassSpec};
use qtrace::clock::{Clock, ManualClock};
use qtrace::macros::CounterKind;
use qtrace::queues::{Fixed, FixedParams};
use qtrace::{Config, Tracer};
use serde_json::{json, Value};

use crate::common::perfetto_decode::decode;

qtrace::classes! {
    static CATALOG;
    mod sched: "the scheduler" {
        counter READY = "ready": "tasks ready to run" (u64, tasks);
        counter LOAD = "load": "the load average" (f64);
    }
    mod net: "the network" {
        flow PACKET = "packet": "a packet through the stack" ();
    }
}

/// A counter value as logged, of the counter's kind.
#[derive(Clone, Copy, Debug)]
enum Value3 {
    U(u64),
    I(i64),
    F(f64),
}

impl Value3 {
    fn as_f64(self) -> f64 {
        match self {
            Value3::U(v) => v as f64,
            Value3::I(v) => v as f64,
            Value3::F(v) => v,
        }
    }

    /// As JSON and DuckDB print it (the values logged print exactly).
    fn text(self) -> String {
        match self {
            Value3::U(v) => v.to_string(),
            Value3::I(v) => v.to_string(),
            Value3::F(v) => v.to_string(),
        }
    }
}

/// A counter record logged: time, source, counter (`class:S`), its unit
/// (`""` for none), value.
#[derive(Clone, Debug)]
struct CounterRec {
    t: u64,
    source: u32,
    name: &'static str,
    unit: &'static str,
    value: Value3,
}

/// A flow record logged: time, source, phase, origin, id.
#[derive(Clone, Debug)]
struct FlowRec {
    t: u64,
    source: u32,
    phase: &'static str,
    origin: u32,
    id: u64,
}

/// What woke a task.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Cause {
    /// `semaphore:signal` of `sem` by task `by`.
    Signal { sem: u64, by: u64 },
    /// `lowlevel:interrupt` `irq`, whose handler logged `system:activate`
    /// at `activate_t`.
    Irq { irq: u64, activate_t: u64 },
}

/// A wake-up the writer set up: the signal or interrupt at `from_t` on
/// `from_source`, the woken task's next schedule at `to_t` on `to_source`.
#[derive(Clone, Debug)]
struct Wake {
    task: u64,
    cause: Cause,
    from_t: u64,
    from_source: u32,
    to_t: u64,
    to_source: u32,
}

impl Wake {
    fn latency(&self) -> u64 {
        self.to_t - self.from_t
    }

    /// Where the exports start its flow: the signal, or the activate the
    /// interrupt's handler logged (FORMAT.md 1.3.3).
    fn export_from(&self) -> (u64, &'static str) {
        match self.cause {
            Cause::Signal { .. } => (self.from_t, "signal"),
            Cause::Irq { activate_t, .. } => (activate_t, "activate"),
        }
    }
}

/// The file and what the writer logged into it.
struct Trace {
    _dir: tempfile::TempDir,
    file: PathBuf,
    counters: Vec<CounterRec>,
    flows: Vec<FlowRec>,
    wakes: Vec<Wake>,
}

/// The trace, written once per test binary by the library (a fixed queue
/// saved at shutdown, a manual clock set before each record).
fn trace() -> &'static Trace {
    static TRACE: OnceLock<Trace> = OnceLock::new();
    // Its own thread: the writer sets the thread's source before each record.
    TRACE.get_or_init(|| std::thread::spawn(write_trace).join().unwrap())
}

fn write_trace() -> Trace {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(0);
    let tracer = Tracer::with_config(
        Config::default()
            .with_output_dir(dir.path())
            .with_clock(Clock::manual(&clock)),
    );
    tracer.define_classes(&CATALOG).unwrap();
    // A counter declared at run time, of the third kind.
    let io = tracer
        .define_class(ClassSpec::new("io", "block I/O").counter(
            "inflight",
            "requests in flight",
            CounterKind::I64,
            "requests",
        ))
        .unwrap();
    let q = tracer
        .create_queue::<Fixed>(FixedParams::default().with_capacity(256))
        .unwrap();
    for class in [
        sched::CLASS,
        net::CLASS,
        io.id,
        system::CLASS,
        semaphore::CLASS,
        lowlevel::CLASS,
    ] {
        tracer.assign_class(class, q).unwrap();
    }
    tracer.activate().unwrap();
    let inflight = tracer.catalog().counter::<i64>("io:inflight").unwrap();

    let (mut counters, mut flows, mut wakes) = (Vec::new(), Vec::new(), Vec::new());
    // Each record at its time, from its source.
    let at = |t: u64, source: u32| {
        clock.set(t);
        qtrace::source::set_current(source);
    };
    let event = |t, source, id, args: [u64; 2]| {
        at(t, source);
        tracer.log_event(id, args);
    };
    // A counter's value logged, and noted.
    let mut counter = |t, source, value: Value3| {
        at(t, source);
        let (name, unit) = match value {
            Value3::U(v) => {
                tracer.log_counter(sched::READY, v);
                ("sched:ready", "tasks")
            }
            Value3::F(v) => {
                tracer.log_counter(sched::LOAD, v);
                ("sched:load", "")
            }
            Value3::I(v) => {
                tracer.log_counter(inflight, v);
                ("io:inflight", "requests")
            }
        };
        counters.push(CounterRec {
            t,
            source,
            name,
            unit,
            value,
        });
    };
    // A flow record logged (`f` None: a begin of id 5), and noted.
    let mut flow = |t, source, phase, f: Option<qtrace::macros::FlowId>| {
        at(t, source);
        let f = match (phase, f) {
            ("begin", None) => tracer.flow_begin(net::PACKET, 5),
            ("step", Some(f)) => {
                tracer.flow_step(net::PACKET, f);
                f
            }
            ("end", Some(f)) => {
                tracer.flow_end(net::PACKET, f);
                f
            }
            other => unreachable!("{other:?}"),
        };
        flows.push(FlowRec {
            t,
            source,
            phase,
            origin: f.origin,
            id: f.id,
        });
        f
    };

    // Source 0 and 1 are CPUs, source 2 a third sender of the flows.
    event(1_000, 0, system::SCHEDULE, [1, 0]); // task 1 runs on CPU 0
    counter(1_100, 0, Value3::U(2));
    let a = flow(1_200, 0, "begin", None); // (origin 0, id 5)
    event(1_300, 1, system::SCHEDULE, [3, 0]); // task 3 on CPU 1
    let b = flow(1_400, 1, "begin", None); // (origin 1, id 5): the same id
    assert_eq!((a.origin, a.id, b.origin, b.id), (0, 5, 1, 5));
    counter(1_500, 1, Value3::F(0.25));
    event(1_600, 0, semaphore::WAIT, [1, 7]); // task 1 waits on sem 7...
    event(1_700, 0, system::SCHEDULE, [2, 0]); // ...and blocks
    flow(1_800, 2, "step", Some(a));
    event(1_900, 1, semaphore::SIGNAL, [3, 7]); // task 3 releases task 1
    counter(2_000, 1, Value3::I(-3));
    counter(2_050, 0, Value3::U(3));
    event(2_150, 0, system::SCHEDULE, [1, 0]); // task 1 runs again
    wakes.push(Wake {
        task: 1,
        cause: Cause::Signal { sem: 7, by: 3 },
        from_t: 1_900,
        from_source: 1,
        to_t: 2_150,
        to_source: 0,
    });
    // Each packet ends on the other's origin.
    flow(2_200, 1, "end", Some(a));
    flow(2_300, 0, "end", Some(b));
    event(2_400, 1, system::ENDCYCLE, [3, 0]);
    event(2_500, 1, lowlevel::INTERRUPT, [9, 0]);
    event(2_550, 1, system::ACTIVATE, [4, 0]); // irq 9's handler wakes task 4
    counter(2_600, 1, Value3::F(1.5));
    counter(2_700, 1, Value3::U(5));
    event(2_900, 1, system::SCHEDULE, [4, 0]);
    wakes.push(Wake {
        task: 4,
        cause: Cause::Irq {
            irq: 9,
            activate_t: 2_550,
        },
        from_t: 2_500,
        from_source: 1,
        to_t: 2_900,
        to_source: 1,
    });
    counter(3_000, 0, Value3::U(0));
    counter(3_100, 0, Value3::I(7));
    event(3_200, 0, semaphore::WAIT, [1, 8]); // task 1 waits on sem 8...
    event(3_300, 0, system::SCHEDULE, [2, 0]); // ...and blocks
    event(3_400, 1, semaphore::SIGNAL, [4, 8]); // task 4 releases it
    event(3_700, 0, system::SCHEDULE, [1, 0]);
    wakes.push(Wake {
        task: 1,
        cause: Cause::Signal { sem: 8, by: 4 },
        from_t: 3_400,
        from_source: 1,
        to_t: 3_700,
        to_source: 0,
    });

    let report = tracer.shutdown().unwrap();
    assert!(report.queues[q.index()].status.is_healthy());
    let file = report.queues[q.index()].status.files[0].clone();
    Trace {
        _dir: dir,
        file,
        counters,
        flows,
        wakes,
    }
}

/// `qtrace ARGS FILE [QUERY]`'s output, which must succeed.
fn qtrace(args: &[&str], file: &Path, query: Option<&str>) -> String {
    let cache = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(args)
        .arg(file)
        .args(query)
        .env("XDG_CACHE_HOME", cache.path())
        .output()
        .expect("run qtrace");
    crate::common::success::assert_success(&out);
    String::from_utf8(out.stdout).unwrap()
}

/// The flows' instances as 1.3.3 pairs them: (origin, id) numbered from 1
/// in the order their begins come; each record's instance.
fn instances(flows: &[FlowRec]) -> Vec<u64> {
    let mut open: Vec<((u32, u64), u64)> = Vec::new();
    let mut next = 0;
    flows
        .iter()
        .map(|f| {
            let key = (f.origin, f.id);
            if f.phase == "begin" {
                next += 1;
                open.push((key, next));
                return next;
            }
            let i = open.iter().position(|(k, _)| *k == key).unwrap();
            let n = open[i].1;
            if f.phase == "end" {
                open.remove(i);
            }
            n
        })
        .collect()
}

/// A time in µs as Chrome JSON writes it (`ts`).
fn ts(t: u64) -> String {
    format!("{}.{:03}", t / 1000, t % 1000)
}

/// The wake-up flows' ids in the exports: 2^52 + their number (1 from the
/// first, in the order their signals or activates come).
const WAKE: u64 = 1 << 52;

/// The wakes in the order the exports number them.
fn wakes_by_export_start(t: &Trace) -> Vec<&Wake> {
    let mut w: Vec<&Wake> = t.wakes.iter().collect();
    w.sort_by_key(|w| w.export_from().0);
    w
}

#[test]
fn perfetto_holds_the_counter_and_flow_rows() {
    let t = trace();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.pftrace");
    qtrace(
        &[
            "convert",
            "--to",
            "perfetto",
            "--out",
            out.to_str().unwrap(),
        ],
        &t.file,
        None,
    );
    let Some(got) = decode(&out, false) else {
        return;
    };
    // The `counter` table: a track per source and counter, `source N/class:S`
    // (rows by track, then time: the file holds each source's packets
    // together).
    let by_track = |rows: &mut Vec<Value>| {
        rows.sort_by_key(|r| (r[1].as_str().unwrap().to_string(), r[0].as_u64().unwrap()))
    };
    let mut counters: Vec<Value> = t
        .counters
        .iter()
        .map(|c| {
            let v = match c.value {
                Value3::U(v) => json!(v),
                Value3::I(v) => json!(v),
                Value3::F(v) => json!(v),
            };
            json!([c.t, format!("source {}/{}", c.source, c.name), v])
        })
        .collect();
    by_track(&mut counters);
    let mut rows = got["counters"].as_array().unwrap().clone();
    by_track(&mut rows);
    assert_eq!(rows, counters, "{got}");
    for c in &t.counters {
        let label = format!("source {}/{}", c.source, c.name);
        assert_eq!(got["counter_units"][&label], c.unit, "{label}");
    }
    // The `flow` table: each instance's records linked in order, then the
    // wake-up flows, from the signal's or activate's instant to the woken
    // task's slice.
    let inst = instances(&t.flows);
    let mut flows = Vec::new();
    for n in 1..=*inst.iter().max().unwrap() {
        let recs: Vec<&FlowRec> = t
            .flows
            .iter()
            .zip(&inst)
            .filter(|(_, &i)| i == n)
            .map(|(f, _)| f)
            .collect();
        for w in recs.windows(2) {
            let (a, b) = (w[0], w[1]);
            flows.push(json!([
                n,
                a.t,
                format!("source {}", a.source),
                format!("packet.flow_{}", a.phase),
                b.t,
                format!("source {}", b.source),
                format!("packet.flow_{}", b.phase)
            ]));
        }
    }
    for (k, w) in wakes_by_export_start(t).iter().enumerate() {
        let (from_t, from_name) = w.export_from();
        flows.push(json!([
            WAKE + k as u64 + 1,
            from_t,
            format!("source {}", w.from_source),
            from_name,
            w.to_t,
            format!("source {}", w.to_source),
            format!("task {}", w.task)
        ]));
    }
    assert_eq!(got["flows"], Value::Array(flows), "{got}");
}

#[test]
fn chrome_json_holds_the_c_and_flow_events() {
    let t = trace();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    qtrace(
        &["convert", "--to", "chrome", "--out", out.to_str().unwrap()],
        &t.file,
        None,
    );
    let text = std::fs::read_to_string(&out).unwrap();
    let lines = |pick: &dyn Fn(&str) -> bool| -> Vec<String> {
        text.lines()
            .map(|l| l.trim_end_matches(','))
            .filter(|l| pick(l))
            .map(str::to_string)
            .collect()
    };
    let want: Vec<String> = t
        .counters
        .iter()
        .map(|c| {
            let key = if c.unit.is_empty() { "value" } else { c.unit };
            format!(
                r#"{{"ph":"C","name":"{}","cat":"counter","id":"{s}","ts":{},"pid":1,"tid":{s},"args":{{"{key}":{}}}}}"#,
                c.name,
                ts(c.t),
                c.value.text(),
                s = c.source
            )
        })
        .collect();
    assert_eq!(lines(&|l| l.contains(r#""ph":"C""#)), want, "{text}");

    let ev = |ph: &str, name: &str, cat: &str, id: u64, t: u64, tid: u32| {
        let bp = if ph == "f" { r#","bp":"e""# } else { "" };
        format!(
            r#"{{"ph":"{ph}","name":"{name}","cat":"{cat}","id":{id},"ts":{},"pid":1,"tid":{tid}{bp}}}"#,
            ts(t)
        )
    };
    let inst = instances(&t.flows);
    let want: Vec<String> = t
        .flows
        .iter()
        .zip(&inst)
        .map(|(f, &n)| {
            let ph = match f.phase {
                "begin" => "s",
                "step" => "t",
                _ => "f",
            };
            ev(ph, "net:packet", "flow", n, f.t, f.source)
        })
        .collect();
    assert_eq!(lines(&|l| l.contains(r#""cat":"flow""#)), want, "{text}");

    // Each wake flow's start with its signal or activate, its end with the
    // schedule: in time order.
    let mut want: Vec<(u64, String)> = Vec::new();
    for (k, w) in wakes_by_export_start(t).iter().enumerate() {
        let id = WAKE + k as u64 + 1;
        let (from_t, _) = w.export_from();
        want.push((from_t, ev("s", "wake", "wake", id, from_t, w.from_source)));
        want.push((w.to_t, ev("f", "wake", "wake", id, w.to_t, w.to_source)));
    }
    want.sort_by_key(|(t, _)| *t);
    let want: Vec<String> = want.into_iter().map(|(_, l)| l).collect();
    assert_eq!(lines(&|l| l.contains(r#""cat":"wake""#)), want, "{text}");
    serde_json::from_str::<Value>(&text).expect("the document parses");
}

/// `query`'s CSV rows, over the file converted by `qtrace sql`.
fn sql(file: &Path, query: &str) -> Vec<String> {
    let out = qtrace(&["sql", "--no-cache", "--format", "csv"], file, Some(query));
    out.lines().skip(1).map(str::to_string).collect()
}

#[test]
fn sql_counters_flows_and_wake_flows_hold_the_rows() {
    let t = trace();
    let got = sql(
        &t.file,
        "SELECT name, source, time_ns, CASE name WHEN 'sched:load' THEN value_f64::VARCHAR \
         WHEN 'io:inflight' THEN value_i64::VARCHAR ELSE value_u64::VARCHAR END, queue IS NULL \
         FROM counters ORDER BY time_ns",
    );
    let want: Vec<String> = t
        .counters
        .iter()
        .map(|c| format!("{},{},{},{},true", c.name, c.source, c.t, c.value.text()))
        .collect();
    assert_eq!(got, want);

    let got = sql(
        &t.file,
        "SELECT name, phase, source, time_ns, origin, flow_id, instance FROM flows ORDER BY time_ns",
    );
    let want: Vec<String> = t
        .flows
        .iter()
        .zip(instances(&t.flows))
        .map(|(f, n)| {
            format!(
                "net:packet,{},{},{},{},{},{n}",
                f.phase, f.source, f.t, f.origin, f.id
            )
        })
        .collect();
    assert_eq!(got, want);

    let got = sql(
        &t.file,
        "SELECT number, task, cause, sem, by_task, irq, from_ns, from_source, to_ns, \
         to_source, latency_ns, lossy FROM wake_flows ORDER BY number",
    );
    // analyze's order: that of the schedules.
    let mut wakes: Vec<&Wake> = t.wakes.iter().collect();
    wakes.sort_by_key(|w| w.to_t);
    let want: Vec<String> = wakes
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let cause = match w.cause {
                Cause::Signal { sem, by } => format!("signal,{sem},{by},"),
                Cause::Irq { irq, .. } => format!("interrupt,,,{irq}"),
            };
            format!(
                "{},{},{cause},{},{},{},{},{},false",
                i + 1,
                w.task,
                w.from_t,
                w.from_source,
                w.to_t,
                w.to_source,
                w.latency()
            )
        })
        .collect();
    assert_eq!(got, want);
}

#[test]
fn analyze_gives_each_counter_and_each_task_s_wake_ups() {
    let t = trace();
    let v: Value = serde_json::from_str(&qtrace(&["analyze", "--json"], &t.file, None)).unwrap();
    // Per counter, over every source, in name order.
    let mut names: Vec<&str> = t.counters.iter().map(|c| c.name).collect();
    names.sort();
    names.dedup();
    let want: Vec<Value> = names
        .iter()
        .map(|&name| {
            let v: Vec<f64> = t
                .counters
                .iter()
                .filter(|c| c.name == name)
                .map(|c| c.value.as_f64())
                .collect();
            let min = v.iter().copied().fold(f64::INFINITY, f64::min);
            let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            json!({"name": name, "count": v.len(), "nan": 0, "min": min, "mean": mean, "max": max})
        })
        .collect();
    assert_eq!(v["counters"], Value::Array(want), "{v}");
    // Per woken task: its wakes' latencies (nearest-rank p99, mean rounded
    // down), in task order.
    let mut tasks: Vec<u64> = t.wakes.iter().map(|w| w.task).collect();
    tasks.sort();
    tasks.dedup();
    let want: Vec<Value> = tasks
        .iter()
        .map(|&task| {
            let of: Vec<&Wake> = t.wakes.iter().filter(|w| w.task == task).collect();
            let mut l: Vec<u64> = of.iter().map(|w| w.latency()).collect();
            l.sort();
            let n = l.len();
            let signals = of
                .iter()
                .filter(|w| matches!(w.cause, Cause::Signal { .. }))
                .count();
            json!({
                "task": task, "by_signal": signals, "by_irq": n - signals,
                "unscheduled": 0, "lossy": 0,
                "latency": {
                    "count": n, "min_ns": l[0], "mean_ns": l.iter().sum::<u64>() / n as u64,
                    "p99_ns": l[(n * 99).div_ceil(100) - 1], "max_ns": l[n - 1]
                }
            })
        })
        .collect();
    assert_eq!(v["wakeups"], Value::Array(want), "{v}");
}
