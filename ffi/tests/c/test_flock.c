/*
 * The C test suite of libflock: every exported function, every pointer parameter given NULL,
 * exact counts through flock_stats, flock_worker_stats and flock_lane_stats. Built against a library with the `test-hooks` feature
 * (FLOCK_TEST_HOOKS) by ffi/tests/driver.sh, and run plain, under valgrind and under ASan.
 *
 * FLOCK_TEST_SCALE=n divides the big iteration counts by n (valgrind is slow).
 * Prints one line per test and a closing "N passed, M failed"; exits non-zero on a failure.
 */
#define _POSIX_C_SOURCE 200809L
#include "flock.h"
#include "check.h"

#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t scale = 1;

static uint64_t scaled(uint64_t n) {
    uint64_t s = n / scale;
    return s ? s : 1;
}

/* ---- small task helpers ------------------------------------------------------------- */

static void count_task(void *arg) { atomic_fetch_add((atomic_uint_fast64_t *)arg, 1); }

static flock_pool_t *new_pool(uint32_t workers, uint64_t capacity, flock_when_full_t when_full) {
    flock_config_t cfg;
    flock_config_init(&cfg);
    cfg.workers = workers;
    cfg.capacity = capacity;
    cfg.when_full = when_full;
    flock_pool_t *pool = NULL;
    flock_status_t st = flock_pool_new(&cfg, &pool);
    if (st != FLOCK_OK) {
        fprintf(stderr, "  flock_pool_new: %s\n", flock_status_str(st));
        abort();
    }
    return pool;
}

/* ---- tests ---------------------------------------------------------------------------- */

static void test_version_and_status_strings(void) {
    CHECK(strcmp(flock_version(), FLOCK_VERSION) == 0);
    /* Stable, explicit values. */
    CHECK_EQ(FLOCK_OK, 0);
    CHECK_EQ(FLOCK_ERR_NULL, 1);
    CHECK_EQ(FLOCK_ERR_INVALID_CONFIG, 2);
    CHECK_EQ(FLOCK_ERR_FULL, 3);
    CHECK_EQ(FLOCK_ERR_SHUTDOWN, 4);
    CHECK_EQ(FLOCK_ERR_TIMEOUT, 5);
    CHECK_EQ(FLOCK_ERR_WOULD_DEADLOCK, 6);
    CHECK_EQ(FLOCK_ERR_THREAD_SPAWN, 7);
    CHECK_EQ(FLOCK_ERR_PANIC, 8);
    CHECK_EQ(FLOCK_ERR_INVALID_ARGUMENT, 9);
    CHECK_EQ(FLOCK_ERR_UNKNOWN_LANE, 10);
    CHECK_EQ(FLOCK_ERR_PAUSED, 11);
    CHECK_EQ(FLOCK_ERR_PIN_FAILED, 12);
    CHECK_EQ(FLOCK_ERR_TASK_FAILED, 13);
    for (int i = 0; i <= 13; i++) {
        const char *s = flock_status_str((flock_status_t)i);
        CHECK(s != NULL && s[0] != '\0');
        for (int j = 0; j < i; j++) CHECK(strcmp(s, flock_status_str((flock_status_t)j)) != 0);
    }
    CHECK(strcmp(flock_status_str((flock_status_t)14), "unknown flock status") == 0);
    CHECK(strcmp(flock_status_str((flock_status_t)-1), "unknown flock status") == 0);
}

static void test_config_init_and_defaults(void) {
    flock_config_t cfg;
    memset(&cfg, 0xAB, sizeof cfg);
    flock_config_init(&cfg);
    CHECK(cfg.workers >= 1);
    CHECK_EQ(cfg.capacity, 65536);
    CHECK_EQ(cfg.when_full, FLOCK_WHEN_FULL_BLOCK);
    CHECK_EQ(cfg.block_timeout_ns, 0);
    CHECK(!cfg.fifo && !cfg.pin_workers && !cfg.track_latency);
    CHECK(cfg.lane_reserve);
    CHECK_EQ(cfg.spin_limit, 20);
    CHECK_EQ(cfg.max_spawned_threads, 0);
    CHECK_EQ(cfg.stack_size, 0);
    CHECK_EQ(cfg.max_workers, 0);
    CHECK(cfg.lanes == NULL);
    CHECK_EQ(cfg.lane_count, 0);
    flock_config_init(NULL); /* a no-op */

    /* NULL config: every default. */
    flock_pool_t *pool = NULL;
    CHECK_STATUS(flock_pool_new(NULL, &pool), FLOCK_OK);
    CHECK(pool != NULL);
    flock_stats_t s;
    CHECK_STATUS(flock_stats(pool, &s), FLOCK_OK);
    CHECK_EQ(s.workers, cfg.workers);
    CHECK_EQ(s.capacity, 65536);
    CHECK(s.max_workers >= s.workers);
    CHECK(!s.paused);
    CHECK_EQ(s.lane_count, 1);
    /* One lane, "default". */
    uint32_t lane = 7;
    CHECK_STATUS(flock_lane_index(pool, "default", &lane), FLOCK_OK);
    CHECK_EQ(lane, 0);
    flock_lane_stats_t l;
    CHECK_STATUS(flock_lane_stats(pool, 0, &l), FLOCK_OK);
    CHECK(strcmp(l.name, "default") == 0);
    CHECK_EQ(l.weight, 1);
    CHECK(!l.has_busy);
    CHECK_EQ(l.busy_ns, 0);
    flock_pool_free(pool);
}

static void test_invalid_config(void) {
    flock_config_t cfg;
    flock_pool_t *sentinel = (flock_pool_t *)&cfg, *pool = sentinel;

    flock_config_init(&cfg);
    cfg.workers = 0;
    CHECK_STATUS(flock_pool_new(&cfg, &pool), FLOCK_ERR_INVALID_CONFIG);
    CHECK(pool == sentinel); /* out untouched on error */

    flock_config_init(&cfg);
    cfg.capacity = 0;
    CHECK_STATUS(flock_pool_new(&cfg, &pool), FLOCK_ERR_INVALID_CONFIG);

    flock_config_init(&cfg);
    cfg.workers = 70000;
    CHECK_STATUS(flock_pool_new(&cfg, &pool), FLOCK_ERR_INVALID_CONFIG);

    flock_config_init(&cfg);
    cfg.when_full = (flock_when_full_t)42; /* not a constant: checked, not trusted */
    CHECK_STATUS(flock_pool_new(&cfg, &pool), FLOCK_ERR_INVALID_CONFIG);
    CHECK(pool == sentinel);

    /* A stack too small to be one: below FLOCK_MIN_STACK_SIZE (0 keeps the platform's). */
    flock_config_init(&cfg);
    cfg.stack_size = 1;
    CHECK_STATUS(flock_pool_new(&cfg, &pool), FLOCK_ERR_INVALID_CONFIG);
    cfg.stack_size = FLOCK_MIN_STACK_SIZE - 1;
    CHECK_STATUS(flock_pool_new(&cfg, &pool), FLOCK_ERR_INVALID_CONFIG);
    CHECK(pool == sentinel);
    /* The minimum itself is a stack a worker runs tasks on. */
    cfg.workers = 1;
    cfg.stack_size = FLOCK_MIN_STACK_SIZE;
    CHECK_STATUS(flock_pool_new(&cfg, &pool), FLOCK_OK);
    if (pool != sentinel) {
        atomic_uint_fast64_t n = 0;
        CHECK_STATUS(flock_submit(pool, count_task, &n), FLOCK_OK);
        CHECK_STATUS(flock_wait(pool), FLOCK_OK);
        CHECK_EQ(atomic_load(&n), 1);
        flock_pool_free(pool);
    }
}

static void noop(void *arg) { (void)arg; }

static void test_null_pointers(void) {
    flock_pool_t *pool = new_pool(2, 1024, FLOCK_WHEN_FULL_BLOCK);
    atomic_uint_fast64_t n = 0;

    CHECK_STATUS(flock_pool_new(NULL, NULL), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_submit(NULL, count_task, &n), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_submit(pool, NULL, &n), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_submit_ex(NULL, count_task, &n, noop), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_submit_ex(pool, NULL, &n, noop), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_wait(NULL), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_wait_timeout(NULL, 1000), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_shutdown(NULL, FLOCK_SHUTDOWN_GRACEFUL, NULL), FLOCK_ERR_NULL);

    flock_stats_t s, pattern;
    memset(&s, 0xAB, sizeof s);
    memcpy(&pattern, &s, sizeof s);
    CHECK_STATUS(flock_stats(NULL, &s), FLOCK_ERR_NULL);
    CHECK(memcmp(&s, &pattern, sizeof s) == 0);
    CHECK_STATUS(flock_stats(pool, NULL), FLOCK_ERR_NULL);

    flock_worker_stats_t w, wpattern;
    memset(&w, 0xAB, sizeof w);
    memcpy(&wpattern, &w, sizeof w);
    CHECK_STATUS(flock_worker_stats(NULL, 0, &w), FLOCK_ERR_NULL);
    CHECK(memcmp(&w, &wpattern, sizeof w) == 0);
    CHECK_STATUS(flock_worker_stats(pool, 0, NULL), FLOCK_ERR_NULL);

    flock_lane_stats_t l, lpattern;
    memset(&l, 0xAB, sizeof l);
    memcpy(&lpattern, &l, sizeof l);
    CHECK_STATUS(flock_lane_stats(NULL, 0, &l), FLOCK_ERR_NULL);
    CHECK(memcmp(&l, &lpattern, sizeof l) == 0);
    CHECK_STATUS(flock_lane_stats(pool, 0, NULL), FLOCK_ERR_NULL);

    uint32_t lane = 77;
    CHECK_STATUS(flock_lane_index(NULL, "default", &lane), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_lane_index(pool, NULL, &lane), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_lane_index(pool, "default", NULL), FLOCK_ERR_NULL);
    CHECK_EQ(lane, 77);
    CHECK_STATUS(flock_submit_lane(NULL, 0, count_task, &n), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_submit_lane(pool, 0, NULL, &n), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_submit_lane_ex(NULL, 0, count_task, &n, noop), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_submit_lane_ex(pool, 0, NULL, &n, noop), FLOCK_ERR_NULL);
    void *args[2] = {&n, &n};
    size_t accepted = 77;
    CHECK_STATUS(flock_submit_batch(NULL, 0, count_task, args, 2, &accepted), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_submit_batch(pool, 0, NULL, args, 2, &accepted), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_submit_batch(pool, 0, count_task, NULL, 2, &accepted), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_submit_batch(pool, 0, count_task, args, 2, NULL), FLOCK_ERR_NULL);
    CHECK_EQ(accepted, 77);
    CHECK_STATUS(flock_resize(NULL, 2), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_pause(NULL), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_resume(NULL), FLOCK_ERR_NULL);
    bool paused = true;
    CHECK_STATUS(flock_is_paused(NULL, &paused), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_is_paused(pool, NULL), FLOCK_ERR_NULL);
    CHECK(paused);
    CHECK_STATUS(flock_wait(pool), FLOCK_OK);
    CHECK_EQ(atomic_load(&n), 0); /* none of the above ran anything */

    /* Allowed NULLs: arg, drop, dropped_out, args with n 0, flock_pool_free(NULL). */
    CHECK_STATUS(flock_submit(pool, noop, NULL), FLOCK_OK);
    CHECK_STATUS(flock_submit_ex(pool, count_task, &n, NULL), FLOCK_OK);
    CHECK_STATUS(flock_submit_lane(pool, 0, noop, NULL), FLOCK_OK);
    CHECK_STATUS(flock_submit_lane_ex(pool, 0, count_task, &n, NULL), FLOCK_OK);
    CHECK_STATUS(flock_submit_batch(pool, 0, count_task, NULL, 0, &accepted), FLOCK_OK);
    CHECK_EQ(accepted, 0);
    void *null_args[3] = {NULL, NULL, NULL};
    CHECK_STATUS(flock_submit_batch(pool, 0, noop, null_args, 3, &accepted), FLOCK_OK);
    CHECK_EQ(accepted, 3);
    flock_pool_free(NULL);
    CHECK_STATUS(flock_wait(pool), FLOCK_OK);
    CHECK_EQ(atomic_load(&n), 2);
    CHECK_STATUS(flock_shutdown(pool, FLOCK_SHUTDOWN_GRACEFUL, NULL), FLOCK_OK);
    flock_pool_free(pool);
}

#define SUBMITTERS 8

typedef struct {
    flock_pool_t *pool;
    atomic_uint_fast64_t *counter;
    uint64_t tasks;
    uint64_t failures;
} submitter_t;

static void *submitter(void *arg) {
    submitter_t *s = arg;
    for (uint64_t i = 0; i < s->tasks; i++)
        if (flock_submit(s->pool, count_task, s->counter) != FLOCK_OK) s->failures++;
    return NULL;
}

static void test_many_threads_exact_counts(void) {
    flock_pool_t *pool = new_pool(4, 65536, FLOCK_WHEN_FULL_BLOCK);
    atomic_uint_fast64_t counter = 0;
    uint64_t per_thread = scaled(100000);
    pthread_t threads[SUBMITTERS];
    submitter_t args[SUBMITTERS];
    for (int i = 0; i < SUBMITTERS; i++) {
        args[i] = (submitter_t){pool, &counter, per_thread, 0};
        CHECK(pthread_create(&threads[i], NULL, submitter, &args[i]) == 0);
    }
    for (int i = 0; i < SUBMITTERS; i++) {
        pthread_join(threads[i], NULL);
        CHECK_EQ(args[i].failures, 0);
    }
    CHECK_STATUS(flock_wait(pool), FLOCK_OK);
    uint64_t total = per_thread * SUBMITTERS;
    CHECK_EQ(atomic_load(&counter), total);

    flock_stats_t s;
    CHECK_STATUS(flock_stats(pool, &s), FLOCK_OK);
    CHECK_EQ(s.submitted, total);
    CHECK_EQ(s.completed, total);
    CHECK_EQ(s.panicked, 0);
    CHECK_EQ(s.rejected, 0);
    CHECK_EQ(s.dropped, 0);
    CHECK_EQ(s.in_flight, 0);
    CHECK_EQ(s.queued, 0);
    CHECK_EQ(s.workers, 4);
    uint64_t executed = 0;
    for (uint32_t i = 0; i < s.workers; i++) {
        flock_worker_stats_t w;
        CHECK_STATUS(flock_worker_stats(pool, i, &w), FLOCK_OK);
        CHECK_EQ(w.index, i);
        CHECK_EQ(w.pinned_core, -1);
        executed += w.executed;
    }
    CHECK_EQ(executed, total);
    flock_pool_free(pool);
}

/* ---- drop callbacks under FLOCK_SHUTDOWN_NOW ---------------------------------------- */

typedef struct {
    atomic_int ran;
    atomic_int dropped;
} slot_t;

static void slot_run(void *arg) { atomic_fetch_add(&((slot_t *)arg)->ran, 1); }
static void slot_drop(void *arg) { atomic_fetch_add(&((slot_t *)arg)->dropped, 1); }

typedef struct {
    flock_pool_t *pool;
    gate_t *gate;
    slot_t probe;
} opener_t;

/* Opens the gate once the pool refuses submits, i.e. once FLOCK_SHUTDOWN_NOW has begun: every
 * task queued behind the gate is then certain to be discarded, not run. */
static void *open_after_shutdown_began(void *arg) {
    opener_t *o = arg;
    while (flock_submit_ex(o->pool, slot_run, &o->probe, slot_drop) == FLOCK_OK) sleep_ms(1);
    atomic_store(&o->gate->open, 1);
    return NULL;
}

static void test_submit_ex_drop_once_under_shutdown_now(void) {
    flock_pool_t *pool = new_pool(1, 1 << 20, FLOCK_WHEN_FULL_BLOCK);
    gate_t gate = {0, 0};
    CHECK_STATUS(flock_submit(pool, gate_task, &gate), FLOCK_OK);
    gate_wait_started(&gate);

    enum { K = 1000 };
    static slot_t slots[K];
    memset(slots, 0, sizeof slots);
    for (int i = 0; i < K; i++) CHECK_STATUS(flock_submit_ex(pool, slot_run, &slots[i], slot_drop), FLOCK_OK);

    opener_t opener = {pool, &gate, {0, 0}};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, open_after_shutdown_began, &opener) == 0);
    uint64_t dropped = 12345;
    CHECK_STATUS(flock_shutdown(pool, FLOCK_SHUTDOWN_NOW, &dropped), FLOCK_OK);
    pthread_join(t, NULL);

    for (int i = 0; i < K; i++) {
        CHECK_EQ(atomic_load(&slots[i].ran), 0);
        CHECK_EQ(atomic_load(&slots[i].dropped), 1);
    }
    /* Probes accepted before the shutdown began were discarded too. */
    int probes = atomic_load(&opener.probe.dropped);
    CHECK_EQ(atomic_load(&opener.probe.ran), 0);
    CHECK_EQ(dropped, (uint64_t)(K + probes));

    flock_stats_t s;
    CHECK_STATUS(flock_stats(pool, &s), FLOCK_OK);
    CHECK_EQ(s.dropped, (uint64_t)(K + probes));
    CHECK_EQ(s.completed, 1); /* the gate */
    CHECK_EQ(s.submitted, (uint64_t)(1 + K + probes));
    CHECK_EQ(s.rejected_shutdown, 1); /* the opener's last probe */
    CHECK_EQ(s.in_flight, 0);

    /* After shutdown: refused, drop not called, the caller keeps arg. */
    slot_t late = {0, 0};
    CHECK_STATUS(flock_submit_ex(pool, slot_run, &late, slot_drop), FLOCK_ERR_SHUTDOWN);
    CHECK_EQ(atomic_load(&late.ran) + atomic_load(&late.dropped), 0);
    /* A second shutdown is fine and reports the same total. */
    dropped = 0;
    CHECK_STATUS(flock_shutdown(pool, FLOCK_SHUTDOWN_NOW, &dropped), FLOCK_OK);
    CHECK_EQ(dropped, (uint64_t)(K + probes));
    flock_pool_free(pool);
    /* Freeing never calls drop again. */
    for (int i = 0; i < K; i++) CHECK_EQ(atomic_load(&slots[i].dropped), 1);
}

/* ---- worker start/stop hooks ------------------------------------------------------------ */

#define HOOK_MAX_WORKERS 8

typedef struct {
    atomic_int started[HOOK_MAX_WORKERS];
    atomic_int stopped[HOOK_MAX_WORKERS];
    atomic_int bad_index;
    atomic_int wrong_thread; /* a task saw another index in its thread's hook state */
    atomic_int ran;
} hooks_t;

/* Set by on_worker_start on the worker's own thread; tasks read it. */
static _Thread_local int hook_index = -1;
static _Thread_local hooks_t *hook_owner;

static void hook_start(void *arg, uint32_t worker) {
    hooks_t *h = arg;
    if (worker >= HOOK_MAX_WORKERS || flock_current_worker() != (int32_t)worker) {
        atomic_fetch_add(&h->bad_index, 1);
        return;
    }
    hook_index = (int)worker;
    hook_owner = h;
    atomic_fetch_add(&h->started[worker], 1);
}

static void hook_stop(void *arg, uint32_t worker) {
    hooks_t *h = arg;
    if (worker >= HOOK_MAX_WORKERS || hook_owner != h || hook_index != (int)worker) {
        atomic_fetch_add(&h->bad_index, 1);
        return;
    }
    atomic_fetch_add(&h->stopped[worker], 1);
}

static void hook_task(void *arg) {
    hooks_t *h = arg;
    /* The worker's start hook has run on this thread before any of its tasks. */
    int32_t w = flock_current_worker();
    if (w >= 0 && (hook_owner != h || hook_index != w)) atomic_fetch_add(&h->wrong_thread, 1);
    atomic_fetch_add(&h->ran, 1);
}

static flock_pool_t *new_hooked_pool(hooks_t *h, uint32_t workers) {
    flock_config_t cfg;
    flock_config_init(&cfg);
    cfg.workers = workers;
    cfg.max_workers = HOOK_MAX_WORKERS;
    cfg.on_worker_start = hook_start;
    cfg.on_worker_stop = hook_stop;
    cfg.worker_hook_arg = h;
    flock_pool_t *pool = NULL;
    CHECK_STATUS(flock_pool_new(&cfg, &pool), FLOCK_OK);
    return pool;
}

static void test_worker_hooks(void) {
    static hooks_t h;
    memset(&h, 0, sizeof h);
    flock_pool_t *pool = new_hooked_pool(&h, 2);
    if (!pool) return;
    int n = (int)scaled(2000);
    for (int i = 0; i < n; i++) CHECK_STATUS(flock_submit(pool, hook_task, &h), FLOCK_OK);
    CHECK_STATUS(flock_wait(pool), FLOCK_OK);
    /* Grow to 4, shrink to 1, grow to 3: workers 1 and 2 stop and start again. */
    CHECK_STATUS(flock_resize(pool, 4), FLOCK_OK);
    for (int i = 0; i < n; i++) CHECK_STATUS(flock_submit(pool, hook_task, &h), FLOCK_OK);
    CHECK_STATUS(flock_wait(pool), FLOCK_OK);
    CHECK_STATUS(flock_resize(pool, 1), FLOCK_OK);
    CHECK_STATUS(flock_resize(pool, 3), FLOCK_OK);
    for (int i = 0; i < n; i++) CHECK_STATUS(flock_submit(pool, hook_task, &h), FLOCK_OK);
    CHECK_STATUS(flock_shutdown(pool, FLOCK_SHUTDOWN_GRACEFUL, NULL), FLOCK_OK);
    /* Every start has had its stop by the time the shutdown returns. */
    int starts = 0;
    for (int w = 0; w < HOOK_MAX_WORKERS; w++) {
        CHECK_EQ(atomic_load(&h.stopped[w]), atomic_load(&h.started[w]));
        starts += atomic_load(&h.started[w]);
    }
    CHECK_EQ(atomic_load(&h.started[0]), 1);
    CHECK(atomic_load(&h.started[1]) >= 1 && atomic_load(&h.started[1]) <= 3);
    CHECK_EQ(atomic_load(&h.started[3]), 1);
    for (int w = 4; w < HOOK_MAX_WORKERS; w++) CHECK_EQ(atomic_load(&h.started[w]), 0);
    CHECK(starts >= 4);
    CHECK_EQ(atomic_load(&h.bad_index), 0);
    CHECK_EQ(atomic_load(&h.wrong_thread), 0);
    CHECK_EQ(atomic_load(&h.ran), 3 * n);
    flock_pool_free(pool);
    /* Nothing is called after the pool is gone. */
    int stops = 0;
    for (int w = 0; w < HOOK_MAX_WORKERS; w++) stops += atomic_load(&h.stopped[w]);
    CHECK_EQ(stops, starts);

    /* Only one of the two, and flock_pool_free as the shutdown. */
    memset(&h, 0, sizeof h);
    flock_config_t cfg;
    flock_config_init(&cfg);
    CHECK(cfg.on_worker_start == NULL && cfg.on_worker_stop == NULL && cfg.worker_hook_arg == NULL);
    cfg.workers = 3;
    cfg.on_worker_stop = hook_stop; /* no start hook: hook_owner stays unset, so stop counts it bad */
    cfg.worker_hook_arg = &h;
    flock_pool_t *p2 = NULL;
    CHECK_STATUS(flock_pool_new(&cfg, &p2), FLOCK_OK);
    flock_pool_free(p2);
    CHECK_EQ(atomic_load(&h.bad_index), 3);
}

/* ---- every error path leaves the argument with the caller ------------------------------ */

/* Counts its calls, so that a drop callback run on an error path shows up (a no-op callback
 * hides it; a caller that frees arg itself after an error would then free twice). */
static atomic_int owned_drops;
static void owned_drop(void *arg) {
    (void)arg;
    atomic_fetch_add(&owned_drops, 1);
}

static void test_error_paths_keep_ownership(void) {
    atomic_store(&owned_drops, 0);
    slot_t s = {0, 0};
    /* NULL pool and NULL task, on every call taking a drop callback. */
    CHECK_STATUS(flock_submit_ex(NULL, slot_run, &s, owned_drop), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_submit_lane_ex(NULL, 0, slot_run, &s, owned_drop), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_submit_ex(NULL, NULL, &s, owned_drop), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_submit_lane_ex(NULL, 0, NULL, &s, owned_drop), FLOCK_ERR_NULL);
    CHECK_EQ(atomic_load(&owned_drops), 0);

    flock_pool_t *pool = new_pool(1, 1, FLOCK_WHEN_FULL_REJECT);
    CHECK_STATUS(flock_submit_ex(pool, NULL, &s, owned_drop), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_submit_lane_ex(pool, 0, NULL, &s, owned_drop), FLOCK_ERR_NULL);
    /* An unknown lane. */
    CHECK_STATUS(flock_submit_lane_ex(pool, 5, slot_run, &s, owned_drop), FLOCK_ERR_UNKNOWN_LANE);
    /* A forced panic inside the call. */
    flock_test_panic_next_call();
    CHECK_STATUS(flock_submit_ex(pool, slot_run, &s, owned_drop), FLOCK_ERR_PANIC);
    flock_test_panic_next_call();
    CHECK_STATUS(flock_submit_lane_ex(pool, 0, slot_run, &s, owned_drop), FLOCK_ERR_PANIC);
    /* A full queue: the gate holds the worker, one task fills the queue of capacity 1. */
    gate_t gate = {0, 0};
    CHECK_STATUS(flock_submit(pool, gate_task, &gate), FLOCK_OK);
    gate_wait_started(&gate);
    CHECK_STATUS(flock_submit(pool, noop, NULL), FLOCK_OK);
    CHECK_STATUS(flock_submit_ex(pool, slot_run, &s, owned_drop), FLOCK_ERR_FULL);
    CHECK_STATUS(flock_submit_lane_ex(pool, 0, slot_run, &s, owned_drop), FLOCK_ERR_FULL);
    atomic_store(&gate.open, 1);
    CHECK_STATUS(flock_wait(pool), FLOCK_OK);
    /* After shutdown. */
    CHECK_STATUS(flock_shutdown(pool, FLOCK_SHUTDOWN_GRACEFUL, NULL), FLOCK_OK);
    CHECK_STATUS(flock_submit_ex(pool, slot_run, &s, owned_drop), FLOCK_ERR_SHUTDOWN);
    CHECK_STATUS(flock_submit_lane_ex(pool, 0, slot_run, &s, owned_drop), FLOCK_ERR_SHUTDOWN);
    flock_pool_free(pool);

    CHECK_EQ(atomic_load(&owned_drops), 0);
    CHECK_EQ(atomic_load(&s.ran), 0);
}

/* ---- waiting from inside a task ----------------------------------------------------- */

typedef struct {
    flock_pool_t *pool;
    flock_status_t wait, wait_timeout, shutdown;
    int32_t worker;
} inside_t;

static void wait_inside(void *arg) {
    inside_t *in = arg;
    in->wait = flock_wait(in->pool);
    in->wait_timeout = flock_wait_timeout(in->pool, 1000000000ull);
    in->shutdown = flock_shutdown(in->pool, FLOCK_SHUTDOWN_GRACEFUL, NULL);
    in->worker = flock_current_worker();
}

static void test_wait_inside_task_would_deadlock(void) {
    flock_pool_t *pool = new_pool(2, 1024, FLOCK_WHEN_FULL_BLOCK);
    inside_t in = {pool, FLOCK_OK, FLOCK_OK, FLOCK_OK, -7};
    CHECK_STATUS(flock_submit(pool, wait_inside, &in), FLOCK_OK);
    CHECK_STATUS(flock_wait(pool), FLOCK_OK);
    CHECK_STATUS(in.wait, FLOCK_ERR_WOULD_DEADLOCK);
    CHECK_STATUS(in.wait_timeout, FLOCK_ERR_WOULD_DEADLOCK);
    CHECK_STATUS(in.shutdown, FLOCK_ERR_WOULD_DEADLOCK);
    CHECK(in.worker == 0 || in.worker == 1);
    CHECK_EQ(flock_current_worker(), -1);
    /* Nothing changed: the pool still takes tasks. */
    atomic_uint_fast64_t n = 0;
    CHECK_STATUS(flock_submit(pool, count_task, &n), FLOCK_OK);
    CHECK_STATUS(flock_wait(pool), FLOCK_OK);
    CHECK_EQ(atomic_load(&n), 1);
    flock_pool_free(pool);
}

/* ---- backpressure ------------------------------------------------------------------- */

static void test_reject_when_full(void) {
    flock_pool_t *pool = new_pool(1, 4, FLOCK_WHEN_FULL_REJECT);
    gate_t gate = {0, 0};
    CHECK_STATUS(flock_submit(pool, gate_task, &gate), FLOCK_OK);
    gate_wait_started(&gate);
    slot_t slots[5];
    memset(slots, 0, sizeof slots);
    for (int i = 0; i < 4; i++) CHECK_STATUS(flock_submit_ex(pool, slot_run, &slots[i], slot_drop), FLOCK_OK);
    CHECK_STATUS(flock_submit_ex(pool, slot_run, &slots[4], slot_drop), FLOCK_ERR_FULL);
    atomic_store(&gate.open, 1);
    CHECK_STATUS(flock_wait(pool), FLOCK_OK);
    for (int i = 0; i < 4; i++) {
        CHECK_EQ(atomic_load(&slots[i].ran), 1);
        CHECK_EQ(atomic_load(&slots[i].dropped), 0);
    }
    /* The refused task: neither run nor dropped; the caller still owns it. */
    CHECK_EQ(atomic_load(&slots[4].ran) + atomic_load(&slots[4].dropped), 0);
    flock_stats_t s;
    CHECK_STATUS(flock_stats(pool, &s), FLOCK_OK);
    CHECK_EQ(s.submitted, 5);
    CHECK_EQ(s.completed, 5);
    CHECK_EQ(s.rejected, 1);
    CHECK_EQ(s.rejected_full, 1);
    CHECK_EQ(s.capacity, 4);
    flock_pool_free(pool);
}

static void test_block_timeout(void) {
    flock_config_t cfg;
    flock_config_init(&cfg);
    cfg.workers = 1;
    cfg.capacity = 1;
    cfg.when_full = FLOCK_WHEN_FULL_BLOCK;
    cfg.block_timeout_ns = 20 * 1000 * 1000;
    flock_pool_t *pool = NULL;
    CHECK_STATUS(flock_pool_new(&cfg, &pool), FLOCK_OK);
    gate_t gate = {0, 0};
    CHECK_STATUS(flock_submit(pool, gate_task, &gate), FLOCK_OK);
    gate_wait_started(&gate);
    atomic_uint_fast64_t n = 0;
    CHECK_STATUS(flock_submit(pool, count_task, &n), FLOCK_OK);
    CHECK_STATUS(flock_submit(pool, count_task, &n), FLOCK_ERR_TIMEOUT);
    CHECK_STATUS(flock_wait_timeout(pool, 10 * 1000 * 1000), FLOCK_ERR_TIMEOUT);
    atomic_store(&gate.open, 1);
    CHECK_STATUS(flock_wait_timeout(pool, 30ull * 1000 * 1000 * 1000), FLOCK_OK);
    CHECK_EQ(atomic_load(&n), 1);
    flock_stats_t s;
    CHECK_STATUS(flock_stats(pool, &s), FLOCK_OK);
    CHECK_EQ(s.rejected_timeout, 1);
    CHECK_EQ(s.completed, 2);
    flock_pool_free(pool);
}

typedef struct {
    atomic_int ran;
    int32_t worker;
} where_t;

static void record_worker(void *arg) {
    where_t *w = arg;
    w->worker = flock_current_worker();
    atomic_store(&w->ran, 1);
}

static void test_caller_runs_and_spawn_thread(void) {
    flock_when_full_t policies[2] = {FLOCK_WHEN_FULL_CALLER_RUNS, FLOCK_WHEN_FULL_SPAWN_THREAD};
    for (int p = 0; p < 2; p++) {
        flock_pool_t *pool = new_pool(1, 1, policies[p]);
        gate_t gate = {0, 0};
        CHECK_STATUS(flock_submit(pool, gate_task, &gate), FLOCK_OK);
        gate_wait_started(&gate);
        atomic_uint_fast64_t n = 0;
        CHECK_STATUS(flock_submit(pool, count_task, &n), FLOCK_OK); /* fills the queue */
        where_t w = {0, -7};
        CHECK_STATUS(flock_submit(pool, record_worker, &w), FLOCK_OK);
        if (policies[p] == FLOCK_WHEN_FULL_CALLER_RUNS) CHECK_EQ(atomic_load(&w.ran), 1); /* inline */
        atomic_store(&gate.open, 1);
        CHECK_STATUS(flock_wait(pool), FLOCK_OK);
        CHECK_EQ(atomic_load(&w.ran), 1);
        CHECK_EQ(w.worker, -1); /* neither the caller nor a helper thread is a worker */
        flock_stats_t s;
        CHECK_STATUS(flock_stats(pool, &s), FLOCK_OK);
        CHECK_EQ(s.completed, 3);
        CHECK_EQ(s.caller_runs, p == 0 ? 1 : 0);
        CHECK_EQ(s.spawned_thread, p == 1 ? 1 : 0);
        flock_pool_free(pool);
    }
}

/* ---- tasks submitting tasks ---------------------------------------------------------- */

typedef struct {
    flock_pool_t *pool;
    atomic_uint_fast64_t children;
    atomic_int bad_status;
} parent_t;

static void child_task(void *arg) { atomic_fetch_add(&((parent_t *)arg)->children, 1); }

static void parent_task(void *arg) {
    parent_t *p = arg;
    for (int i = 0; i < 100; i++)
        if (flock_submit(p->pool, child_task, p) != FLOCK_OK) atomic_fetch_add(&p->bad_status, 1);
}

static void test_nested_submit(void) {
    /* Capacity 1 and REJECT: a task's own submits are never refused. */
    flock_pool_t *pool = new_pool(2, 1, FLOCK_WHEN_FULL_REJECT);
    parent_t p = {pool, 0, 0};
    CHECK_STATUS(flock_submit(pool, parent_task, &p), FLOCK_OK);
    CHECK_STATUS(flock_wait(pool), FLOCK_OK);
    CHECK_EQ(atomic_load(&p.children), 100);
    CHECK_EQ(atomic_load(&p.bad_status), 0);
    flock_stats_t s;
    CHECK_STATUS(flock_stats(pool, &s), FLOCK_OK);
    CHECK_EQ(s.submitted, 101);
    CHECK_EQ(s.completed, 101);
    CHECK_EQ(s.rejected, 0);
    CHECK_EQ(s.local_pushes, 100);
    flock_pool_free(pool);
}

/* ---- shutdown ------------------------------------------------------------------------ */

static void test_graceful_shutdown(void) {
    flock_pool_t *pool = new_pool(2, 1 << 20, FLOCK_WHEN_FULL_BLOCK);
    atomic_uint_fast64_t n = 0;
    uint64_t tasks = scaled(10000);
    for (uint64_t i = 0; i < tasks; i++) CHECK_STATUS(flock_submit(pool, count_task, &n), FLOCK_OK);
    CHECK_STATUS(flock_shutdown(pool, (flock_shutdown_mode_t)7, NULL), FLOCK_ERR_INVALID_ARGUMENT);
    uint64_t dropped = 99;
    CHECK_STATUS(flock_shutdown(pool, FLOCK_SHUTDOWN_GRACEFUL, &dropped), FLOCK_OK);
    CHECK_EQ(dropped, 0);
    CHECK_EQ(atomic_load(&n), tasks); /* every accepted task ran before shutdown returned */
    CHECK_STATUS(flock_submit(pool, count_task, &n), FLOCK_ERR_SHUTDOWN);
    CHECK_STATUS(flock_wait(pool), FLOCK_OK);
    CHECK_STATUS(flock_wait_timeout(pool, 0), FLOCK_OK);
    CHECK_STATUS(flock_shutdown(pool, FLOCK_SHUTDOWN_GRACEFUL, NULL), FLOCK_OK);
    flock_stats_t s;
    CHECK_STATUS(flock_stats(pool, &s), FLOCK_OK);
    CHECK_EQ(s.completed, tasks);
    CHECK_EQ(s.rejected_shutdown, 1);
    for (uint32_t i = 0; i < 2; i++) {
        flock_worker_stats_t w;
        CHECK_STATUS(flock_worker_stats(pool, i, &w), FLOCK_OK);
        CHECK_EQ(w.state, FLOCK_WORKER_STOPPED);
    }
    flock_pool_free(pool);
    CHECK_EQ(atomic_load(&n), tasks);
}

/* free is graceful: every accepted task runs before it returns. */
static void test_free_is_graceful(void) {
    flock_pool_t *pool = new_pool(2, 1 << 20, FLOCK_WHEN_FULL_BLOCK);
    atomic_uint_fast64_t n = 0;
    uint64_t tasks = scaled(10000);
    for (uint64_t i = 0; i < tasks; i++) CHECK_STATUS(flock_submit(pool, count_task, &n), FLOCK_OK);
    flock_pool_free(pool);
    CHECK_EQ(atomic_load(&n), tasks);
}

typedef struct {
    flock_pool_t *pool;
    atomic_int freed;
} freer_t;

static void free_inside(void *arg) {
    freer_t *f = arg;
    flock_pool_free(f->pool); /* closes without joining, returns at once */
    atomic_store(&f->freed, 1);
}

static void test_free_inside_own_task(void) {
    freer_t f = {new_pool(2, 64, FLOCK_WHEN_FULL_BLOCK), 0};
    CHECK_STATUS(flock_submit(f.pool, free_inside, &f), FLOCK_OK);
    while (!atomic_load(&f.freed)) sleep_ms(1);
    sleep_ms(50); /* let the detached workers exit */
}

/* ---- stats details ------------------------------------------------------------------- */

static void test_worker_stats_and_current_worker(void) {
    flock_pool_t *pool = new_pool(2, 1024, FLOCK_WHEN_FULL_BLOCK);
    CHECK_EQ(flock_current_worker(), -1);
    where_t w = {0, -7};
    CHECK_STATUS(flock_submit(pool, record_worker, &w), FLOCK_OK);
    CHECK_STATUS(flock_wait(pool), FLOCK_OK);
    CHECK(w.worker == 0 || w.worker == 1);
    flock_worker_stats_t ws, pattern;
    memset(&ws, 0xCD, sizeof ws);
    memcpy(&pattern, &ws, sizeof ws);
    CHECK_STATUS(flock_worker_stats(pool, 2, &ws), FLOCK_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(flock_worker_stats(pool, UINT32_MAX, &ws), FLOCK_ERR_INVALID_ARGUMENT);
    CHECK(memcmp(&ws, &pattern, sizeof ws) == 0);
    CHECK_STATUS(flock_worker_stats(pool, (uint32_t)w.worker, &ws), FLOCK_OK);
    CHECK_EQ(ws.index, (uint32_t)w.worker);
    CHECK_EQ(ws.executed, 1);
    CHECK_EQ(ws.panicked, 0);
    CHECK(ws.state <= FLOCK_WORKER_STOPPED);
    flock_pool_free(pool);
}

static void test_latency(void) {
    flock_config_t cfg;
    flock_config_init(&cfg);
    cfg.workers = 2;
    cfg.track_latency = true;
    cfg.fifo = true;
    cfg.spin_limit = 0;
    flock_pool_t *pool = NULL;
    CHECK_STATUS(flock_pool_new(&cfg, &pool), FLOCK_OK);
    atomic_uint_fast64_t n = 0;
    for (int i = 0; i < 100; i++) CHECK_STATUS(flock_submit(pool, count_task, &n), FLOCK_OK);
    CHECK_STATUS(flock_wait(pool), FLOCK_OK);
    flock_stats_t s;
    CHECK_STATUS(flock_stats(pool, &s), FLOCK_OK);
    CHECK(s.track_latency);
    CHECK_EQ(s.run_time.count, 100);
    CHECK_EQ(s.queue_wait.count, 100);
    CHECK(s.run_time.max_ns >= s.run_time.p50_ns || s.run_time.p50_ns > 0);
    CHECK(s.uptime_ns > 0);
    flock_pool_free(pool);

    /* Without track_latency the figures are zero. */
    pool = new_pool(1, 16, FLOCK_WHEN_FULL_BLOCK);
    CHECK_STATUS(flock_stats(pool, &s), FLOCK_OK);
    CHECK(!s.track_latency);
    CHECK_EQ(s.run_time.count, 0);
    flock_pool_free(pool);
}

/* ---- lanes ----------------------------------------------------------------------------- */

static flock_pool_t *new_lane_pool(uint32_t workers, const flock_lane_t *lanes, uint32_t count) {
    flock_config_t cfg;
    flock_config_init(&cfg);
    cfg.workers = workers;
    cfg.lanes = lanes;
    cfg.lane_count = count;
    flock_pool_t *pool = NULL;
    flock_status_t st = flock_pool_new(&cfg, &pool);
    if (st != FLOCK_OK) {
        fprintf(stderr, "  flock_pool_new: %s\n", flock_status_str(st));
        abort();
    }
    return pool;
}

typedef struct {
    flock_pool_t *pool;
    atomic_uint_fast64_t *counter;
    atomic_int bad_status;
} spawner_t;

/* Submits ten children with plain flock_submit: they inherit this task's lane. */
static void spawn_children(void *arg) {
    spawner_t *sp = arg;
    for (int i = 0; i < 10; i++)
        if (flock_submit(sp->pool, count_task, sp->counter) != FLOCK_OK) atomic_fetch_add(&sp->bad_status, 1);
}

static void test_lane_submit_and_stats(void) {
    /* The names live in a buffer overwritten after flock_pool_new: the pool keeps copies. */
    char hi[8], lo[8];
    strcpy(hi, "hi");
    strcpy(lo, "lo");
    flock_lane_t lanes[2] = {{hi, 4}, {lo, 1}};
    flock_pool_t *pool = new_lane_pool(2, lanes, 2);
    strcpy(hi, "XX");
    strcpy(lo, "YY");
    lanes[0].weight = lanes[1].weight = 99;

    uint32_t ihi = 9, ilo = 9;
    CHECK_STATUS(flock_lane_index(pool, "hi", &ihi), FLOCK_OK);
    CHECK_STATUS(flock_lane_index(pool, "lo", &ilo), FLOCK_OK);
    CHECK_EQ(ihi, 0);
    CHECK_EQ(ilo, 1);

    atomic_uint_fast64_t n_hi = 0, n_lo = 0, n_default = 0;
    enum { PER_LANE = 300 };
    for (int i = 0; i < PER_LANE; i++) {
        CHECK_STATUS(flock_submit_lane(pool, ihi, count_task, &n_hi), FLOCK_OK);
        CHECK_STATUS(flock_submit_lane_ex(pool, ilo, count_task, &n_lo, noop), FLOCK_OK);
    }
    for (int i = 0; i < 5; i++) CHECK_STATUS(flock_submit(pool, count_task, &n_default), FLOCK_OK); /* lane 0 */
    spawner_t sp = {pool, &n_lo, 0};
    CHECK_STATUS(flock_submit_lane(pool, ilo, spawn_children, &sp), FLOCK_OK); /* 1 + 10 in "lo" */
    CHECK_STATUS(flock_wait(pool), FLOCK_OK);
    CHECK_EQ(atomic_load(&n_hi), PER_LANE);
    CHECK_EQ(atomic_load(&n_lo), PER_LANE + 10);
    CHECK_EQ(atomic_load(&n_default), 5);
    CHECK_EQ(atomic_load(&sp.bad_status), 0);

    flock_lane_stats_t l;
    CHECK_STATUS(flock_lane_stats(pool, ihi, &l), FLOCK_OK);
    CHECK(strcmp(l.name, "hi") == 0);
    CHECK_EQ(l.weight, 4);
    CHECK_EQ(l.submitted, PER_LANE + 5);
    CHECK_EQ(l.executed, PER_LANE + 5);
    CHECK_EQ(l.queued, 0);
    CHECK(l.has_busy); /* measured with more than one lane */
    CHECK_STATUS(flock_lane_stats(pool, ilo, &l), FLOCK_OK);
    CHECK(strcmp(l.name, "lo") == 0);
    CHECK_EQ(l.weight, 1);
    CHECK_EQ(l.submitted, PER_LANE + 11);
    CHECK_EQ(l.executed, PER_LANE + 11);
    CHECK_EQ(l.queued, 0);
    CHECK(l.has_busy);

    flock_stats_t s;
    CHECK_STATUS(flock_stats(pool, &s), FLOCK_OK);
    CHECK_EQ(s.lane_count, 2);
    CHECK_EQ(s.submitted, 2 * PER_LANE + 5 + 11);
    CHECK_EQ(s.completed, 2 * PER_LANE + 5 + 11);
    CHECK_EQ(s.local_pushes, 10);

    /* The snapshot is a copy: it outlives the pool. */
    flock_pool_free(pool);
    CHECK(strcmp(l.name, "lo") == 0);
}

typedef struct {
    flock_pool_t *pool;
    uint32_t hi;
    atomic_int hi_worker;  /* where the hi task ran; -2 until it ran */
    int lo_worker;
    size_t yielded;
    int hi_ran_first;
    atomic_int bad_status;
} yielder_t;

static void yield_hi(void *arg) {
    yielder_t *y = arg;
    atomic_store(&y->hi_worker, flock_current_worker());
}

/* A long "lo" task: queues a "hi" task on its own worker, then yields until it ran. */
static void yield_lo(void *arg) {
    yielder_t *y = arg;
    y->lo_worker = flock_current_worker();
    if (flock_submit_lane(y->pool, y->hi, yield_hi, y) != FLOCK_OK) atomic_fetch_add(&y->bad_status, 1);
    while (atomic_load(&y->hi_worker) == -2) y->yielded += flock_yield_to_lanes();
    y->hi_ran_first = 1; /* still inside the lo task */
}

static void test_yield_to_lanes(void) {
    CHECK_EQ(flock_yield_to_lanes(), 0); /* not a worker */
    flock_lane_t lanes[2] = {{"hi", 8}, {"lo", 1}};
    flock_pool_t *pool = new_lane_pool(1, lanes, 2);
    yielder_t y = {pool, 0, -2, -1, 0, 0, 0};
    CHECK_STATUS(flock_submit_lane(pool, 1, yield_lo, &y), FLOCK_OK);
    CHECK_STATUS(flock_wait(pool), FLOCK_OK);
    CHECK_EQ(atomic_load(&y.bad_status), 0);
    CHECK_EQ(y.yielded, 1);
    CHECK(y.hi_ran_first);
    CHECK_EQ(atomic_load(&y.hi_worker), y.lo_worker); /* inside the lo task, on its thread */
    flock_lane_stats_t l;
    CHECK_STATUS(flock_lane_stats(pool, 0, &l), FLOCK_OK);
    CHECK_EQ(l.executed, 1);
    CHECK_STATUS(flock_lane_stats(pool, 1, &l), FLOCK_OK);
    CHECK_EQ(l.executed, 1);
    flock_pool_free(pool);
}

typedef struct {
    flock_pool_t *pool;
    atomic_int lo_started;
    atomic_int hi_worker; /* where the hi task ran; -2 until it ran */
    int hi_before_lo_ended;
} reserved_t;

static void reserve_hi(void *arg) {
    reserved_t *r = arg;
    atomic_store(&r->hi_worker, flock_current_worker());
}

/* A "lo" task holding the only worker until the "hi" task ran, or for 200 ms at most. */
static void reserve_lo(void *arg) {
    reserved_t *r = arg;
    atomic_store(&r->lo_started, 1);
    for (int i = 0; i < 200 && atomic_load(&r->hi_worker) == -2; i++) sleep_ms(1);
    r->hi_before_lo_ended = atomic_load(&r->hi_worker) != -2;
}

/* With the only worker in a "lo" task, a "hi" task submitted from outside runs at once on the
 * lane reserve (flock_current_worker() == -1 there), counted in reserve_runs; with
 * lane_reserve false it waits for the worker. */
static void test_lane_reserve(void) {
    flock_lane_t lanes[2] = {{"hi", 8}, {"lo", 1}};
    for (int on = 1; on >= 0; on--) {
        flock_config_t cfg;
        flock_config_init(&cfg);
        CHECK(cfg.lane_reserve);
        cfg.workers = 1;
        cfg.lanes = lanes;
        cfg.lane_count = 2;
        cfg.lane_reserve = on;
        flock_pool_t *pool = NULL;
        CHECK_STATUS(flock_pool_new(&cfg, &pool), FLOCK_OK);
        reserved_t r = {pool, 0, -2, 0};
        CHECK_STATUS(flock_submit_lane(pool, 1, reserve_lo, &r), FLOCK_OK);
        while (!atomic_load(&r.lo_started)) sleep_ms(1);
        CHECK_STATUS(flock_submit_lane(pool, 0, reserve_hi, &r), FLOCK_OK);
        CHECK_STATUS(flock_wait(pool), FLOCK_OK);
        flock_stats_t s;
        CHECK_STATUS(flock_stats(pool, &s), FLOCK_OK);
        CHECK_EQ(s.completed, 2);
        if (on) {
            CHECK(r.hi_before_lo_ended);
            CHECK_EQ(atomic_load(&r.hi_worker), -1);
            CHECK_EQ(s.reserve_runs, 1);
        } else {
            CHECK(!r.hi_before_lo_ended);
            CHECK_EQ(atomic_load(&r.hi_worker), 0);
            CHECK_EQ(s.reserve_runs, 0);
        }
        flock_pool_free(pool);
    }
}

typedef struct {
    flock_pool_t *pool;
    atomic_int inner_ran;
} pushed_t;

static void mark_inner(void *arg) { atomic_store(&((pushed_t *)arg)->inner_ran, 1); }

/* Submits a task to its own pool (onto this worker's deque), then blocks until another worker
 * ran it: the other worker, parked, must see the push. */
static void push_then_block(void *arg) {
    pushed_t *p = arg;
    CHECK_STATUS(flock_submit(p->pool, mark_inner, p), FLOCK_OK);
    while (!atomic_load(&p->inner_ran)) sched_yield();
}

/* flock_config_t.membarrier: on by default; false gives a pool that fences its pushes
 * (flock_uses_membarrier says false), and either way a task that blocks on what it pushed
 * gets it run by the other worker. */
static void test_membarrier(void) {
    for (int on = 1; on >= 0; on--) {
        flock_config_t cfg;
        flock_config_init(&cfg);
        CHECK(cfg.membarrier);
        cfg.workers = 2;
        cfg.spin_limit = 0;
        cfg.membarrier = on;
        flock_pool_t *pool = NULL;
        CHECK_STATUS(flock_pool_new(&cfg, &pool), FLOCK_OK);
        bool uses = !on;
        CHECK_STATUS(flock_uses_membarrier(pool, &uses), FLOCK_OK);
        if (!on) CHECK(!uses);
        CHECK_STATUS(flock_uses_membarrier(NULL, &uses), FLOCK_ERR_NULL);
        CHECK_STATUS(flock_uses_membarrier(pool, NULL), FLOCK_ERR_NULL);
        for (int i = 0; i < 500; i++) {
            pushed_t p = {pool, 0};
            CHECK_STATUS(flock_submit(pool, push_then_block, &p), FLOCK_OK);
            CHECK_STATUS(flock_wait(pool), FLOCK_OK);
            CHECK(atomic_load(&p.inner_ran));
        }
        flock_pool_free(pool);
    }
}

static void test_unknown_lane(void) {
    flock_lane_t lanes[2] = {{"a", 1}, {"b", 1}};
    flock_pool_t *pool = new_lane_pool(1, lanes, 2);
    slot_t slot = {0, 0};
    CHECK_STATUS(flock_submit_lane(pool, 2, slot_run, &slot), FLOCK_ERR_UNKNOWN_LANE);
    CHECK_STATUS(flock_submit_lane(pool, UINT32_MAX, slot_run, &slot), FLOCK_ERR_UNKNOWN_LANE);
    CHECK_STATUS(flock_submit_lane_ex(pool, 2, slot_run, &slot, slot_drop), FLOCK_ERR_UNKNOWN_LANE);

    uint32_t idx = 77;
    CHECK_STATUS(flock_lane_index(pool, "c", &idx), FLOCK_ERR_UNKNOWN_LANE);
    CHECK_STATUS(flock_lane_index(pool, "", &idx), FLOCK_ERR_UNKNOWN_LANE);
    CHECK_STATUS(flock_lane_index(pool, "default", &idx), FLOCK_ERR_UNKNOWN_LANE); /* replaced */
    CHECK_STATUS(flock_lane_index(pool, "\xff", &idx), FLOCK_ERR_UNKNOWN_LANE);   /* not UTF-8 */
    CHECK_EQ(idx, 77);

    flock_lane_stats_t l, pattern;
    memset(&l, 0xCD, sizeof l);
    memcpy(&pattern, &l, sizeof l);
    CHECK_STATUS(flock_lane_stats(pool, 2, &l), FLOCK_ERR_UNKNOWN_LANE);
    CHECK(memcmp(&l, &pattern, sizeof l) == 0);

    void *args[3] = {&slot, &slot, &slot};
    size_t accepted = 77;
    CHECK_STATUS(flock_submit_batch(pool, 5, slot_run, args, 3, &accepted), FLOCK_ERR_UNKNOWN_LANE);
    CHECK_EQ(accepted, 0);

    CHECK_STATUS(flock_wait(pool), FLOCK_OK);
    /* Nothing ran, nothing was dropped, nothing was accepted; every refusal is counted, an
       unknown lane's too: three single submits and a batch of three. */
    CHECK_EQ(atomic_load(&slot.ran), 0);
    CHECK_EQ(atomic_load(&slot.dropped), 0);
    flock_stats_t s;
    CHECK_STATUS(flock_stats(pool, &s), FLOCK_OK);
    CHECK_EQ(s.submitted, 0);
    CHECK_EQ(s.rejected, 6);
    flock_pool_free(pool);
    CHECK_EQ(atomic_load(&slot.dropped), 0);
}

static void test_lane_config_invalid(void) {
    flock_pool_t *sentinel = (flock_pool_t *)&sentinel, *pool = sentinel;
    flock_config_t cfg;
    char too_long[FLOCK_LANE_NAME_MAX + 1];
    memset(too_long, 'x', FLOCK_LANE_NAME_MAX);
    too_long[FLOCK_LANE_NAME_MAX] = '\0'; /* one byte too many */
    struct {
        const char *what;
        flock_lane_t lanes[3];
        uint32_t count;
    } bad[] = {
        {"NULL name", {{"a", 1}, {NULL, 1}}, 2},
        {"weight 0", {{"a", 1}, {"b", 0}}, 2},
        {"duplicate", {{"a", 1}, {"b", 2}, {"a", 3}}, 3},
        {"not UTF-8", {{"\xc3\x28", 1}}, 1},
        {"name too long", {{too_long, 1}}, 1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        flock_config_init(&cfg);
        cfg.workers = 1;
        cfg.lanes = bad[i].lanes;
        cfg.lane_count = bad[i].count;
        flock_status_t st = flock_pool_new(&cfg, &pool);
        if (st != FLOCK_ERR_INVALID_CONFIG) fprintf(stderr, "  lanes: %s\n", bad[i].what);
        CHECK_STATUS(st, FLOCK_ERR_INVALID_CONFIG);
        CHECK(pool == sentinel);
    }

    /* A count with no array, and more lanes than FLOCK_MAX_LANES (never read past it). */
    flock_config_init(&cfg);
    cfg.lane_count = 1;
    CHECK_STATUS(flock_pool_new(&cfg, &pool), FLOCK_ERR_INVALID_CONFIG);
    flock_lane_t many[FLOCK_MAX_LANES + 1];
    char names[FLOCK_MAX_LANES + 1][16]; /* room for any int: -Wformat-truncation */
    for (int i = 0; i <= FLOCK_MAX_LANES; i++) {
        snprintf(names[i], sizeof names[i], "l%d", i);
        many[i] = (flock_lane_t){names[i], 1};
    }
    cfg.lanes = many;
    cfg.lane_count = FLOCK_MAX_LANES + 1;
    CHECK_STATUS(flock_pool_new(&cfg, &pool), FLOCK_ERR_INVALID_CONFIG);
    cfg.lane_count = UINT32_MAX;
    CHECK_STATUS(flock_pool_new(&cfg, &pool), FLOCK_ERR_INVALID_CONFIG);
    CHECK(pool == sentinel);

    /* max_workers below workers, or above 65,536. */
    flock_config_init(&cfg);
    cfg.workers = 4;
    cfg.max_workers = 3;
    CHECK_STATUS(flock_pool_new(&cfg, &pool), FLOCK_ERR_INVALID_CONFIG);
    cfg.max_workers = 70000;
    CHECK_STATUS(flock_pool_new(&cfg, &pool), FLOCK_ERR_INVALID_CONFIG);
    CHECK(pool == sentinel);

    /* The limits themselves are fine: FLOCK_MAX_LANES lanes, a 63-byte name; an array with
     * lane_count 0 is not read (one default lane). */
    too_long[FLOCK_LANE_NAME_MAX - 1] = '\0';
    many[0].name = too_long;
    flock_config_init(&cfg);
    cfg.workers = 1;
    cfg.max_workers = 1;
    cfg.lanes = many;
    cfg.lane_count = FLOCK_MAX_LANES;
    CHECK_STATUS(flock_pool_new(&cfg, &pool), FLOCK_OK);
    flock_stats_t s;
    CHECK_STATUS(flock_stats(pool, &s), FLOCK_OK);
    CHECK_EQ(s.lane_count, FLOCK_MAX_LANES);
    CHECK_EQ(s.max_workers, 1);
    flock_lane_stats_t l;
    CHECK_STATUS(flock_lane_stats(pool, 0, &l), FLOCK_OK);
    CHECK(strcmp(l.name, too_long) == 0);
    flock_pool_free(pool);
    cfg.lane_count = 0;
    CHECK_STATUS(flock_pool_new(&cfg, &pool), FLOCK_OK);
    CHECK_STATUS(flock_stats(pool, &s), FLOCK_OK);
    CHECK_EQ(s.lane_count, 1);
    flock_pool_free(pool);
}

/* ---- resize ---------------------------------------------------------------------------- */

/* Waits until the workers a shrinking flock_resize let go have retired (flock_worker_stats
 * stops answering for them): flock_resize returns at once, and each retires at its next task
 * boundary. */
static void wait_retired(flock_pool_t *pool) {
    flock_stats_t s;
    flock_worker_stats_t w;
    for (int tries = 0; tries < 10000; tries++) {
        CHECK_STATUS(flock_stats(pool, &s), FLOCK_OK);
        if (flock_worker_stats(pool, s.workers, &w) == FLOCK_ERR_INVALID_ARGUMENT) return;
        sleep_ms(1);
    }
    CHECK(!"workers did not retire");
}

#define RESIZE_SUBMITTERS 4

typedef struct {
    flock_pool_t *pool;
    atomic_uchar *hits; /* this thread's tasks, one byte each */
    uint64_t tasks;
    uint64_t failures;
    atomic_int *done;
} hit_submitter_t;

static void hit_task(void *arg) { atomic_fetch_add((atomic_uchar *)arg, 1); }

static void *hit_submitter(void *arg) {
    hit_submitter_t *s = arg;
    for (uint64_t i = 0; i < s->tasks; i++)
        if (flock_submit(s->pool, hit_task, &s->hits[i]) != FLOCK_OK) s->failures++;
    atomic_fetch_add(s->done, 1);
    return NULL;
}

static void test_resize_under_concurrent_submits(void) {
    flock_config_t cfg;
    flock_config_init(&cfg);
    cfg.workers = 2;
    cfg.max_workers = 8;
    cfg.capacity = 4096; /* submitters block now and then, while workers come and go */
    flock_pool_t *pool = NULL;
    CHECK_STATUS(flock_pool_new(&cfg, &pool), FLOCK_OK);

    uint64_t per_thread = scaled(50000), total = per_thread * RESIZE_SUBMITTERS;
    atomic_uchar *hits = calloc(total, sizeof *hits);
    CHECK(hits != NULL);
    atomic_int done = 0;
    pthread_t threads[RESIZE_SUBMITTERS];
    hit_submitter_t args[RESIZE_SUBMITTERS];
    for (int i = 0; i < RESIZE_SUBMITTERS; i++) {
        args[i] = (hit_submitter_t){pool, hits + (uint64_t)i * per_thread, per_thread, 0, &done};
        CHECK(pthread_create(&threads[i], NULL, hit_submitter, &args[i]) == 0);
    }
    static const uint32_t sizes[] = {8, 1, 5, 2, 7, 1, 3, 8, 4};
    uint32_t resizes = 0, last = 2;
    while (atomic_load(&done) < RESIZE_SUBMITTERS || resizes < 9) {
        last = sizes[resizes % 9];
        CHECK_STATUS(flock_resize(pool, last), FLOCK_OK);
        resizes++;
        sleep_ms(1);
    }
    for (int i = 0; i < RESIZE_SUBMITTERS; i++) {
        pthread_join(threads[i], NULL);
        CHECK_EQ(args[i].failures, 0);
    }
    /* Straight to flock_wait, retirements perhaps still under way: a worker that retires
     * right after the last task must still wake the waiter. */
    CHECK_STATUS(flock_wait(pool), FLOCK_OK);

    /* Every task ran exactly once. */
    uint64_t wrong = 0;
    for (uint64_t i = 0; i < total; i++)
        if (atomic_load(&hits[i]) != 1) wrong++;
    CHECK_EQ(wrong, 0);
    flock_stats_t s;
    CHECK_STATUS(flock_stats(pool, &s), FLOCK_OK);
    CHECK_EQ(s.submitted, total);
    CHECK_EQ(s.completed, total);
    CHECK_EQ(s.dropped, 0);
    CHECK_EQ(s.in_flight, 0);
    CHECK_EQ(s.workers, last);
    CHECK_EQ(s.max_workers, 8);

    /* Back to full size: the pool still runs everything. */
    CHECK_STATUS(flock_resize(pool, 8), FLOCK_OK);
    atomic_uint_fast64_t n = 0;
    for (int i = 0; i < 1000; i++) CHECK_STATUS(flock_submit(pool, count_task, &n), FLOCK_OK);
    CHECK_STATUS(flock_wait(pool), FLOCK_OK);
    CHECK_EQ(atomic_load(&n), 1000);
    flock_worker_stats_t w;
    CHECK_STATUS(flock_worker_stats(pool, 7, &w), FLOCK_OK);
    CHECK_EQ(w.index, 7);
    flock_pool_free(pool);
    free(hits);
}

typedef struct {
    flock_pool_t *pool;
    flock_status_t shrink;
    atomic_int done;
} resizer_t;

static void resize_inside(void *arg) {
    resizer_t *r = arg;
    r->shrink = flock_resize(r->pool, 3);
    atomic_store(&r->done, 1);
}

static void test_resize_errors(void) {
    flock_config_t cfg;
    flock_config_init(&cfg);
    cfg.workers = 2;
    cfg.max_workers = 4;
    flock_pool_t *pool = NULL;
    CHECK_STATUS(flock_pool_new(&cfg, &pool), FLOCK_OK);
    CHECK_STATUS(flock_resize(pool, 0), FLOCK_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(flock_resize(pool, 5), FLOCK_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(flock_resize(pool, UINT32_MAX), FLOCK_ERR_INVALID_ARGUMENT);
    flock_stats_t s;
    CHECK_STATUS(flock_stats(pool, &s), FLOCK_OK);
    CHECK_EQ(s.workers, 2); /* unchanged */
    CHECK_EQ(s.max_workers, 4);
    CHECK_STATUS(flock_resize(pool, 4), FLOCK_OK); /* max_workers itself is fine */
    CHECK_STATUS(flock_stats(pool, &s), FLOCK_OK);
    CHECK_EQ(s.workers, 4);

    /* From inside a task: allowed (the task may run on the worker it lets go). */
    resizer_t r = {pool, FLOCK_ERR_PANIC, 0};
    CHECK_STATUS(flock_submit(pool, resize_inside, &r), FLOCK_OK);
    while (!atomic_load(&r.done)) sleep_ms(1);
    wait_retired(pool); /* worker 3 leaves at its next task boundary */
    CHECK_STATUS(flock_wait(pool), FLOCK_OK);
    CHECK_STATUS(r.shrink, FLOCK_OK);
    CHECK_STATUS(flock_stats(pool, &s), FLOCK_OK);
    CHECK_EQ(s.workers, 3);
    flock_worker_stats_t w;
    CHECK_STATUS(flock_worker_stats(pool, 3, &w), FLOCK_ERR_INVALID_ARGUMENT);

    CHECK_STATUS(flock_shutdown(pool, FLOCK_SHUTDOWN_GRACEFUL, NULL), FLOCK_OK);
    CHECK_STATUS(flock_resize(pool, 2), FLOCK_ERR_SHUTDOWN);
    CHECK_STATUS(flock_resize(pool, 0), FLOCK_ERR_INVALID_ARGUMENT); /* checked first */
    flock_pool_free(pool);
}

/* ---- pause and resume ------------------------------------------------------------------- */

/* Waits until every worker of the pool sleeps: a pause is then certain to be seen before
 * any later task could start. */
static void wait_all_parked(flock_pool_t *pool) {
    flock_stats_t s;
    for (int tries = 0; tries < 10000; tries++) {
        CHECK_STATUS(flock_stats(pool, &s), FLOCK_OK);
        uint32_t parked = 0;
        for (uint32_t i = 0; i < s.workers; i++) {
            flock_worker_stats_t w;
            if (flock_worker_stats(pool, i, &w) == FLOCK_OK && w.state == FLOCK_WORKER_PARKED) parked++;
        }
        if (parked == s.workers) return;
        sleep_ms(1);
    }
    CHECK(!"workers did not park");
}

static void test_pause_wait_resume(void) {
    flock_pool_t *pool = new_pool(2, 1024, FLOCK_WHEN_FULL_BLOCK);
    bool paused = true;
    CHECK_STATUS(flock_is_paused(pool, &paused), FLOCK_OK);
    CHECK(!paused);
    CHECK_STATUS(flock_wait(pool), FLOCK_OK); /* paused or not, nothing outstanding */
    CHECK_STATUS(flock_pause(pool), FLOCK_OK);
    CHECK_STATUS(flock_pause(pool), FLOCK_OK); /* twice is fine */
    CHECK_STATUS(flock_is_paused(pool, &paused), FLOCK_OK);
    CHECK(paused);
    CHECK_STATUS(flock_wait(pool), FLOCK_OK); /* still nothing outstanding */
    wait_all_parked(pool);

    atomic_uint_fast64_t n = 0;
    enum { TASKS = 100 };
    for (int i = 0; i < TASKS; i++) CHECK_STATUS(flock_submit(pool, count_task, &n), FLOCK_OK);
    sleep_ms(20);
    CHECK_EQ(atomic_load(&n), 0); /* accepted, queued, not started */
    CHECK_STATUS(flock_wait(pool), FLOCK_ERR_PAUSED);
    CHECK_STATUS(flock_wait_timeout(pool, 5 * 1000 * 1000), FLOCK_ERR_TIMEOUT);
    flock_stats_t s;
    CHECK_STATUS(flock_stats(pool, &s), FLOCK_OK);
    CHECK(s.paused);
    CHECK_EQ(s.submitted, TASKS);
    CHECK_EQ(s.in_flight, TASKS);
    CHECK_EQ(s.queued, TASKS);
    CHECK_EQ(s.completed, 0);

    CHECK_STATUS(flock_resume(pool), FLOCK_OK);
    CHECK_STATUS(flock_wait(pool), FLOCK_OK);
    CHECK_EQ(atomic_load(&n), TASKS);
    CHECK_STATUS(flock_is_paused(pool, &paused), FLOCK_OK);
    CHECK(!paused);
    CHECK_STATUS(flock_resume(pool), FLOCK_OK); /* not paused: a no-op */
    CHECK_STATUS(flock_stats(pool, &s), FLOCK_OK);
    CHECK(!s.paused);
    CHECK_EQ(s.completed, TASKS);
    flock_pool_free(pool);
}

static void test_shutdown_of_a_paused_pool(void) {
    flock_pool_t *pool = new_pool(2, 1024, FLOCK_WHEN_FULL_BLOCK);
    CHECK_STATUS(flock_pause(pool), FLOCK_OK);
    atomic_uint_fast64_t n = 0;
    for (int i = 0; i < 50; i++) CHECK_STATUS(flock_submit(pool, count_task, &n), FLOCK_OK);
    /* A graceful shutdown drains a paused pool. */
    CHECK_STATUS(flock_shutdown(pool, FLOCK_SHUTDOWN_GRACEFUL, NULL), FLOCK_OK);
    CHECK_EQ(atomic_load(&n), 50);
    bool paused = true;
    CHECK_STATUS(flock_is_paused(pool, &paused), FLOCK_OK);
    CHECK(!paused);
    /* After shutdown: pausing is refused (it would hold a drain), resuming is a no-op. */
    CHECK_STATUS(flock_pause(pool), FLOCK_ERR_SHUTDOWN);
    CHECK_STATUS(flock_resume(pool), FLOCK_OK);
    CHECK_STATUS(flock_is_paused(pool, &paused), FLOCK_OK);
    CHECK(!paused);
    flock_pool_free(pool);

    /* FLOCK_SHUTDOWN_NOW discards what a pause held back, drop callbacks included. */
    pool = new_pool(1, 1024, FLOCK_WHEN_FULL_BLOCK);
    CHECK_STATUS(flock_pause(pool), FLOCK_OK);
    wait_all_parked(pool);
    slot_t slots[10];
    memset(slots, 0, sizeof slots);
    for (int i = 0; i < 10; i++) CHECK_STATUS(flock_submit_ex(pool, slot_run, &slots[i], slot_drop), FLOCK_OK);
    uint64_t dropped = 0;
    CHECK_STATUS(flock_shutdown(pool, FLOCK_SHUTDOWN_NOW, &dropped), FLOCK_OK);
    CHECK_EQ(dropped, 10);
    for (int i = 0; i < 10; i++) {
        CHECK_EQ(atomic_load(&slots[i].ran), 0);
        CHECK_EQ(atomic_load(&slots[i].dropped), 1);
    }
    flock_pool_free(pool);
}

typedef struct {
    flock_pool_t *pool;
    atomic_int stop;
    atomic_uint_fast64_t pauses;
} pauser_t;

static void *pause_repeatedly(void *arg) {
    pauser_t *p = arg;
    while (!atomic_load(&p->stop)) {
        flock_status_t st = flock_pause(p->pool);
        if (st == FLOCK_ERR_SHUTDOWN) break;
        if (st == FLOCK_OK) atomic_fetch_add(&p->pauses, 1);
    }
    return NULL;
}

/* Pauses racing a graceful shutdown never hold it: each comes first (and the shutdown undoes
 * it) or is refused. */
static void test_pause_racing_shutdown(void) {
    for (int round = 0; round < 20; round++) {
        flock_pool_t *pool = new_pool(2, 1 << 16, FLOCK_WHEN_FULL_BLOCK);
        atomic_uint_fast64_t n = 0;
        uint64_t tasks = scaled(2000);
        for (uint64_t i = 0; i < tasks; i++) CHECK_STATUS(flock_submit(pool, count_task, &n), FLOCK_OK);
        pauser_t p = {pool, 0, 0};
        pthread_t t;
        CHECK(pthread_create(&t, NULL, pause_repeatedly, &p) == 0);
        sleep_ms(1);
        CHECK_STATUS(flock_shutdown(pool, FLOCK_SHUTDOWN_GRACEFUL, NULL), FLOCK_OK);
        atomic_store(&p.stop, 1);
        pthread_join(t, NULL);
        CHECK_EQ(atomic_load(&n), tasks);
        flock_pool_free(pool);
    }
}

/* ---- batches ---------------------------------------------------------------------------- */

typedef struct {
    flock_pool_t *pool;
    uint32_t lane;
    slot_t *slots;
    size_t n;
    size_t accepted;
    flock_status_t status;
} batcher_t;

static void batch_inside(void *arg) {
    batcher_t *b = arg;
    void *args[100];
    for (size_t i = 0; i < b->n; i++) args[i] = &b->slots[i];
    b->status = flock_submit_batch(b->pool, b->lane, slot_run, args, b->n, &b->accepted);
}

static void test_submit_batch(void) {
    flock_lane_t lanes[2] = {{"fg", 2}, {"bg", 1}};
    flock_pool_t *pool = new_lane_pool(2, lanes, 2);
    enum { N = 1000 };
    static slot_t slots[N];
    static void *args[N];
    memset(slots, 0, sizeof slots);
    for (int i = 0; i < N; i++) args[i] = &slots[i];
    size_t accepted = 0;
    CHECK_STATUS(flock_submit_batch(pool, 1, slot_run, args, N, &accepted), FLOCK_OK);
    CHECK_EQ(accepted, N);
    CHECK_STATUS(flock_wait(pool), FLOCK_OK);
    for (int i = 0; i < N; i++) CHECK_EQ(atomic_load(&slots[i].ran), 1);
    flock_lane_stats_t l;
    CHECK_STATUS(flock_lane_stats(pool, 1, &l), FLOCK_OK);
    CHECK_EQ(l.submitted, N);
    CHECK_EQ(l.executed, N);
    CHECK_STATUS(flock_lane_stats(pool, 0, &l), FLOCK_OK);
    CHECK_EQ(l.submitted, 0);

    /* From inside a task: all go to the worker's own queue, in the lane asked for. */
    static slot_t inner[100];
    memset(inner, 0, sizeof inner);
    batcher_t b = {pool, 0, inner, 100, 0, FLOCK_ERR_PANIC};
    CHECK_STATUS(flock_submit_lane(pool, 1, batch_inside, &b), FLOCK_OK);
    CHECK_STATUS(flock_wait(pool), FLOCK_OK);
    CHECK_STATUS(b.status, FLOCK_OK);
    CHECK_EQ(b.accepted, 100);
    for (int i = 0; i < 100; i++) CHECK_EQ(atomic_load(&inner[i].ran), 1);
    CHECK_STATUS(flock_lane_stats(pool, 0, &l), FLOCK_OK);
    CHECK_EQ(l.submitted, 100);
    CHECK_EQ(l.executed, 100);

    /* After shutdown: nothing accepted, nothing run. */
    CHECK_STATUS(flock_shutdown(pool, FLOCK_SHUTDOWN_GRACEFUL, NULL), FLOCK_OK);
    memset(slots, 0, sizeof slots);
    accepted = 77;
    CHECK_STATUS(flock_submit_batch(pool, 0, slot_run, args, 10, &accepted), FLOCK_ERR_SHUTDOWN);
    CHECK_EQ(accepted, 0);
    flock_stats_t s;
    CHECK_STATUS(flock_stats(pool, &s), FLOCK_OK);
    CHECK_EQ(s.rejected_shutdown, 10);
    flock_pool_free(pool);
    for (int i = 0; i < 10; i++) CHECK_EQ(atomic_load(&slots[i].ran) + atomic_load(&slots[i].dropped), 0);
}

static void test_submit_batch_partly_refused(void) {
    /* Capacity 4, REJECT, the one worker held by a gate: a batch of 10 gets 4 in. */
    flock_pool_t *pool = new_pool(1, 4, FLOCK_WHEN_FULL_REJECT);
    gate_t gate = {0, 0};
    CHECK_STATUS(flock_submit(pool, gate_task, &gate), FLOCK_OK);
    gate_wait_started(&gate);
    slot_t slots[10];
    void *args[10];
    memset(slots, 0, sizeof slots);
    for (int i = 0; i < 10; i++) args[i] = &slots[i];
    size_t accepted = 77;
    CHECK_STATUS(flock_submit_batch(pool, 0, slot_run, args, 10, &accepted), FLOCK_ERR_FULL);
    CHECK_EQ(accepted, 4);
    atomic_store(&gate.open, 1);
    CHECK_STATUS(flock_wait(pool), FLOCK_OK);
    for (int i = 0; i < 10; i++) {
        CHECK_EQ(atomic_load(&slots[i].ran), i < 4 ? 1 : 0);
        CHECK_EQ(atomic_load(&slots[i].dropped), 0);
    }
    flock_stats_t s;
    CHECK_STATUS(flock_stats(pool, &s), FLOCK_OK);
    CHECK_EQ(s.submitted, 5);
    CHECK_EQ(s.completed, 5);
    CHECK_EQ(s.rejected_full, 6);
    flock_pool_free(pool);
}

/* flock_submit_batch_ex: accepted tasks discarded by FLOCK_SHUTDOWN_NOW have drop called once;
 * refused ones and every error leave the arguments with the caller. */
static void test_submit_batch_ex_drop(void) {
    enum { K = 600 }; /* more than one admission group */
    flock_pool_t *pool = new_pool(1, 1 << 20, FLOCK_WHEN_FULL_BLOCK);
    gate_t gate = {0, 0};
    CHECK_STATUS(flock_submit(pool, gate_task, &gate), FLOCK_OK);
    gate_wait_started(&gate);
    static slot_t slots[K];
    static void *args[K];
    memset(slots, 0, sizeof slots);
    for (int i = 0; i < K; i++) args[i] = &slots[i];
    size_t accepted = 77;
    CHECK_STATUS(flock_submit_batch_ex(pool, 0, slot_run, args, K, slot_drop, &accepted), FLOCK_OK);
    CHECK_EQ(accepted, K);
    opener_t opener = {pool, &gate, {0, 0}};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, open_after_shutdown_began, &opener) == 0);
    uint64_t dropped = 0;
    CHECK_STATUS(flock_shutdown(pool, FLOCK_SHUTDOWN_NOW, &dropped), FLOCK_OK);
    pthread_join(t, NULL);
    int probes = atomic_load(&opener.probe.dropped);
    CHECK_EQ(dropped, (uint64_t)(K + probes));
    int wrong = 0;
    for (int i = 0; i < K; i++)
        wrong += atomic_load(&slots[i].ran) != 0 || atomic_load(&slots[i].dropped) != 1;
    CHECK_EQ(wrong, 0);
    /* After shutdown: refused whole, nothing dropped. */
    accepted = 77;
    atomic_store(&owned_drops, 0);
    CHECK_STATUS(flock_submit_batch_ex(pool, 0, slot_run, args, 3, owned_drop, &accepted), FLOCK_ERR_SHUTDOWN);
    CHECK_EQ(accepted, 0);
    flock_pool_free(pool);
    for (int i = 0; i < K; i++) wrong += atomic_load(&slots[i].dropped) != 1; /* free drops nothing */
    CHECK_EQ(wrong, 0);

    /* Partly refused (capacity 4, REJECT, worker held): 4 run, 6 neither run nor dropped. */
    pool = new_pool(1, 4, FLOCK_WHEN_FULL_REJECT);
    gate_t gate2 = {0, 0};
    CHECK_STATUS(flock_submit(pool, gate_task, &gate2), FLOCK_OK);
    gate_wait_started(&gate2);
    memset(slots, 0, sizeof slots);
    CHECK_STATUS(flock_submit_batch_ex(pool, 0, slot_run, args, 10, slot_drop, &accepted), FLOCK_ERR_FULL);
    CHECK_EQ(accepted, 4);
    atomic_store(&gate2.open, 1);
    CHECK_STATUS(flock_wait(pool), FLOCK_OK);
    for (int i = 0; i < 10; i++) {
        CHECK_EQ(atomic_load(&slots[i].ran), i < 4 ? 1 : 0);
        CHECK_EQ(atomic_load(&slots[i].dropped), 0);
    }

    /* Errors before the batch: nothing accepted, nothing dropped, *accepted untouched. */
    atomic_store(&owned_drops, 0);
    accepted = 77;
    CHECK_STATUS(flock_submit_batch_ex(NULL, 0, slot_run, args, 2, owned_drop, &accepted), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_submit_batch_ex(pool, 0, NULL, args, 2, owned_drop, &accepted), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_submit_batch_ex(pool, 0, slot_run, NULL, 2, owned_drop, &accepted), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_submit_batch_ex(pool, 0, slot_run, args, 2, owned_drop, NULL), FLOCK_ERR_NULL);
    flock_test_panic_next_call();
    CHECK_STATUS(flock_submit_batch_ex(pool, 0, slot_run, args, 2, owned_drop, &accepted), FLOCK_ERR_PANIC);
    CHECK_EQ(accepted, 77);
    CHECK_STATUS(flock_submit_batch_ex(pool, 3, slot_run, args, 2, owned_drop, &accepted), FLOCK_ERR_UNKNOWN_LANE);
    CHECK_EQ(accepted, 0);
    /* NULL drop is flock_submit_batch; n 0 is fine. */
    CHECK_STATUS(flock_submit_batch_ex(pool, 0, slot_run, NULL, 0, owned_drop, &accepted), FLOCK_OK);
    CHECK_EQ(accepted, 0);
    CHECK_STATUS(flock_submit_batch_ex(pool, 0, slot_run, args, 2, NULL, &accepted), FLOCK_OK);
    CHECK_EQ(accepted, 2);
    CHECK_STATUS(flock_wait(pool), FLOCK_OK);
    CHECK_EQ(atomic_load(&owned_drops), 0);
    for (int i = 0; i < 10; i++) CHECK_EQ(atomic_load(&slots[i].ran), i < 2 ? 2 : i < 4 ? 1 : 0);
    flock_pool_free(pool);
}

/* ---- failures and panics ------------------------------------------------------------- */

static void failing_task(void *arg) {
    flock_status_t *st = arg;
    *st = flock_task_fail();
    flock_task_fail(); /* twice counts once */
}

static void test_task_fail_counts_as_panicked(void) {
    flock_pool_t *pool = new_pool(1, 16, FLOCK_WHEN_FULL_BLOCK);
    CHECK_STATUS(flock_task_fail(), FLOCK_ERR_INVALID_ARGUMENT); /* not in a task */
    flock_status_t inside = FLOCK_ERR_NULL;
    atomic_uint_fast64_t n = 0;
    CHECK_STATUS(flock_submit(pool, failing_task, &inside), FLOCK_OK);
    CHECK_STATUS(flock_submit(pool, count_task, &n), FLOCK_OK);
    CHECK_STATUS(flock_wait(pool), FLOCK_OK);
    CHECK_STATUS(inside, FLOCK_OK);
    CHECK_EQ(atomic_load(&n), 1);
    flock_stats_t s;
    CHECK_STATUS(flock_stats(pool, &s), FLOCK_OK);
    CHECK_EQ(s.submitted, 2);
    CHECK_EQ(s.completed, 1);
    CHECK_EQ(s.panicked, 1);
    flock_worker_stats_t w;
    CHECK_STATUS(flock_worker_stats(pool, 0, &w), FLOCK_OK);
    CHECK_EQ(w.panicked, 1);
    CHECK_EQ(w.executed, 2);
    flock_pool_free(pool);
}

static void test_forced_panic_comes_back_as_status(void) {
    flock_pool_t *pool = new_pool(1, 16, FLOCK_WHEN_FULL_BLOCK);
    atomic_uint_fast64_t n = 0;

    flock_test_panic_next_call();
    CHECK_STATUS(flock_submit(pool, count_task, &n), FLOCK_ERR_PANIC);

    flock_stats_t s, pattern;
    memset(&s, 0xEE, sizeof s);
    memcpy(&pattern, &s, sizeof s);
    flock_test_panic_next_call();
    CHECK_STATUS(flock_stats(pool, &s), FLOCK_ERR_PANIC);
    CHECK(memcmp(&s, &pattern, sizeof s) == 0); /* out not written */

    flock_pool_t *other = (flock_pool_t *)&s;
    flock_test_panic_next_call();
    CHECK_STATUS(flock_pool_new(NULL, &other), FLOCK_ERR_PANIC);
    CHECK(other == (flock_pool_t *)&s);

    flock_test_panic_next_call();
    CHECK_STATUS(flock_wait(pool), FLOCK_ERR_PANIC);
    flock_test_panic_next_call();
    CHECK_STATUS(flock_shutdown(pool, FLOCK_SHUTDOWN_NOW, NULL), FLOCK_ERR_PANIC);
    flock_test_panic_next_call();
    CHECK_EQ(flock_current_worker(), -1);
    flock_test_panic_next_call();
    CHECK(strcmp(flock_status_str(FLOCK_OK), "flock: internal panic") == 0);
    flock_test_panic_next_call();
    flock_config_init(NULL); /* void: just returns */

    /* The new calls too: nothing changed, nothing written. */
    flock_test_panic_next_call();
    CHECK_STATUS(flock_submit_lane(pool, 0, count_task, &n), FLOCK_ERR_PANIC);
    flock_test_panic_next_call();
    CHECK_STATUS(flock_submit_lane_ex(pool, 0, count_task, &n, NULL), FLOCK_ERR_PANIC);
    void *args[1] = {&n};
    size_t accepted = 77;
    flock_test_panic_next_call();
    CHECK_STATUS(flock_submit_batch(pool, 0, count_task, args, 1, &accepted), FLOCK_ERR_PANIC);
    CHECK_EQ(accepted, 77);
    uint32_t lane = 77;
    flock_test_panic_next_call();
    CHECK_STATUS(flock_lane_index(pool, "default", &lane), FLOCK_ERR_PANIC);
    CHECK_EQ(lane, 77);
    flock_lane_stats_t l, lpattern;
    memset(&l, 0xEE, sizeof l);
    memcpy(&lpattern, &l, sizeof l);
    flock_test_panic_next_call();
    CHECK_STATUS(flock_lane_stats(pool, 0, &l), FLOCK_ERR_PANIC);
    CHECK(memcmp(&l, &lpattern, sizeof l) == 0);
    flock_test_panic_next_call();
    CHECK_STATUS(flock_resize(pool, 2), FLOCK_ERR_PANIC);
    flock_test_panic_next_call();
    CHECK_STATUS(flock_pause(pool), FLOCK_ERR_PANIC);
    flock_test_panic_next_call();
    CHECK_STATUS(flock_resume(pool), FLOCK_ERR_PANIC);
    bool paused = true;
    flock_test_panic_next_call();
    CHECK_STATUS(flock_is_paused(pool, &paused), FLOCK_ERR_PANIC);
    CHECK(paused);
    CHECK_STATUS(flock_is_paused(pool, &paused), FLOCK_OK);
    CHECK(!paused); /* the forced flock_pause did not pause */

    /* The process lives, the pool is intact, nothing ran, and the hook is disarmed. */
    CHECK_STATUS(flock_submit(pool, count_task, &n), FLOCK_OK);
    CHECK_STATUS(flock_wait(pool), FLOCK_OK);
    CHECK_EQ(atomic_load(&n), 1);
    CHECK_STATUS(flock_stats(pool, &s), FLOCK_OK);
    CHECK_EQ(s.submitted, 1);
    CHECK_EQ(s.completed, 1);
    CHECK_EQ(s.workers, 1); /* the forced flock_resize did not resize */
    flock_pool_free(pool);
}

/* ---- task groups and purge ---------------------------------------------------------- */

static void fail_task(void *arg) {
    (void)arg;
    flock_task_fail();
}

static void test_group_waits_for_its_own_tasks(void) {
    flock_pool_t *pool = new_pool(2, 1 << 16, FLOCK_WHEN_FULL_BLOCK);
    gate_t outsider = {0, 0};
    CHECK_STATUS(flock_submit(pool, gate_task, &outsider), FLOCK_OK); /* not the group's */
    flock_group_t *g = NULL;
    CHECK_STATUS(flock_group_new(pool, &g), FLOCK_OK);
    CHECK(g != NULL);
    atomic_uint_fast64_t n = 0;
    uint64_t k = scaled(2000);
    for (uint64_t i = 0; i < k; i++) CHECK_STATUS(flock_group_submit(g, count_task, &n), FLOCK_OK);
    CHECK_STATUS(flock_group_wait(g), FLOCK_OK);
    CHECK_EQ(atomic_load(&n), k);
    /* Reusable; lane forms; an unknown lane leaves arg with the caller. */
    slot_t a = {0, 0}, b = {0, 0}, c = {0, 0};
    CHECK_STATUS(flock_group_submit_lane(g, 0, slot_run, &a), FLOCK_OK);
    CHECK_STATUS(flock_group_submit_lane_ex(g, 0, slot_run, &b, slot_drop), FLOCK_OK);
    CHECK_STATUS(flock_group_submit_lane_ex(g, 7, slot_run, &c, slot_drop), FLOCK_ERR_UNKNOWN_LANE);
    CHECK_STATUS(flock_group_wait_timeout_ns(g, 60000000000ull), FLOCK_OK);
    CHECK_EQ(atomic_load(&a.ran) + atomic_load(&b.ran), 2);
    CHECK_EQ(atomic_load(&c.ran) + atomic_load(&c.dropped) + atomic_load(&b.dropped), 0);
    atomic_store(&outsider.open, 1);
    flock_group_free(g);
    flock_pool_free(pool);
}

static void test_group_null_pointers(void) {
    flock_pool_t *pool = new_pool(1, 16, FLOCK_WHEN_FULL_BLOCK);
    flock_group_t *g = (flock_group_t *)&pool;
    CHECK_STATUS(flock_group_new(NULL, &g), FLOCK_ERR_NULL);
    CHECK(g == (flock_group_t *)&pool); /* out not written */
    CHECK_STATUS(flock_group_new(pool, NULL), FLOCK_ERR_NULL);
    atomic_uint_fast64_t n = 0;
    CHECK_STATUS(flock_group_submit(NULL, count_task, &n), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_group_submit_ex(NULL, slot_run, &n, owned_drop), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_group_submit_lane(NULL, 0, count_task, &n), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_group_submit_lane_ex(NULL, 0, count_task, &n, owned_drop), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_group_wait(NULL), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_group_wait_timeout_ns(NULL, 1000000), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_group_cancel(NULL, NULL), FLOCK_ERR_NULL);
    CHECK_STATUS(flock_purge(NULL, NULL), FLOCK_ERR_NULL);
    flock_group_free(NULL);
    CHECK_STATUS(flock_group_new(pool, &g), FLOCK_OK);
    atomic_store(&owned_drops, 0);
    CHECK_STATUS(flock_group_submit_ex(g, NULL, &n, owned_drop), FLOCK_ERR_NULL);
    CHECK_EQ(atomic_load(&owned_drops), 0); /* the caller still owns arg */
    CHECK_STATUS(flock_group_cancel(g, NULL), FLOCK_OK);
    CHECK_STATUS(flock_purge(pool, NULL), FLOCK_OK);
    flock_group_free(g);
    flock_pool_free(pool);
}

/* A task of the outer group: opens a group of its own, submits leaves, and waits. */
typedef struct {
    flock_pool_t *pool;
    atomic_uint_fast64_t *leaves;
    int depth;
    atomic_int *bad;
} fan_t;

static void fan_task(void *arg) {
    fan_t *f = arg;
    if (f->depth == 0) {
        atomic_fetch_add(f->leaves, 1);
        return;
    }
    flock_group_t *inner = NULL;
    if (flock_group_new(f->pool, &inner) != FLOCK_OK) {
        atomic_fetch_add(f->bad, 1);
        return;
    }
    fan_t kids[4];
    for (int i = 0; i < 4; i++) {
        kids[i] = (fan_t){f->pool, f->leaves, f->depth - 1, f->bad};
        if (flock_group_submit(inner, fan_task, &kids[i]) != FLOCK_OK) atomic_fetch_add(f->bad, 1);
    }
    /* The one worker runs the kids while it waits (the kids live on this stack frame). */
    if (flock_group_wait(inner) != FLOCK_OK) atomic_fetch_add(f->bad, 1);
    flock_group_free(inner);
}

static void test_group_nested_fan_out_on_one_worker(void) {
    flock_pool_t *pool = new_pool(1, 1 << 16, FLOCK_WHEN_FULL_BLOCK);
    atomic_uint_fast64_t leaves = 0;
    atomic_int bad = 0;
    flock_group_t *g = NULL;
    CHECK_STATUS(flock_group_new(pool, &g), FLOCK_OK);
    fan_t roots[4];
    for (int i = 0; i < 4; i++) {
        roots[i] = (fan_t){pool, &leaves, 3, &bad};
        CHECK_STATUS(flock_group_submit(g, fan_task, &roots[i]), FLOCK_OK);
    }
    CHECK_STATUS(flock_group_wait(g), FLOCK_OK);
    CHECK_EQ(atomic_load(&leaves), 4 * 4 * 4 * 4);
    CHECK_EQ(atomic_load(&bad), 0);
    flock_group_free(g);
    flock_pool_free(pool);
}

static void test_group_failures_are_reported_once(void) {
    flock_pool_t *pool = new_pool(2, 1024, FLOCK_WHEN_FULL_BLOCK);
    flock_group_t *g = NULL;
    CHECK_STATUS(flock_group_new(pool, &g), FLOCK_OK);
    atomic_uint_fast64_t n = 0;
    for (int i = 0; i < 10; i++)
        CHECK_STATUS(flock_group_submit(g, i % 5 == 0 ? fail_task : count_task, &n), FLOCK_OK);
    CHECK_STATUS(flock_group_wait(g), FLOCK_ERR_TASK_FAILED);
    CHECK_EQ(atomic_load(&n), 8);
    CHECK_STATUS(flock_group_wait(g), FLOCK_OK);
    CHECK_STATUS(flock_group_submit(g, fail_task, NULL), FLOCK_OK);
    CHECK_STATUS(flock_group_wait_timeout_ns(g, 60000000000ull), FLOCK_ERR_TASK_FAILED);
    CHECK_STATUS(flock_wait(pool), FLOCK_OK);
    flock_stats_t s;
    CHECK_STATUS(flock_stats(pool, &s), FLOCK_OK);
    CHECK_EQ(s.panicked, 3);
    CHECK_EQ(s.completed, 8);
    flock_group_free(g);
    flock_pool_free(pool);
}

static void test_group_cancel_and_timeout(void) {
    enum { K = 10 };
    flock_pool_t *pool = new_pool(1, 1024, FLOCK_WHEN_FULL_BLOCK);
    flock_group_t *g = NULL;
    CHECK_STATUS(flock_group_new(pool, &g), FLOCK_OK);
    gate_t gate = {0, 0};
    CHECK_STATUS(flock_group_submit(g, gate_task, &gate), FLOCK_OK);
    gate_wait_started(&gate);
    slot_t slots[K];
    memset(slots, 0, sizeof slots);
    for (int i = 0; i < K; i++) CHECK_STATUS(flock_group_submit_ex(g, slot_run, &slots[i], slot_drop), FLOCK_OK);
    CHECK_STATUS(flock_group_wait_timeout_ns(g, 10000000), FLOCK_ERR_TIMEOUT);
    size_t cancelled = 77;
    CHECK_STATUS(flock_group_cancel(g, &cancelled), FLOCK_OK);
    CHECK_EQ(cancelled, K);
    int wrong = 0;
    for (int i = 0; i < K; i++) wrong += atomic_load(&slots[i].ran) != 0 || atomic_load(&slots[i].dropped) != 1;
    CHECK_EQ(wrong, 0);
    atomic_store(&gate.open, 1);
    CHECK_STATUS(flock_group_wait(g), FLOCK_OK);
    CHECK_STATUS(flock_wait(pool), FLOCK_OK);
    flock_stats_t s;
    CHECK_STATUS(flock_stats(pool, &s), FLOCK_OK);
    CHECK_EQ(s.dropped, K);
    CHECK_EQ(s.completed, 1);
    flock_group_free(g);
    flock_pool_free(pool);
}

static void sleepy_task(void *arg) {
    sleep_ms(2);
    slot_run(arg);
}

static void test_group_free_waits_for_the_tasks(void) {
    enum { K = 20 };
    flock_pool_t *pool = new_pool(2, 1024, FLOCK_WHEN_FULL_BLOCK);
    flock_group_t *g = NULL;
    CHECK_STATUS(flock_group_new(pool, &g), FLOCK_OK);
    slot_t *slots = calloc(K, sizeof *slots);
    for (int i = 0; i < K; i++) CHECK_STATUS(flock_group_submit_ex(g, sleepy_task, &slots[i], slot_drop), FLOCK_OK);
    flock_group_free(g);
    int wrong = 0;
    for (int i = 0; i < K; i++) wrong += atomic_load(&slots[i].ran) != 1;
    CHECK_EQ(wrong, 0);
    free(slots); /* no task touches them any more */
    /* A group outliving its pool: submits are refused, the caller keeps arg. */
    CHECK_STATUS(flock_group_new(pool, &g), FLOCK_OK);
    flock_pool_free(pool);
    atomic_store(&owned_drops, 0);
    slot_t late = {0, 0};
    CHECK_STATUS(flock_group_submit_ex(g, slot_run, &late, owned_drop), FLOCK_ERR_SHUTDOWN);
    CHECK_EQ(atomic_load(&owned_drops), 0);
    CHECK_STATUS(flock_group_wait(g), FLOCK_OK);
    flock_group_free(g);
}

static void test_purge(void) {
    enum { K = 300 };
    flock_pool_t *pool = new_pool(1, 1 << 16, FLOCK_WHEN_FULL_BLOCK);
    gate_t gate = {0, 0};
    CHECK_STATUS(flock_submit(pool, gate_task, &gate), FLOCK_OK);
    gate_wait_started(&gate);
    static slot_t slots[K];
    static void *args[K];
    memset(slots, 0, sizeof slots);
    for (int i = 0; i < K; i++) args[i] = &slots[i];
    for (int i = 0; i < 100; i++) CHECK_STATUS(flock_submit_ex(pool, slot_run, &slots[i], slot_drop), FLOCK_OK);
    size_t accepted = 0;
    CHECK_STATUS(flock_submit_batch_ex(pool, 0, slot_run, args + 100, 150, slot_drop, &accepted), FLOCK_OK);
    flock_group_t *g = NULL;
    CHECK_STATUS(flock_group_new(pool, &g), FLOCK_OK);
    for (int i = 250; i < K; i++) CHECK_STATUS(flock_group_submit_ex(g, slot_run, &slots[i], slot_drop), FLOCK_OK);
    size_t purged = 0;
    CHECK_STATUS(flock_purge(pool, &purged), FLOCK_OK);
    CHECK_EQ(purged, K);
    int wrong = 0;
    for (int i = 0; i < K; i++) wrong += atomic_load(&slots[i].ran) != 0 || atomic_load(&slots[i].dropped) != 1;
    CHECK_EQ(wrong, 0);
    CHECK_STATUS(flock_group_wait(g), FLOCK_OK); /* its tasks were dropped: nothing to wait for */
    atomic_store(&gate.open, 1);
    CHECK_STATUS(flock_wait(pool), FLOCK_OK);
    flock_stats_t s;
    CHECK_STATUS(flock_stats(pool, &s), FLOCK_OK);
    CHECK_EQ(s.dropped, K);
    CHECK_EQ(s.completed, 1);
    /* The pool stays open. */
    atomic_uint_fast64_t n = 0;
    CHECK_STATUS(flock_submit(pool, count_task, &n), FLOCK_OK);
    CHECK_STATUS(flock_wait(pool), FLOCK_OK);
    CHECK_EQ(atomic_load(&n), 1);
    flock_group_free(g);
    flock_pool_free(pool);
}

static void test_group_forced_panics(void) {
    flock_pool_t *pool = new_pool(1, 16, FLOCK_WHEN_FULL_BLOCK);
    flock_group_t *g = NULL, *unchanged = (flock_group_t *)&pool;
    flock_test_panic_next_call();
    CHECK_STATUS(flock_group_new(pool, &unchanged), FLOCK_ERR_PANIC);
    CHECK(unchanged == (flock_group_t *)&pool);
    CHECK_STATUS(flock_group_new(pool, &g), FLOCK_OK);
    atomic_uint_fast64_t n = 0;
    flock_test_panic_next_call();
    CHECK_STATUS(flock_group_submit(g, count_task, &n), FLOCK_ERR_PANIC);
    flock_test_panic_next_call();
    CHECK_STATUS(flock_group_submit_lane_ex(g, 0, count_task, &n, owned_drop), FLOCK_ERR_PANIC);
    flock_test_panic_next_call();
    CHECK_STATUS(flock_group_wait(g), FLOCK_ERR_PANIC);
    flock_test_panic_next_call();
    CHECK_STATUS(flock_group_wait_timeout_ns(g, 1000000), FLOCK_ERR_PANIC);
    size_t k = 77;
    flock_test_panic_next_call();
    CHECK_STATUS(flock_group_cancel(g, &k), FLOCK_ERR_PANIC);
    CHECK_EQ(k, 77);
    flock_test_panic_next_call();
    CHECK_STATUS(flock_purge(pool, &k), FLOCK_ERR_PANIC);
    CHECK_EQ(k, 77);
    flock_test_panic_next_call();
    flock_group_free(g); /* void: the panic comes first, the group is not freed */
    CHECK_STATUS(flock_group_submit(g, count_task, &n), FLOCK_OK);
    CHECK_STATUS(flock_group_wait(g), FLOCK_OK);
    CHECK_EQ(atomic_load(&n), 1);
    flock_group_free(g);
    flock_pool_free(pool);
}

int main(void) {
    const char *env = getenv("FLOCK_TEST_SCALE");
    if (env && atoi(env) > 0) scale = (uint64_t)atoi(env);
    printf("libflock %s, C test suite (scale 1/%" PRIu64 ")\n", flock_version(), scale);

    int passed = 0, failed = 0;

    RUN(test_version_and_status_strings);
    RUN(test_config_init_and_defaults);
    RUN(test_invalid_config);
    RUN(test_null_pointers);
    RUN(test_many_threads_exact_counts);
    RUN(test_submit_ex_drop_once_under_shutdown_now);
    RUN(test_error_paths_keep_ownership);
    RUN(test_worker_hooks);
    RUN(test_wait_inside_task_would_deadlock);
    RUN(test_reject_when_full);
    RUN(test_block_timeout);
    RUN(test_caller_runs_and_spawn_thread);
    RUN(test_nested_submit);
    RUN(test_graceful_shutdown);
    RUN(test_free_is_graceful);
    RUN(test_free_inside_own_task);
    RUN(test_worker_stats_and_current_worker);
    RUN(test_latency);
    RUN(test_lane_submit_and_stats);
    RUN(test_yield_to_lanes);
    RUN(test_lane_reserve);
    RUN(test_membarrier);
    RUN(test_unknown_lane);
    RUN(test_lane_config_invalid);
    RUN(test_resize_under_concurrent_submits);
    RUN(test_resize_errors);
    RUN(test_pause_wait_resume);
    RUN(test_shutdown_of_a_paused_pool);
    RUN(test_pause_racing_shutdown);
    RUN(test_submit_batch);
    RUN(test_submit_batch_partly_refused);
    RUN(test_submit_batch_ex_drop);
    RUN(test_task_fail_counts_as_panicked);
    RUN(test_forced_panic_comes_back_as_status);
    RUN(test_group_waits_for_its_own_tasks);
    RUN(test_group_null_pointers);
    RUN(test_group_nested_fan_out_on_one_worker);
    RUN(test_group_failures_are_reported_once);
    RUN(test_group_cancel_and_timeout);
    RUN(test_group_free_waits_for_the_tasks);
    RUN(test_purge);
    RUN(test_group_forced_panics);

    return check_summary(passed, failed);
}
