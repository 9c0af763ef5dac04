//! With the feature `sql`, the `qtrace` binary (and the command's tests)
//! carry an rpath to the prebuilt DuckDB library in `DUCKDB_LIB_DIR`
//! (scripts/duckdb-lib.sh; .cargo/config.toml defaults it to
//! target/duckdb/1.5.6), so it runs without LD_LIBRARY_PATH. A binary copied
//! elsewhere needs the library beside it on the loader's path.

fn main() {
    println!("cargo:rerun-if-env-changed=DUCKDB_LIB_DIR");
    if std::env::var_os("CARGO_FEATURE_SQL").is_none() {
        return;
    }
    if let Ok(dir) = std::env::var("DUCKDB_LIB_DIR") {
        if !dir.is_empty() {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
        }
    }
}
