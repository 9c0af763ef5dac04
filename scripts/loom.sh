#!/usr/bin/env bash
# Model-checks the lock-free rings with loom: the unit models in
# src/ring/loom_tests.rs and src/ring/loom_api_tests.rs (one `--lib` run).
#
#   scripts/loom.sh
#
# Builds with `--cfg loom` in its own target directory (target/loom), so the
# normal build is not invalidated. LOOM_MAX_PREEMPTIONS bounds the search:
# 3 by default (seconds for these models; the bound tokio's CI uses);
# LOOM_MAX_PREEMPTIONS=0 explores every interleaving (about 3 minutes of
# model checking on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."

export RUSTFLAGS="${RUSTFLAGS:-} --cfg loom"
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}"
if [ "$LOOM_MAX_PREEMPTIONS" = 0 ]; then unset LOOM_MAX_PREEMPTIONS; fi
args=(--release --target-dir target/loom)

start=$(date +%s)
cargo test "${args[@]}" --lib loom -- --test-threads=2
echo "loom: all models passed in $(( $(date +%s) - start )) s (LOOM_MAX_PREEMPTIONS=${LOOM_MAX_PREEMPTIONS:-unbounded})"
