#!/usr/bin/env bash
# Every test flock has, in one command (the README's test command; .ci/run calls it too).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== Rust: unit, integration and doc tests"
cargo test --workspace

echo "== Rust: the crate without the metrics feature still builds and its tests pass"
cargo test --workspace --no-default-features --lib --tests
