//! A command's run that must succeed, in the command's tests (each uses
//! this file as `common::…`).

use std::process::Output;

/// Fails the test, showing the command's stderr, unless it exited with
/// status 0.
pub fn assert_success(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
