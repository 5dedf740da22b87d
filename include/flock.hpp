// flock.hpp: a header-only C++17 RAII wrapper over flock.h (libflock).
//
//     flock::pool pool(flock::config().workers(4));
//     std::atomic<int> n{0};
//     pool.submit([&n] { n++; });
//     pool.wait();
//     std::printf("%llu done\n", (unsigned long long)pool.stats().completed);
//
// Ownership: flock::pool owns its flock_pool_t; it is move-only, and its destructor shuts the
// pool down gracefully (every accepted task runs) and joins the workers, like flock_pool_free.
// A moved-from pool holds nothing; calling it throws flock::error(FLOCK_ERR_NULL) (submitting
// to it destroys the callable once, unrun).
//
// Exceptions: calls that fail throw flock::error, carrying the flock_status_t. An exception
// thrown by a task never crosses the C boundary: the trampoline catches it, reports it with
// flock_task_fail, and the pool counts the task in stats().panicked (and its worker's), as it
// counts a panicking Rust task. A task given to submit() has its exception object discarded;
// to see it, submit with submit_task(), whose std::future rethrows it from get():
//
//     std::future<int> answer = pool.submit_task([] { return 6 * 7; });
//     flock::multi_future<int> parts;
//     for (int i = 0; i < 8; i++) parts.push_back(pool.submit_task([i] { return i * i; }));
//     std::vector<int> squares = parts.get();  // rethrows the first exception, if any
//
// Allocation: a callable that is trivially copyable and no bigger than a pointer (a lambda
// capturing nothing, or one reference or pointer) travels inside the task's argument word:
// no allocation. Any other callable is moved to the heap and deleted after it runs, or by the
// drop callback when FLOCK_SHUTDOWN_NOW discards it, or by submit itself when it is refused.
//
// Worker hooks: flock::config().on_worker_start([](uint32_t w) { ... }).on_worker_stop(...)
// runs init and cleanup code on each worker thread (flock_config_t::on_worker_start/stop).
//
// Lanes: flock::config().lanes({{"interactive", 8}, {"batch", 1}}) builds a pool with two
// lanes; pool.submit_to(pool.lane("batch"), f) puts a task in one (pool.lane looks the index
// up once; keep it). submit() uses lane 0 from outside the pool and the running task's lane
// from inside one.
//
// Thread-safety: as flock.h; every member may be called from any thread concurrently, except
// that destruction and move-assignment must be the last use of a pool. A flock::config is a
// value: copy it freely (copies share its lane list, which never changes), but do not change
// one object while another thread uses it.
#ifndef FLOCK_HPP
#define FLOCK_HPP

#include "flock.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace flock {

/// A failed flock call.
class error : public std::runtime_error {
public:
    explicit error(flock_status_t status)
        : std::runtime_error(std::string("flock: ") + flock_status_str(status)), status_(status) {}
    /// What the C call returned.
    flock_status_t status() const noexcept { return status_; }

private:
    flock_status_t status_;
};

namespace detail {
inline void check(flock_status_t status) {
    if (status != FLOCK_OK) throw error(status);
}

// A callable stored in the argument word itself.
template <class F>
constexpr bool fits_in_arg = std::is_trivially_copyable_v<F> && sizeof(F) <= sizeof(void*) &&
                             alignof(F) <= alignof(void*);

template <class F>
void run_inline(void* arg) noexcept {
    try {
        alignas(F) unsigned char buf[sizeof(F)];
        std::memcpy(buf, &arg, sizeof(F));
        (*std::launder(reinterpret_cast<F*>(buf)))();
    } catch (...) {
        flock_task_fail();
    }
}

template <class F>
void run_heap(void* arg) noexcept {
    std::unique_ptr<F> f(static_cast<F*>(arg));
    try {
        (*f)();
    } catch (...) {
        flock_task_fail();
    }
}

template <class F>
void drop_heap(void* arg) noexcept {
    delete static_cast<F*>(arg);
}

// A callable and the promise of its result, for pool::submit_task. Dropped unrun (by
// FLOCK_SHUTDOWN_NOW), it is deleted by drop_heap, and the promise's destructor stores
// std::future_error(broken_promise) in the future.
template <class F, class R>
struct promised {
    template <class G>
    explicit promised(G&& g) : f(std::in_place, std::forward<G>(g)) {}

    // Runs f and fulfils the promise; the callable is destroyed first, so that everything it
    // captured is released by the time the future is ready. False when f threw.
    bool run() noexcept {
        std::exception_ptr thrown;
        try {
            if constexpr (std::is_void_v<R>) {
                (*f)();
                f.reset();
                promise.set_value();
            } else {
                R value = (*f)();
                f.reset();
                promise.set_value(std::move(value));
            }
            return true;
        } catch (...) {
            thrown = std::current_exception();
        }
        f.reset();
        try {
            promise.set_exception(thrown);
        } catch (...) {  // already satisfied: R's move threw after set_value took it
        }
        return false;
    }

    std::optional<F> f;
    std::promise<R> promise;
};

template <class P>
void run_promised(void* arg) noexcept {
    std::unique_ptr<P> task(static_cast<P*>(arg));
    if (!task->run()) flock_task_fail();  // counted in stats().panicked too
}
}  // namespace detail

/// The futures of a set of tasks (pool::submit_task's), waited for and collected together, as
/// BS::thread_pool's multi_future: push_back the futures, then wait() or get(). A
/// std::vector<std::future<T>> with more; T may be void.
template <class T>
class multi_future : public std::vector<std::future<T>> {
public:
    using std::vector<std::future<T>>::vector;

    /// Waits for every future.
    void wait() const {
        for (const auto& f : *this) f.wait();
    }

    /// Waits for every future, at most `timeout` in all; true when all are ready.
    template <class Rep, class Period>
    bool wait_for(std::chrono::duration<Rep, Period> timeout) const {
        return wait_until(std::chrono::steady_clock::now() + timeout);
    }

    /// Waits for every future until `deadline`; true when all are ready.
    template <class Clock, class Duration>
    bool wait_until(std::chrono::time_point<Clock, Duration> deadline) const {
        for (const auto& f : *this)
            if (f.wait_until(deadline) != std::future_status::ready) return false;
        return true;
    }

    /// How many are ready now.
    size_t ready_count() const {
        size_t n = 0;
        for (const auto& f : *this)
            if (f.wait_for(std::chrono::seconds(0)) == std::future_status::ready) n++;
        return n;
    }

    /// Whether every future has a shared state (none was moved from or collected).
    bool valid() const noexcept {
        for (const auto& f : *this)
            if (!f.valid()) return false;
        return true;
    }

    /// Waits for every task, then collects the results in order (nothing for T void); if
    /// tasks threw, rethrows the first one's exception, in order, once all have finished (so
    /// no task still runs when the caller unwinds). Each future is consumed.
    auto get() {
        wait();
        if constexpr (std::is_void_v<T>) {
            std::exception_ptr first;
            for (auto& f : *this) {
                try {
                    f.get();
                } catch (...) {
                    if (!first) first = std::current_exception();
                }
            }
            if (first) std::rethrow_exception(first);
        } else {
            std::vector<T> results;
            results.reserve(this->size());
            std::exception_ptr first;
            for (auto& f : *this) {
                try {
                    results.push_back(f.get());
                } catch (...) {
                    if (!first) first = std::current_exception();
                }
            }
            if (first) std::rethrow_exception(first);
            return results;
        }
    }
};

class pool;

/// flock_config_t with its defaults filled in (flock_config_init) and chainable setters.
struct config : flock_config_t {
    config() noexcept : flock_config_t() { flock_config_init(this); }
    // Copies share the lane list set by lanes(), which never changes once built, so
    // flock_config_t::lanes stays valid in every copy. Declaring the copies suppresses the
    // moves: a moved-from config keeps its lanes too.
    config(const config&) = default;
    config& operator=(const config&) = default;
    ~config() = default;

    config& workers(uint32_t n) noexcept { flock_config_t::workers = n; return *this; }
    config& capacity(uint64_t n) noexcept { flock_config_t::capacity = n; return *this; }
    config& when_full(flock_when_full_t p) noexcept { flock_config_t::when_full = p; return *this; }
    config& block_timeout(std::chrono::nanoseconds t) noexcept {
        block_timeout_ns = static_cast<uint64_t>(t.count());
        return *this;
    }
    config& fifo(bool on = true) noexcept { flock_config_t::fifo = on; return *this; }
    config& spin_limit(uint32_t rounds) noexcept { flock_config_t::spin_limit = rounds; return *this; }
    config& pin_workers(bool on = true) noexcept { flock_config_t::pin_workers = on; return *this; }
    config& track_latency(bool on = true) noexcept { flock_config_t::track_latency = on; return *this; }
    /// Keep a lane reserve when the lanes differ in weight (see flock_config_t::lane_reserve).
    config& lane_reserve(bool on = true) noexcept { flock_config_t::lane_reserve = on; return *this; }
    /// The most workers pool::resize may ask for (0: the default, see flock_config_t).
    config& max_workers(uint32_t n) noexcept { flock_config_t::max_workers = n; return *this; }
    /// The pool's lanes, as (name, weight) pairs in index order: lanes({{"ui", 8}, {"batch",
    /// 1}}). The config keeps a copy. An empty list restores the one default lane. Names are C
    /// strings (one holding a NUL ends there). The pool's constructor checks them
    /// (FLOCK_ERR_INVALID_CONFIG: see flock_config_t::lanes). May throw std::bad_alloc.
    config& lanes(std::vector<std::pair<std::string, uint32_t>> list) {
        if (list.empty()) {
            lanes_.reset();
            flock_config_t::lanes = nullptr;
            flock_config_t::lane_count = 0;
            return *this;
        }
        auto owned = std::make_shared<const lane_list>(std::move(list));
        flock_config_t::lanes = owned->views.data();
        // More than FLOCK_MAX_LANES is refused by the pool, whatever the count says.
        flock_config_t::lane_count = static_cast<uint32_t>(std::min<size_t>(owned->views.size(), UINT32_MAX));
        lanes_ = std::move(owned);
        return *this;
    }

    /// Calls f(worker) on each worker thread before it runs any task (see
    /// flock_config_t::on_worker_start): the pool's init callback, e.g. to name the thread or
    /// set up thread-local state. f is copied into the config (copies share it) and kept alive
    /// by the flock::pool built from it. It runs on several workers at once; an exception it
    /// throws is caught, printed to stderr, and the worker goes on. An empty f removes the
    /// hook. May throw std::bad_alloc.
    config& on_worker_start(std::function<void(uint32_t)> f) {
        auto h = std::make_shared<worker_hooks>(hooks_ ? *hooks_ : worker_hooks{});
        h->start = std::move(f);
        return set_hooks(std::move(h));
    }

    /// Calls f(worker) on each worker thread after its last task (see
    /// flock_config_t::on_worker_stop): the cleanup callback. Same rules as on_worker_start.
    config& on_worker_stop(std::function<void(uint32_t)> f) {
        auto h = std::make_shared<worker_hooks>(hooks_ ? *hooks_ : worker_hooks{});
        h->stop = std::move(f);
        return set_hooks(std::move(h));
    }

private:
    friend class pool;

    // The C++ hooks; flock_config_t::worker_hook_arg points at them. Built once, never changed.
    struct worker_hooks {
        std::function<void(uint32_t)> start, stop;
    };

    template <std::function<void(uint32_t)> worker_hooks::*Which>
    static void call_hook(void* arg, uint32_t worker) noexcept {
        try {
            (static_cast<const worker_hooks*>(arg)->*Which)(worker);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "flock: a worker hook threw on worker %u: %s\n", static_cast<unsigned>(worker), e.what());
        } catch (...) {
            std::fprintf(stderr, "flock: a worker hook threw on worker %u\n", static_cast<unsigned>(worker));
        }
    }

    config& set_hooks(std::shared_ptr<const worker_hooks> h) {
        flock_config_t::on_worker_start = h->start ? &call_hook<&worker_hooks::start> : nullptr;
        flock_config_t::on_worker_stop = h->stop ? &call_hook<&worker_hooks::stop> : nullptr;
        flock_config_t::worker_hook_arg = const_cast<worker_hooks*>(h.get());
        hooks_ = std::move(h);
        return *this;
    }

    // The names and the flock_lane_t array pointing into them; built once, never changed.
    struct lane_list {
        explicit lane_list(std::vector<std::pair<std::string, uint32_t>> list) : specs(std::move(list)) {
            views.reserve(specs.size());
            for (const auto& spec : specs) views.push_back(flock_lane_t{spec.first.c_str(), spec.second});
        }
        std::vector<std::pair<std::string, uint32_t>> specs;
        std::vector<flock_lane_t> views;
    };
    std::shared_ptr<const lane_list> lanes_;
    std::shared_ptr<const worker_hooks> hooks_;
};

/// The index of the flock worker calling, or -1 outside any pool.
inline int32_t current_worker() noexcept { return flock_current_worker(); }

/// From a long task: runs queued tasks of heavier lanes that are due, here (see
/// flock_yield_to_lanes); returns how many ran.
inline size_t yield_to_lanes() noexcept { return flock_yield_to_lanes(); }

/// An owned flock pool.
class pool {
public:
    /// Starts a pool with every default.
    pool() : pool(config()) {}

    /// Starts a pool; throws flock::error (FLOCK_ERR_INVALID_CONFIG, FLOCK_ERR_THREAD_SPAWN).
    /// Keeps the config's worker hooks alive for as long as the pool's workers run.
    explicit pool(const config& cfg) : hooks_(cfg.hooks_) { detail::check(flock_pool_new(&cfg, &p_)); }

    /// Starts a pool from a plain flock_config_t (its C hooks and worker_hook_arg as they are).
    explicit pool(const flock_config_t& cfg) { detail::check(flock_pool_new(&cfg, &p_)); }

    pool(const pool&) = delete;
    pool& operator=(const pool&) = delete;
    pool(pool&& other) noexcept : p_(std::exchange(other.p_, nullptr)), hooks_(std::move(other.hooks_)) {}
    pool& operator=(pool&& other) noexcept {
        if (this != &other) {
            flock_pool_free(p_);
            p_ = std::exchange(other.p_, nullptr);
            hooks_ = std::move(other.hooks_);
        }
        return *this;
    }
    /// Graceful: every accepted task runs, then the workers are joined (their stop hooks run),
    /// then the hooks are released. Do not destroy a pool from inside one of its own tasks
    /// when it has worker hooks: the workers would outlive it.
    ~pool() { flock_pool_free(p_); }

    /// Runs f() on the pool. Returns FLOCK_OK, or the status of a refusal (FLOCK_ERR_FULL,
    /// FLOCK_ERR_TIMEOUT, FLOCK_ERR_SHUTDOWN), in which case f was destroyed unrun. May throw
    /// std::bad_alloc (only for callables that do not fit in the argument word).
    template <class F>
    flock_status_t try_submit(F&& f) {
        return submit_in(nullptr, std::forward<F>(f));
    }

    /// Runs f() on the pool; throws flock::error when the pool refuses it (f is destroyed).
    template <class F>
    void submit(F&& f) {
        detail::check(try_submit(std::forward<F>(f)));
    }

    /// Runs f() on the pool and returns a std::future of its result (std::future<void> for
    /// a callable returning void): the way to see what a task returns or throws. An exception
    /// f throws is stored in the future (get() rethrows it) and the task is also counted in
    /// stats().panicked. A task that FLOCK_SHUTDOWN_NOW discards unrun is destroyed and its
    /// future holds std::future_error (std::future_errc::broken_promise). When the future is
    /// ready, f (and what it captured) has been destroyed. Throws flock::error when the pool
    /// refuses the task (FLOCK_ERR_FULL, FLOCK_ERR_TIMEOUT, FLOCK_ERR_SHUTDOWN,
    /// FLOCK_ERR_NULL for a moved-from pool; f is destroyed once, unrun), std::bad_alloc.
    /// Always allocates (the callable with its promise, and the future's shared state).
    /// Waiting on the future from inside one of this pool's tasks blocks that worker: on a
    /// pool whose workers all wait so, nothing runs.
    template <class F>
    auto submit_task(F&& f) {
        return submit_task_in(nullptr, std::forward<F>(f));
    }

    /// Like submit_task, into lane number `lane` (see lane()): also FLOCK_ERR_UNKNOWN_LANE.
    template <class F>
    auto submit_task_to(uint32_t lane, F&& f) {
        return submit_task_in(&lane, std::forward<F>(f));
    }

    /// Like try_submit, into lane number `lane` (see lane()): also FLOCK_ERR_UNKNOWN_LANE.
    template <class F>
    flock_status_t try_submit_to(uint32_t lane, F&& f) {
        return submit_in(&lane, std::forward<F>(f));
    }

    /// Runs f() on the pool in lane number `lane` (see lane()); throws flock::error when the
    /// pool refuses it (FLOCK_ERR_UNKNOWN_LANE, ...; f is destroyed).
    template <class F>
    void submit_to(uint32_t lane, F&& f) {
        detail::check(try_submit_to(lane, std::forward<F>(f)));
    }

    /// The index of the lane called `name`; throws flock::error(FLOCK_ERR_UNKNOWN_LANE).
    uint32_t lane(const std::string& name) const {
        uint32_t index = 0;
        detail::check(flock_lane_index(p_, name.c_str(), &index));
        return index;
    }

    /// Blocks until every task accepted so far has finished. Throws flock::error
    /// (FLOCK_ERR_WOULD_DEADLOCK from inside one of this pool's tasks, FLOCK_ERR_PAUSED while
    /// the pool is paused with tasks queued).
    void wait() { detail::check(flock_wait(p_)); }

    /// Like wait() with a time limit: false when it ran out first.
    template <class Rep, class Period>
    bool wait_for(std::chrono::duration<Rep, Period> timeout) {
        auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
        flock_status_t st = flock_wait_timeout(p_, ns < 0 ? 0 : static_cast<uint64_t>(ns));
        if (st == FLOCK_ERR_TIMEOUT) return false;
        detail::check(st);
        return true;
    }

    /// Like wait() until a point in time: false when it came first.
    template <class Clock, class Duration>
    bool wait_until(std::chrono::time_point<Clock, Duration> deadline) {
        auto left = deadline - Clock::now();
        return wait_for(left < decltype(left)::zero() ? decltype(left)::zero() : left);
    }

    /// Stops the pool (see flock_shutdown) and returns how many tasks were discarded. The pool
    /// object stays usable for stats(); submits then throw FLOCK_ERR_SHUTDOWN.
    uint64_t shutdown(flock_shutdown_mode_t mode = FLOCK_SHUTDOWN_GRACEFUL) {
        uint64_t dropped = 0;
        detail::check(flock_shutdown(p_, mode, &dropped));
        return dropped;
    }

    /// A snapshot of the counters.
    flock_stats_t stats() const {
        flock_stats_t s;
        detail::check(flock_stats(p_, &s));
        return s;
    }

    /// A snapshot of one worker's counters (FLOCK_ERR_INVALID_ARGUMENT past the last).
    flock_worker_stats_t worker_stats(uint32_t worker) const {
        flock_worker_stats_t w;
        detail::check(flock_worker_stats(p_, worker, &w));
        return w;
    }

    /// A snapshot of one lane's counters (FLOCK_ERR_UNKNOWN_LANE past the last).
    flock_lane_stats_t lane_stats(uint32_t lane) const {
        flock_lane_stats_t l;
        detail::check(flock_lane_stats(p_, lane, &l));
        return l;
    }

    /// The number of workers wanted (as built or last resized).
    uint32_t workers() const { return stats().workers; }

    /// Sets the number of workers (see flock_resize); throws flock::error
    /// (FLOCK_ERR_INVALID_ARGUMENT for 0 or past max_workers, FLOCK_ERR_SHUTDOWN, ...).
    void resize(uint32_t workers) { detail::check(flock_resize(p_, workers)); }

    /// Stops starting tasks until resume() (see flock_pause); wait() then throws
    /// flock::error(FLOCK_ERR_PAUSED) while tasks are queued. Throws FLOCK_ERR_SHUTDOWN after
    /// shutdown().
    void pause() { detail::check(flock_pause(p_)); }

    /// Starts tasks again after pause().
    void resume() { detail::check(flock_resume(p_)); }

    /// Whether the pool is paused.
    bool is_paused() const {
        bool paused = false;
        detail::check(flock_is_paused(p_, &paused));
        return paused;
    }

    /// The C handle, still owned by this object (for calls the wrapper lacks).
    flock_pool_t* native_handle() const noexcept { return p_; }

private:
    // Submits f to `lane`, or to the default lane when it is null (flock_submit_ex's choice).
    template <class F>
    flock_status_t submit_in(const uint32_t* lane, F&& f) {
        using Fn = std::decay_t<F>;
        static_assert(std::is_invocable_v<Fn&>, "flock::pool::submit takes a callable with no arguments");
        // A moved-from pool: refuse before anything is allocated (f is destroyed by the caller).
        if (p_ == nullptr) return FLOCK_ERR_NULL;
        auto send = [this, lane](void (*run)(void*), void* arg, void (*drop)(void*)) {
            return send_in(lane, run, arg, drop);
        };
        if constexpr (detail::fits_in_arg<Fn>) {
            Fn copy(std::forward<F>(f));
            void* arg = nullptr;
            std::memcpy(&arg, &copy, sizeof(Fn));
            return send(&detail::run_inline<Fn>, arg, nullptr);
        } else {
            auto owned = std::make_unique<Fn>(std::forward<F>(f));
            flock_status_t st = send(&detail::run_heap<Fn>, owned.get(), &detail::drop_heap<Fn>);
            // On FLOCK_OK the pool owns it now; on any error flock.h leaves it with us (the drop
            // callback is never called), so `owned` deletes it, once.
            if (st == FLOCK_OK) owned.release();
            return st;
        }
    }

    flock_status_t send_in(const uint32_t* lane, void (*run)(void*), void* arg, void (*drop)(void*)) {
        return lane ? flock_submit_lane_ex(p_, *lane, run, arg, drop) : flock_submit_ex(p_, run, arg, drop);
    }

    template <class F>
    auto submit_task_in(const uint32_t* lane, F&& f) {
        using Fn = std::decay_t<F>;
        static_assert(std::is_invocable_v<Fn&>, "flock::pool::submit_task takes a callable with no arguments");
        using R = std::invoke_result_t<Fn&>;
        using Task = detail::promised<Fn, R>;
        if (p_ == nullptr) throw error(FLOCK_ERR_NULL);  // before anything is allocated
        auto task = std::make_unique<Task>(std::forward<F>(f));
        std::future<R> future = task->promise.get_future();
        // On an error flock.h leaves the task with us (the drop callback is never called):
        // `task` deletes it, once, as check() throws.
        detail::check(send_in(lane, &detail::run_promised<Task>, task.get(), &detail::drop_heap<Task>));
        task.release();  // the pool owns it now
        return future;
    }

    flock_pool_t* p_ = nullptr;
    std::shared_ptr<const config::worker_hooks> hooks_;  // after p_: released once it is freed
};

}  // namespace flock

#endif  // FLOCK_HPP
