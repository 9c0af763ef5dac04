//! The TSDL `metadata` text: the trace, clock and stream classes and one
//! event class per catalog event (with its variants), `unknown`,
//! `qtrace:payload` and `qtrace:name`; the ids of those classes; field names
//! made TSDL identifiers.

use std::fmt::Write as _;

use crate::classes::Catalog;
use crate::export::identifier_chars;

/// The name of the clock in the metadata.
pub const CLOCK_NAME: &str = "qtrace";

/// The clock origin written to the metadata, capped for the same reason:
/// babeltrace2 2.0 refuses a clock offset of 9,223,372,035 s or more (its
/// whole-second offset plus one second must fit), so the cap is the last whole
/// second before that, 9,223,372,034 s.
pub(super) fn clock_origin(origin_unix_ns: u64) -> u64 {
    const MAX_ORIGIN_NS: u64 = (i64::MAX as u64 / 1_000_000_000 - 2) * 1_000_000_000;
    origin_unix_ns.min(MAX_ORIGIN_NS)
}

/// TSDL keywords that cannot name a field.
pub(super) const KEYWORDS: &[&str] = &[
    "align",
    "callsite",
    "char",
    "clock",
    "const",
    "double",
    "enum",
    "env",
    "event",
    "floating_point",
    "float",
    "integer",
    "int",
    "long",
    "short",
    "signed",
    "stream",
    "string",
    "struct",
    "trace",
    "typealias",
    "typedef",
    "unsigned",
    "variant",
    "void",
    "_Bool",
    "_Complex",
    "_Imaginary",
];

/// A TSDL identifier for a field name. Readers drop one leading underscore
/// (CTF 1.8, section 4.1.8), so a name that is a keyword, starts with a digit
/// or starts with `_` is prefixed with `_` and reads back unchanged.
pub fn field_identifier(name: &str) -> String {
    let id = identifier_chars(name);
    let needs_prefix = id.is_empty()
        || id.starts_with(|c: char| c.is_ascii_digit() || c == '_')
        || KEYWORDS.contains(&id.as_str());
    if needs_prefix {
        format!("_{id}")
    } else {
        id
    }
}

/// The slots (bit i = `args[i]`) past the `declared` ones that are non-zero.
pub(super) fn undeclared_mask(declared: usize, args: &[u64; 2]) -> u8 {
    let mut mask = 0;
    for (i, a) in args.iter().enumerate().skip(declared) {
        if *a != 0 {
            mask |= 1 << i;
        }
    }
    mask
}

/// The id of the event class that carries event `id`'s declared arguments
/// plus the undeclared slots in `mask` (1 to 3): after the `unknown` class,
/// three per catalog event.
pub(super) fn variant_id(unknown_id: u16, id: u16, mask: u8) -> u16 {
    unknown_id + 1 + id * 3 + u16::from(mask - 1)
}

/// Writes the `fields` struct of an event class: the declared arguments,
/// then the undeclared slots in `extra` named `arg0`/`arg1`.
pub(super) fn fields(w: &mut String, declared: &[String], extra: u8) {
    let mut names: Vec<&str> = declared.iter().map(String::as_str).collect();
    for (i, n) in crate::export::args::UNNAMED.iter().enumerate() {
        if extra & (1 << i) != 0 {
            names.push(n);
        }
    }
    if names.is_empty() {
        return;
    }
    let _ = writeln!(w, "\tfields := struct {{");
    let mut used: Vec<String> = Vec::new();
    for (i, a) in names.iter().enumerate() {
        let mut id = field_identifier(a);
        if used.contains(&id) {
            id = format!("{id}_{i}");
        }
        let _ = writeln!(w, "\t\tuint64_t {id};");
        used.push(id);
    }
    let _ = writeln!(w, "\t}};");
}

pub(super) fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_ascii_graphic() || c == ' ' => out.push(c),
            _ => out.push('_'),
        }
    }
    out.push('"');
    out
}

/// The TSDL metadata of a trace with this catalog and clock origin (what
/// [`CtfWriter`](super::CtfWriter) writes to `metadata`).
pub fn metadata(catalog: &Catalog, origin_unix_ns: u64) -> String {
    let mut m = String::new();
    let w = &mut m;
    // `write!` into a String cannot fail.
    let _ = write!(
        w,
        r#"/* CTF 1.8 */

typealias integer {{ size = 16; align = 8; signed = false; }} := uint16_t;
typealias integer {{ size = 32; align = 8; signed = false; }} := uint32_t;
typealias integer {{ size = 64; align = 8; signed = false; }} := uint64_t;

trace {{
	major = 1;
	minor = 8;
	byte_order = be;
	packet.header := struct {{
		uint32_t magic;
		uint32_t stream_id;
		uint64_t stream_instance_id;
	}};
}};

env {{
	domain = "qtrace";
	tracer_name = "qtrace";
	clock_origin_unix_ns = "{origin_unix_ns}";
}};

clock {{
	name = {CLOCK_NAME};
	description = "qtrace clock: nanoseconds since the trace's origin";
	freq = 1000000000;
	precision = 1;
	offset_s = {offset_s};
	offset = {offset};
}};

typealias integer {{ size = 64; align = 8; signed = false; map = clock.{CLOCK_NAME}.value; }} := uint64_clock_t;

stream {{
	id = 0;
	packet.context := struct {{
		uint64_clock_t timestamp_begin;
		uint64_clock_t timestamp_end;
		uint64_t content_size;
		uint64_t packet_size;
		uint64_t packet_seq_num;
		uint64_t events_discarded;
		uint32_t source;
	}};
	event.header := struct {{
		uint16_t id;
		uint64_clock_t timestamp;
	}};
}};
"#,
        offset_s = clock_origin(origin_unix_ns) / 1_000_000_000,
        offset = clock_origin(origin_unix_ns) % 1_000_000_000,
    );
    for e in catalog.events() {
        let class = catalog
            .class(e.class)
            .map(|c| c.name.as_str())
            .unwrap_or("unknown");
        let _ = write!(
            w,
            "\nevent {{\n\tname = {};\n\tid = {};\n\tstream_id = 0;\n",
            quoted(&format!("{class}:{}", e.name)),
            e.id.0
        );
        fields(w, &e.args, 0);
        let _ = writeln!(w, "}};");
        // Variants that also carry undeclared non-zero slots (`arg0`, `arg1`).
        let declared = e.args.len().min(2);
        for mask in 1u8..4 {
            if mask & ((1 << declared) - 1) != 0 {
                continue;
            }
            let _ = write!(
                w,
                "\nevent {{\n\tname = {};\n\tid = {};\n\tstream_id = 0;\n",
                quoted(&format!("{class}:{}", e.name)),
                variant_id(catalog.event_count() as u16, e.id.0, mask)
            );
            fields(w, &e.args, mask);
            let _ = writeln!(w, "}};");
        }
    }
    let _ = write!(
        w,
        "\nevent {{\n\tname = \"unknown\";\n\tid = {};\n\tstream_id = 0;\n\tfields := struct {{\n\t\tuint16_t raw_id;\n\t\tuint64_t arg0;\n\t\tuint64_t arg1;\n\t}};\n}};\n",
        catalog.event_count()
    );
    // Combine runs (`crate::model::combine`), reassembled: see `CtfWriter`.
    let _ = write!(
        w,
        "\nevent {{\n\tname = \"qtrace:payload\";\n\tid = {};\n\tstream_id = 0;\n\tfields := struct {{\n\t\tuint16_t event_id;\n\t\tuint64_t arg;\n\t\t{U8} state;\n\t\tuint32_t received;\n\t\tuint32_t expected;\n\t\tuint32_t logged_len;\n\t\t{U8} encoding;\n\t\tstring text;\n\t}};\n}};\n",
        payload_class_id(catalog.event_count() as u16)
    );
    let _ = write!(
        w,
        "\nevent {{\n\tname = \"qtrace:name\";\n\tid = {};\n\tstream_id = 0;\n\tfields := struct {{\n\t\t{U8} kind;\n\t\tuint64_t subject;\n\t\t{U8} encoding;\n\t\tstring name;\n\t}};\n}};\n",
        name_class_id(catalog.event_count() as u16)
    );
    m
}

/// The `qtrace:payload` class: after `unknown` and the three variants of
/// every catalog event ([`variant_id`]).
pub(super) fn payload_class_id(unknown_id: u16) -> u16 {
    unknown_id + 1 + unknown_id * 3
}

/// The `qtrace:name` class, after `qtrace:payload`.
pub(super) fn name_class_id(unknown_id: u16) -> u16 {
    payload_class_id(unknown_id) + 1
}

/// An unsigned byte in TSDL.
pub(super) const U8: &str = "integer { size = 8; align = 8; signed = false; }";
