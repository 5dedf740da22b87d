#!/usr/bin/env bash
# Every public item of flock has a runnable example in its docs: lists those that have none
# (scripts/doc-examples.py over rustdoc's JSON output, which needs the nightly toolchain;
# without it, prints a notice and skips).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "doc-examples: no nightly toolchain (rustdoc's JSON output needs it); skipped"
    exit 0
fi
cargo +nightly rustdoc --quiet -p flock-pool --lib -- -Z unstable-options --output-format json
python3 scripts/doc-examples.py "${CARGO_TARGET_DIR:-target}/doc/flock.json"
