#!/usr/bin/env bash
# Model-checks the sleep protocol, wait() and shutdown with loom, then proves the models bite:
# built with --cfg flock_canary (the park path's re-check removed) the same suite must fail,
# and built with --cfg flock_canary_push (no fence after a local push) the models of a task
# that blocks after pushing locally (onto its task deque, and onto its join deque) must fail.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/loom"
: "${LOOM_MAX_PREEMPTIONS:=2}"
export LOOM_MAX_PREEMPTIONS

echo "== loom: models of the real pool (LOOM_MAX_PREEMPTIONS=$LOOM_MAX_PREEMPTIONS)"
start=$(date +%s)
log=$(mktemp)
if ! RUSTFLAGS="--cfg flock_loom" cargo test --release -p flock-pool --lib loom -- --test-threads=1 --nocapture >"$log" 2>&1; then
    grep -E "loom model|^test |panicked|deadlock|^error" "$log" >&2 || tail -30 "$log" >&2
    echo "loom: FAILED" >&2
    exit 1
fi
grep -oE "loom model .*|^test result.*" "$log"
echo "loom: passed in $(( $(date +%s) - start ))s"

echo "== loom canary: without the re-check before parking, the models must fail"
if RUSTFLAGS="--cfg flock_loom --cfg flock_canary" LOOM_MAX_PREEMPTIONS=1 \
    cargo test --release -p flock-pool --lib loom_one_worker_one_submitter -- --test-threads=1 --nocapture >"$log" 2>&1; then
    echo "loom canary: FAILED - the broken protocol passed the models" >&2
    tail -20 "$log" >&2
    exit 1
fi
if ! grep -m1 -E "deadlock|panicked" "$log" | sed 's/^/loom canary: the models caught it: /'; then
    echo "loom canary: the build failed for another reason" >&2
    tail -20 "$log" >&2
    exit 1
fi

echo "== loom canary: without the local push's fence, a task blocking on what it pushed must hang"
for model in loom_push_locally_then_block loom_join_half_stolen_while_the_first_blocks; do
    if RUSTFLAGS="--cfg flock_loom --cfg flock_canary_push" \
        cargo test --release -p flock-pool --lib "$model" -- --test-threads=1 --nocapture >"$log" 2>&1; then
        echo "loom canary (push): FAILED - the unfenced local push passed $model" >&2
        tail -20 "$log" >&2
        exit 1
    fi
    if ! grep -m1 -E "deadlock|panicked" "$log" | sed "s/^/loom canary (push): $model caught it: /"; then
        echo "loom canary (push): the build failed for another reason" >&2
        tail -20 "$log" >&2
        exit 1
    fi
done
