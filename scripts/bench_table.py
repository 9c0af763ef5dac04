#!/usr/bin/env python3
"""Prints the `log_event` table of the last `cargo bench --bench overhead`
run from criterion's files: median ns/event and the ratios BENCHMARKS.md
reports (to floor, to relaxed_load, and circular against each peer).

    scripts/bench_table.py [target/criterion]
"""
import json
import os
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.environ.get("CARGO_TARGET_DIR", "target"), "criterion")
group = os.path.join(root, "log_event")
ORDER = ["relaxed_load", "floor", "disabled", "dummy", "fixed", "circular",
         "global_circular", "peer_mutex_vecdeque", "peer_crossbeam_arrayqueue",
         "peer_rtrb", "peer_fastrace", "peer_tracing_ring"]

ns = {}
for case in ORDER:
    base = os.path.join(group, case, "new")
    try:
        with open(os.path.join(base, "estimates.json")) as f:
            median = json.load(f)["median"]["point_estimate"]
        with open(os.path.join(base, "benchmark.json")) as f:
            events = json.load(f)["throughput"]["Elements"]
    except FileNotFoundError:
        continue
    ns[case] = median / events

if not ns:
    sys.exit(f"no results under {group}: run cargo bench --bench overhead first")

print("| id | median ns/event | / floor | / relaxed_load | circular / this |")
print("|---|---:|---:|---:|---:|")
for case in ORDER:
    if case not in ns:
        continue
    v = ns[case]
    floor = f"{v / ns['floor']:.2f}" if "floor" in ns else "-"
    relaxed = f"{v / ns['relaxed_load']:.2f}" if "relaxed_load" in ns else "-"
    vs = f"{ns['circular'] / v:.2f}" if "circular" in ns else "-"
    print(f"| `{case}` | {v:.2f} | {floor} | {relaxed} | {vs} |")

checks = []
if {"circular", "floor"} <= ns.keys():
    r = ns["circular"] / ns["floor"]
    checks.append(("circular <= 1.5 x floor", r <= 1.5, f"{r:.2f}x"))
if {"disabled", "relaxed_load"} <= ns.keys():
    r = ns["disabled"] / ns["relaxed_load"]
    checks.append(("disabled <= 1.2 x relaxed_load", r <= 1.2, f"{r:.2f}x"))
for case in ORDER:
    if case.startswith("peer_") and case in ns and "circular" in ns:
        r = ns["circular"] / ns[case]
        checks.append((f"circular < {case}", r < 1.0, f"{r:.2f}x"))
print()
for name, ok, value in checks:
    print(f"- {'met' if ok else 'MISSED'}: {name} ({value})")
