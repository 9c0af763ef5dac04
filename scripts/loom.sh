#!/usr/bin/env bash
# Model-checks the lock-free rings with loom: the unit models in
# src/queues/ring.rs (`loom_*`) and tests/loom_ring.rs.
#
#   scripts/loom.sh
#
# Builds with `--cfg loom` in its own target directory (target/loom), so the
# normal build is not invalidated. The search is exhaustive by default (the
# models are small: 2-slot rings, 2 producers, 2-3 operations each);
# LOOM_MAX_PREEMPTIONS=N bounds it for quicker runs of bigger models.
set -euo pipefail
cd "$(dirname "$0")/.."

export RUSTFLAGS="${RUSTFLAGS:-} --cfg loom"
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-0}"
if [ "$LOOM_MAX_PREEMPTIONS" = 0 ]; then unset LOOM_MAX_PREEMPTIONS; fi
args=(--release --target-dir target/loom)

start=$(date +%s)
cargo test "${args[@]}" --lib loom -- --test-threads=2
cargo test "${args[@]}" --test loom_ring -- --test-threads=2
echo "loom: all models passed in $(( $(date +%s) - start )) s (LOOM_MAX_PREEMPTIONS=${LOOM_MAX_PREEMPTIONS:-unbounded})"
