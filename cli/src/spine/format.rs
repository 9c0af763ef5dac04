//! Text the subcommands share: times given as arguments and printed, JSON
//! strings, and what a file's end (its completeness) and a receiver's
//! unclosed-stream marks mean, in words.

use std::fmt::Write as _;

use qtrace::reader::Completeness;

/// Parses a time: a number with an optional unit `ns` (default), `us`, `ms`,
/// `s`, as in `1500`, `20us`, `1.5ms` (the `--from`, `--to` and `--split`
/// values).
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

/// A time given as an argument: its value in ns and the text given, so that
/// messages about it use the user's units (`--from 3ms`, not 3000000).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimeArg {
    /// The time, in ns.
    pub ns: u64,
    /// As it was given.
    pub text: String,
}

/// [`parse_time`], keeping the text given.
pub fn parse_time_arg(s: &str) -> Result<TimeArg, String> {
    Ok(TimeArg {
        ns: parse_time(s)?,
        text: s.trim().to_string(),
    })
}

/// Appends `s` as a JSON string (quoted; qtrace-core's one escaper).
#[inline]
pub fn json_str(out: &mut String, s: &str) {
    let _ = write!(out, "\"{}\"", qtrace_core::json::JsonEscaped(s));
}

/// `seconds.nanoseconds` with nine decimals.
#[inline]
pub fn fmt_time(ns: u128) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// The `[END: …]` text of a file's completeness: the library's wording
/// (`Display for Completeness`, its short form).
pub fn end_text(c: &Completeness) -> String {
    format!("[END: {c:#}]")
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

/// The line of a receiver's unclosed-stream mark (FORMAT.md 1.5): sender
/// `sender`'s stream ended without a close after `n` events received or
/// marked lost.
pub fn unclosed_text(sender: u32, n: u64) -> String {
    format!(
        "[STREAM OF SENDER {sender} ENDED WITHOUT A CLOSE after {n} events: events after its last datagram lost without a count]"
    )
}

/// What `n` (> 0) unclosed-stream marks in a file mean, in words.
pub fn unclosed_words(n: u64) -> String {
    let streams = if n == 1 { "stream" } else { "streams" };
    format!(
        "{n} sender {streams} ended without a close (events after the last datagram of each lost without a count)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn end_lines_are_the_library_wording_in_brackets() {
        // Failed before the wording had one source: the CLI wrote its own
        // text and `{:#}` was the plain sentence.
        use qtrace::wire::{CloseRecord, QueueTotals};
        let close = CloseRecord {
            time: 5,
            totals: QueueTotals {
                accepted: 3,
                dropped: 2,
                overwritten: 1,
                delivered: 3,
            },
            records: 6,
            lost: 2,
        };
        let cases = [
            (
                Completeness::Complete(close),
                "[END: complete; the file holds 6 records; its queue had then accepted 3, dropped 2, overwritten 1, delivered 3]",
            ),
            (
                Completeness::Mismatch {
                    close,
                    records: 5,
                    lost: 1,
                },
                "[END: DAMAGED: the close record says 6 records stating 2 lost events, the file holds 5 records stating 1]",
            ),
            (
                Completeness::Cut { records: 4, lost: 2 },
                "[END: CUT SHORT after 4 records; 2 events known lost before the cut, events after it lost without a count]",
            ),
            (
                Completeness::Unknown,
                "[END: completeness unknown (written before close records)]",
            ),
        ];
        for (c, want) in cases {
            assert_eq!(end_text(&c), want);
            assert_eq!(end_text(&c), format!("[END: {c:#}]"));
        }
    }

    #[test]
    fn time_has_nine_decimals() {
        assert_eq!(fmt_time(1_000_000_005), "1.000000005");
        assert_eq!(fmt_time(7), "0.000000007");
    }
}
