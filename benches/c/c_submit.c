/*
 * c-submit (docs/bench.md, workload 9): the body of 1u-1Mt, through the C ABI of libflock.
 *
 * One thread (main) submits TASKS near-empty tasks with flock_submit(pool, fn, arg), a plain C
 * callback, then waits for all of them with flock_wait; the time from the first submit to the
 * return of the wait gives tasks/s. The pool has libflock's defaults (flock_config_init: one
 * worker per CPU this process may run on, capacity 65,536, FLOCK_WHEN_FULL_BLOCK, no latency
 * tracking), as the Rust side's `flock` has.
 *
 * The task mirrors the Rust body (benches/benches/common/workloads.rs, one_submitter) operation for
 * operation, so that the difference is the C ABI and not the task: the Rust side clones an
 * Arc per submit (a relaxed increment of a shared count), and each task bumps a relaxed hit
 * counter and drops its Arc (a release decrement); here a shared struct holds both counts.
 *
 * Built and run by benches/examples/bench_report.rs (static link against libflock.a):
 *   cargo build --release -p flock-ffi
 *   cc -O2 -std=c11 -Iinclude benches/c/c_submit.c $CARGO_TARGET_DIR/release/libflock.a \
 *      -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc -o c_submit
 *   ./c_submit [--runs N | --serve] [--warmup N] [--tasks N]
 * Runs the warm-up runs (default 1), prints a comment line starting with '#' (the report
 * waits for it: the pool is ready), then one line per measured run: tasks per second. With
 * --serve, one measured run per line read from stdin, until end of file (the report's way
 * of alternating it run by run with the Rust side). One pool serves every run.
 * Exits non-zero when a call fails or a task did not run exactly once.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */

#include <flock.h>

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* What a run's tasks share: the Arc's strong count and the hit counter of the Rust body. */
struct shared {
    atomic_size_t refs;
    atomic_size_t hits;
};

static void task(void *arg) {
    struct shared *s = arg;
    atomic_fetch_add_explicit(&s->hits, 1, memory_order_relaxed);
    /* Arc::drop: release decrement; the last owner frees after an acquire fence. */
    if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_release) == 1) {
        atomic_thread_fence(memory_order_acquire);
        free(s);
    }
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void check(flock_status_t st, const char *what) {
    if (st != FLOCK_OK) {
        fprintf(stderr, "c_submit: %s: %s\n", what, flock_status_str(st));
        exit(1);
    }
}

/* One run of 1u-1Mt; returns tasks per second. */
static double one_run(flock_pool_t *pool, size_t tasks) {
    struct shared *s = malloc(sizeof *s);
    if (s == NULL) {
        fprintf(stderr, "c_submit: out of memory\n");
        exit(1);
    }
    atomic_init(&s->refs, 1);
    atomic_init(&s->hits, 0);
    double start = now_s();
    for (size_t i = 0; i < tasks; i++) {
        atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed); /* Arc::clone */
        check(flock_submit(pool, task, s), "flock_submit");
    }
    check(flock_wait(pool), "flock_wait");
    double took = now_s() - start;
    size_t hits = atomic_load_explicit(&s->hits, memory_order_relaxed);
    if (hits != tasks) {
        fprintf(stderr, "c_submit: %zu tasks ran, expected %zu\n", hits, tasks);
        exit(1);
    }
    /* The measuring thread's own reference, dropped after the clock stopped (as in Rust). */
    if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_release) == 1) {
        atomic_thread_fence(memory_order_acquire);
        free(s);
    }
    return (double)tasks / took;
}

static long arg_value(int argc, char **argv, int *i) {
    if (*i + 1 >= argc) {
        fprintf(stderr, "c_submit: %s needs a value\n", argv[*i]);
        exit(2);
    }
    *i += 1;
    return strtol(argv[*i], NULL, 10);
}

int main(int argc, char **argv) {
    long runs = 3, warmup = 1, tasks = 1000000;
    int serve = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--serve") == 0) {
            serve = 1;
        } else if (strcmp(argv[i], "--runs") == 0) {
            runs = arg_value(argc, argv, &i);
        } else if (strcmp(argv[i], "--warmup") == 0) {
            warmup = arg_value(argc, argv, &i);
        } else if (strcmp(argv[i], "--tasks") == 0) {
            tasks = arg_value(argc, argv, &i);
        } else {
            fprintf(stderr, "usage: c_submit [--runs N | --serve] [--warmup N] [--tasks N]\n");
            return 2;
        }
    }
    if (runs < 1 || warmup < 0 || tasks < 1) {
        fprintf(stderr, "c_submit: runs and tasks must be at least 1, warmup at least 0\n");
        return 2;
    }

    flock_config_t cfg;
    flock_config_init(&cfg);
    flock_pool_t *pool;
    check(flock_pool_new(&cfg, &pool), "flock_pool_new");
    for (long r = 0; r < warmup; r++) one_run(pool, (size_t)tasks);
    flock_stats_t st;
    check(flock_stats(pool, &st), "flock_stats");
    printf("# libflock %s, %" PRIu32 " workers, capacity %" PRIu64 ", %ld tasks per run\n",
           flock_version(), st.workers, cfg.capacity, tasks);
    fflush(stdout);

    if (serve) {
        char line[64];
        while (fgets(line, sizeof line, stdin) != NULL) {
            printf("%.1f\n", one_run(pool, (size_t)tasks));
            fflush(stdout);
        }
    } else {
        for (long r = 0; r < runs; r++) printf("%.1f\n", one_run(pool, (size_t)tasks));
    }

    flock_pool_free(pool);
    return 0;
}
