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
// Task groups and loops: flock::task_group g(pool); g.run(f); g.wait(); waits for exactly
// g's tasks (rethrowing the first exception), and inside a task it runs other tasks while it
// waits, so groups nest. flock::parallel_for(pool, 0, n, [&](int i) { ... }) splits a range
// into blocks (about four per worker unless told) run as a group; pool.submit_blocks(0, n,
// [](int lo, int hi) { return ...; }).get() collects one result per block; pool.detach_loop
// submits the blocks without waiting. pool.purge() drops every queued task.
//
// Worker hooks: flock::config().on_worker_start([](uint32_t w) { ... }).on_worker_stop(...)
// runs init and cleanup code on each worker thread (flock_config_t::on_worker_start/stop).
//
// Lanes: flock::config().lanes({{"interactive", 8}, {"batch", 1}}) builds a pool with two
// lanes; pool.submit_to(pool.lane("batch"), f) puts a task in one (pool.lane looks the index
// up once; keep it). submit() uses lane 0 from outside the pool and the running task's lane
// from inside one.
//
// Algorithms and the process-wide pool: flock_algorithms.hpp, included at the end of this
// file, has oneTBB's parallel_reduce, parallel_invoke, parallel_for over a blocked_range and
// parallel_for_each, with a pool or on flock::global() (flock_global), which a
// default-constructed task_group uses too.
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
#include <mutex>
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
    /// Let parking workers use membarrier(2) so that pushes need no fence (the default; see
    /// flock_config_t::membarrier).
    config& membarrier(bool on = true) noexcept { flock_config_t::membarrier = on; return *this; }
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

    /// Takes ownership of a C handle (from flock_pool_new, or flock_global's, which the
    /// destructor's flock_pool_free leaves running: how flock::global() holds it).
    explicit pool(flock_pool_t* handle) noexcept : p_(handle) {}

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
    /// (FLOCK_ERR_WOULD_DEADLOCK from inside one of this pool's tasks, or from the destructor
    /// of a callable that purge() or a task_group's cancel() drops; FLOCK_ERR_PAUSED while
    /// the pool is paused with tasks queued).
    void wait() { detail::check(flock_wait(p_)); }

    /// Like wait() with a time limit: false when it ran out first (a paused pool is waited
    /// for like any other). Throws flock::error with FLOCK_ERR_WOULD_DEADLOCK where wait()
    /// does, never a false that would only mean "try again".
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

    /// Stops the pool (see flock_shutdown) and returns how many tasks its shutdowns have
    /// discarded in total (not those purge() or a cancel dropped). The pool object stays
    /// usable for stats(); submits then throw FLOCK_ERR_SHUTDOWN.
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

    /// Whether the pool's parking workers use membarrier(2) (see flock_uses_membarrier).
    bool uses_membarrier() const {
        bool uses = false;
        detail::check(flock_uses_membarrier(p_, &uses));
        return uses;
    }

    /// Drops every queued task that has not started (see flock_purge): each callable is
    /// destroyed unrun (a submit_task future then holds broken_promise), and the pool stays
    /// open. Returns how many were dropped.
    size_t purge() {
        size_t n = 0;
        detail::check(flock_purge(p_, &n));
        return n;
    }

    /// Calls f(i) for every i in [first, last), in blocks run as tasks of a task_group, and
    /// returns when all have run (see flock::parallel_for, which this is).
    template <class I, class F>
    void parallel_for(I first, I last, F&& f, size_t blocks = 0);

    /// Like parallel_for, without waiting (BS::thread_pool's detach_loop): the blocks are
    /// plain tasks of the pool; wait for them with wait(). An exception f throws is counted in
    /// stats().panicked and discarded, as for submit().
    template <class I, class F>
    void detach_loop(I first, I last, F&& f, size_t blocks = 0);

    /// Calls f(start, end) for consecutive blocks covering [first, last), as tasks of a
    /// task_group, and returns their results to collect (BS::thread_pool's submit_blocks):
    /// see flock::block_results.
    template <class I, class F>
    auto submit_blocks(I first, I last, F&& f, size_t blocks = 0);

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

/// A set of tasks on a pool that is waited for as a whole (oneTBB's task_group, over
/// flock_group_t): run() adds a task, wait() returns once exactly the group's tasks have
/// finished. Waiting from inside a task of any flock pool runs that pool's tasks meanwhile,
/// so groups nest: a task may open a group, run tasks in it and wait, even on one worker.
///
/// Exceptions: the first exception a task of the group throws is kept and rethrown by the
/// next wait() (after every task has finished); the task also counts in stats().panicked.
/// A later exception before that wait is counted and discarded.
///
/// Ownership: the destructor waits for the group's tasks (flock_group_free), so tasks may
/// capture references to objects declared before the group; exceptions not yet reported are
/// then discarded. Move-only. A wait() on a group from one of its own tasks (or from the
/// destructor of one that cancel() drops) would wait for that task itself: it throws
/// flock::error(FLOCK_ERR_WOULD_DEADLOCK). Never destroy a group there: flock_group_free
/// aborts the process rather than hang.
///
/// Thread-safety: run(), wait() and cancel() may be called from any threads at once.
class task_group {
public:
    /// An empty group on `p`; throws flock::error (FLOCK_ERR_NULL for a moved-from pool).
    explicit task_group(pool& p) : task_group(p.native_handle()) {}

    /// An empty group on a C pool handle.
    explicit task_group(flock_pool_t* p) : errors_(std::make_unique<errors>()) {
        detail::check(flock_group_new(p, &g_));
    }

    /// An empty group on the process-wide pool (flock::global(), flock_global), as oneTBB's
    /// task_group is on the implicit arena; throws flock::error when that pool cannot start.
    task_group() : errors_(std::make_unique<errors>()) {
        flock_pool_t* global = nullptr;
        detail::check(flock_global(&global));
        detail::check(flock_group_new(global, &g_));
    }

    task_group(const task_group&) = delete;
    task_group& operator=(const task_group&) = delete;
    task_group(task_group&& other) noexcept
        : g_(std::exchange(other.g_, nullptr)), errors_(std::move(other.errors_)) {}
    task_group& operator=(task_group&& other) noexcept {
        if (this != &other) {
            flock_group_free(g_);
            g_ = std::exchange(other.g_, nullptr);
            errors_ = std::move(other.errors_);
        }
        return *this;
    }

    /// Waits for the group's tasks (running and queued), then frees it.
    ~task_group() { flock_group_free(g_); }

    /// Runs f() as a task of the group. Throws flock::error when the pool refuses it
    /// (FLOCK_ERR_FULL, FLOCK_ERR_TIMEOUT, FLOCK_ERR_SHUTDOWN; f is destroyed unrun), or
    /// FLOCK_ERR_NULL for a moved-from group; std::bad_alloc. Allocates one heap block.
    template <class F>
    void run(F&& f) {
        detail::check(try_run_in(nullptr, std::forward<F>(f)));
    }

    /// Like run(), into lane number `lane` of the pool (also FLOCK_ERR_UNKNOWN_LANE).
    template <class F>
    void run_to(uint32_t lane, F&& f) {
        detail::check(try_run_in(&lane, std::forward<F>(f)));
    }

    /// Like run(), returning the status of a refusal instead of throwing.
    template <class F>
    flock_status_t try_run(F&& f) {
        return try_run_in(nullptr, std::forward<F>(f));
    }

    /// Waits for every task of the group (helping on a worker), then rethrows the first
    /// exception a task threw since the last wait, if any (flock::error(FLOCK_ERR_TASK_FAILED)
    /// for a failure reported without one, e.g. a C task's flock_task_fail). Reusable after.
    void wait() { report(flock_group_wait(g_)); }

    /// Like wait() for at most `timeout`: false when tasks are still unfinished then. Blocks
    /// without running tasks (see flock_group_wait_timeout).
    template <class Rep, class Period>
    bool wait_for(std::chrono::duration<Rep, Period> timeout) {
        auto ms = std::chrono::ceil<std::chrono::milliseconds>(timeout).count();
        flock_status_t st = flock_group_wait_timeout(g_, ms < 0 ? 0 : static_cast<uint64_t>(ms));
        if (st == FLOCK_ERR_TIMEOUT) return false;
        report(st);
        return true;
    }

    /// Drops the group's tasks that have not started (their callables are destroyed here) and
    /// returns how many; running ones go on (wait() for them).
    size_t cancel() {
        size_t n = 0;
        detail::check(flock_group_cancel(g_, &n));
        return n;
    }

    /// The C handle, still owned by this object.
    flock_group_t* native_handle() const noexcept { return g_; }

private:
    struct errors {
        std::mutex lock;
        std::exception_ptr first;
    };

    template <class F>
    struct guarded {
        F f;
        errors* errs;
        void operator()() {
            try {
                f();
            } catch (...) {
                {
                    std::lock_guard<std::mutex> hold(errs->lock);
                    if (!errs->first) errs->first = std::current_exception();
                }
                throw;  // the trampoline reports it: FLOCK_ERR_TASK_FAILED, stats().panicked
            }
        }
    };

    template <class F>
    flock_status_t try_run_in(const uint32_t* lane, F&& f) {
        using Fn = std::decay_t<F>;
        static_assert(std::is_invocable_v<Fn&>, "flock::task_group::run takes a callable with no arguments");
        if (g_ == nullptr) return FLOCK_ERR_NULL;
        using G = guarded<Fn>;
        auto owned = std::make_unique<G>(G{Fn(std::forward<F>(f)), errors_.get()});
        flock_status_t st = lane ? flock_group_submit_lane_ex(g_, *lane, &detail::run_heap<G>, owned.get(), &detail::drop_heap<G>)
                                 : flock_group_submit_ex(g_, &detail::run_heap<G>, owned.get(), &detail::drop_heap<G>);
        // As pool::submit: on an error the callable is still ours, deleted once by `owned`.
        if (st == FLOCK_OK) owned.release();
        return st;
    }

    void report(flock_status_t st) {
        if (st == FLOCK_ERR_TASK_FAILED) {
            std::exception_ptr first;
            {
                std::lock_guard<std::mutex> hold(errors_->lock);
                first = std::exchange(errors_->first, nullptr);
            }
            if (first) std::rethrow_exception(first);
        }
        detail::check(st);
    }

    flock_group_t* g_ = nullptr;
    std::unique_ptr<errors> errors_;  // stable across moves: tasks point to it
};

namespace detail {
// The block size for n indices on a pool of `workers`: about four blocks per worker, so
// that thieves have something to take when blocks run unevenly; `blocks` (when not 0) asks
// for that many blocks instead.
inline size_t block_size(size_t n, uint32_t workers, size_t blocks) {
    if (n == 0) return 1;
    size_t want = blocks ? blocks : size_t(4) * (workers ? workers : 1);
    size_t size = (n + want - 1) / want;
    return size ? size : 1;
}

// Calls each(start, end) for consecutive blocks of [first, last).
template <class I, class Each>
void for_blocks(I first, I last, size_t size, Each&& each) {
    if (!(first < last)) return;
    auto n = static_cast<size_t>(last - first);
    for (size_t start = 0; start < n; start += size) {
        size_t end = std::min(n, start + size);
        each(static_cast<I>(first + static_cast<I>(start)), static_cast<I>(first + static_cast<I>(end)));
    }
}
}  // namespace detail

/// Calls f(i) for every i in [first, last) (an integer range) on `p`, in blocks run as tasks
/// of a task_group, and returns when all have run, rethrowing the first exception one threw.
/// `blocks` 0 picks the block count itself (about four per worker). Nestable: called from
/// inside a task (a parallel_for inside a parallel_for), the waiting worker runs blocks too.
/// f is shared by all blocks (by reference): it must be callable from several threads at once.
template <class I, class F>
void parallel_for(pool& p, I first, I last, F&& f, size_t blocks = 0) {
    static_assert(std::is_integral_v<I>, "flock::parallel_for takes an integer range");
    if (!(first < last)) return;
    size_t size = detail::block_size(static_cast<size_t>(last - first), p.workers(), blocks);
    task_group group(p);
    auto& fn = f;
    detail::for_blocks(first, last, size, [&](I start, I end) {
        group.run([&fn, start, end] {
            for (I i = start; i < end; ++i) fn(i);
        });
    });
    group.wait();
}

/// The results of pool::submit_blocks: one per block, in order. get() waits for every block
/// (helping on a worker) and returns them (nothing for void), rethrowing the first exception
/// a block threw. Move-only; destroying it waits for the blocks.
template <class R>
class block_results {
public:
    /// Waits for every block; rethrows the first exception.
    void wait() { group_.wait(); }

    /// Waits for every block and returns the results in block order (void: nothing).
    auto get() {
        group_.wait();
        if constexpr (!std::is_void_v<R>) {
            std::vector<R> out;
            out.reserve(slots_->size());
            for (auto& r : *slots_) out.push_back(std::move(*r));
            return out;
        }
    }

    /// How many blocks there are.
    size_t size() const noexcept { return blocks_; }

private:
    friend class pool;
    using slot = std::optional<std::conditional_t<std::is_void_v<R>, char, R>>;
    explicit block_results(pool& p) : group_(p), slots_(std::make_unique<std::vector<slot>>()) {}

    task_group group_;
    std::unique_ptr<std::vector<slot>> slots_;
    size_t blocks_ = 0;
};

template <class I, class F>
void pool::parallel_for(I first, I last, F&& f, size_t blocks) {
    flock::parallel_for(*this, first, last, std::forward<F>(f), blocks);
}

template <class I, class F>
void pool::detach_loop(I first, I last, F&& f, size_t blocks) {
    static_assert(std::is_integral_v<I>, "flock::pool::detach_loop takes an integer range");
    if (!(first < last)) return;
    size_t size = detail::block_size(static_cast<size_t>(last - first), workers(), blocks);
    // Shared by the blocks, which may outlive this call: one copy, owned by all of them.
    auto fn = std::make_shared<std::decay_t<F>>(std::forward<F>(f));
    detail::for_blocks(first, last, size, [&](I start, I end) {
        submit([fn, start, end] {
            for (I i = start; i < end; ++i) (*fn)(i);
        });
    });
}

template <class I, class F>
auto pool::submit_blocks(I first, I last, F&& f, size_t blocks) {
    static_assert(std::is_integral_v<I>, "flock::pool::submit_blocks takes an integer range");
    using Fn = std::decay_t<F>;
    using R = std::invoke_result_t<Fn&, I, I>;
    block_results<R> results(*this);
    if (!(first < last)) return results;
    size_t size = detail::block_size(static_cast<size_t>(last - first), workers(), blocks);
    auto fn = std::make_shared<Fn>(std::forward<F>(f));
    size_t count = (static_cast<size_t>(last - first) + size - 1) / size;
    results.slots_->resize(count);  // never resized again: blocks write their own slot
    results.blocks_ = count;
    size_t index = 0;
    auto* slots = results.slots_.get();
    detail::for_blocks(first, last, size, [&](I start, I end) {
        auto* slot = &(*slots)[index++];
        results.group_.run([fn, start, end, slot] {
            if constexpr (std::is_void_v<R>) {
                (*fn)(start, end);
                slot->emplace('\1');
            } else {
                slot->emplace((*fn)(start, end));
            }
        });
    });
    return results;
}

}  // namespace flock

// The process-wide pool (flock::global) and oneTBB's algorithms: parallel_reduce,
// parallel_invoke, parallel_for over ranges, parallel_for_each.
#include "flock_algorithms.hpp"

#endif  // FLOCK_HPP
