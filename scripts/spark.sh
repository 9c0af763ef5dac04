#!/usr/bin/env bash
# A real distributed engine over a store (issue #34 item 5), opt-in (not in
# scripts/test.sh nor .ci/run): three senders (examples/udp_jobs.rs, each
# with response times of its own and a burst that drops events) stream into
# `qtrace recv --store` on 127.0.0.1; then an Apache Spark standalone
# cluster — a master and one worker, two JVMs of their own, bound to
# 127.0.0.1 — reads the store's Parquet tables, and scripts/spark_check.py
# checks that Spark's figures equal `qtrace sql`'s on the same store: row
# counts of every table, losses per sender and kind, per sender and task
# the response-time quantiles of the `jobs` table (FORMAT.md 7.5a), and per
# sender rows + hoops losses = events logged.
#
#   scripts/spark.sh                                  # builds what it needs
#   QTRACE_BIN=target/release/qtrace scripts/spark.sh # a qtrace built with --features sql
#
# Needs:
#   - pyspark (PyPI), installed into the test virtualenv target/pyenv as
#     scripts/test.sh makes it (a venv, or a --target folder when python3
#     has no venv module). PIP_FIND_LINKS (a folder of wheels) is honoured.
#     pip's downloads and build go to target/spark/tmp, not /tmp.
#   - java (17 or later): Debian's openjdk-17-jre-headless is installed with
#     apt-get when java is missing and we are root.
#   - qtrace with `qtrace sql`: QTRACE_BIN, else target/debug/qtrace built
#     here with --features sql (eval "$(scripts/duckdb-lib.sh)" is done here).
# When pyspark or java cannot be had, the script says why and exits 0 (skipped).
#
# Bounded in time: the receiver stops at its event count or after 60 s, each
# cluster process has 60 s to come up, the check runs under `timeout 600`;
# the master and the worker are stopped at exit, whatever happened. Their
# logs, the store and Spark's scratch go to target/spark/run (kept for a
# look; removed at the next run).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
work="$root/target/spark"
run="$work/run"
pyenv=target/pyenv

say() { echo "spark.sh: $*"; }
fail() { echo "spark.sh: $*" >&2; exit 1; }

# --- pyspark in target/pyenv ------------------------------------------------
mkdir -p "$work/tmp"
if ! "$pyenv/bin/python" -c 'import pyspark' >/dev/null 2>&1; then
    if python3 -m pip --version >/dev/null 2>&1; then
        say "installing pyspark into $pyenv (a 435 MB download, up to 1.8 GB in target/spark/tmp while it builds, 513 MB kept)"
        export TMPDIR="$work/tmp"
        if [ ! -x "$pyenv/bin/python" ]; then
            if ! python3 -m venv "$pyenv" >/dev/null 2>&1; then
                rm -rf "$pyenv" && mkdir -p "$pyenv/bin"
                printf '#!/bin/sh\nPYTHONPATH="%s${PYTHONPATH:+:$PYTHONPATH}" exec python3 "$@"\n' "$root/$pyenv/site" >"$pyenv/bin/python"
                chmod +x "$pyenv/bin/python"
            fi
        fi
        if [ -d "$pyenv/site" ]; then
            python3 -m pip install --quiet --disable-pip-version-check --no-cache-dir --target "$pyenv/site" pyspark ||
                python3 -m pip install --quiet --disable-pip-version-check --no-cache-dir --break-system-packages --target "$pyenv/site" pyspark ||
                true
        else
            "$pyenv/bin/python" -m pip install --quiet --disable-pip-version-check --no-cache-dir pyspark || true
        fi
        unset TMPDIR
        rm -rf "${work:?}/tmp"/*
    fi
    if ! "$pyenv/bin/python" -c 'import pyspark' >/dev/null 2>&1; then
        say "pyspark is missing in $pyenv and could not be installed (the pip error is above); skipped"
        exit 0
    fi
fi

# --- java ---------------------------------------------------------------------
if ! command -v java >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        say "installing openjdk-17-jre-headless (apt-get)"
        apt-get install -y -qq openjdk-17-jre-headless >/dev/null ||
            { apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless >/dev/null; } || true
    fi
    if ! command -v java >/dev/null 2>&1; then
        say "java is missing (install a JRE 17: apt-get install openjdk-17-jre-headless, as root); skipped"
        exit 0
    fi
fi

# --- qtrace and the senders -------------------------------------------------------
eval "$(scripts/duckdb-lib.sh)"
if [ -n "${QTRACE_BIN:-}" ]; then
    [ -x "$QTRACE_BIN" ] || fail "QTRACE_BIN=$QTRACE_BIN is not an executable qtrace command"
    qtrace=$(cd "$(dirname "$QTRACE_BIN")" && pwd)/$(basename "$QTRACE_BIN")
    say "using the command $qtrace (QTRACE_BIN)"
else
    cargo build --quiet -p qtrace-cli --features sql --bin qtrace --bin qtrace-sql
    qtrace="$root/target/debug/qtrace"
fi
cargo build --quiet --release --example udp_jobs
sender="$root/target/release/examples/udp_jobs"

rm -rf "$run"
mkdir -p "$run"
pids=()
cleanup() {
    local status=$?
    for p in "${pids[@]}"; do
        kill "$p" 2>/dev/null || true
    done
    for p in "${pids[@]}"; do
        wait "$p" 2>/dev/null || true
    done
    if [ "$status" -ne 0 ]; then
        for log in "$run"/*.log; do
            [ -f "$log" ] && { echo "--- $log (last lines)"; tail -n 20 "$log"; }
        done
    fi
    exit "$status"
}
trap cleanup EXIT

# Free loopback ports: the receiver's, the master's, the worker's.
read -r port_rx port_master port_worker < <("$pyenv/bin/python" -c '
import socket
s = [socket.socket() for _ in range(3)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])
')

started=$(date +%s.%N)

# --- the store: three senders into one receiver ----------------------------------
jobs=20000
burst=300000
senders=(701 702 703)
logged_each=$((jobs * 6 + burst))
total=$((logged_each * ${#senders[@]}))
store="$run/store"
"$qtrace" recv --listen "127.0.0.1:$port_rx" --store "$store" --roll 1s \
    --count "$total" --duration 60 >"$run/recv.log" 2>&1 &
rx=$!
pids+=("$rx")
sleep 0.5
spids=()
for s in "${senders[@]}"; do
    "$sender" "127.0.0.1:$port_rx" "$s" "$jobs" "$burst" >"$run/sender-$s.log" 2>&1 &
    spids+=($!)
done
for p in "${spids[@]}"; do wait "$p" || fail "a sender failed"; done
wait "$rx" || fail "qtrace recv exited with status $?"
pids=()
cat "$run"/sender-*.log
tail -n 8 "$run/recv.log"
fed=$(date +%s.%N)

# --- the cluster: a master and one worker on 127.0.0.1 -------------------------------
spark_home=$("$pyenv/bin/python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')
export SPARK_HOME="$spark_home" SPARK_LOCAL_IP=127.0.0.1 SPARK_LOCAL_DIRS="$run/scratch" \
    SPARK_WORKER_DIR="$run/worker" SPARK_LOG_DIR="$run" PYSPARK_PYTHON="$root/$pyenv/bin/python"
mkdir -p "$run/scratch" "$run/worker"
"$spark_home/bin/spark-class" org.apache.spark.deploy.master.Master \
    --host 127.0.0.1 --port "$port_master" --webui-port 0 >"$run/master.log" 2>&1 &
pids+=($!)
wait_for() { # LOG PATTERN WHAT
    for _ in $(seq 600); do
        grep -q "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    fail "$3 did not come up in 60 s"
}
wait_for "$run/master.log" "I have been elected leader" "the Spark master"
"$spark_home/bin/spark-class" org.apache.spark.deploy.worker.Worker \
    --host 127.0.0.1 --port "$port_worker" --webui-port 0 --cores 2 --memory 1g \
    "spark://127.0.0.1:$port_master" >"$run/worker.log" 2>&1 &
pids+=($!)
wait_for "$run/worker.log" "Successfully registered with master" "the Spark worker"
up=$(date +%s.%N)
say "master and worker up (pids ${pids[*]})"

logged=()
for s in "${senders[@]}"; do logged+=("$s=$logged_each"); done
timeout 600 "$pyenv/bin/python" scripts/spark_check.py "spark://127.0.0.1:$port_master" \
    "$store" "$qtrace" "${logged[@]}" 2>"$run/driver.log" || fail "the check failed (status $?)"
ended=$(date +%s.%N)
say "$(awk -v a="$started" -v b="$fed" -v c="$up" -v d="$ended" \
    'BEGIN { printf "feed %.1f s, cluster up %.1f s, check %.1f s, total %.1f s", b - a, c - b, d - c, d - a }')"
say "ok"
