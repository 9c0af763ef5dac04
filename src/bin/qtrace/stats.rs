//! `qtrace stats FILE...`: what a trace holds — events per class and per
//! event, losses, time span.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use qtrace::classes::tracer;

use crate::dump::{fmt_time, open_all, Input};

/// Arguments of `qtrace stats`.
#[derive(Args, Debug)]
pub struct StatsArgs {
    /// Trace files (each is summarised, then the total).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

#[derive(Default)]
struct Totals {
    events: u64,
    hoops: u64,
    lost: u64,
    min: Option<u64>,
    max: Option<u64>,
}

/// Runs `qtrace stats`.
pub fn run(args: StatsArgs) -> ExitCode {
    let inputs = match open_all(&args.files) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("qtrace: {e}");
            return ExitCode::from(2);
        }
    };
    crate::with_stdout(|out| report(inputs, out))
}

/// Writes the summary of every input to `out`; returns the exit status (2
/// when a file is damaged).
fn report(inputs: Vec<Input>, out: &mut dyn Write) -> io::Result<ExitCode> {
    let mut status = ExitCode::SUCCESS;
    let mut grand = Totals::default();
    let files = inputs.len();
    for input in inputs {
        let h = input.reader.header().clone();
        let catalog = h.catalog().clone();
        let mut t = Totals::default();
        let mut per_event: BTreeMap<u16, u64> = BTreeMap::new();
        let mut error = None;
        for e in input.reader {
            let e = match e {
                Ok(e) => e,
                Err(err) => {
                    error = Some(err);
                    break;
                }
            };
            let ns = h.ticks_to_ns(e.time);
            t.min = Some(t.min.map_or(ns, |m| m.min(ns)));
            t.max = Some(t.max.map_or(ns, |m| m.max(ns)));
            if e.id == tracer::HOOPS {
                t.hoops += 1;
                // Counts come from the file: a corrupt one may claim up to
                // u64::MAX per record, so the sum saturates.
                t.lost = t.lost.saturating_add(e.args[0]);
            } else {
                t.events += 1;
                *per_event.entry(e.id.0).or_insert(0) += 1;
            }
        }
        writeln!(out, "{}", input.label)?;
        let queue = h
            .queue()
            .map_or("none".to_string(), |(q, ty)| format!("{q} ({ty})"));
        writeln!(
            out,
            "  format v{}, host {}, pid {}, clock {}, queue {}",
            h.version(),
            h.host(),
            h.process_id(),
            h.clock_kind(),
            queue
        )?;
        writeln!(out, "  events: {}", t.events)?;
        writeln!(
            out,
            "  lost: {} events in {} hoops records",
            t.lost, t.hoops
        )?;
        match (t.min, t.max) {
            (Some(a), Some(b)) => writeln!(
                out,
                "  time span: {} .. {} s ({} s)",
                fmt_time(a as u128),
                fmt_time(b as u128),
                fmt_time((b - a) as u128)
            )?,
            _ => writeln!(out, "  time span: none (no events)")?,
        }
        let mut per_class: BTreeMap<Option<u16>, u64> = BTreeMap::new();
        for (&id, &n) in &per_event {
            let class = catalog.class_of(qtrace::EventId(id)).map(|c| c.0);
            *per_class.entry(class).or_insert(0) += n;
        }
        writeln!(out, "  per class:")?;
        for (class, n) in &per_class {
            let name = class
                .and_then(|c| catalog.class(qtrace::ClassId(c)))
                .map_or("(unknown)", |c| c.name.as_str());
            writeln!(out, "    {name:<24} {n:>12}")?;
        }
        writeln!(out, "  per event:")?;
        for (&id, n) in &per_event {
            let eid = qtrace::EventId(id);
            let name = match (
                catalog.class_of(eid).and_then(|c| catalog.class(c)),
                catalog.event_name(eid),
            ) {
                (Some(c), Some(e)) => format!("{}:{}", c.name, e),
                _ => format!("unknown({eid})"),
            };
            writeln!(out, "    {name:<24} {n:>12}")?;
        }
        if let Some(err) = error {
            eprintln!("qtrace: {err}");
            writeln!(out, "  damaged: {err}")?;
            status = ExitCode::from(2);
        }
        grand.events += t.events;
        grand.hoops += t.hoops;
        grand.lost = grand.lost.saturating_add(t.lost);
    }
    if files > 1 {
        writeln!(
            out,
            "total: {} events, {} lost in {} hoops records, {} files",
            grand.events, grand.lost, grand.hoops, files
        )?;
    }
    Ok(status)
}
