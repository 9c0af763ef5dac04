//! The encoding of a [`Catalog`] (every class and event with names,
//! descriptions and argument names), shared by the trace-file header and the
//! catalog datagrams, so a reader can name every event — user-defined ones
//! included — from the bytes alone.
//!
//! ```text
//! u16 class_count                      (1..=256)
//! class_count times:
//!     str  name                        (1..=64 bytes, [A-Za-z0-9_.-])
//!     str  description                 (0..=256 bytes)
//!     u16  event_count                 (1..=4096; events are numbered
//!                                       consecutively across classes from 0)
//!     event_count times:
//!         str  name                    (1..=64 bytes)
//!         str  description             (0..=256 bytes)
//!         u8   arg_count               (0..=2)
//!         arg_count times: str name    (1..=64 bytes)
//! ```
//!
//! A `str` is a big-endian u16 byte length followed by that many bytes of
//! UTF-8. At most 4096 events in all. The encoder is the core's
//! ([`qtrace_core::encode::catalog`]); this module decodes.

use super::cursor::Cursor;
use super::WireError;
use crate::classes::{
    validate_description, validate_name, Catalog, ClassInfo, EventInfo, MAX_ARGS,
    MAX_DESCRIPTION_LEN, MAX_NAME_LEN,
};
use crate::{ClassId, EventId};
use qtrace_core::encode::catalog::{CatalogSource, ClassEntry, EventEntry};

/// The largest encoded catalog: 256 classes and 4096 events with every name
/// and description at its longest.
pub const MAX_CATALOG_LEN: usize = 2
    + ClassId::MAX_CLASSES * (2 + MAX_NAME_LEN + 2 + MAX_DESCRIPTION_LEN + 2)
    + EventId::MAX_EVENTS
        * (2 + MAX_NAME_LEN + 2 + MAX_DESCRIPTION_LEN + 1 + MAX_ARGS * (2 + MAX_NAME_LEN));

/// The std catalog as the core's encoder walks it: the same encoder
/// writes a firmware's [`StaticCatalog`](qtrace_core::StaticCatalog).
impl CatalogSource for Catalog {
    fn class_count(&self) -> usize {
        self.classes().len()
    }

    fn class(&self, index: usize) -> ClassEntry<'_> {
        let c = &self.classes()[index];
        ClassEntry {
            name: &c.name,
            description: &c.description,
            event_count: c.event_count,
        }
    }

    fn event(&self, class: usize, n: usize) -> Option<EventEntry<'_>> {
        let c = &self.classes()[class];
        let e = Catalog::event(self, EventId(c.first_event.0.checked_add(n as u16)?))?;
        let mut args = [""; MAX_ARGS];
        let argc = e.args.len().min(MAX_ARGS);
        for (slot, a) in args.iter_mut().zip(&e.args) {
            *slot = a;
        }
        Some(EventEntry {
            name: &e.name,
            description: &e.description,
            args,
            arg_count: argc,
        })
    }
}

/// Decodes a catalog from the start of `bytes`; returns it and the number of
/// bytes it used. Error offsets are relative to the start of `bytes`.
#[cfg(test)]
pub(crate) fn parse(bytes: &[u8]) -> Result<(Catalog, usize), WireError> {
    let mut cur = Cursor::new(bytes);
    let catalog = parse_from(&mut cur)?;
    Ok((catalog, cur.pos()))
}

fn invalid(offset: usize, what: &'static str, reason: impl Into<String>) -> WireError {
    WireError::Invalid {
        offset: offset as u64,
        what,
        reason: reason.into(),
    }
}

fn name<'a>(cur: &mut Cursor<'a>, what: &'static str) -> Result<&'a str, WireError> {
    let at = cur.pos();
    let s = cur.str(what, MAX_NAME_LEN)?;
    validate_name(what, s).map_err(|e| invalid(at, what, e.to_string()))?;
    Ok(s)
}

fn description<'a>(cur: &mut Cursor<'a>) -> Result<&'a str, WireError> {
    let at = cur.pos();
    let s = cur.str("description", MAX_DESCRIPTION_LEN)?;
    validate_description("description", s).map_err(|_| {
        invalid(
            at,
            "description",
            "it holds a line break (CR or LF): a description is one line",
        )
    })?;
    Ok(s)
}

pub(crate) fn parse_from(cur: &mut Cursor<'_>) -> Result<Catalog, WireError> {
    let start = cur.pos();
    let class_count = cur.u16("class count")? as usize;
    if class_count == 0 || class_count > ClassId::MAX_CLASSES {
        return Err(invalid(
            start,
            "class count",
            format!(
                "{class_count} classes (a table has 1 to {})",
                ClassId::MAX_CLASSES
            ),
        ));
    }
    let mut classes: Vec<ClassInfo> = Vec::with_capacity(class_count);
    let mut events: Vec<EventInfo> = Vec::new();
    for c in 0..class_count {
        let class_at = cur.pos();
        let class_name = name(cur, "class")?;
        let class_description = description(cur)?;
        if classes.iter().any(|k| k.name == class_name) {
            return Err(invalid(
                class_at,
                "class",
                format!("class name {class_name:?} appears twice"),
            ));
        }
        let count_at = cur.pos();
        let event_count = cur.u16("event count")? as usize;
        if event_count == 0 || events.len() + event_count > EventId::MAX_EVENTS {
            return Err(invalid(
                count_at,
                "event count",
                format!(
                    "class {class_name:?} claims {event_count} events; a class has at least 1 and the table at most {} in all",
                    EventId::MAX_EVENTS
                ),
            ));
        }
        let first_event = EventId(events.len() as u16);
        for _ in 0..event_count {
            let event_at = cur.pos();
            let event_name = name(cur, "event")?;
            let event_description = description(cur)?;
            let argc_at = cur.pos();
            let argc = cur.u8("argument count")? as usize;
            if argc > MAX_ARGS {
                return Err(invalid(
                    argc_at,
                    "argument count",
                    format!("{argc} arguments (at most {MAX_ARGS})"),
                ));
            }
            let mut args: Vec<String> = Vec::with_capacity(argc);
            for _ in 0..argc {
                let arg_at = cur.pos();
                let arg = name(cur, "argument")?;
                if args.iter().any(|a| a == arg) {
                    return Err(invalid(
                        arg_at,
                        "argument",
                        format!("argument name {arg:?} appears twice in event {event_name:?}"),
                    ));
                }
                args.push(arg.to_string());
            }
            if events[first_event.0 as usize..]
                .iter()
                .any(|e| e.name == event_name)
            {
                return Err(invalid(
                    event_at,
                    "event",
                    format!("event name {event_name:?} appears twice in class {class_name:?}"),
                ));
            }
            events.push(EventInfo {
                id: EventId(events.len() as u16),
                class: ClassId(c as u16),
                name: event_name.to_string(),
                description: event_description.to_string(),
                args,
            });
        }
        classes.push(ClassInfo {
            id: ClassId(c as u16),
            name: class_name.to_string(),
            description: class_description.to_string(),
            first_event,
            event_count: event_count as u16,
        });
    }
    Catalog::from_parts(classes, events).map_err(|e| invalid(start, "class table", e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Event;

    /// The hex lines of FORMAT.md's block that follows `marker`.
    fn format_hex(marker: &str) -> Vec<u8> {
        format_hex_nth(marker, 0)
    }

    /// The bytes of the `n`th hex block after `marker` (from 0).
    fn format_hex_nth(marker: &str, n: usize) -> Vec<u8> {
        let doc = include_str!("../../FORMAT.md");
        let at = doc.find(marker).expect("the example is in FORMAT.md");
        let mut block = &doc[at..];
        for _ in 0..n {
            block = &block[block.find("```text").unwrap() + 7..];
            block = &block[block.find("```").unwrap() + 3..];
        }
        let block = &block[block.find("```text").unwrap() + 7..];
        let block = &block[..block.find("```").unwrap()];
        block
            .lines()
            .filter_map(|l| l.split_once(": "))
            .flat_map(|(_, hex)| hex.split_whitespace().take_while(|w| w.len() == 2))
            .map(|b| u8::from_str_radix(b, 16).unwrap())
            .collect()
    }

    /// FORMAT.md 1.3.2's worked example, byte for byte: the class entry of a
    /// class with one counter, and one counter record.
    #[test]
    fn counter_worked_example_matches_format_md() {
        use crate::classes::ClassSpec;
        use qtrace_core::classes::counter::CounterKind;
        let mut c = Catalog::builtin();
        let sched = c
            .define(ClassSpec::new("sched", "the scheduler").counter(
                "ready",
                "tasks ready to run",
                CounterKind::U64,
                "tasks",
            ))
            .unwrap();
        let id = sched.event("ready.counter").unwrap();
        assert_eq!(id, EventId(0x17));
        let mut bytes = Vec::new();
        qtrace_core::encode::catalog::emit(&c, &mut |b: &[u8]| bytes.extend_from_slice(b));
        let mut builtin = Vec::new();
        qtrace_core::encode::catalog::emit(&Catalog::builtin(), &mut |b: &[u8]| {
            builtin.extend_from_slice(b)
        });
        // The class count (u16) is 6, and the new class follows the five.
        assert_eq!(bytes[..2], [0, 6]);
        assert_eq!(bytes[2..builtin.len()], builtin[2..]);
        let entry = &bytes[builtin.len()..];
        assert_eq!(entry, format_hex("Worked example (counter class entry)"));
        let mut record = [0u8; crate::wire::record::RECORD_LEN];
        crate::wire::record::emit(&Event::new(1_000, id, 2, [3, 0]), &mut record);
        assert_eq!(
            record.to_vec(),
            format_hex("Worked example (counter record)")
        );
        let (back, _) = parse(&bytes).unwrap();
        assert_eq!(back.counter_of(id), Some((CounterKind::U64, "tasks")));
    }

    /// FORMAT.md 1.3.3's worked example, byte for byte: the class entry of a
    /// class with one flow, and a begin and an end record of one instance.
    #[test]
    fn flow_worked_example_matches_format_md() {
        use crate::classes::ClassSpec;
        use qtrace_core::classes::flow::{FlowId, FlowPhase};
        let mut c = Catalog::builtin();
        c.define(ClassSpec::new("rpc", "remote calls").flow("call", "a call"))
            .unwrap();
        let flow = c.flow("rpc:call").unwrap();
        assert_eq!(
            (flow.begin(), flow.step(), flow.end()),
            (EventId(0x17), EventId(0x18), EventId(0x19))
        );
        let mut bytes = Vec::new();
        qtrace_core::encode::catalog::emit(&c, &mut |b: &[u8]| bytes.extend_from_slice(b));
        let mut builtin = Vec::new();
        qtrace_core::encode::catalog::emit(&Catalog::builtin(), &mut |b: &[u8]| {
            builtin.extend_from_slice(b)
        });
        assert_eq!(bytes[..2], [0, 6]);
        assert_eq!(bytes[2..builtin.len()], builtin[2..]);
        let entry = &bytes[builtin.len()..];
        assert_eq!(entry.len(), 149);
        assert_eq!(entry, format_hex("Worked example (flow class entry)"));
        let call = FlowId::new(1, 9);
        for (n, e) in [
            Event::new(2_000, flow.begin(), 1, call.args()),
            Event::new(2_500, flow.end(), 3, call.args()),
        ]
        .iter()
        .enumerate()
        {
            let mut record = [0u8; crate::wire::record::RECORD_LEN];
            crate::wire::record::emit(e, &mut record);
            assert_eq!(
                record.to_vec(),
                format_hex_nth("Worked example (flow records)", n)
            );
        }
        let (back, _) = parse(&bytes).unwrap();
        assert_eq!(back.flow_of(flow.end()), Some(("call", FlowPhase::End)));
        assert_eq!(back.flow("rpc:call"), Some(flow));
    }

    #[test]
    fn encode_then_parse() {
        let c = Catalog::builtin();
        let mut bytes = Vec::new();
        qtrace_core::encode::catalog::emit(&c, &mut |b: &[u8]| bytes.extend_from_slice(b));
        assert_eq!(bytes.len(), qtrace_core::encode::catalog::buffer_len(&c));
        let (back, used) = parse(&bytes).unwrap();
        assert_eq!((back, used), (c, bytes.len()));
    }
}
