#!/usr/bin/env bash
# Two `qtrace` binaries side by side on the 5 M-event trace of
# examples/convert_memory.rs: each command RUNS times (default 7), the two
# binaries alternating, best CPU time (user + sys) and best wall time kept.
# For a change to the command that must not cost speed (docs/benchmarks-history.md, "The
# command in its own crate").
#
#   benches/compare_qtrace.sh OLD_QTRACE NEW_QTRACE ["dump t.qtr" ...]
#
# Build the old binary from another commit with, for instance,
#   git archive COMMIT | tar -x -C /tmp/old && (cd /tmp/old && cargo build --release --bin qtrace)
# Commands name the trace `t.qtr` (written to a temporary directory).
set -euo pipefail
[[ $# -ge 2 ]] || { sed -n 2,12p "$0"; exit 2; }
old=$(realpath "$1")
new=$(realpath "$2")
shift 2
runs=${RUNS:-7}
n=${EVENTS:-5000000}
cd "$(dirname "$0")/.."
cargo build --release -q --example convert_memory
example=${CARGO_TARGET_DIR:-target}/release/examples/convert_memory
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$example" qtr "$n" "$work/t.qtr" >/dev/null
cd "$work"
labels=("$@")
[[ ${#labels[@]} -gt 0 ]] || labels=("dump t.qtr" "dump --json t.qtr" "analyze t.qtr" "stats t.qtr" "dump t.qtr t.qtr" "analyze t.qtr t.qtr")
declare -A cpu wall
for label in "${labels[@]}"; do
    for _ in $(seq "$runs"); do
        for bin in old new; do
            exe=$old
            [[ $bin == new ]] && exe=$new
            # shellcheck disable=SC2086 # the command's words
            t=$( { TIMEFORMAT='%R %U %S'; time "$exe" $label >/dev/null 2>/dev/null; } 2>&1 ) || true
            read -r w u s <<<"$t"
            c=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.3f", u + s }')
            k="$bin|$label"
            if [[ -z "${cpu[$k]:-}" ]] || awk -v a="$c" -v b="${cpu[$k]}" 'BEGIN { exit !(a < b) }'; then cpu[$k]=$c; fi
            if [[ -z "${wall[$k]:-}" ]] || awk -v a="$w" -v b="${wall[$k]}" 'BEGIN { exit !(a < b) }'; then wall[$k]=$w; fi
        done
    done
    echo "qtrace $label: old cpu ${cpu[old|$label]} s, wall ${wall[old|$label]} s | new cpu ${cpu[new|$label]} s, wall ${wall[new|$label]} s"
done
