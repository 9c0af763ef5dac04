//! A `tracing`-instrumented program recorded into a circular queue through
//! qtrace's layer, then opened as slices: the queue's snapshot is converted
//! to Chrome JSON (open it in Perfetto's UI or `chrome://tracing`).
//!
//! Run: `cargo run --release --features tracing --example tracing_bridge`

use std::sync::Arc;

use qtrace::bridge::QtraceLayer;
use qtrace::combine::Names;
use qtrace::export::{self, chrome::ChromeWriter};
use qtrace::queues::{Circular, CircularParams};
use qtrace::reader::TraceReader;
use qtrace::{Config, Tracer};
use tracing_subscriber::layer::SubscriberExt;

/// The instrumented program: it knows nothing of qtrace.
mod program {
    #[tracing::instrument]
    pub fn handle(request: u64, path: &str) -> u64 {
        let rows = lookup(request);
        tracing::info!(request, rows, path, "handled");
        rows
    }

    #[tracing::instrument]
    fn lookup(request: u64) -> u64 {
        let rows = request % 7;
        if rows == 0 {
            tracing::warn!(request, "empty result");
        }
        rows
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join("qtrace-tracing-bridge");
    let tracer = Arc::new(Tracer::with_config(Config::default().with_output_dir(&dir)));
    // The layer defines its class first: a queue's files list the classes
    // defined before the queue was created.
    let layer = QtraceLayer::new(Arc::clone(&tracer), 64)?;
    let q = tracer.create_queue::<Circular>(CircularParams::default())?;
    tracer.assign_class(layer.class(), q)?;
    tracer.activate()?;
    // The subscriber owns a clone; `layer` stays here for its counters.
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer.clone()))?;
    tracer.name_thread("main")?;

    let mut total = 0;
    for request in 0..1000u64 {
        total += program::handle(request, if request % 2 == 0 { "/a" } else { "/b" });
    }

    // The queue kept the last 8192 records and overwrote the name records
    // of the callsites; the snapshot still names them: every saved file
    // starts with the names the tracer recorded.
    let trace = dir.join("tracing-bridge.qtr");
    let saved = tracer
        .queue(q)?
        .as_circular()
        .expect("circular")
        .snapshot(&trace)?;
    // Two passes: the names (the file's first records), then the conversion.
    let names = Names::gather(TraceReader::open(&trace)?.filter_map(Result::ok));
    let reader = TraceReader::open(&trace)?;
    let catalog = reader.catalog().clone();
    let origin = reader.header().clock_origin_unix_ns();
    let json = dir.join("tracing-bridge.json");
    let stats = export::convert(
        ChromeWriter::new(&catalog, origin, std::fs::File::create(&json)?)?.with_names(names),
        reader.filter_map(Result::ok),
    )?;
    println!(
        "{total} rows; {} events of callsites beyond the layer's slots",
        layer.unmapped()
    );
    println!(
        "{saved} records in {}; {} slices in {} (open it in https://ui.perfetto.dev)",
        trace.display(),
        stats.slices,
        json.display()
    );
    tracer.shutdown()?;
    Ok(())
}
