//! The README's queue table names every parameter of every built-in queue
//! type, and nothing that is not one: the parameters are read from the code
//! (the field names in the `Debug` text of each type's default parameters),
//! the table from `README.md`.

use std::collections::BTreeSet;
use std::path::Path;

use qtrace::queues::{CircularParams, FixedParams, OnlineParams, UdpParams};

/// The field names of a `Debug` text such as `T { a: 1, b: Some(x) }`.
fn debug_fields(debug: &str) -> BTreeSet<String> {
    let open = debug.find('{').expect("a struct's Debug text");
    let body = &debug[open + 1..debug.rfind('}').unwrap()];
    let mut fields = BTreeSet::new();
    let (mut depth, mut start) = (0i32, 0);
    let mut push = |part: &str| {
        let name = part.split(':').next().unwrap().trim();
        if !name.is_empty() {
            fields.insert(name.to_string());
        }
    };
    for (i, c) in body.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                push(&body[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    push(&body[start..]);
    fields
}

/// The parameters column of the README's row for queue type `name`.
fn readme_row(name: &str) -> String {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let prefix = format!("| `{name}` |");
    let row = readme
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("README.md has no queue-table row for {name}"));
    row.trim_end_matches('|')
        .rsplit('|')
        .next()
        .unwrap()
        .to_string()
}

/// Backticked words that are plain lower-case identifiers (parameter names;
/// values such as `None` and calls such as `with_file(path)` are not).
fn named_params(column: &str) -> BTreeSet<String> {
    column
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| {
            !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
        .map(str::to_string)
        .collect()
}

fn check(name: &str, fields: BTreeSet<String>, other_api: &[&str]) {
    let row = readme_row(name);
    for f in &fields {
        assert!(
            row.contains(&format!("`{f}`")),
            "README's {name} row does not name the parameter `{f}`: {row}"
        );
    }
    for p in named_params(&row) {
        assert!(
            fields.contains(&p),
            "README's {name} row names `{p}`, which is no parameter of it (fields: {fields:?})"
        );
    }
    for api in other_api {
        assert!(row.contains(api), "README's {name} row should name {api}");
    }
}

#[test]
fn the_debug_parser_reads_nested_values() {
    assert_eq!(
        debug_fields("T { a: Some(1), b: [1, 2], c: X { d: 3 } }"),
        BTreeSet::from(["a".to_string(), "b".to_string(), "c".to_string()])
    );
}

#[test]
fn fixed_row() {
    let fields = debug_fields(&format!("{:?}", FixedParams::default()));
    check("Fixed", fields, &[]);
}

#[test]
fn circular_row() {
    let fields = debug_fields(&format!("{:?}", CircularParams::default()));
    check("Circular", fields, &[]);
}

#[test]
fn online_row() {
    // The output is not a public field: it is set with `with_file` or
    // `with_writer` (compile-time uses of both below), which the row names;
    // its Debug field `target` stands for them.
    // So is `rotation`, set with `with_rotation` and `with_retention`.
    let _ = |p: OnlineParams| p.with_file("x").with_writer(std::io::sink());
    let _ = |p: OnlineParams| p.with_rotation(None, None).with_retention(None, None);
    let mut fields = debug_fields(&format!("{:?}", OnlineParams::default()));
    assert!(fields.remove("target"), "{fields:?}");
    check(
        "Online",
        fields,
        &[
            "`with_file(path)`",
            "`with_writer(w)`",
            "`with_rotation(max_bytes, max_age)`",
            "`with_retention(max_chunks, max_bytes)`",
        ],
    );
}

#[test]
fn udp_row() {
    let _ = UdpParams::to;
    #[allow(unused_mut)]
    let mut fields = debug_fields(&format!("{:?}", UdpParams::default()));
    // `key` is a parameter only with feature `keys`; the row names it.
    #[cfg(not(feature = "keys"))]
    fields.insert("key".to_string());
    check("Udp", fields, &["`UdpParams::to(remote)`"]);
}

#[test]
fn dummy_row() {
    assert!(readme_row("Dummy").contains("`()`"));
}
