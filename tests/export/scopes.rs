//! How readers draw scopes (FORMAT.md 1.3.1): Chrome, Perfetto and
//! `analyze` pair `S.begin`/`S.end` into nested slices.

// ----- how readers draw scopes: Chrome, Perfetto, analyze ---------------------

use crate::common::perfetto_decode;
use crate::common::scope_classes::{disk, net, tracer, CATALOG};
use qtrace::clock::ManualClock;

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
            // In file order: each source's sequence together.
            (10, s1, "B"),
            (20, s1, "B"),
            (30, s1, "E"),
            (50, s1, "E"),
            (70, s1, "B"),
            (80, s1, "B"),
            (90, s1, "E"),
            (90, s1, "E"),
            (15, s2, "B"),
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
