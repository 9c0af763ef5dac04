//! The main job (`examples/standard_init.rs`) as tests run it: the example
//! binary `cargo test` builds beside the command (tests do not build it).

use std::path::{Path, PathBuf};

/// The built `standard_init` example; fails with what to run when it is
/// missing.
pub fn standard_init() -> PathBuf {
    let bin = Path::new(env!("CARGO_BIN_EXE_qtrace"));
    let path = bin
        .parent()
        .expect("binary directory")
        .join("examples")
        .join(format!("standard_init{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.exists(),
        "{} is missing: run the whole suite with `cargo test --workspace --all-features` (it builds the examples), or `cargo build --example standard_init` first",
        path.display()
    );
    path
}
