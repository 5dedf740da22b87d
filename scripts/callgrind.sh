#!/usr/bin/env bash
# Instructions (Ir) and locked instructions (Ge, callgrind's "global bus events") per join,
# per spawned scope task, per task submitted by a task and per outside submit, flock against
# rayon (and a crossbeam-channel pool for submits), one worker each, measured at two sizes so
# start-up cancels out.
# Instruction counts hold on a noisy machine where time does not. Prints a markdown table
# (docs/bench.md, "Instructions per operation"). Needs valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "callgrind: valgrind is not installed" >&2; exit 1; }
cargo build --release -q -p flock-benches --example callgrind_probe
probe="${CARGO_TARGET_DIR:-target}/release/examples/callgrind_probe"
out=$(mktemp -d)

# totals OP POOL SIZE -> "Ir Ge"
totals() {
    local f="$out/$1-$2-$3.cg"
    valgrind --tool=callgrind --collect-bus=yes --callgrind-out-file="$f" "$probe" "$1" "$2" "$3" \
        >/dev/null 2>&1
    # The summary line holds the totals of the events, in the order of the events line.
    awk '/^events:/ { for (i = 2; i <= NF; i++) ev[i-1] = $i }
         /^summary:/ { for (i = 2; i <= NF; i++) v[ev[i-1]] = $i }
         END { print v["Ir"] + 0, v["Ge"] + 0 }' "$f"
}

# per OP POOL SMALL LARGE OPS_SMALL OPS_LARGE -> a table cell pair
per() {
    read -r ir1 ge1 < <(totals "$1" "$2" "$3")
    read -r ir2 ge2 < <(totals "$1" "$2" "$4")
    awk -v a="$ir1" -v b="$ir2" -v c="$ge1" -v d="$ge2" -v n="$5" -v m="$6" \
        'BEGIN { printf "%.1f | %.2f", (b - a) / (m - n), (d - c) / (m - n) }'
}

fib_ops() { # joins in fib(n): F(n+1) - 1
    awk -v n="$1" 'BEGIN { a = 0; b = 1; for (i = 0; i < n + 1; i++) { t = a + b; a = b; b = t } print a - 1 }'
}

echo "| operation (one worker) | pool | instructions | locked instructions |"
echo "|---|---|---|---|"
j1=$(fib_ops 18); j2=$(fib_ops 20)
for pool in flock rayon; do
    echo "| join (fib 20 - fib 18: $((j2 - j1)) joins) | $pool | $(per join $pool 18 20 "$j1" "$j2") |"
done
s1=$(( (1 << 13) - 2 )); s2=$(( (1 << 14) - 2 ))
for pool in flock rayon; do
    echo "| spawned scope task (tree depth 13 - 12: $((s2 - s1)) tasks) | $pool | $(per spawn $pool 12 13 "$s1" "$s2") |"
done
for pool in flock rayon; do
    echo "| task submitted by a task (chain, 200k - 100k tasks) | $pool | $(per chain $pool 100000 200000 100000 200000) |"
done
for pool in flock flock-latency rayon channel; do
    echo "| outside submit, both sides (200k - 100k tasks) | $pool | $(per submit $pool 100000 200000 100000 200000) |"
done
rm -rf "$out"
