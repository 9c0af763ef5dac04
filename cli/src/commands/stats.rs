//! `qtrace stats FILE...`: what a trace holds — events per class and per
//! event, losses, time span.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::PathBuf;

use clap::Args;
use qtrace::classes::tracer;
use qtrace::combine::{is_combine, Assembler, Item};
use qtrace::reader::Completeness;
use qtrace::wire::{close_part, unclosed_stream};
use qtrace::Event;

use crate::spine::format::{end_word, fmt_time, json_str, unclosed_words};
use crate::spine::io::{
    is_cut, is_cut_error, is_mismatch, open_all, ring_hint, with_stdout, Input, BUFFERED,
};
use crate::spine::Exit;

/// Arguments of `qtrace stats`.
#[derive(Args, Debug)]
pub struct StatsArgs {
    /// Trace files (each is summarised, then the total).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// One JSON document instead of text.
    ///
    /// One JSON document instead of text: `{"files":[{"file", "events",
    /// "lost", "hoops", "complete" (true, false, or null when unknown),
    /// "end", "close", "unclosed_streams" (streams `qtrace recv` saw end
    /// without a close), "name_records" (not events), "damaged", …}],
    /// "total":{…}}`.
    #[arg(long)]
    pub json: bool,
}

#[derive(Default)]
struct Totals {
    events: u64,
    hoops: u64,
    lost: u64,
    /// Unclosed-stream marks (FORMAT.md 1.5): not events.
    unclosed: u64,
    /// Name records (runs of id 0 naming a source, task or event): not
    /// events.
    names: u64,
    /// Other tracer control records (id 0, flag bit 15) outside a final
    /// close run: what a cut left of one (its first parts), or unknown. Not
    /// events.
    control: u64,
    min: Option<u64>,
    max: Option<u64>,
}

/// Combine runs being reassembled, counted as `dump` shows them: a run
/// (whole or cut) is one event, a name run is a name record. Out of the
/// per-record loop (runs are rare; the loop stays tight).
#[derive(Default)]
struct Runs {
    asm: Assembler,
    items: Vec<Item>,
}

impl Runs {
    #[cold]
    #[inline(never)]
    fn push(&mut self, e: Event, t: &mut Totals, per_event: &mut BTreeMap<u16, u64>) {
        let items = &mut self.items;
        self.asm.push(e, &mut |item| items.push(item));
        self.count(t, per_event);
    }

    fn finish(&mut self, t: &mut Totals, per_event: &mut BTreeMap<u16, u64>) {
        let items = &mut self.items;
        self.asm.finish(&mut |item| items.push(item));
        self.count(t, per_event);
    }

    fn count(&mut self, t: &mut Totals, per_event: &mut BTreeMap<u16, u64>) {
        for item in self.items.drain(..) {
            let id = match item {
                Item::Payload(p) if p.name_of().is_some() => {
                    t.names += 1;
                    continue;
                }
                Item::Payload(p) => p.id,
                Item::Event(e) => e.id,
            };
            t.events += 1;
            *per_event.entry(id.0).or_insert(0) += 1;
        }
    }
}

/// Runs `qtrace stats`.
pub fn run(args: StatsArgs) -> Exit {
    let inputs = match open_all(&args.files) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("qtrace: {e}");
            return Exit::BadInput;
        }
    };
    let json = args.json;
    with_stdout(|out| report(inputs, json, out))
}

/// One file's summary, for the JSON form.
struct FileJson {
    label: String,
    t: Totals,
    end: Option<Completeness>,
    damaged: Option<String>,
}

fn file_json(out: &mut String, f: &FileJson) {
    out.push_str("{\"file\":");
    json_str(out, &f.label);
    let _ = write!(
        out,
        ",\"events\":{},\"lost\":{},\"hoops\":{},\"unclosed_streams\":{},\"complete\":",
        f.t.events, f.t.lost, f.t.hoops, f.t.unclosed
    );
    match f.end.and_then(|c| c.is_complete()) {
        Some(b) => {
            let _ = write!(out, "{b}");
        }
        None => out.push_str("null"),
    }
    out.push_str(",\"end\":");
    match &f.end {
        Some(c) => {
            json_str(out, end_word(c));
            out.push_str(",\"end_text\":");
            json_str(out, &c.to_string());
        }
        None => out.push_str("null"),
    }
    out.push_str(",\"close\":");
    match f.end {
        Some(Completeness::Complete(c)) | Some(Completeness::Mismatch { close: c, .. }) => {
            let _ = write!(
                out,
                "{{\"time\":{},\"accepted\":{},\"dropped\":{},\"overwritten\":{},\"delivered\":{},\"records\":{},\"lost\":{}}}",
                c.time,
                c.totals.accepted,
                c.totals.dropped,
                c.totals.overwritten,
                c.totals.delivered,
                c.records,
                c.lost
            );
        }
        _ => out.push_str("null"),
    }
    match (f.t.min, f.t.max) {
        (Some(a), Some(b)) => {
            let _ = write!(out, ",\"first_ns\":{a},\"last_ns\":{b}");
        }
        _ => out.push_str(",\"first_ns\":null,\"last_ns\":null"),
    }
    let _ = write!(
        out,
        ",\"control_records\":{},\"name_records\":{}",
        f.t.control, f.t.names
    );
    out.push_str(",\"damaged\":");
    match &f.damaged {
        Some(d) => json_str(out, d),
        None => out.push_str("null"),
    }
    out.push('}');
}

/// Writes the summary of every input to `out`; returns the exit status (2
/// when a file is damaged, else 3 when one is cut short or holds unclosed
/// streams).
fn report(inputs: Vec<Input>, json: bool, out: &mut dyn Write) -> io::Result<Exit> {
    let mut damaged_any = false;
    let mut cut_any = false;
    let mut grand = Totals::default();
    let files = inputs.len();
    let mut summaries: Vec<FileJson> = Vec::new();
    let mut text: Vec<u8> = Vec::new();
    let (mut complete_n, mut cut_n, mut unknown_n) = (0u64, 0u64, 0u64);
    for mut input in inputs {
        let h = input.reader.header().clone();
        let catalog = h.catalog().clone();
        let mut t = Totals::default();
        let mut per_event: BTreeMap<u16, u64> = BTreeMap::new();
        let mut error = None;
        // A combine run (a string, bytes, a name) is one event of many
        // records, as `dump` shows it: runs are reassembled, whole or cut.
        let mut runs = Runs::default();
        let mut buffer = Vec::with_capacity(BUFFERED);
        loop {
            // The block's records a run at a time, with no value to return
            // per record (one by one, each went through the stack and was
            // loaded back wider than it was stored).
            buffer.clear();
            if input.reader.read_buffered(&mut buffer, BUFFERED) == 0 {
                match input.reader.next() {
                    Some(Ok(e)) => buffer.push(e),
                    Some(Err(err)) => {
                        error = Some(err);
                        break;
                    }
                    None => break,
                }
            }
            for &e in &buffer {
                let ns = h.ticks_to_ns(e.time);
                t.min = Some(t.min.map_or(ns, |m| m.min(ns)));
                t.max = Some(t.max.map_or(ns, |m| m.max(ns)));
                if is_combine(&e) {
                    runs.push(e, &mut t, &mut per_event);
                } else if unclosed_stream(&e).is_some() {
                    t.unclosed += 1;
                } else if close_part(&e).is_some() {
                    t.control += 1;
                } else if e.id == tracer::HOOPS {
                    t.hoops += 1;
                    // Counts come from the file: a corrupt one may claim up
                    // to u64::MAX per record, so the sum saturates.
                    t.lost = t.lost.saturating_add(e.args[0]);
                } else {
                    t.events += 1;
                    *per_event.entry(e.id.0).or_insert(0) += 1;
                }
            }
        }
        runs.finish(&mut t, &mut per_event);
        let end = input.reader.completeness();
        match end.and_then(|c| c.is_complete()) {
            Some(true) => complete_n += 1,
            Some(false) => cut_n += 1,
            None => unknown_n += 1,
        }
        cut_any |= is_cut(end) || t.unclosed > 0;
        damaged_any |= is_mismatch(end);
        let out: &mut dyn Write = &mut text;
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
        if t.names > 0 {
            writeln!(
                out,
                "  names: {} name records (sources, tasks, events named; not events)",
                t.names
            )?;
        }
        writeln!(
            out,
            "  lost: {} events in {} hoops records",
            t.lost, t.hoops
        )?;
        let hint = end
            .filter(|c| is_cut(Some(*c)))
            .and_then(|_| ring_hint(&input.path));
        match &end {
            Some(c) => {
                writeln!(out, "  end: {c}")?;
                if let Some(h) = &hint {
                    writeln!(out, "  {h}")?;
                }
            }
            None => writeln!(out, "  end: not reached (the file is damaged)")?,
        }
        if t.control > 0 {
            writeln!(
                out,
                "  control records outside a close run: {} (left of a close run cut short; not events)",
                t.control
            )?;
        }
        if t.unclosed > 0 {
            writeln!(out, "  unclosed streams: {}", unclosed_words(t.unclosed))?;
            eprintln!("qtrace: {}: {}", input.label, unclosed_words(t.unclosed));
        }
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
            // The run-time name when the file gave one (a `tracing`
            // callsite's description), as `dump` shows it.
            let name = match (
                catalog.class_of(eid).and_then(|c| catalog.class(c)),
                input.reader.event_name(eid),
            ) {
                (Some(c), Some(e)) => format!("{}:{}", c.name, e),
                _ => format!("unknown({eid})"),
            };
            writeln!(out, "    {name:<24} {n:>12}")?;
        }
        // A file cut inside a record is cut short (status 3), as one cut at
        // a record boundary; other errors are damage (status 2).
        let damaged = error.and_then(|err| {
            eprintln!("qtrace: {err}");
            if is_cut_error(&err) {
                cut_any = true;
                return None;
            }
            damaged_any = true;
            Some(err.to_string())
        });
        if let Some(d) = &damaged {
            writeln!(out, "  damaged: {d}")?;
        }
        if end.is_some_and(|c| c.is_complete() == Some(false)) && damaged.is_none() {
            eprintln!("qtrace: {}: {}", input.label, end.expect("checked"));
            if let Some(h) = &hint {
                eprintln!("qtrace: {}: {h}", input.label);
            }
        }
        grand.events += t.events;
        grand.hoops += t.hoops;
        grand.lost = grand.lost.saturating_add(t.lost);
        grand.unclosed += t.unclosed;
        summaries.push(FileJson {
            label: input.label.clone(),
            t,
            end,
            damaged,
        });
    }
    if json {
        let mut s = String::from("{\"files\":[");
        for (i, f) in summaries.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            file_json(&mut s, f);
        }
        let _ = write!(
            s,
            "],\"total\":{{\"files\":{files},\"events\":{},\"lost\":{},\"hoops\":{},\"unclosed_streams\":{},\"complete\":{complete_n},\"cut\":{cut_n},\"unknown\":{unknown_n}}}}}",
            grand.events, grand.lost, grand.hoops, grand.unclosed
        );
        writeln!(out, "{s}")?;
    } else {
        out.write_all(&text)?;
        if files > 1 {
            write!(
                out,
                "total: {} events, {} lost in {} hoops records, {} files ({complete_n} complete, {cut_n} cut short or damaged, {unknown_n} unknown)",
                grand.events, grand.lost, grand.hoops, files
            )?;
            // The unclosed-stream marks of all files, in `dump`'s words.
            if grand.unclosed > 0 {
                write!(out, "; {}", unclosed_words(grand.unclosed))?;
            }
            writeln!(out)?;
        }
    }
    let damaged = if damaged_any {
        Exit::BadInput
    } else {
        Exit::Ok
    };
    Ok(if cut_any {
        damaged.and(Exit::Cut)
    } else {
        damaged
    })
}
