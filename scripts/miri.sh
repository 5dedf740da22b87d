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
seeds="${MIRI_SEEDS:-1 2 3}"
start=$(date +%s)
cargo +nightly miri setup >/dev/null 2>&1
# The real crossbeam deques: crossbeam-epoch needs permissive provenance (tagged pointers),
# Tree Borrows (its intrusive list's container-of `element_of` breaks Stacked Borrows), and
# leak checks off (its process-global collector keeps thread registrations and deferred bags
# for the life of the process). crossbeam's own Miri runs make the same allowances. flock's
# own code is checked strictly, with leak checks, in the passes below. Miri interprets on one
# thread, so this pass (its own target directory) runs beside the others on a second core;
# its result is collected at the end.
echo "== miri (seed 1, real crossbeam deques: permissive provenance, Tree Borrows, epoch leaks ignored): in the background"
crossbeam_log=$(mktemp)
RUSTFLAGS="--cfg flock_miri_crossbeam" MIRIFLAGS="-Zmiri-seed=1 -Zmiri-disable-isolation -Zmiri-tree-borrows -Zmiri-ignore-leaks" \
    CARGO_TARGET_DIR="$CARGO_TARGET_DIR/crossbeam" \
    cargo +nightly miri test -p flock-pool --lib --test spawn --test scope_join --test panics --test stress \
    >"$crossbeam_log" 2>&1 &
crossbeam_pid=$!
# Stop it if a pass below fails first.
trap 'kill "$crossbeam_pid" 2>/dev/null || true' EXIT
for seed in $seeds; do
    echo "== miri (seed $seed): unit tests, spawn, scope/join, panics, shutdown, stress"
    # -Zmiri-disable-isolation: the tests' watchdogs and sleeps read the real clock.
    log=$(mktemp)
    if ! MIRIFLAGS="-Zmiri-strict-provenance -Zmiri-seed=$seed -Zmiri-disable-isolation" \
        cargo +nightly miri test -p flock-pool --lib --test spawn --test scope_join --test panics --test stress \
        >"$log" 2>&1; then
        grep -E "^error|Undefined Behavior|leaked|FAILED|panicked" "$log" | head -40 >&2 || tail -40 "$log" >&2
        echo "miri: FAILED (seed $seed)" >&2
        exit 1
    fi
    grep -E "^test result" "$log"
done
# Resize, pause, batches, waiting workers and task groups (whose tasks carry their closure
# and ticket in ManuallyDrop fields): one seed (they take minutes under Miri).
echo "== miri (seed 1): resize, pause, batches, waiting workers, task groups"
log=$(mktemp)
if ! MIRIFLAGS="-Zmiri-strict-provenance -Zmiri-seed=1 -Zmiri-disable-isolation" \
    cargo +nightly miri test -p flock-pool --test resize --test pause --test batch --test waiting \
    --test group >"$log" 2>&1; then
    grep -E "^error|Undefined Behavior|leaked|FAILED|panicked" "$log" | head -40 >&2 || tail -40 "$log" >&2
    echo "miri: FAILED (resize, pause, batches, waiting, groups)" >&2
    exit 1
fi
grep -E "^test result" "$log"
echo "== miri (real crossbeam deques): waiting for the background pass"
if ! wait "$crossbeam_pid"; then
    grep -E "^error|Undefined Behavior|leaked|FAILED|panicked" "$crossbeam_log" | head -40 >&2 || tail -40 "$crossbeam_log" >&2
    echo "miri: FAILED (real deques)" >&2
    exit 1
fi
trap - EXIT
grep -E "^test result" "$crossbeam_log"
echo "miri: 0 UB and 0 leaks reported over seeds [$seeds] + resize/pause/batches/waiting/groups + 1 real-deque pass in $(( $(date +%s) - start ))s"
