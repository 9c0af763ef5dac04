//! `qtrace plot`: a self-contained SVG timeline (a row per source and per
//! task), a thin client of `qtrace::export::svg`.

use std::io::BufWriter;
use std::path::PathBuf;

use clap::Args;
use qtrace::export::svg::{SvgOptions, SvgTimeline};
use qtrace::export::EventSink;
use qtrace::reader::Completeness;

use crate::spine::format::parse_time;
use crate::spine::io::{ends, open_merged, read_merged, report_and_status};
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
    /// Draw from this time since the clock origin (default: the first event).
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub from: Option<u64>,
    /// Draw up to this time (default: the last event).
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub to: Option<u64>,
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
type ReadEnds = (bool, Vec<Option<Completeness>>);

fn plot(args: &PlotArgs) -> Result<(qtrace::export::ConvertStats, ReadEnds), Failure> {
    let bad_input = |e: qtrace::reader::ReadError| (e.to_string(), Exit::BadInput);
    let (mut first, mut last) = (u64::MAX, 0u64);
    if args.from.is_none() || args.to.is_none() {
        let mut merged = open_merged(&args.files).map_err(bad_input)?;
        read_merged(&mut merged, |_, e| {
            first = first.min(e.time);
            last = last.max(e.time);
            Ok(())
        })
        .map_err(|e| (e.to_string(), Exit::BadInput))?;
    }
    let range = (
        args.from
            .unwrap_or(if first == u64::MAX { 0 } else { first }),
        args.to.unwrap_or(last),
    );
    if range.1 < range.0 {
        return Err((
            format!(
                "--to {} is before --from {}: give a later --to",
                range.1, range.0
            ),
            Exit::BadInput,
        ));
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
    staged.commit().map_err(|e| (e.to_string(), Exit::Failed))?;
    Ok((stats, (clean, ends(&merged))))
}
