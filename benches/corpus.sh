#!/usr/bin/env bash
# The reference corpus (examples/corpus, BENCHMARKS.md "Sizes on
# disk"): generates it in a temporary folder and measures on it what the
# README and BENCHMARKS.md claim about sizes and rates.
#
#   benches/corpus.sh [RECORDS] [ROUNDS]      # defaults 1000000 and 7
#
# Sizes, in bytes a record (the files after their header; the exports
# whole, a folder summed): the compact file (version 2) and the 32-byte one
# (version 1), both after `zstd -19` (when zstd is installed), and
# `qtrace convert` of the compact file to Perfetto (compressed, the default,
# and `--uncompressed`), Parquet (the folder), Chrome JSON and CTF (the
# folder). Rates: `stats`, `analyze`, `convert --to perfetto` and
# `--to parquet` of both files, ROUNDS rounds with the cases alternating in
# each (the order rotating, the two files one after the other), timed by
# bash's `time` (wall, user and system seconds to the millisecond); the
# medians of wall and CPU (user + system) seconds and the records a second
# they give. Writes nothing but the release build (target/) and its
# temporary folder, removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
records=${1:-1000000}
rounds=${2:-7}
cargo build --release -p qtrace-cli --quiet
cargo build --release --example corpus --quiet
q=$PWD/target/release/qtrace
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs"
echo "load before: $(uptime)"
target/release/examples/corpus "$work" "$records"
v2=$work/corpus-compact.qtr
v1=$work/corpus-32.qtr

# Bytes a record of N bytes, to 2 decimals.
per() { awk -v b="$1" -v n="$records" 'BEGIN { printf "%.2f", b / n }'; }
# The header's length: what the 32-byte file holds beyond its records and
# its close run (FORMAT.md 1.5: 3 records).
close_run=$((3 * 32))
head=$(($(stat -c %s "$v1") - 32 * records - close_run))

echo
echo "| form | bytes | bytes a record |"
echo "|---|---:|---:|"
for f in "$v2" "$v1"; do
    b=$(($(stat -c %s "$f") - head))
    echo "| $(basename "$f") (after the header) | $b | $(per "$b") |"
done
if command -v zstd >/dev/null; then
    for f in "$v2" "$v1"; do
        b=$(zstd -19 -q -c "$f" | wc -c)
        echo "| $(basename "$f"), zstd -19 (whole file) | $b | $(per "$b") |"
    done
else
    echo "| corpus-compact.qtr, zstd -19 | zstd is not installed | — |"
fi
"$q" convert --to perfetto "$v2" --out "$work/p.pftrace" >/dev/null 2>&1
b=$(stat -c %s "$work/p.pftrace")
echo "| convert --to perfetto (compressed) | $b | $(per "$b") |"
"$q" convert --to perfetto --uncompressed "$v2" --out "$work/pu.pftrace" >/dev/null 2>&1
b=$(stat -c %s "$work/pu.pftrace")
echo "| convert --to perfetto --uncompressed | $b | $(per "$b") |"
rm -f "$work/pu.pftrace"
"$q" convert --to parquet "$v2" --out "$work/pq" >/dev/null 2>&1
b=$(du -sb "$work/pq" | cut -f1)
echo "| convert --to parquet (the folder) | $b | $(per "$b") |"
"$q" convert --to chrome "$v2" --out "$work/c.json" >/dev/null 2>&1
b=$(stat -c %s "$work/c.json")
echo "| convert --to chrome | $b | $(per "$b") |"
"$q" convert --to ctf "$v2" --out "$work/ctf" >/dev/null 2>&1
b=$(du -sb "$work/ctf" | cut -f1)
echo "| convert --to ctf (the folder) | $b | $(per "$b") |"
rm -rf "$work/c.json" "$work/ctf" "$work/pq" "$work/p.pftrace"
# Either file converts to the same bytes (the same records).
"$q" convert --to perfetto "$v1" --out "$work/p1.pftrace" >/dev/null 2>&1
"$q" convert --to perfetto "$v2" --out "$work/p2.pftrace" >/dev/null 2>&1
if cmp -s "$work/p1.pftrace" "$work/p2.pftrace"; then
    echo "(the Perfetto files of both forms are the same bytes)"
else
    echo "(the Perfetto files of the two forms differ)"
fi
rm -f "$work/p1.pftrace" "$work/p2.pftrace"

cases=(stats analyze perfetto parquet)
TIMEFORMAT='%3R %3U %3S'
for ((r = 0; r < rounds; r++)); do
    for k in "${!cases[@]}"; do
        # Rotate the order each round, and alternate the two files.
        c=${cases[$(((k + r) % ${#cases[@]}))]}
        for form in v2 v1; do
            f=$v2
            [[ $form == v1 ]] && f=$v1
            rm -rf "$work/out" "$work/out.pftrace"
            case $c in
                stats) cmd=("$q" stats "$f") ;;
                analyze) cmd=("$q" analyze "$f") ;;
                perfetto) cmd=("$q" convert --to perfetto "$f" --out "$work/out.pftrace") ;;
                parquet) cmd=("$q" convert --to parquet "$f" --out "$work/out") ;;
            esac
            # Bash's `time`, as `/usr/bin/time -f '%e %U %S'` but to the
            # millisecond (GNU time prints hundredths: too coarse here).
            { time "${cmd[@]}" >/dev/null 2>&1; } 2>"$work/time"
            read -r wall user sys <"$work/time"
            echo "$wall" >>"$work/wall-$c-$form"
            awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }' >>"$work/cpu-$c-$form"
        done
    done
done
rm -rf "$work/out" "$work/out.pftrace"

median() { sort -g "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
span() { sort -g "$1" | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s–%s", lo, hi }'; }
echo
echo "| command, $records records, median of $rounds | file | wall s (least–most) | CPU s | M records/s wall | M records/s CPU |"
echo "|---|---|---:|---:|---:|---:|"
for c in "${cases[@]}"; do
    for form in v2 v1; do
        w=$(median "$work/wall-$c-$form")
        u=$(median "$work/cpu-$c-$form")
        name=compact
        [[ $form == v1 ]] && name=32-byte
        awk -v c="$c" -v f="$name" -v w="$w" -v ws="$(span "$work/wall-$c-$form")" -v u="$u" -v n="$records" \
            'BEGIN { printf "| %s | %s | %.3f (%s) | %.3f | %.1f | %.1f |\n", c, f, w, ws, u, n / w / 1e6, (u > 0 ? n / u / 1e6 : 0) }'
    done
done
echo
echo "load after: $(uptime)"
