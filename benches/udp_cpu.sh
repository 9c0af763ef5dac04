#!/usr/bin/env bash
# The CPU an event of each busy thread of a free-running UDP stream: the
# producer (examples/udp_rate logging at RATE events/s), the UDP queue's
# send task (`qtrace-udp-q0`) and `qtrace recv --out` (compact file), each
# under `perf record -e cpu-clock -c 100000` (a sample every 0.1 ms of a
# thread's CPU), split per thread. Per run: events logged, sent (by the
# task) and received; producer ns per event logged (its drops included),
# send task ns per event sent, receiver ns per event received (all its
# threads; its main thread). CPU an event, not a rate: the load of other
# processes changes it little (the rates, much).
#
#   benches/udp_cpu.sh RATE SECONDS ROUNDS [NAME=DIR ...]
#   # e.g. benches/udp_cpu.sh 20000000 2 3 old=/tmp/main new=target/release
# Each DIR holds a `qtrace` and a `udp_rate` (target/release/examples/);
# the builds are alternated at every round. Default: this tree's release
# build. FLAGS="--key FILE" or "--32" are passed to udp_rate (a key file
# needs `--key-file` on the receiver: not done here).
# Needs perf (Debian: apt-get install linux-perf).
set -euo pipefail
cd "$(dirname "$0")/.."
rate=$1 secs=$2 rounds=$3
shift 3
builds=("$@")
target=${CARGO_TARGET_DIR:-target}/release
if [[ ${#builds[@]} -eq 0 ]]; then
    cargo build --release -q -p qtrace-cli --bin qtrace
    cargo build --release -q --features keys --example udp_rate
    mkdir -p "$target/udp_cpu"
    cp "$target/qtrace" "$target/examples/udp_rate" "$target/udp_cpu/"
    builds=("new=$target/udp_cpu")
fi
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs; rate $rate, ${secs} s; load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# build | logged sent received | producer ns/logged | send task ns/sent | receiver ns/received (all threads; main) | load"
ns() { echo "scale=1; $1 * 100000 / $2" | bc; }
for _ in $(seq "$rounds"); do
    for b in "${builds[@]}"; do
        name=${b%%=*} dir=${b#*=}
        w=$(mktemp -d)
        port=$((20000 + RANDOM % 20000))
        perf record -q -e cpu-clock -c 100000 -o "$w/r.data" -- "$dir/qtrace" recv \
            --listen "127.0.0.1:$port" --out "$w/r.qtr" --count $((rate * secs)) \
            --duration $((secs + 6)) >"$w/rout" 2>"$w/rerr" &
        pid=$!
        sleep 0.5
        # shellcheck disable=SC2086 # FLAGS is a list of words
        perf record -q -e cpu-clock -c 100000 -o "$w/s.data" -- "$dir/udp_rate" \
            "127.0.0.1:$port" "$rate" "$secs" ${FLAGS:-} >"$w/sout" 2>"$w/serr"
        wait "$pid" || true
        logged=$(grep -o '[0-9]* events logged' "$w/sout" | cut -d' ' -f1)
        sent=$(grep -o '[0-9]* sent in' "$w/sout" | cut -d' ' -f1)
        got=$(grep -m1 '^received' "$w/rout" | cut -d' ' -f2)
        # Samples per thread ("pid" is the thread's id and name).
        perf report -i "$w/s.data" --sort pid -q -n --stdio -g none 2>/dev/null >"$w/s.rep"
        perf report -i "$w/r.data" --sort pid -q -n --stdio -g none 2>/dev/null >"$w/r.rep"
        prod=$(awk '/:udp_rate/ { print $2 }' "$w/s.rep")
        task=$(awk '/qtrace-udp/ { print $2 }' "$w/s.rep")
        rall=$(awk 'NF >= 3 { s += $2 } END { print s }' "$w/r.rep")
        rmain=$(awk 'NF >= 3 { print $2; exit }' "$w/r.rep")
        echo "$name | $logged $sent $got | $(ns "$prod" "$logged") | $(ns "$task" "$sent") | $(ns "$rall" "$got"); $(ns "$rmain" "$got") | $(cut -d' ' -f1 /proc/loadavg)"
        rm -rf "$w"
    done
done
