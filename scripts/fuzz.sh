#!/usr/bin/env bash
# Fuzz every cargo-fuzz target under fuzz/ for SECONDS each (default 60).
#
#   scripts/fuzz.sh [SECONDS]
#
# Installs the nightly toolchain and cargo-fuzz when missing, regenerates the
# seed corpus from real qtrace output (tests/wire/fuzz_corpus.rs), then runs each
# target with libFuzzer and prints executions and crashes per target. Exits
# non-zero when a target crashes; the input is left in fuzz/artifacts/TARGET/.
set -euo pipefail

secs="${1:-60}"
cd "$(dirname "$0")/.."

if ! rustup toolchain list | grep -q '^nightly'; then
    rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi

# Seed corpus: trace files and datagrams written by qtrace itself.
QTRACE_FUZZ_CORPUS="$PWD/fuzz/corpus" cargo test --quiet --features keys --test wire -- fuzz_corpus:: fuzz_corpus_receiver::
# Traces a run of the examples left behind are real output too.
if compgen -G "qtrace-out/*.qtr" >/dev/null; then
    cp qtrace-out/*.qtr fuzz/corpus/reader/ 2>/dev/null || true
fi

status=0
summary=()
for target in $(cargo +nightly fuzz list); do
    mkdir -p "fuzz/corpus/$target" "fuzz/logs"
    log="fuzz/logs/$target.log"
    echo "== fuzzing $target for ${secs}s (log: $log)"
    if cargo +nightly fuzz run "$target" "fuzz/corpus/$target" -- \
        -max_total_time="$secs" -max_len=16384 -rss_limit_mb=1024 -print_final_stats=1 \
        >"$log" 2>&1; then
        result="no crash"
    else
        result="CRASH (see $log and fuzz/artifacts/$target/)"
        status=1
    fi
    runs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}' | tail -1)
    cov=$(grep -E '^#[0-9]+' "$log" | grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' | tail -1)
    summary+=("$target: ${runs:-?} executions in ${secs}s, ${cov:-cov: ?}, $result")
done
printf '%s\n' "${summary[@]}"
exit "$status"
