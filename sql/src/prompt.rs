//! The interactive prompt: statements read line by line, each run when a
//! line ends it with `;` (outside quotes and comments), plus a few dot
//! commands. Works the same on a terminal and on a pipe (no prompt text
//! then).

use std::io::{self, BufRead, Write};

use crate::output::{Format, Printer};
use crate::views::READY;
use crate::{Engine, Error};

/// The dot commands, for `.help`.
const HELP: &str = "\
Statements end with `;` and may span lines. Commands:
  .views               the ready views
  .mode table|csv|json how results are printed
  .help                this text
  .quit                leave (or end of input: Ctrl-D)
";

/// Where a statement's text stands after a line: whether it is complete
/// (ends with `;` outside a string, a quoted name or a comment).
#[derive(Debug, Default)]
struct Scanner {
    quote: Option<char>,
    block_comment: bool,
}

impl Scanner {
    /// Scans one line; returns whether the text so far ends a statement.
    fn line(&mut self, line: &str) -> bool {
        let mut last = None;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            if self.block_comment {
                if c == '*' && chars.peek() == Some(&'/') {
                    chars.next();
                    self.block_comment = false;
                }
                continue;
            }
            match self.quote {
                Some(q) if c == q => self.quote = None,
                Some(_) => {}
                None => match c {
                    '\'' | '"' => self.quote = Some(c),
                    '-' if chars.peek() == Some(&'-') => break,
                    '/' if chars.peek() == Some(&'*') => {
                        chars.next();
                        self.block_comment = true;
                    }
                    c if c.is_whitespace() => continue,
                    _ => {}
                },
            }
            last = Some(c);
        }
        self.quote.is_none() && !self.block_comment && last == Some(';')
    }
}

/// Runs the statements read from `input`, printing results on `out` and
/// errors on `err` (a failed statement does not stop the ones after it).
/// With `interactive`, a prompt is shown on `err` before each line. Returns
/// how many statements failed.
///
/// ```
/// use qtrace_sql::{prompt, Engine, Format, Options};
///
/// let engine = Engine::empty(&Options::default())?;
/// let (mut out, mut err) = (Vec::new(), Vec::new());
/// let input = "SELECT 1 + 1 AS two;\nSELECT nonsense;\n.mode csv\nSELECT 'a' AS x\n";
/// let failed = prompt(&engine, &mut input.as_bytes(), &mut out, &mut err, false, Format::Table)?;
/// assert_eq!(failed, 1);
/// assert_eq!(String::from_utf8(out).unwrap(), "two\n---\n  2\n(1 row)\nx\na\n");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// Reading `input` failed, or writing `out` or `err` failed.
pub fn prompt(
    engine: &Engine,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
    err: &mut dyn Write,
    interactive: bool,
    mut format: Format,
) -> io::Result<u64> {
    let mut failed = 0;
    let mut text = String::new();
    let mut scanner = Scanner::default();
    let mut line = String::new();
    loop {
        if interactive {
            err.write_all(if text.is_empty() {
                b"qtrace> "
            } else {
                b"   ...> "
            })?;
            err.flush()?;
        }
        line.clear();
        let eof = input.read_line(&mut line)? == 0;
        if eof {
            if interactive {
                err.write_all(b"\n")?;
            }
            if !text.trim().is_empty() {
                failed += run_one(engine, &text, format, out, err)?;
            }
            return Ok(failed);
        }
        let trimmed = line.trim();
        if text.is_empty() && trimmed.starts_with('.') {
            let mut words = trimmed.split_whitespace();
            match (words.next(), words.next()) {
                (Some(".quit" | ".exit"), _) => return Ok(failed),
                (Some(".help"), _) => err.write_all(HELP.as_bytes())?,
                (Some(".views"), _) => {
                    for (name, what) in READY {
                        writeln!(out, "{name:<15} {what}")?;
                    }
                }
                (Some(".mode"), Some(m)) => match m.parse() {
                    Ok(f) => format = f,
                    Err(e) => {
                        writeln!(err, "Error: {e}")?;
                        failed += 1;
                    }
                },
                _ => {
                    writeln!(err, "Error: unknown command {trimmed:?} (.help lists them)")?;
                    failed += 1;
                }
            }
            continue;
        }
        if text.is_empty() && trimmed.is_empty() {
            continue;
        }
        text.push_str(&line);
        if scanner.line(&line) {
            failed += run_one(engine, &text, format, out, err)?;
            text.clear();
            scanner = Scanner::default();
        }
    }
}

/// Runs one statement; returns 1 if it failed (its error printed on `err`).
fn run_one(
    engine: &Engine,
    sql: &str,
    format: Format,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<u64> {
    match engine.run(sql, Printer::new(format, out)) {
        Ok(_) => Ok(0),
        Err(Error::Output(e)) => Err(e),
        Err(e) => {
            writeln!(err, "Error: {e}")?;
            Ok(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Scanner;

    fn ends(lines: &[&str]) -> Vec<bool> {
        let mut s = Scanner::default();
        lines.iter().map(|l| s.line(l)).collect()
    }

    #[test]
    fn a_statement_ends_at_a_semicolon_outside_quotes_and_comments() {
        assert_eq!(ends(&["SELECT 1;"]), [true]);
        assert_eq!(ends(&["SELECT", "1 ;  "]), [false, true]);
        assert_eq!(ends(&["SELECT ';", "'", ";"]), [false, false, true]);
        assert_eq!(ends(&["SELECT 1 -- done;", ";"]), [false, true]);
        assert_eq!(ends(&["SELECT /* ;", "*/ 1;"]), [false, true]);
        assert_eq!(ends(&["SELECT \"a;b\" FROM t;"]), [true]);
    }
}
