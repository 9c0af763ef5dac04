//! The fast path of `qtrace dump`'s text lines: per event number, the padded
//! `class event` text and the ` name=` prefixes are made once, and numbers
//! are written with a small integer formatter into a byte buffer, so a line
//! costs a few copies instead of a dozen `format!` calls. Output is byte for
//! byte that of `dump::text_line` (a test checks both on every built-in event
//! and corner cases); events it does not know go through `text_line`.

use qtrace::classes::{tracer, Catalog};
use qtrace::export::args::UNNAMED;
use qtrace::Event;

/// What a known event's line is made of.
struct Known {
    /// `{class:<10} {event:<14}`.
    head: Vec<u8>,
    /// `head` without its trailing spaces (for a line with no arguments).
    head_trimmed: Vec<u8>,
    /// ` name=` for each slot.
    args: [Vec<u8>; 2],
    /// Declared slots.
    declared: usize,
}

/// Text lines of one file's events.
pub struct TextFormat {
    known: Vec<Known>,
}

/// "00" to "99": two digits per division.
const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Appends `v` in decimal.
#[inline]
fn put_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    while v >= 100 {
        let p = (v % 100) as usize * 2;
        v /= 100;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&PAIRS[p..p + 2]);
    }
    if v >= 10 {
        let p = v as usize * 2;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&PAIRS[p..p + 2]);
    } else {
        i -= 1;
        buf[i] = b'0' + v as u8;
    }
    out.extend_from_slice(&buf[i..]);
}

/// Number of decimal digits of `v`.
#[inline]
fn digits(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 10 {
        v /= 10;
        n += 1;
    }
    n
}

#[inline]
fn pad(out: &mut Vec<u8>, n: usize) {
    out.resize(out.len() + n, b' ');
}

impl TextFormat {
    /// Prepares the lines of `catalog`'s events.
    pub fn new(catalog: &Catalog) -> Self {
        let known = catalog
            .events()
            .iter()
            .map(|e| {
                let class = catalog
                    .class_of(e.id)
                    .and_then(|c| catalog.class(c))
                    .map_or("?", |c| c.name.as_str());
                let head = format!("{class:<10} {:<14}", e.name);
                let head_trimmed = head.trim_end_matches(' ').to_string();
                let name = |i: usize| {
                    format!(" {}=", e.args.get(i).map_or(UNNAMED[i], String::as_str)).into_bytes()
                };
                Known {
                    head: head.into_bytes(),
                    head_trimmed: head_trimmed.into_bytes(),
                    args: [name(0), name(1)],
                    declared: e.args.len(),
                }
            })
            .collect();
        TextFormat { known }
    }

    /// Appends the line of `e` (without its newline) to `out`; `time` is in
    /// ns since the clock origin. Returns false, writing nothing, when the
    /// event needs the general formatter (an unknown number, or flags).
    #[inline]
    pub fn line(
        &self,
        out: &mut Vec<u8>,
        label: Option<(&str, usize)>,
        time: u64,
        e: &Event,
    ) -> bool {
        let known = match self.known.get(e.id.0 as usize) {
            Some(k) if e.flags == 0 => k,
            _ => return false,
        };
        if let Some((l, width)) = label {
            out.extend_from_slice(l.as_bytes());
            pad(out, width.saturating_sub(l.chars().count()) + 2);
        }
        // `{:>20}` of `seconds.nanoseconds` (nine decimals), then two spaces.
        let (secs, frac) = (time / 1_000_000_000, time % 1_000_000_000);
        pad(out, 20usize.saturating_sub(digits(secs) + 10));
        put_u64(out, secs);
        out.push(b'.');
        pad_zeros(out, frac);
        out.extend_from_slice(b"  ");
        if e.id == tracer::HOOPS {
            out.extend_from_slice(b"[LOST ");
            put_u64(out, e.args[0]);
            out.extend_from_slice(b" EVENTS] (queue ");
            put_u64(out, e.args[1]);
            out.push(b')');
            return true;
        }
        // `{:>6}` of the source, two spaces.
        if e.source == u32::MAX {
            out.extend_from_slice(b"tracer  ");
        } else {
            let s = u64::from(e.source);
            pad(out, 6usize.saturating_sub(digits(s)));
            put_u64(out, s);
            out.extend_from_slice(b"  ");
        }
        let shown = |i: usize| i < known.declared || e.args[i] != 0;
        if !shown(0) && !shown(1) {
            out.extend_from_slice(&known.head_trimmed);
            return true;
        }
        out.extend_from_slice(&known.head);
        for (i, prefix) in known.args.iter().enumerate() {
            if shown(i) {
                out.extend_from_slice(prefix);
                put_u64(out, e.args[i]);
            }
        }
        true
    }
}

/// Appends `frac` (< 10^9) with nine digits.
#[inline]
fn pad_zeros(out: &mut Vec<u8>, frac: u64) {
    let mut buf = [b'0'; 9];
    let mut v = frac % 1_000_000_000;
    let mut i = 9;
    while i > 1 {
        let p = (v % 100) as usize * 2;
        v /= 100;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&PAIRS[p..p + 2]);
    }
    buf[0] = b'0' + v as u8;
    out.extend_from_slice(&buf);
}
