#!/usr/bin/env bash
# Model-checks the sleep protocol, wait() and shutdown with loom, then proves the models bite:
# built with --cfg flock_canary (the park path's re-check removed) the same suite must fail,
# and built with --cfg flock_canary_push (no fence after a local push) the models of a task
# that blocks after pushing locally (onto its task deque, and onto its join deque) must fail,
# and built with --cfg flock_canary_credit (a worker never gives back the units of a scope's
# count it keeps) the scope model must fail, and built with --cfg flock_canary_ring (the
# re-check does not follow a submitter ring to the ring it grew into) the ring model must fail,
# and built with --cfg flock_canary_room (releases wake blocked submitters one below the
# low-water mark) the backpressure model must fail, and built with --cfg flock_canary_undo (a
# failed reservation's undo that crosses the mark wakes nobody) the model of that undo must fail.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/loom"
: "${LOOM_MAX_PREEMPTIONS:=2}"
export LOOM_MAX_PREEMPTIONS

echo "== loom: models of the real pool (LOOM_MAX_PREEMPTIONS=$LOOM_MAX_PREEMPTIONS)"
start=$(date +%s)
log=$(mktemp)
# Built once; the models then run as two processes side by side (each model is one thread,
# this machine has two cores): the three largest in one, every other model in the other.
if ! RUSTFLAGS="--cfg flock_loom" cargo test --release -p flock-pool --lib --no-run >"$log" 2>&1; then
    tail -30 "$log" >&2
    echo "loom: the build FAILED" >&2
    exit 1
fi
bin=$(grep -oE 'Executable unittests src/lib.rs \([^)]+\)' "$log" | sed -E 's/.*\((.*)\)/\1/')
if [ ! -x "$bin" ]; then
    tail -30 "$log" >&2
    echo "loom: could not find the test binary" >&2
    exit 1
fi
heavy=(loom_join_half_stolen_while_the_first_blocks loom_shrink_racing_a_submit loom_push_locally_then_block)
skips=()
for m in "${heavy[@]}"; do skips+=(--skip "$m"); done
log_heavy=$(mktemp)
"$bin" "${heavy[@]}" --test-threads=1 --nocapture >"$log_heavy" 2>&1 &
heavy_pid=$!
rest_ok=1
"$bin" loom "${skips[@]}" --test-threads=1 --nocapture >"$log" 2>&1 || rest_ok=0
heavy_ok=1
wait "$heavy_pid" || heavy_ok=0
for part in "$log_heavy" "$log"; do
    if ! grep -qE "^test result: ok" "$part" || [ "$rest_ok$heavy_ok" != 11 ]; then
        grep -E "loom model|^test |panicked|deadlock|^error" "$part" >&2 || tail -30 "$part" >&2
    fi
done
if [ "$rest_ok$heavy_ok" != 11 ]; then
    echo "loom: FAILED" >&2
    exit 1
fi
# Every model ran: the two parts together cover the suite (a model in neither would be lost).
# (Each model prints "loom model NAME: ..." once it passed; with --nocapture the line may
# follow the test's own "test NAME ... " on one line, so no anchor.)
ran=$(cat "$log_heavy" "$log" | grep -oE "loom model [A-Za-z0-9_]+:" | wc -l)
all=$("$bin" loom --list 2>/dev/null | grep -E ": test$" | wc -l)
if [ "$ran" != "$all" ]; then
    echo "loom: FAILED - $ran models ran of $all" >&2
    exit 1
fi
cat "$log_heavy" "$log" | grep -oE "loom model .*|^test result.*"
echo "loom: $ran models passed in $(( $(date +%s) - start ))s"

# canary TAG CFG MODEL [PREEMPTIONS]: built with --cfg CFG, MODEL must fail (hang or panic).
canary() {
    local tag=$1 cfg=$2 model=$3 bound=${4:-$LOOM_MAX_PREEMPTIONS}
    if RUSTFLAGS="--cfg flock_loom --cfg $cfg" LOOM_MAX_PREEMPTIONS=$bound \
        cargo test --release -p flock-pool --lib "$model" -- --test-threads=1 --nocapture >"$log" 2>&1; then
        echo "loom canary ($tag): FAILED - the broken build passed $model" >&2
        tail -20 "$log" >&2
        exit 1
    fi
    if ! grep -m1 -E "deadlock|panicked" "$log" | sed "s/^/loom canary ($tag): $model caught it: /"; then
        echo "loom canary ($tag): the build failed for another reason" >&2
        tail -20 "$log" >&2
        exit 1
    fi
}

echo "== loom canary: without the re-check before parking, the models must fail"
canary re-check flock_canary loom_one_worker_one_submitter 1

echo "== loom canary: without the local push's fence, a task blocking on what it pushed must hang"
for model in loom_push_locally_then_block loom_join_half_stolen_while_the_first_blocks; do
    canary push flock_canary_push "$model"
done

echo "== loom canary: a re-check that misses a submitter's grown ring must hang its model"
canary ring flock_canary_ring loom_ring_grows_under_a_racing_worker

echo "== loom canary: a worker that never gives back a scope's units it keeps must hang the scope"
canary credit flock_canary_credit loom_scope_units_kept_by_workers_are_given_back 1

echo "== loom canary: a release that wakes blocked submitters one below the low-water mark must hang them"
canary room flock_canary_room loom_block_wakes_at_the_low_water_mark

echo "== loom canary: an undo that crosses the low-water mark without waking must hang the blocked submitter"
canary undo flock_canary_undo loom_undo_that_crosses_the_mark_wakes_a_blocked_submitter
