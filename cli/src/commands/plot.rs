//! `qtrace plot`: a self-contained SVG timeline (a row per source and per
//! task), a thin client of `qtrace::export::svg`.

use std::io::BufWriter;
use std::path::PathBuf;

use clap::Args;
use qtrace::export::svg::{SvgOptions, SvgTimeline};
use qtrace::export::EventSink;
use qtrace::reader::Completeness;

use crate::spine::format::{fmt_time, parse_time_arg, TimeArg};
use crate::spine::io::{ends, open_merged, read_merged, report_and_status, Reading};
use crate::spine::staged::Staged;
use crate::spine::Exit;

/// Arguments of `qtrace plot`.
#[derive(Args, Debug)]
pub struct PlotArgs {
    /// Trace files of one run; merged in time order.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The SVG file to write (open it in a browser).
    #[arg(long, short)]
    pub out: PathBuf,
    /// Draw from this time since the clock origin.
    ///
    /// Draw from this time since the clock origin (default: the first
    /// event): `1500`, `1500ns`, `20us`, `3ms`, `1.5s`, as `dump --from`.
    #[arg(long, value_name = "TIME", value_parser = parse_time_arg)]
    pub from: Option<TimeArg>,
    /// Draw up to this time (default: the last event).
    #[arg(long, value_name = "TIME", value_parser = parse_time_arg)]
    pub to: Option<TimeArg>,
    /// Width of the time area in pixels.
    #[arg(long, default_value_t = 1600)]
    pub width: u32,
}

/// Runs `qtrace plot`: one pass for the time range (unless given), one to draw.
pub fn run(args: PlotArgs) -> Exit {
    match plot(&args) {
        Ok((stats, (clean, ends))) => {
            eprintln!(
                "qtrace plot: {} events ({} lost) from {} sources into {}",
                stats.events,
                stats.lost,
                stats.sources,
                args.out.display()
            );
            report_and_status("qtrace plot", &args.files, clean, &ends)
        }
        Err((msg, status)) => {
            eprintln!("qtrace plot: {msg}");
            status
        }
    }
}

/// What went wrong, and the exit status it gives.
type Failure = (String, Exit);

/// Whether every input was read to its end, and each input's completeness.
type ReadEnds = (Reading, Vec<Option<Completeness>>);

fn plot(args: &PlotArgs) -> Result<(qtrace::export::ConvertStats, ReadEnds), Failure> {
    let bad_input = |e: qtrace::reader::ReadError| (e.to_string(), Exit::BadInput);
    // The first and last event times, read in a first pass (only when a
    // bound is not given, or to say where the events are).
    let span = || -> Result<Option<(u64, u64)>, Failure> {
        let (mut first, mut last) = (u64::MAX, 0u64);
        let mut merged = open_merged(&args.files).map_err(bad_input)?;
        read_merged(&mut merged, |_, e| {
            first = first.min(e.time);
            last = last.max(e.time);
            Ok(())
        })
        .map_err(|e| (e.to_string(), Exit::BadInput))?;
        Ok((first != u64::MAX).then_some((first, last)))
    };
    let known = match (&args.from, &args.to) {
        (Some(_), Some(_)) => None,
        _ => span()?,
    };
    let (first, last) = known.unwrap_or((0, 0));
    let range = (
        args.from.as_ref().map_or(first, |t| t.ns),
        args.to.as_ref().map_or(last, |t| t.ns),
    );
    if range.1 < range.0 {
        let msg = match (&args.from, &args.to) {
            (Some(f), Some(t)) => format!(
                "--to {} is before --from {}: give a later --to",
                t.text, f.text
            ),
            (Some(f), None) => format!(
                "--from {} is after the last event (at {} s): give an earlier --from",
                f.text,
                fmt_time(u128::from(last))
            ),
            (None, Some(t)) => format!(
                "--to {} is before the first event (at {} s): give a later --to",
                t.text,
                fmt_time(u128::from(first))
            ),
            (None, None) => "the trace's times go back".to_string(),
        };
        return Err((msg, Exit::BadInput));
    }
    let mut merged = open_merged(&args.files).map_err(bad_input)?;
    // Written beside and renamed once whole.
    let mut staged = Staged::new();
    let file = staged
        .create(&args.out)
        .map_err(|e| (e.to_string(), Exit::Failed))?;
    let options = SvgOptions {
        width_px: args.width,
        ..SvgOptions::default()
    };
    let mut timeline = SvgTimeline::new(BufWriter::new(file), range, options);
    // Counter lanes when the files name their events alike (one tracer's).
    {
        let mut catalogs = merged.readers().map(|r| r.catalog());
        if let Some(first) = catalogs.next() {
            if catalogs.all(|c| c == first) {
                timeline = timeline.with_counters(first);
            }
        }
    }
    let mut failure = None;
    let clean = read_merged(&mut merged, |_, e| {
        if e.time > range.1 && failure.is_none() {
            return Ok(());
        }
        if let Err(err) = timeline.push(e) {
            failure.get_or_insert(err);
        }
        Ok(())
    })
    .map_err(|e| (e.to_string(), Exit::Failed))?;
    if let Some(err) = failure {
        return Err((err.to_string(), Exit::Failed));
    }
    let stats = timeline
        .finish()
        .map_err(|e| (e.to_string(), Exit::Failed))?;
    if stats.events == 0 && stats.hoops == 0 {
        // Nothing to draw: no picture (the staged file is removed).
        let window = |t: &Option<TimeArg>, or: &str| {
            t.as_ref()
                .map_or_else(|| or.to_string(), |t| t.text.clone())
        };
        let place = match span()? {
            Some((a, b)) => format!(
                "the events lie between {} s and {} s",
                fmt_time(u128::from(a)),
                fmt_time(u128::from(b))
            ),
            None => "the trace holds no events".to_string(),
        };
        return Err((
            format!(
                "no events between {} and {}: {place}; choose --from/--to inside it",
                window(&args.from, "the first event"),
                window(&args.to, "the last event")
            ),
            Exit::BadInput,
        ));
    }
    staged.commit().map_err(|e| (e.to_string(), Exit::Failed))?;
    Ok((stats, (clean, ends(&merged))))
}
