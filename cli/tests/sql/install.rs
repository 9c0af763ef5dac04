//! The command installed anywhere (docs/install.md):
//! `qtrace` and `qtrace-sql` copied into an empty folder, run with an
//! environment that reaches no checkout (no LD_LIBRARY_PATH,
//! QTRACE_DUCKDB_LIB or DUCKDB_LIB_DIR; the binaries' RUNPATH does not point
//! into target/). `--version` and `dump` run without DuckDB; `sql` finds
//! DuckDB's library through QTRACE_DUCKDB_LIB and beside the binary, and
//! without it (or without `qtrace-sql`) fails with exit status 4 and what to
//! do.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use qtrace::classes::{user, Catalog};
use qtrace::clock::{Clock, ManualClock};
use qtrace::wire::{create_trace_file, TraceHeader};
use qtrace::Event;

/// The checkout's DuckDB library folder (cargo sets QTRACE_DUCKDB_LIB for
/// the tests: .cargo/config.toml).
fn duckdb_dir() -> PathBuf {
    let dir = std::env::var_os("QTRACE_DUCKDB_LIB")
        .or_else(|| std::env::var_os("DUCKDB_LIB_DIR"))
        .expect("QTRACE_DUCKDB_LIB (.cargo/config.toml) or DUCKDB_LIB_DIR");
    let dir = PathBuf::from(dir);
    assert!(dir.join("libduckdb.so").is_file(), "{}", dir.display());
    dir
}

/// `bin/qtrace ARGS` with only `env` set (PATH: the system's folders).
fn run(bin: &Path, args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut c = Command::new(bin.join("qtrace"));
    c.args(args).env_clear().env("PATH", "/usr/bin:/bin");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run the copied qtrace")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn runpath(file: &Path) -> Vec<String> {
    let bytes = std::fs::read(file).unwrap();
    // RUNPATH strings are in .dynstr: look for the one the build writes
    // and make sure no path to the checkout's DuckDB is there.
    let s = String::from_utf8_lossy(&bytes);
    assert!(
        !s.contains(duckdb_dir().to_str().unwrap()),
        "{} carries a path into the checkout",
        file.display()
    );
    s.matches("$ORIGIN:$ORIGIN/../lib")
        .map(str::to_owned)
        .collect()
}

#[test]
fn copied_binaries_run_dump_and_sql_with_duckdb_found_in_the_documented_order() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    for name in ["qtrace", "qtrace-sql"] {
        let from = match name {
            "qtrace" => env!("CARGO_BIN_EXE_qtrace"),
            _ => env!("CARGO_BIN_EXE_qtrace-sql"),
        };
        std::fs::copy(from, bin.join(name)).unwrap();
    }
    assert!(runpath(&bin.join("qtrace")).is_empty());
    assert_eq!(runpath(&bin.join("qtrace-sql")).len(), 1);

    let trace = dir.path().join("t.qtr");
    let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)));
    let mut w = create_trace_file(&trace, &header).unwrap();
    for i in 0..3u64 {
        w.write_event(&Event::new(i * 1000, user::USER0, 0, [i, 0]))
            .unwrap();
    }
    w.finish().unwrap();
    let trace_s = trace.to_str().unwrap();

    let v = run(&bin, &["--version"], &[]);
    assert_eq!(v.status.code(), Some(0), "{}", text(&v.stderr));
    assert_eq!(
        text(&v.stdout),
        format!("qtrace {}\n", env!("CARGO_PKG_VERSION"))
    );

    let d = run(&bin, &["dump", trace_s], &[]);
    assert_eq!(d.status.code(), Some(0), "{}", text(&d.stderr));
    assert_eq!(
        text(&d.stdout),
        "         0.000000000       0  user       user0          value=0 arg1=0\n\
         \x20        0.000001000       0  user       user0          value=1 arg1=0\n\
         \x20        0.000002000       0  user       user0          value=2 arg1=0\n"
    );

    let query = "SELECT count(*) AS n, sum(arg0) AS s FROM events";
    let sql = ["sql", "--format", "csv", trace_s, query];
    let expected = "n,s\n3,3\n";

    // Without DuckDB's library anywhere: exit 4, what was looked for, how.
    let missing = run(&bin, &sql, &[]);
    assert_eq!(missing.status.code(), Some(4), "{}", text(&missing.stderr));
    let err = text(&missing.stderr);
    let first = err.lines().next().unwrap();
    assert!(
        first.starts_with(&format!(
            "qtrace sql: DuckDB's library (libduckdb.so) is not found (looked in: \
             QTRACE_DUCKDB_LIB (not set); beside qtrace: {0}, {0}/../lib; \
             LD_LIBRARY_PATH (not set); the loader's default folders: /usr/local/lib, ",
            bin.display()
        )),
        "{err}"
    );
    assert!(first.ends_with(", /lib, /usr/lib)"), "{err}");
    assert!(
        err.contains("cargo install qtrace-cli --features sql"),
        "{err}"
    );
    assert!(err.contains("scripts/duckdb-lib.sh"), "{err}");
    assert!(err.contains("github.com/duckdb/duckdb/releases"), "{err}");
    assert!(missing.stdout.is_empty());

    // A QTRACE_DUCKDB_LIB that names nothing is said so, not skipped.
    let nowhere = dir.path().join("nowhere");
    let bad = run(&bin, &sql, &[("QTRACE_DUCKDB_LIB", &nowhere)]);
    assert_eq!(bad.status.code(), Some(4));
    assert!(
        text(&bad.stderr).starts_with(&format!(
            "qtrace sql: DuckDB's library (libduckdb.so) is not found (looked in: QTRACE_DUCKDB_LIB={}, which does not exist)",
            nowhere.display()
        )),
        "{}",
        text(&bad.stderr)
    );

    // (1) QTRACE_DUCKDB_LIB: the folder, then the file.
    let lib = duckdb_dir();
    for named in [lib.clone(), lib.join("libduckdb.so")] {
        let out = run(&bin, &sql, &[("QTRACE_DUCKDB_LIB", &named)]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout), expected);
    }

    // (2) Beside the binary (a symlink), then in ../lib.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(lib.join("libduckdb.so"), bin.join("libduckdb.so")).unwrap();
        let out = run(&bin, &sql, &[]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout), expected);
        std::fs::remove_file(bin.join("libduckdb.so")).unwrap();

        let libdir = dir.path().join("lib");
        std::fs::create_dir(&libdir).unwrap();
        std::os::unix::fs::symlink(lib.join("libduckdb.so"), libdir.join("libduckdb.so")).unwrap();
        let out = run(&bin, &sql, &[]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout), expected);

        // qtrace-sql alone finds it through its RUNPATH ($ORIGIN/../lib).
        let direct = Command::new(bin.join("qtrace-sql"))
            .args(&sql[1..])
            .env_clear()
            .output()
            .unwrap();
        assert_eq!(direct.status.code(), Some(0), "{}", text(&direct.stderr));
        assert_eq!(text(&direct.stdout), expected);
    }

    // (3) LD_LIBRARY_PATH.
    let out = run(&bin, &sql, &[("LD_LIBRARY_PATH", &lib)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), expected);

    // A status of the engine is the command's: a failing query exits 2.
    let fail = run(
        &bin,
        &["sql", trace_s, "SELECT * FROM no_such_table"],
        &[("QTRACE_DUCKDB_LIB", &lib)],
    );
    assert_eq!(fail.status.code(), Some(2), "{}", text(&fail.stderr));

    // Without qtrace-sql (a build without the feature `sql`): exit 4.
    std::fs::remove_file(bin.join("qtrace-sql")).unwrap();
    let none = run(&bin, &sql, &[("QTRACE_DUCKDB_LIB", &lib)]);
    assert_eq!(none.status.code(), Some(4));
    let err = text(&none.stderr);
    assert!(
        err.starts_with(&format!(
            "qtrace sql: this qtrace has no SQL engine: qtrace-sql is not beside it nor on PATH (looked in: {}, /usr/bin, /bin)\n",
            bin.display()
        )),
        "{err}"
    );
    assert!(
        err.contains("cargo install qtrace-cli --features sql"),
        "{err}"
    );
    // `qtrace sql --help` still works: the arguments are qtrace's own.
    let help = run(&bin, &["sql", "--help"], &[]);
    assert_eq!(help.status.code(), Some(0));
    assert!(text(&help.stdout).contains("--max-rows"));
}
