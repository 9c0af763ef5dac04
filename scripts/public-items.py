#!/usr/bin/env python3
"""Counts the public items of the qtrace library as rustdoc lists them
(target/doc/qtrace/all.html, built with every feature), and fails when there
are more than the budget (issue #21: a small surface, one path per item).

Usage: scripts/public-items.py [--list] [--max N]

Builds the docs first (`cargo doc --no-deps -p qtrace --all-features`).
Hidden items (`#[doc(hidden)]`: macro internals, the datagram codec the
fuzz targets use) are not listed by rustdoc and do not count. An item that
rustdoc shows at two paths (a re-export of the no_std core's type in two
modules, say) counts twice: that is a second path to remove.
"""

import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
MAX = 200
args = sys.argv[1:]
if "--max" in args:
    MAX = int(args[args.index("--max") + 1])

subprocess.run(
    ["cargo", "doc", "--no-deps", "-p", "qtrace", "--all-features", "-q"],
    cwd=ROOT,
    check=True,
)
target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
html = open(os.path.join(target, "doc", "qtrace", "all.html"), encoding="utf-8").read()
items = re.findall(r'<li><a href="([^"]+)">', html)
if "--list" in args:
    for item in items:
        print(item)
kinds = {}
for item in items:
    kind = os.path.basename(item).split(".")[0]
    kinds[kind] = kinds.get(kind, 0) + 1
summary = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
print(f"public-items: {len(items)} items in qtrace's rustdoc ({summary}); budget {MAX}")
if len(items) > MAX:
    print(
        f"public-items: over the budget by {len(items) - MAX}: make internals pub(crate) "
        "(with their tests inside the crate) or remove a second path",
        file=sys.stderr,
    )
    sys.exit(1)
