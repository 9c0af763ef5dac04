//! The one-object JSON summaries of `--json` (`recv`, `recover`,
//! `convert`): a flat object built field by field, printed as one line on
//! standard output at the end.

use std::fmt::Write as _;

use super::format::json_str;

/// A JSON object under construction.
#[derive(Debug, Default)]
pub struct JsonObject(String);

impl JsonObject {
    /// An empty object.
    pub fn new() -> Self {
        Self::default()
    }

    fn key(&mut self, key: &str) -> &mut String {
        self.0.push(if self.0.is_empty() { '{' } else { ',' });
        json_str(&mut self.0, key);
        self.0.push(':');
        &mut self.0
    }

    /// `"key":n`.
    pub fn u64(mut self, key: &str, n: u64) -> Self {
        let _ = write!(self.key(key), "{n}");
        self
    }

    /// `"key":x` (three decimals; `null` when not finite).
    pub fn f64(mut self, key: &str, x: f64) -> Self {
        let out = self.key(key);
        if x.is_finite() {
            let _ = write!(out, "{x:.3}");
        } else {
            out.push_str("null");
        }
        self
    }

    /// `"key":true` or `false`.
    pub fn bool(mut self, key: &str, b: bool) -> Self {
        self.key(key).push_str(if b { "true" } else { "false" });
        self
    }

    /// `"key":"s"`, or `null`.
    pub fn str(mut self, key: &str, s: Option<&str>) -> Self {
        let out = self.key(key);
        match s {
            Some(s) => json_str(out, s),
            None => out.push_str("null"),
        }
        self
    }

    /// `"key":[...]` of strings.
    pub fn strs<'a>(mut self, key: &str, items: impl IntoIterator<Item = &'a str>) -> Self {
        let out = self.key(key);
        out.push('[');
        for (i, s) in items.into_iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            json_str(out, s);
        }
        out.push(']');
        self
    }

    /// `"key":<raw>`: an object or array already written as JSON.
    pub fn raw(mut self, key: &str, json: &str) -> Self {
        self.key(key).push_str(json);
        self
    }

    /// The object's text (`{}` when empty).
    pub fn finish(mut self) -> String {
        if self.0.is_empty() {
            self.0.push('{');
        }
        self.0.push('}');
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::JsonObject;

    #[test]
    fn fields_in_order_escaped() {
        let o = JsonObject::new()
            .u64("n", 3)
            .str("path", Some("a\"b"))
            .str("error", None)
            .f64("s", 1.5)
            .strs("list", ["x", "y"])
            .finish();
        assert_eq!(
            o,
            r#"{"n":3,"path":"a\"b","error":null,"s":1.500,"list":["x","y"]}"#
        );
        assert_eq!(JsonObject::new().finish(), "{}");
    }
}
