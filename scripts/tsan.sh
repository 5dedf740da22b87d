#!/usr/bin/env bash
# The stress, shutdown-race and wait tests, the submitter rings' unit tests and 45 s of the
# torture test under ThreadSanitizer, std rebuilt with it
# (-Zbuild-std), with only crossbeam-deque's documented suppressions (scripts/tsan.supp).
# Zero reports, or it fails. Skipped with a notice where nightly (and rust-src) is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "tsan: NOTICE: no nightly toolchain here; ThreadSanitizer skipped"
    exit 0
fi
# The list is read whole first: with pipefail, `rustup ... | grep -q` can fail by SIGPIPE.
installed=$(rustup component list --toolchain nightly --installed 2>/dev/null || true)
if ! grep -q rust-src <<<"$installed"; then
    rustup component add --toolchain nightly rust-src >/dev/null 2>&1 || {
        echo "tsan: NOTICE: could not install rust-src for nightly; ThreadSanitizer skipped"
        exit 0
    }
fi
target=$(rustc -vV | sed -n 's/^host: //p')
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/tsan"
export RUSTFLAGS="-Zsanitizer=thread"
export RUSTDOCFLAGS="-Zsanitizer=thread"
# TSan's shadow memory inflates RSS: the overload test prints its figure but does not bound it.
export FLOCK_NO_RSS_BOUND=1
# No backtraces for the tests' own, expected panics: symbolising one walks std's debug info
# under instrumentation. With RUST_BACKTRACE=1, as this project's shells export it, `group.rs`
# took 29-32 s here instead of 9, and one test with a single panicking task took 17 s
# instead of 0.08, past its 30 s watchdog in a loaded CI run. TSan's own reports keep their
# stacks: they come from the sanitizer's runtime, not from this variable.
export RUST_BACKTRACE=0
export TSAN_OPTIONS="suppressions=$PWD/scripts/tsan.supp halt_on_error=1 second_deadlock_stack=1"
start=$(date +%s)
log=$(mktemp)
# Removed at the end if every step passed; after a failure it is kept, and named.
trap 'rc=$?; if [ "$rc" = 0 ]; then rm -f "$log"; else echo "log kept in $log" >&2; fi' EXIT
echo "== tsan: stress, shutdown races, wait loops, resize, pause, batches, waiting workers, FIFO, task groups, async waits ($target)"
if ! cargo +nightly test -Zbuild-std --target "$target" -p flock-pool \
    --test stress --test shutdown --test submit_wait --test scope_join \
    --test resize --test pause --test batch --test waiting --test fifo \
    --test group --test async_wait >"$log" 2>&1; then
    grep -E "WARNING: ThreadSanitizer|SUMMARY|^error|panicked|FAILED" "$log" | head -40 >&2 || tail -40 "$log" >&2
    echo "tsan: FAILED" >&2
    exit 1
fi
grep -E "^test result" "$log"
# The lane reserve's tests (a thread beside the workers, woken by submitters and workers):
# only those of lanes.rs, whose split tests measure shares and want an uninstrumented run.
echo "== tsan: the lane reserve and tasks run off the workers (lanes.rs)"
if ! cargo +nightly test -Zbuild-std --target "$target" -p flock-pool --test lanes -- \
    reserve caller >>"$log" 2>&1; then
    grep -E "WARNING: ThreadSanitizer|SUMMARY|^error|panicked|FAILED" "$log" | head -40 >&2 || tail -40 "$log" >&2
    echo "tsan: FAILED" >&2
    exit 1
fi
grep -E "^test result" "$log" | tail -1
# The submitter rings by themselves: two consumers racing one producer across ring growth,
# and rings handed from thread to thread (the unit tests of src/submitq.rs).
echo "== tsan: submitter rings (submitq unit tests)"
if ! cargo +nightly test -Zbuild-std --target "$target" -p flock-pool --lib submitq >>"$log" 2>&1; then
    grep -E "WARNING: ThreadSanitizer|SUMMARY|^error|panicked|FAILED" "$log" | head -40 >&2 || tail -40 "$log" >&2
    echo "tsan: FAILED" >&2
    exit 1
fi
grep -E "^test result" "$log" | tail -1
# The torture test (tests/torture.rs): every operation of the public API from several threads
# on random pools, where features meet (pause with resize, purge with FIFO triggers, cancels,
# broadcasts, panicking wakers, refused OS calls). 45 s here are about 170 rounds; its seed is
# printed, and FLOCK_TORTURE_SEED replays a failing round.
echo "== tsan: the torture test, 45 s (FLOCK_TORTURE_SECS=45)"
if ! FLOCK_TORTURE_SECS=45 cargo +nightly test -Zbuild-std --target "$target" -p flock-pool \
    --test torture >>"$log" 2>&1; then
    grep -E "WARNING: ThreadSanitizer|SUMMARY|^error|panicked|FAILED|torture:" "$log" | head -40 >&2 || tail -40 "$log" >&2
    echo "tsan: FAILED" >&2
    exit 1
fi
grep -E "^torture: [0-9]+ rounds" "$log" | tail -1
grep -E "^test result" "$log" | tail -1
reports=$(grep -c "WARNING: ThreadSanitizer" "$log" || true)
echo "tsan: $reports reports in $(( $(date +%s) - start ))s"
[ "$reports" -eq 0 ]
