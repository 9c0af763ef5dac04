#!/usr/bin/env bash
# Zero loss against a free-running sender: examples/udp_rate logs at a fixed
# RATE into a UDP queue (never waiting for the receiver) for SECONDS, to
# `qtrace recv --out` or `qtrace recv --store`, compact datagrams
# (FORMAT.md 2.7) and 32-byte ones, unkeyed and keyed (FORMAT.md 2.6),
# rates stepped up. Per run: the sender's achieved rate, and the receiver's
# account: received, lost in transit, dropped at the sender's queue; the
# datagrams the kernel dropped because the receiver's socket buffer was full
# (RcvbufErrors of /proc/net/snmp over the run: the whole host's, so other
# UDP traffic counts too); the 1-minute load. "zero loss" = received = logged.
#
#   benches/udp_rate.sh [SECONDS] [ROUNDS] [RATES...]
#   # default: 3 s, 1 round, rates 2 4 6 8 10 12 M events/s
# Environment: SINKS="out store" (default both), MODES="compact 32"
# (also "compact-no-offload": compact datagrams sent one a system call, as
# `udp_rate --no-offload`, against the default segmentation offload),
# KEYED="no yes" (default no), RECEIVERS="old=/path/to/qtrace new" (default
# "new": this tree's release build; each NAME=BINARY is run in turn at every
# step, alternated, to compare receivers against the same sender),
# DGRAM=N (the sender's datagrams of at most N bytes, `udp_rate
# --datagram-len`; default its 1472).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-3}
rounds=${2:-1}
shift $(( $# > 2 ? 2 : $# )) || true
rates=("$@")
[[ ${#rates[@]} -eq 0 ]] && rates=(2 4 6 8 10 12)
sinks=${SINKS:-out store}
modes=${MODES:-compact 32}
keyed=${KEYED:-no}
receivers=${RECEIVERS:-new}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build --release -q -p qtrace-cli --bin qtrace
cargo build --release -q --features keys --example udp_rate
target=${CARGO_TARGET_DIR:-target}/release
"$target/qtrace" keygen "$work/k.key" >/dev/null
rcvbuf_errors() { awk '/^Udp:/ { n++; if (n == 2) print $6 }' /proc/net/snmp; }
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs; load: $(cut -d' ' -f1-3 /proc/loadavg); net.core.rmem_max $(cat /proc/sys/net/core/rmem_max); datagrams of at most ${DGRAM:-1472} bytes"
echo "# receiver sink mode keyed rate(M/s) | sender M/s | logged received lost-in-transit dropped-at-sender | socket-buffer drops | load | verdict"
for round in $(seq "$rounds"); do
    for rate in "${rates[@]}"; do
        for sink in $sinks; do
            for mode in $modes; do
                for key in $keyed; do
                    for receiver in $receivers; do
                        name=${receiver%%=*}
                        bin=$target/qtrace
                        [[ $receiver == *=* ]] && bin=${receiver#*=}
                        port=$((20000 + RANDOM % 20000))
                        if [[ $sink == store ]]; then
                            dest=(--store "$work/store")
                        else
                            dest=(--out "$work/recv.qtr")
                        fi
                        keys=()
                        flag=()
                        [[ $key == yes ]] && keys=(--key-file "$work/k.key") && flag=(--key "$work/k.key")
                        [[ $mode == 32 ]] && flag+=(--32)
                        [[ $mode == compact-no-offload ]] && flag+=(--no-offload)
                        [[ -n ${DGRAM:-} ]] && flag+=(--datagram-len "$DGRAM")
                        drops=$(rcvbuf_errors)
                        "$bin" recv --listen "127.0.0.1:$port" "${dest[@]}" "${keys[@]}" \
                            --count $((rate * 1000000 * secs)) --duration $((secs + 8)) \
                            >"$work/out" 2>"$work/err" &
                        pid=$!
                        sleep 0.5
                        sent=$("$target/examples/udp_rate" "127.0.0.1:$port" $((rate * 1000000)) "$secs" "${flag[@]}")
                        wait "$pid" || true
                        drops=$(( $(rcvbuf_errors) - drops ))
                        logged=$(echo "$sent" | grep -o '[0-9]* events logged' | cut -d' ' -f1)
                        achieved=$(echo "$sent" | grep -o '([0-9.]* M events/s)' | tr -d '()' | cut -d' ' -f1)
                        got=$(grep -m1 '^received' "$work/out" | cut -d' ' -f2 || echo 0)
                        lost=$(grep -m1 -o '[0-9]* lost in transit' "$work/out" | cut -d' ' -f1 || echo "?")
                        dropped=$(grep -m1 -o '[0-9]* dropped by the sender' "$work/out" | cut -d' ' -f1 || echo "?")
                        verdict=LOSS
                        [[ "$got" == "$logged" ]] && verdict="zero loss"
                        echo "$name $sink $mode $key $rate | $achieved | $logged $got $lost $dropped | $drops | $(cut -d' ' -f1 /proc/loadavg) | $verdict"
                        rm -rf "$work/store" "$work/recv.qtr"
                    done
                done
            done
        done
    done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
