//! `qtrace analyze`: what the scheduler did, as text tables or JSON; a thin
//! client of `qtrace::analysis`.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::PathBuf;

use clap::Args;
use qtrace::analysis::{
    AnalysisOptions, Analyzer, LatencySpec, MatchKey, Report, Samples, Summary,
};
use qtrace::classes::Catalog;
use qtrace::EventId;

use crate::spine::format::{json_str, parse_time};
use crate::spine::io::{ends, open_merged, report_and_status, with_stdout};
use crate::spine::pipelined::read_merged_pipelined;
use crate::spine::Exit;

/// Arguments of `qtrace analyze`.
#[derive(Args, Debug)]
pub struct AnalyzeArgs {
    /// Trace files of one run; merged in time order.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Measure the latency from each of these events.
    ///
    /// Also measure the latency from each of these events (`name`,
    /// `class:name` or a number such as 0x03)… (The old spelling `--from`
    /// still works; in `dump` and `plot`, `--from`/`--to` are times.)
    #[arg(
        long = "latency-from",
        alias = "from",
        value_name = "EVENT",
        requires = "latency_to"
    )]
    pub latency_from: Option<String>,
    /// …to the next of these with the same `--by` value (old spelling:
    /// `--to`).
    #[arg(
        long = "latency-to",
        alias = "to",
        value_name = "EVENT",
        requires = "latency_from"
    )]
    pub latency_to: Option<String>,
    /// What a latency's two events share.
    ///
    /// What a latency's two events share: `source`, an argument name of both
    /// (`task`), or `any`. Default: `task` when both events have it, else
    /// `source`.
    #[arg(long, value_name = "KEY")]
    pub by: Option<String>,
    /// Longest interrupt handler.
    ///
    /// Longest interrupt handler (it ends earlier at the next event of the
    /// same source): a handler time equal to it is this cap, not a
    /// measurement (marked `*` in the table).
    #[arg(long, value_name = "TIME", value_parser = parse_time, default_value = "1us")]
    pub irq_max: u64,
    /// One JSON document instead of text tables.
    ///
    /// One JSON document instead of text tables: every field, its unit and
    /// when it is left out (none is ever null) are in docs/command.md,
    /// "analyze --json".
    #[arg(long)]
    pub json: bool,
}

fn find_event(catalog: &Catalog, name: &str) -> Result<EventId, String> {
    let number = match name.strip_prefix("0x").or_else(|| name.strip_prefix("0X")) {
        Some(hex) => u16::from_str_radix(hex, 16).ok(),
        None => name.parse().ok(),
    };
    number
        .map(EventId)
        .or_else(|| catalog.event_by_name(name).map(|e| e.id))
        .ok_or_else(|| {
            if parse_time(name).is_ok() {
                format!("{name:?} is a time, not an event: --latency-from/--latency-to (also spelled --from/--to here) name the latency's two events; `qtrace dump` and `qtrace plot` take times with --from/--to")
            } else {
                format!("no event {name:?} in the trace: `qtrace events` lists the built-in ones, `qtrace stats FILE` a file's")
            }
        })
}

fn latency_spec(catalog: &Catalog, args: &AnalyzeArgs) -> Result<Option<LatencySpec>, String> {
    let (Some(from), Some(to)) = (&args.latency_from, &args.latency_to) else {
        return Ok(None);
    };
    let (from, to) = (find_event(catalog, from)?, find_event(catalog, to)?);
    let arg_slot = |id: EventId, name: &str| {
        catalog
            .event(id)
            .and_then(|e| e.args.iter().position(|a| a == name))
    };
    let key = match args.by.as_deref() {
        Some("source") => MatchKey::Source,
        Some("any") => MatchKey::Any,
        Some(name) => match (arg_slot(from, name), arg_slot(to, name)) {
            (Some(a), Some(b)) if a == b => MatchKey::Arg(a),
            _ => {
                return Err(format!(
                    "--by {name}: both events must have an argument {name:?} in the same place (or use --by source / --by any)"
                ))
            }
        },
        None => match (arg_slot(from, "task"), arg_slot(to, "task")) {
            (Some(a), Some(b)) if a == b => MatchKey::Arg(a),
            _ => MatchKey::Source,
        },
    };
    Ok(Some(LatencySpec { from, to, key }))
}

/// Runs `qtrace analyze`.
pub fn run(args: AnalyzeArgs) -> Exit {
    let mut merged = match open_merged(&args.files) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("qtrace: {e}");
            return Exit::BadInput;
        }
    };
    let catalog = merged
        .readers()
        .next()
        .map(|r| r.catalog().clone())
        .unwrap_or_default();
    let latency = match latency_spec(&catalog, &args) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("qtrace analyze: {e}");
            return Exit::BadInput;
        }
    };
    let label = latency.as_ref().map(|l| {
        let name = |id: EventId| {
            catalog
                .event_name(id)
                .map_or_else(|| id.to_string(), str::to_string)
        };
        let by = match l.key {
            MatchKey::Source => "source".to_string(),
            MatchKey::Any => "any".to_string(),
            MatchKey::Arg(i) => catalog
                .event(l.from)
                .and_then(|e| e.args.get(i).cloned())
                .unwrap_or_else(|| format!("arg{i}")),
        };
        (name(l.from), name(l.to), by)
    });
    let mut analyzer = Analyzer::new(
        &catalog,
        AnalysisOptions {
            interrupt_max_ns: args.irq_max,
            latency,
        },
    );
    // The reading on one core, the analysis on the other (the same events
    // in the same order). On the reference corpus the analysis thread is
    // the bound; on a 32-byte file of common events the two cost about the
    // same (BENCHMARKS.md, "Readers").
    let clean = match read_merged_pipelined(&mut merged, |e| analyzer.push(e)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("qtrace analyze: {e}");
            return Exit::BadInput;
        }
    };
    let ends = ends(&merged);
    let report = analyzer.finish();
    with_stdout(|out| {
        if args.json {
            json(out, &report, label.as_ref(), args.irq_max)?;
        } else {
            text(out, &report, label.as_ref(), args.irq_max)?;
        }
        Ok(report_and_status(
            "qtrace analyze",
            &args.files,
            clean,
            &ends,
        ))
    })
}

/// Nanoseconds as text with a readable unit.
fn dur(ns: u64) -> String {
    match ns {
        0..=9_999 => format!("{ns}ns"),
        10_000..=9_999_999 => format!("{:.1}us", ns as f64 / 1e3),
        10_000_000..=9_999_999_999 => format!("{:.1}ms", ns as f64 / 1e6),
        _ => format!("{:.2}s", ns as f64 / 1e9),
    }
}

fn summary_text(s: &Summary) -> String {
    if s.count == 0 {
        return format!("{:>8} {:>8} {:>8} {:>8}", "-", "-", "-", "-");
    }
    format!(
        "{:>8} {:>8} {:>8} {:>8}",
        dur(s.min),
        dur(s.mean),
        dur(s.p99),
        dur(s.max)
    )
}

fn lossy_note(n: u64) -> String {
    if n == 0 {
        String::new()
    } else {
        format!("  ({n} left out: events lost during them)")
    }
}

fn text(
    out: &mut dyn Write,
    r: &Report,
    label: Option<&(String, String, String)>,
    irq_max: u64,
) -> io::Result<()> {
    let span = r.span_ns();
    writeln!(
        out,
        "span {} ({} events, {} lost in {} hoops records)",
        dur(span),
        r.events,
        r.lost,
        r.hoops
    )?;
    if r.lost > 0 {
        writeln!(
            out,
            "  measures during which events were lost are left out of the figures and counted in the 'lossy' columns"
        )?;
    }
    writeln!(out, "\ntasks")?;
    writeln!(
        out,
        "{:>6} {:>6} {:>6} {:>9} {:>5} {:>6} {:>8} {:>8} {:>8} {:>8} {:>5} {:>7} {:>9} {:>5}",
        "task",
        "activ",
        "disp",
        "cpu",
        "lossy",
        "jobs",
        "resp min",
        "mean",
        "p99",
        "max",
        "lossy",
        "preempt",
        "blocked",
        "lossy"
    )?;
    for (id, t) in &r.tasks {
        let s = t.response.summary();
        writeln!(
            out,
            "{:>6} {:>6} {:>6} {:>9} {:>5} {:>6} {} {:>5} {:>7} {:>9} {:>5}",
            id,
            t.activations,
            t.dispatches,
            dur(t.cpu_ns),
            t.cpu_lossy,
            s.count,
            summary_text(&s),
            t.response_lossy,
            t.preemptions,
            dur(t.blocked_ns),
            t.blocked_lossy
        )?;
    }
    writeln!(out, "\ncpus")?;
    writeln!(
        out,
        "{:>6} {:>6} {:>10} {:>10} {:>10} {:>7}",
        "source", "disp", "busy", "idle", "lossy", "util"
    )?;
    for (id, c) in &r.cpus {
        writeln!(
            out,
            "{:>6} {:>6} {:>10} {:>10} {:>10} {:>6.1}%",
            id,
            c.dispatches,
            dur(c.busy_ns),
            dur(c.idle_ns),
            dur(c.lossy_ns),
            c.utilisation()
        )?;
    }
    writeln!(out, "\ninterrupts")?;
    writeln!(
        out,
        "{:>6} {:>8} {:>10} {:>8} {:>8} {:>8} {:>8}",
        "irq", "count", "rate/s", "min", "mean", "p99", "max"
    )?;
    // Each line's summary once (a selection over all its handler times).
    let mut capped = false;
    for (irq, i) in &r.interrupts {
        let rate = if span == 0 {
            0.0
        } else {
            i.count as f64 * 1e9 / span as f64
        };
        let handler = i.handler.summary();
        capped |= handler.max >= irq_max;
        writeln!(
            out,
            "{:>6} {:>8} {:>10.1} {}",
            irq,
            i.count,
            rate,
            capped_summary_text(&handler, irq_max)
        )?;
    }
    if capped {
        writeln!(
            out,
            "  * = the --irq-max cap ({}): a handler ends at the next event of its source or at the cap; a time marked * is the cap, not a measurement",
            dur(irq_max)
        )?;
    }
    if let (Some(l), Some((from, to, by))) = (&r.latency, label) {
        let s = l.samples.summary();
        writeln!(out, "\nlatency {from} -> {to} (by {by})")?;
        writeln!(
            out,
            "  {} intervals: min {} mean {} p99 {} max {}{}",
            s.count,
            dur(s.min),
            dur(s.mean),
            dur(s.p99),
            dur(s.max),
            lossy_note(l.lossy)
        )?;
        if s.count == 0 && by != "any" && l.unmatched_ends > 0 && l.open_starts > 0 {
            writeln!(
                out,
                "  no end ({to}) followed a start ({from}) with the same {by}: when the two come from different sources (an interrupt and a CPU's scheduler), pair them with --by any"
            )?;
        }
        if l.unmatched_ends + l.open_starts > 0 {
            writeln!(
                out,
                "  {} ends without a start, {} starts without an end",
                l.unmatched_ends, l.open_starts
            )?;
        }
        histogram(out, &l.samples)?;
    }
    if !r.scopes.is_empty() {
        writeln!(out, "\nscopes")?;
        writeln!(
            out,
            "{:<24} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
            "scope", "count", "code!=0", "unended", "min", "mean", "p99", "max"
        )?;
        for (name, sc) in &r.scopes {
            writeln!(
                out,
                "{:<24} {:>8} {:>8} {:>8} {}{}",
                name,
                sc.count,
                sc.nonzero_codes,
                sc.unended,
                summary_text(&sc.durations.summary()),
                lossy_note(sc.lossy)
            )?;
        }
        if r.scope_unpaired > 0 {
            writeln!(out, "  {} scope ends without a begin", r.scope_unpaired)?;
        }
    }
    let woken: Vec<_> = r
        .tasks
        .iter()
        .filter(|(_, t)| t.woken_by_signal + t.woken_by_irq > 0)
        .collect();
    if !woken.is_empty() {
        // Derived wake-up flows: a signal or an interrupt to the schedule
        // of the task it woke (qtrace::analysis).
        writeln!(out, "\nwake-ups (wake to next schedule)")?;
        writeln!(
            out,
            "{:<8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
            "task", "by sem", "by irq", "unsched", "min", "mean", "p99", "max"
        )?;
        for (id, t) in woken {
            writeln!(
                out,
                "{:<8} {:>8} {:>8} {:>8} {}{}",
                id,
                t.woken_by_signal,
                t.woken_by_irq,
                t.wakeups_unscheduled,
                summary_text(&t.wakeups.summary()),
                lossy_note(t.wakeups_lossy)
            )?;
        }
    }
    if !r.counters.is_empty() {
        writeln!(out, "\ncounters")?;
        writeln!(
            out,
            "{:<24} {:>8} {:>12} {:>12} {:>12}",
            "counter", "count", "min", "mean", "max"
        )?;
        for (name, c) in &r.counters {
            match c.mean() {
                Some(mean) => writeln!(
                    out,
                    "{:<24} {:>8} {:>12} {:>12.3} {:>12}",
                    name, c.count, c.min, mean, c.max
                )?,
                None => writeln!(
                    out,
                    "{:<24} {:>8} {:>12} {:>12} {:>12}",
                    name, 0, "-", "-", "-"
                )?,
            }
            if c.nan > 0 {
                writeln!(out, "  {} NaN values of {name} left out", c.nan)?;
            }
        }
    }
    Ok(())
}

/// A number as JSON: infinities (and NaN) as strings, which JSON has no
/// number for.
fn json_f64(s: &mut String, v: f64) {
    if v.is_finite() {
        let _ = write!(s, "{v:?}");
    } else if v.is_nan() {
        s.push_str("\"NaN\"");
    } else if v > 0.0 {
        s.push_str("\"inf\"");
    } else {
        s.push_str("\"-inf\"");
    }
}

fn histogram(out: &mut dyn Write, samples: &Samples) -> io::Result<()> {
    let h = samples.histogram();
    let most = h.iter().map(|&(_, c)| c).max().unwrap_or(0).max(1);
    let mut lower = 0;
    for (upper, count) in h {
        let bar = "#".repeat(((count * 40).div_ceil(most)) as usize);
        writeln!(
            out,
            "  {:>9} .. {:<9} {:>9} {bar}",
            dur(lower),
            dur(upper),
            count
        )?;
        lower = upper;
    }
    Ok(())
}

/// [`summary_text`] of handler times capped at `cap`: a value at the cap is
/// marked `*` (it is the cap, not a measurement).
fn capped_summary_text(s: &Summary, cap: u64) -> String {
    if s.count == 0 {
        return summary_text(s);
    }
    let v = |ns: u64| {
        if ns >= cap {
            format!("{}*", dur(ns))
        } else {
            dur(ns)
        }
    };
    format!(
        "{:>8} {:>8} {:>8} {:>8}",
        v(s.min),
        v(s.mean),
        v(s.p99),
        v(s.max)
    )
}

fn summary_json(s: &mut String, sum: &Summary) {
    let _ = write!(
        s,
        "{{\"count\":{},\"min_ns\":{},\"mean_ns\":{},\"p99_ns\":{},\"max_ns\":{}}}",
        sum.count, sum.min, sum.mean, sum.p99, sum.max
    );
}

fn json(
    out: &mut dyn Write,
    r: &Report,
    label: Option<&(String, String, String)>,
    irq_max: u64,
) -> io::Result<()> {
    let mut s = String::new();
    let _ = write!(
        s,
        "{{\"events\":{},\"hoops\":{},\"lost\":{},\"first_ns\":{},\"last_ns\":{},\"tasks\":[",
        r.events, r.hoops, r.lost, r.first_ns, r.last_ns
    );
    for (i, (id, t)) in r.tasks.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(
            s,
            "{{\"task\":{id},\"activations\":{},\"dispatches\":{},\"cpu_ns\":{},\"cpu_lossy\":{},\"response\":",
            t.activations, t.dispatches, t.cpu_ns, t.cpu_lossy
        );
        summary_json(&mut s, &t.response.summary());
        let _ = write!(
            s,
            ",\"response_lossy\":{},\"unmatched\":{},\"preemptions\":{},\"blocked_waits\":{},\"blocked_ns\":{},\"blocked_lossy\":{}}}",
            t.response_lossy, t.unmatched, t.preemptions, t.blocked_waits, t.blocked_ns, t.blocked_lossy
        );
    }
    s.push_str("],\"cpus\":[");
    for (i, (id, c)) in r.cpus.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(
            s,
            "{{\"source\":{id},\"dispatches\":{},\"busy_ns\":{},\"idle_ns\":{},\"lossy_ns\":{},\"utilisation_pct\":{:.3}}}",
            c.dispatches,
            c.busy_ns,
            c.idle_ns,
            c.lossy_ns,
            c.utilisation()
        );
    }
    s.push_str("],\"interrupts\":[");
    for (i, (irq, v)) in r.interrupts.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(s, "{{\"irq\":{irq},\"count\":{},\"handler\":", v.count);
        let h = v.handler.summary();
        summary_json(&mut s, &h);
        // Whether the longest handler time is the --irq-max cap.
        let _ = write!(s, ",\"max_is_cap\":{}}}", h.count > 0 && h.max >= irq_max);
    }
    let _ = write!(s, "],\"irq_max_ns\":{irq_max}");
    if let (Some(l), Some((from, to, by))) = (&r.latency, label) {
        s.push_str(",\"latency\":{\"from\":");
        json_str(&mut s, from);
        s.push_str(",\"to\":");
        json_str(&mut s, to);
        s.push_str(",\"by\":");
        json_str(&mut s, by);
        s.push_str(",\"summary\":");
        summary_json(&mut s, &l.samples.summary());
        let _ = write!(
            s,
            ",\"lossy\":{},\"unmatched_ends\":{},\"open_starts\":{},\"histogram\":[",
            l.lossy, l.unmatched_ends, l.open_starts
        );
        for (i, (upper, count)) in l.samples.histogram().into_iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            let _ = write!(s, "{{\"below_ns\":{upper},\"count\":{count}}}");
        }
        s.push_str("]}");
    }
    if !r.scopes.is_empty() {
        s.push_str(",\"scopes\":[");
        for (i, (name, sc)) in r.scopes.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            s.push_str("{\"name\":");
            json_str(&mut s, name);
            let _ = write!(
                s,
                ",\"count\":{},\"nonzero_codes\":{},\"unended\":{},\"lossy\":{},\"durations\":",
                sc.count, sc.nonzero_codes, sc.unended, sc.lossy
            );
            summary_json(&mut s, &sc.durations.summary());
            s.push('}');
        }
        let _ = write!(s, "],\"scope_unpaired\":{}", r.scope_unpaired);
    }
    let mut woken = r
        .tasks
        .iter()
        .filter(|(_, t)| t.woken_by_signal + t.woken_by_irq > 0)
        .peekable();
    if woken.peek().is_some() {
        s.push_str(",\"wakeups\":[");
        for (i, (id, t)) in woken.enumerate() {
            if i > 0 {
                s.push(',');
            }
            let _ = write!(
                s,
                "{{\"task\":{id},\"by_signal\":{},\"by_irq\":{},\"unscheduled\":{},\"lossy\":{},\"latency\":",
                t.woken_by_signal, t.woken_by_irq, t.wakeups_unscheduled, t.wakeups_lossy
            );
            summary_json(&mut s, &t.wakeups.summary());
            s.push('}');
        }
        s.push(']');
    }
    if !r.counters.is_empty() {
        s.push_str(",\"counters\":[");
        for (i, (name, c)) in r.counters.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            s.push_str("{\"name\":");
            json_str(&mut s, name);
            let _ = write!(s, ",\"count\":{},\"nan\":{}", c.count, c.nan);
            // No value (only NaNs): no min, mean or max (never a null).
            if let Some(mean) = c.mean() {
                s.push_str(",\"min\":");
                json_f64(&mut s, c.min);
                s.push_str(",\"mean\":");
                json_f64(&mut s, mean);
                s.push_str(",\"max\":");
                json_f64(&mut s, c.max);
            }
            s.push('}');
        }
        s.push(']');
    }
    s.push_str("}\n");
    out.write_all(s.as_bytes())
}
