// oneTBB-style algorithms on flock (flock_algorithms.hpp, included by flock.hpp): a
// deterministic parallel_reduce, parallel_for over a blocked_range and over indices,
// parallel_for_each, parallel_invoke, all on the process-wide pool flock::global()
// (FLOCK_WORKERS sets its size), and a nested call that completes on a one-worker pool.
// Exits non-zero when a result is not the sequential one.
//
//   c++ -std=c++17 algorithms.cpp $(pkg-config --cflags --libs flock) -pthread -o algorithms
#include <flock.hpp>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

int main() {
    std::vector<double> v(1 << 20);
    flock::parallel_for(size_t(0), v.size(), [&](size_t i) { v[i] = 1.0 / double(i + 1); });

    // The same tree every run: the sum is bit-identical run to run and on any pool.
    auto sum = [&](flock::pool& pool) {
        return flock::parallel_reduce(
            pool, flock::blocked_range<size_t>(0, v.size()), 0.0,
            [&](const flock::blocked_range<size_t>& r, double acc) {
                for (size_t i = r.begin(); i != r.end(); ++i) acc += v[i];
                return acc;
            },
            std::plus<double>());
    };
    flock::pool one(flock::config().workers(1));
    double on_global = sum(flock::global()), on_one = sum(one);

    std::vector<std::string> words{"pool", "lane", "group"};
    flock::parallel_for_each(words, [](std::string& w) { w += "s"; });

    long evens = 0, odds = 0;
    flock::parallel_invoke([&] { for (long i = 0; i < 1000; i += 2) evens += i; },
                           [&] { for (long i = 1; i < 1000; i += 2) odds += i; });

    // Nested: each piece of the outer loop runs a reduce on the same one-worker pool, whose
    // wait runs the inner pieces itself.
    std::vector<long> rows(8);
    flock::parallel_for(one, flock::blocked_range<size_t>(0, rows.size()), [&](const flock::blocked_range<size_t>& r) {
        for (size_t row = r.begin(); row != r.end(); ++row)
            rows[row] = flock::parallel_reduce(
                one, flock::blocked_range<long>(0, 1000), 0L,
                [](const flock::blocked_range<long>& q, long acc) {
                    for (long i = q.begin(); i != q.end(); ++i) acc += i;
                    return acc;
                },
                std::plus<long>());
    });

    std::printf("harmonic sum %.15f (global pool, %u workers) == %.15f (one worker): %s\n", on_global,
                flock::global().workers(), on_one, on_global == on_one ? "bit-identical" : "DIFFERENT");
    std::printf("%s %s %s; evens %ld + odds %ld = %ld; nested rows of %ld\n", words[0].c_str(), words[1].c_str(),
                words[2].c_str(), evens, odds, evens + odds, rows[7]);
    bool ok = on_global == on_one && words[2] == "groups" && evens + odds == 499500 && rows[0] == 499500 &&
              rows[7] == 499500;
    return ok ? 0 : 1;
}
