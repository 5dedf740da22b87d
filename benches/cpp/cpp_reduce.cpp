// cpp-reduce (docs/bench.md): flock::parallel_reduce from C++ against the same reduction
// split statically over plain std::threads, the reference (as the no-pool row is for
// 1u-1Mt): what the algorithm layer costs over hand-made threads.
//
// The reduction: the sum of 16 Mi doubles (a 128 MiB array, filled once before the clock),
// a dependent chain of additions in each piece (the same loop, sum_span, on both sides).
//   --flock    flock::parallel_reduce(blocked_range<size_t>(0, n), 0.0, body, std::plus)
//              on flock::global() (libflock's defaults: one worker per CPU this process may
//              run on; FLOCK_WORKERS changes it), pieces and order fixed by the range;
//   --threads  one std::thread per CPU this process may run on, each summing a contiguous
//              slice of n / threads elements, started and joined in every run (what a plain
//              std::thread user writes), the partial sums added in thread order.
// A run is one whole reduction; its time goes from the call to the returned sum.
//
// Built and run by benches/examples/bench_report.rs (static link against libflock.a):
//   cargo build --release -p flock-ffi
//   c++ -O2 -std=c++17 -Iinclude benches/cpp/cpp_reduce.cpp $CARGO_TARGET_DIR/release/libflock.a
//       -pthread -lgcc_s -lutil -lrt -lpthread -lm -ldl -o cpp_reduce   (one line)
//   ./cpp_reduce --flock|--threads [--runs N | --serve] [--warmup N]
// Runs the warm-up runs (default 1), prints a comment line starting with '#' (the report
// waits for it), then one line per measured run: its time in seconds. With --serve, one
// measured run per line read from stdin, until end of file. Exits non-zero when a sum is not
// the sequential one (within rounding), or when --flock's sums differ run to run at all.
#include <flock.hpp>

#include <sched.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

static const size_t N = size_t(16) << 20;

static double sum_span(const double* v, size_t n, double acc) {
    for (size_t i = 0; i < n; ++i) acc += v[i];
    return acc;
}

static unsigned cpus() {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return unsigned(CPU_COUNT(&set));
    unsigned n = std::thread::hardware_concurrency();
    return n ? n : 1;
}

static double with_flock(const std::vector<double>& v) {
    return flock::parallel_reduce(
        flock::blocked_range<size_t>(0, v.size()), 0.0,
        [&](const flock::blocked_range<size_t>& r, double acc) { return sum_span(v.data() + r.begin(), r.size(), acc); },
        std::plus<double>());
}

static double with_threads(const std::vector<double>& v, unsigned threads) {
    std::vector<double> part(threads, 0.0);
    std::vector<std::thread> pool;
    size_t per = v.size() / threads;
    for (unsigned t = 0; t < threads; t++) {
        size_t lo = t * per, hi = t + 1 == threads ? v.size() : lo + per;
        pool.emplace_back([&v, &part, t, lo, hi] { part[t] = sum_span(v.data() + lo, hi - lo, 0.0); });
    }
    double sum = 0.0;
    for (unsigned t = 0; t < threads; t++) {
        pool[t].join();
        sum += part[t];
    }
    return sum;
}

int main(int argc, char** argv) {
    long runs = 3, warmup = 1;
    bool serve = false;
    int mode = 0;  // 1 flock, 2 threads
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        if (a == "--flock") mode = 1;
        else if (a == "--threads") mode = 2;
        else if (a == "--serve") serve = true;
        else if ((a == "--runs" || a == "--warmup") && i + 1 < argc) (a == "--runs" ? runs : warmup) = std::atol(argv[++i]);
        else mode = -1;
    }
    if (mode <= 0 || runs < 1 || warmup < 0) {
        std::fprintf(stderr, "usage: cpp_reduce --flock|--threads [--runs N | --serve] [--warmup N]\n");
        return 2;
    }
    std::vector<double> v(N);
    for (size_t i = 0; i < N; i++) v[i] = 1.0 / double(i % 1000 + 1);
    const double sequential = sum_span(v.data(), N, 0.0);
    const unsigned threads = cpus();
    double first = 0;
    bool have_first = false;
    auto one_run = [&]() -> double {
        auto t0 = std::chrono::steady_clock::now();
        double sum = mode == 1 ? with_flock(v) : with_threads(v, threads);
        double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (std::fabs(sum - sequential) > 1e-9 * sequential) {
            std::fprintf(stderr, "cpp_reduce: sum %.17g, sequential %.17g\n", sum, sequential);
            std::exit(1);
        }
        if (mode == 1 && have_first && std::memcmp(&sum, &first, sizeof sum) != 0) {
            std::fprintf(stderr, "cpp_reduce: parallel_reduce gave %.17g, then %.17g\n", first, sum);
            std::exit(1);
        }
        first = sum;
        have_first = true;
        return took;
    };
    for (long r = 0; r < warmup; r++) one_run();
    if (mode == 1)
        std::printf("# cpp-reduce flock parallel_reduce, libflock %s, global pool of %u workers, %zu doubles\n",
                    flock_version(), flock::global().workers(), N);
    else
        std::printf("# cpp-reduce std::thread static split, %u threads, %zu doubles\n", threads, N);
    std::fflush(stdout);
    if (serve) {
        char line[64];
        while (std::fgets(line, sizeof line, stdin) != nullptr) {
            std::printf("%.9f\n", one_run());
            std::fflush(stdout);
        }
    } else {
        for (long r = 0; r < runs; r++) std::printf("%.9f\n", one_run());
    }
    return 0;
}
