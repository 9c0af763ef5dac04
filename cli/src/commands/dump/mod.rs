//! `qtrace dump FILE...`: one line per event, several files merged in time
//! order, with filters and a JSON form.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io;
use std::path::PathBuf;

use clap::Args;
use qtrace::classes::{tracer, Catalog};
use qtrace::combine::{is_combine, Assembler, Item, Names, Payload};
use qtrace::export::args::event_args;
use qtrace::reader::Completeness;
use qtrace::wire::{close_part, unclosed_stream};
use qtrace::{Event, EventId};

use crate::spine::format::{
    end_text, end_word, fmt_time, json_str, parse_time, unclosed_text, unclosed_words,
};
use crate::spine::io::{
    ends, is_cut, is_mismatch, label, open_each, read_merged, ring_hint, with_stdout,
};
use crate::spine::Exit;
use text::TextFormat;

mod follow;
mod payload;
mod text;

/// Arguments of `qtrace dump`.
///
/// Lines are `time  source  class  event  arg=value…`; a loss is a
/// `[LOST n EVENTS]` line, shown whatever the class and event filters (a loss
/// may hide any event). Several `--class`/`--event` filters show the union.
#[derive(Args, Debug)]
pub struct DumpArgs {
    /// Trace files; several are merged in time order.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Show only events of this class (name or number); repeatable.
    ///
    /// Show only events of this class (name or number); repeatable.
    #[arg(long = "class", value_name = "CLASS")]
    pub classes: Vec<String>,
    /// Show only this event (name, class:name, number); repeatable.
    ///
    /// Show only this event (`name`, `class:name` or a number such as 0x04); repeatable.
    #[arg(long = "event", value_name = "EVENT")]
    pub events: Vec<String>,
    /// Show only events at or after this time.
    ///
    /// Show only events at or after this time since the clock origin (of the
    /// earliest file, when merging): `1500`, `1500ns`, `20us`, `3ms`, `1.5s`.
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub from: Option<u64>,
    /// Show only events at or before this time.
    ///
    /// Show only events at or before this time since the clock origin.
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub to: Option<u64>,
    /// One JSON object per line instead of text.
    ///
    /// One JSON object per line instead of text (`"source_name"` when the
    /// file names the source); after each file's events,
    /// one `{"file":…,"end":"complete"|"cut"|"damaged","complete":true|false,…}`
    /// object (none for files whose completeness is unknown).
    #[arg(long)]
    pub json: bool,
    /// Follow one FILE as it grows, like `tail -f`.
    ///
    /// Follow one FILE as it grows, like `tail -f`: print its events, then
    /// each new one as its writer (an online queue, `qtrace recv`) adds it,
    /// until the file ends with its close run (then its END line) or
    /// Ctrl-C. A file not there yet is waited for; one re-created by its
    /// writer is followed anew; a chunk of a rotating online queue
    /// (`run.000003.qtr`) is followed into the next chunks of its run, each
    /// chunk's END line printed.
    #[arg(long)]
    pub follow: bool,
}

/// Which event ids of one file pass the `--class`/`--event` filters.
struct Filter {
    all: bool,
    ids: HashSet<u16>,
}

fn parse_number(s: &str) -> Option<u64> {
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()
    } else {
        s.parse().ok()
    }
}

impl Filter {
    /// Resolves the names against one file's table; returns the filter and
    /// whether each name matched something.
    fn new(catalog: &Catalog, classes: &[String], events: &[String], matched: &mut [bool]) -> Self {
        let mut ids = HashSet::new();
        for (i, c) in classes.iter().enumerate() {
            let class = match parse_number(c) {
                Some(n) => u16::try_from(n)
                    .ok()
                    .and_then(|n| catalog.class(qtrace::ClassId(n))),
                None => catalog.class_by_name(c),
            };
            if let Some(class) = class {
                matched[i] = true;
                ids.extend(class.events().map(|e| e.0));
            }
        }
        for (i, e) in events.iter().enumerate() {
            let id = match parse_number(e) {
                Some(n) => u16::try_from(n).ok(),
                None => catalog.event_by_name(e).map(|e| e.id.0),
            };
            if let Some(id) = id {
                matched[classes.len() + i] = true;
                ids.insert(id);
            }
        }
        Filter {
            all: classes.is_empty() && events.is_empty(),
            ids,
        }
    }

    fn passes(&self, id: EventId) -> bool {
        self.all || self.ids.contains(&id.0)
    }
}

/// An item to show, borrowed: a record read, or a reassembled run.
#[derive(Clone, Copy)]
enum Shown<'a> {
    Event(&'a Event),
    Payload(&'a Payload),
}

impl<'a> Shown<'a> {
    fn of(item: &'a Item) -> Self {
        match item {
            Item::Event(e) => Shown::Event(e),
            Item::Payload(p) => Shown::Payload(p),
        }
    }
}

/// The name of the span a `tracing:span_begin` or `span_end` record (of the
/// `tracing` bridge: `args = [span id, callsite event id]`) belongs to: its
/// callsite's run-time name, when a name record gave one.
fn span_name<'a>(catalog: &Catalog, names: &'a Names, e: &Event) -> Option<&'a str> {
    if names.is_empty() || !is_span(catalog, e.id) {
        return None;
    }
    u16::try_from(e.args[1])
        .ok()
        .and_then(|id| names.event(EventId(id)))
}

/// Whether `id` is the `tracing` bridge's `span_begin` or `span_end`.
fn is_span(catalog: &Catalog, id: EventId) -> bool {
    catalog.event(id).is_some_and(|e| {
        (e.name == "span_begin" || e.name == "span_end")
            && catalog.class(e.class).is_some_and(|c| c.name == "tracing")
    })
}

/// Formats one event as a text line.
fn text_line(
    out: &mut String,
    label: Option<(&str, usize)>,
    time: u128,
    catalog: &Catalog,
    names: &Names,
    e: &Event,
) {
    if let Some((l, width)) = label {
        let _ = write!(out, "{l:<width$}  ");
    }
    let _ = write!(out, "{:>20}  ", fmt_time(time));
    if e.id == tracer::HOOPS {
        let _ = write!(out, "[LOST {} EVENTS] (queue {})", e.args[0], e.args[1]);
        // FORMAT.md 1.4 and 6.4: bit 0 alone is a slot being written at the
        // crash; bits 0 and 1 a record left out because it failed a check
        // of its words; bit 1 alone the end of a damaged recovery.
        let marks = e.flags & (qtrace::storage::UNREADABLE | qtrace::storage::DAMAGED);
        if marks == qtrace::storage::UNREADABLE {
            let _ = write!(out, " unreadable: being written at the crash");
        } else if marks == qtrace::storage::UNREADABLE | qtrace::storage::DAMAGED {
            let _ = write!(
                out,
                " damaged: a record that failed the ring file's checks, left out"
            );
        } else if marks == qtrace::storage::DAMAGED {
            let _ = write!(out, " damaged: the ring file failed its checks; the counts before this are what its sound fields show");
        }
        return;
    }
    if let Some((sender, n)) = unclosed_stream(e) {
        let _ = write!(out, "{}", unclosed_text(sender, n));
        return;
    }
    if close_part(e).is_some() {
        let _ = write!(
            out,
            "[CONTROL RECORD flags={:#06x} args={},{}] (id 0 with flag bit 15 that is not part of a final close run: corrupt or unknown)",
            e.flags, e.args[0], e.args[1]
        );
        return;
    }
    let class = catalog
        .class_of(e.id)
        .and_then(|c| catalog.class(c))
        .map_or("?", |c| c.name.as_str());
    let _ = write!(
        out,
        "{:>6}  {:<10} ",
        payload::source_text(names, e.source),
        class
    );
    match names.event(e.id).or_else(|| catalog.event_name(e.id)) {
        Some(n) => {
            let _ = write!(out, "{n:<14}");
        }
        None => {
            let _ = write!(out, "{:<14}", format!("unknown({})", e.id));
        }
    }
    for (name, v) in event_args(catalog, e) {
        let _ = write!(out, " {name}={v}");
    }
    if let Some(name) = span_name(catalog, names, e) {
        let _ = write!(out, " name={name:?}");
    }
    if e.flags != 0 {
        let _ = write!(out, " flags={:#06x}", e.flags);
    }
    while out.ends_with(' ') {
        out.pop();
    }
}

/// Formats a file's end as a JSON object: `{"file":…,"end":"complete"|"cut"|
/// "damaged"|"unknown","complete":true|false|null,…}`.
fn end_json(out: &mut String, label: &str, time: Option<u128>, c: &Completeness) {
    out.push_str("{\"file\":");
    json_str(out, label);
    let _ = write!(out, ",\"end\":\"{}\",\"complete\":", end_word(c));
    match c.is_complete() {
        Some(b) => {
            let _ = write!(out, "{b}");
        }
        None => out.push_str("null"),
    }
    if let Some(t) = time {
        let _ = write!(out, ",\"time_ns\":{t}");
    }
    match c {
        Completeness::Complete(close) | Completeness::Mismatch { close, .. } => {
            let t = &close.totals;
            let _ = write!(
                out,
                ",\"accepted\":{},\"dropped\":{},\"overwritten\":{},\"delivered\":{}",
                t.accepted, t.dropped, t.overwritten, t.delivered
            );
        }
        _ => {}
    }
    if let Completeness::Cut { records, lost } | Completeness::Mismatch { records, lost, .. } = c {
        let _ = write!(out, ",\"records\":{records},\"lost\":{lost}");
    }
    out.push('}');
}

/// Formats one event as a JSON object; `"source_name"` when the file names
/// the source, `"event"` the run-time name of the id when it has one.
fn json_line(
    out: &mut String,
    label: &str,
    time: u128,
    catalog: &Catalog,
    names: &Names,
    e: &Event,
) {
    out.push_str("{\"file\":");
    json_str(out, label);
    let _ = write!(
        out,
        ",\"time_ns\":{time},\"source\":{},\"id\":{}",
        e.source, e.id.0
    );
    payload::source_name_json(out, names, e.source);
    out.push_str(",\"class\":");
    match catalog.class_of(e.id).and_then(|c| catalog.class(c)) {
        Some(c) => json_str(out, &c.name),
        None => out.push_str("null"),
    }
    out.push_str(",\"event\":");
    match names.event(e.id).or_else(|| catalog.event_name(e.id)) {
        Some(n) => json_str(out, n),
        None => out.push_str("null"),
    }
    let _ = write!(out, ",\"flags\":{},\"args\":{{", e.flags);
    for (i, (name, v)) in event_args(catalog, e).enumerate() {
        if i > 0 {
            out.push(',');
        }
        json_str(out, name);
        let _ = write!(out, ":{v}");
    }
    out.push('}');
    if let Some(name) = span_name(catalog, names, e) {
        out.push_str(",\"span_name\":");
        json_str(out, name);
    }
    if e.id == tracer::HOOPS {
        let _ = write!(out, ",\"lost\":{},\"queue\":{}", e.args[0], e.args[1]);
    }
    if let Some((sender, n)) = unclosed_stream(e) {
        let _ = write!(
            out,
            ",\"unclosed_stream\":{{\"sender\":{sender},\"events\":{n}}}"
        );
    } else if close_part(e).is_some() {
        // Id 0 with flag bit 15 outside a final close run: corrupt or unknown.
        out.push_str(",\"control\":true");
    }
    out.push('}');
}

/// Runs `qtrace dump`.
pub fn run(args: DumpArgs) -> Exit {
    if args.follow {
        return follow::run(&args);
    }
    // A file that does not open (a bad header) is reported and the others
    // are read; the exit status then says damaged.
    let (files, readers, unopened) = open_each(&args.files);
    for e in &unopened {
        if files.is_empty() {
            eprintln!("qtrace: {e}");
        } else {
            eprintln!("qtrace: {e}; the other files are read");
        }
    }
    if files.is_empty() {
        return Exit::BadInput;
    }
    let opened_all = unopened.is_empty();
    let mut merged = qtrace::reader::MergedReader::new(readers);
    let mut matched = vec![false; args.classes.len() + args.events.len()];
    let filters: Vec<Filter> = merged
        .readers()
        .map(|r| Filter::new(r.catalog(), &args.classes, &args.events, &mut matched))
        .collect();
    let names = args.classes.iter().chain(&args.events);
    if let Some((name, _)) = names.zip(&matched).find(|(_, m)| !**m) {
        eprintln!(
            "qtrace: no file defines a class or event {name:?}: `qtrace stats FILE` lists them"
        );
        return Exit::BadInput;
    }
    let catalogs: Vec<Catalog> = merged.readers().map(|r| r.catalog().clone()).collect();
    let labels: Vec<String> = files.iter().map(|p| label(p)).collect();
    let several = merged.len() > 1;
    let width = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let mut line = String::with_capacity(256);
    let formats: Vec<TextFormat> = catalogs.iter().map(TextFormat::new).collect();
    // Lines are gathered in a large buffer and written in blocks.
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 17);
    let (from, to) = (
        args.from.unwrap_or(0) as u128,
        args.to.map_or(u128::MAX, |t| t as u128),
    );
    // Combine runs are reassembled per file, in one pass: a name applies
    // from its name record on. Saved files (fixed and circular queues) start
    // with every name the tracer recorded (FORMAT.md 1.8, "Names
    // prologue"), so their lines are named from the first.
    let mut assemblers: Vec<Assembler> = labels.iter().map(|_| Assembler::new()).collect();
    let mut names: Vec<Names> = labels.iter().map(|_| Names::new()).collect();
    let mut items: Vec<Item> = Vec::new();
    // Files holding an unclosed-stream mark (FORMAT.md 1.5), by index.
    let mut unclosed: Vec<u64> = labels.iter().map(|_| 0).collect();
    with_stdout(|out| {
        let mut show =
            |i: usize, item: Shown, line: &mut String, buf: &mut Vec<u8>| -> io::Result<()> {
                let (time, id) = match item {
                    Shown::Event(e) => (e.time, e.id),
                    Shown::Payload(p) => (p.time, p.id),
                };
                let e_time = time as u128;
                let is_name = match item {
                    Shown::Payload(p) => names[i].learn(p).is_some(),
                    Shown::Event(_) => false,
                };
                if e_time < from || e_time > to {
                    return Ok(());
                }
                let is_mark = matches!(item, Shown::Event(e) if unclosed_stream(e).is_some());
                if is_mark {
                    unclosed[i] += 1;
                }
                if id != tracer::HOOPS && !is_name && !is_mark && !filters[i].passes(id) {
                    return Ok(());
                }
                let label = several.then_some((labels[i].as_str(), width));
                match item {
                    Shown::Event(e) => {
                        // The fast formatter knows no run-time names: a line
                        // that shows one takes the general one.
                        if args.json
                            || (!names[i].is_empty()
                                && (names[i].source(e.source).is_some()
                                    || names[i].event(e.id).is_some()
                                    || span_name(&catalogs[i], &names[i], e).is_some()))
                            || !formats[i].line(buf, label, e.time, e)
                        {
                            line.clear();
                            if args.json {
                                json_line(line, &labels[i], e_time, &catalogs[i], &names[i], e);
                            } else {
                                text_line(line, label, e_time, &catalogs[i], &names[i], e);
                            }
                            buf.extend_from_slice(line.as_bytes());
                        }
                    }
                    Shown::Payload(p) => {
                        line.clear();
                        if args.json {
                            payload::json_line(line, &labels[i], &catalogs[i], &names[i], p);
                        } else {
                            payload::time_column(line, label, e_time);
                            payload::text_line(line, &catalogs[i], &names[i], p);
                        }
                        buf.extend_from_slice(line.as_bytes());
                    }
                }
                buf.push(b'\n');
                if buf.len() >= 1 << 16 {
                    out.write_all(buf)?;
                    buf.clear();
                }
                Ok(())
            };
        let clean = read_merged(&mut merged, |i, e| {
            // A record outside a combine run is shown as it is read (the
            // assembler would pass it through at once).
            if !is_combine(e) {
                return show(i, Shown::Event(e), &mut line, &mut buf);
            }
            assemblers[i].push(*e, &mut |item| items.push(item));
            for item in items.drain(..) {
                show(i, Shown::of(&item), &mut line, &mut buf)?;
            }
            Ok(())
        })?;
        // Runs still open at the end of a file were cut by it.
        for (i, a) in assemblers.iter_mut().enumerate() {
            a.finish(&mut |item| items.push(item));
            for item in items.drain(..) {
                show(i, Shown::of(&item), &mut line, &mut buf)?;
            }
        }
        out.write_all(&buf)?;
        // One END line per file, after its events: complete (with the
        // queue's final counters), cut short, damaged or unknown.
        let ends = ends(&merged);
        for (i, end) in ends.iter().enumerate() {
            // Old files (completeness unknown) get no END line: their dump
            // is what it always was; `qtrace stats` says "unknown".
            let Some(c) = end.filter(|c| c.is_complete().is_some()) else {
                continue;
            };
            let c = &c;
            line.clear();
            let time = match c {
                Completeness::Complete(close) => Some(merged.merged_time(i, close.time) as u128),
                _ => None,
            };
            if args.json {
                end_json(&mut line, &labels[i], time, c);
            } else {
                if several {
                    let _ = write!(line, "{:<width$}  ", labels[i]);
                }
                match time {
                    Some(t) => {
                        let _ = write!(line, "{:>20}  ", fmt_time(t));
                    }
                    None => line.push_str(&" ".repeat(22)),
                }
                line.push_str(&end_text(c));
            }
            line.push('\n');
            out.write_all(line.as_bytes())?;
            if is_cut(Some(*c)) {
                eprintln!("qtrace: {}: {c}", labels[i]);
                if let Some(hint) = ring_hint(&files[i]) {
                    eprintln!("qtrace: {}: {hint}", labels[i]);
                }
            }
        }
        for (label, &n) in labels.iter().zip(&unclosed) {
            if n > 0 {
                eprintln!("qtrace: {label}: {}", unclosed_words(n));
            }
        }
        let mismatch = ends.iter().any(|e| is_mismatch(*e));
        let damaged = if !clean.damaged && !mismatch && opened_all {
            Exit::Ok
        } else {
            Exit::BadInput
        };
        Ok(
            if clean.cut || ends.iter().any(|e| is_cut(*e)) || unclosed.iter().any(|&n| n > 0) {
                damaged.and(Exit::Cut)
            } else {
                damaged
            },
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_text_lines_equal_the_general_formatter() {
        let catalog = Catalog::builtin();
        let fast = TextFormat::new(&catalog);
        let mut checked = 0;
        for id in 0..catalog.event_count() as u16 + 2 {
            for args in [[0, 0], [5, 0], [0, 7], [u64::MAX, 3]] {
                for source in [0, 7, 123_456, 4_000_000_000, u32::MAX] {
                    for time in [0, 999, 1_234_567_890_123, u64::MAX] {
                        for label in [None, Some(("a.qtr", 10)), Some(("émoji.qtr", 4))] {
                            for flags in [0, 0x10] {
                                let mut e = Event::new(time, EventId(id), source, args);
                                e.flags = flags;
                                let mut want = String::new();
                                text_line(
                                    &mut want,
                                    label,
                                    time as u128,
                                    &catalog,
                                    &Names::new(),
                                    &e,
                                );
                                let mut got = Vec::new();
                                if fast.line(&mut got, label, time, &e) {
                                    assert_eq!(String::from_utf8(got).unwrap(), want);
                                    checked += 1;
                                } else {
                                    assert!(got.is_empty());
                                    assert!(flags != 0 || id as usize >= catalog.event_count());
                                }
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(checked, 23 * 4 * 5 * 4 * 3);
    }

    #[test]
    fn names_and_labels_past_the_fixed_sizes_take_the_general_path() {
        let mut catalog = Catalog::builtin();
        let long = "a_class_name_longer_than_the_ten_columns_of_the_text_table";
        let class = catalog
            .define(qtrace::classes::ClassSpec::new(long, "x").event(
                "an_event_name_of_more_than_forty_eight_bytes_in_all",
                "x",
                &["an_argument_name_longer_than_twenty_four", "b"],
            ))
            .unwrap();
        let short = catalog
            .define(qtrace::classes::ClassSpec::new("c", "x").event("e", "x", &["v"]))
            .unwrap();
        let fast = TextFormat::new(&catalog);
        let id = class
            .event("an_event_name_of_more_than_forty_eight_bytes_in_all")
            .unwrap();
        let e = Event::new(5, id, 0, [1, 2]);
        assert!(!fast.line(&mut Vec::new(), None, 5, &e));
        let e = Event::new(5, short.event("e").unwrap(), 0, [1, 2]);
        let long_label = "x".repeat(70);
        assert!(!fast.line(&mut Vec::new(), Some((&long_label, 70)), 5, &e));
        let mut got = Vec::new();
        assert!(fast.line(&mut got, Some(("f.qtr", 60)), 5, &e));
        let mut want = String::new();
        text_line(
            &mut want,
            Some(("f.qtr", 60)),
            5,
            &catalog,
            &Names::new(),
            &e,
        );
        assert_eq!(String::from_utf8(got).unwrap(), want);
    }
}
