/*
 * libflock from C11: eight threads submit 50,000 tasks each, the main thread waits for all of
 * them and prints the pool's statistics.
 *
 *   cc -std=c11 many_submitters.c $(pkg-config --cflags --libs flock) -pthread -o many_submitters
 */
#include <flock.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 8
#define TASKS_PER_THREAD 50000

static atomic_uint_fast64_t sum;

static void add(void *arg) { atomic_fetch_add(&sum, (uint64_t)(uintptr_t)arg); }

static void *submitter(void *pool) {
    for (uintptr_t i = 1; i <= TASKS_PER_THREAD; i++) {
        flock_status_t st = flock_submit(pool, add, (void *)i);
        if (st != FLOCK_OK) {
            fprintf(stderr, "submit: %s\n", flock_status_str(st));
            exit(1);
        }
    }
    return NULL;
}

int main(void) {
    flock_config_t cfg;
    flock_config_init(&cfg);
    cfg.capacity = 10000; /* submitters block while 10,000 tasks wait */
    cfg.track_latency = true;
    flock_pool_t *pool;
    flock_status_t st = flock_pool_new(&cfg, &pool);
    if (st != FLOCK_OK) {
        fprintf(stderr, "flock_pool_new: %s\n", flock_status_str(st));
        return 1;
    }

    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&threads[i], NULL, submitter, pool);
    for (int i = 0; i < THREADS; i++) pthread_join(threads[i], NULL);
    flock_wait(pool);

    flock_stats_t s;
    flock_stats(pool, &s);
    uint64_t want = (uint64_t)THREADS * TASKS_PER_THREAD * (TASKS_PER_THREAD + 1) / 2;
    printf("libflock %s: %" PRIu32 " workers\n", flock_version(), s.workers);
    printf("sum %" PRIu64 " (expected %" PRIu64 ")\n", (uint64_t)atomic_load(&sum), want);
    printf("submitted %" PRIu64 "  completed %" PRIu64 "  panicked %" PRIu64 "  rejected %" PRIu64
           "  stolen %" PRIu64 "  parks %" PRIu64 "\n",
           s.submitted, s.completed, s.panicked, s.rejected, s.stolen, s.parks);
    printf("run time p50 %" PRIu64 " ns, p99 %" PRIu64 " ns; queue wait p50 %" PRIu64 " ns\n",
           s.run_time.p50_ns, s.run_time.p99_ns, s.queue_wait.p50_ns);
    for (uint32_t i = 0; i < s.workers; i++) {
        flock_worker_stats_t w;
        flock_worker_stats(pool, i, &w);
        printf("  worker %" PRIu32 ": executed %" PRIu64 ", stolen %" PRIu64 "\n", w.index, w.executed, w.stolen);
    }
    flock_pool_free(pool);
    return atomic_load(&sum) == want && s.completed == (uint64_t)THREADS * TASKS_PER_THREAD ? 0 : 1;
}
