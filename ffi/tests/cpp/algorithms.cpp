// Tests of include/flock_algorithms.hpp: parallel_reduce, parallel_invoke, parallel_for over
// ranges and iterators, parallel_for_each, blocked_range, and the process-wide pool
// flock::global(). Run by ffi/tests/driver.sh (plain, valgrind, ASan); a program of its own
// because the global pool is process-wide. Prints one line per test and "N passed, M failed".
//
// The first tests are oneTBB's documentation examples (its Developer Guide's parallel_for,
// parallel_reduce and parallel_invoke pages), run as written there but for the namespace:
// `using namespace flock;` where the guide has `using namespace oneapi::tbb;`.
#include "flock.hpp"

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cinttypes>
#include <cmath>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <list>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

static bool test_failed;

#define CHECK(cond)                                                                           \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            std::fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
            test_failed = true;                                                               \
        }                                                                                     \
    } while (0)

#define CHECK_EQ(a, b)                                                                              \
    do {                                                                                            \
        auto a_ = static_cast<uint64_t>(a);                                                         \
        auto b_ = static_cast<uint64_t>(b);                                                         \
        if (a_ != b_) {                                                                             \
            std::fprintf(stderr, "  %s:%d: %s == %" PRIu64 ", expected %" PRIu64 "\n", __FILE__, \
                         __LINE__, #a, a_, b_);                                                     \
            test_failed = true;                                                                     \
        }                                                                                           \
    } while (0)

static uint64_t scale = 1;

// ---- oneTBB's documentation examples, namespace aside ----------------------------------

namespace guide {
using namespace flock;

static std::atomic<uint64_t> foo_calls{0};
static float Foo(float x) {
    foo_calls++;
    return x * 2;
}

// parallel_for: "Lambda Expressions" and the ApplyFoo body class.
class ApplyFoo {
    float* const my_a;

public:
    void operator()(const blocked_range<size_t>& r) const {
        float* a = my_a;
        for (size_t i = r.begin(); i != r.end(); ++i) a[i] = Foo(a[i]);
    }
    ApplyFoo(float a[]) : my_a(a) {}
};

void ParallelApplyFoo(float a[], size_t n) { parallel_for(blocked_range<size_t>(0, n), ApplyFoo(a)); }

void ParallelApplyFooLambda(float* a, size_t n) {
    parallel_for(blocked_range<size_t>(0, n), [=](const blocked_range<size_t>& r) {
        for (size_t i = r.begin(); i != r.end(); ++i) a[i] = Foo(a[i]);
    });
}

void ParallelApplyFooCompact(float* a, size_t n) { parallel_for(size_t(0), n, [=](size_t i) { a[i] = Foo(a[i]); }); }

// parallel_reduce: SumFoo (imperative form).
float SerialSumFoo(float a[], size_t n) {
    float sum = 0;
    for (size_t i = 0; i != n; ++i) sum += Foo(a[i]);
    return sum;
}

class SumFoo {
    float* my_a;

public:
    float my_sum;
    void operator()(const blocked_range<size_t>& r) {
        float* a = my_a;
        float sum = my_sum;
        size_t end = r.end();
        for (size_t i = r.begin(); i != end; ++i) sum += Foo(a[i]);
        my_sum = sum;
    }
    SumFoo(SumFoo& x, split) : my_a(x.my_a), my_sum(0) {}
    void join(const SumFoo& y) { my_sum += y.my_sum; }
    SumFoo(float a[]) : my_a(a), my_sum(0) {}
};

float ParallelSumFoo(float a[], size_t n) {
    SumFoo sf(a);
    parallel_reduce(blocked_range<size_t>(0, n), sf);
    return sf.my_sum;
}

// parallel_reduce: MinIndexFoo (imperative form, a non-commutative join).
long SerialMinIndexFoo(const float a[], size_t n) {
    float value_of_min = FLT_MAX;
    long index_of_min = -1;
    for (size_t i = 0; i < n; ++i) {
        float value = Foo(a[i]);
        if (value < value_of_min) {
            value_of_min = value;
            index_of_min = static_cast<long>(i);
        }
    }
    return index_of_min;
}

class MinIndexFoo {
    const float* const my_a;

public:
    float value_of_min;
    long index_of_min;
    void operator()(const blocked_range<size_t>& r) {
        const float* a = my_a;
        for (size_t i = r.begin(); i != r.end(); ++i) {
            float value = Foo(a[i]);
            if (value < value_of_min) {
                value_of_min = value;
                index_of_min = static_cast<long>(i);
            }
        }
    }
    MinIndexFoo(MinIndexFoo& x, split) : my_a(x.my_a), value_of_min(FLT_MAX), index_of_min(-1) {}
    void join(const MinIndexFoo& y) {
        if (y.value_of_min < value_of_min) {
            value_of_min = y.value_of_min;
            index_of_min = y.index_of_min;
        }
    }
    MinIndexFoo(const float a[]) : my_a(a), value_of_min(FLT_MAX), index_of_min(-1) {}
};

long ParallelMinIndexFoo(float a[], size_t n) {
    MinIndexFoo mif(a);
    parallel_reduce(blocked_range<size_t>(0, n), mif);
    return mif.index_of_min;
}

// parallel_reduce: the functional form, over a range of pointers.
float ParallelSum(float array[], size_t n) {
    return parallel_reduce(
        blocked_range<float*>(array, array + n), 0.f,
        [](const blocked_range<float*>& r, float init) -> float { return std::accumulate(r.begin(), r.end(), init); },
        std::plus<float>());
}

// parallel_invoke: a function and two function objects.
static std::atomic<int> f_ran{0}, bar_sum{0};
void f() { f_ran++; }
void bar(int x) { bar_sum += x; }
class MyFunctor {
    int arg;

public:
    MyFunctor(int a) : arg(a) {}
    void operator()() const { bar(arg); }
};
void RunFunctionsInParallel() {
    MyFunctor g(2);
    MyFunctor h(3);
    parallel_invoke(f, g, h);
}
}  // namespace guide

static void test_guide_parallel_for() {
    size_t n = 100000 / scale;
    std::vector<float> a(n);
    for (size_t i = 0; i < n; i++) a[i] = static_cast<float>(i % 1000);
    guide::foo_calls = 0;
    guide::ParallelApplyFoo(a.data(), n);
    guide::ParallelApplyFooLambda(a.data(), n);
    guide::ParallelApplyFooCompact(a.data(), n);
    CHECK_EQ(guide::foo_calls.load(), 3 * n);
    for (size_t i = 0; i < n; i++) CHECK(a[i] == static_cast<float>(i % 1000) * 8);
}

static void test_guide_parallel_reduce() {
    size_t n = 100000 / scale;
    std::vector<float> a(n);
    for (size_t i = 0; i < n; i++) a[i] = static_cast<float>(i % 7);  // small integers: exact sums
    CHECK(guide::ParallelSumFoo(a.data(), n) == guide::SerialSumFoo(a.data(), n));
    a[n / 3] = -5;
    a[2 * n / 3] = -5;  // two equal minima: the first one's index, as sequentially
    CHECK_EQ(guide::ParallelMinIndexFoo(a.data(), n), guide::SerialMinIndexFoo(a.data(), n));
    CHECK_EQ(guide::ParallelMinIndexFoo(a.data(), n), n / 3);
    float sequential = std::accumulate(a.begin(), a.end(), 0.f);
    CHECK(guide::ParallelSum(a.data(), n) == sequential);
}

static void test_guide_parallel_invoke() {
    guide::RunFunctionsInParallel();
    CHECK_EQ(guide::f_ran.load(), 1);
    CHECK_EQ(guide::bar_sum.load(), 5);
}

// ---- per algorithm: exact results, nesting on one worker, exceptions ------------------

static uint64_t sum_range(const flock::blocked_range<uint64_t>& r, uint64_t acc) {
    for (uint64_t i = r.begin(); i != r.end(); ++i) acc += i * i % 1000003;
    return acc;
}

static void test_reduce_matches_sequential_exactly() {
    flock::pool pool(flock::config().workers(3));
    for (uint64_t n : {0ull, 1ull, 2ull, 255ull, 256ull, 257ull, 1000003ull / scale}) {
        uint64_t want = sum_range(flock::blocked_range<uint64_t>(0, n), 0);
        uint64_t got = flock::parallel_reduce(pool, flock::blocked_range<uint64_t>(0, n), uint64_t(0), sum_range,
                                              std::plus<uint64_t>());
        CHECK_EQ(got, want);
        // The grain is honoured: no piece below it (unless the whole range is).
        std::atomic<size_t> smallest{SIZE_MAX};
        flock::parallel_for(pool, flock::blocked_range<uint64_t>(0, n, 100), [&](const flock::blocked_range<uint64_t>& r) {
            size_t s = r.size(), cur = smallest.load();
            while (s < cur && !smallest.compare_exchange_weak(cur, s)) {
            }
        });
        if (n >= 100) CHECK(smallest.load() >= 50);
    }
    // A non-commutative reduction (string concatenation) comes out in order.
    std::string letters = flock::parallel_reduce(
        pool, flock::blocked_range<int>(0, 26), std::string(),
        [](const flock::blocked_range<int>& r, std::string s) {
            for (int i = r.begin(); i != r.end(); ++i) s += static_cast<char>('a' + i);
            return s;
        },
        [](const std::string& x, const std::string& y) { return x + y; });
    CHECK(letters == "abcdefghijklmnopqrstuvwxyz");
}

static double sum_doubles(const std::vector<double>& v, flock::pool& pool) {
    return flock::parallel_reduce(
        pool, flock::blocked_range<size_t>(0, v.size()), 0.0,
        [&](const flock::blocked_range<size_t>& r, double acc) {
            for (size_t i = r.begin(); i != r.end(); ++i) acc += v[i];
            return acc;
        },
        std::plus<double>());
}

static void test_reduce_doubles_bit_identical_run_to_run() {
    size_t n = (1 << 20) / scale;
    std::vector<double> v(n);
    uint64_t x = 88172645463325252ull;  // xorshift: values of many magnitudes, so order matters
    for (auto& d : v) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        d = static_cast<double>(x % 1000000) * std::pow(10.0, static_cast<double>(x % 13) - 6);
    }
    flock::pool one(flock::config().workers(1)), four(flock::config().workers(4));
    double first = sum_doubles(v, four);
    uint64_t first_bits;
    std::memcpy(&first_bits, &first, sizeof first);
    for (int run = 0; run < 20; run++) {
        double again = sum_doubles(v, run % 2 ? one : four);
        uint64_t bits;
        std::memcpy(&bits, &again, sizeof again);
        CHECK_EQ(bits, first_bits);  // the same tree whatever the pool and the schedule
    }
    // And it is a sum: within rounding of the sequential one.
    double sequential = std::accumulate(v.begin(), v.end(), 0.0);
    CHECK(std::fabs(first - sequential) <= 1e-9 * std::fabs(sequential));
}

static void test_nested_on_one_worker() {
    flock::pool pool(flock::config().workers(1));
    const int outer = 8, inner = 100;
    // parallel_for whose body runs parallel_reduce, parallel_invoke and parallel_for_each on
    // the same one-worker pool: every inner wait runs the pool's tasks itself.
    std::atomic<uint64_t> total{0}, invoked{0}, each{0};
    flock::parallel_for(pool, flock::blocked_range<int>(0, outer), [&](const flock::blocked_range<int>& r) {
        for (int o = r.begin(); o != r.end(); ++o) {
            uint64_t s = flock::parallel_reduce(
                pool, flock::blocked_range<int>(0, inner), uint64_t(0),
                [](const flock::blocked_range<int>& q, uint64_t acc) {
                    for (int i = q.begin(); i != q.end(); ++i) acc += static_cast<uint64_t>(i);
                    return acc;
                },
                std::plus<uint64_t>());
            total += s;
            flock::parallel_invoke(pool, [&] { invoked++; }, [&] { invoked++; }, [&] { invoked++; });
            std::vector<int> items(10, 1);
            flock::parallel_for_each(pool, items, [&](int v) { each += static_cast<uint64_t>(v); });
        }
    });
    CHECK_EQ(total.load(), uint64_t(outer) * (inner * (inner - 1) / 2));
    CHECK_EQ(invoked.load(), 3 * outer);
    CHECK_EQ(each.load(), 10 * outer);
    // And the imperative reduce, nested in a parallel_invoke on the same pool.
    guide::foo_calls = 0;
    std::vector<float> a(1000, 1.0f);
    float got = 0;
    flock::parallel_invoke(pool, [&] {
        guide::SumFoo sf(a.data());
        flock::parallel_reduce(pool, flock::blocked_range<size_t>(0, a.size()), sf);
        got = sf.my_sum;
    }, [] {});
    CHECK(got == 2000.0f);
}

static void test_exceptions_propagate() {
    flock::pool pool(flock::config().workers(2));
    auto throws_at = [](int bad) {
        return [bad](const flock::blocked_range<int>& r) {
            for (int i = r.begin(); i != r.end(); ++i)
                if (i == bad) throw std::runtime_error("piece " + std::to_string(bad));
        };
    };
    for (int bad : {0, 500, 999}) {  // the first piece, a middle one, the caller's (last) one
        std::string what;
        try {
            flock::parallel_for(pool, flock::blocked_range<int>(0, 1000), throws_at(bad));
        } catch (const std::runtime_error& e) {
            what = e.what();
        }
        CHECK(what == "piece " + std::to_string(bad));
    }
    std::string what;
    try {
        flock::parallel_reduce(
            pool, flock::blocked_range<int>(0, 1000), 0,
            [](const flock::blocked_range<int>& r, int acc) {
                if (r.begin() <= 700 && 700 < r.end()) throw std::logic_error("reduce");
                return acc + static_cast<int>(r.size());
            },
            std::plus<int>());
    } catch (const std::logic_error& e) {
        what = e.what();
    }
    CHECK(what == "reduce");
    for (int which = 0; which < 3; which++) {
        std::atomic<int> ran{0};
        what.clear();
        try {
            flock::parallel_invoke(
                pool, [&] { ran++; if (which == 0) throw std::runtime_error("0"); },
                [&] { ran++; if (which == 1) throw std::runtime_error("1"); },
                [&] { ran++; if (which == 2) throw std::runtime_error("2"); });
        } catch (const std::runtime_error& e) {
            what = e.what();
        }
        CHECK(what == std::to_string(which));
        CHECK_EQ(ran.load(), 3);  // the others still ran, and had finished
    }
    what.clear();
    std::vector<int> items(100);
    std::iota(items.begin(), items.end(), 0);
    try {
        flock::parallel_for_each(pool, items.begin(), items.end(), [](int v) {
            if (v == 42) throw std::out_of_range("42");
        });
    } catch (const std::out_of_range& e) {
        what = e.what();
    }
    CHECK(what == "42");
    // A nested exception crosses both levels, on one worker.
    flock::pool one(flock::config().workers(1));
    what.clear();
    try {
        flock::parallel_for(one, flock::blocked_range<int>(0, 4), [&](const flock::blocked_range<int>&) {
            flock::parallel_invoke(one, [] {}, [] { throw std::runtime_error("inner"); });
        });
    } catch (const std::runtime_error& e) {
        what = e.what();
    }
    CHECK(what == "inner");
    // The pool is fine afterwards.
    CHECK_EQ(sum_range(flock::blocked_range<uint64_t>(0, 10), 0),
             flock::parallel_reduce(one, flock::blocked_range<uint64_t>(0, 10), uint64_t(0), sum_range,
                                    std::plus<uint64_t>()));
}

static void test_ranges_without_overflow() {
    flock::blocked_range<int> all(INT_MIN, INT_MAX);
    CHECK_EQ(all.size(), uint64_t(UINT_MAX));
    CHECK(all.is_divisible());
    flock::blocked_range<int> upper(all, flock::split());
    CHECK(all.begin() == INT_MIN && all.end() == upper.begin() && upper.end() == INT_MAX);
    CHECK_EQ(all.size() + upper.size(), uint64_t(UINT_MAX));
    CHECK(flock::blocked_range<int>(5, 3).empty());
    CHECK_EQ(flock::blocked_range<int>(5, 3).size(), 0);
    // Every element of INT_MIN..INT_MAX counted once, by pieces (no per-element loop).
    flock::pool pool(flock::config().workers(2));
    uint64_t count = flock::parallel_reduce(
        pool, flock::blocked_range<int>(INT_MIN, INT_MAX), uint64_t(0), [](const flock::blocked_range<int>& r, uint64_t acc) { return acc + r.size(); },
        std::plus<uint64_t>());
    CHECK_EQ(count, uint64_t(UINT_MAX));
    uint64_t wide = flock::parallel_reduce(
        pool, flock::blocked_range<int64_t>(INT64_MIN, INT64_MAX), uint64_t(0),
        [](const flock::blocked_range<int64_t>& r, uint64_t acc) { return acc + r.size(); }, std::plus<uint64_t>());
    CHECK_EQ(wide, UINT64_MAX);
    uint64_t unsigned_all = flock::parallel_reduce(
        pool, flock::blocked_range<uint64_t>(0, UINT64_MAX), uint64_t(0),
        [](const flock::blocked_range<uint64_t>& r, uint64_t acc) { return acc + r.size(); }, std::plus<uint64_t>());
    CHECK_EQ(unsigned_all, UINT64_MAX);
    // Mixed integer types, and near the top of a type.
    std::atomic<uint64_t> hits{0};
    flock::parallel_for(static_cast<unsigned char>(0), 300, [&](int i) { hits += static_cast<uint64_t>(i >= 0); });
    CHECK_EQ(hits.load(), 300);
    hits = 0;
    flock::parallel_for(INT_MAX - 1000, INT_MAX, [&](int) { hits++; });
    CHECK_EQ(hits.load(), 1000);
}

static void test_iterators_and_for_each() {
    flock::pool pool(flock::config().workers(3));
    std::vector<int> v(1000);
    std::iota(v.begin(), v.end(), 0);
    // parallel_for over iterators (on the global pool): f gets the iterator.
    flock::parallel_for(v.begin(), v.end(), [](std::vector<int>::iterator it) { *it *= 2; });
    for (int i = 0; i < 1000; i++) CHECK(v[static_cast<size_t>(i)] == 2 * i);
    // A blocked_range of iterators, on a pool.
    std::atomic<long> sum{0};
    flock::parallel_for(pool, flock::blocked_range<std::vector<int>::const_iterator>(v.cbegin(), v.cend(), 10),
                        [&](const flock::blocked_range<std::vector<int>::const_iterator>& r) {
                            sum += std::accumulate(r.begin(), r.end(), 0L);
                        });
    CHECK_EQ(sum.load(), 999 * 1000);
    // for_each: random access, a container, a list (forward iterators), the global pool.
    flock::parallel_for_each(pool, v.begin(), v.end(), [](int& x) { x += 1; });
    CHECK(v[0] == 1 && v[999] == 1999);
    std::list<std::string> words{"a", "bb", "ccc", "dddd"};
    flock::parallel_for_each(pool, words, [](std::string& w) { w += "!"; });
    CHECK((words == std::list<std::string>{"a!", "bb!", "ccc!", "dddd!"}));
    std::atomic<size_t> letters{0};
    flock::parallel_for_each(words.begin(), words.end(), [&](const std::string& w) { letters += w.size(); });
    CHECK_EQ(letters.load(), 14);
    flock::parallel_for_each(v.end(), v.end(), [](int&) { std::abort(); });  // empty: nothing runs
}

static void test_global_pool() {
    flock::pool& g = flock::global();
    flock_pool_t* handle = nullptr;
    CHECK(flock_global(&handle) == FLOCK_OK);
    CHECK(g.native_handle() == handle);
    CHECK(&flock::global() == &g);
    CHECK(g.workers() >= 1);
    // A default task_group runs on it.
    std::atomic<int> ran{0};
    uint64_t before = g.stats().completed;
    {
        flock::task_group group;
        for (int i = 0; i < 50; i++) group.run([&] { ran++; });
        group.wait();
    }
    CHECK_EQ(ran.load(), 50);
    // The counters are exact at quiescence (README), and a group's wait is not the pool's:
    // a worker counts a task completed after the task's end released the group, so the
    // stats read right after group.wait() may lag (seen once under ASan).
    g.wait();
    CHECK(g.stats().completed >= before + 50);
    // It cannot be shut down, and stays up.
    flock_status_t st = FLOCK_OK;
    try {
        g.shutdown();
    } catch (const flock::error& e) {
        st = e.status();
    }
    CHECK(st == FLOCK_ERR_INVALID_ARGUMENT);
    g.submit([&] { ran++; });
    g.wait();
    CHECK_EQ(ran.load(), 51);
    // The algorithms without a pool use it, nested too.
    uint64_t s = flock::parallel_reduce(
        flock::blocked_range<int>(0, 100), uint64_t(0),
        [](const flock::blocked_range<int>& r, uint64_t acc) {
            flock::parallel_for(r.begin(), r.end(), [](int) {});
            return acc + r.size();
        },
        std::plus<uint64_t>());
    CHECK_EQ(s, 100);
}

int main() {
    if (const char* env = std::getenv("FLOCK_TEST_SCALE"); env && std::atoi(env) > 0)
        scale = static_cast<uint64_t>(std::atoi(env));
    std::printf("libflock %s, C++ algorithms tests (scale 1/%" PRIu64 ")\n", flock_version(), scale);
    int passed = 0, failed = 0;
#define RUN(test)                                                     \
    do {                                                              \
        test_failed = false;                                          \
        test();                                                       \
        std::printf("%s %s\n", test_failed ? "FAIL" : "ok  ", #test); \
        std::fflush(stdout);                                          \
        (test_failed ? failed : passed)++;                            \
    } while (0)
    RUN(test_guide_parallel_for);
    RUN(test_guide_parallel_reduce);
    RUN(test_guide_parallel_invoke);
    RUN(test_reduce_matches_sequential_exactly);
    RUN(test_reduce_doubles_bit_identical_run_to_run);
    RUN(test_nested_on_one_worker);
    RUN(test_exceptions_propagate);
    RUN(test_ranges_without_overflow);
    RUN(test_iterators_and_for_each);
    RUN(test_global_pool);
    std::printf("%d passed, %d failed\n", passed, failed);
    flock::global().wait();
    return failed ? 1 : 0;
}
