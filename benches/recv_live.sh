#!/usr/bin/env bash
# `qtrace recv` alone and `qtrace recv --live` (standard output a file, so the
# view prints its plain-text figures) side by side: the same sender
# (examples/udp_send: EVENTS user events, BATCH per millisecond), rounds
# alternated. Per run: the receiver process's CPU time (user, sys), the
# sender's logging rate and the receiver's account (received, lost in
# transit). The view must not cost the receiver events.
#
#   benches/recv_live.sh [EVENTS] [BATCH] [ROUNDS]     # default 5000000 8000 4
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-5000000}
batch=${2:-8000}
rounds=${3:-4}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build --release -q -p qtrace-cli --bin qtrace
cargo build --release -q --example udp_send
target=${CARGO_TARGET_DIR:-target}/release
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq "$rounds"); do
    for mode in recv live; do
        port=$((20000 + RANDOM % 20000))
        extra=()
        [[ $mode == live ]] && extra=(--live)
        /usr/bin/time -f "%U %S" -o "$work/time" "$target/qtrace" recv --listen "127.0.0.1:$port" \
            --out "$work/$mode-$round.qtr" --count "$n" --duration 60 "${extra[@]}" \
            >"$work/out" 2>"$work/err" &
        pid=$!
        sleep 0.5
        sent=$("$target/examples/udp_send" "127.0.0.1:$port" "$n" "$batch")
        wait "$pid" || true
        read -r user sys <"$work/time"
        got=$(grep -m1 '^received' "$work/out" | cut -d' ' -f2)
        lost=$(grep -m1 -o '[0-9]* lost in transit' "$work/out" | cut -d' ' -f1)
        rate=$(echo "$sent" | grep -o '([0-9.]* M events/s)')
        echo "round $round $mode: cpu ${user}s user ${sys}s sys; sender $rate; received $got, lost in transit $lost"
        rm -f "$work"/*.qtr
    done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
