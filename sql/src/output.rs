//! A result's rows as text: an aligned table, CSV or JSON lines
//! ([`Format`]); [`Printer`] takes the Arrow batches DuckDB hands back, one
//! at a time.

use std::fmt::Write as _;
use std::io::{self, Write};

use duckdb::arrow::array::{Array, ArrayRef, BooleanArray};
use duckdb::arrow::datatypes::{DataType, Schema};
use duckdb::arrow::record_batch::RecordBatch;
use duckdb::arrow::util::display::{ArrayFormatter, FormatOptions};

/// How a result is printed.
///
/// ```
/// use qtrace_sql::Format;
///
/// assert_eq!("csv".parse::<Format>(), Ok(Format::Csv));
/// assert!("xml".parse::<Format>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    /// Columns aligned under a header (numbers to the right), then a row
    /// count; at most [`Printer::max_rows`] rows are shown.
    #[default]
    Table,
    /// RFC 4180: a header line, fields quoted when they hold a comma, a
    /// quote or a line break; NULL is an empty field.
    Csv,
    /// One JSON object per row (JSON lines): numbers and booleans as JSON
    /// values, NULL as `null`, everything else as a string.
    Json,
}

impl std::str::FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "table" => Ok(Format::Table),
            "csv" => Ok(Format::Csv),
            "json" | "jsonl" => Ok(Format::Json),
            _ => Err(format!("unknown format {s:?}: table, csv or json")),
        }
    }
}

/// What kind of text a column's values are.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Number,
    Float,
    Bool,
    Text,
}

fn kind(t: &DataType) -> Kind {
    match t {
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64
        | DataType::Decimal32(..)
        | DataType::Decimal64(..)
        | DataType::Decimal128(..)
        | DataType::Decimal256(..) => Kind::Number,
        DataType::Float16 | DataType::Float32 | DataType::Float64 => Kind::Float,
        DataType::Boolean => Kind::Bool,
        DataType::Dictionary(_, v) => kind(v),
        _ => Kind::Text,
    }
}

/// Prints one result in one [`Format`].
///
/// ```
/// use qtrace_sql::{Format, Printer};
///
/// let mut out = Vec::new();
/// let mut p = Printer::new(Format::Csv, &mut out);
/// // (batches come from `Engine::run`; a result with no batch prints its header only)
/// p.finish()?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Printer<'a> {
    format: Format,
    out: &'a mut dyn Write,
    /// Most rows a table shows (the rest are counted).
    pub max_rows: usize,
    names: Vec<String>,
    kinds: Vec<Kind>,
    started: bool,
    /// Table: the rows kept, as text (`None`: NULL).
    rows: Vec<Vec<Option<String>>>,
    count: u64,
}

impl<'a> Printer<'a> {
    /// A printer writing to `out`; a table shows at most 10,000 rows.
    pub fn new(format: Format, out: &'a mut dyn Write) -> Self {
        Printer {
            format,
            out,
            max_rows: 10_000,
            names: Vec::new(),
            kinds: Vec::new(),
            started: false,
            rows: Vec::new(),
            count: 0,
        }
    }

    /// Takes the result's columns (before any batch).
    ///
    /// # Errors
    ///
    /// The output's error (CSV writes its header here).
    pub fn schema(&mut self, schema: &Schema) -> io::Result<()> {
        self.names = schema.fields().iter().map(|f| f.name().clone()).collect();
        self.kinds = schema
            .fields()
            .iter()
            .map(|f| kind(f.data_type()))
            .collect();
        self.started = true;
        if self.format == Format::Csv {
            let mut line = String::new();
            for (i, n) in self.names.iter().enumerate() {
                if i > 0 {
                    line.push(',');
                }
                csv_field(&mut line, n);
            }
            line.push('\n');
            self.out.write_all(line.as_bytes())?;
        }
        Ok(())
    }

    /// Prints (or, for a table, keeps) a batch of rows.
    ///
    /// # Errors
    ///
    /// The output's error; a value Arrow cannot format as text.
    pub fn batch(&mut self, batch: &RecordBatch) -> io::Result<()> {
        let options = FormatOptions::default().with_null("NULL");
        let columns: Vec<&ArrayRef> = batch.columns().iter().collect();
        let formatters = columns
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
            .collect::<Result<Vec<_>, _>>()
            .map_err(io::Error::other)?;
        let mut text = String::new();
        let mut buf = String::new();
        for row in 0..batch.num_rows() {
            self.count += 1;
            let value = |buf: &mut String, col: usize| -> Option<()> {
                buf.clear();
                if columns[col].is_null(row) {
                    return None;
                }
                let _ = write!(buf, "{}", formatters[col].value(row));
                Some(())
            };
            match self.format {
                Format::Table => {
                    if self.rows.len() < self.max_rows {
                        let r = (0..columns.len())
                            .map(|c| value(&mut buf, c).map(|()| buf.clone()))
                            .collect();
                        self.rows.push(r);
                    }
                }
                Format::Csv => {
                    for c in 0..columns.len() {
                        if c > 0 {
                            text.push(',');
                        }
                        if value(&mut buf, c).is_some() {
                            csv_field(&mut text, &buf);
                        }
                    }
                    text.push('\n');
                }
                Format::Json => {
                    text.push('{');
                    for (c, column) in columns.iter().enumerate() {
                        if c > 0 {
                            text.push(',');
                        }
                        json_string(&mut text, &self.names[c]);
                        text.push(':');
                        let bool_col = column.as_any().downcast_ref::<BooleanArray>();
                        match (value(&mut buf, c), self.kinds[c]) {
                            (None, _) => text.push_str("null"),
                            (Some(()), Kind::Number) => text.push_str(&buf),
                            (Some(()), Kind::Float) => {
                                if buf.parse::<f64>().is_ok_and(f64::is_finite) {
                                    text.push_str(&buf)
                                } else {
                                    text.push_str("null")
                                }
                            }
                            (Some(()), Kind::Bool) => match bool_col {
                                Some(b) => {
                                    text.push_str(if b.value(row) { "true" } else { "false" })
                                }
                                None => json_string(&mut text, &buf),
                            },
                            (Some(()), Kind::Text) => json_string(&mut text, &buf),
                        }
                    }
                    text.push_str("}\n");
                }
            }
            if text.len() >= 64 * 1024 {
                self.out.write_all(text.as_bytes())?;
                text.clear();
            }
        }
        self.out.write_all(text.as_bytes())
    }

    /// Ends the result (a table is printed here) and returns its row count.
    ///
    /// # Errors
    ///
    /// The output's error.
    pub fn finish(self) -> io::Result<u64> {
        if self.format == Format::Table && self.started && !self.names.is_empty() {
            let shown = |v: &Option<String>| v.as_deref().unwrap_or("NULL").chars().count();
            let widths: Vec<usize> = (0..self.names.len())
                .map(|c| {
                    self.rows
                        .iter()
                        .map(|r| shown(&r[c]))
                        .chain([self.names[c].chars().count()])
                        .max()
                        .unwrap_or(0)
                })
                .collect();
            let mut text = String::new();
            let line = |text: &mut String, cells: &mut dyn Iterator<Item = (usize, &str)>| {
                let start = text.len();
                for (c, cell) in cells {
                    if c > 0 {
                        text.push_str("  ");
                    }
                    let pad = widths[c].saturating_sub(cell.chars().count());
                    let right = matches!(self.kinds[c], Kind::Number | Kind::Float);
                    if right {
                        text.extend(std::iter::repeat_n(' ', pad));
                    }
                    text.push_str(cell);
                    if !right {
                        text.extend(std::iter::repeat_n(' ', pad));
                    }
                }
                let end = text.trim_end().len().max(start);
                text.truncate(end);
                text.push('\n');
            };
            line(
                &mut text,
                &mut self.names.iter().map(String::as_str).enumerate(),
            );
            line(
                &mut text,
                &mut widths
                    .iter()
                    .map(|&w| "-".repeat(w))
                    .collect::<Vec<_>>()
                    .iter()
                    .map(String::as_str)
                    .enumerate(),
            );
            for r in &self.rows {
                line(
                    &mut text,
                    &mut r.iter().map(|v| v.as_deref().unwrap_or("NULL")).enumerate(),
                );
            }
            let hidden = self.count - self.rows.len() as u64;
            let plural = if self.count == 1 { "" } else { "s" };
            if hidden > 0 {
                let _ = writeln!(
                    text,
                    "({} rows, {} shown: --format csv or json prints them all)",
                    self.count,
                    self.rows.len()
                );
            } else {
                let _ = writeln!(text, "({} row{plural})", self.count);
            }
            self.out.write_all(text.as_bytes())?;
        }
        self.out.flush()?;
        Ok(self.count)
    }
}

/// Appends `s` as one CSV field (RFC 4180).
fn csv_field(out: &mut String, s: &str) {
    if s.contains([',', '"', '\n', '\r']) || s.starts_with(' ') || s.ends_with(' ') {
        out.push('"');
        out.push_str(&s.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(s);
    }
}

/// Appends `s` as a JSON string (quoted; qtrace-core's one escaper).
fn json_string(out: &mut String, s: &str) {
    let _ = write!(out, "\"{}\"", qtrace_core::json::JsonEscaped(s));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_only_when_needed() {
        let mut s = String::new();
        for f in ["plain", "a,b", "say \"hi\"", "two\nlines", " pad"] {
            csv_field(&mut s, f);
            s.push('|');
        }
        assert_eq!(
            s,
            "plain|\"a,b\"|\"say \"\"hi\"\"\"|\"two\nlines\"|\" pad\"|"
        );
    }

    #[test]
    fn json_strings_escape_quotes_backslashes_and_controls() {
        let mut s = String::new();
        json_string(&mut s, "a\"b\\c\n\u{1}é");
        assert_eq!(s, "\"a\\\"b\\\\c\\n\\u0001é\"");
    }
}
