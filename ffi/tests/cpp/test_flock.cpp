// Tests of include/flock.hpp, the C++17 RAII wrapper. Run by ffi/tests/driver.sh (plain,
// valgrind, ASan). Prints one line per test and a closing "N passed, M failed".
#include "flock.hpp"

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

static bool test_failed;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            std::fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
            test_failed = true;                                                      \
        }                                                                            \
    } while (0)

#define CHECK_EQ(a, b)                                                                   \
    do {                                                                                 \
        auto a_ = static_cast<uint64_t>(a);                                              \
        auto b_ = static_cast<uint64_t>(b);                                              \
        if (a_ != b_) {                                                                  \
            std::fprintf(stderr, "  %s:%d: %s == %" PRIu64 ", expected %" PRIu64 "\n", __FILE__, \
                         __LINE__, #a, a_, b_);                                          \
            test_failed = true;                                                          \
        }                                                                                \
    } while (0)

static_assert(!std::is_copy_constructible_v<flock::pool>, "pool is move-only");
static_assert(!std::is_copy_assignable_v<flock::pool>, "pool is move-only");
static_assert(std::is_nothrow_move_constructible_v<flock::pool>, "pool moves without throwing");
static_assert(std::is_nothrow_move_assignable_v<flock::pool>, "pool moves without throwing");

static uint64_t scale = 1;

static void test_lambdas_and_exact_counts() {
    flock::pool pool(flock::config().workers(4));
    std::atomic<uint64_t> n{0};
    const uint64_t per_thread = 20000 / scale;
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; t++)
        threads.emplace_back([&] {
            for (uint64_t i = 0; i < per_thread; i++) pool.submit([&n] { n++; });  // inline path
        });
    for (auto& t : threads) t.join();
    pool.wait();
    CHECK_EQ(n.load(), 4 * per_thread);
    auto s = pool.stats();
    CHECK_EQ(s.submitted, 4 * per_thread);
    CHECK_EQ(s.completed, 4 * per_thread);
    CHECK_EQ(s.panicked, 0);
    CHECK_EQ(pool.workers(), 4);
}

static void test_heap_callables_run_once_and_are_freed() {
    std::atomic<int> ran{0};
    auto token = std::make_shared<int>(7);
    {
        flock::pool pool(flock::config().workers(2));
        for (int i = 0; i < 100; i++) {
            std::string text = "captured " + std::to_string(i);  // not trivially copyable
            pool.submit([&ran, token, text] {
                if (*token == 7 && !text.empty()) ran++;
            });
        }
    }  // the destructor is graceful: every task ran, then joined
    CHECK_EQ(ran.load(), 100);
    CHECK_EQ(token.use_count(), 1);  // every copy destroyed
}

static void test_exceptions_count_as_panicked() {
    flock::pool pool(flock::config().workers(1));
    std::atomic<int> after{0};
    pool.submit([] { throw std::runtime_error("task failed"); });
    auto big = std::make_unique<int>(1);
    pool.submit([p = std::shared_ptr<int>(std::move(big))] { throw *p; });  // heap path
    pool.submit([&after] { after++; });
    pool.wait();
    CHECK_EQ(after.load(), 1);
    auto s = pool.stats();
    CHECK_EQ(s.panicked, 2);
    CHECK_EQ(s.completed, 1);
    CHECK_EQ(pool.worker_stats(0).panicked, 2);
}

static void test_errors_throw() {
    bool threw = false;
    try {
        flock::pool bad(flock::config().workers(0));
    } catch (const flock::error& e) {
        threw = e.status() == FLOCK_ERR_INVALID_CONFIG;
    }
    CHECK(threw);

    flock::pool pool(flock::config().workers(1));
    std::atomic<int> status{-1};
    pool.submit([&pool, &status] {
        try {
            pool.wait();
            status = 0;
        } catch (const flock::error& e) {
            status = e.status();
        }
    });
    pool.wait();
    CHECK_EQ(status.load(), FLOCK_ERR_WOULD_DEADLOCK);
    CHECK(pool.wait_for(std::chrono::seconds(10)));

    threw = false;
    try {
        pool.worker_stats(5);
    } catch (const flock::error& e) {
        threw = e.status() == FLOCK_ERR_INVALID_ARGUMENT;
    }
    CHECK(threw);

    CHECK_EQ(pool.shutdown(), 0);
    auto heap = std::make_shared<int>(1);
    CHECK_EQ(pool.try_submit([heap] { (void)heap; }), FLOCK_ERR_SHUTDOWN);
    CHECK_EQ(heap.use_count(), 1);  // the refused callable was destroyed, not leaked
    threw = false;
    try {
        pool.submit([] {});
    } catch (const flock::error& e) {
        threw = e.status() == FLOCK_ERR_SHUTDOWN;
    }
    CHECK(threw);
}

static void test_shutdown_now_destroys_unrun_callables() {
    flock::pool pool(flock::config().workers(1));
    std::atomic<bool> started{false}, go{false};
    pool.submit([&] {
        started = true;
        while (!go) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    auto token = std::make_shared<int>(0);
    std::atomic<int> ran{0};
    for (int i = 0; i < 50; i++) pool.submit([token, &ran] { ran++; });
    CHECK_EQ(token.use_count(), 51);
    std::thread opener([&] {
        // Open the gate once the pool refuses submits: the shutdown has begun.
        while (pool.try_submit([] {}) == FLOCK_OK) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        go = true;
    });
    uint64_t dropped = pool.shutdown(FLOCK_SHUTDOWN_NOW);
    opener.join();
    CHECK_EQ(ran.load(), 0);
    CHECK(dropped >= 50);
    CHECK_EQ(token.use_count(), 1);  // each discarded callable destroyed exactly once
}

static void test_move_only_ownership() {
    flock::pool a(flock::config().workers(1));
    std::atomic<int> n{0};
    a.submit([&n] { n++; });
    flock::pool b(std::move(a));
    b.wait();
    CHECK_EQ(n.load(), 1);
    CHECK(a.native_handle() == nullptr);
    bool threw = false;
    try {
        a.wait();
    } catch (const flock::error& e) {
        threw = e.status() == FLOCK_ERR_NULL;
    }
    CHECK(threw);
    flock::pool c(flock::config().workers(1));
    c = std::move(b);  // frees c's pool, takes b's
    c.submit([&n] { n++; });
    c.wait();
    CHECK_EQ(n.load(), 2);
    CHECK_EQ(flock::current_worker(), -1);
}

// Counts how many times copies of it are destroyed, in a callable too big for the argument
// word (the heap path, which hands the C side a drop callback).
struct counted_callable {
    std::atomic<int>* destroyed;
    std::atomic<int>* ran;
    char pad[32] = {};
    counted_callable(std::atomic<int>* d, std::atomic<int>* r) : destroyed(d), ran(r) {}
    counted_callable(counted_callable&& other) noexcept : destroyed(other.destroyed), ran(other.ran) {
        other.destroyed = nullptr;
    }
    counted_callable(const counted_callable&) = delete;
    ~counted_callable() {
        if (destroyed) (*destroyed)++;
    }
    void operator()() { (*ran)++; }
};

static void test_moved_from_pool_refuses_heap_callables_once() {
    flock::pool a(flock::config().workers(1));
    flock::pool b(std::move(a));
    std::atomic<int> destroyed{0}, ran{0};
    bool threw = false;
    try {
        a.submit(counted_callable(&destroyed, &ran));
    } catch (const flock::error& e) {
        threw = e.status() == FLOCK_ERR_NULL;
    }
    CHECK(threw);
    CHECK_EQ(destroyed.load(), 1);  // freed exactly once, by submit
    CHECK_EQ(a.try_submit_to(0, counted_callable(&destroyed, &ran)), FLOCK_ERR_NULL);
    CHECK_EQ(destroyed.load(), 2);
    CHECK_EQ(ran.load(), 0);
    b.submit(counted_callable(&destroyed, &ran));
    b.wait();
    CHECK_EQ(ran.load(), 1);
    CHECK_EQ(destroyed.load(), 3);
}

static thread_local int hooked_worker = -1;

static void test_worker_hooks() {
    std::atomic<int> started{0}, stopped{0}, mismatched{0}, ran{0};
    auto token = std::make_shared<int>(1);
    {
        flock::config cfg;
        cfg.workers(3)
            .on_worker_start([&started, token](uint32_t w) {
                hooked_worker = static_cast<int>(w);
                started++;
            })
            .on_worker_stop([&stopped, &mismatched](uint32_t w) {
                if (hooked_worker != static_cast<int>(w)) mismatched++;
                stopped++;
            });
        flock::config copy = cfg;  // copies share the hooks
        flock::pool pool(copy);
        cfg = flock::config();  // the pool keeps its hooks alive on its own
        copy = flock::config();
        for (int i = 0; i < 300; i++)
            pool.submit([&] {
                if (hooked_worker != flock::current_worker()) mismatched++;
                ran++;
            });
        pool.wait();
        CHECK_EQ(token.use_count(), 2);  // only the pool holds the hooks now
        pool.shutdown();
        CHECK_EQ(started.load(), 3);
        CHECK_EQ(stopped.load(), 3);
    }
    CHECK_EQ(token.use_count(), 1);  // released with the pool
    CHECK_EQ(mismatched.load(), 0);
    CHECK_EQ(ran.load(), 300);

    // A throwing hook is reported and the worker goes on; an empty one removes it.
    std::atomic<int> stops{0};
    {
        flock::pool pool(flock::config()
                             .workers(2)
                             .on_worker_start([](uint32_t) { throw std::runtime_error("init failed (expected)"); })
                             .on_worker_stop([&stops](uint32_t) { stops++; })
                             .on_worker_stop({}));
        std::atomic<int> n{0};
        pool.submit([&n] { n++; });
        pool.wait();
        CHECK_EQ(n.load(), 1);
    }
    CHECK_EQ(stops.load(), 0);
}

static void test_submit_task_futures() {
    flock::pool pool(flock::config().workers(2));
    std::future<int> answer = pool.submit_task([] { return 6 * 7; });
    static_assert(std::is_same_v<decltype(answer), std::future<int>>);
    std::atomic<int> side{0};
    std::future<void> done = pool.submit_task([&side] { side = 1; });
    auto owned = pool.submit_task([] { return std::make_unique<int>(5); });  // move-only result
    std::string text(100, 'x');
    auto big = pool.submit_task([text] { return text.size(); });  // a capture beyond one word
    CHECK_EQ(answer.get(), 42);
    done.get();
    CHECK_EQ(side.load(), 1);
    CHECK_EQ(*owned.get(), 5);
    CHECK_EQ(big.get(), 100);

    // The callable is destroyed before the future is ready.
    auto token = std::make_shared<int>(1);
    auto f = pool.submit_task([token] { return *token; });
    CHECK_EQ(f.get(), 1);
    CHECK_EQ(token.use_count(), 1);

    // Lanes.
    flock::pool lanes(flock::config().workers(1).lanes({{"a", 1}, {"b", 1}}));
    CHECK_EQ(lanes.submit_task_to(lanes.lane("b"), [] { return 7; }).get(), 7);
    bool threw = false;
    try {
        lanes.submit_task_to(9, [] { return 7; });
    } catch (const flock::error& e) {
        threw = e.status() == FLOCK_ERR_UNKNOWN_LANE;
    }
    CHECK(threw);
    CHECK_EQ(pool.stats().panicked, 0);
}

static void test_submit_task_forwards_exceptions() {
    flock::pool pool(flock::config().workers(1));
    auto bad = pool.submit_task([]() -> int { throw std::runtime_error("seen by the caller"); });
    bool caught = false;
    try {
        bad.get();
    } catch (const std::runtime_error& e) {
        caught = std::string(e.what()) == "seen by the caller";
    }
    CHECK(caught);
    auto bad_void = pool.submit_task([] { throw 17; });
    caught = false;
    try {
        bad_void.get();
    } catch (int v) {
        caught = v == 17;
    }
    CHECK(caught);
    // A plain submit's exception is still counted and discarded; both kinds count.
    pool.submit([] { throw std::runtime_error("discarded"); });
    pool.wait();
    auto s = pool.stats();
    CHECK_EQ(s.panicked, 3);
    CHECK_EQ(s.completed, 0);
}

static void test_submit_task_dropped_or_refused() {
    // Discarded by FLOCK_SHUTDOWN_NOW: broken promise, callable destroyed once.
    flock::pool pool(flock::config().workers(1));
    std::atomic<bool> started{false}, go{false};
    pool.submit([&] {
        started = true;
        while (!go) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    auto token = std::make_shared<int>(0);
    std::atomic<int> ran{0};
    flock::multi_future<int> queued;
    for (int i = 0; i < 20; i++) queued.push_back(pool.submit_task([token, &ran] { return ++ran; }));
    CHECK_EQ(token.use_count(), 21);
    CHECK_EQ(queued.ready_count(), 0);
    std::thread opener([&] {
        while (pool.try_submit([] {}) == FLOCK_OK) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        go = true;
    });
    pool.shutdown(FLOCK_SHUTDOWN_NOW);
    opener.join();
    CHECK_EQ(ran.load(), 0);
    CHECK_EQ(token.use_count(), 1);
    CHECK_EQ(queued.ready_count(), 20);
    int broken = 0;
    for (auto& f : queued) {
        try {
            f.get();
        } catch (const std::future_error& e) {
            if (e.code() == std::future_errc::broken_promise) broken++;
        }
    }
    CHECK_EQ(broken, 20);

    // Refused after shutdown and by a moved-from pool: flock::error, callable destroyed once.
    bool threw = false;
    try {
        pool.submit_task([token] { return 1; });
    } catch (const flock::error& e) {
        threw = e.status() == FLOCK_ERR_SHUTDOWN;
    }
    CHECK(threw);
    CHECK_EQ(token.use_count(), 1);
    flock::pool a(flock::config().workers(1));
    flock::pool b(std::move(a));
    std::atomic<int> destroyed{0}, ran2{0};
    threw = false;
    try {
        a.submit_task(counted_callable(&destroyed, &ran2));
    } catch (const flock::error& e) {
        threw = e.status() == FLOCK_ERR_NULL;
    }
    CHECK(threw);
    CHECK_EQ(destroyed.load(), 1);
    b.submit_task(counted_callable(&destroyed, &ran2)).get();
    CHECK_EQ(ran2.load(), 1);
    CHECK_EQ(destroyed.load(), 2);
}

static void test_multi_future() {
    flock::pool pool(flock::config().workers(3));
    const int n = 200;
    flock::multi_future<long> squares;
    for (int i = 0; i < n; i++) squares.push_back(pool.submit_task([i] { return long(i) * i; }));
    CHECK(squares.valid());
    CHECK(squares.wait_for(std::chrono::seconds(30)));
    CHECK_EQ(squares.ready_count(), n);
    std::vector<long> got = squares.get();
    CHECK_EQ(got.size(), n);
    bool in_order = true;
    for (int i = 0; i < n; i++) in_order &= got[i] == long(i) * i;
    CHECK(in_order);
    CHECK(!squares.valid());  // consumed

    // void tasks; one throws: get() rethrows it after every task has finished.
    std::atomic<int> finished{0};
    flock::multi_future<void> work;
    for (int i = 0; i < 50; i++)
        work.push_back(pool.submit_task([i, &finished] {
            std::this_thread::sleep_for(std::chrono::microseconds(100));
            finished++;
            if (i == 3) throw std::runtime_error("task 3");
        }));
    bool caught = false;
    try {
        work.get();
    } catch (const std::runtime_error& e) {
        caught = std::string(e.what()) == "task 3";
    }
    CHECK(caught);
    CHECK_EQ(finished.load(), 50);

    // wait_until on the pool and on a set still running.
    std::atomic<bool> go{false};
    flock::multi_future<void> held;
    held.push_back(pool.submit_task([&go] {
        while (!go) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }));
    CHECK(!held.wait_until(std::chrono::steady_clock::now() + std::chrono::milliseconds(20)));
    CHECK(!pool.wait_until(std::chrono::steady_clock::now() + std::chrono::milliseconds(20)));
    go = true;
    CHECK(pool.wait_until(std::chrono::steady_clock::now() + std::chrono::seconds(30)));
    held.get();
}

static_assert(std::is_nothrow_copy_constructible_v<flock::config>, "a config copies without throwing");

static void test_config_lanes_survive_copies() {
    flock::config cfg;
    {
        std::string name = "interactive";  // the config keeps its own copy
        cfg.workers(2).max_workers(4).lanes({{name, 8}, {"batch", 1}});
        name = "changed";
    }
    flock::config copy = cfg;
    flock::config moved(std::move(cfg));  // a moved-from config keeps its lanes too
    CHECK_EQ(copy.flock_config_t::lane_count, 2);
    CHECK_EQ(moved.flock_config_t::max_workers, 4);
    CHECK(copy.flock_config_t::lanes == moved.flock_config_t::lanes);
    CHECK(cfg.flock_config_t::lanes == moved.flock_config_t::lanes);
    flock::pool pool(copy);
    CHECK_EQ(pool.lane("interactive"), 0);
    CHECK_EQ(pool.lane("batch"), 1);
    auto s = pool.stats();
    CHECK_EQ(s.lane_count, 2);
    CHECK_EQ(s.max_workers, 4);

    CHECK(copy.flock_config_t::lane_reserve);  // on by default
    CHECK(!flock::config().lane_reserve(false).flock_config_t::lane_reserve);

    flock::config none = flock::config().lanes({{"x", 1}}).lanes({});  // back to the default
    CHECK(none.flock_config_t::lanes == nullptr);
    CHECK_EQ(none.flock_config_t::lane_count, 0);

    bool threw = false;
    try {
        flock::pool bad(flock::config().lanes({{"a", 1}, {"a", 2}}));
    } catch (const flock::error& e) {
        threw = e.status() == FLOCK_ERR_INVALID_CONFIG;
    }
    CHECK(threw);
}

static void test_submit_to_lanes() {
    flock::pool pool(flock::config().workers(2).lanes({{"fg", 4}, {"bg", 1}}));
    const uint32_t bg = pool.lane("bg");
    std::atomic<int> fg_runs{0}, bg_runs{0};
    auto token = std::make_shared<int>(0);
    for (int i = 0; i < 100; i++) {
        pool.submit_to(0, [&fg_runs] { fg_runs++; });                  // inline path
        pool.submit_to(bg, [&bg_runs, token] { bg_runs += *token + 1; });  // heap path
    }
    pool.submit_to(bg, [&pool, &bg_runs] {
        pool.submit([&bg_runs] { bg_runs++; });  // inherits "bg"
    });
    pool.submit_to(bg, [] { throw std::runtime_error("counted as failed"); });
    pool.wait();
    CHECK_EQ(fg_runs.load(), 100);
    CHECK_EQ(bg_runs.load(), 101);
    CHECK_EQ(token.use_count(), 1);
    auto fg = pool.lane_stats(0);
    CHECK(std::string(fg.name) == "fg");
    CHECK_EQ(fg.weight, 4);
    CHECK_EQ(fg.submitted, 100);
    CHECK_EQ(fg.executed, 100);
    auto b = pool.lane_stats(bg);
    CHECK(std::string(b.name) == "bg");
    CHECK_EQ(b.submitted, 103);
    CHECK_EQ(b.executed, 103);
    CHECK(b.has_busy);
    CHECK_EQ(pool.stats().panicked, 1);

    // A long "bg" task lets a "fg" task it queued run inside it (one worker: no other
    // worker can take the "fg" task first).
    flock::pool one(flock::config().workers(1).lanes({{"fg", 4}, {"bg", 1}}));
    std::atomic<bool> answered{false};
    std::atomic<size_t> yielded{0};
    one.submit_to(1, [&] {
        one.submit_to(0, [&answered] { answered = true; });
        size_t n = 0;
        while (!answered) n += flock::yield_to_lanes();
        yielded = n;
    });
    one.wait();
    CHECK_EQ(yielded.load(), 1u);
    CHECK_EQ(flock::yield_to_lanes(), 0u);

    // Unknown lanes: refused, the callable destroyed unrun.
    std::atomic<int> ran{0};
    CHECK_EQ(pool.try_submit_to(2, [&ran, token] { ran++; }), FLOCK_ERR_UNKNOWN_LANE);
    CHECK_EQ(token.use_count(), 1);
    bool threw = false;
    try {
        pool.submit_to(7, [&ran] { ran++; });
    } catch (const flock::error& e) {
        threw = e.status() == FLOCK_ERR_UNKNOWN_LANE;
    }
    CHECK(threw);
    threw = false;
    try {
        pool.lane("nope");
    } catch (const flock::error& e) {
        threw = e.status() == FLOCK_ERR_UNKNOWN_LANE;
    }
    CHECK(threw);
    threw = false;
    try {
        pool.lane_stats(2);
    } catch (const flock::error& e) {
        threw = e.status() == FLOCK_ERR_UNKNOWN_LANE;
    }
    CHECK(threw);
    pool.wait();
    CHECK_EQ(ran.load(), 0);
}

static void test_resize_pause_resume() {
    flock::pool pool(flock::config().workers(2).max_workers(6));
    std::atomic<uint64_t> n{0};
    std::atomic<bool> stop{false};
    std::thread submitter([&] {
        while (!stop) pool.submit([&n] { n++; });
    });
    for (uint32_t w : {6u, 1u, 4u, 2u, 6u, 3u}) {
        pool.resize(w);
        CHECK_EQ(pool.workers(), w);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    stop = true;
    submitter.join();
    pool.wait();
    auto s = pool.stats();
    CHECK_EQ(n.load(), s.submitted);
    CHECK_EQ(s.completed, s.submitted);

    bool threw = false;
    try {
        pool.resize(7);
    } catch (const flock::error& e) {
        threw = e.status() == FLOCK_ERR_INVALID_ARGUMENT;
    }
    CHECK(threw);

    CHECK(!pool.is_paused());
    pool.pause();
    CHECK(pool.is_paused());
    // Let every worker go to sleep, so that no spinning worker picks up the next task.
    for (int tries = 0; tries < 5000; tries++) {
        bool all_parked = true;
        for (uint32_t i = 0; i < pool.workers(); i++)
            all_parked = all_parked && pool.worker_stats(i).state == FLOCK_WORKER_PARKED;
        if (all_parked) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const uint64_t before = n.load();
    for (int i = 0; i < 10; i++) pool.submit([&n] { n++; });
    threw = false;
    try {
        pool.wait();
    } catch (const flock::error& e) {
        threw = e.status() == FLOCK_ERR_PAUSED;
    }
    CHECK(threw);
    CHECK_EQ(n.load(), before);
    CHECK(!pool.wait_for(std::chrono::milliseconds(5)));
    pool.resume();
    pool.wait();
    CHECK_EQ(n.load(), before + 10);
    CHECK(!pool.is_paused());

    pool.shutdown();
    threw = false;
    try {
        pool.pause();
    } catch (const flock::error& e) {
        threw = e.status() == FLOCK_ERR_SHUTDOWN;
    }
    CHECK(threw);
}

int main() {
    if (const char* env = std::getenv("FLOCK_TEST_SCALE"); env && std::atoi(env) > 0)
        scale = static_cast<uint64_t>(std::atoi(env));
    std::printf("libflock %s, C++ wrapper tests (scale 1/%" PRIu64 ")\n", flock_version(), scale);
    int passed = 0, failed = 0;
#define RUN(test)                                                   \
    do {                                                            \
        test_failed = false;                                        \
        test();                                                     \
        std::printf("%s %s\n", test_failed ? "FAIL" : "ok  ", #test); \
        std::fflush(stdout);                                        \
        (test_failed ? failed : passed)++;                          \
    } while (0)
    RUN(test_lambdas_and_exact_counts);
    RUN(test_heap_callables_run_once_and_are_freed);
    RUN(test_exceptions_count_as_panicked);
    RUN(test_errors_throw);
    RUN(test_shutdown_now_destroys_unrun_callables);
    RUN(test_move_only_ownership);
    RUN(test_moved_from_pool_refuses_heap_callables_once);
    RUN(test_worker_hooks);
    RUN(test_submit_task_futures);
    RUN(test_submit_task_forwards_exceptions);
    RUN(test_submit_task_dropped_or_refused);
    RUN(test_multi_future);
    RUN(test_config_lanes_survive_copies);
    RUN(test_submit_to_lanes);
    RUN(test_resize_pause_resume);
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
