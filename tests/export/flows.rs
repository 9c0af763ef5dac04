//! How readers show flows (FORMAT.md 1.3.3): declared by `classes!`, logged
//! by `Tracer::flow_begin/step/end`, exported to Perfetto (flow ids on the
//! instants, read back with Perfetto's protos by `scripts/check-perfetto.py`)
//! and to Chrome JSON (`s`/`t`/`f` events).

use qtrace::export::chrome::ChromeWriter;
use qtrace::export::perfetto::PerfettoWriter;
use qtrace::export::{self};
use qtrace::macros::FlowId;
use qtrace::Event;
use serde_json::json;

use crate::common::perfetto_decode::decode;

qtrace::classes! {
    static CATALOG;
    mod net: "the network" {
        flow PACKET = "packet": "a packet through the stack" ();
        flow CALL = "call": "a remote call" ();
    }
}

fn catalog() -> qtrace::classes::Catalog {
    let mut c = qtrace::classes::Catalog::builtin();
    c.define_static(&CATALOG).unwrap();
    c
}

/// Sources 0 and 1 both begin a packet with id 5; the packet of source 0
/// steps on source 2 and ends on source 1, that of source 1 ends on source
/// 0; then an end of no open instance, and a call begun and never ended.
fn flow_trace() -> Vec<Event> {
    let (a, b) = (FlowId::new(0, 5), FlowId::new(1, 5));
    let p = net::PACKET;
    vec![
        Event::new(1_000, p.begin(), 0, a.args()),
        Event::new(1_100, p.begin(), 1, b.args()),
        Event::new(1_200, p.step(), 2, a.args()),
        Event::new(1_300, p.end(), 1, a.args()),
        Event::new(1_400, p.end(), 0, b.args()),
        Event::new(1_500, p.end(), 0, b.args()), // already ended: no flow event
        Event::new(1_600, net::CALL.begin(), 2, FlowId::new(2, 5).args()),
    ]
}

#[test]
fn classes_declares_three_flow_events() {
    use qtrace::macros::FlowPhase;
    let c = catalog();
    assert_eq!(net::PACKET.begin(), qtrace::EventId(0x17));
    assert_eq!(net::CALL.begin(), qtrace::EventId(0x1a));
    assert_eq!(c.event_name(net::PACKET.step()), Some("packet.flow_step"));
    assert_eq!(
        c.event(net::PACKET.end()).unwrap().description,
        "end: a packet through the stack"
    );
    assert_eq!(c.event(net::CALL.begin()).unwrap().args, ["flow", "origin"]);
    assert_eq!(c.flow_of(net::CALL.step()), Some(("call", FlowPhase::Step)));
    assert_eq!(c.flow("net:call"), Some(net::CALL));
    assert_eq!(c.flow("net:nope"), None);
    assert_eq!(c.flow_of(qtrace::classes::system::SCHEDULE), None);
}

#[test]
fn tracer_logs_begin_step_end_with_the_origin() {
    use qtrace::queues::{Fixed, FixedParams};
    let dir = tempfile::tempdir().unwrap();
    let tracer = qtrace::Tracer::with_config(qtrace::Config::default().with_output_dir(dir.path()));
    tracer.define_classes(&CATALOG).unwrap();
    let q = tracer
        .create_queue::<Fixed>(FixedParams::default().with_capacity(16))
        .unwrap();
    tracer.assign_class(net::CLASS, q).unwrap();
    tracer.activate().unwrap();
    let f = std::thread::scope(|s| {
        s.spawn(|| {
            qtrace::source::set_current(7);
            tracer.flow_begin(net::PACKET, 42)
        })
        .join()
        .unwrap()
    });
    assert_eq!(f, FlowId::new(7, 42));
    qtrace::source::set_current(3);
    tracer.flow_step(net::PACKET, f);
    tracer.flow_end(net::PACKET, f);
    let report = tracer.shutdown().unwrap();
    let path = &report.queues[q.index()].status.files[0];
    let got: Vec<(u16, u32, [u64; 2])> = qtrace::reader::TraceReader::open(path)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.id.0 >= 0x17)
        .map(|e| (e.id.0, e.source, e.args))
        .collect();
    assert_eq!(
        got,
        [(0x17, 7, [42, 7]), (0x18, 3, [42, 7]), (0x19, 3, [42, 7])]
    );
}

#[test]
fn perfetto_links_each_instance_in_the_flow_table() {
    let file = tempfile::NamedTempFile::new().unwrap();
    let w = PerfettoWriter::new(&catalog(), 0, file.reopen().unwrap()).unwrap();
    let stats = export::convert(w, flow_trace()).unwrap();
    assert_eq!((stats.events, stats.unpaired), (7, 1)); // the second end
    let path = file.into_temp_path();
    let Some(got) = decode(&path, false) else {
        return;
    };
    // [flow id, out time, out track, out name, in time, in track, in name]:
    // instance 1 is (origin 0, id 5), instance 2 (origin 1, id 5); the call
    // (instance 3) has one event, so no link.
    assert_eq!(
        got["flows"],
        json!([
            [
                1,
                1000,
                "source 0",
                "packet.flow_begin",
                1200,
                "source 2",
                "packet.flow_step"
            ],
            [
                1,
                1200,
                "source 2",
                "packet.flow_step",
                1300,
                "source 1",
                "packet.flow_end"
            ],
            [
                2,
                1100,
                "source 1",
                "packet.flow_begin",
                1400,
                "source 0",
                "packet.flow_end"
            ],
        ])
    );
    // Every flow record is still its instant.
    assert_eq!(got["instant_total"], 7);
}

#[test]
fn chrome_writes_s_t_f_events_after_the_instants() {
    let mut out = Vec::new();
    let w = ChromeWriter::new(&catalog(), 0, &mut out).unwrap();
    let stats = export::convert(w, flow_trace()).unwrap();
    assert_eq!(stats.unpaired, 1); // the second end
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("\"cat\":\"flow\""))
        .map(|l| l.trim_end_matches(','))
        .collect();
    assert_eq!(
        lines,
        [
            r#"{"ph":"s","name":"net:packet","cat":"flow","id":1,"ts":1.000,"pid":1,"tid":0}"#,
            r#"{"ph":"s","name":"net:packet","cat":"flow","id":2,"ts":1.100,"pid":1,"tid":1}"#,
            r#"{"ph":"t","name":"net:packet","cat":"flow","id":1,"ts":1.200,"pid":1,"tid":2}"#,
            r#"{"ph":"f","name":"net:packet","cat":"flow","id":1,"ts":1.300,"pid":1,"tid":1,"bp":"e"}"#,
            r#"{"ph":"f","name":"net:packet","cat":"flow","id":2,"ts":1.400,"pid":1,"tid":0,"bp":"e"}"#,
            r#"{"ph":"s","name":"net:call","cat":"flow","id":3,"ts":1.600,"pid":1,"tid":2}"#,
        ]
    );
    // The document parses; each flow record is also its instant, with its
    // id and origin.
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    let instants: Vec<_> = events.iter().filter(|e| e["ph"] == "i").collect();
    assert_eq!(instants.len(), 7);
    assert_eq!(instants[2]["args"], json!({"flow": 5, "origin": 0}));
}

/// Two CPUs: a semaphore signal releases a blocked task, interrupts
/// activate tasks (one scheduled, one never, one with a loss between), and
/// a wait that did not block is released by nobody.
pub(crate) fn wake_trace() -> Vec<Event> {
    use qtrace::classes::{lowlevel, semaphore, system, tracer};
    vec![
        Event::new(0, system::SCHEDULE, 0, [1, 0]),
        Event::new(100, semaphore::WAIT, 0, [1, 7]), // task 1 waits on sem 7...
        Event::new(150, system::SCHEDULE, 0, [2, 0]), // ...and blocks
        Event::new(200, system::SCHEDULE, 1, [3, 0]),
        Event::new(300, semaphore::SIGNAL, 1, [3, 7]), // releases task 1
        Event::new(450, system::SCHEDULE, 0, [1, 0]),  // 150 ns later
        Event::new(500, system::ENDCYCLE, 1, [3, 0]),
        Event::new(1_000, lowlevel::INTERRUPT, 1, [9, 0]),
        Event::new(1_050, system::ACTIVATE, 1, [3, 0]), // woken by irq 9
        Event::new(1_300, system::SCHEDULE, 1, [3, 0]), // 300 ns after the irq
        Event::new(1_400, semaphore::WAIT, 0, [1, 8]),  // does not block
        Event::new(1_500, semaphore::SIGNAL, 1, [3, 8]), // releases no one
        Event::new(1_600, semaphore::SIGNAL, 0, [1, 8]),
        Event::new(1_700, lowlevel::INTERRUPT, 0, [9, 0]),
        Event::new(1_750, system::ACTIVATE, 0, [4, 0]), // never scheduled
        Event::new(1_800, lowlevel::INTERRUPT, 1, [5, 0]),
        Event::new(1_810, system::ACTIVATE, 1, [2, 0]), // woken by irq 5
        Event::new(1_850, tracer::HOOPS, 1, [2, 0]),
        Event::new(1_900, system::SCHEDULE, 1, [2, 0]), // a loss between
    ]
}

#[test]
fn analyze_derives_wake_flows_and_latency_per_task() {
    use qtrace::analysis::{AnalysisOptions, Analyzer};
    use qtrace::analysis::{WakeCause, WakeFlow};
    let mut a = Analyzer::new(
        &qtrace::classes::Catalog::builtin(),
        AnalysisOptions::default(),
    );
    for e in wake_trace() {
        a.push(&e);
    }
    let r = a.finish();
    let flow = |task, cause, from_ns, from_source, to_ns, to_source, lossy| WakeFlow {
        task,
        cause,
        from_ns,
        from_source,
        to_ns,
        to_source,
        lossy,
    };
    assert_eq!(
        r.wake_flows,
        [
            flow(
                1,
                WakeCause::Signal { sem: 7, by: 3 },
                300,
                1,
                450,
                0,
                false
            ),
            flow(
                3,
                WakeCause::Interrupt { irq: 9 },
                1_000,
                1,
                1_300,
                1,
                false
            ),
            flow(2, WakeCause::Interrupt { irq: 5 }, 1_800, 1, 1_900, 1, true),
        ]
    );
    assert_eq!(r.wake_flows_over, 0);
    let per_task: Vec<_> = r
        .tasks
        .iter()
        .map(|(&id, t)| {
            let s = t.wakeups.summary();
            (
                id,
                t.woken_by_signal,
                t.woken_by_irq,
                t.wakeups_unscheduled,
                t.wakeups_lossy,
                s.count,
                s.max,
            )
        })
        .collect();
    assert_eq!(
        per_task,
        [
            (1, 1, 0, 0, 0, 1, 150),
            (2, 0, 1, 0, 1, 0, 0),
            (3, 0, 1, 0, 0, 1, 300),
            (4, 0, 1, 1, 0, 0, 0),
        ]
    );
}

/// CTF: flow and counter records are events with plain fields, named by
/// their argument names (`flow`, `origin`; the kind and unit of a counter),
/// as babeltrace2 reads them.
#[test]
fn ctf_shows_flow_and_counter_records_as_plain_fields() {
    use crate::common::babeltrace2::babeltrace2_text;
    use qtrace::classes::ClassSpec;
    use qtrace::export::ctf::CtfWriter;
    use qtrace::export::EventSink;
    use qtrace::macros::CounterKind;
    let mut catalog = catalog();
    let sched = catalog
        .define(ClassSpec::new("sched", "the scheduler").counter(
            "ready",
            "tasks ready",
            CounterKind::U64,
            "tasks",
        ))
        .unwrap();
    let ready = sched.event("ready.counter").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut w = CtfWriter::create(dir.path(), &catalog, 0).unwrap();
    for e in [
        Event::new(1_000, net::PACKET.begin(), 0, FlowId::new(0, 5).args()),
        Event::new(1_300, net::PACKET.end(), 1, FlowId::new(0, 5).args()),
        Event::new(1_400, ready, 1, [3, 0]),
    ] {
        w.push(&e).unwrap();
    }
    let stats = w.finish().unwrap();
    assert_eq!(stats.events, 3);
    let Some(out) = babeltrace2_text(dir.path()) else {
        return;
    };
    let text = String::from_utf8(out.stdout).unwrap();
    // Each line: `[time] (+delta) name: { cpu_id = N }, { fields }`.
    let fields: Vec<&str> = text
        .lines()
        .map(|l| &l[l.find(") ").unwrap() + 2..])
        .collect();
    assert_eq!(
        fields,
        [
            "net:packet.flow_begin: { source = 0 }, { flow = 5, origin = 0 }",
            "net:packet.flow_end: { source = 1 }, { flow = 5, origin = 0 }",
            "sched:ready.counter: { source = 1 }, { u64 = 3, tasks = 0 }",
        ],
        "{text}"
    );
}

/// The wake-up flows of [`wake_trace`] as the exports number them: 2^52 + k,
/// k in the order of the wakes (the signal at 300, the activates at 1 050,
/// 1 750 and 1 810).
const WAKE: u64 = 1 << 52;

#[test]
fn perfetto_draws_the_derived_wake_flows_in_the_flow_table() {
    let file = tempfile::NamedTempFile::new().unwrap();
    let w = PerfettoWriter::new(
        &qtrace::classes::Catalog::builtin(),
        0,
        file.reopen().unwrap(),
    )
    .unwrap();
    let stats = export::convert(w, wake_trace()).unwrap();
    assert_eq!(stats.events, 18);
    let path = file.into_temp_path();
    let Some(got) = decode(&path, false) else {
        return;
    };
    // [flow id, out time, out track, out name, in time, in track, in name]:
    // from the signal's instant, or the activate its handler logged, to the
    // woken task's `task N` slice on the source it was scheduled on. Task 4
    // (flow 3) is never scheduled: its flow has one event, so no link. The
    // lossy wake of task 2 is drawn too (analyze leaves only its latency
    // out).
    assert_eq!(
        got["flows"],
        json!([
            [
                WAKE + 1,
                300,
                "source 1",
                "signal",
                450,
                "source 0",
                "task 1"
            ],
            [
                WAKE + 2,
                1050,
                "source 1",
                "activate",
                1300,
                "source 1",
                "task 3"
            ],
            [
                WAKE + 4,
                1810,
                "source 1",
                "activate",
                1900,
                "source 1",
                "task 2"
            ],
        ])
    );
    // No event is written twice for it: every record is still an instant or
    // the slice edge it was (18 events and the hoops record).
    assert_eq!(got["event_total"], 19);
}

/// A signal that closes the signaller's own `sem S` slice is that slice's
/// end on the `task T sem S` track: the flow starts there.
#[test]
fn perfetto_starts_a_wake_flow_on_the_signal_that_ends_a_held_slice() {
    use qtrace::classes::{semaphore, system};
    let events = vec![
        Event::new(0, system::SCHEDULE, 0, [1, 0]),
        Event::new(10, semaphore::WAIT, 0, [1, 7]), // task 1 holds sem 7
        Event::new(20, system::SCHEDULE, 1, [2, 0]),
        Event::new(30, semaphore::WAIT, 1, [2, 7]), // task 2 waits...
        Event::new(40, system::SCHEDULE, 1, [3, 0]), // ...and blocks
        Event::new(50, semaphore::SIGNAL, 0, [1, 7]), // task 1 releases it
        Event::new(90, system::SCHEDULE, 1, [2, 0]),
    ];
    let file = tempfile::NamedTempFile::new().unwrap();
    let w = PerfettoWriter::new(
        &qtrace::classes::Catalog::builtin(),
        0,
        file.reopen().unwrap(),
    )
    .unwrap();
    export::convert(w, events).unwrap();
    let path = file.into_temp_path();
    let Some(got) = decode(&path, false) else {
        return;
    };
    // A slice end has no name of its own.
    assert_eq!(
        got["flows"],
        json!([[WAKE + 1, 50, "task 1 sem 7", "", 90, "source 1", "task 2"]])
    );
}

#[test]
fn chrome_writes_wake_flow_events_after_the_instants() {
    let mut out = Vec::new();
    let w = ChromeWriter::new(&qtrace::classes::Catalog::builtin(), 0, &mut out).unwrap();
    export::convert(w, wake_trace()).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<String> = text
        .lines()
        .filter(|l| l.contains("\"cat\":\"wake\""))
        .map(|l| l.trim_end_matches(',').to_string())
        .collect();
    let ev = |ph: &str, k: u64, ts: &str, tid: u32| {
        let bp = if ph == "f" { ",\"bp\":\"e\"" } else { "" };
        format!(
            r#"{{"ph":"{ph}","name":"wake","cat":"wake","id":{},"ts":{ts},"pid":1,"tid":{tid}{bp}}}"#,
            WAKE + k
        )
    };
    assert_eq!(
        lines,
        [
            ev("s", 1, "0.300", 1),
            ev("f", 1, "0.450", 0),
            ev("s", 2, "1.050", 1),
            ev("f", 2, "1.300", 1),
            ev("s", 3, "1.750", 0),
            ev("s", 4, "1.810", 1),
            ev("f", 4, "1.900", 1),
        ]
    );
    // Each flow event follows its event's instant, and the document parses.
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    let i = events.iter().position(|e| e["cat"] == "wake").unwrap();
    assert_eq!(
        (events[i - 1]["name"].as_str(), events[i - 1]["ts"].as_f64()),
        (Some("signal"), Some(0.3))
    );
}

/// The flows the exports draw are `analyze`'s: same begins and ends.
#[test]
fn exported_wake_flows_are_the_analysis_flows() {
    use qtrace::analysis::{AnalysisOptions, Analyzer};
    let mut a = Analyzer::new(
        &qtrace::classes::Catalog::builtin(),
        AnalysisOptions::default(),
    );
    for e in wake_trace() {
        a.push(&e);
    }
    let ends: Vec<(u64, u32)> = a
        .finish()
        .wake_flows
        .iter()
        .map(|f| (f.to_ns, f.to_source))
        .collect();
    let mut out = Vec::new();
    let w = ChromeWriter::new(&qtrace::classes::Catalog::builtin(), 0, &mut out).unwrap();
    export::convert(w, wake_trace()).unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let got: Vec<(u64, u32)> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "wake" && e["ph"] == "f")
        .map(|e| {
            let ns = (e["ts"].as_f64().unwrap() * 1000.0).round() as u64;
            (ns, e["tid"].as_u64().unwrap() as u32)
        })
        .collect();
    assert_eq!(got, ends);
}
