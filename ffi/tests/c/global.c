/*
 * flock_global, the process-wide pool, from C: a program of its own, since the pool is
 * process-wide (built once, on first use, from the environment of that moment).
 *
 * Checks: an invalid FLOCK_WORKERS is refused and not remembered; FLOCK_WORKERS is then read
 * on the first successful call; every call returns the same handle; tasks and groups run on
 * it; flock_pool_free of it does nothing and flock_shutdown of it is refused (the pool still
 * runs tasks afterwards); a forked child gets a fresh global pool (with FLOCK_WORKERS read
 * again) that runs tasks, through the same handle.
 * Built by ffi/tests/driver.sh; prints one line per check and exits non-zero on a failure.
 */
#define _POSIX_C_SOURCE 200809L
#include "flock.h"
#include "check.h"

#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void count_task(void *arg) { atomic_fetch_add((atomic_uint_fast64_t *)arg, 1); }

static uint32_t workers_of(flock_pool_t *pool) {
    flock_stats_t s;
    if (flock_stats(pool, &s) != FLOCK_OK) return 0;
    return s.workers;
}

/* Waits (up to about 10 s) until every worker of pool is parked, then 20 ms more so that none
 * is still on its way into its futex (as tests/fork.rs does): what the global pool's
 * documentation asks of a fork, that no other thread be inside the library. After
 * flock_wait returns, a worker may still be inside the memory allocator. Under
 * AddressSanitizer, whose allocator (gcc 12's) takes no lock around a fork, a child once
 * inherited one of its size classes' locks held, and all five of its fresh workers hung on it
 * in their first allocation (crossbeam-epoch registering the thread), in a run of
 * scripts/c-tests.sh. Returns 1 once all are parked, 0 on timeout. */
static int wait_until_parked(flock_pool_t *pool) {
    uint32_t workers = workers_of(pool);
    struct timespec pause = {0, 1000000};
    for (int tries = 0; tries < 10000; tries++) {
        uint32_t parked = 0;
        for (uint32_t w = 0; w < workers; w++) {
            flock_worker_stats_t ws;
            if (flock_worker_stats(pool, w, &ws) == FLOCK_OK && ws.state == FLOCK_WORKER_PARKED)
                parked++;
        }
        if (workers > 0 && parked == workers) {
            struct timespec settle = {0, 20000000};
            nanosleep(&settle, NULL);
            return 1;
        }
        nanosleep(&pause, NULL);
    }
    return 0;
}

/* Submits n counting tasks to pool and waits: how many ran. */
static uint64_t run_tasks(flock_pool_t *pool, uint64_t n) {
    atomic_uint_fast64_t count = 0;
    for (uint64_t i = 0; i < n; i++)
        if (flock_submit(pool, count_task, &count) != FLOCK_OK) return 0;
    if (flock_wait(pool) != FLOCK_OK) return 0;
    return atomic_load(&count);
}

int main(void) {
    printf("libflock %s, the global pool from C\n", flock_version());
    flock_pool_t *pool = NULL;

    /* 1. A bad FLOCK_WORKERS is refused, *out untouched, and the failure is not kept. */
    setenv("FLOCK_WORKERS", "lots", 1);
    CHECK_STATUS(flock_global(&pool), FLOCK_ERR_INVALID_CONFIG);
    CHECK(pool == NULL);
    setenv("FLOCK_MEMBARRIER", "2", 1);
    setenv("FLOCK_WORKERS", "3", 1);
    CHECK_STATUS(flock_global(&pool), FLOCK_ERR_INVALID_CONFIG);
    CHECK(pool == NULL);
    CHECK_STATUS(flock_global(NULL), FLOCK_ERR_NULL);
    unsetenv("FLOCK_MEMBARRIER");
    printf("ok   invalid environment refused, not remembered\n");

    /* 2. Started from the environment of its first successful call; one handle. */
    CHECK_STATUS(flock_global(&pool), FLOCK_OK);
    CHECK(pool != NULL);
    CHECK(workers_of(pool) == 3);
    setenv("FLOCK_WORKERS", "5", 1); /* read once: no effect now */
    flock_pool_t *again = NULL;
    CHECK_STATUS(flock_global(&again), FLOCK_OK);
    CHECK(again == pool);
    CHECK(workers_of(again) == 3);
    printf("ok   FLOCK_WORKERS=3 read on first use; one handle\n");

    /* 3. Tasks and groups run on it. */
    CHECK(run_tasks(pool, 10000) == 10000);
    flock_group_t *group = NULL;
    atomic_uint_fast64_t in_group = 0;
    CHECK_STATUS(flock_group_new(pool, &group), FLOCK_OK);
    for (int i = 0; i < 100; i++) CHECK_STATUS(flock_group_submit(group, count_task, &in_group), FLOCK_OK);
    CHECK_STATUS(flock_group_wait(group), FLOCK_OK);
    CHECK(atomic_load(&in_group) == 100);
    flock_group_free(group);
    printf("ok   tasks and a group ran on it\n");

    /* 4. It cannot be ended through the handle. */
    flock_pool_free(pool);
    uint64_t dropped = 99;
    CHECK_STATUS(flock_shutdown(pool, FLOCK_SHUTDOWN_NOW, &dropped), FLOCK_ERR_INVALID_ARGUMENT);
    CHECK(dropped == 99);
    CHECK(run_tasks(pool, 1000) == 1000);
    flock_stats_t s;
    CHECK_STATUS(flock_stats(pool, &s), FLOCK_OK);
    CHECK(s.completed >= 10100);
    printf("ok   flock_pool_free does nothing, flock_shutdown refused; still running\n");

    /* 5. A forked child builds a fresh one, reading FLOCK_WORKERS again (5 now). The child
     * leaks its copy of the parent's pool by design (it has no workers to join), which a leak
     * checker would report at its exit: it writes its verdict to a pipe and ends with SIGKILL,
     * which no checker outlives. */
    CHECK(wait_until_parked(pool));
    fflush(stdout);
    int fds[2];
    CHECK(pipe(fds) == 0);
    pid_t child = fork();
    if (child == 0) {
        flock_pool_t *mine = NULL;
        char ok = flock_global(&mine) == FLOCK_OK && mine == pool && workers_of(mine) == 5 &&
                  run_tasks(mine, 1000) == 1000;
        if (write(fds[1], &ok, 1) != 1) _exit(1);
        kill(getpid(), SIGKILL);
        _exit(1);
    }
    close(fds[1]);
    char verdict = 0;
    CHECK(read(fds[0], &verdict, 1) == 1 && verdict == 1);
    close(fds[0]);
    int status = 0;
    CHECK(child > 0 && waitpid(child, &status, 0) == child);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    CHECK(workers_of(pool) == 3); /* the parent's is untouched */
    CHECK(run_tasks(pool, 1000) == 1000);
    printf("ok   a forked child runs tasks on a fresh global pool (5 workers)\n");

    printf("%s\n", test_failed ? "FAILED" : "all passed");
    return test_failed;
}
