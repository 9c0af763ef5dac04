#!/usr/bin/env bash
# Side by side on one 5 M-event trace (the workload of examples/convert_memory.rs):
#   - `qtrace dump` text vs babeltrace2's text output of the same trace
#     converted to CTF (target: dump at least 20x faster);
#   - `qtrace analyze` end to end (reading included; target 50 M events/s);
#   - `qtrace convert --to perfetto`: events/s (CPU and wall; target 10 M
#     events/s) and bytes an event; bytes an event of `--to chrome`.
# Each command runs RUNS times (default 3); the best CPU time (user + sys) and
# the best wall time are kept: on a shared machine CPU time is the steadier
# figure. babeltrace2's half is skipped (with a message) where it is absent.
#
#   benches/dump_babeltrace2.sh [EVENTS]     # default 5000000
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-5000000}
runs=${RUNS:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build --release -q -p qtrace-cli --bin qtrace
cargo build --release -q --features export --example convert_memory
target=${CARGO_TARGET_DIR:-target}/release
qtrace=$target/qtrace
"$target/examples/convert_memory" qtr "$n" "$work/t.qtr" >/dev/null
"$qtrace" convert --to ctf "$work/t.qtr" --out "$work/ctf" 2>/dev/null

# best "cpu wall" of RUNS runs of a command (stdout to /dev/null)
best() {
    local cpu_best= wall_best=
    for _ in $(seq "$runs"); do
        local t
        t=$( { TIMEFORMAT='%R %U %S'; time "$@" >/dev/null 2>/dev/null; } 2>&1 )
        read -r wall user sys <<<"$t"
        local cpu
        cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.3f", u + s }')
        if [[ -z "$cpu_best" ]] || awk -v a="$cpu" -v b="$cpu_best" 'BEGIN { exit !(a < b) }'; then cpu_best=$cpu; fi
        if [[ -z "$wall_best" ]] || awk -v a="$wall" -v b="$wall_best" 'BEGIN { exit !(a < b) }'; then wall_best=$wall; fi
    done
    echo "$cpu_best $wall_best"
}

rate() { awk -v n="$n" -v t="$1" 'BEGIN { printf "%.1f", n / t / 1e6 }'; }

read -r dump_cpu dump_wall < <(best "$qtrace" dump "$work/t.qtr")
read -r an_cpu an_wall < <(best "$qtrace" analyze "$work/t.qtr")
read -r pf_cpu pf_wall < <(best "$qtrace" convert --to perfetto "$work/t.qtr" --out "$work/best.pftrace")
echo "events: $n ($(nproc) cores; $(uptime | sed 's/.*load average/load average/'))"
echo "qtrace dump:      cpu ${dump_cpu}s  wall ${dump_wall}s  ($(rate "$dump_cpu") M events/s of CPU)"
echo "qtrace analyze:   cpu ${an_cpu}s  wall ${an_wall}s  ($(rate "$an_cpu") M events/s of CPU)"
echo "convert perfetto: cpu ${pf_cpu}s  wall ${pf_wall}s  ($(rate "$pf_cpu") M events/s of CPU, $(rate "$pf_wall") M events/s of wall)"
if command -v babeltrace2 >/dev/null 2>&1; then
    read -r bt_cpu bt_wall < <(best babeltrace2 "$work/ctf")
    echo "babeltrace2 text: cpu ${bt_cpu}s  wall ${bt_wall}s  ($(rate "$bt_cpu") M events/s of CPU)"
    echo "dump vs babeltrace2: $(awk -v a="$bt_cpu" -v b="$dump_cpu" 'BEGIN { printf "%.1fx", a / b }') (CPU), $(awk -v a="$bt_wall" -v b="$dump_wall" 'BEGIN { printf "%.1fx", a / b }') (wall)"
else
    echo "babeltrace2 text: SKIPPED (not installed; Debian: apt-get install babeltrace2)"
fi
for fmt in perfetto chrome; do
    "$qtrace" convert --to "$fmt" "$work/t.qtr" --out "$work/out.$fmt" 2>/dev/null
    bytes=$(stat -c %s "$work/out.$fmt")
    echo "convert --to $fmt: $bytes bytes, $(awk -v b="$bytes" -v n="$n" 'BEGIN { printf "%.1f", b / n }') bytes an event"
done
