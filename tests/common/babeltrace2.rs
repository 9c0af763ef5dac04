//! Running babeltrace2, the reference CTF reader, in tests (each uses
//! this file as `common::…`): a machine without it skips the test with a
//! message, unless `QTRACE_REQUIRE_BABELTRACE2` is set (CI sets it, so a
//! missing tool fails there instead of passing silently).

use std::path::Path;
use std::process::{Command, Output};

/// Skips a babeltrace2 test on a machine without it (prints `SKIPPED: …`),
/// or fails it when `QTRACE_REQUIRE_BABELTRACE2` is set.
pub fn skip_without_babeltrace2() {
    let msg = "babeltrace2 is not on PATH; install it (Debian: apt-get install babeltrace2) to run this test";
    if std::env::var_os("QTRACE_REQUIRE_BABELTRACE2").is_some() {
        panic!("{msg} (QTRACE_REQUIRE_BABELTRACE2 is set)");
    }
    eprintln!("SKIPPED: {msg}");
}

/// `babeltrace2 CTF` (the trace's text, one line per event), or `None`
/// after [`skip_without_babeltrace2`] when babeltrace2 is not on PATH.
pub fn babeltrace2_text(ctf: &Path) -> Option<Output> {
    match Command::new("babeltrace2").arg(ctf).output() {
        Ok(o) => Some(o),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            skip_without_babeltrace2();
            None
        }
        Err(e) => panic!("cannot run babeltrace2: {e}"),
    }
}
