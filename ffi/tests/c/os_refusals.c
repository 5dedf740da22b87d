/*
 * C tests of what libflock answers when the OS refuses it something: a worker pinned
 * (FLOCK_ERR_PIN_FAILED from flock_resize and from flock_pool_new), a
 * thread (FLOCK_ERR_THREAD_SPAWN; FLOCK_WHEN_FULL_SPAWN_THREAD runs the task inside
 * flock_submit and counts it in caller_runs). The refusals come from a seccomp filter
 * installed on one thread of ours, which binds that thread and the threads it starts, so a
 * flock_resize or flock_pool_new called there starts workers that cannot pin, or cannot start
 * at all. Linux on x86-64 and AArch64; elsewhere, or where seccomp filters are refused, each
 * test says it was skipped. Built by ffi/tests/driver.sh (plain, valgrind, ASan with UBSan)
 * with -Wall -Wextra -Wshadow -Wconversion -Werror. Prints one line per test and a closing "N passed, M failed"; exits
 * non-zero on a failure.
 */
#define _GNU_SOURCE
#include "flock.h"
#include "check.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__))
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#define CAN_REFUSE 1
#else
#define CAN_REFUSE 0
#endif

/* Set where the seccomp filter could not be installed; RUN clears it before each test. */
static int test_skipped;

/* What the filter refuses. */
typedef enum { REFUSE_PINNING, REFUSE_THREADS } refusal_t;

/* Installs, on the calling thread, a filter that fails the refused calls; 0 on success. */
static int refuse(refusal_t what) {
#if CAN_REFUSE
    struct sock_filter pin[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0), /* seccomp_data.nr */
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_sched_setaffinity, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_filter threads[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 435 /* clone3 */, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EAGAIN),
    };
    struct sock_fprog prog;
    if (what == REFUSE_PINNING) {
        prog.len = (unsigned short)(sizeof pin / sizeof pin[0]);
        prog.filter = pin;
    } else {
        prog.len = (unsigned short)(sizeof threads / sizeof threads[0]);
        prog.filter = threads;
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1L, 0L, 0L, 0L) != 0) return -1;
    return prctl(PR_SET_SECCOMP, (unsigned long)SECCOMP_MODE_FILTER, &prog) == 0 ? 0 : -1;
#else
    (void)what;
    return -1;
#endif
}

/* A call made on a thread of its own, under a refusal. */
typedef struct {
    refusal_t what;
    flock_pool_t *pool;
    uint32_t workers;          /* for RESIZE */
    const flock_config_t *cfg; /* for POOL_NEW */
    flock_pool_t *made;
    void (*task)(void *);
    void *arg;
    enum { RESIZE, POOL_NEW, SUBMIT } call;
    int skipped;
    flock_status_t status;
    pthread_t me;
} refused_call_t;

static void *refused_call(void *p) {
    refused_call_t *c = p;
    c->me = pthread_self();
    if (refuse(c->what) != 0) {
        c->skipped = 1;
        return NULL;
    }
    switch (c->call) {
    case RESIZE: c->status = flock_resize(c->pool, c->workers); break;
    case POOL_NEW: c->status = flock_pool_new(c->cfg, &c->made); break;
    case SUBMIT: c->status = flock_submit(c->pool, c->task, c->arg); break;
    }
    return NULL;
}

/* Runs `c` on a new thread and waits for it; false (the test skipped) where the filter
 * could not be installed. */
static int run_refused(refused_call_t *c) {
    pthread_t t;
    if (pthread_create(&t, NULL, refused_call, c) != 0) {
        fprintf(stderr, "  could not start the refusing thread\n");
        test_failed = 1;
        return 0;
    }
    pthread_join(t, NULL);
    if (c->skipped) test_skipped = 1;
    return !c->skipped;
}

static void count_task(void *arg) { atomic_fetch_add((atomic_uint *)arg, 1); }

/* The pool still has its one worker and runs tasks on it; a grow from this thread fills the
 * slots the refused one took. */
static void one_worker_left_then_grow(flock_pool_t *pool) {
    flock_stats_t s;
    CHECK_EQ(flock_stats(pool, &s), FLOCK_OK);
    CHECK_EQ(s.workers, 1);
    atomic_uint ran = 0;
    for (int i = 0; i < 100; i++) CHECK_EQ(flock_submit(pool, count_task, &ran), FLOCK_OK);
    CHECK_EQ(flock_wait(pool), FLOCK_OK);
    CHECK_EQ(atomic_load(&ran), 100);
    CHECK_EQ(flock_resize(pool, 3), FLOCK_OK);
    CHECK_EQ(flock_stats(pool, &s), FLOCK_OK);
    CHECK_EQ(s.workers, 3);
}

static void test_resize_where_pinning_is_refused(void) {
    flock_config_t cfg;
    flock_config_init(&cfg);
    cfg.workers = 1;
    cfg.max_workers = 3;
    cfg.pin_workers = true;
    flock_pool_t *pool = NULL;
    CHECK_EQ(flock_pool_new(&cfg, &pool), FLOCK_OK);
    if (pool == NULL) return;
    refused_call_t c = {.what = REFUSE_PINNING, .pool = pool, .workers = 3, .call = RESIZE};
    if (run_refused(&c)) {
        CHECK_EQ(c.status, FLOCK_ERR_PIN_FAILED);
        one_worker_left_then_grow(pool);
    }
    flock_pool_free(pool);
}

static void test_resize_where_threads_are_refused(void) {
    flock_config_t cfg;
    flock_config_init(&cfg);
    cfg.workers = 1;
    cfg.max_workers = 3;
    flock_pool_t *pool = NULL;
    CHECK_EQ(flock_pool_new(&cfg, &pool), FLOCK_OK);
    if (pool == NULL) return;
    refused_call_t c = {.what = REFUSE_THREADS, .pool = pool, .workers = 3, .call = RESIZE};
    if (run_refused(&c)) {
        CHECK_EQ(c.status, FLOCK_ERR_THREAD_SPAWN);
        one_worker_left_then_grow(pool);
    }
    flock_pool_free(pool);
}

static void test_pool_new_where_pinning_or_threads_are_refused(void) {
    flock_config_t cfg;
    flock_config_init(&cfg);
    cfg.workers = 2;
    cfg.pin_workers = true;
    refused_call_t c = {.what = REFUSE_PINNING, .cfg = &cfg, .call = POOL_NEW};
    if (run_refused(&c)) {
        CHECK_EQ(c.status, FLOCK_ERR_PIN_FAILED);
        CHECK_EQ(c.made == NULL, 1);
    }
    cfg.pin_workers = false;
    refused_call_t d = {.what = REFUSE_THREADS, .cfg = &cfg, .call = POOL_NEW};
    if (run_refused(&d)) {
        CHECK_EQ(d.status, FLOCK_ERR_THREAD_SPAWN);
        CHECK_EQ(d.made == NULL, 1);
    }
}

typedef struct {
    pthread_t ran_on;
    atomic_int ran;
} where_t;

static void record_thread(void *arg) {
    where_t *w = arg;
    w->ran_on = pthread_self();
    atomic_store(&w->ran, 1);
}

static void test_spawn_thread_refused_runs_on_the_caller(void) {
    flock_config_t cfg;
    flock_config_init(&cfg);
    cfg.workers = 1;
    cfg.capacity = 1;
    cfg.when_full = FLOCK_WHEN_FULL_SPAWN_THREAD;
    cfg.max_spawned_threads = 1;
    flock_pool_t *pool = NULL;
    CHECK_EQ(flock_pool_new(&cfg, &pool), FLOCK_OK);
    if (pool == NULL) return;
    gate_t g = {0, 0};
    CHECK_EQ(flock_submit(pool, gate_task, &g), FLOCK_OK);
    while (!atomic_load(&g.started)) sleep_ms(1);
    /* The queue is full from here: the next submit goes to a helper thread. */
    atomic_uint filler = 0;
    CHECK_EQ(flock_submit(pool, count_task, &filler), FLOCK_OK);
    where_t w = {.ran = 0};
    refused_call_t c = {.what = REFUSE_THREADS, .pool = pool, .task = record_thread, .arg = &w,
                        .call = SUBMIT};
    if (run_refused(&c)) {
        CHECK_EQ(c.status, FLOCK_OK);
        /* It ran inside flock_submit, on the submitting thread. */
        CHECK_EQ(atomic_load(&w.ran), 1);
        CHECK_EQ(pthread_equal(w.ran_on, c.me) != 0, 1);
        flock_stats_t s;
        CHECK_EQ(flock_stats(pool, &s), FLOCK_OK);
        CHECK_EQ(s.caller_runs, 1);
        CHECK_EQ(s.spawned_thread, 0);
    }
    atomic_store(&g.open, 1);
    CHECK_EQ(flock_wait(pool), FLOCK_OK);
    flock_pool_free(pool);
}

/* check.h's RUN, with a third verdict: a test that could not install its filter and failed
 * no check prints "skip name (...)" and counts as passed. */
#undef RUN
#define RUN(t)                                                    \
    do {                                                          \
        test_failed = 0;                                          \
        test_skipped = 0;                                         \
        t();                                                      \
        if (!test_failed && test_skipped) {                       \
            printf("skip %s (no seccomp filter here)\n", #t);     \
            passed++;                                             \
        } else {                                                  \
            check_count(#t, &passed, &failed);                    \
        }                                                         \
    } while (0)

int main(void) {
    int passed = 0, failed = 0;
    printf("libflock %s, C tests of the OS's refusals\n", flock_version());
    RUN(test_resize_where_pinning_is_refused);
    RUN(test_resize_where_threads_are_refused);
    RUN(test_pool_new_where_pinning_or_threads_are_refused);
    RUN(test_spawn_thread_refused_runs_on_the_caller);
    return check_summary(passed, failed);
}
