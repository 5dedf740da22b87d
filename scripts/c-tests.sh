#!/usr/bin/env bash
# The C and C++ side of flock, end to end:
#   1. tools: a C and C++ compiler, pkg-config, valgrind and cmake (installed with apt-get when
#      missing and running as root)
#   2. include/flock.h is exactly what the pinned cbindgen generates (scripts/gen-header.sh)
#   3. the headers compile as C99 and as C++11/C++17 with -Wall -Wextra -Wpedantic -Werror,
#      and with -Wshadow -Wconversion added
#   4. the ffi crate's Rust unit tests
#   5. the C and C++ suites (ffi/tests) against a `test-hooks` build, optimised and with
#      flock's debug assertions and overflow checks on: plain, under valgrind memcheck, under
#      AddressSanitizer with the Rust side instrumented too (a nightly toolchain), or, where
#      that build cannot be made, with the C and C++ side instrumented alone
#   6. install with DESTDIR into a staging folder and check it; then run the install and build
#      lines of ffi/README.md as written (blocks marked "c-tests.sh runs"), with HOME a
#      temporary folder: pkg-config (shared, flock-static.pc, -static), a CMake project
#      through find_package(flock), valgrind with the shipped suppressions; then build the
#      examples in examples/c and examples/cpp against that prefix and run them; and the
#      valgrind line again on a program that waits on a task group from main
#   7. flock built inside CMake projects (the root CMakeLists.txt): ffi/README.md's
#      add_subdirectory and FetchContent projects as written, a Debug build, a no-op rebuild
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

# Each step ends with the seconds it took, so that a CI log shows where this script's time
# goes.
step_start=
step() {
    local now
    now=$(date +%s)
    [ -z "$step_start" ] || echo "   ($((now - step_start)) s)"
    step_start=$now
    echo
    echo "== $*"
}

step "tools"
missing=()
command -v cc >/dev/null || missing+=(gcc)
command -v c++ >/dev/null || missing+=(g++)
command -v pkg-config >/dev/null || missing+=(pkg-config)
command -v valgrind >/dev/null || missing+=(valgrind)
command -v cmake >/dev/null || missing+=(cmake)
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
echo "pkg-config $(pkg-config --version), $(valgrind --version), $(cmake --version | head -n1)"

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

# ---- issue 40 (branch cfaults): the headers under -Wshadow -Wconversion --------------------
# Every suite is built with these flags too (ffi/tests/driver.sh); this checks the bare
# headers in every language mode, included twice (the header's diagnostic push/pop must
# stay balanced).
step "the headers compile cleanly with -Wshadow -Wconversion"
printf '#include "flock.h"\n#include "flock.h"\nint main(void) { flock_stats_t s; (void)s; return 0; }\n' > "$work/header2.c"
printf '#include "flock.hpp"\n#include "flock.h"\nint main() { return flock::this_thread::get_index() ? 1 : 0; }\n' > "$work/header2.cpp"
shadow="$strict -Wshadow -Wconversion"
cc -std=c99 $shadow -Iinclude -c "$work/header2.c" -o "$work/h99s.o"
cc -std=c11 $shadow -DFLOCK_TEST_HOOKS -Iinclude -c "$work/header2.c" -o "$work/h11s.o"
c++ -std=c++11 $shadow -Iinclude -x c++ -c "$work/header2.c" -o "$work/hxx11s.o"
c++ -std=c++17 $shadow -Iinclude -c "$work/header2.cpp" -o "$work/hxx17s.o"
echo "ok"
# ---- end of issue 40 (branch cfaults) ---------------------------------------------------------

step "Rust unit tests of the ffi crate"
cargo test -p flock-ffi

# The suites' library is optimised (the suites' loops are sized for it; valgrind runs it) with
# the debug assertions and overflow checks of a debug build on, so that an assertion of
# flock's that only a C caller's path reaches fails here. The library users install (step 6)
# is the plain release build.
export CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS=true CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true
step "build libflock with the test hooks (optimised, debug assertions on)"
hooks_target=$target/ffi-test-hooks
CARGO_TARGET_DIR=$hooks_target cargo build --release -p flock-ffi --features test-hooks
hooks_lib=$hooks_target/release/libflock.a
grep -qaF "flock: outstanding count underflow" "$hooks_lib" ||
    { echo "the test-hooks libflock.a lacks flock's debug assertions" >&2; exit 1; }

step "C and C++ suites"
ffi/tests/driver.sh plain "$hooks_lib" "$work/plain"

step "C and C++ suites under valgrind memcheck"
ffi/tests/driver.sh valgrind "$hooks_lib" "$work/valgrind" "$work/plain"
echo "valgrind: no errors, no definite or indirect leaks"

# One AddressSanitizer pass. With a nightly toolchain the library is instrumented too, and the
# C and C++ side is built as in the pass without it (driver.sh's asan mode either way), so that
# pass would repeat a subset of this one: it runs only where the instrumented build cannot be
# made.
step "C and C++ suites under AddressSanitizer and UBSan, the Rust side instrumented too (nightly)"
asan_rust=
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
        asan_rust=$asan_target/$host/release/libflock.a
    else
        echo "NOTICE: skipped: the instrumented nightly build failed or took too long; its log's end:"
        tail -n 15 "$work/nightly-asan-build.log" | sed 's/^/   | /'
    fi
fi
if [ -n "$asan_rust" ]; then
    ffi/tests/driver.sh asan "$asan_rust" "$work/asan-rust"
else
    step "C and C++ suites under AddressSanitizer and UBSan (C/C++ side instrumented)"
    ffi/tests/driver.sh asan "$hooks_lib" "$work/asan"
fi
unset CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS

step "install with DESTDIR: staged under DESTDIR, naming PREFIX"
# With the target directory outside the checkout, installing writes nothing into it (so a
# read-only checkout works); checked at the end of the step after this one.
checkout_before=$(git status --porcelain --ignored 2>/dev/null || true)
stage=$work/stage
DESTDIR=$stage scripts/install-c.sh /opt/flock > "$work/install-destdir.log" 2>&1 ||
    { cat "$work/install-destdir.log" >&2; exit 1; }
for f in lib/libflock.so.0.1 lib/libflock.so lib/libflock.a include/flock.h include/flock.hpp include/flock_algorithms.hpp \
    lib/pkgconfig/flock.pc lib/pkgconfig/flock-static.pc lib/cmake/flock/flockConfig.cmake \
    lib/cmake/flock/flockConfigVersion.cmake share/flock/flock.supp; do
    [ -e "$stage/opt/flock/$f" ] || { echo "DESTDIR install lacks $f" >&2; exit 1; }
done
grep -qx "prefix=/opt/flock" "$stage/opt/flock/lib/pkgconfig/flock.pc" ||
    { echo "flock.pc does not name PREFIX /opt/flock" >&2; exit 1; }
echo "ok: $(cd "$stage" && find . -type f -o -type l | wc -l) files under $stage/opt/flock"

# The fenced block that follows "<!-- c-tests.sh runs: NAME -->" in ffi/README.md.
doc_block() {
    local text
    text=$(awk -v want="<!-- c-tests.sh runs: $1 -->" '
        $0 == want { found = 1; next }
        found && /^```/ { if (inside) exit; inside = 1; next }
        inside { print }' ffi/README.md)
    [ -n "$text" ] || { echo "ffi/README.md has no block '$1'" >&2; exit 1; }
    printf '%s\n' "$text"
}
# Runs a documented block in folder $2 with bash -euo pipefail, echoing each line.
run_doc() {
    echo "-- ffi/README.md, block '$1', in $2"
    doc_block "$1" > "$work/block-$1.sh"
    (cd "$2" && bash -euxo pipefail "$work/block-$1.sh")
}

step "the documented lines, as written (HOME=$work/home)"
# cargo and rustup find their homes through HOME unless told: keep the real ones.
export CARGO_HOME=${CARGO_HOME:-$HOME/.cargo} RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup}
export CARGO_TARGET_DIR=$target
export HOME=$work/home
mkdir -p "$HOME"
prefix=$HOME/.local
run_doc install "$root" > "$work/install.log" 2>&1 || { cat "$work/install.log" >&2; exit 1; }
tail -n 1 "$work/install.log"
echo "libflock.a: $(stat -c %s "$prefix/lib/libflock.a") bytes installed, $(stat -c %s "$target/release/libflock.a") built"
project=$work/project
mkdir -p "$project"
# app.c is the C example of the top-level README; app.cpp the wrapper example.
awk '/^<!-- c-tests.sh builds this: app.c -->$/ { found = 1; next }
     found && /^```/ { if (inside) exit; inside = 1; next }
     inside { print }' README.md > "$project/app.c"
[ -s "$project/app.c" ] || { echo "README.md has no block marked app.c" >&2; exit 1; }
cp examples/cpp/wrapper.cpp "$project/app.cpp"
# The README's own build lines are some of ffi/README.md's (comments aside).
awk '/^<!-- c-tests.sh checks: lines of ffi\/README.md -->$/ { found = 1; next }
     found && /^```/ { if (inside) exit; inside = 1; next }
     inside { sub(/ +#.*$/, ""); print }' README.md > "$work/readme-lines"
[ -s "$work/readme-lines" ] || { echo "README.md has no block of ffi/README.md's lines" >&2; exit 1; }
while IFS= read -r line; do
    grep -qxF -- "$line" ffi/README.md || { echo "README.md's line is not in ffi/README.md: $line" >&2; exit 1; }
done < "$work/readme-lines"
echo "README.md's build lines are ffi/README.md's"
run_doc pkg-config "$project"
# ldd's output is read whole before it is searched: with pipefail, `ldd | grep -q` fails
# whenever grep stops at its match while ldd is still writing (ldd dies of SIGPIPE).
for exe in app app++; do
    linked=$(ldd "$project/$exe")
    case $linked in
    *"libflock.so.0.1 => $prefix/lib/"*) echo "$exe loads $prefix/lib/libflock.so.0.1" ;;
    *)
        echo "$exe does not load the installed libflock:" >&2
        echo "$linked" >&2
        exit 1
        ;;
    esac
done
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
run_doc static "$project" 2> "$work/static.stderr" || { cat "$work/static.stderr" >&2; exit 1; }
for exe in app-static app-full-static; do
    linked=$(ldd "$project/$exe" 2>&1 || true)
    case $linked in
    *libflock*) echo "$exe loads a shared libflock:" >&2; echo "$linked" >&2; exit 1 ;;
    esac
done
echo "app-static and app-full-static carry libflock (no libflock.so loaded)"
mkdir -p "$project/cmake"
doc_block CMakeLists.txt > "$project/cmake/CMakeLists.txt"
cp "$project/app.c" "$project/cmake/"
# And the static target, which the documented project does not use.
cat >> "$project/cmake/CMakeLists.txt" <<'CMAKE'
add_executable(app_static app.c)
target_link_libraries(app_static PRIVATE flock::flock_static)
CMAKE
run_doc cmake "$project/cmake" > "$work/cmake.log" 2>&1 || { cat "$work/cmake.log" >&2; exit 1; }
grep -E "^[0-9]+ ran" "$work/cmake.log"
"$project/cmake/build/app_static"
linked=$(ldd "$project/cmake/build/app")
case $linked in
*"libflock.so.0.1 => $prefix/lib/"*) echo "the CMake app loads $prefix/lib/libflock.so.0.1" ;;
*) echo "the CMake app does not load the installed libflock:" >&2; echo "$linked" >&2; exit 1 ;;
esac
run_doc valgrind "$project" > "$work/valgrind-doc.log" 2>&1 ||
    { cat "$work/valgrind-doc.log" >&2; exit 1; }
grep -E "ERROR SUMMARY|suppressed:" "$work/valgrind-doc.log" | sed 's/^/   | /'
# The suppressions earn their place: without them the same run fails (when valgrind finds
# the record uncollected, which depends on timing; say so rather than fail when it does not).
if valgrind --leak-check=full --error-exitcode=1 "$project/app" > "$work/valgrind-bare.log" 2>&1; then
    echo "NOTICE: without the suppressions this run happened to pass too"
else
    echo "without the suppressions: $(grep -E 'possibly lost:' "$work/valgrind-bare.log" | sed 's/^==[0-9]*== *//')"
fi

# ---- issue 40 (branch cfaults): the valgrind line on a program that waits on a group ---------
# ffi/README.md's valgrind block, as written, on ffi/tests/c/group_main.c built as ./app: the
# group wait from main leaves main's Rust thread handle "possibly lost", which the installed
# suppressions must cover (the run fails without them).
group_project=$work/group-project
mkdir -p "$group_project"
cc -std=c11 $strict ffi/tests/c/group_main.c $(pkg-config --cflags --libs flock) -pthread \
    -Wl,-rpath,"$prefix/lib" -o "$group_project/app"
run_doc valgrind "$group_project" > "$work/valgrind-group.log" 2>&1 ||
    { cat "$work/valgrind-group.log" >&2; exit 1; }
grep -E "ERROR SUMMARY|suppressed:" "$work/valgrind-group.log" | sed 's/^/   | /'
if valgrind --leak-check=full --error-exitcode=1 "$group_project/app" > "$work/valgrind-group-bare.log" 2>&1; then
    echo "NOTICE: without the suppressions the group program happened to pass too"
else
    echo "without the suppressions: $(grep -E 'possibly lost:' "$work/valgrind-group-bare.log" | sed 's/^==[0-9]*== *//')"
fi
# ---- end of issue 40 (branch cfaults) ---------------------------------------------------------

case $target in
"$root"/*) ;;
*)
    if [ "$(git status --porcelain --ignored 2>/dev/null || true)" != "$checkout_before" ]; then
        echo "installing wrote into the checkout:" >&2
        git status --porcelain --ignored >&2
        exit 1
    fi
    echo "the checkout is unchanged by the installs (target directory $target)"
    ;;
esac

step "the examples, built against the installed copy with pkg-config"
libdir=$(pkg-config --variable=libdir flock)
echo "pkg-config: flock $(pkg-config --modversion flock): $(pkg-config --cflags --libs flock)"
# Compiled from a copy, so only the installed headers can be found.
cp examples/c/many_submitters.c examples/cpp/wrapper.cpp "$work/"
cc -std=c11 $strict "$work/many_submitters.c" $(pkg-config --cflags --libs flock) -pthread \
    -Wl,-rpath,"$libdir" -o "$work/many_submitters"
c++ -std=c++17 $strict "$work/wrapper.cpp" $(pkg-config --cflags --libs flock) -pthread \
    -Wl,-rpath,"$libdir" -o "$work/wrapper"
echo "-- examples/c/many_submitters.c"
"$work/many_submitters"
echo "-- examples/cpp/wrapper.cpp"
"$work/wrapper"

# ---- flock inside a CMake build (issue 40): add_subdirectory and FetchContent -----------
# The projects of ffi/README.md's "CMake, with flock built as part of your project", as
# written (app.c the README's, app.cpp examples/cpp/algorithms.cpp): add_subdirectory of the
# checkout (a link to it), and FetchContent of an archive of the checkout's files as they are
# now; each cargo builds into its own build directory. Then the same add_subdirectory project
# as a Debug build (cargo's dev profile), and a second build that must change nothing.
step "flock inside a CMake build: add_subdirectory and FetchContent"
awk '/^<!-- c-tests.sh checks: CMake lines of ffi\/README.md -->$/ { found = 1; next }
     found && /^```/ { if (inside) exit; inside = 1; next }
     inside { sub(/ +#.*$/, ""); print }' README.md > "$work/readme-cmake-lines"
[ -s "$work/readme-cmake-lines" ] || { echo "README.md has no block of ffi/README.md's CMake lines" >&2; exit 1; }
while IFS= read -r line; do
    grep -qxF -- "$line" ffi/README.md || { echo "README.md's line is not in ffi/README.md: $line" >&2; exit 1; }
done < "$work/readme-cmake-lines"
echo "README.md's CMake lines are ffi/README.md's"
checkout_before_cmake=$(git status --porcelain --ignored 2>/dev/null || true)
for kind in add_subdirectory FetchContent; do
    dir=$work/cmake-$kind
    mkdir -p "$dir"
    doc_block "$kind" > "$dir/CMakeLists.txt"
    cp "$project/app.c" "$dir/app.c"
    cp examples/cpp/algorithms.cpp "$dir/app.cpp"
done
ln -s "$root" "$work/cmake-add_subdirectory/flock"
git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done |
    tar --null -T - --transform 's,^,flock/,' -czf "$work/cmake-FetchContent/flock.tar.gz"
echo "FetchContent's archive: $(stat -c %s "$work/cmake-FetchContent/flock.tar.gz") bytes"
for kind in add_subdirectory FetchContent; do
    dir=$work/cmake-$kind
    run_doc cmake-project "$dir" > "$work/cmake-$kind.log" 2>&1 || { cat "$work/cmake-$kind.log" >&2; exit 1; }
    grep -E "^[0-9]+ ran|bit-identical" "$work/cmake-$kind.log" | sed 's/^/   | /'
    linked=$(ldd "$dir/build/app")
    case $linked in
    *"libflock.so.0.1 => $dir/build/"*) echo "$kind: app loads $(echo "$linked" | sed -n 's/.*libflock.so.0.1 => \([^ ]*\).*/\1/p')" ;;
    *) echo "$kind: app does not load the libflock.so.0.1 of its build directory:" >&2; echo "$linked" >&2; exit 1 ;;
    esac
    linked=$(ldd "$dir/build/app++" 2>&1 || true)
    case $linked in *libflock*) echo "$kind: app++ (flock::flock_static) loads a shared libflock" >&2; exit 1 ;; esac
    built=$(find "$dir/build" -path '*/cargo/release/libflock.a' | head -n 1)
    [ -n "$built" ] || { echo "$kind: no cargo release build under $dir/build" >&2; exit 1; }
done
echo "app++ carries libflock (flock::flock_static); both built with cargo's release profile"
sub=$work/cmake-add_subdirectory
(cd "$sub" && cmake -S . -B build-debug -DCMAKE_BUILD_TYPE=Debug && cmake --build build-debug) \
    > "$work/cmake-debug.log" 2>&1 || { cat "$work/cmake-debug.log" >&2; exit 1; }
[ -f "$sub/build-debug/flock/cargo/debug/libflock.a" ] && ! [ -e "$sub/build-debug/flock/cargo/release" ] ||
    { echo "CMAKE_BUILD_TYPE=Debug did not build cargo's dev profile alone" >&2; exit 1; }
"$sub/build-debug/app" && "$sub/build-debug/app++" > /dev/null
echo "CMAKE_BUILD_TYPE=Debug: cargo's dev profile (target/debug), app and app++ run"
before=$(stat -c %Y "$sub/build/app" "$sub/build/app++" "$sub/build/flock/lib/libflock.so.0.1")
(cd "$sub" && cmake --build build) > "$work/cmake-rebuild.log" 2>&1 || { cat "$work/cmake-rebuild.log" >&2; exit 1; }
[ "$(stat -c %Y "$sub/build/app" "$sub/build/app++" "$sub/build/flock/lib/libflock.so.0.1")" = "$before" ] ||
    { echo "a second cmake --build with nothing changed relinked the programs" >&2; exit 1; }
echo "a second build with nothing changed leaves the library and the programs as they were"
[ "$(git status --porcelain --ignored 2>/dev/null || true)" = "$checkout_before_cmake" ] ||
    { echo "the CMake builds wrote into the checkout:" >&2; git status --porcelain --ignored >&2; exit 1; }
echo "the checkout is unchanged by the CMake builds"
# ---- end of the CMake block -------------------------------------------------------------

step "C/C++: all passed"
