#!/usr/bin/env bash
# `qtrace convert --to parquet` of the 5 M-event workload (the convert_memory
# example's), beside `--to perfetto`, `--to ctf` and `dump > /dev/null` (the
# reader alone), alternating, best of R runs each: CPU (user + sys) and wall
# seconds, events/s, and the bytes an event takes on disk.
#
#   benches/parquet_convert.sh [EVENTS] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-5000000}
runs=${2:-3}
cargo build --release -p qtrace-cli --quiet
cargo build --release --example convert_memory --features export --quiet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
target/release/examples/convert_memory qtr "$events" "$work/t.qtr" >/dev/null
q=target/release/qtrace
declare -A best_cpu best_wall
cases=(parquet perfetto ctf dump)
for ((r = 0; r < runs; r++)); do
    for c in "${cases[@]}"; do
        rm -rf "$work/out" "$work/out.pftrace"
        case $c in
            parquet) cmd=("$q" convert --to parquet "$work/t.qtr" --out "$work/out") ;;
            perfetto) cmd=("$q" convert --to perfetto "$work/t.qtr" --out "$work/out.pftrace") ;;
            ctf) cmd=("$q" convert --to ctf "$work/t.qtr" --out "$work/out") ;;
            dump) cmd=("$q" dump "$work/t.qtr") ;;
        esac
        /usr/bin/time -o "$work/time" -f "%U %S %e" "${cmd[@]}" >/dev/null 2>&1
        read -r u s w <"$work/time"
        cpu=$(echo "$u + $s" | bc)
        if [[ -z "${best_cpu[$c]:-}" ]] || (($(echo "$cpu < ${best_cpu[$c]}" | bc))); then best_cpu[$c]=$cpu; fi
        if [[ -z "${best_wall[$c]:-}" ]] || (($(echo "$w < ${best_wall[$c]}" | bc))); then best_wall[$c]=$w; fi
        if [[ $c == parquet ]]; then
            bytes=$(du -sb "$work/out" | cut -f1)
        fi
    done
done
echo "| command, $events events | CPU s | wall s | M events/s (CPU) | M events/s (wall) |"
echo "|---|---:|---:|---:|---:|"
for c in "${cases[@]}"; do
    printf '| %s | %s | %s | %.1f | %.1f |\n' "$c" "${best_cpu[$c]}" "${best_wall[$c]}" \
        "$(echo "$events / ${best_cpu[$c]} / 1000000" | bc -l)" "$(echo "$events / ${best_wall[$c]} / 1000000" | bc -l)"
done
printf 'parquet: %s bytes = %.2f bytes/event (all four tables)\n' "$bytes" "$(echo "$bytes / $events" | bc -l)"
