//! Fitting figures into the room a terminal has: a count shortened
//! visibly (`14.9k`, `7.46M`: [`short`]), a table that drops columns in a
//! fixed order ([`fit_columns`]), a line cut at a word with a mark
//! ([`cut_words`]). Nothing here cuts a number silently: a figure is shown
//! whole, shortened with its unit, or not at all.

/// The units of [`short`]: thousands, millions, ... (SI prefixes).
const UNITS: [(u64, char); 6] = [
    (1_000, 'k'),
    (1_000_000, 'M'),
    (1_000_000_000, 'G'),
    (1_000_000_000_000, 'T'),
    (1_000_000_000_000_000, 'P'),
    (1_000_000_000_000_000_000, 'E'),
];

/// `n` in at most `width` characters: whole when it fits, else with three
/// significant digits and an SI prefix (`14932` → `14.9k`, `7_460_000` →
/// `7.46M`, rounded to the nearest), fewer digits when even that is too
/// wide (`7.5M`, `7M`); `None` when no form fits. A shortened figure `v u`
/// stands for `n` within half a unit of its last digit.
pub fn short(n: u64, width: usize) -> Option<String> {
    let whole = n.to_string();
    if whole.len() <= width {
        return Some(whole);
    }
    // The most digits after the point first (three significant digits).
    for max_decimals in (0..=2u32).rev() {
        if let Some(s) = shortened(n, max_decimals) {
            if s.len() <= width {
                return Some(s);
            }
        }
    }
    None
}

/// `n` shortened with at most `max_decimals` digits after the point and at
/// most three significant digits, in the smallest unit where it is below
/// 1000 once rounded.
fn shortened(n: u64, max_decimals: u32) -> Option<String> {
    for (unit, prefix) in UNITS {
        let n = u128::from(n);
        let unit = u128::from(unit);
        // Three significant digits: 2 decimals below 10 units, 1 below 100.
        let digits = if n < 10 * unit {
            2
        } else if n < 100 * unit {
            1
        } else {
            0
        }
        .min(max_decimals);
        let step = unit / 10u128.pow(digits);
        let q = (n + step / 2) / step;
        if q >= 1000 * 10u128.pow(digits) {
            continue; // rounds up to 1000 of this unit: the next one
        }
        let int = q / 10u128.pow(digits);
        let frac = q % 10u128.pow(digits);
        return Some(if digits == 0 {
            format!("{int}{prefix}")
        } else {
            format!("{int}.{frac:0w$}{prefix}", w = digits as usize)
        });
    }
    None
}

/// Reads back a figure of [`short`]: its value and the most it may differ
/// from the figure it stands for (half a unit of its last digit; 0 for a
/// whole number).
#[cfg(test)]
pub fn parse_short(s: &str) -> Option<(u64, u64)> {
    let Some(prefix) = s.chars().last().filter(|c| c.is_ascii_alphabetic()) else {
        return s.parse().ok().map(|n| (n, 0));
    };
    let (unit, _) = UNITS.iter().find(|(_, p)| *p == prefix)?;
    let digits = &s[..s.len() - 1];
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let scale = 10u64.pow(frac.len() as u32);
    let q: u64 = format!("{int}{frac}").parse().ok()?;
    let step = unit / scale;
    Some((q * step, step / 2))
}

/// One cell of a table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cell {
    /// Text shown whole (a duration, a percentage, a word).
    Text(String),
    /// A name, cut with `…` when its column is too narrow.
    Name(String),
    /// A count, shortened ([`short`]) when its column is too narrow.
    Count(u64),
    /// A count a second, `N/s`, shortened likewise; `-` when unknown.
    Rate(Option<u64>),
}

impl Cell {
    /// The cell at its widest (as plain text shows it).
    pub fn whole(&self) -> String {
        match self {
            Cell::Text(s) | Cell::Name(s) => s.clone(),
            Cell::Count(n) => n.to_string(),
            Cell::Rate(Some(n)) => format!("{n}/s"),
            Cell::Rate(None) => "-".to_string(),
        }
    }

    /// The cell in at most `width` characters, if it can be.
    fn within(&self, width: usize) -> Option<String> {
        match self {
            Cell::Text(s) => (s.chars().count() <= width).then(|| s.clone()),
            Cell::Name(s) if s.chars().count() <= width => Some(s.clone()),
            Cell::Name(s) => {
                let head: String = s.chars().take(width.checked_sub(1)?).collect();
                Some(format!("{head}…"))
            }
            Cell::Count(n) => short(*n, width),
            Cell::Rate(Some(n)) => short(*n, width.checked_sub(2)?).map(|s| format!("{s}/s")),
            Cell::Rate(None) => (width >= 1).then(|| "-".to_string()),
        }
    }
}

/// A column: its header and the place it has in the order columns are
/// dropped (0: never; 1 is dropped first, then 2, ...).
#[derive(Clone, Copy, Debug)]
pub struct Column {
    /// The header.
    pub header: &'static str,
    /// When it is dropped (0: never).
    pub drop: u8,
    /// The narrowest it may be made (its counts shortened), or `None`:
    /// shown whole or dropped.
    pub narrowest: Option<usize>,
}

/// A table fitted to a width: the columns kept (indices), their widths,
/// and the cells as shown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fitted {
    /// Indices of the columns kept.
    pub kept: Vec<usize>,
    /// Their widths.
    pub widths: Vec<u16>,
    /// The header cells kept.
    pub header: Vec<String>,
    /// The rows' cells kept, as shown.
    pub rows: Vec<Vec<String>>,
}

/// Fits `rows` under `columns` into `width` characters (one space between
/// columns): every cell whole while that fits; then the shortenable
/// columns narrowed to what they need shortened; then columns dropped in
/// their order. `None` when even the columns never dropped, at their
/// narrowest, do not fit.
pub fn fit_columns(columns: &[Column], rows: &[Vec<Cell>], width: usize) -> Option<Fitted> {
    let whole_width = |c: usize| {
        rows.iter()
            .map(|r| r[c].whole().chars().count())
            .chain([columns[c].header.len()])
            .max()
            .unwrap_or(0)
    };
    // The width each column needs: whole, or at its narrowest.
    let mut need: Vec<usize> = (0..columns.len()).map(whole_width).collect();
    let total = |kept: &[usize], need: &[usize]| {
        kept.iter().map(|&c| need[c]).sum::<usize>() + kept.len().saturating_sub(1)
    };
    let mut kept: Vec<usize> = (0..columns.len()).collect();
    if total(&kept, &need) > width {
        for (c, col) in columns.iter().enumerate() {
            if let Some(n) = col.narrowest {
                need[c] = need[c].min(n.max(col.header.len()));
            }
        }
    }
    let mut order: Vec<usize> = (0..columns.len())
        .filter(|&c| columns[c].drop > 0)
        .collect();
    order.sort_by_key(|&c| columns[c].drop);
    let mut order = order.into_iter();
    while total(&kept, &need) > width {
        let c = order.next()?;
        kept.retain(|&k| k != c);
    }
    // Whatever room is left goes back to the shortened columns, so a count
    // is shortened only as much as it must be.
    let mut spare = width - total(&kept, &need);
    for &c in &kept {
        let more = whole_width(c).saturating_sub(need[c]).min(spare);
        need[c] += more;
        spare -= more;
    }
    // And then to the gaps between columns, up to three spaces each.
    let mut widths: Vec<usize> = kept.iter().map(|&c| need[c]).collect();
    let gaps = widths.len().saturating_sub(1);
    if let Some(pad) = spare.checked_div(gaps) {
        let pad = pad.min(2);
        for w in &mut widths[..gaps] {
            *w += pad;
        }
    }
    let shown: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            kept.iter()
                .map(|&c| r[c].within(need[c]).unwrap_or_else(|| "…".to_string()))
                .collect()
        })
        .collect();
    Some(Fitted {
        widths: widths.iter().map(|&w| w as u16).collect(),
        header: kept
            .iter()
            .map(|&c| columns[c].header.to_string())
            .collect(),
        kept,
        rows: shown,
    })
}

/// `line` in at most `width` characters: whole, or cut after its last word
/// that fits, with `…` (a number in it is never cut).
pub fn cut_words(line: &str, width: usize) -> String {
    if line.chars().count() <= width {
        return line.to_string();
    }
    let mut end = 0;
    for (i, c) in line.char_indices() {
        if c == ' ' && line[..i].trim_end().chars().count() < width {
            end = i;
        }
    }
    let head = line[..end].trim_end();
    if head.is_empty() {
        "…".chars().take(width).collect()
    } else {
        format!("{head}…")
    }
}
