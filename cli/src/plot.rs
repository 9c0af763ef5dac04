//! `qtrace plot`: a self-contained SVG timeline (a row per source and per
//! task), a thin client of `qtrace::export::svg`.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use qtrace::export::svg::{SvgOptions, SvgTimeline};
use qtrace::export::EventSink;
use qtrace::Error;

use crate::dump::{merge, open_all, parse_time};

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
pub fn run(args: PlotArgs) -> ExitCode {
    match plot(&args) {
        Ok((stats, (clean, ends))) => {
            eprintln!(
                "qtrace plot: {} events ({} lost) from {} sources into {}",
                stats.events,
                stats.lost,
                stats.sources,
                args.out.display()
            );
            crate::dump::report_and_status("qtrace plot", &args.files, clean, &ends)
        }
        Err((msg, code)) => {
            eprintln!("qtrace plot: {msg}");
            ExitCode::from(code)
        }
    }
}

type Failure = (String, u8);

/// Whether every input was read to its end, and each input's completeness.
type ReadEnds = (bool, Vec<Option<crate::dump::FileEnd>>);

fn plot(args: &PlotArgs) -> Result<(qtrace::export::ConvertStats, ReadEnds), Failure> {
    let bad_input = |e: String| (e, 2);
    let (mut first, mut last) = (u64::MAX, 0u64);
    if args.from.is_none() || args.to.is_none() {
        let inputs = open_all(&args.files).map_err(bad_input)?;
        merge(inputs, |_, e| {
            first = first.min(e.time);
            last = last.max(e.time);
            Ok(())
        })
        .map_err(|e| (e.to_string(), 2))?;
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
            2,
        ));
    }
    let inputs = open_all(&args.files).map_err(bad_input)?;
    let file =
        File::create(&args.out).map_err(|e| (Error::io("create", &args.out, e).to_string(), 1))?;
    let options = SvgOptions {
        width_px: args.width,
        ..SvgOptions::default()
    };
    let mut timeline = SvgTimeline::new(BufWriter::new(file), range, options);
    let mut failure = None;
    let clean = merge(inputs, |_, e| {
        if e.time > range.1 && failure.is_none() {
            return Ok(());
        }
        if let Err(err) = timeline.push(e) {
            failure.get_or_insert(err);
        }
        Ok(())
    })
    .map_err(|e| (e.to_string(), 1))?;
    if let Some(err) = failure {
        return Err((err.to_string(), 1));
    }
    let stats = timeline.finish().map_err(|e| (e.to_string(), 1))?;
    Ok((stats, clean))
}
