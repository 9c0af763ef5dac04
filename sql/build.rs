//! Points the linker at the prebuilt DuckDB library: `DUCKDB_LIB_DIR` must
//! name a folder holding `libduckdb.so` 1.5.6 (scripts/duckdb-lib.sh fetches
//! it; .cargo/config.toml defaults the variable to target/duckdb/1.5.6). The
//! crate's own tests, doc tests and examples get an rpath to it, so they run
//! without LD_LIBRARY_PATH. Building DuckDB from source instead is the
//! duckdb crate's feature `parquet` (`--features duckdb/parquet`), which
//! this script cannot see: it only warns when the library is missing.

use std::path::Path;

fn main() {
    println!("cargo:rerun-if-env-changed=DUCKDB_LIB_DIR");
    let dir = std::env::var("DUCKDB_LIB_DIR").unwrap_or_default();
    let lib = Path::new(&dir).join("libduckdb.so");
    println!("cargo:rerun-if-changed={}", lib.display());
    if dir.is_empty() || !lib.is_file() {
        println!(
            "cargo:warning=qtrace-sql links the prebuilt DuckDB 1.5.6 library and did not find \
             it at DUCKDB_LIB_DIR={dir:?} (linking will fail with `unable to find library \
             -lduckdb`): run `eval \"$(scripts/duckdb-lib.sh)\"` from the repository root (it \
             fetches target/duckdb/1.5.6/libduckdb.so from the npm registry), or add \
             `--features duckdb/parquet` to compile DuckDB from source (~25 min on 2 cores)"
        );
        return;
    }
    // Every linked target of this package (tests, examples, doc tests).
    println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
}
