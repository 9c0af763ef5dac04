//! The macro front end: classes, events and scopes declared once with
//! `qtrace::classes!` (checked at compile time), logged with `qtrace::event!`
//! and `qtrace::scope!` at the cost of `Tracer::log_event`, saved to a file
//! and read back as nested slices by `analyze`.
//!
//! ```text
//! cargo run --example macros --features analysis [OUTPUT_DIR]
//! ```

use std::path::PathBuf;

use qtrace::analysis::{AnalysisOptions, Analyzer};
use qtrace::global::Global;
use qtrace::queues::{Fixed, FixedParams};
use qtrace::reader::TraceReader;
use qtrace::{global, Config, Tracer};

qtrace::classes! {
    /// Every class of this program.
    pub static CATALOG;

    /// A small web server.
    pub mod http: "a small web server" {
        /// A connection was accepted.
        event ACCEPT = "accept": "a connection was accepted" (conn, port);
        /// One request, from parsing to the reply.
        scope REQUEST = "request": "one request served" (conn);
        /// Parsing a request.
        scope PARSE = "parse": "parsing a request" (bytes);
    }

    /// The storage below it.
    pub mod store: "key-value storage" {
        /// A key was read.
        event GET = "get": "a key was read" (key);
        /// A write-ahead log flush.
        scope FLUSH = "flush": "a log flush" ();
    }
}

fn serve(conn: u64) -> u64 {
    // Deep in the program: the process-wide tracer, no handle passed.
    let mut request = qtrace::scope!(Global, http::REQUEST, conn);
    {
        let _parse = qtrace::scope!(Global, http::PARSE, 200 + conn);
        std::hint::black_box(conn * 3);
    }
    qtrace::event!(Global, store::GET, conn % 4);
    if conn % 3 == 0 {
        let _flush = qtrace::scope!(Global, store::FLUSH);
        std::hint::black_box(conn);
    }
    let status = if conn % 5 == 0 { 404 } else { 200 };
    if status != 200 {
        request.set_code(status);
    }
    status
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("qtrace-macros"));
    std::fs::create_dir_all(&dir)?;
    let file = dir.join("macros.qtr");

    let tracer = Tracer::with_config(Config::default().with_output_dir(&dir));
    tracer.define_classes(&CATALOG)?;
    let q = tracer.create_queue::<Fixed>(FixedParams::default().with_file(file.clone()))?;
    tracer.assign_class(http::CLASS, q)?;
    tracer.assign_class(store::CLASS, q)?;
    tracer.activate()?;
    let tracer = global::install(tracer)?;

    for conn in 1..=20u64 {
        qtrace::event!(tracer, http::ACCEPT, conn, 8080);
        serve(conn);
    }
    let report = tracer.shutdown()?;
    println!(
        "logged {} events into {}",
        report.queues[0].counters.accepted,
        file.display()
    );

    let reader = TraceReader::open(&file)?;
    let catalog = reader.catalog().clone();
    let mut analyzer = Analyzer::new(&catalog, AnalysisOptions::default());
    for e in reader {
        analyzer.push(&e?);
    }
    let r = analyzer.finish();
    println!("scopes:");
    for (name, s) in &r.scopes {
        let d = s.durations.summary();
        println!(
            "  {name:<14} {:>3} ended, {:>2} with a non-zero code, mean {} ns",
            s.count, s.nonzero_codes, d.mean
        );
    }
    assert_eq!(r.scopes["http:request"].count, 20);
    assert_eq!(r.scopes["http:request"].nonzero_codes, 4);
    assert_eq!(r.scopes["store:flush"].count, 6);
    println!(
        "read it with: cargo run -p qtrace-cli -- analyze {}",
        file.display()
    );
    Ok(())
}
