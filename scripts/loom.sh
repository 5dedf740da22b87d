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
# Built once; then every model runs as its own process, as many at once as there are CPUs
# (each model is one thread), the longest first so that the last to finish are short ones
# (scripts/jobs.sh). The order comes from the seconds each model printed in a CI run on the
# 2-vCPU AMD guest; a model not named here runs after these, in the binary's order.
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
longest=(
    loom_retiring_worker_ends_the_last_task_of_a_shutdown          # 479 s
    loom_join_half_stolen_while_the_first_blocks                   # 440 s
    loom_shrink_racing_a_submit                                    # 371 s
    loom_chain_wake_runs_two_tasks_in_parallel                     # 160 s
    loom_scope_units_kept_by_workers_are_given_back                # 148 s
    loom_batch_wakes_enough_workers                                # 143 s
    loom_two_workers_one_submitter                                 # 109 s
    loom_a_stop_hook_task_stolen_by_a_retiring_worker              # 104 s
    loom_batch_iterator_blocks_on_a_task_it_yielded                # 86 s
    loom_push_locally_then_block                                   # 83 s
)
mapfile -t all < <("$bin" loom --list 2>/dev/null | sed -nE 's/^loom_tests::(loom_[A-Za-z0-9_]+): test$/\1/p')
if [ "${#all[@]}" -eq 0 ]; then
    echo "loom: the test binary lists no model" >&2
    exit 1
fi
source scripts/jobs.sh
jobs_init
queued=" "
for m in "${longest[@]}" "${all[@]}"; do
    case "$queued" in *" $m "*) continue ;; esac
    # A name in `longest` that the binary no longer has would fail its job (0 tests run is
    # caught below by the count), so only listed models are queued.
    case " ${all[*]} " in *" $m "*) ;; *) continue ;; esac
    queued+="$m "
    job "$m" "\"$bin\" --exact loom_tests::$m --test-threads=1 --nocapture"
done
jobs_run | sed 's/^/loom /' >"$log"
failed=$(jobs_failed)
if [ -n "$failed" ]; then
    cat "$log"
    for m in $failed; do
        echo "-- $m:" >&2
        grep -E "loom model|^test |panicked|deadlock|^error" "$JOBS_DIR/$m.log" >&2 || tail -30 "$JOBS_DIR/$m.log" >&2
    done
    echo "loom: FAILED" >&2
    exit 1
fi
# Every model ran, each exactly once: one "loom model NAME:" line per listed model (a model
# filtered out by a typo would run zero tests and still exit 0). With --nocapture the line may
# follow the test's own "test NAME ... " on one line, so no anchor.
ran=$(cat "$JOBS_DIR"/*.log | grep -oE "loom model [A-Za-z0-9_]+:" | sort -u | wc -l)
if [ "$ran" != "${#all[@]}" ]; then
    echo "loom: FAILED - $ran models ran of ${#all[@]}" >&2
    exit 1
fi
cat "$JOBS_DIR"/*.log | grep -oE "loom model .*"
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
