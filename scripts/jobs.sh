# Sourced by the checkers (loom.sh, miri.sh): runs independent jobs side by side, as many at
# once as the machine has CPUs (JOBS overrides), in the order they were queued, so queue the
# longest first. Each job's output goes to its own log, and the caller reads every job's exit
# status: a job that fails does not stop the others, and none is skipped.
#
#   jobs_init                 # a fresh queue, logs in $JOBS_DIR (a temporary directory)
#   job NAME COMMAND...       # queue COMMAND (one string, run by bash -c) under NAME
#   jobs_run                  # run the queue; prints "job NAME: ok|FAILED (rc N) in Ts" per job
#   jobs_failed               # the names of the jobs that failed, one a line
#   "$JOBS_DIR/NAME.log"      # a job's output
#   jobs_clean_on_exit [PATH...]  # at exit, remove $JOBS_DIR and PATHs if the script succeeded
#                             # (an EXIT trap); after a failure, keep them and say where

jobs_init() {
    JOBS_DIR=$(mktemp -d)
    JOB_NAMES=()
    JOB_CMDS=()
}

job() {
    JOB_NAMES+=("$1")
    JOB_CMDS+=("$2")
}

# One job: its output to its log, its status and wall time to files the caller reads.
_job_one() {
    local name=$1 cmd=$2 t0 rc=0
    t0=$(date +%s)
    bash -c "$cmd" >"$JOBS_DIR/$name.log" 2>&1 || rc=$?
    echo "$(( $(date +%s) - t0 ))" >"$JOBS_DIR/$name.secs"
    echo "$rc" >"$JOBS_DIR/$name.rc"
}

jobs_clean_on_exit() {
    JOBS_TEMP=("$JOBS_DIR" "$@")
    trap '_jobs_exit $?' EXIT
}

_jobs_exit() {
    if [ "$1" = 0 ]; then
        rm -rf "${JOBS_TEMP[@]}"
    else
        echo "logs kept in ${JOBS_TEMP[*]}" >&2
    fi
}

jobs_run() {
    local slots=${JOBS:-$(nproc 2>/dev/null || echo 2)} running=0 i name rc
    [ "$slots" -ge 1 ] || slots=1
    for i in "${!JOB_NAMES[@]}"; do
        if [ "$running" -ge "$slots" ]; then
            wait -n || true
            running=$((running - 1))
        fi
        _job_one "${JOB_NAMES[$i]}" "${JOB_CMDS[$i]}" &
        running=$((running + 1))
    done
    wait || true
    for name in "${JOB_NAMES[@]}"; do
        rc=$(cat "$JOBS_DIR/$name.rc" 2>/dev/null || echo lost)
        if [ "$rc" = 0 ]; then
            echo "job $name: ok in $(cat "$JOBS_DIR/$name.secs")s"
        else
            echo "job $name: FAILED (rc $rc) in $(cat "$JOBS_DIR/$name.secs" 2>/dev/null || echo ?)s"
        fi
    done
}

jobs_failed() {
    local name
    for name in "${JOB_NAMES[@]}"; do
        [ "$(cat "$JOBS_DIR/$name.rc" 2>/dev/null || echo lost)" = 0 ] || echo "$name"
    done
}
