/*
 * A program that waits on a task group from its main thread: scripts/c-tests.sh runs
 * ffi/README.md's valgrind line on it, as written, with the installed suppressions (the
 * wait gives main a Rust thread handle that memcheck reports as "possibly lost").
 */
#include "flock.h"

#include <stdatomic.h>
#include <stdio.h>

static void count_task(void *arg) { atomic_fetch_add((atomic_int *)arg, 1); }

int main(void) {
    flock_pool_t *pool = NULL;
    if (flock_pool_new(NULL, &pool) != FLOCK_OK) return 1;
    flock_group_t *group = NULL;
    if (flock_group_new(pool, &group) != FLOCK_OK) return 1;
    atomic_int n = 0;
    for (int i = 0; i < 1000; i++)
        if (flock_group_submit(group, count_task, &n) != FLOCK_OK) return 1;
    if (flock_group_wait(group) != FLOCK_OK) return 1;
    flock_group_free(group);
    flock_pool_free(pool);
    printf("%d group tasks ran\n", atomic_load(&n));
    return atomic_load(&n) == 1000 ? 0 : 1;
}
