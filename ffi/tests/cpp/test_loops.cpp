// Tests of flock.hpp's loop helpers and waits (issue 40: faults, rough edges, introspection,
// BS::thread_pool's loop helpers). Run by ffi/tests/driver.sh (plain, valgrind, ASan with
// UBSan). Prints one line per test and a closing "N passed, M failed".
#include "flock.hpp"

#include <algorithm>
#include <atomic>
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
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
