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

/// The layer, shared with `main` (which re-records its names).
struct Shared(Arc<QtraceLayer>);

impl<S> tracing_subscriber::Layer<S> for Shared
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

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join("qtrace-tracing-bridge");
    let tracer = Arc::new(Tracer::with_config(Config::default().with_output_dir(&dir)));
    // The layer defines its class first: a queue's files list the classes
    // defined before the queue was created.
    let layer = Arc::new(QtraceLayer::new(Arc::clone(&tracer), 64)?);
    let q = tracer.create_queue::<Circular>(CircularParams::default())?;
    tracer.assign_class(layer.class(), q)?;
    tracer.activate()?;
    tracing::subscriber::set_global_default(
        tracing_subscriber::registry().with(Shared(Arc::clone(&layer))),
    )?;
    tracer.name_thread("main")?;

    let mut total = 0;
    for request in 0..1000u64 {
        total += program::handle(request, if request % 2 == 0 { "/a" } else { "/b" });
    }

    // The queue kept the last 8192 records: name the callsites again so
    // the snapshot names them (their first names were overwritten).
    layer.record_names()?;
    let trace = dir.join("tracing-bridge.qtr");
    let saved = tracer
        .queue(q)?
        .as_circular()
        .expect("circular")
        .snapshot(&trace)?;
    // Two passes: the names (recorded last), then the conversion.
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
        "{total} rows; {saved} records in {}; {} slices in {} (open it in https://ui.perfetto.dev)",
        trace.display(),
        stats.slices,
        json.display()
    );
    tracer.shutdown()?;
    Ok(())
}
