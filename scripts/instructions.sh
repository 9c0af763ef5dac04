#!/usr/bin/env bash
# Instructions per logged event, counted by callgrind (deterministic, unlike
# time). For each case, examples/log_loop runs twice, with N1 and N2 events;
# only the logging loop (the `run_*` functions) is counted, and
#     instructions/event = (total(N2) - total(N1)) / (N2 - N1)
# so set-up, shutdown and the loop's entry cancel out.
#
#   scripts/instructions.sh            print the table
#   scripts/instructions.sh --check    also fail (exit 1) when a budget is exceeded:
#       circular - clock > CIRCULAR_BUDGET (besides the clock read),
#       online - clock   > ONLINE_BUDGET (besides the clock read: the
#                          streaming queues' producer, into their drop ring), or
#       disabled        > DISABLED_BUDGET
#
# Cases: clock (the clock read alone, plus one store), floor (clock + one
# record into an array), disabled, dummy, fixed, circular, online (see
# examples/log_loop.rs), and rtrb (clock + an rtrb push, for comparison).
# The loop is unrolled 8x, so its counter and branch add a fraction of an
# instruction per event (3/8 to 3/4 depending on the case; BENCHMARKS.md).
#
# Needs valgrind (Debian/Ubuntu: apt-get install -y valgrind).
set -euo pipefail

CIRCULAR_BUDGET=${CIRCULAR_BUDGET:-28}
DISABLED_BUDGET=${DISABLED_BUDGET:-5}
ONLINE_BUDGET=${ONLINE_BUDGET:-57}
N1=${N1:-100000}
N2=${N2:-200000}
CASES=${CASES:-"clock floor disabled dummy fixed circular online rtrb"}

check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

if ! command -v valgrind >/dev/null; then
  echo "valgrind not found: install it (apt-get install -y valgrind)" >&2
  exit 2
fi

cd "$(dirname "$0")/.."
cargo build --release --quiet --example log_loop
bin=${CARGO_TARGET_DIR:-target}/release/examples/log_loop
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# total instructions counted inside run_* for `count N CASE`
count() {
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" \
    --collect-atstart=no --toggle-collect='*log_loop::run_*' \
    "$bin" "$1" "$2" >"$tmp/stdout" 2>"$tmp/stderr" || {
      cat "$tmp/stderr" >&2
      echo "log_loop $1 $2 failed under valgrind" >&2
      exit 2
    }
  awk '/^(totals|summary):/ { print $2; exit }' "$tmp/cg.out"
}

declare -A per_event
printf '%-10s %18s\n' case instructions/event
for c in $CASES; do
  a=$(count "$N1" "$c")
  b=$(count "$N2" "$c")
  per_event[$c]=$(awk -v a="$a" -v b="$b" -v n1="$N1" -v n2="$N2" \
    'BEGIN { printf "%.2f", (b - a) / (n2 - n1) }')
  printf '%-10s %18s\n' "$c" "${per_event[$c]}"
done

# instructions of case $1 besides the clock read
besides_clock() {
  awk -v x="${per_event[$1]}" -v k="${per_event[clock]}" 'BEGIN { printf "%.2f", x - k }'
}

status=0
if [[ -n "${per_event[clock]:-}" ]]; then
  for c in floor dummy circular online rtrb; do
    [[ -n "${per_event[$c]:-}" ]] || continue
    printf '%-16s %12s  (besides the clock read)\n' "$c - clock" "$(besides_clock "$c")"
  done
fi

if (( check )); then
  # budget NAME VALUE MAX WHAT SUFFIX: fail (status 1) when VALUE > MAX
  budget() {
    if awk -v x="$2" -v max="$3" 'BEGIN { exit !(x > max) }'; then
      echo "FAIL: $4 costs $2 instructions$5; the budget is $3" >&2
      status=1
    else
      echo "ok: $1 $2 <= $3 instructions$5"
    fi
  }
  budget circular "$(besides_clock circular)" "$CIRCULAR_BUDGET" \
    "an enabled event into the circular queue" " besides the clock read"
  budget online "$(besides_clock online)" "$ONLINE_BUDGET" \
    "an enabled event into the online queue" " besides the clock read"
  budget disabled "${per_event[disabled]}" "$DISABLED_BUDGET" "a masked-out event" ""
fi
exit $status
