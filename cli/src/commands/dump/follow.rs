//! `qtrace dump --follow FILE`: the events of a trace file as it grows,
//! like `tail -f`, in `dump`'s own lines; across a re-creation of the file
//! by its writer; from a closed chunk of a rotating online queue into the
//! next (each chunk's END line, then a note on stderr); until the file ends
//! with its close run (then its END line) or Ctrl-C.

use std::io::Write;
use std::sync::Arc;

use qtrace::classes::Catalog;
use qtrace::combine::{Assembler, Item, Names};
use qtrace::reader::Completeness;
use qtrace::wire::TraceHeader;

use super::{end_json, json_line, payload, text_line, DumpArgs, Filter};
use crate::spine::follow::{FollowState, Follower, Step};
use crate::spine::format::{end_text, fmt_time};
use crate::spine::io::{is_cut, is_mismatch, label, with_stdout};
use crate::spine::{interrupt, Exit};

/// Runs `qtrace dump --follow`.
pub fn run(args: &DumpArgs) -> Exit {
    let [path] = args.files.as_slice() else {
        eprintln!("qtrace: --follow follows one file; give one FILE");
        return Exit::BadInput;
    };
    if args.from.is_some() || args.to.is_some() {
        eprintln!("qtrace: --follow shows every new event; --from and --to do not apply");
        return Exit::BadInput;
    }
    interrupt::install();
    let mut follower = match Follower::open(path, Arc::new(FollowState::default())) {
        Ok(Some(f)) => f,
        Ok(None) => return Exit::Ok, // Ctrl-C before the file existed
        Err(e) => {
            eprintln!("qtrace: {e}");
            return Exit::BadInput;
        }
    };
    let mut name = label(path);
    // A chunk followed before ended cut short (exit status 3 at the end).
    let mut cut_before = false;
    let Some(mut file) = File::new(&follower) else {
        return Exit::Ok;
    };
    let mut matched = vec![false; args.classes.len() + args.events.len()];
    let filter = Filter::new(&file.catalog, &args.classes, &args.events, &mut matched);
    let names = args.classes.iter().chain(&args.events);
    if let Some((n, _)) = names.zip(&matched).find(|(_, m)| !**m) {
        eprintln!("qtrace: {name} defines no class or event {n:?}: `qtrace events` lists the built-in ones");
        return Exit::BadInput;
    }
    let mut assembler = Assembler::new();
    let mut names = Names::new();
    let mut items: Vec<Item> = Vec::new();
    let mut line = String::new();
    let mut end = String::new();
    with_stdout(|out| {
        let mut show =
            |item: Item, names: &mut Names, file: &File, name: &str, out: &mut dyn Write| {
                line.clear();
                match &item {
                    Item::Event(e) => {
                        if e.id != qtrace::classes::tracer::HOOPS
                            && qtrace::wire::unclosed_stream(e).is_none()
                            && !filter.passes(e.id)
                        {
                            return Ok(());
                        }
                        let t = u128::from(file.header.ticks_to_ns(e.time));
                        if args.json {
                            json_line(&mut line, name, t, &file.catalog, names, e);
                        } else {
                            text_line(&mut line, None, t, &file.catalog, names, e);
                        }
                    }
                    Item::Payload(p) => {
                        names.learn(p);
                        if p.name_of().is_none() && !filter.passes(p.id) {
                            return Ok(());
                        }
                        let t = u128::from(file.header.ticks_to_ns(p.time));
                        if args.json {
                            payload::json_line(&mut line, name, &file.catalog, names, p);
                        } else {
                            payload::time_column(&mut line, None, t);
                            payload::text_line(&mut line, &file.catalog, names, p);
                        }
                    }
                }
                line.push('\n');
                out.write_all(line.as_bytes())
            };
        loop {
            let step = match follower.buffered() {
                Some(e) => Step::Event(e),
                None => {
                    // About to wait for the writer: show what was read.
                    out.flush()?;
                    match follower.next() {
                        Some(s) => s,
                        None => return Ok(Exit::Ok),
                    }
                }
            };
            match step {
                Step::Event(e) => {
                    assembler.push(e, &mut |item| items.push(item));
                    for item in items.drain(..) {
                        show(item, &mut names, &file, &name, out)?;
                    }
                }
                Step::Replaced { copy } => {
                    if copy {
                        eprintln!("qtrace: {name} was rewritten by its writer (a copy): following the new file from where it was");
                    } else {
                        eprintln!("qtrace: {name} was re-created by its writer: following the new file (its first record says what was lost)");
                        assembler = Assembler::new();
                        names = Names::new();
                    }
                    if let Some(f) = File::new(&follower) {
                        file = f;
                    }
                }
                Step::Damaged(e) => {
                    eprintln!("qtrace: {e}");
                    return Ok(Exit::BadInput);
                }
                Step::NextChunk {
                    ended,
                    path,
                    missed,
                } => {
                    // Runs never span chunks: what is open is cut.
                    assembler.finish(&mut |item| items.push(item));
                    for item in items.drain(..) {
                        show(item, &mut names, &file, &name, out)?;
                    }
                    cut_before |= end_line(out, args.json, &name, &file, &ended, &mut end)?;
                    let gap = if missed > 0 {
                        format!(" ({missed} chunks before it were deleted by the queue's retention before they were reached: their events are not shown)")
                    } else {
                        String::new()
                    };
                    eprintln!(
                        "qtrace: {name} was closed by its rotation: following the next chunk, {}{gap}",
                        path.display()
                    );
                    name = label(&path);
                    if let Some(f) = File::new(&follower) {
                        file = f;
                    }
                }
                Step::End(c) => {
                    assembler.finish(&mut |item| items.push(item));
                    for item in items.drain(..) {
                        show(item, &mut names, &file, &name, out)?;
                    }
                    return Ok(match c {
                        Some(c) => {
                            let cut = end_line(out, args.json, &name, &file, &c, &mut end)?;
                            if is_mismatch(Some(c)) {
                                Exit::BadInput
                            } else if cut || cut_before {
                                Exit::Cut
                            } else {
                                Exit::Ok
                            }
                        }
                        // Stopped (Ctrl-C) while the file was still written.
                        None if cut_before => Exit::Cut,
                        None => Exit::Ok,
                    });
                }
            }
        }
    })
}

/// Writes the END line of a file followed (text or JSON); returns whether
/// it was cut short (then also said on stderr, in text).
fn end_line(
    out: &mut dyn Write,
    json: bool,
    name: &str,
    file: &File,
    c: &Completeness,
    line: &mut String,
) -> std::io::Result<bool> {
    let cut = is_cut(Some(*c));
    if json {
        let t = match c {
            Completeness::Complete(close) => Some(u128::from(file.header.ticks_to_ns(close.time))),
            _ => None,
        };
        line.clear();
        end_json(line, name, t, c);
        writeln!(out, "{line}")?;
        return Ok(cut);
    }
    match c {
        Completeness::Complete(close) => {
            let t = u128::from(file.header.ticks_to_ns(close.time));
            write!(out, "{:>20}  ", fmt_time(t))?;
        }
        _ => write!(out, "{:22}", "")?,
    }
    writeln!(out, "{}", end_text(c))?;
    if cut {
        eprintln!("qtrace: {name}: {c}");
    }
    Ok(cut)
}

/// The followed file's header and class table.
struct File {
    header: TraceHeader,
    catalog: Catalog,
}

impl File {
    /// The file `f` follows now (`None` only once it has ended).
    fn new(f: &Follower) -> Option<File> {
        let r = f.reader()?;
        Some(File {
            header: r.header().clone(),
            catalog: r.catalog().clone(),
        })
    }
}
