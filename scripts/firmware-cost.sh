#!/usr/bin/env bash
# Instructions per event on the MCU: the producer (`log_event`, with and
# without streaming) and the drain, counted under QEMU.
#
#   scripts/firmware-cost.sh
#
# Builds examples/firmware-cortex-m (release; its second binary, `cost`,
# src/bin/cost.rs) and runs `cost` on QEMU's mps2-an385 (Cortex-M3) with
# `-icount shift=0`: QEMU's virtual clock then advances exactly 1 ns per
# guest instruction, so the firmware's SysTick clock (40 ns a cycle of the
# 25 MHz clock) reads instructions, to 40. Each figure is
# (time(N2) - time(N1)) / (N2 - N1) over N2 - N1 = 163,840 events, less
# the loop's own instructions, measured apart; the firmware checks the
# method first (cortex_m::asm::delay's two-instruction loop must read 2.00).
#
# What is counted: instructions of the thumbv7m code as QEMU's TCG runs it,
# deterministic from run to run. Not cycles: TCG models no pipeline, no
# flash wait states, no bus, and not the DWT cycle counter; on a real
# Cortex-M3 a load takes 2 cycles, a taken branch 2–4, more from slow flash. (Debian's QEMU ships
# no TCG plugins, such as contrib's libinsn.so, to count them otherwise.)
#
# Installs qemu-system-arm and the thumbv7m target when missing, as
# scripts/qemu.sh does. Prints the firmware's `cost:` lines; exits 1 if the
# firmware fails or its check does not read 2.00.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never

if ! command -v qemu-system-arm >/dev/null 2>&1; then
    echo "firmware-cost.sh: installing qemu-system-arm"
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq qemu-system-arm >/dev/null
fi
if ! rustup target list --installed | grep -qx thumbv7m-none-eabi; then
    rustup target add thumbv7m-none-eabi
fi

(cd examples/firmware-cortex-m && cargo build --release --quiet --bin cost)
target=$(cd examples/firmware-cortex-m &&
    (cargo metadata --format-version 1 --no-deps --offline 2>/dev/null ||
        cargo metadata --format-version 1 --no-deps) |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
cost="$target/thumbv7m-none-eabi/release/cost"

out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
# -serial null: the UART0 sink's bytes go nowhere (the drain's cost is the
# firmware's, not the host's).
(cd "$(dirname "$out")" && timeout 120 qemu-system-arm -machine mps2-an385 -nographic \
    -icount shift=0 -semihosting-config enable=on,target=native \
    -serial null -monitor none -kernel "$cost") >"$out" 2>&1 || status=$?
cat "$out"
if [ "$status" -ne 0 ]; then
    echo "firmware-cost.sh: the firmware exited with status $status (124: timed out)" >&2
    exit 1
fi
grep -q '^cost: check: asm::delay 2.00 ' "$out" ||
    { echo "firmware-cost.sh: 1 ns of virtual time is not 1 instruction (-icount shift=0)" >&2; exit 1; }
