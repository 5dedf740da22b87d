#!/usr/bin/env bash
# Runs the unsafe parts under Miri: the unit tests (jobs, latches, histograms, the sleep
# state machine) and the small integration tests, with strict provenance and several seeds.
# Zero undefined behaviour and zero leaks, or it fails. Skipped with a notice without nightly.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "miri: NOTICE: no nightly toolchain here; Miri skipped"
    exit 0
fi
if ! cargo +nightly miri --version >/dev/null 2>&1; then
    rustup component add --toolchain nightly miri rust-src >/dev/null 2>&1 || {
        echo "miri: NOTICE: could not install the miri component; Miri skipped"
        exit 0
    }
fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/miri"
# No backtraces for the tests' own, expected panics: Miri interprets the unwinder's walk and
# symbolisation for each one. With RUST_BACKTRACE=1, as this project's shells export it, the
# `panics` jobs took 87-204 s in CI; without, 15-31 s (the same 5 tests each). Miri's own
# reports of UB keep their backtraces: they come from the interpreter, not from this variable.
export RUST_BACKTRACE=0
# Two seeds of Miri's scheduler for the small tests by default (MIRI_SEEDS=... for more): a
# third repeated the same tests over one more schedule, 230 s of jobs in a CI run whose Miri
# step took 19 min on a slow day of the 2-vCPU guest.
seeds="${MIRI_SEEDS:-1 2}"
start=$(date +%s)
cargo +nightly miri setup >/dev/null 2>&1
# Three kinds of pass:
# - strict: flock's own code with strict provenance and leak checks, the unit tests and the
#   small integration tests under each seed of $seeds (-Zmiri-disable-isolation: the tests'
#   watchdogs and sleeps read the real clock);
# - resize, pause, batches, waiting workers and task groups (whose tasks carry their closure
#   and ticket in ManuallyDrop fields): strict, one seed (they take minutes under Miri);
# - the real crossbeam deques: crossbeam-epoch needs permissive provenance (tagged pointers),
#   Tree Borrows (its intrusive list's container-of `element_of` breaks Stacked Borrows), and
#   leak checks off (its process-global collector keeps thread registrations and deferred bags
#   for the life of the process). crossbeam's own Miri runs make the same allowances. The
#   data-race detector is off in this pass: crossbeam-deque races by design (a thief's
#   speculative `read_volatile` of a slot that the owner's push then `write_volatile`s, the
#   thief's CAS failing; the unsafe-code-guidelines list it as deliberate UB), and Miri
#   reports it under some schedules (CI at 6bf1c28, scope_join; here seed 51 of 60, by a
#   push from `Scope::spawn`). crossbeam's CI hides it with -Zmiri-preemption-rate=0, which
#   would leave this pass few interleavings. Races in flock's own code stay checked by the
#   strict passes above, over model queues with no such race. Built with
#   --cfg flock_miri_crossbeam, in a target directory of its own.
# Miri interprets on one thread, so each test binary of each pass is one job, and the jobs run
# side by side, as many at once as there are CPUs (scripts/jobs.sh), queued longest first by
# the seconds they took in a CI run on the 2-vCPU AMD guest (noted beside each).
strict="-Zmiri-strict-provenance -Zmiri-disable-isolation"
crossbeam_dir="$CARGO_TARGET_DIR/crossbeam"
crossbeam_env="CARGO_TARGET_DIR='$crossbeam_dir' RUSTFLAGS='--cfg flock_miri_crossbeam'"
crossbeam_flags="-Zmiri-seed=1 -Zmiri-disable-isolation -Zmiri-tree-borrows -Zmiri-ignore-leaks -Zmiri-disable-data-race-detector"
small=(--lib --test spawn --test scope_join --test panics --test stress)
extra=(--test resize --test pause --test batch --test waiting --test group)
echo "== miri: building the strict passes and the real-deque pass"
log=$(mktemp)
if ! cargo +nightly miri test -p flock-pool "${small[@]}" "${extra[@]}" --no-run >"$log" 2>&1 ||
    ! CARGO_TARGET_DIR="$crossbeam_dir" RUSTFLAGS="--cfg flock_miri_crossbeam" cargo +nightly miri test -p flock-pool "${small[@]}" --no-run >>"$log" 2>&1; then
    grep -E "^error" -A 10 "$log" | head -40 >&2 || tail -40 "$log" >&2
    echo "miri: the build FAILED" >&2
    exit 1
fi
source scripts/jobs.sh
jobs_init
jobs_clean_on_exit "$log"
run() { echo "cargo +nightly miri test -p flock-pool $1"; }
# Longest first; the seconds are each job's in the clean-clone CI run of 2026-11-29 at cfe86fc
# on the 2-vCPU guest, 1,254 s of jobs in 634 s with the build (1,619 s of jobs at fe87d10,
# before a pool's shards were built from const arrays and Miri kept two outside shards).
job extra-batch "MIRIFLAGS='$strict -Zmiri-seed=1' $(run '--test batch')"             # 241 s
job extra-resize "MIRIFLAGS='$strict -Zmiri-seed=1' $(run '--test resize')"           # 230 s
job extra-waiting "MIRIFLAGS='$strict -Zmiri-seed=1' $(run '--test waiting')"         # 116 s
job extra-group "MIRIFLAGS='$strict -Zmiri-seed=1' $(run '--test group')"             # 105 s
job extra-pause "MIRIFLAGS='$strict -Zmiri-seed=1' $(run '--test pause')"             # 59 s
job crossbeam-lib "$crossbeam_env MIRIFLAGS='$crossbeam_flags' $(run '--lib')"        # 55 s
for seed in $seeds; do
    job "seed$seed-lib" "MIRIFLAGS='$strict -Zmiri-seed=$seed' $(run '--lib')"         # 49-51 s
done
job crossbeam-stress "$crossbeam_env MIRIFLAGS='$crossbeam_flags' $(run '--test stress')" # 40 s
job crossbeam-scope_join "$crossbeam_env MIRIFLAGS='$crossbeam_flags' $(run '--test scope_join')" # 39 s
for seed in $seeds; do
    job "seed$seed-scope_join" "MIRIFLAGS='$strict -Zmiri-seed=$seed' $(run '--test scope_join')" # 36 s
    job "seed$seed-stress" "MIRIFLAGS='$strict -Zmiri-seed=$seed' $(run '--test stress')" # 33-35 s
done
job crossbeam-panics "$crossbeam_env MIRIFLAGS='$crossbeam_flags' $(run '--test panics')" # 19 s
job crossbeam-spawn "$crossbeam_env MIRIFLAGS='$crossbeam_flags' $(run '--test spawn')" # 19 s
for seed in $seeds; do
    job "seed$seed-spawn" "MIRIFLAGS='$strict -Zmiri-seed=$seed' $(run '--test spawn')" # 15-19 s
    job "seed$seed-panics" "MIRIFLAGS='$strict -Zmiri-seed=$seed' $(run '--test panics')" # 18-19 s
done
echo "== miri: ${#JOB_NAMES[@]} jobs (strict seeds [$seeds], resize/pause/batches/waiting/groups, real deques)"
jobs_run | sed 's/^/miri /'
failed=$(jobs_failed)
for name in $failed; do
    echo "-- $name:" >&2
    grep -E "^error|Undefined Behavior|leaked|FAILED|panicked" "$JOBS_DIR/$name.log" | head -40 >&2 ||
        tail -40 "$JOBS_DIR/$name.log" >&2
done
if [ -n "$failed" ]; then
    echo "miri: FAILED ($(echo $failed))" >&2
    exit 1
fi
# Each job ran its tests: one "test result: ok" line each (a filter that matched nothing
# would still print one, with 0 passed, so the count of passed tests is printed too).
passed=$(cat "$JOBS_DIR"/*.log | sed -nE 's/^test result: ok\. ([0-9]+) passed.*/\1/p' | awk '{ n += $1 } END { print n + 0 }')
results=$(cat "$JOBS_DIR"/*.log | grep -c "^test result: ok" || true)
if [ "$results" != "${#JOB_NAMES[@]}" ]; then
    echo "miri: FAILED - $results test results from ${#JOB_NAMES[@]} jobs" >&2
    exit 1
fi
echo "miri: 0 UB and 0 leaks reported over seeds [$seeds] + resize/pause/batches/waiting/groups + 1 real-deque pass ($passed tests in ${#JOB_NAMES[@]} jobs) in $(( $(date +%s) - start ))s"
