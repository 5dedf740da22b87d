#!/usr/bin/env bash
# flock ÷ rayon at several CPU counts (issue 41): runs bench_report's fork-join rows
# (fib-join, qsort), 1u-1Mt, cpu-1us and the idle rows (idle-cpu, idle-burst) under
# `taskset -c 0-(N-1)` for N in 1 2 4 8 12 16 (those the machine has), so every pool sizes
# itself to N workers, and prints one markdown table of the ratios flock ÷ rayon measured in
# the same run, lower is better (fib-join and qsort pair flock and rayon round by round; the
# other rows run each pool's 3 runs in turn, a fresh pool each):
#   fib-join   ns a join beyond the sequential run, by wall time × workers (paired rounds)
#   qsort      wall time (paired rounds)
#   1u-1Mt, cpu-1us   wall time a task (rayon's rate ÷ flock's)
#   idle-cpu, idle-burst   CPU time (an idle pool has no wall time to compare)
# Each CPU count's full report is kept in $SCALING_OUT (default: a temporary directory).
#
#   scripts/scaling.sh                        # every CPU count the machine has, of the six
#   SCALING_CPUS="1 2" scripts/scaling.sh     # these counts
#   SCALING_ONLY=fib-join,low-par scripts/scaling.sh   # other workloads (bench_report --only)
#   BENCH_REPORT=/path/to/bench_report scripts/scaling.sh  # a release build carried to a
#                                                          # machine without cargo
set -euo pipefail
cd "$(dirname "$0")/.."
command -v taskset >/dev/null || { echo "scaling: taskset is not installed" >&2; exit 1; }
only="${SCALING_ONLY:-fib-join,qsort,1u-1Mt,cpu-1us,idle-cpu,idle-burst}"
if [ -z "${BENCH_REPORT:-}" ]; then
    cargo build --release -q -p flock-benches --example bench_report
    BENCH_REPORT="${CARGO_TARGET_DIR:-target}/release/examples/bench_report"
fi
have=$(nproc --all)
cpus="${SCALING_CPUS:-}"
if [ -z "$cpus" ]; then
    for n in 1 2 4 8 12 16; do
        [ "$n" -le "$have" ] && cpus="$cpus $n"
    done
fi
out="${SCALING_OUT:-$(mktemp -d)}"
mkdir -p "$out"

for n in $cpus; do
    echo "scaling: $n CPU(s) ..." >&2
    taskset -c "0-$((n - 1))" "$BENCH_REPORT" --only "$only" >"$out/report-$n.md" 2>"$out/log-$n.txt"
done

# One row per workload, one column per CPU count, from the reports' `scaling:` lines.
{
    printf '| flock ÷ rayon (lower is better) |'
    for n in $cpus; do printf ' %s CPU |' "$n"; done
    printf '\n|---|'
    for n in $cpus; do printf -- '---:|'; done
    printf '\n'
    workloads=$(cat "$out"/report-*.md | awk '/^scaling: / { print $2 }' | awk '!seen[$0]++')
    for w in $workloads; do
        printf '| %s |' "$w"
        for n in $cpus; do
            r=$(awk -v w="$w" '$1 == "scaling:" && $2 == w { print $3 }' "$out/report-$n.md")
            printf ' %s |' "${r:-–}"
        done
        printf '\n'
    done
}
echo
echo "Machine: $(nproc --all) CPUs ($(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)); load average before the runs' end: $(cut -d' ' -f1-3 /proc/loadavg). Full reports: $out"
