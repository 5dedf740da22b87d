// What one membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) costs on this machine: the caller,
// with and without another thread of the process running on the other CPU, and that other
// thread (the IPI it takes). flock's sleep protocol issues one per park of a worker
// (src/sleep/barrier.rs); the fence-free deque pop of issue 15's moonshot would issue one
// per steal. Linux only; two CPUs or more.
//
//   cc -O2 -pthread -o /tmp/membarrier_cost benches/probes/membarrier_cost.c && /tmp/membarrier_cost
#define _GNU_SOURCE
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

static long membarrier(int cmd) { return syscall(SYS_membarrier, cmd, 0, 0); }

// Spins on CPU 1 until told to stop; returns its count rate (iterations per second).
static void *spinner(void *out) {
    pin(1);
    unsigned long n = 0;
    double t0 = now();
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) n++;
    *(double *)out = n / (now() - t0);
    return 0;
}

// Calls membarrier for `secs` seconds (or sleeps, with `calls` false) on CPU 0 while a spinner
// runs on CPU 1 (or alone, with `sibling` false). Returns ns per call; `rate` the spinner's.
static double run(int sibling, int calls, double secs, double *rate, long *n) {
    pthread_t b;
    atomic_store(&stop, 0);
    if (sibling) pthread_create(&b, 0, spinner, rate);
    pin(0);
    usleep(20000);
    long k = 0;
    double t0 = now();
    while (now() - t0 < secs) {
        if (calls) {
            membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
            k++;
        } else {
            usleep(1000);
        }
    }
    double t = now() - t0;
    atomic_store(&stop, 1);
    if (sibling) pthread_join(b, 0);
    *n = k;
    return k ? t / k * 1e9 : 0;
}

int main(void) {
    if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0) {
        perror("membarrier register");
        return 1;
    }
    for (int round = 0; round < 3; round++) {
        double rate_quiet = 0, rate_hit = 0;
        long n;
        double alone = run(0, 1, 0.5, 0, &n);
        double with = run(1, 1, 2.0, &rate_hit, &n);
        long none;
        run(1, 0, 2.0, &rate_quiet, &none);
        double lost_s = (1 - rate_hit / rate_quiet) * 2.0;
        printf("round %d: caller %.0f ns a call with no other thread running, %.0f ns with one "
               "spinning on the other CPU; that thread lost %.1f%% of its count rate to %ld "
               "calls: %.2f us a call\n",
               round, alone, with, 100 * (1 - rate_hit / rate_quiet), n, lost_s / n * 1e6);
    }
    return 0;
}
