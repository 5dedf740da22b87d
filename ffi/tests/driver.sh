#!/usr/bin/env bash
# Builds and runs the C and C++ test programs of libflock against one static library.
# Usage: ffi/tests/driver.sh MODE LIBFLOCK_A OUTDIR [BUILT]
#   MODE plain     -O1 -g, run directly
#   MODE valgrind  run under valgrind memcheck; any error or definite/indirect leak fails;
#                  iteration counts divided by FLOCK_TEST_SCALE (default 10 here); forked
#                  children are not reported on (global.c's child leaks its parent's pool
#                  by design and tells its parent its verdict through a pipe)
#   MODE asan      C/C++ side built with -fsanitize=address,undefined (LeakSanitizer
#                  included; any UBSan report aborts the test); the library is instrumented
#                  too when LIBFLOCK_A came from a -Zsanitizer build
# Every program is built with -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Werror, so the
# headers stay warning-free under those flags.
# BUILT (plain and valgrind modes): the OUTDIR of a plain or valgrind run against the same
# LIBFLOCK_A, whose programs are run as they are instead of being built again (the two modes
# build them with the same flags; scripts/c-tests.sh runs valgrind on the plain build).
# The library must be built with the `test-hooks` feature. Exits non-zero on any failure.
set -euo pipefail
mode=$1 lib=$2 out=$3 built_dir=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
include=$(cd "$here/../../include" && pwd)
mkdir -p "$out"

cc=${CC:-cc}
cxx=${CXX:-c++}
warn="-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Werror"
flags="-O1 -g -fno-omit-frame-pointer"
# What the Rust standard library in a static libflock needs: flock.pc's Libs.private (see
# scripts/install-c.sh; the compiler driver adds the unwinder and the C library itself).
syslibs="-lutil -lrt -lpthread -lm -ldl"
run=()
case $mode in
    plain) ;;
    valgrind)
        export FLOCK_TEST_SCALE=${FLOCK_TEST_SCALE:-10}
        run=(valgrind --error-exitcode=1 --leak-check=full
             --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect
             --fair-sched=yes --child-silent-after-fork=yes)
        ;;
    asan)
        flags="$flags -fsanitize=address,undefined -fno-sanitize-recover=undefined"
        export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
        export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
        ;;
    *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
if [ -n "$built_dir" ] && [ "$mode" = asan ]; then
    echo "driver.sh: the asan mode builds its own programs (its flags differ)" >&2
    exit 2
fi

# The programs build side by side (scripts/jobs.sh), as many at once as there are CPUs (JOBS
# overrides), the C++ ones first: each links the whole static library, and the C++ ones under
# AddressSanitizer take 27-50 s each to compile (one after another, 135 s of the asan mode's
# 140 s on the 2-vCPU guest; two at a time the mode takes 68 s). Each compiler's output goes
# to its own log, shown with its failure, or after the build when it printed anything (a
# linker's warning).
builds=(
    "cxx c++17 - cpp/test_loops.cpp test_loops_cpp"
    "cxx c++17 - cpp/test_flock.cpp test_flock_cpp"
    # The algorithms (flock_algorithms.hpp).
    "cxx c++17 - cpp/algorithms.cpp algorithms_cpp"
    "cc c11 -DFLOCK_TEST_HOOKS c/test_flock.c test_flock_c"
    "cc c11 -DFLOCK_TEST_HOOKS c/adversarial.c adversarial_c"
    # The global pool (flock_global, flock::global).
    "cc c11 - c/global.c global_c"
    "cc c11 -DFLOCK_TEST_HOOKS c/faults.c faults_c"
    "cc c11 - c/thread_ids.c thread_ids_c"
    # The OS's refusals (seccomp filters on one thread of the test).
    "cc c11 - c/os_refusals.c os_refusals_c"
)
# build_one COMPILER STD DEFINE SOURCE OUTPUT ("-" for no define): its status to OUTPUT.rc,
# and its exit status. A job of scripts/jobs.sh, run by `bash -c`: it reads only the
# variables exported to the jobs below.
# shellcheck disable=SC2317 # called by jobs.sh's `bash -c`, so unseen here
build_one() {
    local compiler=$cc define=$3 rc=0
    [ "$1" = cxx ] && compiler=$cxx
    [ "$define" = - ] && define=
    rm -f "$out/$5" "$out/$5.rc"
    # shellcheck disable=SC2086 # the flag lists are word lists
    "$compiler" -std="$2" $warn $flags $define -I"$include" "$here/$4" "$lib" $syslibs \
        -o "$out/$5" > "$out/$5.build.log" 2>&1 || rc=$?
    echo "$rc" > "$out/$5.rc"
    return "$rc"
}
bin=$out
if [ -n "$built_dir" ]; then
    bin=$built_dir
    for b in "${builds[@]}"; do
        # shellcheck disable=SC2086
        set -- $b
        [ -x "$bin/$5" ] && [ "$(cat "$bin/$5.rc" 2>/dev/null)" = 0 ] ||
            { echo "driver.sh: $bin has no program $5 that built" >&2; exit 1; }
    done
    echo "   (the programs built in $bin)"
else
    # shellcheck source=SCRIPTDIR/../../scripts/jobs.sh
    source "$here/../../scripts/jobs.sh"
    jobs_init
    trap 'rm -rf "$JOBS_DIR"' EXIT
    names=()
    for b in "${builds[@]}"; do
        # shellcheck disable=SC2086
        set -- $b
        job "$5" "build_one $1 $2 $3 $4 $5"
        names+=("$5")
    done
    # Exported in a subshell only, so that the test programs below run in the environment
    # they always had. The jobs' own lines ("job NAME: ok in Ts") are dropped: each build's
    # status and output are reported from OUTDIR just below.
    (
        export cc cxx warn flags include lib out here syslibs
        export -f build_one
        jobs_run > /dev/null
    )
    built=1
    for name in "${names[@]}"; do
        if [ "$(cat "$out/$name.rc" 2>/dev/null || echo lost)" != 0 ]; then
            echo "   $name: the build FAILED ($mode):"
            sed 's/^/   | /' "$out/$name.build.log"
            built=0
        else
            sed 's/^/   | /' "$out/$name.build.log"
        fi
    done
    [ "$built" = 1 ] || exit 1
fi

# Each program runs under `timeout` (FLOCK_TEST_TIMEOUT seconds, default 600; the longest
# takes under a minute under valgrind): a program that hangs fails its suite with its output
# so far, rather than holding the run until CI's own limit. `timeout` signals its whole process
# group, so a child the program forked goes too.
limit=${FLOCK_TEST_TIMEOUT:-600}
status=0
for t in test_flock_c adversarial_c test_flock_cpp global_c algorithms_cpp faults_c test_loops_cpp thread_ids_c \
    os_refusals_c; do
    echo "-- $t ($mode)"
    # The forced-panic test makes the library print its (caught) panics; keep them short.
    rc=0
    RUST_BACKTRACE=0 timeout -k 10 "$limit" "${run[@]}" "$bin/$t" 2> "$out/$t.stderr" || rc=$?
    if [ "$rc" != 0 ]; then
        status=1
        if [ "$rc" = 124 ]; then
            echo "   $t TIMED OUT after ${limit}s ($mode); its stderr:"
        else
            echo "   $t FAILED ($mode, exit status $rc); its stderr:"
        fi
        sed 's/^/   | /' "$out/$t.stderr"
    elif [ "$mode" = valgrind ]; then
        grep -E "ERROR SUMMARY|definitely lost|indirectly lost|possibly lost" "$out/$t.stderr" | sed 's/^/   | /' || true
    else
        # Show anything other than the expected, caught panic messages.
        grep -vE "panicked at ffi/src/panic.rs|flock: panic forced by|^note: run with|^$" "$out/$t.stderr" | sed 's/^/   | /' || true
    fi
done
exit $status
