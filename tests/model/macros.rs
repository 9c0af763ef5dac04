//! `qtrace::classes!`, `event!` and `scope!`: the ids and tables they
//! declare, the exact records they log, nested scopes timed by a manual
//! clock, the process-wide tracer, and the typed errors of `define_classes`.

use qtrace::classes::{CatalogError, ClassSpec};
use qtrace::clock::{Clock, ManualClock};
use qtrace::queues::{Fixed, FixedParams};
use qtrace::{ClassId, Config, ConfigError, EventId, QueueHandle, Tracer};

qtrace::classes! {
    /// This test's classes.
    pub static CATALOG;

    /// The network stack.
    pub mod net: "network stack" {
        /// A packet arrived.
        event RX = "rx": "a packet was received" (len, port);
        event TX = "tx": "a packet was sent" (len, port);
        event IDLE = "idle": "nothing to do" ();
        scope REQUEST = "request": "one request served" (conn);
    }

    /// The disk.
    pub mod disk: "block device" {
        event READ = "read": "a block was read" (block);
        scope FLUSH = "flush": "a cache flush" ();
    }
}

fn tracer(time: &ManualClock) -> (Tracer, QueueHandle) {
    let tracer = Tracer::with_config(Config::default().with_clock(Clock::manual(time)));
    tracer.define_classes(&CATALOG).unwrap();
    let q = tracer
        .create_queue::<Fixed>(FixedParams {
            capacity: 64,
            ..FixedParams::default()
        })
        .unwrap();
    tracer.assign_class(net::CLASS, q).unwrap();
    tracer.assign_class(disk::CLASS, q).unwrap();
    tracer.activate().unwrap();
    (tracer, q)
}

fn recorded(tracer: &Tracer, q: QueueHandle) -> Vec<(u64, EventId, [u64; 2])> {
    tracer
        .queue(q)
        .unwrap()
        .as_fixed()
        .unwrap()
        .snapshot_events()
        .iter()
        .map(|e| (e.time, e.id, e.args))
        .collect()
}

#[test]
fn ids_are_fixed_at_compile_time() {
    assert_eq!(net::CLASS, ClassId(5));
    assert_eq!(disk::CLASS, ClassId(6));
    assert_eq!(net::RX.id(), EventId(0x17));
    assert_eq!(net::TX.id(), EventId(0x18));
    assert_eq!(net::IDLE.id(), EventId(0x19));
    assert_eq!(net::REQUEST.begin(), EventId(0x1a));
    assert_eq!(net::REQUEST.end(), EventId(0x1b));
    assert_eq!(
        (net::FIRST, net::LAST, net::COUNT),
        (EventId(0x17), EventId(0x1b), 5)
    );
    assert_eq!(disk::READ.id(), EventId(0x1c));
    assert_eq!(disk::FLUSH.begin(), EventId(0x1d));
    assert_eq!(disk::LAST, EventId(0x1e));
    assert_eq!(CATALOG.event_count(), 0x1f);

    let t = Tracer::new();
    t.define_classes(&CATALOG).unwrap();
    let c = t.catalog();
    let names: Vec<_> = (0x17..0x1f)
        .map(|i| {
            let e = c.event(EventId(i)).unwrap();
            (e.class.0, e.name.as_str(), e.args.join(","))
        })
        .collect();
    assert_eq!(
        names,
        [
            (5, "rx", "len,port".to_string()),
            (5, "tx", "len,port".into()),
            (5, "idle", "".into()),
            (5, "request.begin", "conn".into()),
            (5, "request.end", "code".into()),
            (6, "read", "block".into()),
            (6, "flush.begin", "".into()),
            (6, "flush.end", "code".into()),
        ]
    );
    assert_eq!(c.class(net::CLASS).unwrap().description, "network stack");
    // A run-time class still comes after.
    let more = t
        .define_class(ClassSpec::new("late", "run time").event("x", "", &[]))
        .unwrap();
    assert_eq!(more.id, ClassId(7));
    assert_eq!(more.event("x"), Some(EventId(0x1f)));
}

#[test]
fn event_logs_exactly_what_log_event_logs() {
    let time = ManualClock::new(1_000);
    let (t, q) = tracer(&time);
    let (len, port) = (1500u32, 80u16);
    qtrace::event!(t, net::RX, len, port);
    time.advance(10);
    qtrace::event!(&t, net::TX, 40, 443u64,);
    time.advance(10);
    qtrace::event!(t, net::IDLE);
    qtrace::event!(t, disk::READ, -1i64); // cast with `as u64`
    t.log_event(net::RX.id(), [len as u64, port as u64]);
    assert_eq!(
        recorded(&t, q),
        [
            (1_000, EventId(0x17), [1500, 80]),
            (1_010, EventId(0x18), [40, 443]),
            (1_020, EventId(0x19), [0, 0]),
            (1_020, EventId(0x1c), [u64::MAX, 0]),
            (1_020, EventId(0x17), [1500, 80]),
        ]
    );
}

#[test]
fn nested_scopes_log_begin_then_end_with_code() {
    let time = ManualClock::new(0);
    let (t, q) = tracer(&time);
    {
        let _request = qtrace::scope!(t, net::REQUEST, 7);
        time.advance(100);
        {
            let flush = qtrace::scope!(t, disk::FLUSH);
            time.advance(50);
            qtrace::event!(t, disk::READ, 3);
            time.advance(50);
            flush.end_with(5);
        }
        time.advance(100);
        let mut inner = t.scope(net::REQUEST.begin(), net::REQUEST.end(), [8, 0]);
        inner.set_code(2);
        time.advance(1);
    }
    assert_eq!(
        recorded(&t, q),
        [
            (0, net::REQUEST.begin(), [7, 0]),
            (100, disk::FLUSH.begin(), [0, 0]),
            (150, disk::READ.id(), [3, 0]),
            (200, disk::FLUSH.end(), [5, 0]),
            (300, net::REQUEST.begin(), [8, 0]),
            (301, net::REQUEST.end(), [2, 0]), // the inner one drops first
            (301, net::REQUEST.end(), [0, 0]),
        ]
    );
}

#[test]
fn guard_is_small() {
    assert!(std::mem::size_of::<qtrace::scope::ScopeGuard<'static>>() <= 24);
}

#[test]
fn define_classes_is_idempotent_and_typed_when_ids_are_taken() {
    let t = Tracer::new();
    t.define_classes(&CATALOG).unwrap();
    let before = t.catalog();
    t.define_classes(&CATALOG).unwrap();
    assert_eq!(*t.catalog(), *before);

    // A run-time class took id 5 first.
    let t = Tracer::new();
    t.define_class(ClassSpec::new("other", "first").event("x", "", &[]))
        .unwrap();
    match t.define_classes(&CATALOG) {
        Err(ConfigError::Catalog(CatalogError::IdTaken { name, id, taken_by })) => {
            assert_eq!(
                (name.as_str(), id, taken_by.as_str()),
                ("net", ClassId(5), "other")
            );
        }
        other => panic!("{other:?}"),
    }
    // Nothing was added.
    assert_eq!(t.catalog().classes().len(), 6);

    // The same name, defined differently.
    let t = Tracer::new();
    t.define_class(ClassSpec::new("net", "network stack").event("rx", "", &[]))
        .unwrap();
    let err = t.define_classes(&CATALOG).unwrap_err();
    assert!(
        err.to_string().contains("already defined differently"),
        "{err}"
    );

    // After phase 1.
    let t = Tracer::new();
    t.activate().unwrap();
    assert!(matches!(
        t.define_classes(&CATALOG),
        Err(ConfigError::AfterPhase2 { .. })
    ));
}

#[test]
fn global_form_logs_to_the_installed_tracer() {
    use qtrace::global::Global;
    // Before install: no-ops.
    qtrace::event!(Global, net::RX, 1, 2);
    drop(qtrace::scope!(Global, disk::FLUSH));

    let time = ManualClock::new(5);
    let (t, q) = tracer(&time);
    let t = qtrace::global::install(t).unwrap();
    qtrace::event!(Global, net::RX, 1, 2);
    {
        let _f = qtrace::scope!(Global, disk::FLUSH);
        time.advance(9);
    }
    assert_eq!(
        recorded(t, q),
        [
            (5, net::RX.id(), [1, 2]),
            (5, disk::FLUSH.begin(), [0, 0]),
            (14, disk::FLUSH.end(), [0, 0]),
        ]
    );
}

// ----- how readers draw scopes: Chrome, Perfetto, analyze ---------------------

use crate::common::perfetto_decode;

use qtrace::analysis::{AnalysisOptions, Analyzer};
use qtrace::export::chrome::ChromeWriter;
use qtrace::export::perfetto::PerfettoWriter;
use qtrace::export::{self, EventSink};
use qtrace::Event;

fn catalog() -> qtrace::classes::Catalog {
    let mut c = qtrace::classes::Catalog::builtin();
    c.define_static(&CATALOG).unwrap();
    c
}

/// Source 1 nests `disk:flush` in `net:request`; source 2 opens a flush
/// never ended; an end with nothing open; an outer end that closes an inner
/// scope whose end was lost.
fn scope_trace() -> Vec<Event> {
    let (req, flush) = (net::REQUEST, disk::FLUSH);
    vec![
        Event::new(10, req.begin(), 1, [7, 0]),
        Event::new(15, flush.begin(), 2, [0, 0]),
        Event::new(20, flush.begin(), 1, [0, 0]),
        Event::new(30, flush.end(), 1, [5, 0]),
        Event::new(50, req.end(), 1, [0, 0]),
        Event::new(55, flush.end(), 1, [0, 0]), // nothing open: unpaired
        Event::new(70, req.begin(), 1, [8, 0]),
        Event::new(80, flush.begin(), 1, [0, 0]),
        Event::new(90, req.end(), 1, [3, 0]), // ends the flush too
    ]
}

#[test]
fn chrome_draws_nested_scopes_on_the_scopes_process() {
    let mut out = Vec::new();
    let w = ChromeWriter::new(&catalog(), 0, &mut out).unwrap();
    let stats = export::convert(w, scope_trace()).unwrap();
    assert_eq!((stats.slices, stats.unpaired), (5, 1));
    let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let slices: Vec<(String, String, u64, u64, String)> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["pid"] == 3 && (e["ph"] == "B" || e["ph"] == "E"))
        .map(|e| {
            (
                e["ph"].as_str().unwrap().to_string(),
                e["name"].as_str().unwrap().to_string(),
                e["tid"].as_u64().unwrap(),
                (e["ts"].as_f64().unwrap() * 1000.0).round() as u64,
                e["args"].to_string(),
            )
        })
        .collect();
    let s = |ph: &str, name: &str, tid, ts, args: &str| {
        (ph.to_string(), name.to_string(), tid, ts, args.to_string())
    };
    let ended = r#"{"ended":"without its end event"}"#;
    assert_eq!(
        slices,
        [
            s("B", "net:request", 1, 10, r#"{"conn":7}"#),
            s("B", "disk:flush", 2, 15, "{}"),
            s("B", "disk:flush", 1, 20, "{}"),
            s("E", "disk:flush", 1, 30, r#"{"code":5}"#),
            s("E", "net:request", 1, 50, r#"{"code":0}"#),
            s("B", "net:request", 1, 70, r#"{"conn":8}"#),
            s("B", "disk:flush", 1, 80, "{}"),
            s("E", "disk:flush", 1, 90, ended),
            s("E", "net:request", 1, 90, r#"{"code":3}"#),
            s("E", "disk:flush", 2, 90, ended),
        ]
    );
    // The scopes' threads are named, and their process too.
    let names: Vec<String> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "M" && e["pid"] == 3)
        .map(|e| e["args"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["qtrace scopes", "source 1", "source 2"]);
}

#[test]
fn perfetto_draws_nested_scopes_on_a_scopes_track_per_source() {
    let mut out = Vec::new();
    let w = PerfettoWriter::new(&catalog(), 0, &mut out).unwrap();
    let stats = export::convert(w, scope_trace()).unwrap();
    assert_eq!((stats.slices, stats.unpaired), (5, 1));
    let (slices, instants, _) = perfetto_decode::decode_slices(&out);
    // Every scope event keeps its instant (the begin's arguments, the end's code).
    assert_eq!(instants, scope_trace().len());
    let mut tracks: Vec<u64> = slices.iter().map(|s| s.2).collect();
    tracks.dedup();
    let (s1, s2) = (tracks[0], tracks[1]);
    assert_ne!(s1, s2);
    let got: Vec<(u64, u64, &str)> = slices
        .iter()
        .map(|&(t, _, track, ty)| (t, track, if ty == 1 { "B" } else { "E" }))
        .collect();
    assert_eq!(
        got,
        [
            (10, s1, "B"),
            (15, s2, "B"),
            (20, s1, "B"),
            (30, s1, "E"),
            (50, s1, "E"),
            (70, s1, "B"),
            (80, s1, "B"),
            (90, s1, "E"),
            (90, s1, "E"),
            (90, s2, "E"),
        ]
    );
}

#[test]
fn analyze_reports_each_scope() {
    let catalog = catalog();
    let mut a = Analyzer::new(&catalog, AnalysisOptions::default());
    let mut trace = scope_trace();
    // A loss inside the second request: its duration is left out.
    trace.insert(
        7,
        Event::new(75, qtrace::classes::tracer::HOOPS, u32::MAX, [1, 0]),
    );
    for e in &trace {
        a.push(e);
    }
    let r = a.finish();
    let request = &r.scopes["net:request"];
    assert_eq!(
        (
            request.count,
            request.nonzero_codes,
            request.unended,
            request.lossy
        ),
        (2, 1, 0, 1)
    );
    assert_eq!(request.durations.summary().count, 1);
    assert_eq!(request.durations.summary().max, 40);
    let flush = &r.scopes["disk:flush"];
    assert_eq!((flush.count, flush.nonzero_codes, flush.unended), (1, 1, 2));
    assert_eq!(flush.durations.summary().max, 10);
    assert_eq!(r.scopes.len(), 2);
    assert_eq!(r.scope_unpaired, 1);
}

#[test]
fn tracer_scopes_read_back_as_slices() {
    // End to end: what the guard logs is what the exporters pair.
    let time = ManualClock::new(0);
    let (t, q) = tracer(&time);
    {
        let _r = qtrace::scope!(t, net::REQUEST, 1);
        time.advance(5);
        let _f = qtrace::scope!(t, disk::FLUSH);
        time.advance(5);
    }
    let events = t.queue(q).unwrap().as_fixed().unwrap().snapshot_events();
    let mut out = Vec::new();
    let mut w = ChromeWriter::new(&t.catalog(), 0, &mut out).unwrap();
    for e in &events {
        w.push(e).unwrap();
    }
    let stats = w.finish().unwrap();
    assert_eq!((stats.slices, stats.unpaired), (2, 0));
}
