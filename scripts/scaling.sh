#!/usr/bin/env bash
# flock ÷ rayon at several CPU counts (issue 41): runs bench_report's fork-join rows
# (fib-join, qsort), 1u-1Mt, cpu-1us and the idle rows (idle-cpu, idle-burst) under
# `taskset -c` on the first N CPUs this process may use, for N in 1 2 4 8 12 16 (those it
# has), so every pool sizes itself to N workers, and prints one markdown table of the ratios
# flock ÷ rayon measured in the same run, lower is better: each cell is the ratio by wall
# time with the ratio by process CPU time (every thread) beside it in brackets (fib-join and
# qsort pair flock and rayon round by round; the other rows run each pool's 3 runs in turn,
# a fresh pool each):
#   fib-join   ns a join beyond the sequential run, by wall time × workers (paired rounds)
#   qsort      wall time (paired rounds)
#   1u-1Mt, cpu-1us   wall time a task (rayon's rate ÷ flock's)
#   idle-cpu, idle-burst   CPU time alone (an idle pool has no wall time to compare): `–`
# A last row gives how many CPUs other processes kept busy during each report (above ~0.1
# of a few CPUs, the times are theirs as much as the pools'). Each CPU count's full report
# is kept in $SCALING_OUT (default: a temporary directory).
#
#   scripts/scaling.sh                        # every CPU count the machine has, of the six
#   SCALING_CPUS="1 2" scripts/scaling.sh     # these counts
#   SCALING_ONLY=fib-join,low-par scripts/scaling.sh   # other workloads (bench_report --only)
#   BENCH_REPORT=/path/to/bench_report scripts/scaling.sh  # a release build carried to a
#                                                          # machine without cargo
# Build that binary with `cargo build --release -p flock-benches --example bench_report`
# (target/release/examples/bench_report); it needs no file of the repository to run --only.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v taskset >/dev/null || { echo "scaling: taskset is not installed" >&2; exit 1; }
only="${SCALING_ONLY:-fib-join,qsort,1u-1Mt,cpu-1us,idle-cpu,idle-burst}"
if [ -z "${BENCH_REPORT:-}" ]; then
    command -v cargo >/dev/null || {
        echo "scaling: no cargo here; set BENCH_REPORT to a release build of bench_report" >&2
        exit 1
    }
    cargo build --release -q -p flock-benches --example bench_report
    BENCH_REPORT="${CARGO_TARGET_DIR:-target}/release/examples/bench_report"
fi
[ -x "$BENCH_REPORT" ] || { echo "scaling: $BENCH_REPORT is not an executable" >&2; exit 1; }

# The CPUs this process may run on (a cpuset or an outer taskset may leave out some), one
# a line, in order: the first N of them make the N-CPU set.
allowed=()
IFS=',' read -ra ranges <<<"$(awk '/^Cpus_allowed_list:/ { print $2 }' /proc/self/status)"
for r in "${ranges[@]}"; do
    if [[ $r == *-* ]]; then
        for ((c = ${r%-*}; c <= ${r#*-}; c++)); do allowed+=("$c"); done
    else
        allowed+=("$r")
    fi
done
have=${#allowed[@]}
cpus="${SCALING_CPUS:-}"
if [ -z "$cpus" ]; then
    for n in 1 2 4 8 12 16; do
        [ "$n" -le "$have" ] && cpus="$cpus $n"
    done
fi
for n in $cpus; do
    [ "$n" -le "$have" ] || { echo "scaling: $n CPUs asked, $have available" >&2; exit 1; }
done
out="${SCALING_OUT:-$(mktemp -d)}"
mkdir -p "$out"

for n in $cpus; do
    set_of_n=$(IFS=','; echo "${allowed[*]:0:$n}")
    echo "scaling: $n CPU(s) (taskset -c $set_of_n) ..." >&2
    taskset -c "$set_of_n" "$BENCH_REPORT" --only "$only" >"$out/report-$n.md" 2>"$out/log-$n.txt"
done

# One row per workload, one column per CPU count, from the reports' `scaling:` lines
# (`scaling: WORKLOAD WALL CPU`, `-` for a ratio not measured).
{
    printf '| flock ÷ rayon, wall (CPU), lower is better |'
    for n in $cpus; do printf ' %s CPU |' "$n"; done
    printf '\n|---|'
    for n in $cpus; do printf -- '---:|'; done
    printf '\n'
    workloads=$(cat "$out"/report-*.md | awk '/^scaling: / { print $2 }' | awk '!seen[$0]++')
    for w in $workloads; do
        printf '| %s |' "$w"
        for n in $cpus; do
            awk -v w="$w" '
                $1 == "scaling:" && $2 == w {
                    wall = ($3 == "-") ? "–" : sprintf("%.2f", $3)
                    cpu = ($4 == "-" || $4 == "") ? "" : sprintf(" (%.2f)", $4)
                    printf " %s%s |", wall, cpu; found = 1
                }
                END { if (!found) printf " ? |" }' "$out/report-$n.md"
        done
        printf '\n'
    done
    printf '| other processes (CPUs busy) |'
    for n in $cpus; do
        busy=$(grep -o 'kept [0-9.]* CPUs busy' "$out/report-$n.md" | awk '{ print $2 }' | head -1)
        printf ' %s |' "${busy:-?}"
    done
    printf '\n'
}
echo
echo "Machine: $have CPUs available of $(nproc --all) ($(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)), $(date -u '+%Y-%m-%d %H:%M UTC'); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg). Full reports: $out"
