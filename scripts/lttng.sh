#!/usr/bin/env bash
# LTTng-UST against qtrace, measured in the same run (optional; not in CI).
#
# Builds a C program that logs N LTTng-UST events with qtrace's payload
# (scripts/lttng/), then measures:
#   - ns/event into an active userspace session (snapshot mode: in-memory
#     rings that overwrite, the analogue of qtrace's circular queue), and with
#     no session (disabled), timed with the thread's CPU time;
#   - instructions/event (callgrind, two run lengths, as instructions.sh);
# then runs qtrace's overhead bench for floor, relaxed_load, disabled and
# circular and prints the ratios.
#
# Needs: gcc, lttng-tools, liblttng-ust-dev, valgrind
#   (apt-get install -y gcc lttng-tools liblttng-ust-dev valgrind).
# Starts a userspace-only session daemon unless one is running, and stops
# only the daemon it started.
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in gcc lttng lttng-sessiond valgrind; do
  command -v "$tool" >/dev/null || {
    echo "$tool not found: apt-get install -y gcc lttng-tools liblttng-ust-dev valgrind" >&2
    exit 2
  }
done

N=${N:-200000}
tmp=$(mktemp -d)
session="qtrace-bench-$$"
daemon=""
cleanup() {
  lttng destroy "$session" >/dev/null 2>&1 || true
  if [[ -n "$daemon" ]]; then
    kill -TERM "$daemon" 2>/dev/null || true
    wait "$daemon" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

gcc -O2 -g -Iscripts/lttng -o "$tmp/bench" scripts/lttng/bench.c scripts/lttng/tp.c -llttng-ust -ldl

if ! lttng list >/dev/null 2>&1; then
  lttng-sessiond --no-kernel >"$tmp/sessiond.log" 2>&1 &
  daemon=$!
  for _ in $(seq 50); do lttng list >/dev/null 2>&1 && break; sleep 0.1; done
fi

instructions() { # instructions/event of $tmp/bench under callgrind
  local a b
  for n in 100000 200000; do
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$n" --collect-atstart=no \
      --toggle-collect=run_lttng "$tmp/bench" "$n" 0 >/dev/null 2>&1
  done
  a=$(awk '/^(totals|summary):/ { print $2; exit }' "$tmp/cg.100000")
  b=$(awk '/^(totals|summary):/ { print $2; exit }' "$tmp/cg.200000")
  awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", (b - a) / 100000 }'
}

disabled_ns=$("$tmp/bench" "$N")
disabled_ir=$(instructions)

lttng create "$session" --snapshot >/dev/null
lttng enable-event --userspace --session="$session" 'qtrace_bench:*' >/dev/null
lttng start "$session" >/dev/null
enabled_ns=$("$tmp/bench" "$N")
enabled_ir=$(instructions)
lttng stop "$session" >/dev/null
lttng destroy "$session" >/dev/null

cargo bench --quiet --bench overhead -- --warm-up-time 1 --measurement-time 3 \
  'log_event/(relaxed_load|floor|disabled|circular)$' >"$tmp/qtrace.txt" 2>&1 || {
    cat "$tmp/qtrace.txt" >&2
    exit 1
  }
table=$(scripts/bench_table.py)
ns_of() { awk -F'|' -v id="\`$1\`" '$2 ~ id { gsub(/ /, "", $3); print $3 }' <<<"$table"; }
circular=$(ns_of circular)
floor=$(ns_of floor)
qdisabled=$(ns_of disabled)

printf '| case | ns/event | instructions/event |\n|---|---:|---:|\n'
printf '| LTTng-UST, active snapshot session | %s | %s |\n' "$enabled_ns" "$enabled_ir"
printf '| LTTng-UST, no session | %s | %s |\n' "$disabled_ns" "$disabled_ir"
printf '| qtrace floor | %s | |\n| qtrace circular | %s | |\n| qtrace disabled | %s | |\n' \
  "$floor" "$circular" "$qdisabled"
awk -v l="$enabled_ns" -v c="$circular" \
  'BEGIN { printf "\nLTTng-UST / qtrace circular: %.1fx (target: at least 5x)\n", l / c }'
