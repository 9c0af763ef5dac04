#!/usr/bin/env bash
# Runs every qtrace test on a fresh machine: installs the system packages the
# tests need when they are missing (as root, through apt-get), then runs them.
#
#   scripts/test.sh            # everything
#   QTRACE_SKIP_INSTALL=1 scripts/test.sh   # never install, just run
set -euo pipefail
cd "$(dirname "$0")/.."

# System packages some tests use: babeltrace2 (CTF export is read back by the
# reference reader), valgrind (instruction-count budget of the hot path).
missing=()
command -v babeltrace2 >/dev/null 2>&1 || missing+=(babeltrace2)
command -v valgrind >/dev/null 2>&1 || missing+=(valgrind)
if ((${#missing[@]})) && [[ -z "${QTRACE_SKIP_INSTALL:-}" ]]; then
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
        echo "scripts/test.sh: installing ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    else
        echo "scripts/test.sh: ${missing[*]} missing; tests that need them are skipped (install: sudo apt-get install ${missing[*]})"
    fi
fi

# Python package the Perfetto tests use: `perfetto` from PyPI (its protobuf
# bindings decode qtrace's Perfetto output with Perfetto's own schema).
if ! python3 -c 'import perfetto.protos.perfetto.trace.perfetto_trace_pb2' >/dev/null 2>&1; then
    if [[ -z "${QTRACE_SKIP_INSTALL:-}" ]] && command -v python3 >/dev/null 2>&1; then
        echo "scripts/test.sh: installing the PyPI package perfetto"
        # (A distribution's own python refuses plain pip installs: PEP 668.)
        python3 -m pip install --quiet --disable-pip-version-check perfetto ||
            python3 -m pip install --quiet --disable-pip-version-check --break-system-packages perfetto
    else
        echo "scripts/test.sh: the PyPI package perfetto is missing; the Perfetto decoding tests are skipped (install: python3 -m pip install perfetto)"
    fi
fi

# The prebuilt DuckDB library `qtrace sql` links (crate sql/, cli feature
# sql): fetched from the npm registry into target/duckdb/ when missing.
if [[ -z "${QTRACE_SKIP_INSTALL:-}" ]] || [[ -f target/duckdb/1.5.6/libduckdb.so ]]; then
    duckdb_env=$(scripts/duckdb-lib.sh) # (a failed fetch stops here: set -e)
    eval "$duckdb_env"
fi

echo "== cargo test (unit, integration, doc tests)"
# --workspace: the command (cli/, qtrace-cli) is not a default member.
cargo test --workspace --all-features

echo "== the main job's trace through babeltrace2 and a JSON parser (scripts/check-export.sh)"
scripts/check-export.sh
