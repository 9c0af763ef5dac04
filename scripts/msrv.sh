#!/usr/bin/env bash
# MSRV check: the library builds with the `rust-version` Cargo.toml declares.
#
#   scripts/msrv.sh      cargo +MSRV check of the library, without and with
#                        every feature (tracing, export, analysis)
#
# What a library user with that rustc compiles is the library and its normal
# dependencies, resolved to versions that support the MSRV. The workspace's
# own Cargo.lock also holds the dev-dependencies, the benches' peers and the
# command-line tool's crates, several of which need a newer Cargo just to
# read their manifests (edition 2024); so the check runs on a scratch package
# under target/msrv/: the [package] name/version/edition/rust-version, the
# [dependencies], target dependencies (but the `cfg(loom)` ones, a test-only
# cfg) and [features] of Cargo.toml, `src/lib.rs` as its library (no bins,
# tests, examples, benches), and a lockfile resolved by stable Cargo's
# MSRV-aware resolver (`incompatible-rust-versions = "fallback"`: the newest
# versions whose rust-version is at most ours). The toolchain is installed
# when missing (rustup, minimal profile).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
msrv=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml | head -1)
[ -n "$msrv" ] || { echo "msrv: no rust-version in Cargo.toml" >&2; exit 1; }
if ! rustup run "$msrv" rustc --version >/dev/null 2>&1; then
  echo "msrv: installing Rust $msrv (rustup, minimal profile)"
  rustup toolchain install "$msrv" --profile minimal
fi
scratch=$root/target/msrv/pkg
rm -rf "$scratch" && mkdir -p "$scratch"
python3 - "$root" "$scratch" <<'PY'
import os, sys, tomllib
root, scratch = sys.argv[1], sys.argv[2]
m = tomllib.load(open(os.path.join(root, "Cargo.toml"), "rb"))

def val(v):
    if isinstance(v, bool): return "true" if v else "false"
    if isinstance(v, (int, float)): return str(v)
    if isinstance(v, str): return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list): return "[" + ", ".join(val(x) for x in v) + "]"
    if isinstance(v, dict): return "{ " + ", ".join(f'"{k}" = {val(x)}' for k, x in v.items()) + " }"
    raise ValueError(v)

def deps(table):
    out = []
    for name, spec in table.items():
        if isinstance(spec, dict) and "path" in spec:  # path deps (a workspace crate)
            spec = dict(spec, path=os.path.normpath(os.path.join(root, spec["path"])))
        out.append(f'"{name}" = {val(spec)}')
    return "\n".join(out)

p = m["package"]
lines = ["[package]"]
for k in ("name", "version", "edition", "rust-version"):
    lines.append(f"{k} = {val(p[k])}")
lines += ["autobins = false", "autoexamples = false", "autotests = false", "autobenches = false",
          "", "[lib]", f'path = {val(os.path.join(root, "src", "lib.rs"))}', "",
          "[workspace]", "", "[dependencies]", deps(m.get("dependencies", {})), ""]
for cfg, t in m.get("target", {}).items():
    if "loom" in cfg or "dependencies" not in t:
        continue
    lines += [f"[target.{val(cfg)}.dependencies]", deps(t["dependencies"]), ""]
if "features" in m:
    lines += ["[features]"] + [f'"{k}" = {val(v)}' for k, v in m["features"].items()] + [""]
lines += ["[lints.rust]", "unexpected_cfgs = { level = \"allow\" }", ""]
open(os.path.join(scratch, "Cargo.toml"), "w").write("\n".join(lines))
PY
cd "$scratch"
echo "msrv: resolving the library's dependencies for Rust $msrv"
CARGO_RESOLVER_INCOMPATIBLE_RUST_VERSIONS=fallback cargo +stable generate-lockfile --quiet
export CARGO_TARGET_DIR=$root/target/msrv/target
echo "msrv: cargo +$msrv check --lib"
cargo +"$msrv" check --lib --quiet
echo "msrv: cargo +$msrv check --lib --all-features"
cargo +"$msrv" check --lib --all-features --quiet
echo "msrv: Rust $msrv builds the library"
