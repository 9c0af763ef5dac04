#!/usr/bin/env bash
# The receiver's CPU an event: `qtrace recv` under `perf stat -e task-clock`
# (every thread of the receiver) while examples/udp_rate sends RATE events/s
# for SECONDS; CPU time divided by the events received. Receivers alternated
# (RECEIVERS="old=/path/to/qtrace new", default "new": this tree's build).
#
#   benches/recv_cpu.sh SINK MODE RATE SECONDS ROUNDS [KEYED]
#   # e.g. benches/recv_cpu.sh out compact 3000000 2 3 yes
# SINK: out or store; MODE: compact or 32; KEYED: yes or no (default no).
set -euo pipefail
cd "$(dirname "$0")/.."
sink=$1 mode=$2 rate=$3 secs=$4 rounds=$5 keyed=${6:-no}
receivers=${RECEIVERS:-new}
cargo build --release -q -p qtrace-cli --bin qtrace
cargo build --release -q --features keys --example udp_rate
target=${CARGO_TARGET_DIR:-target}/release
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$target/qtrace" keygen "$work/k.key" >/dev/null
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs; load: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq "$rounds"); do
    for receiver in $receivers; do
        name=${receiver%%=*}
        bin=$target/qtrace
        [[ $receiver == *=* ]] && bin=${receiver#*=}
        port=$((20000 + RANDOM % 20000))
        if [[ $sink == store ]]; then dest=(--store "$work/store"); else dest=(--out "$work/recv.qtr"); fi
        keys=()
        flag=()
        [[ $keyed == yes ]] && keys=(--key-file "$work/k.key") && flag=(--key "$work/k.key")
        [[ $mode == 32 ]] && flag+=(--32)
        perf stat -x, -e task-clock -o "$work/stat" -- "$bin" recv --listen "127.0.0.1:$port" \
            "${dest[@]}" "${keys[@]}" --count $((rate * secs)) --duration $((secs + 6)) \
            >"$work/out" 2>"$work/err" &
        pid=$!
        sleep 0.5
        "$target/examples/udp_rate" "127.0.0.1:$port" "$rate" "$secs" "${flag[@]}" >"$work/sent"
        wait "$pid" || true
        got=$(grep -m1 '^received' "$work/out" | cut -d' ' -f2)
        ms=$(grep task-clock "$work/stat" | cut -d, -f1)
        logged=$(grep -o '[0-9]* events logged' "$work/sent" | cut -d' ' -f1)
        echo "$name $sink $mode keyed=$keyed: logged $logged received $got, CPU $ms ms = $(echo "scale=1; $ms * 1000000 / $got" | bc) ns/event, load $(cut -d' ' -f1 /proc/loadavg)"
        rm -rf "$work/store" "$work/recv.qtr"
    done
done
