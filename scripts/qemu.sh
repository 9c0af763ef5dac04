#!/usr/bin/env bash
# Runs the Cortex-M firmware example (examples/firmware-cortex-m) under QEMU
# and checks the trace it writes: the no_std core traced for real.
#
#   scripts/qemu.sh
#   QTRACE_BIN=target/debug/qtrace scripts/qemu.sh   # use a command already built
#
# 1. Installs what is missing: qemu-system-arm (Debian package
#    qemu-system-arm, through apt-get) and the rustup target
#    thumbv7m-none-eabi.
# 2. Builds the firmware (release) and the qtrace command (in
#    <target dir>/qemu-cli, so a build of the command with other features
#    in <target dir>/release is left as it is), unless QTRACE_BIN names a
#    qtrace command already built (.ci/run passes the one its tests built:
#    a release build of the command took CI about 7 minutes).
# 3. Runs the firmware on QEMU's mps2-an385 board (Cortex-M3, 25 MHz; its
#    SysTick ticks, unlike lm3s6965evb's) with semihosting, under a 60 s
#    timeout. SysTick (every 1 ms) and the main loop log 7 events a tick for
#    100 ticks (700 events) into a static 512-slot circular ring, which the
#    firmware then writes over semihosting as a standard trace file,
#    <target dir>/qemu/qtrace-firmware.qtr (`target/` unless CARGO_TARGET_DIR
#    says otherwise), and exits with status 0.
# 4. Reads the file with `qtrace dump`, `qtrace stats --json` and
#    `qtrace convert --to chrome`, and checks: exit status 0 (a complete
#    file), exactly 512 events and one hoops record of 188 lost events, the
#    close run's counters (accepted 700, overwritten 188, delivered 512),
#    every event name the firmware logs, times that never go back within
#    each context (SysTick's events; the main loop's).
# 5. Then the firmware streams 100,000 events twice (FORMAT.md 10, the
#    core's stream::Drain polled from the main loop): over UART0 (QEMU's
#    first -serial, a file) with a sink that takes every byte, and over
#    UART1 with one that takes at most 96 bytes a poll. `qtrace recv
#    --serial` reads both files; checked: UART0 100,000 received, none
#    lost, each the event the firmware logged in its place; UART1 received + dropped = 100,000, dropped > 0, both equal to
#    the firmware's own counts; no bad frame. Last, events from the main
#    loop (100 a 1 ms tick) and one a tick from SysTick into an RTT ring
#    (FORMAT.md 10.7, the symbol _SEGGER_RTT): QEMU runs with -qmp, and
#    `qtrace recv --rtt-qmp --elf` attaches 0.3 s into it and polls every
#    50 ms, too slowly; once the receiver has written 256 KiB, a byte on
#    UART2 (a Unix socket) tells the firmware to close the stream (so the
#    receiver attaches mid-run however slow this host is). Checked:
#    received + lost = logged (the firmware's count), bytes overwritten > 0,
#    no bad frame, every received event the one logged in its place, names
#    from a later catalog; then QEMU is told to quit through QMP (the
#    firmware waits for it).
# 6. Runs scripts/firmware-cost.sh (the example's second binary, `cost`,
#    under -icount shift=0: instructions per log_event, with and without
#    streaming, and the drain's per event) and prints its figures, without
#    checking them (a failure there is printed, not fatal).
# 7. Prints the firmware's .text size and the part of it in qtrace_core's
#    own (not inlined) functions, then, on its last line,
#    `qemu: N events, dump ok`.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
export CARGO_TERM_COLOR=never

if ! command -v qemu-system-arm >/dev/null 2>&1; then
    echo "qemu.sh: installing qemu-system-arm"
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq qemu-system-arm >/dev/null
fi
if ! rustup target list --installed | grep -qx thumbv7m-none-eabi; then
    rustup target add thumbv7m-none-eabi
fi

# Where cargo puts what it builds: `target/` unless CARGO_TARGET_DIR (or a
# config file) says otherwise — asked of cargo, never assumed.
target_dir_of() {
    (cd "$1" && cargo metadata --format-version 1 --no-deps --offline 2>/dev/null ||
        cargo metadata --format-version 1 --no-deps) |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])'
}

echo "== build the firmware (thumbv7m-none-eabi) and the qtrace command"
(cd examples/firmware-cortex-m && cargo build --release --quiet --bin qtrace-firmware-cortex-m)
firmware="$(target_dir_of examples/firmware-cortex-m)/thumbv7m-none-eabi/release/qtrace-firmware-cortex-m"
target="$(target_dir_of "$root")"
if [ -n "${QTRACE_BIN:-}" ]; then
    [ -x "$QTRACE_BIN" ] || { echo "qemu.sh: QTRACE_BIN=$QTRACE_BIN is not an executable qtrace command" >&2; exit 1; }
    qtrace=$(cd "$(dirname "$QTRACE_BIN")" && pwd)/$(basename "$QTRACE_BIN")
    echo "qemu.sh: using the command $qtrace (QTRACE_BIN)"
else
    # The command is built in a target directory of its own: built here
    # without the feature `sql`, it would replace a `qtrace` built with it
    # (and any other feature set) in <target dir>/release.
    cargo build --release --quiet -p qtrace-cli --bin qtrace --target-dir "$target/qemu-cli"
    qtrace="$target/qemu-cli/release/qtrace"
fi

run="$target/qemu"
rm -rf "$run"
mkdir -p "$run"
trace="$run/qtrace-firmware.qtr"

echo "== run on qemu-system-arm -machine mps2-an385"
status=0
started=$(date +%s.%N)
# The QMP socket in a short temporary folder: a Unix socket's path is at
# most 107 bytes, which a deep target directory could pass.
qmp_dir=$(mktemp -d)
qmp="$qmp_dir/qmp.sock"
uart2="$qmp_dir/uart2.sock"
(cd "$run" && exec timeout 60 qemu-system-arm -machine mps2-an385 -nographic \
    -semihosting-config enable=on,target=native \
    -serial "file:$run/uart0.bin" -serial "file:$run/uart1.bin" \
    -serial "unix:$uart2,server,nowait" -monitor none \
    -qmp "unix:$qmp,server,nowait" \
    -kernel "$firmware") >"$run/console.txt" 2>&1 &
qemu_pid=$!
rtt_pid=""
trap 'kill "$qemu_pid" $rtt_pid 2>/dev/null || true; rm -rf "$qmp_dir"' EXIT
fail() { echo "qemu.sh: $*" >&2; cat "$run/console.txt" >&2; exit 1; }
# Waits (at most 60 s) for a line of the firmware's console matching $1.
wait_console() {
    local i
    for i in $(seq 600); do
        grep -q "$1" "$run/console.txt" 2>/dev/null && return 0
        kill -0 "$qemu_pid" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}
# The RTT phase (after the dump and the UART streams): the host attaches
# mid-run, 0.3 s after the firmware began to write the ring (the first
# catalog is overwritten by then), and reads the ring every 50 ms, far too
# slowly for the ~0.63 MB/s the firmware writes into its 16 KiB (at most
# 20 reads of 16 KiB a second: 0.33 MB/s). The firmware writes until told
# to stop by one byte on UART2: once the receiver's file holds 256 KiB of
# records past its 64 KiB header room (about 50,000 events, a second of
# reads, among them catalogs the firmware re-sent; the file is flushed
# every 50 ms), or after 30 s.
wait_console "firmware: rtt: started" || fail "the firmware never started its RTT phase"
sleep 0.3
rtt_status=0
timeout 60 "$qtrace" recv --rtt-qmp "$qmp" --elf "$firmware" --poll-ms 50 --out "$run/rtt.qtr" --json \
    >"$run/rtt.json" 2>"$run/rtt.txt" &
rtt_pid=$!
for _ in $(seq 300); do
    [ "$(stat -c %s "$run/rtt.qtr" 2>/dev/null || echo 0)" -ge $(((64 + 256) << 10)) ] && break
    kill -0 "$rtt_pid" 2>/dev/null || break
    sleep 0.1
done
python3 - "$uart2" <<'PY' || fail "could not write to UART2 ($uart2)"
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(sys.argv[1])
s.sendall(b"q")
time.sleep(0.5)  # QEMU takes the byte before it sees the socket close
s.close()
PY
wait "$rtt_pid" || rtt_status=$?
rtt_pid=""
# The firmware prints its own count after its end frame; then QEMU is told
# to quit (the firmware waits for that).
wait_console "firmware: stream rtt:" || fail "the firmware did not finish its RTT phase"
python3 - "$qmp" <<'PY' || fail "could not quit QEMU through QMP"
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(sys.argv[1])
f = s.makefile("rw")
f.readline()
for cmd in ("qmp_capabilities", "quit"):
    f.write(json.dumps({"execute": cmd}) + "\n")
    f.flush()
    while "return" not in json.loads(f.readline()):
        pass
PY
wait "$qemu_pid" || status=$?
trap - EXIT
rm -rf "$qmp_dir"
ended=$(date +%s.%N)
cat "$run/console.txt"
if [ "$status" -ne 0 ]; then
    echo "qemu.sh: the firmware exited with status $status (124: timed out)" >&2
    exit 1
fi
[ "$rtt_status" -eq 0 ] || { cat "$run/rtt.txt" >&2; fail "qtrace recv --rtt-qmp exited with status $rtt_status"; }
[ -s "$trace" ] || { echo "qemu.sh: no trace file $trace" >&2; exit 1; }

echo "== qtrace dump"
"$qtrace" dump "$trace" >"$run/dump.txt" || fail "qtrace dump exited with status $? (0 = a complete file)"
head -n 4 "$run/dump.txt"
echo "…"
tail -n 2 "$run/dump.txt"
events=$(grep -vc '^ *[0-9.]* *\[' "$run/dump.txt" || true)
[ "$events" -eq 512 ] || fail "dump shows $events events, expected 512 (the ring's 512 slots)"
[ "$(grep -c '\[LOST 188 EVENTS\] (queue 0)' "$run/dump.txt")" -eq 1 ] \
    || fail "dump lacks the one hoops record of 188 events"
grep -q '\[END: complete; the file holds 513 records; its queue had then accepted 700, dropped 0, overwritten 188, delivered 512\]' "$run/dump.txt" \
    || fail "dump lacks the complete close run with accepted 700, overwritten 188, delivered 512"
for name in 'lowlevel +interrupt +irq=15' 'system +activate' 'system +schedule' \
    'semaphore +wait +task=[0-9] sem=1' 'semaphore +signal' 'system +endcycle' 'app +job +task='; do
    grep -Eq "$name" "$run/dump.txt" || fail "dump lacks an event matching '$name'"
done
# Times never go back within a context (FORMAT.md 1.12: the order of one
# source). Across the two they may: SysTick can preempt the main loop
# between its get and its clock read, so a main-loop record carries a time
# later than the interrupt's records after it (docs/firmware.md, "Order").
awk '$1 ~ /^[0-9.]+$/ && $2 !~ /^\[/ {
        ctx = (($3 == "lowlevel" && $4 == "interrupt") || ($3 == "system" && $4 == "activate")) ? "SysTick" : "main loop"
        if ($1 < prev[ctx]) { print "time goes back in the " ctx " at line " NR; exit 1 }
        prev[ctx] = $1
    }' "$run/dump.txt" || fail "timestamps go back within a context"

echo "== qtrace stats --json"
"$qtrace" stats --json "$trace" >"$run/stats.json" || fail "qtrace stats exited with status $?"
python3 - "$run/stats.json" <<'PY' || fail "stats disagree"
import json, sys
f = json.load(open(sys.argv[1]))["files"][0]
assert (f["events"], f["lost"], f["hoops"], f["complete"]) == (512, 188, 1, True), f
print(f"stats: {f['events']} events, {f['lost']} lost in {f['hoops']} hoops record, complete")
PY

echo "== qtrace convert --to chrome"
"$qtrace" convert --to chrome --out "$run/trace.json" "$trace" || fail "qtrace convert exited with status $?"
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$run/trace.json" || fail "convert wrote invalid JSON"

echo "== the streams (FORMAT.md 10): qtrace recv --serial"
# UART0's sink takes every byte: 100,000 events, none lost. UART1's takes at
# most 96 bytes a poll (a throttled link): whole chunks dropped, and
# received + dropped = 100,000 exactly, as the firmware counted them.
check_stream() { # uart, expect_loss
    local uart=$1 loss=$2
    "$qtrace" recv --serial "$run/$uart.bin" --out "$run/$uart.qtr" --json >"$run/$uart.json" 2>"$run/$uart.txt" \
        || fail "qtrace recv --serial $uart exited with status $?"
    python3 - "$run/$uart.json" "$run/console.txt" "$uart" "$loss" <<'PY' || fail "the $uart stream disagrees"
import json, re, sys
j = json.load(open(sys.argv[1]))
uart, loss = sys.argv[3], sys.argv[4] == "loss"
m = re.search(r"stream %s: (\d+) events logged, (\d+) sent, (\d+) dropped \((\d+) chunks\), (\d+) frames, (\d+) bytes" % uart,
              open(sys.argv[2]).read())
logged, sent, dropped, chunks, frames, nbytes = map(int, m.groups())
assert logged == 100_000, logged
assert (j["events"], j["sender_dropped"], j["lost_events"]) == (sent, dropped, 0), j
assert j["events"] + j["sender_dropped"] == logged, j
assert (j["stream_frames"], j["stream_bytes"], j["stream_bad_frames"]) == (frames, nbytes, 0), j
assert j["unclosed_senders"] == 0, j
if loss:
    assert dropped > 0 and chunks > 0, (dropped, chunks)
else:
    assert dropped == 0 and sent == logged, (sent, dropped)
print(f"{uart}: {j['events']} events received, {j['sender_dropped']} dropped in {chunks} whole chunks, "
      f"{nbytes} bytes ({nbytes / logged:.2f} B/event logged), {frames} frames")
PY
    # The received file reads back with the same account.
    "$qtrace" stats --json "$run/$uart.qtr" >"$run/$uart-stats.json" || fail "qtrace stats $uart.qtr exited with status $?"
    python3 - "$run/$uart-stats.json" "$run/$uart.json" <<'PY' || fail "the $uart file disagrees"
import json, sys
f = json.load(open(sys.argv[1]))["files"][0]
j = json.load(open(sys.argv[2]))
assert (f["events"], f["lost"]) == (j["events"], j["sender_dropped"]), (f, j)
PY
}
check_stream uart0 none
# UART0 lost nothing: its events are exactly the ones the firmware logged,
# one for one (the main loop's pattern, event i of task i/5 % 3 + 1, the
# job's tick i/5), in order, times never going back.
"$qtrace" dump "$run/uart0.qtr" >"$run/uart0-dump.txt" || fail "qtrace dump uart0.qtr exited with status $?"
python3 - "$run/uart0-dump.txt" <<'PY' || fail "the uart0 stream is not event for event what the firmware logged"
import re, sys
pattern = ["system +schedule +task=(\d)$", "semaphore +wait +task=(\d) sem=1$", "app +job +task=(\d) tick=(\d+)$",
           "semaphore +signal +task=(\d) sem=1$", "system +endcycle +task=(\d)$"]
i, prev = 0, -1.0
for line in open(sys.argv[1]).read().splitlines():
    assert "[LOST" not in line, line
    if "[END" in line or not re.match(r"^ *[0-9.]+ +\d", line):
        continue
    m = re.search(pattern[i % 5], line)
    assert m and int(m.group(1)) == i // 5 % 3 + 1, (i, line)
    assert i % 5 != 2 or int(m.group(2)) == i // 5, (i, line)
    t = float(line.split()[0])
    assert t >= prev, (i, line)
    prev, i = t, i + 1
assert i == 100_000, i
print(f"uart0: the {i} events received are the firmware's, one for one, in order")
PY
check_stream uart1 loss

echo "== the RTT ring through QMP (FORMAT.md 10.7): qtrace recv --rtt-qmp"
# Attached mid-run and polling too slowly: received + lost = logged exactly
# (the firmware's own count), bytes overwritten > 0, no bad frame, and every
# received event is one the firmware logged, in its place (no torn record);
# the names come from a catalog sent after the host attached.
"$qtrace" dump "$run/rtt.qtr" >"$run/rtt-dump.txt" || fail "qtrace dump rtt.qtr exited with status $?"
python3 - "$run/rtt.json" "$run/console.txt" "$run/rtt-dump.txt" <<'PY' || fail "the RTT stream disagrees"
import json, re, sys
j = json.load(open(sys.argv[1]))
m = re.search(r"stream rtt: (\d+) events logged, (\d+) sent, (\d+) dropped \((\d+) chunks\), (\d+) frames, (\d+) bytes; (\d+) of the events from SysTick",
              open(sys.argv[2]).read())
logged, sent, dropped, chunks, frames, nbytes, ticks = map(int, m.groups())
assert ticks > 0 and logged > ticks and (logged - ticks) % 5 == 0, (logged, ticks)
assert j["events"] + j["lost_events"] + j["sender_dropped"] == logged, j
assert j["sender_dropped"] == dropped, (j, dropped)
assert j["lost_events"] > 0 and j["stream_overwritten_bytes"] > 0, j
assert (j["stream_bad_frames"], j["stream_corrupt_chunks"], j["unclosed_senders"]) == (0, 0, 0), j
# Walk the received events: between two LOST marks they follow the
# firmware's pattern exactly (SysTick's interrupts anywhere among them).
pattern = ["system +schedule +task=(\d)$", "semaphore +wait +task=(\d) sem=1$", "app +job +task=(\d) tick=(\d+)$",
           "semaphore +signal +task=(\d) sem=1$", "system +endcycle +task=(\d)$"]
events = lost = irqs = 0
prev = None  # (main-loop index) of the last event, None after a LOST mark
dump = open(sys.argv[3]).read().splitlines()
# Attached mid-run: the events before the first one received are lost.
assert "[LOST" in dump[0], dump[0]
for line in dump:
    if "[LOST" in line:
        lost += int(re.search(r"\[LOST (\d+) EVENTS", line).group(1))
        prev = None
        continue
    if "[END" in line or not re.match(r"^ *[0-9.]+ +\d", line):
        continue
    events += 1
    if re.search(r"lowlevel +interrupt +irq=15$", line):
        irqs += 1
        continue
    kinds = [k for k, p in enumerate(pattern) if re.search(p, line)]
    assert len(kinds) == 1, line
    k = kinds[0]
    g = re.search(pattern[k], line).groups()
    if k == 2:
        cycle = int(g[1])
        assert int(g[0]) == cycle % 3 + 1, line
    if prev is not None:
        assert k == (prev + 1) % 5, (prev, line)
    prev = k
assert events == j["events"] and lost == j["lost_events"], (events, lost, j)
assert irqs > 0, "no SysTick event received"
print(f"rtt: {j['events']} events received ({irqs} from SysTick), {j['lost_events']} lost "
      f"({j['stream_overwritten_bytes']} bytes overwritten), = {logged} logged; "
      f"{j['stream_reads']} QMP reads; {nbytes / logged:.2f} B/event; no bad frame")
PY
seconds=$(python3 -c "print(f'{$ended - $started:.2f}')")
echo "qemu run (dump, the two UART streams, the RTT ring): $seconds s wall"

echo "== instructions per event on the MCU (scripts/firmware-cost.sh: -icount shift=0; printed, not checked)"
scripts/firmware-cost.sh || echo "qemu.sh: scripts/firmware-cost.sh failed (not checked here)"

echo "== size of the firmware"
if command -v nm >/dev/null && command -v size >/dev/null; then
    text=$(size -A "$firmware" | awk '$1 == ".text" { print $2 }')
    core=$(nm -S -C "$firmware" | python3 -c '
import sys
print(sum(int(f[1], 16) for f in (l.split(None, 3) for l in sys.stdin)
          if len(f) == 4 and f[2] in "tT" and "qtrace_core::" in f[3]))')
    echo "firmware .text: $text bytes; in qtrace_core's own functions: $core bytes (log_event and the dump are also inlined into SysTick and main)"
fi
echo "qemu: $events events, dump ok; streams: 100000 events over uart0 without loss, uart1's and the RTT ring's loss counted exactly"
