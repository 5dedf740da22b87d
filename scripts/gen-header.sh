#!/usr/bin/env bash
# Regenerates include/flock.h from ffi/src with ffi/cbindgen.toml, using cbindgen at exactly
# the pinned version below (installed once, with its own lock file, under the target
# directory; later runs are offline). With --check, writes nothing and fails when the
# committed header differs from what the pinned cbindgen generates.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
CBINDGEN_VERSION=0.29.4

target=${CARGO_TARGET_DIR:-$root/target}
case $target in /*) ;; *) target=$root/$target ;; esac
tools=${FLOCK_TOOLS_DIR:-$target/flock-tools}
cbindgen=$tools/bin/cbindgen
if ! [ -x "$cbindgen" ] || [ "$("$cbindgen" --version)" != "cbindgen $CBINDGEN_VERSION" ]; then
    echo "== installing cbindgen $CBINDGEN_VERSION into $tools (once)"
    # A debug build: it compiles in ~37 s against ~100 s optimised on the 2-vCPU CI guest
    # (every clean clone pays it once), and generating flock.h with it takes 0.2 s.
    cargo install cbindgen --version "=$CBINDGEN_VERSION" --locked --debug --root "$tools"
fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT
# -q: cbindgen warns about StatusArg/ShutdownModeArg, which cbindgen.toml renames on purpose.
"$cbindgen" -q --config ffi/cbindgen.toml --crate flock-ffi --output "$out" ffi
if [ "${1:-}" = "--check" ]; then
    if ! diff -u include/flock.h "$out"; then
        echo "include/flock.h is stale: run scripts/gen-header.sh and commit the result" >&2
        exit 1
    fi
    echo "include/flock.h is what cbindgen $CBINDGEN_VERSION generates"
else
    cp "$out" include/flock.h
    echo "wrote include/flock.h"
fi
