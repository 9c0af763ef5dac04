#!/usr/bin/env bash
# Instructions of one 64-bit (and 32-bit) counter increment on Cortex-M,
# three ways: portable-atomic's fetch_add (with its critical-section
# feature, as thumbv6m needs), and a plain u64 in a critical_section::Mutex
# (what qtrace-core's rings do, one section per get or post). Counts the
# instructions of each function in the compiler's assembly (opt-level s),
# for thumbv6m-none-eabi (no compare-and-swap) and thumbv7m-none-eabi (32-bit
# LL/SC, no 64-bit atomics). The critical section's own acquire/release
# (cortex-m single-core: save PRIMASK and `cpsid i`; restore) are calls,
# listed.
#
#   scripts/atomics_vs_cs.sh
#
# Builds a throwaway crate under target/atomics-vs-cs (docs/benchmarks-history.md,
# "Without std").
set -euo pipefail
cd "$(dirname "$0")/.."
dir=target/atomics-vs-cs
mkdir -p "$dir/src"
cat >"$dir/Cargo.toml" <<'TOML'
[package]
name = "atomics-vs-cs"
version = "0.0.0"
edition = "2021"
publish = false
[dependencies]
critical-section = "1"
portable-atomic = { version = "1", features = ["critical-section"] }
[profile.release]
opt-level = "s"
[workspace]
TOML
cat >"$dir/src/lib.rs" <<'RS'
#![no_std]
use core::cell::Cell;
use core::sync::atomic::Ordering::Relaxed;
use critical_section::Mutex;
static PA64: portable_atomic::AtomicU64 = portable_atomic::AtomicU64::new(0);
static PA32: portable_atomic::AtomicU32 = portable_atomic::AtomicU32::new(0);
static CS64: Mutex<Cell<u64>> = Mutex::new(Cell::new(0));
#[no_mangle]
pub extern "C" fn pa_fetch_add_u64() -> u64 {
    PA64.fetch_add(1, Relaxed)
}
#[no_mangle]
pub extern "C" fn pa_fetch_add_u32() -> u32 {
    PA32.fetch_add(1, Relaxed)
}
#[no_mangle]
pub extern "C" fn cs_add_u64() -> u64 {
    critical_section::with(|cs| {
        let c = CS64.borrow(cs);
        let v = c.get();
        c.set(v + 1);
        v
    })
}
RS
for t in thumbv6m-none-eabi thumbv7m-none-eabi; do
    rustup target list --installed | grep -qx "$t" || rustup target add "$t"
    (cd "$dir" && cargo rustc --release --quiet --target "$t" -- --emit asm)
    asm=$(ls -t "$dir/target/$t/release/deps/"atomics_vs_cs-*.s | head -n 1)
    echo "== $t"
    python3 - "$asm" <<'PY'
import re, sys
cur, count, calls = None, {}, {}
for line in open(sys.argv[1]):
    m = re.match(r"^([A-Za-z_]\w*):\s*$", line)
    if m:
        cur = m.group(1); count[cur] = 0; calls[cur] = []
        continue
    s = line.strip()
    if cur and s and not s.startswith((".", "@", "//")) and not s.endswith(":"):
        count[cur] += 1
        if s.startswith("bl"):
            calls[cur].append(s.split()[1])
for name in ("pa_fetch_add_u32", "pa_fetch_add_u64", "cs_add_u64"):
    print(f"{name:18} {count[name]:3} instructions, calls: {', '.join(calls[name]) or 'none'}")
PY
done
