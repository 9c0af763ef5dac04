#!/usr/bin/env bash
# Fetches the prebuilt DuckDB library that `qtrace sql` (crate sql/, package
# qtrace-sql; cli feature `sql`) links against, when it is not there yet, and
# prints the environment the build needs:
#
#   eval "$(scripts/duckdb-lib.sh)"   # then: cargo build --release -p qtrace-cli --features sql
#
# Why a prebuilt library: compiling DuckDB's C++ from source (the duckdb crate's
# `bundled` feature) takes ~25 minutes of wall time on 2 cores (docs/benchmarks-history.md,
# "An embedded SQL engine for `qtrace sql`"); linking the DuckDB project's own
# build takes seconds. The library is the one the DuckDB project publishes on
# the npm registry for its Node bindings (package
# @duckdb/node-bindings-linux-<arch>, file package/libduckdb.so: DuckDB 1.5.6
# with parquet, json and icu built in). The tarball is checked against the
# sha512 the registry publishes (`dist.integrity`), pinned below, before it
# is unpacked.
#
# Where: target/duckdb/1.5.6/libduckdb.so under the repository root (inside
# the default target dir, so `cargo run`/`cargo test` also put it on the
# loader's path). .cargo/config.toml points DUCKDB_LIB_DIR there by default,
# so once this has run, plain cargo commands with `--all-features` find it.
# The `qtrace` binary carries an rpath to it (cli/build.rs); a copied binary
# needs LD_LIBRARY_PATH or the library beside it.
#
# Prints only `export NAME=VALUE` lines on stdout; messages go to stderr.
# Needs npm (the npm registry's client; installed with apt-get when missing
# and root), tar and python3 (the digest).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

version=1.5.6
npm_version=1.5.6-r.1
case "$(uname -m)" in
x86_64 | amd64)
    arch=x64
    integrity='sha512-IXcrZJE6kEqM0Z4wwdVnGBHX/frOS33VPNAwDXQ/Q+Fs84b058Qe94chrCCIcNJlG8Y3UHIUU4eBeCQxW5mN1Q=='
    ;;
aarch64 | arm64)
    arch=arm64
    integrity='sha512-3jnUaDil1BrF/6vAZwVaInJ1xoBaWGHB4PDiUnzJWKCo8a8TLx9j7/gPyPl/UGRBftrYIuTihRZSfF4mWMgtWA=='
    ;;
*)
    echo "scripts/duckdb-lib.sh: no prebuilt DuckDB library for $(uname -m) here; compile DuckDB from source instead: cargo build --release -p qtrace-cli --features sql,duckdb/parquet (~25 min on 2 cores)" >&2
    exit 1
    ;;
esac
if [[ "$(uname -s)" != Linux ]]; then
    echo "scripts/duckdb-lib.sh: the prebuilt library fetched here is for Linux; on $(uname -s) compile DuckDB from source (--features sql,duckdb/parquet), or set DUCKDB_LIB_DIR to a DuckDB $version library of your own" >&2
    exit 1
fi
package="@duckdb/node-bindings-linux-$arch@$npm_version"
dir="$root/target/duckdb/$version"

if [[ ! -f "$dir/libduckdb.so" ]]; then
    if ! command -v npm >/dev/null 2>&1 && [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
        echo "scripts/duckdb-lib.sh: installing npm" >&2
        apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends npm >&2
    fi
    command -v npm >/dev/null 2>&1 || {
        echo "scripts/duckdb-lib.sh: npm is needed to fetch $package (sudo apt-get install npm), or compile DuckDB from source: --features sql,duckdb/parquet" >&2
        exit 1
    }
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    echo "scripts/duckdb-lib.sh: fetching $package (24 MB) into $dir" >&2
    # The registry's published digest must be the pinned one: a re-published
    # tarball is refused rather than linked.
    published="$(cd "$tmp" && npm view "$package" dist.integrity)"
    if [[ "$published" != "$integrity" ]]; then
        echo "scripts/duckdb-lib.sh: the registry publishes $published for $package, not the pinned $integrity; refusing it" >&2
        exit 1
    fi
    tarball="$(cd "$tmp" && npm pack --silent "$package" | tail -n 1)"
    actual="sha512-$(python3 -c 'import base64, hashlib, sys; print(base64.b64encode(hashlib.sha512(open(sys.argv[1], "rb").read()).digest()).decode())' "$tmp/$tarball")"
    if [[ "$actual" != "$integrity" ]]; then
        echo "scripts/duckdb-lib.sh: $tarball has digest $actual, expected $integrity; refusing it" >&2
        exit 1
    fi
    tar -xzf "$tmp/$tarball" -C "$tmp" package/libduckdb.so package/LICENSE
    mkdir -p "$dir"
    # Written beside and renamed: an interrupted fetch leaves no half library.
    cp "$tmp/package/LICENSE" "$dir/LICENSE"
    cp "$tmp/package/libduckdb.so" "$dir/.libduckdb.so.tmp"
    mv "$dir/.libduckdb.so.tmp" "$dir/libduckdb.so"
    echo "scripts/duckdb-lib.sh: $dir/libduckdb.so ($(du -h "$dir/libduckdb.so" | cut -f1))" >&2
fi

echo "export DUCKDB_LIB_DIR=$dir"
echo "export LD_LIBRARY_PATH=$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
