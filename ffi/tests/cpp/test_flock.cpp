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
#include <tuple>
#include <type_traits>
#include <vector>
#ifdef __linux__
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

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
    CHECK(copy.flock_config_t::membarrier);  // on by default
    CHECK(!flock::config().membarrier(false).flock_config_t::membarrier);
    CHECK(!flock::pool(flock::config().workers(1).membarrier(false)).uses_membarrier());

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

// ---- task groups, loops, purge --------------------------------------------------------

static_assert(!std::is_copy_constructible_v<flock::task_group>, "task_group is move-only");
static_assert(std::is_nothrow_move_constructible_v<flock::task_group>, "task_group moves");

// Holds a pool's workers until released.
struct hold {
    std::atomic<int> started{0};
    std::atomic<bool> open{false};
    void occupy(flock::pool& p, int workers) {
        for (int i = 0; i < workers; i++)
            p.submit([this] {
                started++;
                while (!open) std::this_thread::sleep_for(std::chrono::milliseconds(1));
            });
        while (started < workers) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
};

// Counts live instances, to see that dropped callables are destroyed once.
struct tracked {
    static inline std::atomic<int> live{0};
    std::vector<int> payload = std::vector<int>(8);  // heap-stored callable
    tracked() { live++; }
    tracked(const tracked& o) : payload(o.payload) { live++; }
    tracked(tracked&& o) noexcept : payload(std::move(o.payload)) { live++; }
    ~tracked() { live--; }
};

static void test_task_group_run_wait_cancel() {
    flock::pool pool(flock::config().workers(2));
    std::atomic<int> n{0};
    {
        flock::task_group g(pool);
        for (int i = 0; i < 1000; i++) g.run([&n] { n++; });
        g.wait();
        CHECK_EQ(n.load(), 1000);
        // Exceptions: the first is rethrown by the next wait, once; the others are counted.
        for (int i = 0; i < 4; i++) g.run([i] { throw std::runtime_error("task " + std::to_string(i)); });
        bool threw = false;
        try {
            g.wait();
        } catch (const std::runtime_error& e) {
            threw = std::string(e.what()).rfind("task ", 0) == 0;
        }
        CHECK(threw);
        g.wait();  // reported once: no throw now
        // wait_for times out on a held task, then succeeds.
        std::atomic<bool> go{false};
        g.run([&go] {
            while (!go) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        });
        CHECK(!g.wait_for(std::chrono::milliseconds(5)));
        go = true;
        CHECK(g.wait_for(std::chrono::seconds(60)));
    }
    pool.wait();
    CHECK_EQ(pool.stats().panicked, 4);

    // cancel: queued callables are destroyed unrun, running ones finish.
    flock::pool one(flock::config().workers(1));
    hold h;
    h.occupy(one, 1);
    std::atomic<int> ran{0};
    {
        flock::task_group g(one);
        tracked t;
        for (int i = 0; i < 10; i++) g.run([t, &ran] { ran += static_cast<int>(t.payload.size()); });
        CHECK_EQ(tracked::live.load(), 11);
        CHECK_EQ(g.cancel(), 10);
        CHECK_EQ(tracked::live.load(), 1);
        h.open = true;
        g.wait();
        g.run([&ran] { ran++; });  // reusable after a cancel
    }  // the destructor waits
    CHECK_EQ(ran.load(), 1);
    CHECK_EQ(tracked::live.load(), 0);

    // A moved-from group refuses, destroying the callable once.
    flock::task_group a(pool);
    flock::task_group b(std::move(a));
    bool threw = false;
    try {
        a.run([t = tracked()] {});
    } catch (const flock::error& e) {
        threw = e.status() == FLOCK_ERR_NULL;
    }
    CHECK(threw);
    CHECK_EQ(tracked::live.load(), 0);
    b.run([&n] { n++; });
    b.wait();
}

// oneTBB's task_group example: Fibonacci with two tasks per call and a wait.
static int tbb_fib(flock::pool& pool, int n) {
    if (n < 2) return n;
    int x = 0, y = 0;
    flock::task_group g(pool);
    g.run([&] { x = tbb_fib(pool, n - 1); });
    g.run([&] { y = tbb_fib(pool, n - 2); });
    g.wait();
    return x + y;
}

static void test_task_group_nested_on_one_worker() {
    flock::pool pool(flock::config().workers(1));
    // Every level waits inside a task on the pool's only worker: the waits run the tasks.
    auto f = pool.submit_task([&pool] { return tbb_fib(pool, scale > 1 ? 10 : 14); });
    CHECK_EQ(f.get(), scale > 1 ? 55 : 377);
    // Nested parallel_for on one worker.
    std::atomic<uint64_t> sum{0};
    pool.submit_task([&] {
        flock::parallel_for(pool, 0, 16, [&](int i) {
            flock::parallel_for(pool, 0, 16, [&](int j) { sum += static_cast<uint64_t>(i * 16 + j); });
        });
    }).get();
    CHECK_EQ(sum.load(), 255 * 256 / 2);
}

// wait() on a group from one of its own tasks would wait for that task: it throws
// flock::error(FLOCK_ERR_WOULD_DEADLOCK) at once (it hung once), and wait_for() too.
static void test_task_group_wait_from_own_task() {
    flock::pool pool(flock::config().workers(2));
    flock::task_group g(pool);
    std::atomic<int> refused{0};
    for (int i = 0; i < 4; i++) {
        g.run([&] {
            try {
                g.wait();
            } catch (const flock::error& e) {
                if (e.status() == FLOCK_ERR_WOULD_DEADLOCK) refused++;
            }
            try {
                g.wait_for(std::chrono::seconds(60));
            } catch (const flock::error& e) {
                if (e.status() == FLOCK_ERR_WOULD_DEADLOCK) refused++;
            }
        });
    }
    g.wait();
    CHECK_EQ(refused.load(), 8);
}

static void test_parallel_loops() {
    flock::pool pool(flock::config().workers(3));
    // Each index exactly once, for ranges and block counts of every shape.
    for (int64_t first : {-7, 0, 3}) {
        for (int64_t len : {0, 1, 2, 5, 97, 1000}) {
            for (size_t blocks : {size_t(0), size_t(1), size_t(3), size_t(2000)}) {
                std::vector<std::atomic<int>> hits(static_cast<size_t>(len));
                pool.parallel_for(first, first + len, [&](int64_t i) { hits[static_cast<size_t>(i - first)]++; }, blocks);
                bool once = true;
                for (auto& h : hits) once = once && h.load() == 1;
                CHECK(once);
            }
        }
    }
    // An empty or reversed range does nothing.
    pool.parallel_for(5, 5, [&](int) { CHECK(false); });
    pool.parallel_for(5, 2, [&](int) { CHECK(false); });
    // An exception comes out of parallel_for once every block has finished.
    bool threw = false;
    try {
        flock::parallel_for(pool, 0, 100, [](int i) {
            if (i == 42) throw std::out_of_range("42");
        });
    } catch (const std::out_of_range&) {
        threw = true;
    }
    CHECK(threw);
    // submit_blocks: one result per block, in order, covering the range.
    auto parts = pool.submit_blocks(0, 1000, [](int lo, int hi) {
        uint64_t s = 0;
        for (int i = lo; i < hi; i++) s += static_cast<uint64_t>(i);
        return s;
    }, 7);
    CHECK_EQ(parts.size(), 7);
    auto sums = parts.get();
    uint64_t total = 0;
    for (auto v : sums) total += v;
    CHECK_EQ(sums.size(), 7);
    CHECK_EQ(total, 999 * 1000 / 2);
    std::atomic<int> blocks{0};
    pool.submit_blocks(0, 10, [&](int, int) { blocks++; }, 3).get();
    CHECK_EQ(blocks.load(), 3);
    // detach_loop: no wait; the pool's wait covers it.
    std::atomic<uint64_t> n{0};
    pool.detach_loop(0, 500, [&n](int i) { n += static_cast<uint64_t>(i); });
    pool.wait();
    CHECK_EQ(n.load(), 499 * 500 / 2);
}

static void test_purge_cpp() {
    flock::pool pool(flock::config().workers(1));
    hold h;
    h.occupy(pool, 1);
    {
        tracked t;
        for (int i = 0; i < 20; i++) pool.submit([t] { CHECK(false); });
    }
    auto f = pool.submit_task([] { return 1; });
    CHECK_EQ(tracked::live.load(), 20);
    CHECK_EQ(pool.purge(), 21);
    CHECK_EQ(tracked::live.load(), 0);
    bool broken = false;
    try {
        f.get();
    } catch (const std::future_error& e) {
        broken = e.code() == std::future_errc::broken_promise;
    }
    CHECK(broken);
    h.open = true;
    pool.wait();
    CHECK_EQ(pool.stats().dropped, 21);
    std::atomic<int> n{0};
    pool.submit([&n] { n++; });  // still open
    pool.wait();
    CHECK_EQ(n.load(), 1);
}

// ---- ports: BS::thread_pool's test program and oneTBB's task_group examples ----------
//
// Written from their documented behaviour (BS::thread_pool v5's README and test program's
// check list; oneTBB's task_group reference and examples), on flock.hpp's API. Each check
// is counted; main() prints the counts.

static int port_pass[2], port_total[2];
static void port(int which, const char* name, bool ok) {
    port_total[which]++;
    if (ok) {
        port_pass[which]++;
    } else {
        std::fprintf(stderr, "  port check failed: %s\n", name);
        test_failed = true;
    }
}
enum { BS = 0, TBB = 1 };

static void test_port_bs_thread_pool() {
    flock::pool pool(flock::config().workers(4));
    // check_task: detach_task N times; each runs once.
    {
        std::atomic<int> n{0};
        for (int i = 0; i < 1000; i++) pool.submit([&n] { n++; });
        pool.wait();
        port(BS, "detach_task runs each task once", n == 1000);
    }
    // check_task: submit_task returns the value, and a void task's future becomes ready.
    {
        auto a = pool.submit_task([] { return 42; });
        std::atomic<bool> flag{false};
        auto b = pool.submit_task([&flag] { flag = true; });
        b.wait();
        port(BS, "submit_task returns the value", a.get() == 42 && flag);
    }
    // check_loop: detach_loop / submit_loop touch every index once, also with more blocks
    // than indices and with negative bounds.
    {
        bool ok = true;
        for (auto [first, last, blocks] : {std::tuple<int, int, size_t>{0, 1000, 0}, {-500, 500, 13}, {3, 8, 100}, {0, 1, 1}}) {
            std::vector<std::atomic<int>> hits(static_cast<size_t>(last - first));
            pool.detach_loop(first, last, [&](int i) { hits[static_cast<size_t>(i - first)]++; }, blocks);
            pool.wait();
            for (auto& h : hits) ok = ok && h == 1;
            for (auto& h : hits) h = 0;
            pool.parallel_for(first, last, [&](int i) { hits[static_cast<size_t>(i - first)]++; }, blocks);
            for (auto& h : hits) ok = ok && h == 1;
        }
        port(BS, "detach_loop and submit_loop cover each index once", ok);
    }
    // check_blocks: submit_blocks returns one result per block, which sum to the whole.
    {
        auto f = pool.submit_blocks(0, 10000, [](int lo, int hi) {
            int64_t s = 0;
            for (int i = lo; i < hi; i++) s += i;
            return s;
        }, 10);
        auto v = f.get();
        int64_t s = 0;
        for (auto x : v) s += x;
        port(BS, "submit_blocks sums to the whole", v.size() == 10 && s == int64_t(9999) * 10000 / 2);
    }
    // check_wait_for / wait_until: a long task makes them time out, then they succeed.
    {
        std::atomic<bool> go{false};
        pool.submit([&go] {
            while (!go) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        });
        bool timed_out = !pool.wait_for(std::chrono::milliseconds(10));
        bool until_out = !pool.wait_until(std::chrono::steady_clock::now() + std::chrono::milliseconds(10));
        go = true;
        port(BS, "wait_for / wait_until time out, then return", timed_out && until_out && pool.wait_for(std::chrono::seconds(60)));
    }
    // check_pausing: tasks submitted while paused do not start until unpaused.
    {
        pool.pause();
        std::atomic<int> n{0};
        for (int i = 0; i < 10; i++) pool.submit([&n] { n++; });
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        bool none = n == 0;
        pool.resume();
        pool.wait();
        port(BS, "paused pool runs nothing until unpaused", none && n == 10);
    }
    // check_purge: with the workers busy, purge drops the queued tasks.
    {
        hold h;
        h.occupy(pool, 4);
        std::atomic<int> n{0};
        for (int i = 0; i < 100; i++) pool.submit([&n] { n++; });
        size_t purged = pool.purge();
        h.open = true;
        pool.wait();
        port(BS, "purge drops the queued tasks", purged == 100 && n == 0);
    }
    // check_exceptions: submit_task and submit_blocks forward a task's exception.
    {
        bool a = false, b = false;
        try {
            pool.submit_task([]() -> int { throw std::runtime_error("x"); }).get();
        } catch (const std::runtime_error&) {
            a = true;
        }
        try {
            pool.submit_blocks(0, 10, [](int lo, int) {
                if (lo == 0) throw std::runtime_error("y");
            }).get();
        } catch (const std::runtime_error&) {
            b = true;
        }
        port(BS, "exceptions are forwarded to get()", a && b);
    }
    // check_vectors: parallel vector addition equals the serial one.
    {
        const size_t len = 10000;
        std::vector<double> x(len), y(len), par(len), ser(len);
        for (size_t i = 0; i < len; i++) {
            x[i] = static_cast<double>(i) * 0.5;
            y[i] = static_cast<double>(len - i);
            ser[i] = x[i] + y[i];
        }
        pool.submit_blocks(size_t(0), len, [&](size_t lo, size_t hi) {
            for (size_t i = lo; i < hi; i++) par[i] = x[i] + y[i];
        }).wait();
        port(BS, "parallel vector addition matches", par == ser);
    }
    // check_deadlock (BS warns that waiting inside a task deadlocks): with task groups,
    // tasks that wait for their own sub-tasks complete even when every worker does so.
    {
        std::atomic<int> leaves{0};
        flock::task_group outer(pool);
        for (int i = 0; i < 8; i++)
            outer.run([&] {
                flock::task_group inner(pool);
                for (int j = 0; j < 8; j++) inner.run([&leaves] { leaves++; });
                inner.wait();
            });
        outer.wait();
        port(BS, "tasks waiting for sub-tasks complete", leaves == 64);
    }
    // get_tasks_total / get_tasks_queued: the counters see what is queued and running.
    {
        hold h;
        h.occupy(pool, 4);
        for (int i = 0; i < 5; i++) pool.submit([] {});
        auto s = pool.stats();
        h.open = true;
        pool.wait();
        port(BS, "stats count queued and running tasks", s.queued == 5 && s.in_flight == 9);
    }
    // check_constructor / reset: the worker count is what was asked, and resizes.
    {
        bool ok = pool.workers() == 4;
        pool.resize(2);
        ok = ok && pool.workers() == 2;
        std::atomic<int> n{0};
        pool.parallel_for(0, 100, [&n](int) { n++; });
        pool.resize(4);
        port(BS, "thread count and reset", ok && n == 100 && pool.workers() == 4);
    }
}

// oneTBB's documented tree-sum example: recurse into both children as tasks of a group.
struct tree_node {
    int value;
    std::unique_ptr<tree_node> left, right;
};

static std::unique_ptr<tree_node> make_tree(int depth, int& next) {
    if (depth == 0) return nullptr;
    auto node = std::make_unique<tree_node>();
    node->value = next++;
    node->left = make_tree(depth - 1, next);
    node->right = make_tree(depth - 1, next);
    return node;
}

static long tree_sum(flock::pool& pool, const tree_node* n) {
    if (!n) return 0;
    long l = 0, r = 0;
    flock::task_group g(pool);
    g.run([&] { l = tree_sum(pool, n->left.get()); });
    g.run([&] { r = tree_sum(pool, n->right.get()); });
    g.wait();
    return n->value + l + r;
}

static void test_port_onetbb_task_group() {
    flock::pool pool(flock::config().workers(2));
    // Fib (the task_group reference's example), from outside and from inside a task.
    port(TBB, "Fib with task_group", tbb_fib(pool, 15) == 610);
    port(TBB, "Fib with task_group inside a task", pool.submit_task([&] { return tbb_fib(pool, 12); }).get() == 144);
    // run_and_wait: run then wait returns after the task.
    {
        flock::task_group g(pool);
        int x = 0;
        g.run([&x] { x = 7; });
        g.wait();
        port(TBB, "run and wait", x == 7);
    }
    // Tree traversal with recursive groups.
    {
        int next = 1;
        auto root = make_tree(scale > 1 ? 6 : 9, next);
        long want = static_cast<long>(next - 1) * next / 2;
        port(TBB, "parallel tree sum", tree_sum(pool, root.get()) == want);
    }
    // cancel: tasks not yet started do not run; wait returns once the running ones finish.
    {
        flock::pool one(flock::config().workers(1));
        hold h;
        h.occupy(one, 1);
        flock::task_group g(one);
        std::atomic<int> ran{0};
        for (int i = 0; i < 50; i++) g.run([&ran] { ran++; });
        size_t cancelled = g.cancel();
        h.open = true;
        g.wait();
        port(TBB, "cancel skips tasks not yet started", cancelled == 50 && ran == 0);
    }
    // Exceptions: wait() rethrows one of the tasks' exceptions after all have finished.
    {
        flock::task_group g(pool);
        std::atomic<int> finished{0};
        for (int i = 0; i < 10; i++)
            g.run([i, &finished] {
                finished++;
                if (i == 3) throw std::logic_error("three");
            });
        bool threw = false;
        try {
            g.wait();
        } catch (const std::logic_error&) {
            threw = true;
        }
        port(TBB, "wait rethrows a task's exception after all finished", threw && finished == 10);
    }
    // A group is reusable after wait (task_group can be run again after wait returns).
    {
        flock::task_group g(pool);
        int total = 0;
        for (int round = 0; round < 5; round++) {
            std::atomic<int> n{0};
            for (int i = 0; i < 10; i++) g.run([&n] { n++; });
            g.wait();
            total += n;
        }
        port(TBB, "group reusable after wait", total == 50);
    }
    // Tasks spawning into their own group (run from inside a task of the group).
    {
        flock::task_group g(pool);
        std::atomic<int> n{0};
        g.run([&] {
            for (int i = 0; i < 10; i++) g.run([&n] { n++; });
        });
        g.wait();
        port(TBB, "tasks add tasks to their own group", n == 10);
    }
    // parallel_for as tbb::parallel_for over a blocked range of indices.
    {
        std::vector<int> v(1000);
        flock::parallel_for(pool, size_t(0), v.size(), [&v](size_t i) { v[i] = static_cast<int>(i) * 2; });
        bool ok = true;
        for (size_t i = 0; i < v.size(); i++) ok = ok && v[i] == static_cast<int>(i) * 2;
        port(TBB, "parallel_for over a vector", ok);
    }
}

// get_thread_ids() and get_native_handles(): element i names the thread worker i's tasks run
// on; after shutdown, 0.
static void test_get_thread_ids() {
    constexpr uint32_t workers = 3;
    flock::pool pool(flock::config().workers(workers));
    std::vector<uint64_t> seen(workers);
    std::vector<std::thread::native_handle_type> self(workers);
    std::atomic<uint32_t> arrived{0};
    // Each task waits for the others, so the three run on three workers.
    for (uint32_t i = 0; i < workers; i++)
        pool.submit([&] {
            auto w = flock::this_thread::get_index();
            if (!w || *w >= workers) return;
#ifdef __linux__
            seen[*w] = static_cast<uint64_t>(syscall(SYS_gettid));
            self[*w] = pthread_self();
#endif
            arrived++;
            while (arrived.load() < workers) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        });
    pool.wait();
    CHECK_EQ(arrived.load(), workers);
    std::vector<uint64_t> ids = pool.get_thread_ids();
    std::vector<std::thread::native_handle_type> handles = pool.get_native_handles();
    CHECK_EQ(ids.size(), workers);
    CHECK_EQ(handles.size(), workers);
#ifdef __linux__
    CHECK(ids == seen);
    CHECK(handles == self);
    CHECK(ids[0] != 0 && ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2]);
#else
    CHECK(ids == std::vector<uint64_t>(workers, 0));
#endif
    pool.shutdown();
    CHECK(pool.get_thread_ids() == std::vector<uint64_t>(workers, 0));
    CHECK(pool.get_native_handles() == std::vector<std::thread::native_handle_type>(workers));
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
    RUN(test_task_group_run_wait_cancel);
    RUN(test_task_group_nested_on_one_worker);
    RUN(test_task_group_wait_from_own_task);
    RUN(test_parallel_loops);
    RUN(test_purge_cpp);
    RUN(test_port_bs_thread_pool);
    RUN(test_port_onetbb_task_group);
    RUN(test_get_thread_ids);
    std::printf("ported checks: BS::thread_pool %d/%d passed, oneTBB task_group %d/%d passed\n", port_pass[BS],
                port_total[BS], port_pass[TBB], port_total[TBB]);
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
