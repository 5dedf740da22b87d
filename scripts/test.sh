#!/usr/bin/env bash
# Every test flock has, Rust, C and C++, in one command (the README's test command; .ci/run
# calls it too). Installs the C tools it needs (compilers, pkg-config, valgrind) when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each part ends with the seconds it took (the C and C++ script also times its steps).
part_start=$(date +%s)
took() {
    local now
    now=$(date +%s)
    echo "== ($1: $((now - part_start)) s)"
    part_start=$now
}

echo "== Rust: unit, integration and doc tests"
cargo test --workspace
took "unit, integration and doc tests"

echo "== Rust: the crate without its default features (stats, pin) still builds and its tests pass"
cargo test -p flock-pool --no-default-features --lib --tests
took "without the default features"

echo "== C and C++: libflock's header, suites (plain, valgrind, AddressSanitizer), install, examples"
scripts/c-tests.sh
took "C and C++"

echo "== Prometheus: two pools as one exposition, through a real parser (prometheus_client)"
scripts/prom-check.sh
took "Prometheus"
