//! A test that runs another test of its own binary as a child process (to
//! crash it, or to hold a file from another process), and waits until the
//! child says it is ready.

use std::io::{BufRead, BufReader, Lines};
use std::process::{Child, ChildStdout, Command, Stdio};

/// Starts this test binary again, running only the test `name` of the
/// caller's file (`module` is the caller's `module_path!()`), with `env`
/// set and stderr as given; returns once the child printed a line holding
/// `ready`, with the child and the rest of its standard output.
pub fn spawn_ready(
    module: &str,
    name: &str,
    env: &[(&str, &std::ffi::OsStr)],
    stderr: Stdio,
    ready: &str,
) -> (Child, Lines<BufReader<ChildStdout>>) {
    // The child's full test name: `name` prefixed by the caller's module
    // path in its test binary (`crash::` in tests/storage/).
    let test = match module.split_once("::") {
        Some((_, module)) => format!("{module}::{name}"),
        None => name.to_owned(),
    };
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &test, "--nocapture", "--test-threads=1"])
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(
        lines.any(|l| l.is_ok_and(|l| l.contains(ready))),
        "the child did not start"
    );
    (child, lines)
}
