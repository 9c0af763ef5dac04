//! How readers show counters (FORMAT.md 1.3.2): declared by `classes!`,
//! logged by `Tracer::log_counter`, written as Chrome `C` events and
//! summarised by `analyze`. (Perfetto: `perfetto_export.rs`,
//! `counters_are_tracks_per_source_and_counter`.)

use qtrace::export::chrome::ChromeWriter;
use qtrace::export::{self};
use qtrace::Event;

qtrace::classes! {
    static CATALOG;
    mod sched: "the scheduler" {
        counter READY = "ready": "tasks ready to run" (u64, tasks);
        counter LOAD = "load": "the load average" (f64);
        counter SLACK = "slack": "budget left" (i64, us);
    }
}

fn catalog() -> qtrace::classes::Catalog {
    let mut c = qtrace::classes::Catalog::builtin();
    c.define_static(&CATALOG).unwrap();
    c
}

/// Two sources; each counter kind; values past 2^53, negative, NaN.
fn counter_trace() -> Vec<Event> {
    let ev = |t, c: qtrace::EventId, s, v: u64| Event::new(t, c, s, [v, 0]);
    vec![
        ev(1_000, sched::READY.id(), 0, sched::READY.args(2)[0]),
        ev(1_500, sched::READY.id(), 1, 5),
        ev(2_000, sched::LOAD.id(), 0, sched::LOAD.args(0.25)[0]),
        ev(2_500, sched::READY.id(), 0, 1),
        ev(3_000, sched::SLACK.id(), 1, sched::SLACK.args(-40)[0]),
        ev(3_500, sched::LOAD.id(), 0, f64::NAN.to_bits()),
        ev(4_000, sched::READY.id(), 0, u64::MAX),
    ]
}

#[test]
fn classes_declares_counters_with_kind_and_unit() {
    use qtrace::macros::CounterKind;
    let c = catalog();
    assert_eq!(c.event_name(sched::READY.id()), Some("ready.counter"));
    assert_eq!(c.event(sched::READY.id()).unwrap().args, ["u64", "tasks"]);
    assert_eq!(c.event(sched::LOAD.id()).unwrap().args, ["f64"]);
    assert_eq!(
        c.counter_of(sched::READY.id()),
        Some((CounterKind::U64, "tasks"))
    );
    assert_eq!(c.counter_of(sched::LOAD.id()), Some((CounterKind::F64, "")));
    assert_eq!(
        c.counter_of(sched::SLACK.id()),
        Some((CounterKind::I64, "us"))
    );
    assert_eq!(c.counter::<u64>("sched:ready"), Some(sched::READY));
    assert_eq!(c.counter::<i64>("sched:ready"), None);
    assert_eq!(c.counter::<u64>("sched:nope"), None);
    assert_eq!(sched::SLACK.args(-40), [(-40i64) as u64, 0]);
}

#[test]
fn chrome_writes_a_c_event_per_counter_record() {
    let mut out = Vec::new();
    let w = ChromeWriter::new(&catalog(), 0, &mut out).unwrap();
    let stats = export::convert(w, counter_trace()).unwrap();
    assert_eq!(stats.events, 7);
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("\"ph\":\"C\""))
        .map(|l| l.trim_end_matches(','))
        .collect();
    assert_eq!(
        lines,
        [
            r#"{"ph":"C","name":"sched:ready","cat":"counter","id":"0","ts":1.000,"pid":1,"tid":0,"args":{"tasks":2}}"#,
            r#"{"ph":"C","name":"sched:ready","cat":"counter","id":"1","ts":1.500,"pid":1,"tid":1,"args":{"tasks":5}}"#,
            r#"{"ph":"C","name":"sched:load","cat":"counter","id":"0","ts":2.000,"pid":1,"tid":0,"args":{"value":0.25}}"#,
            r#"{"ph":"C","name":"sched:ready","cat":"counter","id":"0","ts":2.500,"pid":1,"tid":0,"args":{"tasks":1}}"#,
            r#"{"ph":"C","name":"sched:slack","cat":"counter","id":"1","ts":3.000,"pid":1,"tid":1,"args":{"us":-40}}"#,
            r#"{"ph":"C","name":"sched:load","cat":"counter","id":"0","ts":3.500,"pid":1,"tid":0,"args":{"value":"NaN"}}"#,
            r#"{"ph":"C","name":"sched:ready","cat":"counter","id":"0","ts":4.000,"pid":1,"tid":0,"args":{"tasks":18446744073709551615}}"#,
        ]
    );
    // The document parses, and counter records are not also instants.
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    assert_eq!(events.iter().filter(|e| e["ph"] == "i").count(), 0);
    assert_eq!(events.iter().filter(|e| e["ph"] == "C").count(), 7);
}

#[test]
fn analyze_gives_min_mean_max_per_counter() {
    use qtrace::analysis::{AnalysisOptions, Analyzer};
    use qtrace_core::classes::counter::CounterStats;
    let mut a = Analyzer::new(&catalog(), AnalysisOptions::default());
    for e in counter_trace() {
        a.push(&e);
    }
    let r = a.finish();
    assert_eq!(r.events, 7);
    let names: Vec<&str> = r.counters.keys().map(String::as_str).collect();
    assert_eq!(names, ["sched:load", "sched:ready", "sched:slack"]);
    // Every source together: 2, 5, 1, 2^64 - 1.
    let ready = r.counters["sched:ready"];
    let max = u64::MAX as f64;
    assert_eq!(
        ready,
        CounterStats {
            count: 4,
            nan: 0,
            min: 1.0,
            max,
            sum: 8.0 + max
        }
    );
    assert_eq!(ready.mean(), Some((8.0 + max) / 4.0));
    let load = r.counters["sched:load"];
    assert_eq!(
        (load.count, load.nan, load.min, load.max),
        (1, 1, 0.25, 0.25)
    );
    let slack = r.counters["sched:slack"];
    assert_eq!(
        (slack.count, slack.min, slack.mean()),
        (1, -40.0, Some(-40.0))
    );
}
