#!/usr/bin/env bash
# Checks flock's Prometheus text for two pools on one endpoint with a real parser: the
# `prometheus` example's output (built with and without the `stats` feature) goes through
# prometheus_client's text_string_to_metric_families (PyPI), in a virtual environment under
# the target directory (installed on first use; `pip install --user` when venv is missing).
# When Go is installed, the same files also go through Go's expfmt parser and promlint
# (scripts/promlint; its modules come from the Go module proxy on first use).
set -euo pipefail
cd "$(dirname "$0")/.."

target=${CARGO_TARGET_DIR:-target}
venv=$target/prom-check-venv
python=$venv/bin/python
if ! "$python" -c 'import prometheus_client' 2>/dev/null; then
    if python3 -c 'import prometheus_client' 2>/dev/null; then
        python=python3
    elif python3 -m venv "$venv"; then
        "$python" -m pip install --quiet --disable-pip-version-check prometheus_client
    else
        python3 -m pip install --quiet --user prometheus_client
        python=python3
    fi
fi
echo "prometheus_client $("$python" -c 'import importlib.metadata as m; print(m.version("prometheus_client"))')"

out=$target/prom-check
mkdir -p "$out"
cargo run --quiet -p flock-pool --example prometheus >"$out/two-pools.txt"
"$python" scripts/prom-check.py "$out/two-pools.txt"
cargo run --quiet -p flock-pool --no-default-features --example prometheus >"$out/two-pools-no-stats.txt"
"$python" scripts/prom-check.py "$out/two-pools-no-stats.txt" --no-stats

if ! command -v go >/dev/null 2>&1; then
    echo "promlint: no Go toolchain; Go's expfmt/promlint check skipped"
    exit 0
fi
out_abs=$(cd "$out" && pwd)
if ! (cd scripts/promlint && go build -o "$out_abs/promlint" .); then
    echo "promlint: could not build scripts/promlint (offline?); Go's check skipped"
    exit 0
fi
for f in two-pools.txt two-pools-no-stats.txt; do
    echo "== $f"
    "$out_abs/promlint" "$out/$f"
done
