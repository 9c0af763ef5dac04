//! `qtrace dump FILE...`: one line per event, several files merged in time
//! order, with filters and a JSON form.

use std::cell::Cell;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::{self, Read};
use std::path::PathBuf;
use std::process::ExitCode;
use std::rc::Rc;

use clap::Args;

use crate::payload;
use qtrace::classes::{tracer, Catalog};
use qtrace::combine::{Assembler, Item, Names};
use qtrace::export::args::event_args;

use crate::text::TextFormat;
use qtrace::export::MergeByTime;
use qtrace::reader::{Completeness, ReadError, TraceReader};
use qtrace::wire::close::{close_part, unclosed_stream};
use qtrace::{Event, EventId};

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
    #[arg(long = "class", value_name = "CLASS")]
    pub classes: Vec<String>,
    /// Show only this event (`name`, `class:name` or a number such as 0x04); repeatable.
    #[arg(long = "event", value_name = "EVENT")]
    pub events: Vec<String>,
    /// Show only events at or after this time since the clock origin (of the
    /// earliest file, when merging): `1500`, `1500ns`, `20us`, `3ms`, `1.5s`.
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub from: Option<u64>,
    /// Show only events at or before this time since the clock origin.
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub to: Option<u64>,
    /// One JSON object per line instead of text; after each file's events,
    /// one `{"file":…,"end":"complete"|"cut"|"damaged","complete":true|false,…}`
    /// object (none for files whose completeness is unknown).
    #[arg(long)]
    pub json: bool,
}

/// Parses a time: a number with an optional unit `ns` (default), `us`, `ms`, `s`.
pub fn parse_time(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (num, scale) = if let Some(n) = s.strip_suffix("ns") {
        (n, 1u128)
    } else if let Some(n) = s.strip_suffix("us") {
        (n, 1_000)
    } else if let Some(n) = s.strip_suffix("ms") {
        (n, 1_000_000)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1_000_000_000)
    } else {
        (s, 1)
    };
    let bad = || {
        format!(
            "{s:?} is not a time: use a number of ns or add a unit (ns, us, ms, s), as in 1.5ms"
        )
    };
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if int.is_empty() && frac.is_empty() {
        return Err(bad());
    }
    if !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let int: u128 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| bad())?
    };
    let mut value = int.checked_mul(scale).ok_or_else(bad)?;
    let mut unit = scale;
    for d in frac.bytes() {
        unit /= 10;
        value += (d - b'0') as u128 * unit;
    }
    u64::try_from(value).map_err(|_| bad())
}

/// One open input file and its next event.
pub struct Input {
    /// The label shown for the file (its file name).
    pub label: String,
    /// The reader.
    pub reader: TraceReader,
    /// Wall-clock ns of the file's timestamp 0.
    pub origin: u64,
}

/// Opens every file, or returns the one-line error for the first bad one.
pub fn open_all(files: &[PathBuf]) -> Result<Vec<Input>, String> {
    let mut inputs = Vec::with_capacity(files.len());
    for path in files {
        let reader = TraceReader::open(path).map_err(|e| e.to_string())?;
        let label = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string());
        let origin = reader.header().clock_origin_unix_ns();
        inputs.push(Input {
            label,
            reader,
            origin,
        });
    }
    Ok(inputs)
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

/// Appends `s` as a JSON string.
pub fn json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `seconds.nanoseconds` with nine decimals.
pub fn fmt_time(ns: u128) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
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
        if e.flags & qtrace::queues::recover::UNREADABLE != 0 {
            let _ = write!(out, " unreadable: being written at the crash");
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
    if e.flags != 0 {
        let _ = write!(out, " flags={:#06x}", e.flags);
    }
    while out.ends_with(' ') {
        out.pop();
    }
}

/// A file time in ticks as ns on the merged time line.
fn catalogs_time(header: &qtrace::wire::TraceHeader, ticks: u64, shift: u64) -> u64 {
    header.ticks_to_ns(ticks).saturating_add(shift)
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

/// Formats one event as a JSON object.
fn json_line(out: &mut String, label: &str, time: u128, catalog: &Catalog, e: &Event) {
    out.push_str("{\"file\":");
    json_str(out, label);
    let _ = write!(
        out,
        ",\"time_ns\":{time},\"source\":{},\"id\":{}",
        e.source, e.id.0
    );
    out.push_str(",\"class\":");
    match catalog.class_of(e.id).and_then(|c| catalog.class(c)) {
        Some(c) => json_str(out, &c.name),
        None => out.push_str("null"),
    }
    out.push_str(",\"event\":");
    match catalog.event_name(e.id) {
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

/// Where a file's completeness is left once its reader has ended, with the
/// shift of its times (ns) onto the merged time line.
pub type EndSlot = Rc<Cell<Option<FileEnd>>>;

/// A file's completeness and the shift (ns) of its times onto the merged
/// time line.
pub type FileEnd = (Completeness, u64);

/// The events of a reader rebased (see [`rebased`]); leaves its
/// completeness in its [`EndSlot`] when it ends.
pub struct Rebased<R: Read> {
    reader: TraceReader<R>,
    shift: u64,
    /// The file's ticks are nanoseconds already (no division per event).
    in_ns: bool,
    end: EndSlot,
}

impl<R: Read> Rebased<R> {
    #[inline]
    fn rebase(&self, mut e: Event) -> Event {
        let ns = if self.in_ns {
            e.time
        } else {
            self.reader.header().ticks_to_ns(e.time)
        };
        e.time = ns.saturating_add(self.shift);
        e
    }

    /// [`TraceReader::next_buffered`], rebased.
    #[inline]
    pub fn next_buffered(&mut self) -> Option<Event> {
        let e = self.reader.next_buffered()?;
        Some(self.rebase(e))
    }
}

impl<R: Read> Iterator for Rebased<R> {
    type Item = Result<Event, ReadError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match self.reader.next() {
            Some(r) => Some(r.map(|e| self.rebase(e))),
            None => {
                if let Some(c) = self.reader.completeness() {
                    self.end.set(Some((c, self.shift)));
                }
                None
            }
        }
    }
}

/// The events of `reader` with their times in nanoseconds since `base`, the
/// earliest clock origin of the files read together (at most this file's
/// origin); times past `u64::MAX` ns saturate. Its completeness goes to
/// `end` when it ends.
pub fn rebased<R: Read>(reader: TraceReader<R>, base: u64, end: EndSlot) -> Rebased<R> {
    let shift = reader.header().clock_origin_unix_ns().saturating_sub(base);
    let in_ns = reader.header().ticks_per_second() == qtrace::wire::header::NANOS_PER_SECOND;
    Rebased {
        reader,
        shift,
        in_ns,
        end,
    }
}

/// The line of a receiver's unclosed-stream mark (FORMAT.md 1.5): sender
/// `sender`'s stream ended without a close after `n` events received or
/// marked lost.
pub fn unclosed_text(sender: u32, n: u64) -> String {
    format!(
        "[STREAM OF SENDER {sender} ENDED WITHOUT A CLOSE after {n} events: events after its last datagram lost without a count]"
    )
}

/// The exit status when a file is cut short (no close record, or one that
/// disagrees with the file) or holds a receiver's unclosed-stream mark (a
/// sender's stream was cut: events after it are lost without a count), and
/// none is damaged: 3. Damage (2) wins.
pub const EXIT_CUT: u8 = 3;

/// What `n` (> 0) unclosed-stream marks in a file mean, in words.
pub fn unclosed_words(n: u64) -> String {
    let streams = if n == 1 { "stream" } else { "streams" };
    format!(
        "{n} sender {streams} ended without a close (events after the last datagram of each lost without a count)"
    )
}

/// Whether `c` makes the exit status [`EXIT_CUT`].
pub fn is_cut(c: Option<Completeness>) -> bool {
    c.is_some_and(|c| c.is_complete() == Some(false))
}

/// Reports each file of `files` that was cut short on stderr, after
/// `command`: the one place `dump`'s siblings say it.
pub fn report_cuts(command: &str, files: &[std::path::PathBuf], ends: &[Option<Completeness>]) {
    for (path, end) in files.iter().zip(ends) {
        if let Some(c) = end.filter(|c| is_cut(Some(*c))) {
            eprintln!("{command}: {}: {c}", path.display());
        }
    }
}

/// The exit status of a command that read trace files: 2 when one was
/// damaged (`clean` is false), [`EXIT_CUT`] when one was cut short, 0
/// otherwise.
pub fn read_status(clean: bool, ends: &[Option<Completeness>]) -> ExitCode {
    if !clean {
        ExitCode::from(2)
    } else if ends.iter().any(|e| is_cut(*e)) {
        ExitCode::from(EXIT_CUT)
    } else {
        ExitCode::SUCCESS
    }
}

/// [`report_cuts`] then [`read_status`], for the files [`merge`] read.
pub fn report_and_status(
    command: &str,
    files: &[std::path::PathBuf],
    clean: bool,
    ends: &[Option<FileEnd>],
) -> ExitCode {
    let ends: Vec<Option<Completeness>> = ends.iter().map(|e| e.map(|(c, _)| c)).collect();
    report_cuts(command, files, &ends);
    read_status(clean, &ends)
}

/// The `[END: …]` text of a file's completeness.
pub fn end_text(c: &Completeness) -> String {
    match c {
        Completeness::Complete(close) => format!(
            "[END: complete; queue accepted {}, dropped {}, overwritten {}, delivered {}]",
            close.totals.accepted,
            close.totals.dropped,
            close.totals.overwritten,
            close.totals.delivered
        ),
        Completeness::Mismatch {
            close,
            records,
            lost,
        } => format!(
            "[END: DAMAGED: the close record says {} records stating {} lost events, the file holds {records} records stating {lost}]",
            close.records, close.lost
        ),
        Completeness::Cut { records, lost } => format!(
            "[END: CUT SHORT after {records} records; {lost} events known lost before the cut, events after it lost without a count]"
        ),
        Completeness::Unknown => {
            "[END: completeness unknown (written before close records)]".to_string()
        }
        _ => "[END: completeness not understood by this qtrace]".to_string(),
    }
}

/// One word for a completeness: `complete`, `cut`, `damaged`, `unknown`.
pub fn end_word(c: &Completeness) -> &'static str {
    match c {
        Completeness::Complete(_) => "complete",
        Completeness::Cut { .. } => "cut",
        Completeness::Mismatch { .. } => "damaged",
        _ => "unknown",
    }
}

/// Merges the inputs in time order, calling `f(input index, event)` with the
/// event's time in ns since the earliest origin; reports each damaged file on
/// stderr and returns whether every file was read to its end, and each
/// file's completeness (with its time shift).
pub fn merge(
    inputs: Vec<Input>,
    mut f: impl FnMut(usize, &Event) -> io::Result<()>,
) -> io::Result<(bool, Vec<Option<FileEnd>>)> {
    let base = inputs.iter().map(|i| i.origin).min().unwrap_or(0);
    let slots: Vec<EndSlot> = inputs.iter().map(|_| EndSlot::default()).collect();
    let mut clean = true;
    if inputs.len() == 1 {
        // One file: nothing to merge, no heap per event.
        for (input, slot) in inputs.into_iter().zip(&slots) {
            let mut events = rebased(input.reader, base, Rc::clone(slot));
            loop {
                // Read-ahead events first: no Result per event.
                if let Some(e) = events.next_buffered() {
                    f(0, &e)?;
                    continue;
                }
                match events.next() {
                    Some(Ok(e)) => f(0, &e)?,
                    Some(Err(err)) => {
                        eprintln!("qtrace: {err}");
                        clean = false;
                    }
                    None => break,
                }
            }
        }
        return Ok((clean, slots.iter().map(|s| s.get()).collect()));
    }
    let mut merged = MergeByTime::new(
        inputs
            .into_iter()
            .zip(&slots)
            .map(|(i, slot)| rebased(i.reader, base, Rc::clone(slot)))
            .collect(),
    );
    while let Some((i, item)) = merged.next_with_input() {
        match item {
            Ok(e) => f(i, &e)?,
            Err(err) => {
                eprintln!("qtrace: {err}");
                clean = false;
            }
        }
    }
    Ok((clean, slots.iter().map(|s| s.get()).collect()))
}

/// Runs `qtrace dump`.
pub fn run(args: DumpArgs) -> ExitCode {
    let inputs = match open_all(&args.files) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("qtrace: {e}");
            return ExitCode::from(2);
        }
    };
    let mut matched = vec![false; args.classes.len() + args.events.len()];
    let filters: Vec<Filter> = inputs
        .iter()
        .map(|i| {
            Filter::new(
                i.reader.catalog(),
                &args.classes,
                &args.events,
                &mut matched,
            )
        })
        .collect();
    let names = args.classes.iter().chain(&args.events);
    if let Some((name, _)) = names.zip(&matched).find(|(_, m)| !**m) {
        eprintln!(
            "qtrace: no file defines a class or event {name:?}: `qtrace stats FILE` lists them"
        );
        return ExitCode::from(2);
    }
    let catalogs: Vec<Catalog> = inputs.iter().map(|i| i.reader.catalog().clone()).collect();
    let headers: Vec<qtrace::wire::TraceHeader> =
        inputs.iter().map(|i| i.reader.header().clone()).collect();
    let labels: Vec<String> = inputs.iter().map(|i| i.label.clone()).collect();
    let several = inputs.len() > 1;
    let width = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let mut line = String::with_capacity(256);
    let formats: Vec<TextFormat> = catalogs.iter().map(TextFormat::new).collect();
    // Lines are gathered in a large buffer and written in blocks.
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 17);
    let (from, to) = (
        args.from.unwrap_or(0) as u128,
        args.to.map_or(u128::MAX, |t| t as u128),
    );
    // Combine runs are reassembled per file; names apply to the lines after
    // them.
    let mut assemblers: Vec<Assembler> = inputs.iter().map(|_| Assembler::new()).collect();
    let mut names: Vec<Names> = inputs.iter().map(|_| Names::new()).collect();
    let mut items: Vec<Item> = Vec::new();
    // Files holding an unclosed-stream mark (FORMAT.md 1.5), by index.
    let mut unclosed: Vec<u64> = inputs.iter().map(|_| 0).collect();
    crate::with_stdout(|out| {
        let mut show =
            |i: usize, item: Item, line: &mut String, buf: &mut Vec<u8>| -> io::Result<()> {
                let (time, id) = match &item {
                    Item::Event(e) => (e.time, e.id),
                    Item::Payload(p) => (p.time, p.id),
                };
                let e_time = time as u128;
                let is_name = match &item {
                    Item::Payload(p) => names[i].learn(p).is_some(),
                    Item::Event(_) => false,
                };
                if e_time < from || e_time > to {
                    return Ok(());
                }
                let is_mark = matches!(&item, Item::Event(e) if unclosed_stream(e).is_some());
                if is_mark {
                    unclosed[i] += 1;
                }
                if id != tracer::HOOPS && !is_name && !is_mark && !filters[i].passes(id) {
                    return Ok(());
                }
                let label = several.then_some((labels[i].as_str(), width));
                match &item {
                    Item::Event(e) => {
                        // The fast formatter knows no run-time names: once a
                        // file has taught some, its lines take the general one.
                        if args.json
                            || !names[i].is_empty()
                            || !formats[i].line(buf, label, e.time, e)
                        {
                            line.clear();
                            if args.json {
                                json_line(line, &labels[i], e_time, &catalogs[i], e);
                            } else {
                                text_line(line, label, e_time, &catalogs[i], &names[i], e);
                            }
                            buf.extend_from_slice(line.as_bytes());
                        }
                    }
                    Item::Payload(p) => {
                        line.clear();
                        if args.json {
                            payload::json_line(line, &labels[i], &catalogs[i], p);
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
        let (clean, ends) = merge(inputs, |i, e| {
            assemblers[i].push(*e, &mut |item| items.push(item));
            for item in items.drain(..) {
                show(i, item, &mut line, &mut buf)?;
            }
            Ok(())
        })?;
        // Runs still open at the end of a file were cut by it.
        for (i, a) in assemblers.iter_mut().enumerate() {
            a.finish(&mut |item| items.push(item));
            for item in items.drain(..) {
                show(i, item, &mut line, &mut buf)?;
            }
        }
        out.write_all(&buf)?;
        // One END line per file, after its events: complete (with the
        // queue's final counters), cut short, damaged or unknown.
        for (i, end) in ends.iter().enumerate() {
            // Old files (completeness unknown) get no END line: their dump
            // is what it always was; `qtrace stats` says "unknown".
            let Some((c, shift)) = end.filter(|(c, _)| c.is_complete().is_some()) else {
                continue;
            };
            let c = &c;
            line.clear();
            let time = match c {
                Completeness::Complete(close) => {
                    Some((catalogs_time(&headers[i], close.time, shift)) as u128)
                }
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
            }
        }
        for (label, &n) in labels.iter().zip(&unclosed) {
            if n > 0 {
                eprintln!("qtrace: {label}: {}", unclosed_words(n));
            }
        }
        Ok(if !clean {
            ExitCode::from(2)
        } else if ends.iter().any(|e| is_cut(e.map(|(c, _)| c))) || unclosed.iter().any(|&n| n > 0)
        {
            ExitCode::from(EXIT_CUT)
        } else {
            ExitCode::SUCCESS
        })
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

    #[test]
    fn times_parse_with_units() {
        assert_eq!(parse_time("1500"), Ok(1500));
        assert_eq!(parse_time("1500ns"), Ok(1500));
        assert_eq!(parse_time("20us"), Ok(20_000));
        assert_eq!(parse_time("3ms"), Ok(3_000_000));
        assert_eq!(parse_time("1.5s"), Ok(1_500_000_000));
        assert_eq!(parse_time(".25s"), Ok(250_000_000));
        assert!(parse_time("").is_err());
        assert!(parse_time("s").is_err());
        assert!(parse_time("-1").is_err());
        assert!(parse_time("1e3").is_err());
        assert!(parse_time("99999999999999999999s").is_err());
    }

    #[test]
    fn json_strings_are_escaped() {
        let mut s = String::new();
        json_str(&mut s, "a\"b\\c\n\u{1}");
        assert_eq!(s, r#""a\"b\\c\n\u0001""#);
    }

    #[test]
    fn rebased_scales_ticks_and_shifts_to_the_earliest_origin() {
        use qtrace::classes::{system, Catalog};
        use qtrace::clock::{Clock, ManualClock};
        use qtrace::wire::{TraceHeader, TraceWriter};
        let times = |ticks_per_second, origin, base, time| -> u64 {
            let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)))
                .with_clock("manual", ticks_per_second, origin)
                .unwrap();
            let mut w = TraceWriter::new(Vec::new(), &header).unwrap();
            w.write_event(&Event::new(time, system::SCHEDULE, 0, [0, 0]))
                .unwrap();
            let bytes = w.finish().unwrap();
            let reader = TraceReader::new(&bytes[..]).unwrap();
            let got: Vec<u64> = rebased(reader, base, EndSlot::default())
                .map(|e| e.unwrap().time)
                .collect();
            assert_eq!(got.len(), 1);
            got[0]
        };
        assert_eq!(times(1_000_000_000, 100, 100, 5), 5);
        assert_eq!(times(1_000_000, 110, 100, 5), 5_010);
        assert_eq!(times(3_000_000_000, 101, 100, 3), 2);
        assert_eq!(times(1, 0, 0, u64::MAX), u64::MAX);
        assert_eq!(times(1_000_000_000, 105, 100, u64::MAX - 1), u64::MAX);
    }

    #[test]
    fn time_has_nine_decimals() {
        assert_eq!(fmt_time(1_000_000_005), "1.000000005");
        assert_eq!(fmt_time(7), "0.000000007");
    }
}
