#!/usr/bin/env bash
# The C and C++ side of flock, end to end:
#   1. tools: a C and C++ compiler, pkg-config and valgrind (installed with apt-get when
#      missing and running as root)
#   2. include/flock.h is exactly what the pinned cbindgen generates (scripts/gen-header.sh)
#   3. the headers compile as C99 and as C++11/C++17 with -Wall -Wextra -Wpedantic -Werror
#   4. the ffi crate's Rust unit tests
#   5. the C and C++ suites (ffi/tests) against a `test-hooks` build: plain, under valgrind
#      memcheck, under AddressSanitizer (C side; the Rust side too with a nightly toolchain)
#   6. install into a temporary prefix (scripts/install-c.sh) and build the examples in
#      examples/c and examples/cpp against the installed copy through pkg-config, and run them
# Honours CARGO_TARGET_DIR (default ./target). FLOCK_SKIP_NIGHTLY_ASAN=1 skips the
# instrumented Rust build. Exits non-zero on the first failing step.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
target=${CARGO_TARGET_DIR:-$root/target}
case $target in /*) ;; *) target=$root/$target ;; esac
work=$target/c-tests
rm -rf "$work"
mkdir -p "$work"

step() { echo; echo "== $*"; }

step "tools"
missing=()
command -v cc >/dev/null || missing+=(gcc)
command -v c++ >/dev/null || missing+=(g++)
command -v pkg-config >/dev/null || missing+=(pkg-config)
command -v valgrind >/dev/null || missing+=(valgrind)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "installing ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
    else
        echo "missing ${missing[*]}: install them (this script installs them itself when run as root with apt-get)" >&2
        exit 1
    fi
fi
echo "cc: $(cc --version | head -n1)"
echo "c++: $(c++ --version | head -n1)"
echo "pkg-config $(pkg-config --version), $(valgrind --version)"

step "include/flock.h is up to date"
scripts/gen-header.sh --check

step "the headers compile cleanly as C99, C11, C++11 and C++17"
strict="-Wall -Wextra -Wpedantic -Werror"
printf '#include "flock.h"\nint main(void) { flock_config_t c; flock_config_init(&c); return 0; }\n' > "$work/header.c"
printf '#include "flock.hpp"\nint main() { flock::config c; c.workers(2).fifo(); return c.flock_config_t::workers == 2 ? 0 : 1; }\n' > "$work/header.cpp"
cc -std=c99 $strict -Iinclude -c "$work/header.c" -o "$work/h99.o"
cc -std=c99 $strict -DFLOCK_TEST_HOOKS -Iinclude -c "$work/header.c" -o "$work/h99h.o"
cc -std=c11 $strict -Iinclude -c "$work/header.c" -o "$work/h11.o"
c++ -std=c++11 $strict -Iinclude -x c++ -c "$work/header.c" -o "$work/hxx11.o"
c++ -std=c++17 $strict -Iinclude -c "$work/header.cpp" -o "$work/hxx17.o"
echo "ok"

step "Rust unit tests of the ffi crate"
cargo test -p flock-ffi

step "build libflock with the test hooks"
hooks_target=$target/ffi-test-hooks
CARGO_TARGET_DIR=$hooks_target cargo build --release -p flock-ffi --features test-hooks
hooks_lib=$hooks_target/release/libflock.a

step "C and C++ suites"
ffi/tests/driver.sh plain "$hooks_lib" "$work/plain"

step "C and C++ suites under valgrind memcheck"
ffi/tests/driver.sh valgrind "$hooks_lib" "$work/valgrind"
echo "valgrind: no errors, no definite or indirect leaks"

step "C and C++ suites under AddressSanitizer (C/C++ side instrumented)"
ffi/tests/driver.sh asan "$hooks_lib" "$work/asan"

step "C and C++ suites under AddressSanitizer, the Rust side instrumented too (nightly)"
if [ "${FLOCK_SKIP_NIGHTLY_ASAN:-0}" = 1 ]; then
    echo "NOTICE: skipped (FLOCK_SKIP_NIGHTLY_ASAN=1)"
elif ! cargo +nightly --version >/dev/null 2>&1; then
    echo "NOTICE: skipped: no nightly toolchain (rustup toolchain install nightly --component rust-src)"
elif ! [ -d "$(rustc +nightly --print sysroot)/lib/rustlib/src/rust/library" ]; then
    echo "NOTICE: skipped: the nightly toolchain lacks rust-src (rustup component add rust-src --toolchain nightly)"
else
    asan_target=$target/ffi-asan
    host=$(rustc +nightly -vV | sed -n 's/^host: //p')
    if RUSTFLAGS="-Zsanitizer=address" CARGO_TARGET_DIR=$asan_target timeout "${FLOCK_NIGHTLY_ASAN_TIMEOUT:-300}" \
        cargo +nightly build -Zbuild-std --target "$host" --release -p flock-ffi --features test-hooks \
        > "$work/nightly-asan-build.log" 2>&1; then
        ffi/tests/driver.sh asan "$asan_target/$host/release/libflock.a" "$work/asan-rust"
    else
        echo "NOTICE: skipped: the instrumented nightly build failed or took too long; its log's end:"
        tail -n 15 "$work/nightly-asan-build.log" | sed 's/^/   | /'
    fi
fi

step "install into a temporary prefix, build the examples against it with pkg-config"
prefix=$work/prefix
scripts/install-c.sh "$prefix"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
libdir=$(pkg-config --variable=libdir flock)
echo "pkg-config: flock $(pkg-config --modversion flock): $(pkg-config --cflags --libs flock)"
# Compiled from a copy, so only the installed headers can be found.
cp examples/c/many_submitters.c examples/cpp/wrapper.cpp "$work/"
cc -std=c11 $strict "$work/many_submitters.c" $(pkg-config --cflags --libs flock) -pthread \
    -Wl,-rpath,"$libdir" -o "$work/many_submitters"
c++ -std=c++17 $strict "$work/wrapper.cpp" $(pkg-config --cflags --libs flock) -pthread \
    -Wl,-rpath,"$libdir" -o "$work/wrapper"
# ldd's output is read whole before it is searched: with pipefail, `ldd | grep -q` fails
# whenever grep stops at its match while ldd is still writing (ldd dies of SIGPIPE).
linked=$(ldd "$work/many_submitters")
case $linked in
*"libflock.so.0.1 => $libdir/"*) echo "many_submitters links $libdir/libflock.so.0.1" ;;
*)
    echo "many_submitters does not link the installed libflock:" >&2
    echo "$linked" >&2
    exit 1
    ;;
esac
echo "-- examples/c/many_submitters.c"
"$work/many_submitters"
echo "-- examples/cpp/wrapper.cpp"
"$work/wrapper"

step "C/C++: all passed"
