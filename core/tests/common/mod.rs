//! Helpers shared by the core's test binaries: the worked examples of
//! FORMAT.md read out of the document, as bytes.

/// The bytes of a hex dump (`0000: 51 54 …` lines).
pub fn unhex(dump: &str) -> Vec<u8> {
    dump.lines()
        .filter_map(|l| l.split_once(':'))
        .flat_map(|(_, bytes)| {
            bytes
                .split_whitespace()
                .map(|b| u8::from_str_radix(b, 16).unwrap())
        })
        .collect()
}

/// The dump that follows `<!-- example:NAME -->` in FORMAT.md.
pub fn format_md_example(name: &str) -> String {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../FORMAT.md")).unwrap();
    let marker = format!("<!-- example:{name} -->");
    let at = doc
        .find(&marker)
        .unwrap_or_else(|| panic!("no {marker} in FORMAT.md"));
    let rest = &doc[at..];
    let start = rest.find("```text\n").unwrap() + 8;
    let end = start + rest[start..].find("```").unwrap();
    rest[start..end].to_string()
}
