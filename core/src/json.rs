//! JSON text: [`JsonEscaped`], the one string escaper of qtrace's JSON
//! outputs (the Chrome export, the command's `--json`, `qtrace sql`'s JSON
//! lines).

use core::fmt;

/// Writes a string's characters as the inside of a JSON string (RFC 8259,
/// section 7), without the surrounding quotes: `"` and `\` get a backslash,
/// newline, carriage return and tab their short forms (`\n`, `\r`, `\t`),
/// the other control characters below U+0020 `\u00XX` (lower-case hex);
/// everything else, non-ASCII included, is written as it is.
///
/// A [`Display`](fmt::Display) adapter, so it writes into any
/// [`core::fmt::Write`] (a `String`, a formatter, a fixed buffer) without
/// allocating.
///
/// ```
/// use qtrace_core::json::JsonEscaped;
///
/// let json = format!("{{\"name\":\"{}\"}}", JsonEscaped("say \"hi\"\n\u{1}é"));
/// assert_eq!(json, r#"{"name":"say \"hi\"\n\u0001é"}"#);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct JsonEscaped<'a>(pub &'a str);

impl fmt::Display for JsonEscaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.0;
        let mut start = 0;
        for (i, b) in s.bytes().enumerate() {
            // Every byte to escape is ASCII, so `i` is a char boundary.
            let short = match b {
                b'"' => "\\\"",
                b'\\' => "\\\\",
                b'\n' => "\\n",
                b'\r' => "\\r",
                b'\t' => "\\t",
                0..=0x1f => "",
                _ => continue,
            };
            f.write_str(&s[start..i])?;
            if short.is_empty() {
                write!(f, "\\u{:04x}", b)?;
            } else {
                f.write_str(short)?;
            }
            start = i + 1;
        }
        f.write_str(&s[start..])
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::JsonEscaped;
    use std::format;

    #[test]
    fn escapes_quotes_backslashes_and_every_control() {
        assert_eq!(format!("{}", JsonEscaped("")), "");
        assert_eq!(format!("{}", JsonEscaped("plain é ✓")), "plain é ✓");
        assert_eq!(
            format!("{}", JsonEscaped("a\"b\\c\nd\re\tf\u{0}\u{1f} ")),
            "a\\\"b\\\\c\\nd\\re\\tf\\u0000\\u001f "
        );
        for c in 0u8..0x20 {
            let s = [c];
            let s = core::str::from_utf8(&s).unwrap();
            let out = format!("{}", JsonEscaped(s));
            let want = match c {
                b'\n' => "\\n".into(),
                b'\r' => "\\r".into(),
                b'\t' => "\\t".into(),
                _ => format!("\\u{c:04x}"),
            };
            assert_eq!(out, want);
        }
        assert_eq!(format!("{}", JsonEscaped("\u{7f}")), "\u{7f}");
    }
}
