// libflock from C++17 through the RAII wrapper flock.hpp: lambdas, a parallel sum, futures
// (submit_task, multi_future) that carry results and exceptions back, an exception counted as
// a failed task, and the statistics.
//
//   c++ -std=c++17 wrapper.cpp $(pkg-config --cflags --libs flock) -pthread -o wrapper
#include <flock.hpp>

#include <atomic>
#include <cstdio>
#include <future>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

int main() {
    try {
        flock::pool pool(flock::config().capacity(4096));

        std::vector<long> data(1'000'000);
        std::iota(data.begin(), data.end(), 1L);
        std::atomic<long> total{0};
        const size_t chunk = 10'000;
        for (size_t start = 0; start < data.size(); start += chunk) {
            pool.submit([&data, &total, start, chunk] {
                long part = 0;
                for (size_t i = start; i < start + chunk && i < data.size(); i++) part += data[i];
                total += part;
            });
        }
        pool.submit([] { throw std::runtime_error("this task fails; the pool counts it"); });

        // Futures: results come back, and so do exceptions (the pool counts those tasks too).
        flock::multi_future<long> squares;
        for (long i = 1; i <= 10; i++) squares.push_back(pool.submit_task([i] { return i * i; }));
        std::future<void> checked = pool.submit_task([] { throw std::runtime_error("seen by main"); });
        long sum_of_squares = 0;
        for (long v : squares.get()) sum_of_squares += v;
        std::string seen;
        try {
            checked.get();
        } catch (const std::runtime_error& e) {
            seen = e.what();
        }
        pool.wait();

        flock_stats_t s = pool.stats();
        std::printf("libflock %s: %u workers\n", flock_version(), s.workers);
        std::printf("sum %ld (expected %ld)\n", total.load(), 1'000'000L * 1'000'001L / 2);
        std::printf("completed %llu, failed %llu\n", (unsigned long long)s.completed,
                    (unsigned long long)s.panicked);
        std::printf("sum of squares %ld (expected 385), caught \"%s\"\n", sum_of_squares, seen.c_str());
        return total == 1'000'000L * 1'000'001L / 2 && s.panicked == 2 && sum_of_squares == 385 && seen == "seen by main"
                   ? 0
                   : 1;
    } catch (const flock::error& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
}
