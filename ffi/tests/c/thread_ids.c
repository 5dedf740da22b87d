/*
 * flock_worker_stats_t.os_thread_id and .native_handle: each worker's entry names the thread
 * its tasks run on (syscall(SYS_gettid) and pthread_self() seen from the tasks), a worker
 * restarted by flock_resize shows its new thread, and after shutdown every entry reads 0.
 * Run by ffi/tests/driver.sh (plain, valgrind, ASan). Exits non-zero on a failure.
 */
#define _GNU_SOURCE /* syscall() */
#include "flock.h"
#include "check.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/syscall.h>
#include <unistd.h>
#endif

#define WORKERS 3

/* What each worker's task saw, by worker index; `arrived` holds every task until all
 * WORKERS have arrived, so each runs on a different worker. */
typedef struct {
    atomic_int arrived;
    int want;
    uint64_t tid[WORKERS];
    pthread_t self[WORKERS];
    int seen[WORKERS];
} observed_t;

static void observe(void *arg) {
    observed_t *o = arg;
    int32_t w = flock_current_worker();
    if (w < 0 || w >= WORKERS) return;
#ifdef __linux__
    o->tid[w] = (uint64_t)syscall(SYS_gettid);
#endif
    o->self[w] = pthread_self();
    o->seen[w] = 1;
    atomic_fetch_add(&o->arrived, 1);
    while (atomic_load(&o->arrived) < o->want) sleep_ms(1);
}

/* Runs one `observe` task on each of the pool's first `n` workers. */
static void observe_workers(flock_pool_t *pool, observed_t *o, int n) {
    memset(o, 0, sizeof *o);
    o->want = n;
    for (int i = 0; i < n; i++) CHECK(flock_submit(pool, observe, o) == FLOCK_OK);
    CHECK(flock_wait(pool) == FLOCK_OK);
}

/* Worker i's entry names the thread its task ran on. */
static void check_matches(flock_pool_t *pool, const observed_t *o, int n) {
    for (int i = 0; i < n; i++) {
        flock_worker_stats_t w;
        CHECK(flock_worker_stats(pool, (uint32_t)i, &w) == FLOCK_OK);
        CHECK(o->seen[i]);
#ifdef __linux__
        CHECK(o->tid[i] != 0);
        CHECK_EQ(w.os_thread_id, o->tid[i]);
        CHECK_EQ(w.native_handle, (uint64_t)o->self[i]);
        CHECK(pthread_equal((pthread_t)w.native_handle, o->self[i]));
        /* Not the calling thread. */
        CHECK(w.os_thread_id != (uint64_t)syscall(SYS_gettid));
#else
        CHECK_EQ(w.os_thread_id, 0);
#endif
    }
}

int main(void) {
    flock_config_t cfg;
    flock_config_init(&cfg);
    cfg.workers = WORKERS;
    cfg.max_workers = WORKERS;
    flock_pool_t *pool = NULL;
    if (flock_pool_new(&cfg, &pool) != FLOCK_OK) {
        fprintf(stderr, "flock_pool_new failed\n");
        return 1;
    }
    static observed_t o;
    observe_workers(pool, &o, WORKERS);
    check_matches(pool, &o, WORKERS);
#ifdef __linux__
    /* Three different threads. */
    CHECK(o.tid[0] != o.tid[1] && o.tid[1] != o.tid[2] && o.tid[0] != o.tid[2]);
#endif
    printf("%s worker ids match what their tasks see\n", test_failed ? "FAIL" : "ok  ");

    /* Shrunk to one, worker 1 and 2 retire and leave: flock_worker_stats stops answering
     * for them. Grown back, each shows the thread that now runs it. */
    int before = test_failed;
    CHECK(flock_resize(pool, 1) == FLOCK_OK);
    flock_worker_stats_t w;
    while (flock_worker_stats(pool, 1, &w) == FLOCK_OK) sleep_ms(1);
    CHECK(flock_resize(pool, WORKERS) == FLOCK_OK);
    observe_workers(pool, &o, WORKERS);
    check_matches(pool, &o, WORKERS);
    printf("%s a restarted worker shows its new thread\n", test_failed != before ? "FAIL" : "ok  ");

    /* After shutdown no worker has a thread. */
    before = test_failed;
    CHECK(flock_shutdown(pool, FLOCK_SHUTDOWN_GRACEFUL, NULL) == FLOCK_OK);
    for (uint32_t i = 0; i < WORKERS; i++) {
        CHECK(flock_worker_stats(pool, i, &w) == FLOCK_OK);
        CHECK_EQ(w.state, FLOCK_WORKER_STOPPED);
        CHECK_EQ(w.os_thread_id, 0);
        CHECK_EQ(w.native_handle, 0);
    }
    printf("%s after shutdown the ids read 0\n", test_failed != before ? "FAIL" : "ok  ");
    flock_pool_free(pool);
    return test_failed;
}
