#!/usr/bin/env bash
# Runs every qtrace test on a fresh machine: installs the system packages the
# tests need when they are missing (as root, through apt-get), then runs them.
#
#   scripts/test.sh            # everything
#   QTRACE_SKIP_INSTALL=1 scripts/test.sh   # never install, just run
set -euo pipefail
cd "$(dirname "$0")/.."

# System packages some tests use: babeltrace2 (CTF export is read back by the
# reference reader), valgrind (instruction-count budget of the hot path), tmux
# (`qtrace live` is driven in a real terminal: cli/tests/live/terminal.rs).
missing=()
command -v babeltrace2 >/dev/null 2>&1 || missing+=(babeltrace2)
command -v valgrind >/dev/null 2>&1 || missing+=(valgrind)
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
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

# Python packages the Parquet tests use (cli/tests/parquet/engines.rs): DuckDB,
# chdb (ClickHouse's engine) and pyarrow from PyPI, in a virtual environment of
# their own (target/pyenv: no system package is touched, PEP 668 holds).
# PIP_FIND_LINKS (a folder of wheels, e.g. /opt/wheels) is honoured by pip.
pyenv=target/pyenv
if ! "$pyenv/bin/python" -c 'import duckdb, chdb, pyarrow' >/dev/null 2>&1; then
    if [[ -z "${QTRACE_SKIP_INSTALL:-}" ]] && command -v python3 >/dev/null 2>&1; then
        echo "scripts/test.sh: installing duckdb, chdb and pyarrow into $pyenv"
        if python3 -m venv "$pyenv" >/dev/null 2>&1; then
            "$pyenv/bin/python" -m pip install --quiet --disable-pip-version-check duckdb chdb pyarrow
        else
            # No venv module (Debian without python3-venv): the packages go
            # to a folder of their own, and target/pyenv/bin/python is a
            # wrapper that puts it on the path.
            rm -rf "$pyenv" && mkdir -p "$pyenv/bin"
            python3 -m pip install --quiet --disable-pip-version-check --target "$pyenv/site" duckdb chdb pyarrow ||
                python3 -m pip install --quiet --disable-pip-version-check --break-system-packages --target "$pyenv/site" duckdb chdb pyarrow
            printf '#!/bin/sh\nPYTHONPATH="%s${PYTHONPATH:+:$PYTHONPATH}" exec python3 "$@"\n' "$(pwd)/$pyenv/site" >"$pyenv/bin/python"
            chmod +x "$pyenv/bin/python"
        fi
    else
        echo "scripts/test.sh: duckdb, chdb or pyarrow missing in $pyenv; the Parquet engine tests are skipped"
    fi
fi

echo "== cargo test (unit, integration, doc tests)"
# `qtrace sql` keeps conversions in the user's cache folder: the tests' go
# into a scratch one, removed at the end.
XDG_CACHE_HOME=$(mktemp -d)
export XDG_CACHE_HOME
trap 'rm -rf "$XDG_CACHE_HOME"' EXIT
# --workspace: the command (cli/, qtrace-cli) is not a default member.
cargo test --workspace --all-features

echo "== the main job's trace through babeltrace2 and a JSON parser (scripts/check-export.sh)"
scripts/check-export.sh
