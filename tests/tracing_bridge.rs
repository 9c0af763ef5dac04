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
        .create_queue::<Fixed>(FixedParams::default().with_capacity(4096))
        .unwrap();
    let layer = QtraceLayer::new(Arc::clone(&tracer), slots).unwrap();
    tracer.assign_class(layer.class(), q).unwrap();
    tracer.activate().unwrap();
    // The subscriber owns a clone; the test keeps the layer for its count.
    let subscriber = tracing_subscriber::registry().with(layer.clone());
    tracing::subscriber::with_default(subscriber, program);
    let events = tracer
        .queue(q)
        .unwrap()
        .as_fixed()
        .unwrap()
        .snapshot_events();
    (tracer, events, layer.unmapped())
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

/// `n` callsites, each an event of its own target `siteN` with one field
/// `n`; and the line they are on (the callsites' line in their names).
macro_rules! callsites {
    ($($n:literal)*) => {
        ([$((|| tracing::info!(target: concat!("site", stringify!($n)), n = $n as u64)) as fn()),*], line!())
    };
}

/// The exact name of callsite `n` of [`callsites!`] on `line`.
fn site_name(n: u64, line: u32) -> String {
    format!("INFO site{n} event tests/tracing_bridge.rs:{line}: n")
}

/// Reads `path` as a streaming reader does (names learned in order) and
/// checks that every event of the `tracing` class is named, when it is
/// read, by the exact name of its callsite (`args[0]` says which).
/// Returns the number of callsite events read.
fn assert_every_event_named(path: &std::path::Path, line: u32) -> usize {
    let mut reader = qtrace::reader::TraceReader::open(path).unwrap();
    let class = reader.catalog().class_by_name("tracing").unwrap().id;
    let catalog = reader.catalog().clone();
    let mut names = Names::new();
    let mut asm = Assembler::new();
    let mut items = Vec::new();
    let mut checked = 0;
    for e in &mut reader {
        asm.push(e.unwrap(), &mut |i| items.push(i));
        for item in items.drain(..) {
            match item {
                Item::Payload(p) => {
                    assert!(names.learn(&p).is_some(), "only name runs: {p:?}");
                    assert_eq!(p.state, PayloadState::Complete);
                }
                Item::Event(e) if catalog.class_of(e.id) == Some(class) => {
                    assert_eq!(
                        names.event(e.id),
                        Some(site_name(e.args[0], line).as_str()),
                        "{} in {}",
                        e.id.0,
                        path.display()
                    );
                    checked += 1;
                }
                Item::Event(_) => {}
            }
        }
    }
    // The names prologue counts in the close run: the file is whole.
    assert!(
        matches!(
            reader.completeness(),
            Some(qtrace::reader::Completeness::Complete(_))
        ),
        "{:?}",
        reader.completeness()
    );
    checked
}

#[test]
fn a_circular_queue_that_overwrote_the_names_saves_files_that_name_every_callsite() {
    use qtrace::classes::user;
    use qtrace::filters::{Snapshot, Trigger};
    use qtrace::queues::{Circular, CircularParams};
    use qtrace::storage::RingStorage;

    const CAPACITY: usize = 64;
    let dir = std::env::temp_dir().join(format!("qtrace-bridge-ring-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for ring in [RingStorage::Memory, RingStorage::File] {
        let which = format!("{ring:?}");
        let tracer = Arc::new(Tracer::with_config(
            qtrace::Config::default()
                .with_output_dir(&dir)
                .with_save_on_panic(false),
        ));
        let layer = QtraceLayer::new(Arc::clone(&tracer), 64).unwrap();
        let q = tracer
            .create_queue::<Circular>(
                CircularParams::default()
                    .with_capacity(CAPACITY)
                    .with_shards(0)
                    .with_ring(ring),
            )
            .unwrap();
        tracer.assign_class(layer.class(), q).unwrap();
        tracer.assign_class(user::CLASS, q).unwrap();
        let t = tracer
            .add_trigger(user::USER7, Trigger::snapshot(Snapshot::new(q, CAPACITY)))
            .unwrap();
        tracer.activate().unwrap();
        let subscriber = tracing_subscriber::registry().with(layer.clone());
        #[rustfmt::skip]
        let (sites, line) = callsites!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39);
        tracing::subscriber::with_default(subscriber, || {
            // Every callsite's name record (3 or 4 records) and its first
            // event, then 4 more rounds: 40 × 5 events and 40 name runs,
            // far more than the 64 records the queue keeps.
            for _ in 0..5 {
                for site in &sites {
                    site();
                }
            }
        });
        assert_eq!(layer.unmapped(), 0);
        assert_eq!(tracer.recorded_names().len(), 40);
        let circular = tracer.queue(q).unwrap().as_circular().unwrap();
        // The ring holds no name record any more.
        assert!(
            circular
                .snapshot_events()
                .iter()
                .all(|e| e.id != qtrace::combine::NAME_EVENT),
            "{which}"
        );

        // A snapshot, a snapshot on trigger, the shutdown save.
        let snap = dir.join(format!("snap-{which}.qtr"));
        circular.snapshot(&snap).unwrap();
        tracer.log_event(user::USER7, [0, 0]);
        let tq = tracer
            .queue(t)
            .unwrap()
            .as_custom::<qtrace::filters::TriggerQueue>()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while tq.is_pending() {
            assert!(std::time::Instant::now() < deadline, "no snapshot task");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let report = tracer.shutdown().unwrap();
        assert!(report.is_clean(), "{report:?}");
        let files = &report.queues[t.index()].status.files;
        assert_eq!(files.len(), 1, "{report:?}");
        let saved = report.queues[q.index()].status.files.clone();
        for file in [&snap, &files[0], saved.last().unwrap()] {
            // The newest CAPACITY records are the last 64 events of the
            // 40-callsite round robin (the trigger's snapshot ends with
            // USER7, so it has one callsite event less).
            let checked = assert_every_event_named(file, line);
            assert!(
                (CAPACITY - 1..=CAPACITY).contains(&checked),
                "{checked} events in {}",
                file.display()
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn the_layer_is_shared_by_cloning() {
    let out = tempfile::tempdir().unwrap(); // the queue's file at shutdown
    let tracer = Arc::new(Tracer::with_config(
        qtrace::Config::default().with_output_dir(out.path()),
    ));
    let layer = QtraceLayer::new(Arc::clone(&tracer), 1).unwrap();
    let q = tracer
        .create_queue::<Fixed>(
            FixedParams::default().with_ring(qtrace::storage::RingStorage::Memory),
        )
        .unwrap();
    tracer.assign_class(layer.class(), q).unwrap();
    tracer.activate().unwrap();
    let subscriber = tracing_subscriber::registry().with(layer.clone());
    tracing::subscriber::with_default(subscriber, || {
        tracing::info!("kept");
        tracing::info!("no slot");
        tracing::info!("no slot either");
    });
    // The clone the test kept counts what the subscriber's clone saw.
    assert_eq!(layer.unmapped(), 2);
    assert!(format!("{layer:?}").contains("interned: 1"));
    layer.record_names().unwrap();
    tracer.shutdown().unwrap();
    assert!(matches!(
        layer.record_names(),
        Err(qtrace::ConfigError::AfterShutdown { .. })
    ));
}
