//! Points the linker at the prebuilt DuckDB library (unless the `bundled`
//! feature compiles it): `DUCKDB_LIB_DIR` must name a folder holding
//! `libduckdb.so` 1.5.6 (scripts/duckdb-lib.sh fetches it; .cargo/config.toml
//! defaults the variable to target/duckdb/1.5.6). The crate's own tests,
//! doc tests and examples get an rpath to it, so they run without LD_LIBRARY_PATH.

use std::path::Path;

fn main() {
    println!("cargo:rerun-if-env-changed=DUCKDB_LIB_DIR");
    if std::env::var_os("CARGO_FEATURE_BUNDLED").is_some() {
        return;
    }
    let dir = std::env::var("DUCKDB_LIB_DIR").unwrap_or_default();
    let lib = Path::new(&dir).join("libduckdb.so");
    println!("cargo:rerun-if-changed={}", lib.display());
    if dir.is_empty() || !lib.is_file() {
        panic!(
            "qtrace-sql links the prebuilt DuckDB 1.5.6 library and did not find it at \
             DUCKDB_LIB_DIR={dir:?}: run `eval \"$(scripts/duckdb-lib.sh)\"` from the \
             repository root (it fetches target/duckdb/1.5.6/libduckdb.so from the npm \
             registry), or build with the feature `bundled` (qtrace-cli: `sql-bundled`) \
             to compile DuckDB from source (~25 min on 2 cores)"
        );
    }
    // Every linked target of this package (tests, examples, doc tests).
    println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
}
