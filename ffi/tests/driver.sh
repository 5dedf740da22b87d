#!/usr/bin/env bash
# Builds and runs the C and C++ test programs of libflock against one static library.
# Usage: ffi/tests/driver.sh MODE LIBFLOCK_A OUTDIR
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
# The library must be built with the `test-hooks` feature. Exits non-zero on any failure.
set -euo pipefail
mode=$1 lib=$2 out=$3
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

"$cc" -std=c11 $warn $flags -DFLOCK_TEST_HOOKS -I"$include" "$here/c/test_flock.c" "$lib" $syslibs \
    -o "$out/test_flock_c"
"$cc" -std=c11 $warn $flags -DFLOCK_TEST_HOOKS -I"$include" "$here/c/adversarial.c" "$lib" $syslibs \
    -o "$out/adversarial_c"
"$cxx" -std=c++17 $warn $flags -I"$include" "$here/cpp/test_flock.cpp" "$lib" $syslibs \
    -o "$out/test_flock_cpp"
# The global pool (flock_global, flock::global) and the algorithms (flock_algorithms.hpp).
"$cc" -std=c11 $warn $flags -I"$include" "$here/c/global.c" "$lib" $syslibs -o "$out/global_c"
"$cxx" -std=c++17 $warn $flags -I"$include" "$here/cpp/algorithms.cpp" "$lib" $syslibs \
    -o "$out/algorithms_cpp"

"$cc" -std=c11 $warn $flags -DFLOCK_TEST_HOOKS -I"$include" "$here/c/faults.c" "$lib" $syslibs \
    -o "$out/faults_c"
"$cxx" -std=c++17 $warn $flags -I"$include" "$here/cpp/test_loops.cpp" "$lib" $syslibs \
    -o "$out/test_loops_cpp"
"$cc" -std=c11 $warn $flags -I"$include" "$here/c/thread_ids.c" "$lib" $syslibs -o "$out/thread_ids_c"
# The OS's refusals (seccomp filters on one thread of the test).
"$cc" -std=c11 $warn $flags -I"$include" "$here/c/os_refusals.c" "$lib" $syslibs -o "$out/os_refusals_c"

status=0
for t in test_flock_c adversarial_c test_flock_cpp global_c algorithms_cpp faults_c test_loops_cpp thread_ids_c \
    os_refusals_c; do
    echo "-- $t ($mode)"
    # The forced-panic test makes the library print its (caught) panics; keep them short.
    if ! RUST_BACKTRACE=0 "${run[@]}" "$out/$t" 2> "$out/$t.stderr"; then
        status=1
        echo "   $t FAILED ($mode); its stderr:"
        sed 's/^/   | /' "$out/$t.stderr"
    elif [ "$mode" = valgrind ]; then
        grep -E "ERROR SUMMARY|definitely lost|indirectly lost|possibly lost" "$out/$t.stderr" | sed 's/^/   | /' || true
    else
        # Show anything other than the expected, caught panic messages.
        grep -vE "panicked at ffi/src/panic.rs|flock: panic forced by|^note: run with|^$" "$out/$t.stderr" | sed 's/^/   | /' || true
    fi
done
exit $status
