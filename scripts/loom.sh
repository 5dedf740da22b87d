#!/usr/bin/env bash
# Model-checks the sleep protocol, wait() and shutdown with loom, then proves the models bite:
# one loom build runs every model and the canaries, each the same binary with one step of
# the protocol removed through FLOCK_LOOM_CANARY (src/sync.rs, `Canary`), whose models must
# then fail: without the park path's re-check (recheck), the fence after a local push (push:
# the models of a task that blocks after pushing onto its task deque, in one lane and in a
# second, and onto its join deque),
# the re-check's walk to a submitter ring's successor (ring), a worker giving back the units
# of a scope's count it keeps (credit), releases waking blocked submitters at the low-water
# mark rather than one below it (room), the wake of a failed reservation's undo that
# crosses the mark (undo), a broadcast calling only running slots (retiring), a parking
# worker skipping the membarrier only where one covers its own era (era), the membarrier of
# the searcher that leaves last while local pushes may skip F1 (unfenced), the wake a
# searcher that found a task owes the work it saw left (chain), and the announcement of the
# second of two jobs a worker claimed from a ring at once (claim), a group's zero waking only
# the waits begun before it (epoch), a worker retiring only with an empty mailbox (mail),
# the announcement of the jobs a retiring worker puts back above its claimed one
# (reclaim), a retiring worker telling `wait()`ers it ran out of work (idle), a retiring
# worker that ends a shutdown's last task waking the others (exit), a task deque's slot
# publishing its job with a Release store (slot), a task taken as the pool paused given
# back to the front of its lane's shared queue (front), and a retiring worker handing its
# stop hook's tasks over only while no shutdown has begun (hook).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/loom"
: "${LOOM_MAX_PREEMPTIONS:=2}"
export LOOM_MAX_PREEMPTIONS

# One codegen unit and fat LTO: loom's own code (the scheduler, the object store, the
# coherence checks), not flock's, is most of each execution, and inlined across crates it ran
# a model 18% faster (147 s against 178 s) for 35 s more of build.
export CARGO_PROFILE_RELEASE_LTO=fat CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1

echo "== loom: models of the real pool (LOOM_MAX_PREEMPTIONS=$LOOM_MAX_PREEMPTIONS)"
start=$(date +%s)
log=$(mktemp)
# Built once; then every model runs as its own process, as many at once as there are CPUs
# (each model is one thread), the longest first so that the last to finish are short ones
# (scripts/jobs.sh). The order comes from the seconds each model printed in a run of this
# script on the 2-vCPU AMD guest (2026-11-29, 718 s in all, two models at a time, the stacks
# reused); a model not named here runs after these, in the binary's order.
#
# loom runs every thread of every execution on a coroutine of the `generator` crate, which
# mapped a fresh stack for it (mmap, mprotect), faulted its pages in and unmapped it when the
# execution ended: 9.4 s of a 40 s model's time was the kernel's. scripts/loom-generator.patch
# keeps freed stacks for reuse: that model took 28.5 s, and this script 718 s against 1,040 s
# (2026-11-29, the 2-vCPU guest; 10 s of system time against 544).
# The build takes the patched copy through cargo's [patch], given on its command line so that
# no other build sees it; cargo rewrites Cargo.lock for it, so the lock is put back after the
# build. If the copy cannot be made (no such crate file, a version the patch does not fit),
# the models run on the crate as published, slower, and this says so.
patch_config=()
gen_version=$(awk '$0 == "name = \"generator\"" { getline; gsub(/[^0-9.]/, ""); print; exit }' Cargo.lock)
gen_patch="$PWD/scripts/loom-generator.patch"
gen_dir="$CARGO_TARGET_DIR/generator-$gen_version-$(sha256sum "$gen_patch" | cut -c1-12)"
case "$gen_dir" in /*) ;; *) gen_dir="$PWD/$gen_dir" ;; esac
if [ -n "$gen_version" ] && [ ! -d "$gen_dir" ]; then
    cargo fetch -q >/dev/null 2>&1 || true
    crate=$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/"generator-$gen_version.crate" 2>/dev/null | head -1)
    rm -rf "$gen_dir.tmp" && mkdir -p "$gen_dir.tmp"
    # git apply outside any repository (the target directory may lie in this checkout, where
    # it would take the patch's paths as the checkout's and skip them), then a check that the
    # change is there.
    if [ -n "$crate" ] && tar xzf "$crate" -C "$gen_dir.tmp" &&
        (cd "$gen_dir.tmp/generator-$gen_version" &&
            GIT_CEILING_DIRECTORIES="$(dirname "$PWD")" git apply "$gen_patch" &&
            grep -q FREE_STACKS src/stack/mod.rs); then
        mv "$gen_dir.tmp/generator-$gen_version" "$gen_dir"
    fi
    rm -rf "$gen_dir.tmp"
fi
if [ -d "$gen_dir" ]; then
    patch_config=(--config "patch.crates-io.generator.path=\"$gen_dir\"")
    echo "== loom: generator $gen_version with scripts/loom-generator.patch (stacks reused)"
else
    echo "== loom: NOTE: generator ${gen_version:-?} could not be patched (scripts/loom-generator.patch); the models run on the published crate, about 40% slower" >&2
fi
lock_copy=$(mktemp)
cp Cargo.lock "$lock_copy"
trap 'cp "$lock_copy" Cargo.lock' EXIT
built=1
RUSTFLAGS="--cfg flock_loom" cargo "${patch_config[@]}" test --release -p flock-pool --lib --no-run >"$log" 2>&1 || built=0
cp "$lock_copy" Cargo.lock
rm -f "$lock_copy"
trap - EXIT
if [ "$built" = 0 ]; then
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
    loom_join_half_stolen_while_the_first_blocks                   # 323 s
    loom_a_retiring_worker_runs_its_claimed_job_from_under_a_pushed_one # 150 s
    loom_chain_wake_runs_two_tasks_in_parallel                     # 112 s
    loom_batch_wakes_enough_workers                                # 97 s
    loom_scope_units_kept_by_workers_are_given_back                # 96 s
    loom_a_stop_hook_task_stolen_by_a_retiring_worker              # 81 s
    loom_a_retiring_workers_stop_hook_task_races_a_shutdown        # 75 s
    loom_two_workers_one_submitter                                 # 68 s
    loom_push_locally_then_block                                   # 63 s
    loom_batch_iterator_blocks_on_a_task_it_yielded                # 59 s
    loom_a_claimed_second_job_is_taken_by_another_worker           # 31 s
)
mapfile -t all < <("$bin" loom --list 2>/dev/null | sed -nE 's/^loom_tests::(loom_[A-Za-z0-9_]+): test$/\1/p')
if [ "${#all[@]}" -eq 0 ]; then
    echo "loom: the test binary lists no model" >&2
    exit 1
fi
source scripts/jobs.sh
jobs_init
jobs_clean_on_exit "$log"
queued=" "
# queue_models NAME...: each listed model not queued yet, as its own job.
queue_models() {
    local m
    for m in "$@"; do
        case "$queued" in *" $m "*) continue ;; esac
        # A name in `longest` that the binary no longer has would fail its job (0 tests run
        # is caught below by the count), so only listed models are queued.
        case " ${all[*]} " in *" $m "*) ;; *) continue ;; esac
        queued+="$m "
        job "$m" "\"$bin\" --exact loom_tests::$m --test-threads=1 --nocapture"
    done
}
# The canaries: the same binary, with one step of the protocol removed by FLOCK_LOOM_CANARY
# (src/sync.rs, `Canary`); each named model must then fail, by a deadlock or a panic. They
# take 0 to 30 s each, so they go after the long models and before the short ones.
# canary TAG MODEL [PREEMPTIONS]
canaries=()
canary() {
    local name="canary-$1-$2"
    canaries+=("$name")
    job "$name" "FLOCK_LOOM_CANARY=$1 LOOM_MAX_PREEMPTIONS=${3:-$LOOM_MAX_PREEMPTIONS} \"$bin\" --exact loom_tests::$2 --test-threads=1 --nocapture"
}
queue_models "${longest[@]}"
# Without the local push's fence, a task blocking on what it pushed hangs.
canary push loom_join_half_stolen_while_the_first_blocks
canary push loom_push_locally_then_block
canary push loom_push_locally_then_block_in_a_second_lane 1
# A membarrier from an era that ended does not order a push made while nobody slept.
canary era loom_a_membarrier_covers_only_its_era
# A push that skipped F1 on `UNFENCED` relies on the last searcher's membarrier.
canary unfenced loom_an_unfenced_push_seen_by_the_last_searcher_that_finds_work
canary unfenced loom_an_unfenced_push_seen_by_the_last_searcher_that_parks
# An undo that crosses the low-water mark without waking hangs the blocked submitter.
canary undo loom_undo_that_crosses_the_mark_wakes_a_blocked_submitter
# Without the re-check before parking, a worker sleeps through a submit.
canary recheck loom_one_worker_one_submitter 1
# A re-check that misses a submitter's grown ring hangs its model.
canary ring loom_ring_grows_under_a_racing_worker
# A worker that never gives back a scope's units it keeps hangs the scope.
canary credit loom_scope_units_kept_by_workers_are_given_back 1
# A release that wakes blocked submitters one below the low-water mark hangs them.
canary room loom_block_wakes_at_the_low_water_mark
# A searcher that finds a task and wakes nobody for the one left leaves it to wait.
canary chain loom_chain_wake_runs_two_tasks_in_parallel
# The second of two claimed jobs pushed unannounced: its first blocks on it, the other
# worker sleeps.
canary claim loom_a_claimed_second_job_is_taken_by_another_worker 1
# A broadcast that picks a retiring slot waits for a call its thread never runs.
canary retiring loom_broadcast_racing_a_retire_runs_each_call_as_its_worker
# A worker that retires with a broadcast call in its mailbox: nobody runs the call (a call
# run there, with the slot marked retiring, would hold a grow).
canary mail loom_broadcast_racing_a_retire_runs_each_call_as_its_worker 1
# A retiring worker that puts jobs back above its claimed one unannounced: the other worker
# sleeps while the claimed job waits for one of them.
canary reclaim loom_a_retiring_worker_runs_its_claimed_job_from_under_a_pushed_one 1
# A group's zero that wakes every listed wait returns one that began after it, early.
canary epoch loom_a_group_wait_after_a_zero_waits_for_the_next_task
# A retiring worker that leaves without telling `wait()`ers: `wait` sleeps on.
canary idle loom_shrink_racing_a_submit
# A retiring worker that ends a graceful shutdown's last task and wakes nobody: the worker
# that stays, parked after it saw that task outstanding, and the shutdown wait forever.
canary exit loom_retiring_worker_ends_the_last_task_of_a_shutdown
# A retiring worker that hands its stop hook's task over after a shutdown began: the other
# worker may have left, and nobody runs it.
canary hook loom_a_retiring_workers_stop_hook_task_races_a_shutdown
# A slot whose job is published Relaxed: loom's cell reports the thief's read as a race.
canary slot loom_a_deque_slot_between_its_owner_and_a_thief
# A task the lane reserve took as the pool paused, given back behind the later one: a thread
# that runs both starts the later one first.
canary front loom_the_reserve_gives_back_a_task_taken_as_the_pool_pauses_in_front
queue_models "${all[@]}"
echo "== loom: $(wc -w <<<"$queued") models and ${#canaries[@]} canaries that must fail, $(nproc 2>/dev/null || echo 2) at a time"
jobs_run | sed 's/^/loom /' >"$log"
failed=" $(jobs_failed | tr '\n' ' ') "
bad=0
for m in $queued; do
    case "$failed" in *" $m "*) ;; *) continue ;; esac
    echo "-- $m:" >&2
    grep -E "loom model|^test |panicked|deadlock|^error" "$JOBS_DIR/$m.log" >&2 || tail -30 "$JOBS_DIR/$m.log" >&2
    bad=1
done
for c in "${canaries[@]}"; do
    case "$failed" in
    *" $c "*)
        # It failed: by the model (a deadlock or a panic), not by a bad canary name.
        if grep -q "no such canary" "$JOBS_DIR/$c.log" || ! grep -qE "deadlock|panicked" "$JOBS_DIR/$c.log"; then
            echo "loom $c: failed for another reason:" >&2
            tail -20 "$JOBS_DIR/$c.log" >&2
            bad=1
        fi
        ;;
    *)
        echo "loom $c: FAILED - the model passed with the step removed" >&2
        tail -5 "$JOBS_DIR/$c.log" >&2
        bad=1
        ;;
    esac
done
if [ "$bad" != 0 ]; then
    cat "$log"
    echo "loom: FAILED" >&2
    exit 1
fi
# Every model ran, each exactly once: one "loom model NAME:" line per listed model (a model
# filtered out by a typo would run zero tests and still exit 0). With --nocapture the line may
# follow the test's own "test NAME ... " on one line, so no anchor.
ran=$(cat "$JOBS_DIR"/loom_*.log | grep -oE "loom model [A-Za-z0-9_]+:" | sort -u | wc -l)
if [ "$ran" != "${#all[@]}" ]; then
    echo "loom: FAILED - $ran models ran of ${#all[@]}" >&2
    exit 1
fi
cat "$JOBS_DIR"/loom_*.log | grep -oE "loom model .*"
for c in "${canaries[@]}"; do
    echo "loom $c: caught in $(cat "$JOBS_DIR/$c.secs")s: $(grep -m1 -A1 "panicked at" "$JOBS_DIR/$c.log" | tail -1)"
done
echo "loom: $ran models passed and ${#canaries[@]} canaries were caught in $(( $(date +%s) - start ))s"
