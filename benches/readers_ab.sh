#!/usr/bin/env bash
# The reading commands of two (or more) builds of `qtrace`, alternated in
# one run: `dump`, `stats`, `analyze`, `convert --to perfetto` and
# `convert --to parquet` of the 5 M-event synthetic trace
# (examples/convert_memory.rs) and of the reference corpus's compact and
# 32-byte files (examples/corpus.rs, 1 M records, real clock). Each round
# runs every build once per command and file, the builds' order rotating a
# round; prints the medians of wall and CPU (user + system) seconds, timed
# by bash's `time`, and the events (records) a second of wall they give.
# Before each round it measures a cache line's round trip between the two
# cores (benches/cross_core.rs) and prints the spread at the end: rounds
# above 200 ns ran with the vCPUs on different dies, where the two-thread
# commands are up to 2x slower (BENCHMARKS.md, the hosts).
#
#   benches/readers_ab.sh ROUNDS NAME=QTRACE [NAME=QTRACE ...]
#   benches/readers_ab.sh 15 before=/tmp/q-old after=target/release/qtrace
#
# Build the older commit in a worktree with its own CARGO_TARGET_DIR (a
# shared target directory can hand back the other build's binary). Writes
# nothing but the examples' release build (target/) and a temporary folder,
# removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:?usage: benches/readers_ab.sh ROUNDS NAME=QTRACE ...}
shift
builds=("$@")
((${#builds[@]} >= 1)) || { echo "give at least one NAME=QTRACE" >&2; exit 2; }
cargo build --release --features export --example convert_memory --quiet
cargo build --release --example corpus --quiet
cargo bench -p qtrace-benches --bench cross_core --no-run --quiet
cross_core() { cargo bench -p qtrace-benches --bench cross_core --quiet -- --quiet 2>/dev/null; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
target/release/examples/convert_memory qtr 5000000 "$work/t5.qtr" >/dev/null
target/release/examples/corpus "$work" 1000000 >/dev/null
declare -A size=([t5.qtr]=5000000 [corpus-compact.qtr]=1000000 [corpus-32.qtr]=1000000)
echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs"
echo "load before: $(uptime | sed 's/.*load average/load average/')"

# One timed run: "wall cpu" seconds.
run() {
    local q=$1 cmd=$2 file=$3 t
    rm -rf "$work/pq" "$work/p.pftrace"
    case $cmd in
        perfetto) set -- "$q" convert --to perfetto "$file" --out "$work/p.pftrace" ;;
        parquet) set -- "$q" convert --to parquet "$file" --out "$work/pq" ;;
        *) set -- "$q" "$cmd" "$file" ;;
    esac
    t=$( { TIMEFORMAT='%R %U %S'; time "$@" >/dev/null 2>&1; } 2>&1 )
    awk '{ printf "%s %.3f\n", $1, $2 + $3 }' <<<"$t"
}
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

declare -A walls cpus
trips=()
for ((r = 0; r < rounds; r++)); do
    trips+=("$(cross_core)")
    for file in t5.qtr corpus-compact.qtr corpus-32.qtr; do
        for cmd in dump stats analyze perfetto parquet; do
            n=${#builds[@]}
            for ((k = 0; k < n; k++)); do
                b=${builds[$(((k + r) % n))]}
                read -r w c < <(run "${b#*=}" "$cmd" "$work/$file")
                key="${b%%=*} $cmd $file"
                walls[$key]+="$w"$'\n'
                cpus[$key]+="$c"$'\n'
            done
        done
    done
done
echo "load after: $(uptime | sed 's/.*load average/load average/')"
printf '%s\n' "${trips[@]}" | sort -n | awk '
    { t[NR] = $1; if ($1 > 200) apart++ }
    END { printf "cross-core round trip before each round: %s..%s ns, median %s; rounds with the vCPUs on different dies (> 200 ns): %d of %d\n", t[1], t[NR], t[int((NR + 1) / 2)], apart, NR }'
echo
echo "| file | command | build | wall s (median) | CPU s (median) | M records/s of wall |"
echo "|---|---|---|---:|---:|---:|"
for file in t5.qtr corpus-compact.qtr corpus-32.qtr; do
    for cmd in dump stats analyze perfetto parquet; do
        for b in "${builds[@]}"; do
            key="${b%%=*} $cmd $file"
            w=$(printf '%s' "${walls[$key]}" | median)
            c=$(printf '%s' "${cpus[$key]}" | median)
            rate=$(awk -v n="${size[$file]}" -v t="$w" 'BEGIN { printf "%.1f", n / t / 1e6 }')
            echo "| $file | $cmd | ${b%%=*} | $w | $c | $rate |"
        done
    done
done
