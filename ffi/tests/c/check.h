/*
 * What the C test programs of libflock (the .c files beside it, built by ffi/tests/driver.sh)
 * share: the failure flag and the CHECK macros that set it, sleep_ms, the gate task that
 * holds a worker until it is opened, and RUN, which runs one test and prints "ok   name" or
 * "FAIL name" (check_summary closes with "N passed, M failed"). Macros and static inline
 * functions only; C11, warning-free under -Wall -Wextra -Wpedantic -Wshadow -Wconversion.
 *
 * Include it as "check.h" after defining _POSIX_C_SOURCE (200809L) or _GNU_SOURCE: sleep_ms
 * needs nanosleep. RUN counts into main's locals `passed` and `failed`; a program whose run
 * loop does more (adversarial.c's watchdog, os_refusals.c's skips) #undefs it and defines its
 * own around check_count.
 */
#ifndef FLOCK_TESTS_CHECK_H
#define FLOCK_TESTS_CHECK_H

#if !defined(_POSIX_C_SOURCE) && !defined(_GNU_SOURCE)
#error "define _POSIX_C_SOURCE 200809L (or _GNU_SOURCE) before including check.h"
#endif

#include "flock.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/* Set by a failed check; RUN clears it before each test. */
static int test_failed;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
            test_failed = 1;                                                          \
        }                                                                             \
    } while (0)

/* Compares as uint64_t; a is evaluated before b. */
#define CHECK_EQ(a, b)                                                                \
    do {                                                                              \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                              \
        if (a_ != b_) {                                                               \
            fprintf(stderr, "  %s:%d: %s == %" PRIu64 ", expected %s == %" PRIu64 "\n", \
                    __FILE__, __LINE__, #a, a_, #b, b_);                              \
            test_failed = 1;                                                          \
        }                                                                             \
    } while (0)

#define CHECK_STATUS(expr, want)                                                       \
    do {                                                                              \
        flock_status_t got_ = (expr);                                                 \
        if (got_ != (want)) {                                                         \
            fprintf(stderr, "  %s:%d: %s returned %d (%s), expected %s\n", __FILE__,   \
                    __LINE__, #expr, (int)got_, flock_status_str(got_), #want);       \
            test_failed = 1;                                                          \
        }                                                                             \
    } while (0)

/* A status that must be one of two. */
#define CHECK_STATUS2(expr, want1, want2)                                              \
    do {                                                                              \
        flock_status_t got_ = (expr);                                                 \
        if (got_ != (want1) && got_ != (want2)) {                                     \
            fprintf(stderr, "  %s:%d: %s returned %d (%s), expected %s or %s\n",       \
                    __FILE__, __LINE__, #expr, (int)got_, flock_status_str(got_),     \
                    #want1, #want2);                                                  \
            test_failed = 1;                                                          \
        }                                                                             \
    } while (0)

static inline void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A task that holds its worker until the gate opens. `started` counts the gate tasks that
 * have begun (one gate may hold several workers); `open` set to 1 lets them all return. */
typedef struct {
    atomic_int started;
    atomic_int open;
} gate_t;

static inline void gate_task(void *arg) {
    gate_t *g = arg;
    atomic_fetch_add(&g->started, 1);
    while (!atomic_load(&g->open)) sleep_ms(1);
}

/* Until at least one gate task has begun. */
static inline void gate_wait_started(gate_t *g) {
    while (!atomic_load(&g->started)) sleep_ms(1);
}

/* A finished test's line, "ok   name" or "FAIL name" (flushed, so it reaches a pipe before a
 * later crash), counted into *passed or *failed. */
static inline void check_count(const char *name, int *passed, int *failed) {
    printf("%s %s\n", test_failed ? "FAIL" : "ok  ", name);
    fflush(stdout);
    if (test_failed)
        (*failed)++;
    else
        (*passed)++;
}

/* Runs test(), a void (void) function, with the flag cleared; main declares
 * `int passed = 0, failed = 0;`. */
#define RUN(test)                                 \
    do {                                          \
        test_failed = 0;                          \
        test();                                   \
        check_count(#test, &passed, &failed);     \
    } while (0)

/* The closing line, "N passed, M failed"; main's exit status (1 on a failure). */
static inline int check_summary(int passed, int failed) {
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

#endif /* FLOCK_TESTS_CHECK_H */
