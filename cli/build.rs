//! With the feature `sql`, the `qtrace-sql` executable (the engine of
//! `qtrace sql`, the only one that links DuckDB's library) gets the RUNPATH
//! `$ORIGIN:$ORIGIN/../lib` (`@executable_path` on macOS): the library
//! beside it, or in `lib/` beside its `bin/`, is found wherever both are
//! copied. `qtrace` links no DuckDB and carries no path into the checkout;
//! `qtrace sql` finds the library (QTRACE_DUCKDB_LIB, beside it, the
//! system's path) and puts its folder on qtrace-sql's library path.

fn main() {
    if std::env::var_os("CARGO_FEATURE_SQL").is_none() {
        return;
    }
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "macos" {
        for dir in ["@executable_path", "@executable_path/../lib"] {
            println!("cargo:rustc-link-arg-bin=qtrace-sql=-Wl,-rpath,{dir}");
        }
    } else if os != "windows" {
        println!("cargo:rustc-link-arg-bin=qtrace-sql=-Wl,--enable-new-dtags");
        println!("cargo:rustc-link-arg-bin=qtrace-sql=-Wl,-rpath,$ORIGIN:$ORIGIN/../lib");
    }
}
