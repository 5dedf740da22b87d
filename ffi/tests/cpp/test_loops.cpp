// Tests of flock.hpp's loop helpers and waits (issue 40: faults, rough edges, introspection,
// BS::thread_pool's loop helpers). Run by ffi/tests/driver.sh (plain, valgrind, ASan with
// UBSan). Prints one line per test and a closing "N passed, M failed".
#include "flock.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <future>
#include <iomanip>
#include <iostream>
#include <numeric>
#include <sstream>
#include <chrono>
#include <cinttypes>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

static bool test_failed;

#define CHECK(cond)                                                                         \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            std::fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
            test_failed = true;                                                             \
        }                                                                                   \
    } while (0)

#define CHECK_EQ(a, b)                                                                                  \
    do {                                                                                                \
        auto a_ = static_cast<uint64_t>(a);                                                             \
        auto b_ = static_cast<uint64_t>(b);                                                             \
        if (a_ != b_) {                                                                                 \
            std::fprintf(stderr, "  %s:%d: %s == %" PRIu64 ", expected %" PRIu64 "\n", __FILE__, __LINE__, \
                         #a, a_, b_);                                                                   \
            test_failed = true;                                                                         \
        }                                                                                               \
    } while (0)

static void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// Opens `flag` from another thread after a while: a wait that returns before that (a long
// timeout read as 0) sees the task unfinished. Without the delay the test could only pass
// more often, never fail wrongly.
struct opener {
    std::atomic<bool>& flag;
    std::thread t;
    explicit opener(std::atomic<bool>& f) : flag(f), t([this] {
        sleep_ms(50);
        flag = true;
    }) {}
    ~opener() { t.join(); }
};

// ---- item 7: faults -------------------------------------------------------------------

// The results of submit_blocks dropped unread: the blocks still write their results, so the
// destructor must wait for them before the results go (it freed them first: ASan saw a
// heap-use-after-free on every run).
static void test_block_results_dropped_unread() {
    flock::pool pool(flock::config().workers(2));
    std::atomic<int> ran{0};
    for (int round = 0; round < 3; round++) {
        auto r = pool.submit_blocks(0, 64, [&ran](int lo, int hi) {
            sleep_ms(2);
            ran++;
            return std::string(static_cast<size_t>(hi - lo) * 8, 'x');  // a heap result
        }, 8);
        (void)r;
    }
    // And unwinding past them: an exception thrown before get().
    try {
        auto r = pool.submit_blocks(0, 64, [&ran](int, int) {
            sleep_ms(2);
            ran++;
            return std::vector<int>(100);
        }, 8);
        throw std::runtime_error("before get");
    } catch (const std::runtime_error&) {
    }
    CHECK_EQ(ran.load(), 32);
}

// submit_blocks refused part-way (capacity 2, reject): the exception leaves submit_blocks
// while the accepted blocks are queued; they must not write into freed results.
static void test_submit_blocks_refused_part_way() {
    flock::pool pool(flock::config().workers(1).capacity(2).when_full(FLOCK_WHEN_FULL_REJECT));
    std::atomic<bool> go{false};
    std::atomic<int> started{0};
    pool.submit([&] {
        started++;
        while (!go) sleep_ms(1);
    });
    while (started == 0) sleep_ms(1);
    // Opens the worker once the refusal happened: the results' destructor waits for the
    // accepted blocks, which need the worker.
    std::thread unblock([&] {
        while (pool.stats().rejected_full == 0) sleep_ms(1);
        go = true;
    });
    std::atomic<int> ran{0};
    flock_status_t refused = FLOCK_OK;
    try {
        auto r = pool.submit_blocks(0, 800, [&ran](int lo, int hi) {
            sleep_ms(1);
            ran++;
            return std::vector<int>(static_cast<size_t>(hi - lo));
        }, 8);
        r.get();
    } catch (const flock::error& e) {
        refused = e.status();
    }
    unblock.join();
    pool.wait();
    CHECK_EQ(refused, FLOCK_ERR_FULL);
    CHECK_EQ(ran.load(), 2);
}

// parallel_for over the whole of int: `last - first` overflowed (UBSan), and the wrapped
// length made ~2^64 tasks of 8 blocks. Each block's first index throws, so the test sees the
// block starts without running 2^32 indices.
static void test_full_width_ranges_split_without_overflow() {
    flock::pool pool(flock::config().workers(2));
    std::mutex lock;
    std::set<int> starts;
    bool threw = false;
    try {
        flock::parallel_for(pool, INT_MIN, INT_MAX, [&](int i) {
            {
                std::lock_guard<std::mutex> hold(lock);
                starts.insert(i);
            }
            throw std::range_error("stop this block");
        }, 8);
    } catch (const std::range_error&) {
        threw = true;
    }
    CHECK(threw);
    CHECK_EQ(starts.size(), 8);
    CHECK(!starts.empty() && *starts.begin() == INT_MIN);

    // submit_blocks: 8 contiguous blocks covering [INT_MIN, INT_MAX).
    auto bounds = pool.submit_blocks(INT_MIN, INT_MAX, [](int lo, int hi) { return std::make_pair(lo, hi); }, 8).get();
    CHECK_EQ(bounds.size(), 8);
    bool contiguous = !bounds.empty() && bounds.front().first == INT_MIN && bounds.back().second == INT_MAX;
    for (size_t b = 1; b < bounds.size(); b++) contiguous = contiguous && bounds[b].first == bounds[b - 1].second;
    CHECK(contiguous);

    // Every width, signed and unsigned, end to end.
    auto covers = [&pool](auto first, auto last, size_t blocks) {
        using T = decltype(first);
        auto parts = pool.submit_blocks(first, last, [](T lo, T hi) { return std::make_pair(lo, hi); }, blocks).get();
        bool ok = parts.size() == blocks && parts.front().first == first && parts.back().second == last;
        for (size_t b = 1; b < parts.size(); b++) ok = ok && parts[b].first == parts[b - 1].second;
        for (auto& p : parts) ok = ok && p.first < p.second;
        return ok;
    };
    CHECK(covers(static_cast<int8_t>(INT8_MIN), static_cast<int8_t>(INT8_MAX), 3));
    CHECK(covers(static_cast<int16_t>(INT16_MIN), static_cast<int16_t>(INT16_MAX), 5));
    CHECK(covers(INT64_MIN, INT64_MAX, 7));
    CHECK(covers(static_cast<uint8_t>(0), static_cast<uint8_t>(UINT8_MAX), 4));
    CHECK(covers(0u, UINT_MAX, 6));
    // The block-size rounding of n = UINT64_MAX wrapped to 0 (std::length_error).
    CHECK(covers(static_cast<uint64_t>(0), UINT64_MAX, 2));
    CHECK(covers(static_cast<uint64_t>(0), UINT64_MAX, 3));

    // detach_loop shares the splitter: 8 blocks, each stopped by its first index.
    std::atomic<int> calls{0};
    uint64_t panicked = pool.stats().panicked;
    pool.detach_loop(INT_MIN, INT_MAX, [&calls](int) {
        calls++;
        throw std::range_error("stop");
    }, 8);
    pool.wait();
    CHECK_EQ(calls.load(), 8);
    CHECK_EQ(pool.stats().panicked - panicked, 8);
}

// A long wait_for (a thousand years, or duration::max()) saturates instead of overflowing
// to a zero timeout that returns false at once.
static void test_long_wait_for_saturates() {
    using std::chrono::hours;
    flock::pool pool(flock::config().workers(2));
    for (auto timeout : {hours(24 * 365 * 1000), hours::max()}) {
        {
            std::atomic<bool> go{false};
            pool.submit([&go] {
                while (!go) sleep_ms(1);
            });
            opener o(go);
            CHECK(pool.wait_for(timeout));
        }
        {
            std::atomic<bool> go{false};
            flock::task_group g(pool);
            g.run([&go] {
                while (!go) sleep_ms(1);
            });
            opener o(go);
            CHECK(g.wait_for(timeout));
        }
        {
            std::atomic<bool> go{false};
            flock::multi_future<void> futures;
            futures.push_back(pool.submit_task([&go] {
                while (!go) sleep_ms(1);
            }));
            opener o(go);
            CHECK(futures.wait_for(timeout));
        }
    }
    // Negative and zero timeouts are "now".
    pool.wait();
    CHECK(pool.wait_for(std::chrono::seconds(-5)));
    CHECK(pool.wait_for(std::chrono::nanoseconds(0)));
}

// ---- items 3, 5, 6: the loop helpers, task_group, introspection ----------------------------

static void test_mixed_index_types_and_new_helpers() {
    flock::pool pool(3);
    CHECK_EQ(pool.workers(), 3);
    // parallel_for(0, v.size()) counts in size_t (it did not compile: int and size_t).
    std::vector<int> v(1000, 1);
    std::atomic<uint64_t> sum{0};
    flock::parallel_for(pool, 0, v.size(), [&](size_t i) { sum += static_cast<uint64_t>(v[i]); });
    pool.parallel_for(0, v.size(), [&](size_t i) { sum += static_cast<uint64_t>(v[i]); }, 7);
    CHECK_EQ(sum.load(), 2000);
    static_assert(std::is_same_v<flock::common_index_t<int, size_t>, size_t>);
    static_assert(std::is_same_v<flock::common_index_t<int, unsigned>, int64_t>);
    static_assert(std::is_same_v<flock::common_index_t<int8_t, uint8_t>, int16_t>);
    static_assert(std::is_same_v<flock::common_index_t<short, long long>, long long>);
    // A negative start with an unsigned 32-bit end: counted in int64_t, every index once.
    std::vector<std::atomic<int>> hits(110);
    pool.parallel_for(-10, 100u, [&](int64_t i) { hits[static_cast<size_t>(i + 10)]++; });
    bool once = true;
    for (auto& h : hits) once = once && h.load() == 1;
    CHECK(once);
    // Blocks differ by at most one index, the larger first: [0, 100) in 15 is 10 of 7, 5 of 6.
    auto sizes = pool.submit_blocks(0, 100, [](int lo, int hi) { return hi - lo; }, 15).get();
    CHECK_EQ(sizes.size(), 15);
    CHECK(std::count(sizes.begin(), sizes.begin() + 10, 7) == 10 && std::count(sizes.begin() + 10, sizes.end(), 6) == 5);
    // More blocks than indices: one block per index.
    CHECK_EQ(pool.submit_blocks(0, 3, [](int, int) {}, 100).size(), 3);
    // submit_sequence: one task per index, results in order; detach_sequence and
    // detach_blocks cover every index once.
    auto squares = pool.submit_sequence(0, 10, [](int i) { return i * i; }).get();
    CHECK(squares == (std::vector<int>{0, 1, 4, 9, 16, 25, 36, 49, 64, 81}));
    std::vector<std::atomic<int>> seq(50), blk(1000);
    pool.detach_sequence(0, seq.size(), [&](size_t i) { seq[i]++; });
    pool.detach_blocks(size_t(0), blk.size(), [&](size_t lo, size_t hi) {
        for (size_t i = lo; i < hi; i++) blk[i]++;
    }, 9);
    pool.wait();
    once = true;
    for (auto& h : seq) once = once && h.load() == 1;
    for (auto& h : blk) once = once && h.load() == 1;
    CHECK(once);
    // submit_loop's futures, as a multi_future<void>.
    std::atomic<int> n{0};
    const flock::multi_future<void> loop = pool.submit_loop(0, 64, [&n](int) { n++; }, 4);
    loop.wait();
    CHECK_EQ(n.load(), 64);
    CHECK_EQ(loop.size(), 4);
    // Exceptions come out of get() in block order, once every block finished; a block
    // that threw counts in stats().panicked.
    uint64_t panicked = pool.stats().panicked;
    std::atomic<int> finished{0};
    std::string first;
    try {
        pool.submit_sequence(0, 8, [&finished](int i) {
            finished++;
            if (i % 3 == 1) throw std::runtime_error("index " + std::to_string(i));
            return i;
        }).get();
    } catch (const std::runtime_error& e) {
        first = e.what();
    }
    CHECK(first == "index 1");
    CHECK_EQ(finished.load(), 8);
    pool.wait();
    CHECK_EQ(pool.stats().panicked - panicked, 3);
}

// block_results::get() waits through the group: nested on a one-worker pool it runs the
// blocks itself (a std::future wait there would hold the only worker forever).
static void test_nested_block_results_on_one_worker() {
    flock::pool pool(flock::config().workers(1));
    auto total = pool.submit_task([&pool] {
        uint64_t t = 0;
        for (auto part : pool.submit_blocks(0, 1000, [&pool](int lo, int hi) {
                 auto inner = pool.submit_sequence(lo, hi, [](int i) { return static_cast<uint64_t>(i); }).get();
                 return std::accumulate(inner.begin(), inner.end(), uint64_t(0));
             }, 8).get())
            t += part;
        return t;
    });
    CHECK_EQ(total.get(), 999 * 1000 / 2);
}

static void test_task_group_status_cancel_and_run_and_wait() {
    flock::pool pool(flock::config().workers(1));
    flock::task_group g(pool);
    std::atomic<int> n{0};
    g.run([&n] { n++; });
    CHECK(g.wait() == flock::task_group_status::complete);
    CHECK(!g.is_canceling());
    // cancel with the only worker busy: the queued tasks are dropped; is_canceling until the
    // next wait, which reports canceled.
    std::atomic<bool> go{false};
    std::atomic<int> started{0};
    g.run([&] {
        started++;
        while (!go) sleep_ms(1);
    });
    while (started == 0) sleep_ms(1);
    for (int i = 0; i < 5; i++) g.run([&n] { n++; });
    CHECK_EQ(g.cancel(), 5);
    CHECK(g.is_canceling());
    go = true;
    CHECK(g.wait() == flock::task_group_status::canceled);
    CHECK(!g.is_canceling());
    CHECK_EQ(n.load(), 1);
    // run_and_wait: f runs here, then the wait covers what it started.
    std::thread::id ran_on;
    auto st = g.run_and_wait([&] {
        ran_on = std::this_thread::get_id();
        for (int i = 0; i < 10; i++) g.run([&n] { n++; });
    });
    CHECK(st == flock::task_group_status::complete);
    CHECK(ran_on == std::this_thread::get_id());
    CHECK_EQ(n.load(), 11);
    // f's exception comes out after the group's tasks finished.
    bool threw = false;
    try {
        g.run_and_wait([&] {
            g.run([&n] {
                sleep_ms(5);
                n++;
            });
            throw std::logic_error("from f");
        });
    } catch (const std::logic_error&) {
        threw = n.load() == 12;
    }
    CHECK(threw);
}

static void test_this_thread_and_running() {
    flock::pool pool(flock::config().workers(2));
    CHECK(!flock::this_thread::get_index().has_value());
    auto index = pool.submit_task([] { return flock::this_thread::get_index(); }).get();
    CHECK(index.has_value() && *index < 2);
    std::atomic<bool> go{false};
    std::atomic<int> started{0};
    for (int i = 0; i < 2; i++)
        pool.submit([&] {
            started++;
            while (!go) sleep_ms(1);
        });
    while (started < 2) sleep_ms(1);
    CHECK_EQ(pool.running(), 2);
    go = true;
    pool.wait();
}

// ---- BS::thread_pool's loop-helper examples (README v5.1, "Parallelizing loops"), unchanged
// but for the namespace (BS:: is flock::) and `main` inside a namespace of its own; their
// std::cout is captured and compared with the sequential output. -------------------------

namespace bs_squares_submit_loop {
int main()
{
    flock::thread_pool pool(10);
    constexpr std::size_t max = 100;
    std::size_t squares[max];
    const flock::multi_future<void> loop_future = pool.submit_loop(0, max,
        [&squares](const std::size_t i)
        {
            squares[i] = i * i;
        });
    loop_future.wait();
    for (std::size_t i = 0; i < max; ++i)
        std::cout << std::setw(2) << i << "^2 = " << std::setw(4) << squares[i] << ((i % 5 != 4) ? " | " : "\n");
    return 0;
}
}  // namespace bs_squares_submit_loop

namespace bs_squares_detach_loop {
int main()
{
    flock::thread_pool pool(10);
    constexpr std::size_t max = 100;
    std::size_t squares[max];
    pool.detach_loop(0, max,
        [&squares](const std::size_t i)
        {
            squares[i] = i * i;
        });
    pool.wait();
    for (std::size_t i = 0; i < max; ++i)
        std::cout << std::setw(2) << i << "^2 = " << std::setw(4) << squares[i] << ((i % 5 != 4) ? " | " : "\n");
    return 0;
}
}  // namespace bs_squares_detach_loop

namespace bs_squares_detach_blocks {
int main()
{
    flock::thread_pool pool(10);
    constexpr std::size_t max = 100;
    std::size_t squares[max];
    pool.detach_blocks(0, max,
        [&squares](const std::size_t start, const std::size_t end)
        {
            for (std::size_t i = start; i < end; ++i)
                squares[i] = i * i;
        });
    pool.wait();
    for (std::size_t i = 0; i < max; ++i)
        std::cout << std::setw(2) << i << "^2 = " << std::setw(4) << squares[i] << ((i % 5 != 4) ? " | " : "\n");
    return 0;
}
}  // namespace bs_squares_detach_blocks

namespace bs_sum_futures {
flock::thread_pool pool;

template <typename T>
T sum(T min, T max)
{
    flock::multi_future<T> loop_future = pool.submit_blocks(
        min, max + 1,
        [](const T start, const T end)
        {
            T block_total = 0;
            for (T i = start; i < end; ++i)
                block_total += i;
            return block_total;
        },
        100);
    T result = 0;
    for (std::future<T>& future : loop_future)
        result += future.get();
    return result;
}

int main()
{
    std::cout << sum<std::uint64_t>(1, 1'000'000);
    return 0;
}
}  // namespace bs_sum_futures

namespace bs_sum_reduce {
flock::thread_pool pool;

template <typename T>
T sum(T min, T max)
{
    flock::multi_future<T> loop_future = pool.submit_blocks(
        min, max + 1,
        [](const T start, const T end)
        {
            T block_total = 0;
            for (T i = start; i < end; ++i)
                block_total += i;
            return block_total;
        },
        100);
    std::vector<T> partial_sums = loop_future.get();
    T result = std::reduce(partial_sums.begin(), partial_sums.end());
    return result;
}

int main()
{
    std::cout << sum<std::uint64_t>(1, 1'000'000);
    return 0;
}
}  // namespace bs_sum_reduce

namespace bs_factorials {
std::uint64_t factorial(const std::uint64_t n)
{
    std::uint64_t result = 1;
    for (std::uint64_t i = 2; i <= n; ++i)
        result *= i;
    return result;
}

int main()
{
    flock::thread_pool pool;
    constexpr std::uint64_t max = 20;
    flock::multi_future<std::uint64_t> sequence_future = pool.submit_sequence(0, max + 1, factorial);
    std::vector<std::uint64_t> factorials = sequence_future.get();
    for (std::uint64_t i = 0; i < max + 1; ++i)
        std::cout << i << "! = " << factorials[i] << '\n';
    return 0;
}
}  // namespace bs_factorials

// What `example` writes to std::cout.
template <class Example>
static std::string captured(Example example) {
    std::ostringstream out;
    auto* saved = std::cout.rdbuf(out.rdbuf());
    example();
    std::cout.rdbuf(saved);
    return out.str();
}

static void test_port_bs_loop_examples() {
    std::ostringstream squares;
    for (std::size_t i = 0; i < 100; ++i)
        squares << std::setw(2) << i << "^2 = " << std::setw(4) << i * i << ((i % 5 != 4) ? " | " : "\n");
    CHECK(captured(bs_squares_submit_loop::main) == squares.str());
    CHECK(captured(bs_squares_detach_loop::main) == squares.str());
    CHECK(captured(bs_squares_detach_blocks::main) == squares.str());
    CHECK(captured(bs_sum_futures::main) == "500000500000");
    CHECK(captured(bs_sum_reduce::main) == "500000500000");
    std::ostringstream factorials;
    std::uint64_t f = 1;
    for (std::uint64_t i = 0; i <= 20; ++i) {
        if (i > 1) f *= i;
        factorials << i << "! = " << f << '\n';
    }
    CHECK(captured(bs_factorials::main) == factorials.str());
}

// With arguments, runs only the tests named.
int main(int argc, char** argv) {
    std::printf("libflock %s, C++ loop and wait tests\n", flock_version());
    int passed = 0, failed = 0;
    auto wanted = [argc, argv](const char* name) {
        if (argc < 2) return true;
        for (int a = 1; a < argc; a++)
            if (std::string(argv[a]) == name) return true;
        return false;
    };
#define RUN(test)                                                     \
    if (wanted(#test))                                                \
    do {                                                              \
        test_failed = false;                                          \
        test();                                                       \
        std::printf("%s %s\n", test_failed ? "FAIL" : "ok  ", #test); \
        std::fflush(stdout);                                          \
        (test_failed ? failed : passed)++;                            \
    } while (0)
    RUN(test_block_results_dropped_unread);
    RUN(test_submit_blocks_refused_part_way);
    RUN(test_full_width_ranges_split_without_overflow);
    RUN(test_long_wait_for_saturates);
    RUN(test_mixed_index_types_and_new_helpers);
    RUN(test_nested_block_results_on_one_worker);
    RUN(test_task_group_status_cancel_and_run_and_wait);
    RUN(test_this_thread_and_running);
    RUN(test_port_bs_loop_examples);
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
