/*
 * C tests of issue 40's faults and rough edges: pause against a group wait, the cancel of a
 * paused pool's group, the nanosecond group wait beside the deprecated millisecond one, and
 * flock_running. Built by ffi/tests/driver.sh (plain, valgrind, ASan with UBSan) with
 * -Wall -Wextra -Wshadow -Wconversion -Werror. Prints one line per test and a closing
 * "N passed, M failed"; exits non-zero on a failure.
 */
#define _POSIX_C_SOURCE 200809L
#include "flock.h"
#include "check.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void count_task(void *arg) { atomic_fetch_add((atomic_uint *)arg, 1); }

/* ---- pause against a group wait --------------------------------------------------------
 * flock.h says (as Rust's Pool::pause does): after flock_pause no task submitted from
 * outside the pool starts, but tasks that running tasks submitted may still start where a
 * running task waits for them (flock_group_wait on a worker runs them). A task that fills its
 * group and waits finishes during the pause; a task put into a group from outside after the
 * pause waits for flock_resume, also when a waiting worker could have taken it. */
typedef struct {
    flock_pool_t *pool;
    flock_group_t *outside; /* a group main submits into after the pause */
    atomic_uint inner_ran;
    atomic_int submitted, paused, done;
    flock_status_t waited;
} pause_case_t;

static void fill_and_wait(void *arg) {
    pause_case_t *c = arg;
    flock_group_t *g = NULL;
    if (flock_group_new(c->pool, &g) != FLOCK_OK) abort();
    for (int i = 0; i < 50; i++)
        if (flock_group_submit(g, count_task, &c->inner_ran) != FLOCK_OK) abort();
    atomic_store(&c->submitted, 1);
    while (!atomic_load(&c->paused)) sleep_ms(1);
    c->waited = flock_group_wait(g);
    flock_group_free(g);
    atomic_store(&c->done, 1);
}

static void test_pause_lets_a_group_wait_run_its_own_tasks(void) {
    flock_config_t cfg;
    flock_config_init(&cfg);
    cfg.workers = 1;
    pause_case_t c = {0};
    if (flock_pool_new(&cfg, &c.pool) != FLOCK_OK) abort();
    if (flock_group_new(c.pool, &c.outside) != FLOCK_OK) abort();
    atomic_uint outside_ran = 0;
    CHECK_EQ(flock_submit(c.pool, fill_and_wait, &c), FLOCK_OK);
    while (!atomic_load(&c.submitted)) sleep_ms(1);
    CHECK_EQ(flock_pause(c.pool), FLOCK_OK);
    CHECK_EQ(flock_group_submit(c.outside, count_task, &outside_ran), FLOCK_OK);
    atomic_store(&c.paused, 1);
    while (!atomic_load(&c.done)) sleep_ms(1); /* finishes while paused */
    CHECK_EQ(c.waited, FLOCK_OK);
    CHECK_EQ(atomic_load(&c.inner_ran), 50);
    CHECK_EQ(atomic_load(&outside_ran), 0); /* from outside, after the pause: not started */
    CHECK_EQ(flock_resume(c.pool), FLOCK_OK);
    CHECK_EQ(flock_group_wait(c.outside), FLOCK_OK);
    CHECK_EQ(atomic_load(&outside_ran), 1);
    flock_group_free(c.outside);
    flock_pool_free(c.pool);
}

/* ---- cancel on a paused pool frees the capacity ----------------------------------------
 * Capacity 10, reject: 10 group tasks queued on a paused pool, then cancelled. Every drop
 * callback runs, and the room comes back at once, as flock_purge gives it back
 * (adversarial.c's test_group_cancel_gives_capacity_back checks the room to the unit). */
typedef struct {
    atomic_uint ran, dropped;
} run_or_drop_t;

static void count_run(void *arg) { atomic_fetch_add(&((run_or_drop_t *)arg)->ran, 1); }
static void count_drop(void *arg) { atomic_fetch_add(&((run_or_drop_t *)arg)->dropped, 1); }

static void test_cancel_on_a_paused_pool_frees_capacity(void) {
    flock_config_t cfg;
    flock_config_init(&cfg);
    cfg.workers = 1;
    cfg.capacity = 10;
    cfg.when_full = FLOCK_WHEN_FULL_REJECT;
    flock_pool_t *pool = NULL;
    if (flock_pool_new(&cfg, &pool) != FLOCK_OK) abort();
    flock_group_t *g = NULL;
    if (flock_group_new(pool, &g) != FLOCK_OK) abort();
    /* One argument for every task: its run and its drop callback each count there. */
    run_or_drop_t c = {0, 0};
    CHECK_EQ(flock_pause(pool), FLOCK_OK);
    for (int i = 0; i < 10; i++) CHECK_EQ(flock_group_submit_ex(g, count_run, &c, count_drop), FLOCK_OK);
    size_t cancelled = 0;
    CHECK_EQ(flock_group_cancel(g, &cancelled), FLOCK_OK);
    CHECK_EQ(cancelled, 10);
    CHECK_EQ(atomic_load(&c.dropped), 10);
    flock_stats_t s;
    CHECK_EQ(flock_stats(pool, &s), FLOCK_OK);
    CHECK_EQ(s.queued, 0);
    CHECK_EQ(flock_submit(pool, count_run, &c), FLOCK_OK);
    CHECK_EQ(flock_resume(pool), FLOCK_OK);
    CHECK_EQ(flock_wait(pool), FLOCK_OK);
    CHECK_EQ(atomic_load(&c.ran), 1);
    CHECK_EQ(atomic_load(&c.dropped), 10);
    flock_group_free(g);
    flock_pool_free(pool);
}

/* ---- one time unit: the nanosecond group wait, the millisecond one still working -------- */
static void test_group_wait_timeout_units(void) {
    flock_config_t cfg;
    flock_config_init(&cfg);
    cfg.workers = 1;
    flock_pool_t *pool = NULL;
    if (flock_pool_new(&cfg, &pool) != FLOCK_OK) abort();
    flock_group_t *g = NULL;
    if (flock_group_new(pool, &g) != FLOCK_OK) abort();
    gate_t gate = {0};
    CHECK_EQ(flock_group_submit(g, gate_task, &gate), FLOCK_OK);
    while (!atomic_load(&gate.started)) sleep_ms(1);
    CHECK_EQ(flock_group_wait_timeout_ns(g, 1000), FLOCK_ERR_TIMEOUT);
    CHECK_EQ(flock_group_wait_timeout_ns(NULL, 1000), FLOCK_ERR_NULL);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    CHECK_EQ(flock_group_wait_timeout(g, 1), FLOCK_ERR_TIMEOUT);
    CHECK_EQ(flock_group_wait_timeout(NULL, 1), FLOCK_ERR_NULL);
    atomic_store(&gate.open, 1);
    CHECK_EQ(flock_group_wait_timeout(g, UINT64_MAX), FLOCK_OK);
#pragma GCC diagnostic pop
    CHECK_EQ(flock_group_wait_timeout_ns(g, UINT64_MAX), FLOCK_OK);
    flock_group_free(g);
    flock_pool_free(pool);
}

/* ---- flock_running ----------------------------------------------------------------------- */
static void test_running_counts_busy_workers(void) {
    flock_config_t cfg;
    flock_config_init(&cfg);
    cfg.workers = 3;
    flock_pool_t *pool = NULL;
    if (flock_pool_new(&cfg, &pool) != FLOCK_OK) abort();
    uint32_t n = 99;
    CHECK_EQ(flock_running(NULL, &n), FLOCK_ERR_NULL);
    CHECK_EQ(flock_running(pool, NULL), FLOCK_ERR_NULL);
    CHECK_EQ(n, 99); /* untouched on an error */
    gate_t gate = {0};
    for (int i = 0; i < 2; i++) CHECK_EQ(flock_submit(pool, gate_task, &gate), FLOCK_OK);
    while (atomic_load(&gate.started) < 2) sleep_ms(1);
    /* Both run a gate task; the third has none, and a worker counts as running only from
     * taking a task (a thread just started reads FLOCK_WORKER_SPINNING): exactly 2. */
    CHECK_EQ(flock_running(pool, &n), FLOCK_OK);
    CHECK_EQ(n, 2);
    atomic_store(&gate.open, 1);
    CHECK_EQ(flock_shutdown(pool, FLOCK_SHUTDOWN_GRACEFUL, NULL), FLOCK_OK);
    CHECK_EQ(flock_running(pool, &n), FLOCK_OK);
    CHECK_EQ(n, 0);
    flock_pool_free(pool);
}

int main(void) {
    printf("libflock %s, C tests of issue 40\n", flock_version());
    int passed = 0, failed = 0;
    RUN(test_pause_lets_a_group_wait_run_its_own_tasks);
    RUN(test_cancel_on_a_paused_pool_frees_capacity);
    RUN(test_group_wait_timeout_units);
    RUN(test_running_counts_busy_workers);
    return check_summary(passed, failed);
}
