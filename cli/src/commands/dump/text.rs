//! The fast path of `qtrace dump`'s text lines. Per event number, the padded
//! `class event` text and the ` name=` prefixes are made once, as fixed-size
//! arrays; a line is built in a buffer pre-filled with spaces (padding
//! is a move of the cursor), with fixed-size copies and a two-digits-a-step
//! integer formatter, in place at the end of the output buffer (no copy). Output is byte
//! for byte that of `dump::text_line` (a test checks both on every built-in
//! event and corner cases); what does not fit the fixed sizes (long names or
//! labels), unknown events and flags go through `text_line`.

use qtrace::classes::{tracer, Catalog};
use qtrace::export::args::UNNAMED;
use qtrace::Event;
use qtrace::TRACER_SOURCE;

/// Bytes of `{class:<10} {event:<14}` kept per event (longer names: slow path).
const HEAD: usize = 48;
/// Bytes of ` name=` kept per argument.
const ARG: usize = 24;
/// Longest label (file name, padded) on the fast path.
const LABEL: usize = 64;
/// The line buffer: label + 2, time 20 + 2, source 10 + 2, head, two
/// arguments of a prefix and 20 digits each, with room to spare.
const LINE: usize = LABEL + 2 + 22 + 12 + HEAD + 2 * (ARG + 20) + 16;

/// "00" to "99": two digits per division.
const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// What a known event's line is made of.
struct Known {
    /// `{class:<10} {event:<14}`, then spaces.
    head: [u8; HEAD],
    head_len: usize,
    /// Its length without trailing spaces (a line with no arguments).
    head_trimmed: usize,
    /// ` name=` for each slot, then spaces.
    args: [([u8; ARG], usize); 2],
    /// Declared slots.
    declared: usize,
}

/// Text lines of one file's events.
pub struct TextFormat {
    /// Per event number; `None` where a name does not fit the fixed sizes.
    known: Vec<Option<Known>>,
}

/// Copies `s` into a space-filled array of `N` bytes; `None` if too long.
fn fixed<const N: usize>(s: &str) -> Option<([u8; N], usize)> {
    let mut a = [b' '; N];
    a.get_mut(..s.len())?.copy_from_slice(s.as_bytes());
    Some((a, s.len()))
}

/// Writes `v` in decimal at `b[p..]`; returns the new cursor.
#[inline(always)]
fn put_u64(b: &mut [u8; LINE], p: usize, v: u64) -> usize {
    let n = v.checked_ilog10().unwrap_or(0) as usize + 1;
    let mut end = p + n;
    let mut v = v;
    while v >= 100 {
        let d = (v % 100) as usize * 2;
        v /= 100;
        end -= 2;
        b[end..end + 2].copy_from_slice(&PAIRS[d..d + 2]);
    }
    if v >= 10 {
        let d = v as usize * 2;
        b[p..p + 2].copy_from_slice(&PAIRS[d..d + 2]);
    } else {
        b[p] = b'0' + v as u8;
    }
    p + n
}

/// Writes `frac` (< 10^9) with nine digits at `b[p..]`.
#[inline(always)]
fn put_nine(b: &mut [u8; LINE], p: usize, frac: u64) -> usize {
    let mut v = frac % 1_000_000_000;
    let mut end = p + 9;
    while end > p + 1 {
        let d = (v % 100) as usize * 2;
        v /= 100;
        end -= 2;
        b[end..end + 2].copy_from_slice(&PAIRS[d..d + 2]);
    }
    b[p] = b'0' + v as u8;
    p + 9
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
                let (head_arr, head_len) = fixed::<HEAD>(&head)?;
                let name = |i: usize| {
                    fixed::<ARG>(&format!(
                        " {}=",
                        e.args.get(i).map_or(UNNAMED[i], String::as_str)
                    ))
                };
                Some(Known {
                    head: head_arr,
                    head_len,
                    head_trimmed: head.trim_end_matches(' ').len(),
                    args: [name(0)?, name(1)?],
                    declared: e.args.len(),
                })
            })
            .collect();
        TextFormat { known }
    }

    /// Appends the line of `e` (without its newline) to `out`; `time` is in
    /// ns since the clock origin. Returns false, writing nothing, when the
    /// event needs the general formatter (an unknown number, flags, or names
    /// or a label longer than the fixed sizes).
    #[inline]
    pub fn line(
        &self,
        out: &mut Vec<u8>,
        label: Option<(&str, usize)>,
        time: u64,
        e: &Event,
    ) -> bool {
        let known = match self.known.get(e.id.0 as usize) {
            Some(Some(k)) if e.flags == 0 => k,
            _ => return false,
        };
        let label = match label {
            Some((l, width)) => {
                let pad = width.saturating_sub(l.chars().count());
                if l.len() + pad > LABEL {
                    return false;
                }
                Some((l, pad))
            }
            None => None,
        };
        // The line is built in place at the end of `out`, space-filled
        // (padding is a move of the cursor), then cut to its length.
        let start = out.len();
        out.resize(start + LINE, b' ');
        let b: &mut [u8; LINE] = (&mut out[start..]).try_into().expect("LINE bytes");
        let mut p = 0;
        if let Some((l, pad)) = label {
            b[..l.len()].copy_from_slice(l.as_bytes());
            p = l.len() + pad + 2;
        }
        // `{:>20}` of `seconds.nanoseconds` (nine decimals), then two spaces.
        let (secs, frac) = (time / 1_000_000_000, time % 1_000_000_000);
        let width = secs.checked_ilog10().unwrap_or(0) as usize + 1 + 10;
        p += 20usize.saturating_sub(width);
        p = put_u64(b, p, secs);
        b[p] = b'.';
        p = put_nine(b, p + 1, frac) + 2;
        if e.id == tracer::HOOPS {
            b[p..p + 6].copy_from_slice(b"[LOST ");
            p = put_u64(b, p + 6, e.args[0]);
            b[p..p + 16].copy_from_slice(b" EVENTS] (queue ");
            p = put_u64(b, p + 16, e.args[1]);
            b[p] = b')';
            out.truncate(start + p + 1);
            return true;
        }
        // `{:>6}` of the source, two spaces.
        if e.source == TRACER_SOURCE {
            b[p..p + 6].copy_from_slice(b"tracer");
            p += 8;
        } else {
            let s = u64::from(e.source);
            let n = s.checked_ilog10().unwrap_or(0) as usize + 1;
            p += 6usize.saturating_sub(n);
            p = put_u64(b, p, s) + 2;
        }
        b[p..p + HEAD].copy_from_slice(&known.head);
        let shown = |i: usize| i < known.declared || e.args[i] != 0;
        if !shown(0) && !shown(1) {
            out.truncate(start + p + known.head_trimmed);
            return true;
        }
        p += known.head_len;
        for (i, (prefix, len)) in known.args.iter().enumerate() {
            if shown(i) {
                b[p..p + ARG].copy_from_slice(prefix);
                p = put_u64(b, p + len, e.args[i]);
            }
        }
        out.truncate(start + p);
        true
    }
}
