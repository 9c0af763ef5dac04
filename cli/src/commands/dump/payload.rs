//! How `qtrace dump` shows combine runs (strings, bytes, names): one line
//! per run, whole or cut, in text or JSON.

use std::fmt::Write as _;

use qtrace::classes::Catalog;
use qtrace::combine::{Names, Payload, PayloadState, NAME_EVENT_ID, NAME_SOURCE, NAME_TASK};
use qtrace::TRACER_SOURCE;

use crate::spine::format::{fmt_time, json_str};

/// The payload as `text="…"` (valid UTF-8) or `bytes=hex`.
fn body(out: &mut String, p: &Payload) {
    match std::str::from_utf8(&p.bytes) {
        Ok(s) => {
            let _ = write!(out, "text={s:?}");
        }
        Err(_) => {
            out.push_str("bytes=");
            for b in &p.bytes {
                let _ = write!(out, "{b:02x}");
            }
        }
    }
}

/// What is wrong with a payload, in brackets; empty when it is whole.
pub fn state_text(p: &Payload) -> String {
    let mut s = match p.state {
        PayloadState::Complete => String::new(),
        PayloadState::Cut {
            received,
            expected: Some(n),
        } => format!(" [PARTIAL: {received} of {n} records, the rest lost]"),
        PayloadState::Cut {
            received,
            expected: None,
        } => format!(" [PARTIAL: {received} records, the begin record lost]"),
        PayloadState::Mismatch => {
            " [CORRUPT: checksum mismatch, records of two runs mixed or damaged]".to_string()
        }
    };
    if p.truncated_at_logging() {
        let _ = write!(
            s,
            " [CUT AT LOGGING: {} bytes logged, {} kept]",
            p.logged_len.unwrap_or(0),
            qtrace::combine::MAX_PAYLOAD
        );
    }
    s
}

/// The source column: the number, and its name when one is known.
pub fn source_text(names: &Names, source: u32) -> String {
    let n = if source == TRACER_SOURCE {
        "tracer".to_string()
    } else {
        source.to_string()
    };
    match names.source(source) {
        Some(name) => format!("{n}({name})"),
        None => n,
    }
}

/// One text line for a payload (after the time column).
pub fn text_line(out: &mut String, catalog: &Catalog, names: &Names, p: &Payload) {
    if let Some((kind, subject)) = p.name_of() {
        let what = match kind {
            NAME_SOURCE => "source",
            NAME_TASK => "task",
            NAME_EVENT_ID => "event",
            _ => "unknown-kind",
        };
        if kind == NAME_EVENT_ID {
            let _ = write!(out, "[NAME {what} {:#06x} ", subject);
        } else {
            let _ = write!(out, "[NAME {what} {subject} ");
        }
        body(out, p);
        out.push(']');
        out.push_str(&state_text(p));
        return;
    }
    let class = catalog
        .class_of(p.id)
        .and_then(|c| catalog.class(c))
        .map_or("?", |c| c.name.as_str());
    let _ = write!(out, "{:>6}  {:<10} ", source_text(names, p.source), class);
    match names.event(p.id).or_else(|| catalog.event_name(p.id)) {
        Some(n) => {
            let _ = write!(out, "{n:<14}");
        }
        None => {
            let _ = write!(out, "{:<14}", format!("unknown({})", p.id));
        }
    }
    if let Some(arg) = p.arg.filter(|a| *a != 0) {
        let name = catalog
            .event(p.id)
            .and_then(|e| e.args.first())
            .map_or("arg0", |n| n.as_str());
        let _ = write!(out, " {name}={arg}");
    }
    out.push(' ');
    body(out, p);
    out.push_str(&state_text(p));
}

/// `,"source_name":"…"` when `names` names `source`; nothing otherwise.
pub fn source_name_json(out: &mut String, names: &Names, source: u32) {
    if let Some(name) = names.source(source) {
        out.push_str(",\"source_name\":");
        json_str(out, name);
    }
}

/// One JSON object for a payload.
pub fn json_line(out: &mut String, label: &str, catalog: &Catalog, names: &Names, p: &Payload) {
    out.push_str("{\"file\":");
    json_str(out, label);
    let _ = write!(
        out,
        ",\"time_ns\":{},\"source\":{},\"id\":{}",
        p.time, p.source, p.id.0
    );
    source_name_json(out, names, p.source);
    if let Some((kind, subject)) = p.name_of() {
        let what = match kind {
            NAME_SOURCE => "source",
            NAME_TASK => "task",
            NAME_EVENT_ID => "event",
            _ => "unknown",
        };
        let _ = write!(out, ",\"name_of\":\"{what}\",\"subject\":{subject}");
    } else {
        out.push_str(",\"event\":");
        match names.event(p.id).or_else(|| catalog.event_name(p.id)) {
            Some(n) => json_str(out, n),
            None => out.push_str("null"),
        }
        if let Some(arg) = p.arg {
            let _ = write!(out, ",\"arg0\":{arg}");
        }
    }
    match std::str::from_utf8(&p.bytes) {
        Ok(s) => {
            out.push_str(",\"text\":");
            json_str(out, s);
        }
        Err(_) => {
            out.push_str(",\"bytes\":\"");
            for b in &p.bytes {
                let _ = write!(out, "{b:02x}");
            }
            out.push('"');
        }
    }
    match p.state {
        PayloadState::Complete => out.push_str(",\"payload\":\"complete\""),
        PayloadState::Cut { received, expected } => {
            let _ = write!(out, ",\"payload\":\"partial\",\"received\":{received}");
            if let Some(n) = expected {
                let _ = write!(out, ",\"expected\":{n}");
            }
        }
        PayloadState::Mismatch => out.push_str(",\"payload\":\"corrupt\""),
    }
    if let Some(l) = p.logged_len {
        let _ = write!(out, ",\"logged_len\":{l}");
    }
    out.push('}');
}

/// The time column of a payload line.
pub fn time_column(out: &mut String, label: Option<(&str, usize)>, time: u128) {
    if let Some((l, width)) = label {
        let _ = write!(out, "{l:<width$}  ");
    }
    let _ = write!(out, "{:>20}  ", fmt_time(time));
}
