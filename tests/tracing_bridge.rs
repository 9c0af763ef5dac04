//! The `tracing` bridge: events, fields and spans of a `tracing`-instrumented
//! program recorded into qtrace, named in the trace and drawn by Chrome JSON.
#![cfg(feature = "tracing")]

use std::sync::Arc;

use qtrace::bridge::QtraceLayer;
use qtrace::combine::{Assembler, Item, Names, PayloadState};
use qtrace::export::{self, chrome::ChromeWriter};
use qtrace::queues::{Fixed, FixedParams};
use qtrace::{Event, Tracer};
use tracing_subscriber::layer::SubscriberExt;

fn traced(slots: u16, program: impl FnOnce()) -> (Arc<Tracer>, Vec<Event>, u64) {
    // A directory of its own: the tests run in parallel, and two live queues
    // cannot share a ring file.
    let dir = std::env::temp_dir().join(format!("qtrace-bridge-{}-{slots}", std::process::id()));
    let tracer = Arc::new(Tracer::with_config(
        qtrace::Config::default().with_output_dir(&dir),
    ));
    let q = tracer
        .create_queue::<Fixed>(FixedParams {
            capacity: 4096,
            ..Default::default()
        })
        .unwrap();
    let layer = QtraceLayer::new(Arc::clone(&tracer), slots).unwrap();
    tracer.assign_class(layer.class(), q).unwrap();
    tracer.activate().unwrap();
    let layer = Arc::new(layer);
    let subscriber = tracing_subscriber::registry().with(ArcLayer(Arc::clone(&layer)));
    tracing::subscriber::with_default(subscriber, program);
    let events = tracer
        .queue(q)
        .unwrap()
        .as_fixed()
        .unwrap()
        .snapshot_events();
    (tracer, events, layer.unmapped())
}

/// A layer shared with the test, to read its counters afterwards.
struct ArcLayer(Arc<QtraceLayer>);

impl<S> tracing_subscriber::Layer<S> for ArcLayer
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_event(&self, e: &tracing::Event<'_>, ctx: tracing_subscriber::layer::Context<'_, S>) {
        self.0.on_event(e, ctx)
    }
    fn on_new_span(
        &self,
        a: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        self.0.on_new_span(a, id, ctx)
    }
    fn on_enter(&self, id: &tracing::span::Id, ctx: tracing_subscriber::layer::Context<'_, S>) {
        self.0.on_enter(id, ctx)
    }
    fn on_exit(&self, id: &tracing::span::Id, ctx: tracing_subscriber::layer::Context<'_, S>) {
        self.0.on_exit(id, ctx)
    }
}

/// Items as readable lines: names resolved.
fn lines(tracer: &Tracer, events: Vec<Event>) -> Vec<String> {
    let catalog = tracer.catalog();
    let mut names = Names::new();
    let mut out = Vec::new();
    let mut asm = Assembler::new();
    let mut items = Vec::new();
    for e in events {
        asm.push(e, &mut |i| items.push(i));
    }
    asm.finish(&mut |i| items.push(i));
    for item in items {
        match item {
            Item::Payload(p) if names.learn(&p).is_some() => {
                out.push(format!("name {}", p.text()));
            }
            Item::Payload(p) => {
                assert_eq!(p.state, PayloadState::Complete);
                out.push(format!(
                    "{} arg={} {:?}",
                    names.event(p.id).unwrap_or("?"),
                    p.arg.unwrap(),
                    p.text()
                ));
            }
            Item::Event(e) => {
                let name = names
                    .event(e.id)
                    .map(str::to_string)
                    .unwrap_or_else(|| catalog.event_name(e.id).unwrap().to_string());
                let arg1 = if name.starts_with("span_") {
                    names
                        .event(qtrace::EventId(e.args[1] as u16))
                        .unwrap()
                        .to_string()
                } else {
                    e.args[1].to_string()
                };
                out.push(format!("{name} {} {arg1}", e.args[0]));
            }
        }
    }
    out
}

#[test]
fn events_fields_and_spans_are_recorded_and_named() {
    let (tracer, events, unmapped) = traced(8, || {
        tracing::info!(target: "app", a = 1u64, b = -2i64, "plain numbers");
        let span = tracing::info_span!(target: "app", "request", id = 7u64, path = "/x");
        {
            let _enter = span.enter();
            tracing::warn!(target: "app", rows = 3u64, ok = true, more = 9u64, table = "users");
        }
    });
    assert_eq!(unmapped, 0);
    let got = lines(&tracer, events.clone());
    let rest: Vec<&str> = got.iter().map(String::as_str).collect();
    // One name per callsite, before its first record; numbers in the
    // arguments (i64 as two's complement), strings as a payload.
    assert_eq!(
        rest[0],
        format!(
            "name INFO app event tests/tracing_bridge.rs:{}: message,a,b",
            line_of("plain numbers")
        )
    );
    assert_eq!(
        rest[1],
        format!(
            "INFO app event tests/tracing_bridge.rs:{}: message,a,b arg=1 \"plain numbers b=18446744073709551614\"",
            line_of("plain numbers")
        )
    );
    assert_eq!(rest[2], "name INFO app request: id,path");
    assert_eq!(rest[3], "INFO app request: id,path arg=7 \"path=/x\"");
    assert_eq!(rest[4], "span_begin 1 INFO app request: id,path");
    assert_eq!(
        rest[5],
        format!(
            "name WARN app event tests/tracing_bridge.rs:{}: rows,ok,more,table",
            line_of("rows = 3u64")
        )
    );
    assert_eq!(
        rest[6],
        format!(
            "WARN app event tests/tracing_bridge.rs:{}: rows,ok,more,table arg=3 \"more=9 table=users ok=1\"",
            line_of("rows = 3u64")
        )
    );
    assert_eq!(rest[7], "span_end 1 INFO app request: id,path");
    assert_eq!(rest.len(), 8, "{got:#?}");

    // Chrome JSON: the span is a slice named after it, the events instants
    // named after their callsites.
    let mut json = Vec::new();
    let catalog = tracer.catalog();
    export::convert(ChromeWriter::new(&catalog, 0, &mut json).unwrap(), events).unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let all = doc["traceEvents"].as_array().unwrap();
    let slices: Vec<(&str, &str)> = all
        .iter()
        .filter(|e| e["ph"] == "B" || e["ph"] == "E")
        .map(|e| (e["ph"].as_str().unwrap(), e["name"].as_str().unwrap()))
        .collect();
    assert_eq!(
        slices,
        [
            ("B", "INFO app request: id,path"),
            ("E", "INFO app request: id,path")
        ]
    );
    let warn = all
        .iter()
        .find(|e| e["ph"] == "i" && e["name"].as_str().unwrap().starts_with("WARN"))
        .unwrap();
    assert_eq!(warn["args"]["text"], "more=9 table=users ok=1");
}

/// The line of this file that contains `needle` (after this function).
fn line_of(needle: &str) -> usize {
    include_str!("tracing_bridge.rs")
        .lines()
        .position(|l| l.contains(needle) && !l.contains("line_of"))
        .unwrap()
        + 1
}

#[test]
fn callsites_beyond_the_slots_are_counted_not_recorded() {
    let (tracer, events, unmapped) = traced(1, || {
        for i in 0..3u64 {
            tracing::info!(i, "first");
            tracing::info!(i, "second");
        }
    });
    assert_eq!(unmapped, 3);
    // The first callsite only: its name and its 3 events (runs: they carry
    // the message).
    let got = lines(&tracer, events);
    assert_eq!(got.len(), 4, "{got:#?}");
    assert!(
        got[0].starts_with("name INFO tracing_bridge event"),
        "{got:#?}"
    );
    assert!(
        got[1..].iter().all(|l| l.ends_with("\"first\"")),
        "{got:#?}"
    );
}
