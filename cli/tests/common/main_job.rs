//! The main job (`examples/standard_init.rs`) as tests run it, and the other
//! examples they run (`examples/corpus`): the example binaries `cargo test`
//! builds beside the command (tests do not build them).

use std::path::{Path, PathBuf};

/// The built `standard_init` example; fails with what to run when it is
/// missing.
pub fn standard_init() -> PathBuf {
    example("standard_init")
}

/// The built example `name` of the library (`standard_init`, `corpus`);
/// fails with what to run when it is missing.
pub fn example(name: &str) -> PathBuf {
    let bin = Path::new(env!("CARGO_BIN_EXE_qtrace"));
    let path = bin
        .parent()
        .expect("binary directory")
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.exists(),
        "{} is missing: run the whole suite with `cargo test --workspace --all-features` (it builds the examples), or `cargo build --example {name}` first",
        path.display()
    );
    path
}
